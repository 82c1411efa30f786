"""HRF-TCP and the HRF paper's rows (replay/algorithms/hrf.py): one test per branch, values worked by hand.

Paper: papers/hrf-tcp-paper.txt §2.3-2.4 (CR, CI), §4 eqs. 7, 14-17, §5.2 (rows).
RTTref = 40 ms → k = 1/0.04² = 625 s⁻²; tol = 1 ms; MSS = 1000 B.
"""

from __future__ import annotations

import numpy as np
import pytest
from hook_harness import Hooks
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs
from replay_synth import MSS, ack, frame

from hscc_trace.replay import engine
from hscc_trace.replay import tp as T


def ca(name: str = "hrf", cwnd: float = 200.0, **kw: float) -> Hooks:
    params = {k: v for k, v in kw.items() if k.islower()}
    h = Hooks(name, **params)
    h.call("init")
    h.set(CWND=cwnd, SSTHRESH=100.0)
    h.set(**{k: v for k, v in kw.items() if k.isupper()})
    return h


def test_hrf_cr_mode_without_queue_adds_k_rtt2_per_rtt():
    # RTTmin 80 ms, RTT 80.5 ms ≤ 80 + 1 ms: no queue → CR.
    # per RTT: k·RTT² = 625·0.0805² = 625·0.00648025 = 4.05015625 packets;
    # per ACK of 1 packet: 200 + 4.05015625/200 = 200.02025078
    h = ca(MIN_RTT=0.080, RTT=0.0805)
    h.call("cong_avoid", 1.0)
    assert h["mode"] == 0.0  # CR
    assert h["k"] == pytest.approx(625.0)
    assert h["inc_rtt"] == pytest.approx(4.05015625, abs=1e-10)
    assert h["CWND"] == pytest.approx(200.02025078, abs=1e-8)


def test_hrf_ci_mode_with_queue_adds_kprime_rtt_per_rtt():
    # RTT 100 ms > 81 ms: queue, qdelay 20 ms → CI with k′ = 1/(0.040 + 0.020) = 16.6666667 s⁻¹;
    # per RTT: k′·RTT = 1.6666667; per ACK of 3 packets: 200 + 1.6666667·3/200 = 200.025
    h = ca(MIN_RTT=0.080, RTT=0.100)
    h.call("cong_avoid", 3.0)
    assert h["mode"] == 1.0  # CI
    assert h["k_prime"] == pytest.approx(16.6666667, abs=1e-7)
    assert h["qdelay"] == pytest.approx(0.020)
    assert h["inc_rtt"] == pytest.approx(1.6666667, abs=1e-7)
    assert h["CWND"] == pytest.approx(200.025, abs=1e-10)


def test_hrf_switches_cr_to_ci_when_queue_appears():
    # exact binary times: RTTmin = 1/16 s, tol = 1/1024 s → the threshold RTTmin + tol = 0.0634765625.
    # RTT exactly at the threshold: still no queue (CR); one 2⁻²⁰ s above: CI.
    thr = 0.0625 + 0.0009765625
    h = ca(tol=0.0009765625, MIN_RTT=0.0625, RTT=thr)
    h.call("cong_avoid", 1.0)
    assert h["mode"] == 0.0 and h["queue"] == 0.0
    h.set(RTT=thr + 2.0**-20)
    h.call("cong_avoid", 1.0)
    assert h["mode"] == 1.0 and h["queue"] == 1.0
    h.set(RTT=0.0625)  # queue drained: back to CR
    h.call("cong_avoid", 1.0)
    assert h["mode"] == 0.0


def test_hrf_loss_westwood_decrease_eq17():
    # cwnd 200, RTTmin 80 ms, last RTT 100 ms: max(200·0.8, 100) = 160
    h = ca(MIN_RTT=0.080, RTT=0.100, EVENT=float(T.EV_FAST_RETRANSMIT))
    assert h.call("ssthresh") == pytest.approx(160.0)
    # last RTT 200 ms: max(200·0.4 = 80, 100) = 100 (the half floor)
    h.set(RTT=0.200)
    assert h.call("ssthresh") == pytest.approx(100.0)


def test_hrf_cr_row_halves_on_loss_eq4():
    h = ca("hrf-cr", MIN_RTT=0.080, RTT=0.100, EVENT=float(T.EV_FAST_RETRANSMIT))
    assert h.call("ssthresh") == 100.0


