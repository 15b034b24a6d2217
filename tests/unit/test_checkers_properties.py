"""Property tests: simulated-correct histories are valid; one injected anomaly is reported as
that anomaly on the right key (plus only the anomalies that necessarily follow)."""

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkers import check
from checkers.synthetic.simulate import simulate

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _polls(events, final=None):
    """(event position, key, record position) of every polled record in ok completions."""
    out = []
    for i, e in enumerate(events):
        if e["f"] == "poll" and e["type"] == "ok":
            is_final = bool((e.get("meta") or {}).get("final"))
            if final is not None and is_final != final:
                continue
            for k, recs in e["value"][0][1].items():
                for j in range(len(recs)):
                    out.append((i, k, j))
    return out


def _reindex(events):
    for i, e in enumerate(events):
        e["index"] = i
    return events


@SETTINGS
@given(seed=st.integers(0, 10_000), n=st.integers(20, 600),
       producers=st.integers(1, 5), consumers=st.integers(1, 4),
       abort=st.floats(0, 0.5), crash=st.floats(0, 0.05))
def test_simulated_correct_history_is_valid(seed, n, producers, consumers, abort, crash):
    ev = simulate(n, seed=seed, n_producers=producers, n_consumers=consumers,
                  abort_rate=abort, crash_rate=crash, n_keys=4)
    v = check(ev)
    assert v.valid is True, (v.anomaly_counts, v.unknown_reasons)
    assert v.anomalies == {}


def _base(seed):
    return simulate(300, seed=seed, n_keys=4, abort_rate=0.25)


@SETTINGS
@given(seed=st.integers(0, 10_000), pick=st.randoms(use_true_random=False))
def test_injected_duplicate(seed, pick):
    ev = _base(seed)
    i, k, j = pick.choice(_polls(ev, final=True))
    recs = ev[i]["value"][0][1][k]
    last = max(o for e in ev if e["f"] in ("poll",) and e["type"] == "ok"
               for o, _ in e["value"][0][1].get(k, []))
    recs.append([last + 1000, recs[j][1]])  # the same value again, far later in the log
    v = check(ev)
    assert set(v.anomalies) == {"duplicate"}
    assert {c["key"] for c in v.anomalies["duplicate"]} == {k}


@SETTINGS
@given(seed=st.integers(0, 10_000), pick=st.randoms(use_true_random=False))
def test_injected_aborted_read(seed, pick):
    ev = _base(seed)
    aborted = [(m[1], m[2][0], m[2][1]) for e in ev if e["f"] == "txn" and e["type"] == "fail"
               for m in e["value"] if m[2][0] is not None]
    if not aborted:
        return
    k, off, val = pick.choice(aborted)
    fin = [i for i, kk, _ in _polls(ev, final=True) if kk == k]
    recs = ev[fin[0]]["value"][0][1][k]
    recs.append([off, val])
    recs.sort()
    v = check(ev)
    # an aborted txn that also wrote other final-drain keys is now torn as well
    assert "G1a" in v.anomalies
    assert set(v.anomalies) <= {"G1a", "torn-transaction"}
    assert {(c["key"], c["value"]) for c in v.anomalies["G1a"]} == {(k, val)}


@SETTINGS
@given(seed=st.integers(0, 10_000), pick=st.randoms(use_true_random=False))
def test_injected_lost_write(seed, pick):
    ev = _base(seed)
    cands = [(i, k, j) for i, k, j in _polls(ev, final=True)
             if j < len(ev[i]["value"][0][1][k]) - 1]
    if not cands:
        return
    i, k, j = pick.choice(cands)
    off, val = ev[i]["value"][0][1][k][j]
    for e in ev:  # nobody ever read it
        if e["f"] == "poll" and e["type"] == "ok":
            recs = e["value"][0][1].get(k)
            if recs and [off, val] in recs:
                recs.remove([off, val])
    v = check(ev)
    assert {(c["key"], c["value"]) for c in v.anomalies["lost-write"]} == {(k, val)}
    # what necessarily follows: nobody saw it, so it is unseen, each consumer that read
    # across it skipped it, and its txn may now be torn
    assert "unseen" in v.anomalies
    assert set(v.anomalies) <= {"lost-write", "unseen", "poll-skip", "int-poll-skip",
                                   "torn-transaction"}


@SETTINGS
@given(seed=st.integers(0, 10_000), pick=st.randoms(use_true_random=False))
def test_injected_nonmonotonic_poll(seed, pick):
    ev = _base(seed)
    cands = sorted({i for i, _, _ in _polls(ev, final=False)})
    i = pick.choice(cands)
    # the consumer returns the same records again, with no seek between
    again = [copy.deepcopy(ev[i - 1]), copy.deepcopy(ev[i])]
    for e in again:
        e["time"] = ev[i]["time"]
    ev[i + 1:i + 1] = again
    v = check(_reindex(ev))
    assert set(v.anomalies) == {"nonmonotonic-poll"}
    assert {c["key"] for c in v.anomalies["nonmonotonic-poll"]} == set(ev[i]["value"][0][1])


@SETTINGS
@given(seed=st.integers(0, 10_000), pick=st.randoms(use_true_random=False))
def test_injected_int_poll_skip(seed, pick):
    ev = _base(seed)
    cands = [(i, k, j) for i, k, j in _polls(ev, final=False)
             if 0 < j < len(ev[i]["value"][0][1][k]) - 1]
    if not cands:
        return
    i, k, j = pick.choice(cands)
    skipped = ev[i]["value"][0][1][k].pop(j)
    v = check(ev)
    # the value was still read by the final drain, so only the skip itself shows
    assert set(v.anomalies) == {"int-poll-skip"}
    c = v.anomalies["int-poll-skip"][0]
    assert c["key"] == k and c["skipped"][0]["value"] == skipped[1]


@SETTINGS
@given(seed=st.integers(0, 10_000), pick=st.randoms(use_true_random=False))
def test_injected_inconsistent_offset(seed, pick):
    ev = _base(seed)
    i, k, j = pick.choice(_polls(ev, final=False))
    off, _val = ev[i]["value"][0][1][k][j]
    ev[i]["value"][0][1][k][j] = [off, 10**9]  # a value nobody wrote at a known offset
    v = check(ev)
    assert {(c["key"], c["offset"]) for c in v.anomalies["inconsistent-offsets"]} == {(k, off)}
    assert set(v.anomalies) == {"inconsistent-offsets"}
