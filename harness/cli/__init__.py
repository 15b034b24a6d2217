"""Every ``eos-chaos`` command, thin: each parses its options and calls one stage (run, detect,
report, cluster, findings, bench). The entry point is ``harness.cli.main:main``."""
