"""The verdict's and the fits' shared-work forms give what the one-replay-at-a-time forms gave.

The fits and the verdict compare every replay of a flow with the same rounds and ACKs, so they
take the replays together (a matrix per flow, one compiled pass to group identical replays);
their numbers must be the old ones to the last bit (the JSON's floats are compared byte for
byte). Hand-worked cases for the compiled grouping, and random ones (seeded) for the numpy
forms against the plain numpy calls they replace.
"""

from __future__ import annotations

import math
import types

import numpy as np
import polars as pl
import pytest

from hscc_trace.analysis import verdict as V
from hscc_trace.perf import firstuse
from hscc_trace.replay import metrics as M

NAN, INF = math.nan, math.inf


@pytest.fixture(params=["interpret", "compile"])
def path(request):
    """Both paths of a first-use kernel: its Python twin and its compiled code."""
    with firstuse.mode(request.param):
        yield request.param


def _group(wr, wa, rate, order):
    """V._group over V._pairs (the pairs that agree by rounds, then by ACKs)."""
    pairs = V._pairs(np.asarray(wr, dtype=np.float64), np.asarray(rate, dtype=bool))
    cls, first = V._group(
        pairs, np.asarray(wa, dtype=np.float64).reshape(len(wr), -1), np.asarray(order, dtype=np.int64)
    )
    return cls.tolist(), first.tolist()


def test_pairs_by_hand(path):
    # 0 and 1 within half a packet; 2 is 0.5 off row 0 in round 1 (not within), 0.1 off row 1;
    # 3 equals 0 but is rate-based
    wr = np.array([[10.0, 20.0], [10.0, 20.4], [10.0, 20.5], [10.0, 20.0]])
    got = V._pairs(wr, np.array([False, False, False, True]))
    assert got.tolist() == [
        [True, True, False, False],
        [True, True, True, False],
        [False, True, True, False],
        [False, False, False, True],
    ]


def test_group_joins_a_replay_to_the_first_class_whose_first_member_it_equals(path):
    # rows (rounds): 0 = [10, 20, 30]; 1 = 0 + 0.4 everywhere (within half a packet: same);
    # 2 = 0 but 0.5 off in the last round (not within: a class of its own); 3 = row 1 + 0.4 —
    # within half a packet of row 1 but 0.8 from row 0, the first member of the class row 1
    # joined: a class of its own (the comparison is with the first member, not any member)
    wr = [[10, 20, 30], [10.4, 20.4, 30.4], [10, 20, 30.5], [10.8, 20.8, 30.8]]
    assert _group(wr, [[]] * 4, [False] * 4, [0, 1, 2, 3]) == ([0, 0, 1, 2], [0, 2, 3])
    # taken in another order (row 3 first), row 1 is within half a packet of row 3 and joins it;
    # row 0 is 0.8 from row 3 (new class), row 2 0.8 from row 3 and 0.5 from row 0 (new class)
    assert _group(wr, [[]] * 4, [False] * 4, [3, 1, 0, 2]) == ([1, 0, 2, 0], [3, 0, 2])


def test_group_needs_the_same_finite_places_the_same_rate_and_the_same_acks(path):
    # rows 0 and 1 equal where finite but 1 is NaN where 0 is not: different; rows 0 and 2 equal
    # (inf at the same place counts as not finite on both sides) ; row 3 equals row 0 by rounds
    # but is rate-based: different; row 4 equals row 0 by rounds but one ACK window is 1 off
    wr = [[10, INF, 30], [10, NAN, NAN], [10, INF, 30], [10, INF, 30], [10, INF, 30]]
    wa = [[5, 6], [5, 6], [5, 6], [5, 6], [5, 7]]
    rate = [False, False, False, True, False]
    assert _group(wr, wa, rate, [0, 1, 2, 3, 4]) == ([0, 1, 0, 2, 3], [0, 1, 3, 4])


