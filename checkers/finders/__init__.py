"""The anomaly finders: one module per anomaly (or family of anomalies), each a pure function
``<anomaly>_cases(h, ...) -> list[dict]`` of a loaded history (docs/anomalies.md).

A finder imports only ``checkers.history`` (the loaded history and its derived frames), the run
contract ``checkers.run``, ``checkers.timing`` and other finders; never ``checkers.engines`` nor
``checkers.known_bugs`` (tests/unit/test_architecture.py). ``checkers.verdict`` runs them all.
"""