def test_hrf_cr_row_uses_cr_with_queue():
    # CR row, RTT 100 ms (queue): k·RTT² = 625·0.01 = 6.25 per RTT → 200 + 6.25/200 = 200.03125
    h = ca("hrf-cr", MIN_RTT=0.080, RTT=0.100)
    h.call("cong_avoid", 1.0)
    assert h["mode"] == 0.0
    assert h["CWND"] == pytest.approx(200.03125, abs=1e-12)


def test_hrf_ci_row_without_queue_uses_eq8():
    # CI row, no queue (RTT = RTTmin = 80 ms): k′ = 1/(0.040 + 0) = 25 (eq. 8), k′·RTT = 2 per RTT
    # → 200 + 2/200 = 200.01
    h = ca("hrf-ci", MIN_RTT=0.080, RTT=0.080)
    h.call("cong_avoid", 1.0)
    assert h["mode"] == 1.0
    assert h["k_prime"] == pytest.approx(25.0)
    assert h["CWND"] == pytest.approx(200.01, abs=1e-12)


def test_hrf_w_cr_reno_row_uses_reno_increase_with_queue():
    # W+CR+Reno with a queue: Reno's 1 packet per RTT → 200 + 1/200 = 200.005
    h = ca("hrf-w-cr-reno", MIN_RTT=0.080, RTT=0.100)
    h.call("cong_avoid", 1.0)
    assert h["mode"] == 2.0
    assert h["CWND"] == pytest.approx(200.005, abs=1e-12)


def test_hrf_w_cr_cr_row_uses_cr_with_queue_and_westwood_decrease():
    h = ca("hrf-w-cr-cr", MIN_RTT=0.080, RTT=0.100)
    h.call("cong_avoid", 1.0)
    assert h["CWND"] == pytest.approx(200.03125, abs=1e-12)  # 625·0.1² = 6.25 per RTT
    h.set(CWND=200.0, EVENT=float(T.EV_FAST_RETRANSMIT))
    assert h.call("ssthresh") == pytest.approx(160.0)


def test_hrf_reno_increase_before_first_rtt_sample():
    h = ca(RTT=float("nan"), MIN_RTT=float("nan"))
    h.call("cong_avoid", 1.0)
    assert h["mode"] == 2.0
    assert h["CWND"] == pytest.approx(200.005)


def test_hrf_slow_start_is_reno():
    h = Hooks("hrf")
    h.set(CWND=10.0)
    h.call("init")
    h.call("cong_avoid", 5.0)  # 10 + min(5, 2)
    assert h["CWND"] == 12.0 and h["mode"] == 3.0


def test_hrf_rto_uses_reno_ssthresh():
    # max(FlightSize/2, 2) with FlightSize = min(trace flight, replayed cwnd):
    # cwnd 200, flight 50 → 25; cwnd 11, flight 100 → 5.5 (the trace's flight alone gave 50)
    h = ca(MIN_RTT=0.080, RTT=0.100, EVENT=float(T.EV_RTO), FLIGHT=50.0)
    assert h.call("ssthresh") == 25.0
    h = ca(cwnd=11.0, MIN_RTT=0.080, RTT=0.100, EVENT=float(T.EV_RTO), FLIGHT=100.0)
    assert h.call("ssthresh") == 5.5