@pytest.mark.filterwarnings("ignore:invalid value encountered in subtract")  # (V._same of inf and inf)
def test_classes_of_matrices_are_those_of_the_pairwise_comparisons():
    # _classes (matrices and the compiled grouping) against the rule as written for one pair
    # (V._same), on random replays with many near-equal rows, NaN and inf
    rng = np.random.default_rng(11)
    for it in range(40):
        m, n, k = int(rng.integers(1, 9)), int(rng.integers(1, 30)), int(rng.integers(0, 50))
        base = rng.integers(5, 60, n).astype(float)
        wr = np.array([base + rng.choice([0.0, 0.3, 0.49, 0.5, 2.0], n) for _ in range(m)])
        wa = np.array([rng.integers(5, 8, k).astype(float) for _ in range(m)]).reshape(m, k)
        wr[rng.random((m, n)) < 0.05] = NAN
        wr[rng.random((m, n)) < 0.02] = INF
        labels = [f"x{i}" for i in range(m)]
        rate = {lab: bool(rng.random() < 0.2) for lab in labels}
        got = V._classes(base, dict(zip(labels, wr)), rate, dict(zip(labels, wa)) if it % 2 else None)
        want: list[list[str]] = []
        firsts: list[int] = []
        for i in sorted(range(m), key=lambda i: V._rank(labels[i])):
            for c, j in zip(want, firsts):
                same_a = V._same(wa[i], wa[j]) if it % 2 else True
                if rate[labels[i]] == rate[labels[j]] and V._same(wr[i], wr[j]) and same_a:
                    c.append(labels[i])
                    break
            else:
                want.append([labels[i]])
                firsts.append(i)
        assert [c.members for c in got] == want, it
        for c, j in zip(got, firsts):
            ok = np.isfinite(wr[j]) & (base > 0)
            e = np.abs(wr[j][ok] - base[ok]) / base[ok]
            assert (c.mare, c.mean) == ((float(np.median(e)), float(np.mean(e))) if ok.any() else (INF, INF))


def test_rounds_numbered_as_unique_numbers_them():
    # in order: 3 3 7 7 7 9 → 0 0 1 1 1 2; out of order falls back to np.unique
    inv, k = V._numbered(np.array([3, 3, 7, 7, 7, 9]))
    assert inv.tolist() == [0, 0, 1, 1, 1, 2] and k == 3
    inv, k = V._numbered(np.array([7, 3, 9, 3]))
    assert inv.tolist() == [1, 0, 2, 0] and k == 3
    assert V._numbered(np.zeros(0, dtype=np.int64))[1] == 0


def test_member_is_isin():
    rng = np.random.default_rng(2)
    for _ in range(50):
        x = rng.integers(-1, 40, int(rng.integers(0, 200)))
        v = rng.integers(0, 45, int(rng.integers(0, 20)))
        assert np.array_equal(M.member(x, v), np.isin(x, v))
    big = np.array([0, 10**12, 5])  # far outside a table's range: np.isin
    assert M.member(big, np.array([5, 10**12])).tolist() == [False, True, True]
    assert M.member(np.array([1.0, 2.0]), np.array([2.0])).tolist() == [False, True]


def test_equals_is_the_polars_comparison():
    enum = pl.Enum(["open", "recovery", "loss"])
    for s in (
        pl.Series(["open", "loss", "open", "recovery"], dtype=enum),
        pl.Series(["open", None, "loss"], dtype=enum),
        pl.Series(["open", "x", None]),
        pl.Series(["loss", "loss"], dtype=enum),
    ):
        want = (s == "open").fill_null(False).to_numpy()
        assert np.array_equal(M.equals(s, "open"), want)


