"""Rates with their intervals: what the zoo's detection rates, a release entry's false alarms and
the nights' judgement (harness.detect.zoo, zoo_releases, nights) share."""
from __future__ import annotations


def wilson(k: int, n: int) -> list[float] | None:
    """95 % Wilson score interval ``[lo, hi]`` of a rate k/n (scipy.stats.binomtest); None for n = 0."""
    if n <= 0:
        return None
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return [round(float(ci.low), 4), round(float(ci.high), 4)]
