"""The verdict's rules, one test per branch, on hand-made round series (packets).

Each case gives the actual window of a few rounds (the sender's peak flight) and what each
algorithm replayed at the end of those rounds; the expected class follows from the rules of
docs/verdicts.md worked out by hand in the comments.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hscc_trace.analysis import verdict as V
from hscc_trace.analysis.evidence import Evidence

RULES = V.Rules()
EVIDENCE = Evidence(vantage="sender", episodes=0)


def _verdict(cls, reason, **kw):
    return V.Verdict(cls=cls, reason=reason, evidence=EVIDENCE, **kw)


def judge(actual, windows, rate=None, tie=0.5):
    a = np.asarray(actual, dtype=float)
    w = {k: np.asarray(v, dtype=float) for k, v in windows.items()}
    return V._window_verdict(a, w, rate or {k: False for k in w}, tie, RULES, _verdict)


# 20 rounds of a sender growing 1 packet per round from 40: 40, 41, …, 59
ACTUAL = [40.0 + i for i in range(20)]


def test_binomial_tail_by_hand():
    # P(X ≥ 10 | n = 10, p = ½) = 1/1024; P(X ≥ 9 | 10) = 11/1024; P(X ≥ 0) = 1
    assert V._binom_tail(10, 10) == pytest.approx(1 / 1024)
    assert V._binom_tail(9, 10) == pytest.approx(11 / 1024)
    assert V._binom_tail(0, 10) == 1.0
    assert V._binom_tail(11, 10) == 0.0


def test_paired_counts_only_differences_beyond_the_tie():
    a = np.array([10.0, 10.0, 10.0, 10.0])
    best = np.array([10.0, 10.0, 10.0, 13.0])
    other = np.array([10.4, 12.0, 11.0, 10.0])
    # |other − a| − |best − a| = 0.4 (tie), 2 (best closer), 1 (best closer), −3 (other closer)
    assert V._paired(a, best, other, 0.5) == (2, 3)


def test_identified_when_the_runner_up_is_further_in_every_differing_round():
    # reno replays the sender exactly; westwood sits 2 packets high in 12 of the 20 rounds:
    # 12 differing rounds, reno closer in all 12, P = 2^-12 = 0.00024 < 0.001 → ruled out.
    west = [x + (2.0 if i >= 8 else 0.0) for i, x in enumerate(ACTUAL)]
    v = judge(ACTUAL, {"reno": ACTUAL, "westwood": west})
    assert v.cls == V.IDENTIFIED and v.name == "reno"
    assert (v.closer_rounds, v.differing_rounds) == (12, 12)
    assert v.error == 0.0 and v.runner_up == "westwood"
    assert "12 of the 12 rounds" in v.reason


def test_ambiguous_when_too_few_rounds_differ():
    # westwood differs in only 9 rounds: P = 2^-9 = 0.00195 ≥ 0.001 → not ruled out
    west = [x + (2.0 if i >= 11 else 0.0) for i, x in enumerate(ACTUAL)]
    v = judge(ACTUAL, {"reno": ACTUAL, "westwood": west})
    assert v.cls == V.AMBIGUOUS and v.name is None
    assert v.candidates == ("reno", "westwood")
    # westwood's error is 0 in 11 of 20 rounds: its median error is 0 too (the verdict ranks by
    # the median, then the mean: reno first)
    assert v.candidate_errors == (0.0, 0.0)


def test_differences_within_the_tie_do_not_count():
    # westwood 2 packets off in 12 rounds: identified at the sender (tie 0.5) but a tie away from
    # it (tie 2.5): no differing round → both remain → ambiguous
    west = [x + (2.0 if i >= 8 else 0.0) for i, x in enumerate(ACTUAL)]
    v = judge(ACTUAL, {"reno": ACTUAL, "westwood": west}, tie=2.5)
    assert v.cls == V.AMBIGUOUS and set(v.candidates) == {"reno", "westwood"}


def test_unknown_when_nothing_fits_its_threshold():
    # every replay 20 % high: median error 0.20 > 0.15 for both window-based algorithms
    high = [1.2 * x for x in ACTUAL]
    v = judge(ACTUAL, {"reno": high, "cubic": [1.25 * x for x in ACTUAL]})
    assert v.cls == V.UNKNOWN and v.name is None
    assert v.error == pytest.approx(0.2) and v.threshold == 0.15
    assert "beyond its 15% threshold" in v.reason


def test_rate_based_algorithm_has_the_wider_threshold():
    # bbr 20 % high fits (≤ 25 %), a window-based algorithm 20 % high would not (> 15 %)
    high = [1.2 * x for x in ACTUAL]
    v = judge(ACTUAL, {"bbr": high, "reno": [1.3 * x for x in ACTUAL]}, rate={"bbr": True, "reno": False})
    assert v.cls == V.IDENTIFIED and v.name == "bbr" and v.threshold == 0.25
    assert "no other replay fits within its threshold (next: reno, 30.0%)" in v.reason


def test_identical_replays_are_one_candidate_named_by_parsimony():
    # highspeed and reno replay the same windows (every round below Low_Window): one class,
    # named reno, highspeed equivalent
    v = judge(ACTUAL, {"highspeed": ACTUAL, "reno": ACTUAL, "cubic": [x + 3 for x in ACTUAL]})
    assert v.cls == V.IDENTIFIED and v.name == "reno" and v.equivalent == ("highspeed",)
    assert "highspeed replays identically on this flow" in v.reason


def test_an_extension_that_fits_no_better_than_what_it_reduces_to_is_not_named():
    # fusion (reduces to reno) is closer than reno in 2 rounds and further in 3: the data do not
    # favour it (closer in at most half of the 5 differing rounds) → reno is named, fusion listed
    # as reducing to it. Without the nesting rule both would be candidates (neither is ruled out:
    # P(X ≥ 3 | 5) = 0.5) → ambiguous.
    reno = list(ACTUAL)
    fusion = list(ACTUAL)
    for i in (2, 5):
        reno[i] += 2.0
    for i in (9, 12, 15):
        fusion[i] += 2.0
    v = judge(ACTUAL, {"reno": reno, "fusion": fusion})
    assert v.cls == V.IDENTIFIED and v.name == "reno"
    assert "fusion" in v.equivalent
    assert "fusion reduces to reno when its own mechanism does not engage, and fits no better here" in v.reason
    assert "closer in 2 of 5 differing rounds" in v.reason


def test_an_extension_closer_in_most_but_too_few_rounds_leaves_both_unranked():
    # kyushu+cubic exact, cubic 1 packet high in the last 3 rounds only (a hold that began just
    # before the capture ended): kyushu+cubic closer in 3 of 3 differing rounds, P(X ≥ 3 | 3) =
    # 1/8 = 0.125 ≥ 0.005 → not significant, so it is not named; but the data favour it (3 > 3/2),
    # so cubic is not named either: ambiguous, both listed, and the reason gives the count
    cubic = [x + (1.0 if i >= 17 else 0.0) for i, x in enumerate(ACTUAL)]
    v = judge(ACTUAL, {"cubic": cubic, "kyushu+cubic": ACTUAL})
    assert v.cls == V.AMBIGUOUS and v.name is None
    assert set(v.candidates) == {"cubic", "kyushu+cubic"}
    assert "kyushu+cubic (which reduces to cubic) is closer to the sender in 3 of the 3 rounds" in v.reason
    assert "p = 0.125" in v.reason


def test_an_extension_that_fits_significantly_better_is_named():
    # highspeed exact, reno 3 packets low in the last 12 rounds (above Low_Window): highspeed
    # closer in 12 of 12 differing rounds, P = 0.00024 → highspeed named over reno
    reno = [x - (3.0 if i >= 8 else 0.0) for i, x in enumerate(ACTUAL)]
    v = judge(ACTUAL, {"reno": reno, "highspeed": ACTUAL})
    assert v.cls == V.IDENTIFIED and v.name == "highspeed"


def test_a_wrapper_reduces_to_its_base():
    assert V.reductions(["cubic", "kyushu+cubic", "reno"]) == {"kyushu+cubic": "cubic"}
    assert V.reductions(["kyushu+cubic"]) == {}  # the base was not replayed: nothing to compare with


def test_reductions_follow_the_declarations():
    red = V.reductions(["reno", "highspeed", "compound", "fusion", "hrf-w-cr-reno", "hrf", "westwood", "bbr"])
    assert red == {"highspeed": "reno", "compound": "reno", "fusion": "reno", "hrf-w-cr-reno": "reno"}


def test_not_enough_data_without_events():
    v = V.judge(None, {})
    assert v.cls == V.NOT_ENOUGH_DATA and "nothing was replayed" in v.reason


def test_verdict_label_and_json_form():
    west = [x + (2.0 if i >= 11 else 0.0) for i, x in enumerate(ACTUAL)]
    v = judge(ACTUAL, {"reno": ACTUAL, "westwood": west})
    assert v.label == "ambiguous: reno, westwood"
    d = v.as_dict()
    assert d["class"] == "ambiguous" and d["candidates"] == ["reno", "westwood"]
    assert d["evidence"]["vantage"] == "sender" and "cls" not in d
    assert all(math.isfinite(x) for x in d["candidate_errors"])


def test_paired_by_acks_decides_each_round_by_its_acks():
    # three rounds of ACKs; the sender's window after each ACK (obs) and two replays:
    # round 0: A exact after 3 ACKs, B 1 packet off after 2 of them → A wins round 0
    # round 1: both exact → nobody wins
    # round 2: ACK5 A 1 off (B closer), ACK6 and ACK7 B 1 off (A closer) → A closer after 2, B
    #   after 1 → A wins round 2
    # A wins 2 rounds of the 2 decided; seen from B: 0 of 2
    obs = np.array([10.0, 10.0, 11.0, 12.0, 12.0, 13.0, 13.0, 14.0])
    rnd = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    a = np.array([10.0, 10.0, 11.0, 12.0, 12.0, 14.0, 13.0, 14.0])
    b = np.array([11.0, 11.0, 11.0, 12.0, 12.0, 13.0, 14.0, 15.0])
    assert V._paired_by_acks(obs, rnd, a, b, 0.5) == (2, 2)
    assert V._paired_by_acks(obs, rnd, b, a, 0.5) == (0, 2)


def test_at_the_sender_any_significantly_closer_candidate_rules_out_the_lowest_median():
    # By round peaks A is 1 packet high in rounds 0-8 and B in rounds 11-19: both exact in 11 of
    # 20 rounds (median error 0 each), each closer in 9 rounds. After each ACK, though, B matches
    # the sender in every round and A is 2 packets off in every round's ACKs: B wins all 20 rounds
    # (P = 2^-20) and its median error is not higher → A ruled out, B named — whichever of the two
    # the sort put first.
    actual = ACTUAL
    a_round = [x + 1 if i < 9 else x for i, x in enumerate(actual)]
    b_round = [x + 1 if i >= 11 else x for i, x in enumerate(actual)]
    rnd = np.repeat(np.arange(20), 3)
    obs = np.repeat(np.array(actual), 3)
    by_ack = (obs, rnd, {"a": obs + 2.0, "b": obs.copy()})
    v = V._window_verdict(
        np.asarray(actual),
        {"a": np.asarray(a_round), "b": np.asarray(b_round)},
        {"a": False, "b": False},
        0.5,
        RULES,
        _verdict,
        by_ack,
    )
    assert v.cls == V.IDENTIFIED and v.name == "b"
    # away from the sender (no ACK-level data) by round peaks only: 9 rounds each → ambiguous
    v = judge(actual, {"a": a_round, "b": b_round})
    assert v.cls == V.AMBIGUOUS and set(v.candidates) == {"a", "b"}
    # a candidate whose median error is higher rules out none, however often it is closer after
    # the ACKs: B 1 packet high in 12 rounds (median error > 0), A exact in 11 → ambiguous
    b_high = [x + 1 if i >= 8 else x for i, x in enumerate(actual)]
    v = V._window_verdict(
        np.asarray(actual),
        {"a": np.asarray(a_round), "b": np.asarray(b_high)},
        {"a": False, "b": False},
        0.5,
        RULES,
        _verdict,
        by_ack,
    )
    assert v.cls == V.AMBIGUOUS and set(v.candidates) == {"a", "b"}


def test_duel_counts_are_those_of_paired_by_acks_with_gaps_and_memo():
    # the verdict's _Duel reuses each candidate's distances and the rounds' numbering across
    # duels, and remembers each pair: its counts must be exactly _paired_by_acks', also where a
    # replay is not finite after some ACKs (those ACKs drop out of both sides) and a round is
    # left without any compared ACK
    rng = np.random.default_rng(3)
    n = 400
    obs = 20.0 + rng.integers(0, 8, n).astype(float)
    rnd = np.sort(rng.integers(0, 60, n))
    a = obs + rng.normal(0, 1.5, n)
    b = obs + rng.normal(0.5, 1.5, n)
    c = obs + rng.normal(-0.5, 1.0, n)
    b[rng.integers(0, n, 40)] = np.nan
    c[rnd == rnd[n // 2]] = np.inf  # a whole round without a finite replay of c
    cls = {k: V._Class([k], np.zeros(3), False, w) for k, w in {"a": a, "b": b, "c": c}.items()}
    duel = V._Duel(np.zeros(3), obs, rnd, 0.5)
    for _ in range(2):  # the second pass comes from the memo
        for x in cls:
            for y in cls:
                if x != y:
                    assert duel(cls[x], cls[y]) == V._paired_by_acks(obs, rnd, cls[x].acks, cls[y].acks, 0.5)


def test_betas_take_the_first_round_outside_recovery_after_each_episode():
    # β of an episode: the peak flight of the first round outside recovery that starts at or
    # after the episode's end, over the flight at the episode. Rounds in time order are searched
    # by bisection; the same rounds shuffled out of order take the plain scan — both by hand:
    # episode 1 ends at 250 → round starting 300 is in recovery, the next (400) gives 60/100;
    # episode 2 ends at 400 → round 400 itself (60/80); episode 3 ends after every round → none;
    # an RTO and an episode without an end give none
    import types

    import polars as pl

    from hscc_trace.analysis import evidence

    rounds = pl.DataFrame(
        {
            "start_ns": [100, 200, 300, 400, 500],
            "peak_flight_bytes": [50, 70, 90, 60, 65],
            "in_recovery": [False, True, True, False, None],
        }
    )
    episodes = pl.DataFrame(
        {
            "end_ns": [250, 400, 900, 300, None],
            "kind": ["fast_retransmit", "sack_recovery", "fast_retransmit", "rto", "fast_retransmit"],
            "flight_bytes": [100, 80, 90, 70, 60],
        }
    )
    ev = types.SimpleNamespace(rounds=rounds, episodes=episodes)
    assert evidence._betas(ev) == [0.6, 0.75]
    ev.rounds = rounds[[3, 0, 2, 1, 4]]  # not in time order: the same first round by index order
    assert evidence._betas(ev) == [0.6, 0.75]


def test_epochs_are_the_rounds_between_an_episode_end_and_the_next_start():
    # an epoch: the cwnd-limited rounds outside recovery that start at or after an episode's end
    # and before the next episode's start (else the next end); it needs MIN_EPOCH_ROUNDS (6).
    # The rounds are found by binary search over their starts: the same rounds, in round order,
    # as a mask over every round per episode (the earlier form, the reference here), also when
    # capture time went backwards and the rounds are out of time order
    import bisect
    import types

    import polars as pl

    from hscc_trace.analysis import evidence

    def reference(ev):
        rd = ev.rounds
        ends = sorted(int(x) for x in ev.episodes.get_column("end_ns").to_list() if x is not None)
        starts = sorted(int(x) for x in ev.episodes.get_column("start_ns").to_list())
        st = rd.get_column("start_ns").to_numpy()
        peak = rd.get_column("peak_flight_bytes").cast(pl.Float64).to_numpy() / ev.mss
        usable = ~rd.get_column("in_recovery").to_numpy() & (rd.get_column("limit") == "cwnd").to_numpy()
        out = []
        for k, e0 in enumerate(ends):
            i = bisect.bisect_right(starts, e0)
            nxt = starts[i] if i < len(starts) else None
            sel = (st >= e0) & usable
            if nxt is not None:
                sel &= st < nxt
            if k + 1 < len(ends) and nxt is None:
                sel &= st < ends[k + 1]
            if int(sel.sum()) >= evidence.MIN_EPOCH_ROUNDS:
                out.append(peak[sel])
        return out

    # by hand: rounds start every 10 ns from 0 (30 rounds, peak = 1448 · (k + 1) bytes: k + 1
    # packets); episodes [45, 62) and [200, 215). Epoch 1: rounds starting in [62, 200) →
    # rounds 7 … 19 (13 rounds), less round 10 (in recovery) and round 12 (rwnd-limited): 11
    # rounds, peaks 8, 9, 10, 12, 14 … 20. Epoch 2: after 215 → rounds 22 … 29 (8 rounds), no
    # next episode and no later end: to the flow's end
    n = 30
    rounds = pl.DataFrame(
        {
            "start_ns": np.arange(n) * 10,
            "peak_flight_bytes": (np.arange(n) + 1) * 1448,
            "in_recovery": [k == 10 or 4 <= k <= 6 or 20 <= k <= 21 for k in range(n)],
            "limit": ["rwnd" if k == 12 else "cwnd" for k in range(n)],
        }
    )
    episodes = pl.DataFrame({"start_ns": [45, 200], "end_ns": [62, 215]})
    ev = types.SimpleNamespace(rounds=rounds, episodes=episodes, mss=1448)
    got = evidence._epochs(ev)
    assert [p.tolist() for p in got] == [
        [8.0, 9.0, 10.0, 12.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0],
        [23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0],
    ]
    rng = np.random.default_rng(11)
    for it in range(300):
        n = int(rng.integers(1, 80))
        st = np.sort(rng.integers(0, 10_000, n))
        if it % 2:  # out of time order here and there
            j = rng.integers(0, n, n // 5 + 1)
            st[j] -= rng.integers(0, 2_000, j.size)
        rounds = pl.DataFrame(
            {
                "start_ns": st,
                "peak_flight_bytes": rng.integers(1, 100_000, n),
                "in_recovery": rng.random(n) < 0.2,
                "limit": rng.choice(["cwnd", "rwnd", "app"], n, p=[0.8, 0.1, 0.1]),
            }
        )
        ne = int(rng.integers(1, 10))
        es = np.sort(rng.integers(0, 10_000, ne))
        ee = [None if rng.random() < 0.1 else int(x) for x in es + rng.integers(0, 800, ne)]
        episodes = pl.DataFrame({"start_ns": es, "end_ns": pl.Series(ee, dtype=pl.Int64)})
        ev = types.SimpleNamespace(rounds=rounds, episodes=episodes, mss=1448)
        got, want = evidence._epochs(ev), reference(ev)
        assert len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(got, want)), it


def test_queued_rounds_are_those_of_the_median_polars_computes():
    # _queue decides "median RTT of the round > minimum · (1 + QUEUE_FRACTION)" by counting,
    # without sorting or a group_by: the same rounds as polars' group_by median + join (the
    # earlier form, kept for NaN samples), also with even counts whose two middle samples
    # straddle the threshold, null samples and rounds, rounds out of order and rounds without
    # any sample
    import types

    import polars as pl

    from hscc_trace.analysis import evidence

    rng = np.random.default_rng(5)
    queued = 0
    for it in range(200):
        n, nr = int(rng.integers(1, 300)), int(rng.integers(1, 40))
        r = rng.integers(0, nr, n)
        if it % 3:
            r = np.sort(r)
        if it % 2:  # few distinct values: many ties at the threshold (0.01 · 1.1)
            vals = rng.choice([0.01, 0.0105, 0.011, 0.0111, 0.012, 0.02], n)
        else:
            vals = 0.01 + rng.random(n) * 0.05
        rtt = [None if it % 5 == 0 and rng.random() < 0.2 else float(v) for v in vals]
        rnd = [None if it % 7 == 0 and rng.random() < 0.1 else int(v) for v in r]
        acks = pl.DataFrame({"round": pl.Series(rnd, dtype=pl.UInt32), "rtt_s": pl.Series(rtt, dtype=pl.Float64)})
        rounds = pl.DataFrame({"round": pl.Series(np.arange(nr + 3), dtype=pl.UInt32)})
        ev = types.SimpleNamespace(acks=acks, rounds=rounds)
        got, want = evidence._queue(ev), evidence._queue_polars(ev)
        assert np.array_equal(got[0], want[0]) and got[1] == want[1], it
        queued += int(want[0].sum())
    assert queued > 0


# --- specificity, rate-based evidence and the validated range (docs/verdicts.md) ------------------


def judge_engaged(actual, windows, engaged, tie=0.5):
    a = np.asarray(actual, dtype=float)
    w = {k: np.asarray(v, dtype=float) for k, v in windows.items()}
    classes = V._classes(a, w, {k: False for k in w})
    return V._judge_classes(a, classes, tie, RULES, _verdict, None, engaged)


def test_the_tie_grows_with_the_window():
    # 20 rounds at a window of 800 packets; westwood 3 packets high in 12 of them. At the sender
    # the tie is max(0.5, 0.5 % · 800) = 4 packets: the 3-packet differences are within it (no
    # differing round: ambiguous, neither ruled out). At 40 packets (tie max(0.5, 0.2) = 0.5)
    # the same 3 packets rule westwood out (12 of 12, P = 2^-12).
    big = [800.0] * 20
    west = [x + (3.0 if i >= 8 else 0.0) for i, x in enumerate(big)]
    v = judge(big, {"reno": big, "westwood": west})
    assert v.cls == V.AMBIGUOUS and set(v.candidates) == {"reno", "westwood"}
    assert "max(0.5 packets, 0.5% of the window)" in v.reason
    small = [40.0] * 20
    west = [x + (3.0 if i >= 8 else 0.0) for i, x in enumerate(small)]
    v = judge(small, {"reno": small, "westwood": west})
    assert v.cls == V.IDENTIFIED and v.name == "reno" and (v.closer_rounds, v.differing_rounds) == (12, 12)
    # the same at ACK resolution: _paired's tie per round, max(0.5, 0.01 · a)
    a = np.array([400.0, 400.0, 40.0])
    assert V._paired(a, a, a + 3.0, 0.5, 0.01) == (1, 1)  # 3 > 0.5 only at the 40-packet round


def test_a_higher_median_error_never_rules_out_a_lower_one():
    # The field's pattern (231 of 370 rounds against a 0.3 % / 0.0 % median error): at 100
    # packets, reno exact in 11 of 20 rounds and 3 high in 9 (median error 0: 11 zeros);
    # westwood 0.4 high in every round (median error 0.4 %). The tie is max(0.5, 0.5 % · 100) = 0.5:
    # in the 11 rounds westwood's 0.4 ties, in the 9 it is closer by 2.6 → westwood closer in 9
    # of 9 differing rounds, P = 2^-9 = 0.00195 < 0.005: the sign test alone would rule reno out.
    # Its median error is higher, so it may not: neither is ruled out → ambiguous.
    actual = [100.0] * 20
    reno = [100.0] * 11 + [103.0] * 9
    west = [100.4] * 20
    v = judge(actual, {"reno": reno, "westwood": west})
    assert v.cls == V.AMBIGUOUS and set(v.candidates) == {"reno", "westwood"}
    assert v.candidate_errors[list(v.candidates).index("westwood")] == pytest.approx(0.004)


def test_an_extension_with_a_higher_median_error_is_not_named():
    # the same series with the extension hrf-w-cr-reno (which reduces to reno) in westwood's
    # place: closer in 9 of 9 differing rounds, but its median error (0.4 %) is higher than
    # reno's (0.0 %) → reno is named, hrf-w-cr-reno listed as reducing to it, with the numbers
    actual = [100.0] * 20
    reno = [100.0] * 11 + [103.0] * 9
    v = judge(actual, {"reno": reno, "hrf-w-cr-reno": [100.4] * 20})
    assert v.cls == V.IDENTIFIED and v.name == "reno" and "hrf-w-cr-reno" in v.equivalent
    assert "its median error is higher, 0.4% against 0.0%, though closer in 9 of 9 differing rounds" in v.reason


def test_an_extension_whose_mechanism_was_idle_is_not_named():
    # highspeed exact, reno 3 packets low in the last 12 rounds: significant (12 of 12). Named
    # when its mechanism (a(w) > 1: above Low_Window) was active in ≥ 8 judged rounds; with 5
    # engaged rounds it is not: reno named, highspeed listed as reducing to it, with the count
    reno = [x - (3.0 if i >= 8 else 0.0) for i, x in enumerate(ACTUAL)]
    v = judge_engaged(ACTUAL, {"reno": reno, "highspeed": ACTUAL}, {"highspeed": 12})
    assert v.cls == V.IDENTIFIED and v.name == "highspeed"
    v = judge_engaged(ACTUAL, {"reno": reno, "highspeed": ACTUAL}, {"highspeed": 5})
    assert v.cls == V.IDENTIFIED and v.name == "reno" and "highspeed" in v.equivalent
    assert "its own mechanism was active in 5 of the 20 judged rounds" in v.reason


def test_window_based_evidence_rules_bbr_out():
    rules = V.Rules()
    # CUBIC-like: β 0.7 after slow start (the first 2 episodes are left out) → a decrease
    ev = Evidence(vantage="receiver", episodes=5, beta=(0.3, 0.4, 0.7, 0.69, 0.71), beta_median=0.69)
    assert "multiplicative decrease (β 0.70, median of 3 episodes after slow start)" in V._window_evidence(ev, rules)
    # BBR's STARTUP overshoot (β 0.32, 0.33) alone is no evidence: no episode after it
    ev = Evidence(
        vantage="sender",
        episodes=2,
        beta=(0.32, 0.33),
        beta_median=0.32,
        ack_clocked=0.47,
        paced=True,
        capacity_reached=True,
    )
    assert V._window_evidence(ev, rules) is None and V._rate_evidence(ev, rules) is not None
    # at the sender, ACK-clocked sending is window-based
    ev = Evidence(vantage="sender", episodes=0, ack_clocked=0.998, paced=False)
    assert "ACK-clocked" in V._window_evidence(ev, rules)


def test_ack_clocked_sending_is_no_evidence_on_a_round_trip_shorter_than_the_release_window():
    # 92 % of the segments within CLOCK_US = 200 µs of the latest ACK: window-based at a 40 ms
    # round trip (≥ ack_clocked_above = 0.9), nothing at 6.8 µs (Linux CUBIC with TSO on a
    # 1 Gbit/s veth path, docs/verdicts.md): any sender's segments leave within 200 µs of an ACK
    # there, so BBR stays a candidate (and is named only with rate-based evidence)
    rules = V.Rules()
    ev = Evidence(vantage="sender", episodes=0, ack_clocked=0.92, paced=False, min_rtt_s=0.040)
    assert V._window_evidence(ev, rules) == "ACK-clocked sending (92% of segments released by ACKs)"
    ev = Evidence(vantage="sender", episodes=0, ack_clocked=0.92, paced=None, min_rtt_s=6.8e-6)
    assert V._window_evidence(ev, rules) is None and V._rate_evidence(ev, rules) is None


def test_the_evidence_line_does_not_call_a_sender_paced_where_the_round_trip_cannot_tell():
    from hscc_trace.analysis.evidence import describe

    at_40ms = Evidence(vantage="sender", episodes=0, ack_clocked=0.26, paced=True, min_rtt_s=0.040)
    assert "paced (26% of segments released by ACKs)" in describe(at_40ms.as_dict())
    at_4us = Evidence(vantage="sender", episodes=0, ack_clocked=0.26, paced=None, min_rtt_s=4.4e-6)
    line = describe(at_4us.as_dict())
    assert "26% of segments released by ACKs (a round trip too short to tell pacing)" in line
    assert "paced (" not in line and "ACK-clocked (" not in line


def test_pacing_is_evidence_only_where_the_round_trip_exceeds_the_release_window():
    rules = V.Rules()
    # 13 % of the segments within CLOCK_US = 200 µs of the latest ACK, at a 40 ms round trip:
    # paced, rate-based evidence
    ev = Evidence(vantage="sender", episodes=0, ack_clocked=0.13, paced=True, min_rtt_s=0.040, capacity_reached=True)
    assert V._rate_evidence(ev, rules) == "paced sending (13% of segments released by ACKs)"
    # the same share at a 3.6 µs round trip (a veth path, cubic-usrtt-sender.pcap): every segment
    # leaves within a round trip of some ACK, the 200 µs window tells nothing — no evidence
    ev = Evidence(vantage="sender", episodes=0, ack_clocked=0.13, paced=True, min_rtt_s=3.6e-6, capacity_reached=True)
    assert V._rate_evidence(ev, rules) is None
    # at exactly 200 µs the window is the whole round trip: still no evidence; above it, evidence
    assert not V._clock_measurable(Evidence(vantage="sender", episodes=0, min_rtt_s=200e-6))
    assert V._clock_measurable(Evidence(vantage="sender", episodes=0, min_rtt_s=201e-6))
    # no RTT sample at all: the measure stands as it is
    assert V._clock_measurable(Evidence(vantage="sender", episodes=0, min_rtt_s=None))


def test_outside_range_says_which_condition_and_the_validated_span():
    env = V.Envelope(rate_bps=(2e6, 50e6), min_rtt_s=(0.01, 0.1), retrans_fraction=0.05, ack_burst_pkts=8.0)
    inside = Evidence(
        vantage="sender", episodes=0, rate_bps=10e6, min_rtt_s=0.04, retrans_fraction=0.01, ack_burst_pkts=2.0
    )
    assert V.outside_range(inside, env) == ()
    far = Evidence(
        vantage="mid-path", episodes=0, rate_bps=1.37e9, min_rtt_s=0.6, retrans_fraction=0.09, ack_burst_pkts=16.0
    )
    assert V.outside_range(far, env) == (
        "1.37 Gbit/s: beyond the validated 2–50 Mbit/s",
        "RTT 600 ms: beyond the validated 10–100 ms",
        "9.0% of segments retransmitted: beyond the validated 5%",
        "captured mid-path: validated at the sender and receiver only",
        "ACKs arrive in bursts of 16 packets: beyond the validated 8",
    )
    assert env.describe().startswith("2–50 Mbit/s, RTT 10–100 ms")


# --- behaves as: a window that senders outside the library set too -------------------------------


def _named(cls, name, basis="window"):
    return _verdict(cls, f"{name}: its replay follows the sender's window within 0.0%", name=name, basis=basis)


def test_behaves_as_when_senders_outside_the_library_share_the_named_window():
    # Reno's window is TCP-LP's, DCTCP's, H-TCP's and CDG's while their own signal is absent
    # (SHARED_WINDOW, from tcp_lp.c, tcp_dctcp.c, tcp_htcp.c, tcp_cdg.c): same name and evidence,
    # class "behaves as", and the reason names them
    v = V._shared(_named(V.IDENTIFIED, "reno"))
    assert v.cls == V.BEHAVES_AS and v.name == "reno" and v.label == "behaves as reno"
    assert v.reason.startswith("behaves as reno: its replay follows the sender's window")
    assert "TCP-LP" in v.reason and "DCTCP without CE marks" in v.reason and "H-TCP" in v.reason
    # newreno's window outside recovery is Reno's: the same
    assert V._shared(_named(V.IDENTIFIED, "newreno")).cls == V.BEHAVES_AS
    # a label with parameters is judged by its algorithm
    assert V._shared(_named(V.IDENTIFIED, "reno[beta=0.5]")).cls == V.BEHAVES_AS


def test_identified_stays_where_no_sender_outside_the_library_shares_the_window():
    # no zoo algorithm sets CUBIC's window (docs/zoo.md): the verdict is unchanged
    v = _named(V.IDENTIFIED, "cubic")
    assert V._shared(v) is v and v.label == "cubic"


def test_a_rate_based_or_unnamed_verdict_is_not_relabelled():
    # only a window-based name: the rate branch judges a different quantity (the in-flight cap)
    rate = _named(V.IDENTIFIED, "reno", basis="rate")
    assert V._shared(rate) is rate
    amb = _verdict(V.AMBIGUOUS, "2 algorithms fit", candidates=("reno", "westwood"))
    assert V._shared(amb) is amb and amb.label == "ambiguous: reno, westwood"


# --- the naming bound, for one name and for a list ----------------------------------------------


def test_a_name_beyond_the_naming_bound_is_unknown():
    # hrf-w-cr-cr at 2.14 % > name_error 2 %, where the flight is exact: fits (≤ 15 %), but loosely
    v = _verdict(V.IDENTIFIED, "hrf-w-cr-cr: …", name="hrf-w-cr-cr", error=0.0214, rounds=40)
    u = V._loose(v, {"hrf-w-cr-cr": False}, RULES, _verdict)
    assert u.cls == V.UNKNOWN and u.name is None and u.threshold == RULES.name_error
    assert "fits, but only loosely" in u.reason and "2.14%" in u.reason
    # at 1.9 % it stays named
    w = _verdict(V.IDENTIFIED, "reno: …", name="reno", error=0.019, rounds=40)
    assert V._loose(w, {"reno": False}, RULES, _verdict) is w


def test_a_list_beyond_the_naming_bound_is_unknown_none_of_these():
    # BBR behind a policer (field): westwood 2.78 %, reno 2.78 %, cubic 5.56 % fit (≤ 15 %) and
    # none is ruled out — but the best is beyond 2 %, so none would be named alone: unknown
    v = _verdict(
        V.AMBIGUOUS,
        "3 algorithms fit …",
        candidates=("westwood", "reno", "cubic"),
        candidate_errors=(0.0278, 0.0278, 0.0556),
        error=0.0278,
        rounds=36,
    )
    u = V._loose(v, {"westwood": False, "reno": False, "cubic": False}, RULES, _verdict)
    assert u.cls == V.UNKNOWN and u.candidates == () and u.runner_up == "westwood"
    assert u.reason.startswith("none of these fits closely: westwood (2.78%), reno (2.78%), cubic (5.56%)")
    # within the bound the list stands (fusion-40m: fusion and reno at 0.0 %)
    a = _verdict(V.AMBIGUOUS, "2 fit", candidates=("fusion", "reno"), candidate_errors=(0.0, 0.0), error=0.0)
    assert V._loose(a, {"fusion": False, "reno": False}, RULES, _verdict) is a


def test_a_list_with_a_rate_based_candidate_keeps_its_own_threshold():
    # bbr's flight swings ±25 % by design: 2 % is not its bound, and a paced sender may yet
    # single it out (judge: the only candidate that paces)
    v = _verdict(
        V.AMBIGUOUS, "2 fit", candidates=("bbr", "westwood"), candidate_errors=(0.05, 0.06), error=0.05, rounds=30
    )
    assert V._loose(v, {"bbr": True, "westwood": False}, RULES, _verdict) is v


def _cycles(peaks, rec=None):
    # evidence._gain_cycles on hand-made rounds: peak flights in packets (MSS 1000 B)
    from hscc_trace.analysis import evidence

    p = np.asarray(peaks, dtype=float) * 1000.0
    r = np.zeros(p.size, dtype=bool) if rec is None else np.asarray(rec, dtype=bool)
    return evidence._gain_cycles(evidence._Rounds(np.arange(p.size), r, p, None, p.size), 1000)


def _bbr_like(spikes, n=42, base=20.0, high=25.0):
    # slow start 2, 4, 8, 16, 32, the drain to 20 at round 5 (the first round below its
    # predecessor: judged from there), then 20 packets a round with `high` at the `spikes`
    peaks = [2.0, 4.0, 8.0, 16.0, 32.0] + [base] * (n - 5)
    for k in spikes:
        peaks[k] = high
    return peaks


def test_gain_cycle_counts_probes_eight_rounds_apart():
    # probes at rounds 10, 18, 26, 34: each 25 against a neighbours' median of 20 (the other
    # probes are 8 rounds away, outside ±4): 25 ≥ 20·1.1 = 22 and 25 − 20 = 5 ≥ 2 packets → 4
    # probes; spans 8, 8, 8, each within 5–10 rounds → 3 cycles
    assert _cycles(_bbr_like([10, 18, 26, 34])) == (4, 3)


def test_gain_cycle_probe_followed_by_recovery_is_a_loss_peak():
    # the same with round 27 in recovery: round 26 is the peak before a loss, not a probe;
    # probes 10, 18, 34 → spans 8 and 16 → 1 cycle
    rec = [False] * 42
    rec[27] = True
    assert _cycles(_bbr_like([10, 18, 26, 34]), rec) == (3, 1)


def test_gain_cycle_rise_below_the_thresholds_is_no_probe():
    # 21 against 20: 5 % (below 10 %) and 1 packet (below 2) → no probe
    assert _cycles(_bbr_like([10, 18, 26, 34], high=21.0)) == (0, 0)
    # 6 against 3 packets: +100 %, +3 packets, but a neighbours' median below 4 packets → none
    assert _cycles(_bbr_like([10, 18, 26, 34], base=3.0, high=6.0)) == (0, 0)


def test_gain_cycle_adjacent_probe_rounds_are_one_probe():
    # rounds 10 and 11 both at 25 (each against a median of 20: one 25 among eight neighbours)
    # → one probe; with 18 and 26: probes 10, 18, 26 → spans 8, 8 → 2 cycles
    assert _cycles(_bbr_like([10, 11, 18, 26])) == (3, 2)


def test_gain_cycle_spans_outside_five_to_ten_rounds_are_not_cycles():
    # probes 10, 13, 25: spans 3 (< 5) and 12 (> 10) → 3 probes, 0 cycles
    assert _cycles(_bbr_like([10, 13, 25])) == (3, 0)


def test_gain_cycle_needs_rounds_after_slow_start():
    # a flight that never falls (slow start to the end), and too few rounds: no measure
    assert _cycles([float(2**k) for k in range(12)]) is None
    assert _cycles([2.0, 4.0, 8.0, 5.0, 5.0]) is None


def test_gain_cycles_are_rate_based_evidence_from_six_on():
    rules = V.Rules()
    # 6 cycles over 7 probes (6 spans, all cycles): evidence, at the receiver too
    ev = Evidence(vantage="receiver", episodes=0, probes=7, gain_cycles=6)
    assert V._rate_evidence(ev, rules) == (
        "BBR's gain cycle (6 of the 6 spans between 7 probes of the flight, each followed by no loss, last 5–10 rounds)"
    )
    # 5 cycles: below Rules.gain_cycles → none
    assert V._rate_evidence(Evidence(vantage="receiver", episodes=0, probes=6, gain_cycles=5), rules) is None
    # 6 cycles among 10 spans (11 probes): 6 < 0.75 · 10 = 7.5 → probes at random, none
    assert V._rate_evidence(Evidence(vantage="receiver", episodes=0, probes=11, gain_cycles=6), rules) is None
    # 8 of 10: 8 ≥ 7.5 → evidence
    assert V._rate_evidence(Evidence(vantage="receiver", episodes=0, probes=11, gain_cycles=8), rules) is not None


def test_capacity_is_reached_by_an_episode_or_a_queue_in_one_round_of_16():
    from hscc_trace.analysis.evidence import capacity_reached

    q = np.zeros(201, dtype=bool)
    assert not capacity_reached(0, q)  # no episode, no queue
    assert capacity_reached(1, q)  # one congestion episode is enough
    q[:2] = True  # an application-limited CUBIC's two queued rounds of 201 (its first flights)
    assert not capacity_reached(0, q)
    # 201 / 16 = 12.56 rounds: 12 queued are too few, 13 enough
    q[:12] = True
    assert not capacity_reached(0, q)
    q[:13] = True
    assert capacity_reached(0, q)
    q = np.zeros(5, dtype=bool)
    q[0] = True  # on a short flow one queued round is a share of 1/5
    assert capacity_reached(0, q)


def test_pacing_names_no_rate_based_sender_on_a_flow_below_the_paths_capacity():
    rules = V.Rules()
    at_capacity = Evidence(
        vantage="sender", episodes=0, ack_clocked=0.01, paced=True, min_rtt_s=0.020, capacity_reached=True
    )
    assert V._rate_evidence(at_capacity, rules) == "paced sending (1% of segments released by ACKs)"
    # Linux Reno writing 20 Mbit/s into a 50 Mbit/s path: as paced, but no episode and a queue
    # in 1 round — an application pacing its writes
    below = Evidence(
        vantage="sender",
        episodes=0,
        ack_clocked=0.01,
        paced=True,
        min_rtt_s=0.020,
        queued_rounds=1,
        capacity_reached=False,
    )
    assert V._rate_evidence(below, rules) is None and not V._paced_at_capacity(below)
    note = V._rate_note(None, below)
    assert "paced sending (1% of segments released by ACKs)" in note
    assert "never reached the path's capacity (no congestion episode, a queue in 1 round)" in note