def test_scaled_is_the_polars_division():
    # polars divides a Float64 Series by a scalar as a multiplication by its reciprocal (not
    # always numpy's x / d to the last bit): the fits' columns were made so, and stay so
    rng = np.random.default_rng(4)
    for d in (1448.0, 1460.0, 536.0, 1e9, 3.0):
        x = rng.integers(1, 10**12, 20_000)
        want = (pl.Series(x).cast(pl.Float64) / d).to_numpy()
        assert np.array_equal(M.scaled(x, d), want)


def test_corrcoef_rows_are_numpys():
    rng = np.random.default_rng(8)
    for _ in range(60):
        n, m = int(rng.integers(3, 3000)), int(rng.integers(1, 16))
        a = rng.integers(1, 300, n).astype(float) / 1.5
        W = a + rng.normal(0, 5, (m, n)).round(1)
        got = M._corrcoef_rows(a, W)
        for j in range(m):
            assert got[j] == np.corrcoef(a, W[j])[0, 1]


def test_window_metrics_of_a_matrix_are_those_of_each_row():
    # every row of the matrix gets the numbers _window_metrics gives it alone, also for rows
    # with non-finite rounds (taken one by one), rounds without a usable RTT, and constant rows
    rng = np.random.default_rng(6)
    for it in range(60):
        n, m = int(rng.integers(1, 400)), int(rng.integers(1, 16))
        a = rng.integers(1, 200, n).astype(float) / 1.3
        rtt = rng.random(n) * 0.1
        rtt[rng.random(n) < 0.1] = 0.0 if it % 2 else NAN
        R = a + rng.normal(0, 3, (m, n))
        if it % 3 == 0:
            R[0] = 7.0
        if it % 4 == 0 and m > 1:
            R[1, int(rng.integers(0, n))] = NAN
        pre = M._Actual(a, rtt)
        outs: list[dict] = [{} for _ in range(m)]
        done = M._window_metrics_rows(outs, R, 1448, pre)
        for j in range(m):
            want: dict = {}
            assert done[j] == M._window_metrics(want, a, R[j].copy(), rtt, 1448)
            assert outs[j] == want, (it, j)


def test_fit_equals_the_round_table_form():
    # metrics.fit (the replays as one matrix) against fit_one of round_table per replay, on
    # hand-made rounds with a null limit, a round in recovery, a round before the first ACK
    rounds = pl.DataFrame(
        {
            "round": pl.Series([0, 1, 2, 3, 4, 5], dtype=pl.UInt32),
            "start_ns": [0, 100, 200, 300, 400, 500],
            "end_ns": [5, 200, 300, 400, 500, 600],
            "peak_flight_bytes": [14480, 28960, 30408, 0, 33304, 34752],
            "acked_bytes": [1, 2, 3, 4, 5, 6],
            "min_rtt_s": [0.01, 0.011, None, 0.012, 0.013, 0.0125],
            "limit": pl.Series(["cwnd", "cwnd", "cwnd", "cwnd", None, "cwnd"], dtype=pl.Enum(["cwnd", "rwnd", "app"])),
            "in_recovery": [False, False, False, False, False, True],
        }
    )
    ts = pl.Series("ts_ns", [10, 150, 200, 260, 300, 399, 400, 450, 500, 600])
    replays = {
        "a": pl.DataFrame({"ts_ns": ts, "cwnd": [10.0, 20, 21, 22, 23, 24, 25, 26, 27, 28]}),
        "b": pl.DataFrame({"ts_ns": ts, "cwnd": [10.0, 19, 20, 21, 22, 23, 24, 25, 26, 27]}),
        "c": pl.DataFrame(
            {"ts_ns": ts, "cwnd": [10.0] * 10, "inflight_cap": [9.0, 18, 20, NAN, 22, 23, 24, 25, 26, 27]}
        ),
        "d": pl.DataFrame({"ts_ns": ts, "cwnd": [5.0] * 10}),
    }
    ev = types.SimpleNamespace(rounds=rounds, mss=1448, flow_id=3)
    got = M.fit(ev, replays)
    for row in got.iter_rows(named=True):
        want = M.fit_one(M.round_table(pl.DataFrame(), rounds, replays[row["algo"]], 1448), 1448)
        assert {k: row[k] for k in want} == want, row["algo"]
    # by hand: the usable rounds are 1 and 2 (round 0 closes before the first replay row, 3 has
    # no flight, 4 no limit, 5 is in recovery): actual 20 and 21 packets, replayed at rows 1 and
    # 3: a 20, 22 (mare 0.5/21); b 19, 21 (0.5/20); c 18 and NaN (one round: 2/20); d 5, 5
    assert got.get_column("algo").to_list() == ["a", "b", "c", "d"]
    assert got.get_column("rounds").to_list() == [2, 2, 2, 2]
    assert got.get_column("mare").to_list()[:3] == [0.5 / 21, 0.5 / 20, 0.1]