@pytest.mark.parametrize(
    "row, after_loss, cwnd2, mode2, inc2, cwnd3, mode3, inc3",
    [
        # RTTref 40 ms (k = 625 s⁻²) on a path with RTTmin = 100 ms ≠ RTTref, so the modes differ:
        #   CR without queue (RTT 100 ms): k·RTT² = 625·0.01 = 6.25 per RTT
        #   CI without queue (eq. 14 with s/B = 0): k′ = 1/0.04 = 25, k′·RTT = 25·0.1 = 2.5 per RTT
        #   CR with queue (RTT 150 ms): 625·0.0225 = 14.0625 per RTT
        #   CI with queue (RTT 150 ms, qdelay 50 ms): k′ = 1/(0.04 + 0.05) = 11.1111111, ·0.15 = 1.6666667
        #   Reno: 1 per RTT
        # iw 100. ACK0 dup RTT 100 ms (RTTmin 0.1); ACK1 fast retransmit RTT 125 ms:
        #   westwood eq. (17): max(100·0.1/0.125, 50) = 80; reno eq. (4): 50 (rfc: cwnd = ssthresh).
        # ACK2 1 packet, RTT 100 ms (no queue), ACK3 1 packet, RTT 150 ms (queue); per ACK inc/cwnd:
        # hrf (W+CR+CI): 80 + 6.25/80 = 80.078125; + 1.6666667/80.078125 = +0.0208130 → 80.0989380
        ("hrf", 80.0, 80.078125, "CR", 6.25, 80.0989380, "CI", 1.6666667),
        # W+CR+Reno: 80.078125; + 1/80.078125 = +0.0124878 → 80.0906128
        ("hrf-w-cr-reno", 80.0, 80.078125, "CR", 6.25, 80.0906128, "Reno", 1.0),
        # W+CR+CR: 80.078125; + 14.0625/80.078125 = +0.1756098 → 80.2537348
        ("hrf-w-cr-cr", 80.0, 80.078125, "CR", 6.25, 80.2537348, "CR", 14.0625),
        # CR row (halving): 50 + 6.25/50 = 50.125; + 14.0625/50.125 = +0.2805486 → 50.4055486
        ("hrf-cr", 50.0, 50.125, "CR", 6.25, 50.4055486, "CR", 14.0625),
        # CI row (halving): 50 + 2.5/50 = 50.05; + 1.6666667/50.05 = +0.0333000 → 50.0833000
        ("hrf-ci", 50.0, 50.05, "CI", 2.5, 50.0833000, "CI", 1.6666667),
    ],
)
def test_hrf_engine_sequence_rows_differ_when_rttmin_is_not_rttref(
    row, after_loss, cwnd2, mode2, inc2, cwnd3, mode3, inc3
):
    flight = 100 * MSS
    rows = [
        ack(acked_bytes=0, dupack=1, rtt_s=0.100, ack=0, snd_max=flight, outstanding=flight),
        ack(
            acked_bytes=0,
            dupack=3,
            rtt_s=0.125,
            ack=0,
            snd_max=flight,
            outstanding=flight,
            state="recovery",
            cong_event="fast_retransmit",
        ),
        ack(rtt_s=0.100, ack=MSS, snd_max=flight + MSS, outstanding=flight),
        ack(rtt_s=0.150, ack=2 * MSS, snd_max=flight + 2 * MSS, outstanding=flight),
    ]
    out = next(
        iter(engine.replay(frame(rows), MSS, [row], [f"{row}.iw=100", f"{row}.flavor=rfc"], compiled=False).values())
    )
    assert out["cwnd"].to_list() == pytest.approx([100, after_loss, cwnd2, cwnd3], abs=1e-7)
    assert out["mode"].to_list()[2:] == [mode2, mode3]
    assert out["inc_per_rtt"].to_list()[2:] == pytest.approx([inc2, inc3], abs=1e-7)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hs.lists(hs.floats(0.030, 0.300), min_size=5, max_size=60), hs.floats(0.0, 0.005))
def test_hrf_property_ci_exactly_when_queue_appears(rtts, tol):
    """Through the engine, in congestion avoidance: mode is CI iff RTT > RTTmin + tol."""
    flight = 50 * MSS
    rows = [
        ack(
            acked_bytes=0,
            dupack=3,
            rtt_s=None,
            ack=0,
            snd_max=flight,
            outstanding=flight,
            state="recovery",
            cong_event="fast_retransmit",
        )
    ]
    for i, r in enumerate(rtts):
        rows.append(ack(rtt_s=r, ack=(i + 1) * MSS, snd_max=flight + (i + 1) * MSS, outstanding=flight))
    out = next(
        iter(
            engine.replay(
                frame(rows), MSS, ["hrf"], ["hrf.iw=100", f"hrf.tol={tol!r}", "hrf.flavor=rfc"], compiled=False
            ).values()
        )
    )
    rmin = np.minimum.accumulate(np.array(rtts))
    expect = np.where(np.array(rtts) > rmin + tol, "CI", "CR")
    assert out["mode"].to_list()[1:] == expect.tolist()
    assert np.all(np.diff(out["cwnd"].to_numpy()[1:]) > 0)  # both modes only increase
