"""Engines that run the finders over a history other than all at once in memory: in parts
(``parts``, on polars or on Spark: ``parts_spark``) and window by window while a soak run writes
its history (``windows``). They import the finders through ``checkers.verdict.FINDERS``."""