def test_duel_counts_and_their_mirror_are_those_of_paired_by_acks(path):
    # _duel_counts counts each stretch of a round's ACKs without branching and adds it to the
    # round when the stretch ends: the same counts as _paired_by_acks, with the rounds in order
    # or not (a round in several stretches), NaN and inf windows; the mirror duel (other against
    # best) is the rounds lost
    rng = np.random.default_rng(9)
    for it in range(30):
        n = int(rng.integers(1, 500))
        obs = 20.0 + rng.integers(0, 6, n)
        rnd = rng.integers(0, 40, n)
        if it % 2:
            rnd = np.sort(rnd)
        a = obs + rng.normal(0, 1.2, n).round(1)
        b = obs + rng.normal(0.3, 1.2, n).round(1)
        a[rng.random(n) < 0.05] = NAN
        b[rng.random(n) < 0.05] = INF
        inv, nk = V._numbered(rnd)
        won, lost, differ = V._duel_counts(a, b, obs, inv, nk, 0.5, 0.0)
        assert (won, differ) == V._paired_by_acks(obs, rnd, a, b, 0.5), it
        assert (lost, differ) == V._paired_by_acks(obs, rnd, b, a, 0.5), it
    # by hand: round 0 — after ACK 1 a is 1 closer (won), after ACK 2 b is 1 closer (lost):
    # a tie; round 1 — a closer after both ACKs: won; round 2 — within the tie: nothing
    obs = np.array([10.0, 10.0, 10.0, 10.0, 10.0])
    a = np.array([10.0, 12.0, 10.0, 10.0, 10.2])
    b = np.array([11.0, 11.0, 11.0, 12.0, 10.0])
    assert V._duel_counts(a, b, obs, np.array([0, 0, 1, 1, 2]), 3, 0.5, 0.0) == (1, 0, 1)


def test_the_verdict_takes_the_fits_windows_of_the_same_flow_only():
    # fit and then the verdict of one flow share the windows at its rounds; another flow (or
    # another replay table, even with the same values) is taken anew
    rounds = pl.DataFrame(
        {
            "round": pl.Series([0, 1], dtype=pl.UInt32),
            "start_ns": [0, 100],
            "end_ns": [100, 200],
            "peak_flight_bytes": [14480, 28960],
            "acked_bytes": [1, 2],
            "min_rtt_s": [0.01, 0.01],
            "limit": ["cwnd", "cwnd"],
            "in_recovery": [False, False],
        }
    )
    ts = pl.Series("ts_ns", [50, 100, 150, 200])
    reps = {"a": pl.DataFrame({"ts_ns": ts, "cwnd": [1.0, 2.0, 3.0, 4.0]})}
    ev = types.SimpleNamespace(rounds=rounds, mss=1448, flow_id=1)
    M.fit(ev, reps)
    first = M.round_matrix(ev, reps)[1]
    assert first.tolist() == [[1.0, 3.0]] and M.round_matrix(ev, reps)[1] is first
    other = {"a": pl.DataFrame({"ts_ns": ts, "cwnd": [5.0, 6.0, 7.0, 8.0]})}
    assert M.round_matrix(ev, other)[1].tolist() == [[5.0, 7.0]]
    ev2 = types.SimpleNamespace(rounds=rounds.clone(), mss=1448, flow_id=2)
    assert M.round_matrix(ev2, reps)[1] is not first
    # the dict form is a copy: changing it changes nothing shared
    _, d = M.round_windows(ev, other)
    d["a"][:] = 0.0
    assert M.round_matrix(ev, other)[1].tolist() == [[5.0, 7.0]]


