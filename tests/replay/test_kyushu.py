"""Kyushu-TCP wrapper (replay/algorithms/kyushu.py) over NewReno, HighSpeed and CUBIC, through the engine.

Paper: papers/kyushu-tcp-paper.txt §3 eqs. (1)-(2), Figs. 2-3. The base algorithms are engineer
C's modules; NewReno (flavor rfc: ssthresh = FlightSize/2, cwnd += N/cwnd) keeps the hand
arithmetic short, so most sequences use ``kyushu+newreno`` with ``engage_above=0``.
MSS = 1000 B; "n" below is the packets newly acknowledged by one ACK.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs
from replay_synth import MSS, ack, frame

from hscc_trace.replay import engine


def stream(steps: list[tuple[str, int, int]]) -> pl.DataFrame:
    """steps: (kind, n packets acked, packets outstanding after the ACK); kind is "ack",
    "fr" (a duplicate ACK that starts a fast retransmit), "rec" (a duplicate ACK inside the
    recovery) or "rto" (a timeout; the sender is in loss until the next "ack")."""
    rows = []
    acked = 0
    for kind, n, out in steps:
        acked += n * MSS
        state = {"ack": "open", "fr": "recovery", "rec": "recovery", "rto": "loss"}[kind]
        ev = {"fr": "fast_retransmit", "rto": "rto"}.get(kind)
        rows.append(
            ack(
                ack=acked,
                acked_bytes=n * MSS,
                dupack=0 if n else 3,
                snd_max=acked + out * MSS,
                outstanding=out * MSS,
                state=state,
                cong_event=ev,
            )
        )
    return frame(rows)


def run(algo: str, steps: list[tuple[str, int, int]], *params: str) -> pl.DataFrame:
    out = engine.replay(stream(steps), MSS, [algo], [f"{algo}.{p}" for p in params], compiled=False)
    return next(iter(out.values()))


def test_kyushu_holds_at_w2_for_tc2_w2_packets():
    # kyushu+newreno, iw 100, α = 0.55, 100 packets outstanding.
    # ACK0 fast retransmit: w1 = 100, w2 = 0.55·100 = 55, Tc = 1, B = 1²·55 = 55;
    #      NewReno ssthresh = 100/2 = 50 (rfc: cwnd = 50)
    # ACK1 n=100 recovery ends (cwnd 50) then 50 + 100/50 = 52
    # ACK2 n=100: 52 + 100/52 = 53.9230769
    # ACK3 n=100: 53.9230769 + 100/53.9230769 = 55.7775705 ≥ w2 → held at 55, period begins
    # ACK4-8 n=10: sent 10, 20, 30, 40, 50 ≤ 55 → 55
    # ACK9 n=10: sent 60 > 55 → period over, NewReno grows again: 55 + 10/55 = 55.1818182
    # ACK10 n=10: 55.1818182 + 10/55.1818182 = 55.3630373
    steps = [("fr", 0, 100)] + [("ack", 100, 100)] * 3 + [("ack", 10, 100)] * 7
    f = run("kyushu+newreno", steps, "iw=100", "reduction_ratio=0.55", "engage_above=0")
    assert f["cwnd"].to_list() == pytest.approx(
        [50, 52, 53.9230769, 55, 55, 55, 55, 55, 55, 55.1818182, 55.3630373], abs=1e-7
    )
    assert f["non_aggressive"].to_list() == [False] * 3 + [True] * 6 + [False] * 2
    assert f["sent_in_period"].to_list()[3:10] == [0, 10, 20, 30, 40, 50, 60]
    assert f["w1"][0] == 100 and f["w2"][0] == pytest.approx(55) and f["Tc"][0] == 1
    assert f["B_ktcp"][0] == pytest.approx(55)


def test_kyushu_second_fast_retransmit_quadruples_period():
    # α = 0.6. ACK0 fr (100 out): w1 100, w2 60, Tc 1; NewReno min(100, 100)/2 → cwnd 50.
    # ACK1 n=1: 50 + 1/50 = 50.02 (< 60).
    # ACK2 fr with 40 outstanding: NewReno ssthresh = min(40, 50.02)/2 = 20; w1 = 50.02,
    #      w2 = 0.6·50.02 = 30.012, Tc = 2, B = 2²·30.012 = 120.048
    # ACK3 n=100: recovery ends at 20, 20 + 100/20 = 25; ACK4 n=100: 25 + 100/25 = 29 (< 30.012)
    # ACK5 n=100: 29 + 100/29 = 32.4482759 ≥ 30.012 → held at 30.012 (sent 0)
    # ACK6-8 n=40: sent 40, 80, 120 ≤ 120.048 → 30.012
    # ACK9 n=40: sent 160 > 120.048 → 30.012 + 40/30.012 = 31.3448002
    steps = [("fr", 0, 100), ("ack", 1, 100), ("fr", 0, 40)] + [("ack", 100, 40)] * 3 + [("ack", 40, 40)] * 4
    f = run("kyushu+newreno", steps, "iw=100", "reduction_ratio=0.6", "engage_above=0")
    assert f["cwnd"].to_list() == pytest.approx(
        [50, 50.02, 20, 25, 29, 30.012, 30.012, 30.012, 30.012, 31.3448002], abs=1e-7
    )
    assert f["Tc"].to_list() == [1, 1] + [2] * 8
    assert f["B_ktcp"][2] == pytest.approx(120.048)
    assert f["non_aggressive"].to_list() == [False] * 5 + [True] * 4 + [False]


def test_kyushu_new_loss_ends_the_period():
    # as the first test up to the hold (cwnd 55 from ACK3), then a fast retransmit at ACK5 with 100
    # outstanding: the period ends; w1 = 55 (held window), w2 = 0.55·55 = 30.25, Tc = 2,
    # B = 4·30.25 = 121; NewReno: cwnd = min(100, 55)/2 = 27.5 (below w2: armed, not held yet);
    # ACK6 n=10: recovery ends at 27.5, 27.5 + 10/27.5 = 27.8636364 (< 30.25)
    steps = [("fr", 0, 100)] + [("ack", 100, 100)] * 3 + [("ack", 10, 100), ("fr", 0, 100), ("ack", 10, 100)]
    f = run("kyushu+newreno", steps, "iw=100", "reduction_ratio=0.55", "engage_above=0")
    assert f["non_aggressive"].to_list() == [False, False, False, True, True, False, False]
    assert f["w1"][5] == pytest.approx(55) and f["w2"][5] == pytest.approx(30.25) and f["Tc"][5] == 2
    assert f["B_ktcp"][5] == pytest.approx(121.0)
    assert f["cwnd"][5] == pytest.approx(27.5) and f["cwnd"][6] == pytest.approx(27.8636364, abs=1e-7)


def test_kyushu_rto_resets_tc_and_gives_an_empty_period():
    # ACK0 fr: w1 100, w2 55, Tc 1. ACK1 RTO inside the recovery: Tc = 0, B = 0, cwnd 1.
    # ACK2 n=49 (L = 100): slow start 1 + 49 = 50. ACK3-5 n=100: 52, 53.9230769, 55.7775705 —
    # the window passes w2 = 55 without a hold (B = 0²·55 = 0).
    steps = [("fr", 0, 100), ("rto", 0, 100), ("ack", 49, 100)] + [("ack", 100, 100)] * 3
    f = run("kyushu+newreno", steps, "iw=100", "reduction_ratio=0.55", "engage_above=0", "L=100")
    assert f["Tc"].to_list() == [1, 0, 0, 0, 0, 0]
    assert f["B_ktcp"].to_list()[1:] == [0, 0, 0, 0, 0]
    assert f["cwnd"].to_list() == pytest.approx([50, 1, 50, 52, 53.9230769, 55.7775705], abs=1e-7)
    assert not any(f["non_aggressive"].to_list())


def test_kyushu_does_not_engage_below_base_high_speed_regime():
    # kyushu+highspeed, iw 40: b(40) = 0.5 − 0.4·ln(40/38)/ln(83000/38) = 0.5 − 0.4·0.0512933/7.6890097
    # = 0.4973316 → ssthresh = 40·0.5026684 = 20.1067; w2 = 0.9·40 = 36 ≤ Low_Window 38: no hold
    # (HighSpeed is standard TCP there); with engage_above = 0 the same stream holds at 36.
    steps = [("fr", 0, 40)] + [("ack", 100, 40)] * 12
    f = run("kyushu+highspeed", steps, "iw=40", "flavor=rfc")
    assert f["cwnd"][0] == pytest.approx(20.1067, abs=1e-4)
    assert f["w2"][0] == pytest.approx(36.0)
    assert not any(f["non_aggressive"].to_list())
    assert np.all(np.diff(f["cwnd"].to_numpy()) > 0)
    g = run("kyushu+highspeed", steps, "iw=40", "engage_above=0", "flavor=rfc")
    assert any(g["non_aggressive"].to_list())
    assert g.filter(pl.col("non_aggressive"))["cwnd"].to_list() == pytest.approx([36.0])
    # held on the ACK that reached 36 (sent 0); the next ACK's 100 packets exceed B = 36: released


def test_kyushu_over_highspeed_in_high_speed_regime():
    # iw 1000: b(1000) = 0.5 − 0.4·ln(1000/38)/ln(83000/38) = 0.5 − 0.4·3.2701690/7.6890097 = 0.3298783
    # → ssthresh = 1000·0.6701217 = 670.1217; w1 = 1000, w2 = 900, Tc = 1, B = 900.
    # n = 100 per ACK: HighSpeed climbs (a(w)·100/w ≈ 0.7-0.8 per ACK) until it reaches 900, which
    # is held on that ACK (sent 0) and the next 9 (sent 100 … 900 ≤ 900); the 10th (1000 > 900)
    # releases it and HighSpeed grows again.
    steps = [("fr", 0, 1000)] + [("ack", 100, 1000)] * 400
    f = run("kyushu+highspeed", steps, "iw=1000", "flavor=rfc")
    assert f["cwnd"][0] == pytest.approx(670.1217, abs=1e-4)
    assert (f["w1"][0], f["w2"][0], f["Tc"][0], f["B_ktcp"][0]) == (1000, 900, 1, 900)
    held = f.with_row_index().filter(pl.col("non_aggressive"))
    assert held["cwnd"].to_list() == [900.0] * 10
    assert held["sent_in_period"].to_list() == [0, 100, 200, 300, 400, 500, 600, 700, 800, 900]
    assert held["index"].to_list() == list(range(held["index"][0], held["index"][0] + 10))  # one period
    after = held["index"][-1] + 1
    assert f["sent_in_period"][after] == 1000 and not f["non_aggressive"][after]
    assert f["cwnd"][after] > 900 and f["cwnd"][-1] > f["cwnd"][after]


def test_kyushu_over_cubic_holds_at_w2():
    # CUBIC (rfc): ssthresh = 0.7·flight = 0.7·100 = 70; w1 = 100, w2 = 90, Tc = 1, B = 90 packets.
    # The window climbs the cubic curve towards W_max = 100; once it reaches 90 it is held there
    # until more than 90 packets were sent (n = 10 per ACK: 9 held ACKs after the one that reached it).
    steps = [("fr", 0, 100)] + [("ack", 10, 100)] * 200
    rows = stream(steps).with_columns(
        (pl.int_range(0, pl.len(), dtype=pl.Int64) * 10_000_000 + 1_000_000_000).alias("ts_ns")
    )  # 10 ms apart
    f = next(
        iter(
            engine.replay(
                rows, MSS, ["kyushu+cubic"], ["kyushu+cubic.iw=100", "kyushu+cubic.flavor=rfc"], compiled=False
            ).values()
        )
    )
    assert f["cwnd"][0] == pytest.approx(70.0)
    assert (f["w1"][0], f["w2"][0], f["B_ktcp"][0]) == (100, 90, 90)
    held = f.with_row_index().filter(pl.col("non_aggressive"))
    assert held.height == 10  # the entry ACK (sent 0) and sent 10 … 90
    assert set(held["cwnd"].to_list()) == {90.0}
    assert held["sent_in_period"].to_list() == [0, 10, 20, 30, 40, 50, 60, 70, 80, 90]
    after = held["index"][-1] + 1
    assert f["sent_in_period"][after] == 100 and f["cwnd"][after] >= 90.0


def test_kyushu_signals():
    f = run("kyushu+newreno", [("fr", 0, 100), ("ack", 1, 100)], "iw=100")
    assert f.columns[:5] == ["frame", "ts_ns", "cwnd", "ssthresh", "state"]
    for c in ("w1", "w2", "Tc", "B_ktcp", "non_aggressive", "sent_in_period"):
        assert c in f.columns
    assert f["w2"][0] == pytest.approx(90.0)  # default α = 0.9


# --- property ----------------------------------------------------------------------------------------------


@hs.composite
def loss_streams(draw: Any) -> list[tuple[str, int, int]]:
    out = draw(hs.integers(20, 400))
    steps: list[tuple[str, int, int]] = [("fr", 0, out)]
    for _ in range(draw(hs.integers(10, 120))):
        k = draw(hs.sampled_from(["ack"] * 20 + ["fr", "rto"]))
        if k == "ack":
            steps.append(("ack", draw(hs.integers(1, 60)), out))
        else:
            steps.append((k, 0, out))
            steps.append(("rec" if k == "fr" else "rto", 0, out))
    return steps


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    loss_streams(),
    hs.sampled_from(["kyushu+newreno", "kyushu+highspeed", "kyushu+cubic"]),
    hs.sampled_from([0.5, 0.7, 0.9]),
)
def test_kyushu_property_holds_at_w2_for_tc2_w2_packets(steps, algo, ratio):
    iw = steps[0][2]
    f = run(algo, steps, f"iw={iw}", f"reduction_ratio={ratio}", "engage_above=0")
    n = np.array([s[1] for s in steps], dtype=float)
    na = f["non_aggressive"].to_numpy()
    cwnd, w2, b, sent, tc = (f[c].to_numpy() for c in ("cwnd", "w2", "B_ktcp", "sent_in_period", "Tc"))
    assert np.all(np.isfinite(cwnd)) and np.all(cwnd > 0)
    # while held: exactly w2, never more than B = Tc²·w2 packets sent
    assert np.all(cwnd[na] == w2[na])
    assert np.all(sent[na] <= b[na] + 1e-9)
    assert np.allclose(b[~np.isnan(w2)], (tc * tc * w2)[~np.isnan(w2)])
    # a period ends either by a congestion event or on the ACK whose packets make sent exceed B
    kinds = [s[0] for s in steps]
    for i in range(1, len(steps)):
        if na[i - 1] and not na[i] and kinds[i] == "ack":
            assert sent[i] > b[i] and sent[i] - n[i] <= b[i] + 1e-9


def test_kyushu_linux_flavor_w2_whole_packets():
    # flavor linux (NewReno's hooks in the Linux core): w1 = 100, α = 0.555 → w2 = ⌊55.5⌋ = 55;
    # flavor rfc keeps 55.5
    f = run("kyushu+newreno", [("fr", 0, 100), ("ack", 1, 100)], "iw=100", "reduction_ratio=0.555", "flavor=linux")
    assert f["w2"][0] == 55.0
    g = run("kyushu+newreno", [("fr", 0, 100), ("ack", 1, 100)], "iw=100", "reduction_ratio=0.555")
    assert g["w2"][0] == pytest.approx(55.5)


HOLD_STEPS = [("fr", 0, 100)] + [("ack", 100, 100)] * 3 + [("ack", 10, 100)] * 7


@pytest.mark.parametrize(
    "base, cwnd, held",
    [
        # iw 100, α = 0.55 (w2 = 55), engage_above = 0, the stream of the first test.
        # newreno (rfc): min(100, 100)/2 = 50; +100/cwnd: 52, 53.9230769, 55.7775705 → held at 55 for
        # B = 1²·55 packets (ACK3-8), released on ACK9: 55.1818182, 55.3630373 (first test).
        ("newreno", [50, 52, 53.9230769, 55, 55, 55, 55, 55, 55, 55.1818182, 55.3630373], [3, 4, 5, 6, 7, 8]),
        # reno (linux): ssthresh = 100 >> 1 = 50; ACK0 delivers nothing, so PRR leaves cwnd at 100 in
        # that row; ACK1 exit → 50, tcp_cong_avoid_ai(50, 100): cnt 100 → +2, cnt 0 → 52;
        # ACK2: cnt 100 → +⌊100/52⌋ = 1, cnt 48 → 53; ACK3: cnt 148 → +⌊148/53⌋ = 2, cnt 42 → 55 ≥ w2 =
        # ⌊55.0⌋ = 55 → held (ACK3-8, sent 0..50 ≤ 55); ACK9 sent 60 > 55: cnt 42 + 10 = 52 < 55 → 55;
        # ACK10: cnt 62 ≥ 55 → 56, cnt 7.
        ("reno", [100, 52, 53, 55, 55, 55, 55, 55, 55, 55, 56], [3, 4, 5, 6, 7, 8]),
        # highspeed (rfc): b(100) = 0.5 − 0.4·ln(100/38)/ln(83000/38) = 0.5 − 0.4·0.9675840/7.6890097
        #   = 0.4496640 → ssthresh = 100·0.5503360 = 55.0335950 > w2 = 55: already above w2, no hold.
        #   ACK1: b(55.0335950) = 0.5 − 0.4·0.3703577/7.6890097 = 0.4807331, 2b/(2 − b) = 0.6328488,
        #   a = 0.078·55.0335950^0.8·0.6328488 = 0.078·24.6889322·0.6328488 = 1.2187003;
        #   cwnd = 55.0335950 + 1.2187003·100/55.0335950 = 57.2480610; then likewise 59.4327931,
        #   61.5896332, and +10-packet ACKs 61.8026926, 62.0154992, …
        ("highspeed", [55.0335950, 57.2480610, 59.4327931, 61.5896332, 61.8026926, 62.0154992], []),
    ],
)
def test_kyushu_over_bases_gives_each_base_its_own_window(base, cwnd, held):
    flavor = ["flavor=rfc"] if base == "highspeed" else []  # (the working above is HighSpeed's RFC model)
    f = run(f"kyushu+{base}", HOLD_STEPS, "iw=100", "reduction_ratio=0.55", "engage_above=0", *flavor)
    assert f["cwnd"].to_list()[: len(cwnd)] == pytest.approx(cwnd, abs=1e-6)
    assert [i for i, v in enumerate(f["non_aggressive"].to_list()) if v] == held
    assert f["w1"][0] == 100 and f["w2"][0] == pytest.approx(55.0)


def test_kyushu_composes_over_every_registered_base():
    """Over every base the wrapper leaves the base's own window alone until w2 is reached, holds
    exactly w2 while non-aggressive, and records the base's pre-event window as w1 — checked
    against the base run alone on the same stream."""
    from hscc_trace.replay import registry

    steps = [("fr", 0, 100)] + [("ack", 5, 100)] * 30 + [("rto", 0, 100), ("ack", 5, 100)]
    bases = [n for n in registry.names() if not registry.get(n).wraps]
    assert {"highspeed", "cubic", "reno", "fusion", "westwood"} <= set(bases)
    for b in bases:
        f = run(f"kyushu+{b}", steps, "iw=100", "engage_above=0")
        alone = run(b, steps, "iw=100")
        cw, cw0 = f["cwnd"].to_numpy(), alone["cwnd"].to_numpy()
        na = f["non_aggressive"].to_numpy()
        assert f["w1"][0] == 100.0 and f["w2"][0] == pytest.approx(90.0), b  # w1 = pre-event window
        first = int(np.argmax(na)) if na.any() else len(cw)
        # identical to the base alone up to the first held ACK (the base's reduction untouched)
        assert np.allclose(cw[:first], cw0[:first], rtol=0, atol=1e-12), b
        assert np.all(cw[na] == f["w2"].to_numpy()[na]), b
        assert f["Tc"].to_list()[-1] == 0, b  # the RTO resets Tc
