"""Hypothesis profiles for the unit tests: ``--hypothesis-profile nightly`` gives the fuzz suite
(test_fuzz.py) 20 times its examples, drawn afresh each night (``make fuzz-nightly``)."""
from hypothesis import HealthCheck, settings

settings.register_profile("nightly", max_examples=2000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