def test_queue_counts_are_the_medians_polars_computes(path):
    # evidence._queue through its compiled pass (rounds as small integers) against the group_by
    # median and join of polars, with null samples and rounds, rounds out of order, even counts
    # straddling the threshold and rounds without samples
    from hscc_trace.analysis import evidence

    rng = np.random.default_rng(12)
    for it in range(60):
        n, nr = int(rng.integers(1, 300)), int(rng.integers(1, 40))
        r = rng.integers(0, nr, n)
        if it % 3:
            r = np.sort(r)
        vals = rng.choice([0.01, 0.0105, 0.011, 0.0111, 0.012, 0.02], n) if it % 2 else 0.01 + rng.random(n) * 0.05
        rtt = [None if it % 5 == 0 and rng.random() < 0.2 else float(v) for v in vals]
        rnd = [None if it % 7 == 0 and rng.random() < 0.1 else int(v) for v in r]
        acks = pl.DataFrame({"round": pl.Series(rnd, dtype=pl.UInt32), "rtt_s": pl.Series(rtt, dtype=pl.Float64)})
        rounds = pl.DataFrame({"round": pl.Series(np.arange(nr + 3), dtype=pl.UInt32)})
        ev = types.SimpleNamespace(acks=acks, rounds=rounds)
        got, want = evidence._queue(ev), evidence._queue_polars(ev)
        assert np.array_equal(got[0], want[0]) and got[1] == want[1], it
    # by hand: minimum 10 ms, threshold 11 ms; round 0: 10, 12 → median 11, not above; round 1:
    # 10.5, 12, 13 → 12: queued; round 2: no sample (0 > 11 ms: no)
    q, base, ok = evidence._queue_counts(
        np.array([0.010, 0.012, 0.0105, 0.012, 0.013, NAN]), np.array([0, 0, 1, 1, 1, 2]), np.array([0, 1, 2]), 0.1, 3
    )
    assert ok and base == 0.010 and q.tolist() == [False, True, False]


def test_judged_acks_are_those_of_the_numpy_form(path):
    # metrics.ack_matrix through its compiled pass against the formula of ack_windows in numpy:
    # the flight each ACK left (next snd_max − ack, packets), in cwnd-limited rounds outside
    # recovery, in state open, finite and positive
    rng = np.random.default_rng(13)
    states = pl.Enum(["open", "recovery", "loss"])
    for it in range(20):
        n, nr = int(rng.integers(2, 400)), int(rng.integers(1, 30))
        ack = np.cumsum(rng.integers(0, 3000, n))
        snd = ack + rng.integers(-2000, 40000, n)
        rnd = np.sort(rng.integers(0, nr, n))
        acks = pl.DataFrame(
            {
                "snd_max": snd,
                "ack": ack,
                "round": pl.Series(
                    [None if it % 4 == 0 and rng.random() < 0.1 else int(x) for x in rnd], dtype=pl.UInt32
                ),
                "state": pl.Series(rng.choice(["open", "open", "recovery", "loss"], n).tolist(), dtype=states),
            }
        )
        rounds = pl.DataFrame(
            {
                "round": pl.Series(np.arange(nr), dtype=pl.UInt32),
                "limit": rng.choice(["cwnd", "cwnd", "rwnd", "app"], nr).tolist(),
                "in_recovery": (rng.random(nr) < 0.2).tolist(),
            }
        )
        col = rng.random(n) * 50
        ev = types.SimpleNamespace(acks=acks, rounds=rounds, mss=1448)
        obs, rr, A = M.ack_matrix(ev, {"x": pl.DataFrame({"cwnd": col})})
        flight = np.full(n, NAN)
        flight[:-1] = (snd[1:].astype(float) - ack[:-1].astype(float)) / 1448.0
        r = acks.get_column("round").cast(pl.Int64).fill_null(-1).to_numpy()
        good = rounds.filter((pl.col("limit") == "cwnd") & ~pl.col("in_recovery")).get_column("round").to_numpy()
        use = np.isin(r, good) & (acks.get_column("state") == "open").to_numpy() & (flight > 0)
        assert np.array_equal(obs, flight[use]) and rr.tolist() == r[use].tolist()
        assert np.array_equal(A[0], np.floor(col[use] + 1e-9))  # (whole packets, as a sender fills them)


def test_median_and_mean_of_the_evidence_are_numpys():
    # the evidence's _median and _mean (numpy's steps without its wrappers) give np.median's and
    # np.mean's numbers to the last bit and the sign of zero, on values with ±0.0, the extremes
    # and the smallest subnormals, odd and even counts
    from hscc_trace.analysis import evidence

    rng = np.random.default_rng(14)
    pool = [0.0, -0.0, 1.0, -1.0, 0.5, 1e308, -1e308, 3.3, 5e-324, -5e-324]
    with np.errstate(all="ignore"):
        for it in range(20000):
            n = int(rng.integers(1, 40))
            x = rng.choice(pool, n) if it % 2 else rng.normal(0, 10, n)
            for got, want in ((evidence._median(x), np.median(x)), (evidence._mean(x), np.mean(x))):
                assert (got == want and np.signbit(got) == np.signbit(want)) or (np.isnan(got) and np.isnan(want)), x
    assert evidence._median(np.array([1.0, NAN, 3.0])) is not None  # (NaN: np.median itself)
    assert np.isnan(evidence._median(np.array([1.0, NAN, 3.0])))


def test_warm_keeps_the_events_parts_for_the_same_tables_only():
    # metrics.warm computes ahead what fit and the verdict take from the events alone (the usable
    # rounds, the judged ACKs): what they give after it equals what they give without it, and a
    # flow with other tables (even equal ones, or changed ones) is computed anew
    rounds = pl.DataFrame(
        {
            "round": pl.Series([0, 1, 2], dtype=pl.UInt32),
            "start_ns": [0, 100, 200],
            "end_ns": [100, 200, 300],
            "peak_flight_bytes": [14480, 28960, 30408],
            "acked_bytes": [1, 2, 3],
            "min_rtt_s": [0.01, 0.01, 0.01],
            "limit": ["cwnd", "cwnd", "cwnd"],
            "in_recovery": [False, False, False],
        }
    )
    acks = pl.DataFrame(
        {
            "ts_ns": [50, 100, 150, 200, 250, 300],
            "snd_max": [14480, 28960, 43440, 57920, 72400, 86880],
            "ack": [1448, 2896, 14480, 28960, 43440, 57920],
            "round": pl.Series([0, 0, 1, 1, 2, 2], dtype=pl.UInt32),
            "state": ["open", "open", "open", "recovery", "open", "open"],
        }
    )
    ts = pl.Series("ts_ns", acks.get_column("ts_ns"))
    reps = {
        "a": pl.DataFrame({"ts_ns": ts, "cwnd": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]}),
        "b": pl.DataFrame({"ts_ns": ts, "cwnd": [2.0, 2.0, 2.0, 2.0, 2.0, 2.0]}),
    }

    def results(ev):
        fit = M.fit(ev, reps)
        obs, rnd, a = M.ack_matrix(ev, reps)
        return fit, M.round_matrix(ev, reps)[0].tolist(), obs.tolist(), rnd.tolist(), a.tolist()

    fresh = types.SimpleNamespace(rounds=rounds.clone(), acks=acks.clone(), mss=1448, flow_id=1)
    want = results(fresh)
    ev = types.SimpleNamespace(rounds=rounds, acks=acks, mss=1448, flow_id=1)
    M.warm(ev)
    got = results(ev)
    assert got[0].equals(want[0]) and got[1:] == want[1:]
    assert len(got[2]) == 4  # the ACK in recovery and the last one are not judged
    # other tables, changed: computed anew, not taken from the last flow
    ev2 = types.SimpleNamespace(
        rounds=rounds.with_columns(pl.Series("in_recovery", [False, True, False])),
        acks=acks.with_columns(pl.Series("state", ["open"] * 6)),
        mss=1448,
        flow_id=2,
    )
    M.warm(ev)
    obs2, _, _ = M.ack_matrix(ev2, reps)
    assert len(obs2) == 3 and M.round_matrix(ev2, reps)[0].tolist() == [10.0, 21.0]
    with pytest.raises(ValueError):  # a kept value is read-only: no caller can change it
        M.ack_matrix(ev, reps)[0][0] = 0.0


def test_limit_strings_are_the_columns_strings_whatever_its_dtype():
    # limit_strings takes the strings an Enum, Categorical or String column gives as objects,
    # and casts any other column (booleans with nulls also give objects, but no strings)
    cases = [
        pl.Series("limit", ["cwnd", None, "app"], dtype=pl.Enum(["cwnd", "rwnd", "app"])),
        pl.Series("limit", ["cwnd", None, "rwnd"], dtype=pl.Categorical),
        pl.Series("limit", [None, "cwnd", "app"]),
        pl.Series("limit", [None, None, None], dtype=pl.String),
        pl.Series("limit", [True, None, False]),
        pl.Series("limit", [1, None, 3]),
    ]
    for s in cases:
        got = M.limit_strings(pl.DataFrame([s]))
        want = s.cast(pl.String).to_list()
        assert got.dtype == object and got.tolist() == want, s.dtype
        assert not got.flags.writeable


def test_judge_reads_only_the_ack_windows_that_can_matter(monkeypatch):
    # verdict.judge fills a replay's ACK windows only where they can matter (it equals another
    # by rounds, or fits its threshold): on the largest flow of real captures of five senders,
    # the verdict must be the one made with every replay's ACK windows read
    from pathlib import Path

    from hscc_trace.analysis import pipeline
    from hscc_trace.replay import engine, selection

    samples = Path(__file__).resolve().parents[2] / "samples"
    algos = selection.resolved(selection.select(None, None).names, {})
    full_matrix, classes_of = M.ack_matrix, V._classes_of
    masks: list[np.ndarray] = []

    def spy(events, reps, rows=None):
        masks.append(np.asarray(rows, dtype=bool).copy())
        return full_matrix(events, reps, rows)

    for sample in ("reno-bdp", "cubic-loss", "bbr", "highspeed-bdp", "ctcp-bdp"):
        cap = next((samples / sample).glob("capture.pcap*"))
        pc = pipeline.prepare_capture(str(cap), None, None)
        ev = max((e for _, e in pc.events if e is not None), key=lambda e: e.acks.height)
        replays = engine.replay_flow(ev, algos)
        with monkeypatch.context() as m:
            m.setattr(M, "ack_matrix", spy)
            masked = V.judge(ev, replays)
        with monkeypatch.context() as m:
            m.setattr(M, "ack_matrix", lambda events, reps, rows=None: full_matrix(events, reps))
            m.setattr(V, "_classes_of", lambda *a: classes_of(*a[:7]))  # (no ``have``: every row read)
            unmasked = V.judge(ev, replays)
        assert masked == unmasked, sample
    assert any(0 < k.sum() < k.size for k in masks)  # (some replays' ACK windows were left out)
