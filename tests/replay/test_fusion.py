"""TCP-Fusion (replay/algorithms/fusion.py): one test per branch, per-ACK values worked out by hand.

Units: windows in packets (MSS = 1000 bytes in the synthetic streams), RTTs in seconds.
Paper: papers/tcp-fusion-paper.txt §II-A (decrease), §II-B (three phases), §II-C (α, W_inc).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hook_harness import Hooks, ack_streams
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs
from replay_synth import MSS, ack, frame

from hscc_trace.replay import engine
from hscc_trace.replay import tp as T


def ca(**slots: float) -> Hooks:
    """Fusion in congestion avoidance (cwnd ≥ ssthresh) with RTTmin = 40 ms."""
    h = Hooks("fusion")
    h.call("init")
    h.set(SSTHRESH=50.0, MIN_RTT=0.040, RTT=0.041)
    h.set(**slots)
    return h


# --- §II-B: the three phases --------------------------------------------------------------------


def test_fusion_increase_phase_adds_winc_over_cwnd():
    # cwnd 100, RTTmin 40 ms, round-min RTT 40.5 ms:
    #   diff = 100·0.5/40.5 = 1.2346 packets; α = 100·4/40.5 = 9.8765 → diff < α: increase phase.
    # W_inc = 10: ACK of 1 packet → 100 + 10/100 = 100.1; the Reno window 50 + 1/50 = 50.02.
    h = ca(CWND=100.0, ROUND_MIN_RTT=0.0405, reno_cwnd=50.0, w_inc=10.0)
    h.call("cong_avoid", 1.0)
    assert h["CWND"] == pytest.approx(100.1, abs=1e-12)
    assert h["reno_cwnd"] == pytest.approx(50.02, abs=1e-12)
    assert h["diff"] == pytest.approx(1.2345679, abs=1e-6)
    assert h["alpha"] == pytest.approx(9.8765432, abs=1e-6)
    assert h["alpha3"] == pytest.approx(29.6296296, abs=1e-6)
    assert h["phase"] == 1.0  # increase
    # next ACK acknowledges 2 packets: 100.1 + 10·2/100.1 = 100.1 + 0.1998002 = 100.2998002;
    # Reno: 50.02 + 2/50.02 = 50.02 + 0.0399840 = 50.0599840
    h.call("cong_avoid", 2.0)
    assert h["CWND"] == pytest.approx(100.2998002, abs=1e-7)
    assert h["reno_cwnd"] == pytest.approx(50.0599840, abs=1e-7)


def test_fusion_steady_phase_holds_cwnd_between_alpha_and_3alpha():
    # RTT 50 ms: diff = 100·10/50 = 20; α = 100·4/50 = 8; 3α = 24 → 8 ≤ 20 ≤ 24: steady.
    h = ca(CWND=100.0, ROUND_MIN_RTT=0.050, reno_cwnd=50.0, w_inc=10.0)
    h.call("cong_avoid", 1.0)
    assert h["CWND"] == 100.0
    assert h["phase"] == 2.0  # steady
    assert h["diff"] == pytest.approx(20.0)
    assert h["alpha"] == pytest.approx(8.0)
    assert h["reno_cwnd"] == pytest.approx(50.02)


def test_fusion_decrease_phase_above_3alpha_subtracts_diff_minus_alpha():
    # RTT 80 ms: diff = 100·40/80 = 50; α = 100·4/80 = 5; 3α = 15 → 50 > 15: decrease phase.
    # cwnd = 100 + (5 − 50)/100 = 100 − 0.45 = 99.55
    h = ca(CWND=100.0, ROUND_MIN_RTT=0.080, reno_cwnd=50.0, w_inc=10.0)
    h.call("cong_avoid", 1.0)
    assert h["CWND"] == pytest.approx(99.55, abs=1e-12)
    assert h["phase"] == 3.0  # decrease


def test_fusion_reno_floor_takes_over():
    # cwnd 50.01 barely above the Reno window 50, RTT 80 ms (decrease phase):
    #   diff = 50.01·0.5 = 25.005; α = 50.01·0.05 = 2.5005; 3α = 7.5015;
    #   Fusion: 50.01 + (2.5005 − 25.005)/50.01 = 50.01 − 0.45 = 49.56
    #   Reno:   50 + 1/50 = 50.02 → the sending window is max(49.56, 50.02) = 50.02
    h = ca(CWND=50.01, ROUND_MIN_RTT=0.080, reno_cwnd=50.0)
    h.call("cong_avoid", 1.0)
    assert h["CWND"] == pytest.approx(50.02, abs=1e-12)
    assert h["reno_cwnd"] == pytest.approx(50.02, abs=1e-12)


def test_fusion_no_rtt_sample_holds_fusion_window_reno_still_grows():
    # no RTT sample yet: no phase can be computed; the Fusion window holds at 100 and the
    # Reno floor (50 → 50.02) still grows underneath it.
    h = ca(CWND=100.0, reno_cwnd=50.0, RTT=math.nan, MIN_RTT=math.nan)
    h.call("cong_avoid", 1.0)
    assert h["CWND"] == 100.0
    assert h["reno_cwnd"] == pytest.approx(50.02)


def test_fusion_rtt_source_srtt_uses_smoothed_rtt():
    # round min says 40.5 ms (increase) but srtt is 80 ms: with rtt_source=srtt the
    # decrease phase of the 80 ms case applies: 100 + (5 − 50)/100 = 99.55
    h = Hooks("fusion", rtt_source="srtt")
    h.call("init")
    h.set(SSTHRESH=50.0, MIN_RTT=0.040, RTT=0.041, ROUND_MIN_RTT=0.0405, SRTT=0.080, CWND=100.0, reno_cwnd=50.0)
    h.call("cong_avoid", 1.0)
    assert h["CWND"] == pytest.approx(99.55)


def test_fusion_rtt_source_round_min_falls_back_to_last_sample():
    # the first round has not ended (round min nan): the last sample (80 ms) decides → 99.55
    h = ca(CWND=100.0, ROUND_MIN_RTT=math.nan, RTT=0.080, reno_cwnd=50.0)
    h.call("cong_avoid", 1.0)
    assert h["CWND"] == pytest.approx(99.55)
    assert h["rtt_used"] == 0.080


# --- §II-C: W_inc from the Westwood+ estimate -------------------------------------------------------


@pytest.mark.parametrize(
    "bw_bytes_s, mss, w_inc",
    [
        (15e6, 1500, 10.0),  # 120 Mbit/s with 1500-byte packets: the paper's B/12 Mbps = 10 packets
        (1.5e6, 1500, 1.0),  # 12 Mbit/s → 1 packet
        (1.5e6, 1000, 1.5),  # 1.5e6 B/s · 1 ms / 1000 B = 1.5 packets
        (0.75e6, 1500, 1.0),  # 6 Mbit/s → 0.5 packets, floored at 1 (docs/algorithms/fusion.md#decisions)
    ],
)
def test_fusion_winc_is_bandwidth_times_1ms_over_mss_at_least_1(bw_bytes_s, mss, w_inc):
    # The Westwood+ sampling window began at t = 0.9 s with bw_bytes_s·0.1 bytes acknowledged;
    # this ACK at t = 1.0 s (RTT 50 ms, so the window max(RTT, 50 ms) has passed) closes it:
    # the first sample fills both filter stages, B = bytes / 0.1 s = bw_bytes_s.
    h = Hooks("fusion")
    h.call("init")
    h.set(MSS=float(mss), NOW=1.0, RTT=0.05, ACKED=0.0, SACKED=0.0)
    h.st.ww_bk = bw_bytes_s * 0.1  # bytes acknowledged in the sampling window
    h.st.ww_win_start = 0.9  # window start (s)
    h.call("on_ack")
    assert h["w_inc"] == pytest.approx(w_inc)
    assert h["bw"] == pytest.approx(8 * bw_bytes_s)  # B signal in bit/s
    # the next ACK (no new sample yet) keeps W_inc
    h.set(NOW=1.01, ACKED=1.0)
    h.call("on_ack")
    assert h["w_inc"] == pytest.approx(w_inc)


# --- §II-A: decrease on a congestion event ----------------------------------------------------------


def test_fusion_loss_decrease_rttmin_over_rtt_when_above_half():
    # cwnd 100, RTTmin 40 ms, last sample before the loss 50 ms: 100·40/50 = 80 > 100/2
    # → ssthresh 80; the Reno window halves 60 → 30.
    h = ca(CWND=100.0, RTT=0.050, reno_cwnd=60.0, EVENT=T.EV_FAST_RETRANSMIT)
    assert h.call("ssthresh") == pytest.approx(80.0)
    assert h["reno_cwnd"] == 30.0


def test_fusion_loss_decrease_floored_at_half():
    # RTT 100 ms: 100·40/100 = 40 < 50 → the 1/2 floor: 50
    h = ca(CWND=100.0, RTT=0.100, reno_cwnd=60.0, EVENT=T.EV_FAST_RETRANSMIT)
    assert h.call("ssthresh") == pytest.approx(50.0)


def test_fusion_rto_ssthresh_flightsize_bounded_by_replayed_cwnd():
    # RTO (rfc) goes through Reno's hook: max(min(flight, cwnd)/2, 2). Replayed cwnd 11 while the
    # trace had 100 outstanding: min = 11 → 5.5 (the trace's flight gave 50, above the window).
    h = ca(CWND=11.0, RTT=0.050, reno_cwnd=11.0, EVENT=T.EV_RTO, FLIGHT=100.0)
    assert h.call("ssthresh") == 5.5


def test_fusion_rto_is_reno_for_both_windows():
    # RTO (rfc): Reno's ssthresh max(FlightSize/2, 2), FlightSize = min(64, 100) = 64 → 32; after
    # the engine set cwnd = 1
    # the Reno window restarts at 1 as well.
    h = ca(CWND=100.0, RTT=0.050, reno_cwnd=60.0, EVENT=T.EV_RTO, FLIGHT=64.0)
    assert h.call("ssthresh") == 32.0
    h.set(CWND=1.0)
    h.call("on_rto")
    assert h["reno_cwnd"] == 1.0


def test_fusion_slow_start_is_reno_and_reno_window_follows():
    # slow start (ssthresh ∞): cwnd += min(N, L=2): 10 + min(3, 2) = 12; reno_cwnd = 12
    h = Hooks("fusion")
    h.set(CWND=10.0)
    h.call("init")
    h.call("cong_avoid", 3.0)
    assert h["CWND"] == 12.0
    assert h["reno_cwnd"] == 12.0
    assert h["phase"] == 0.0


def test_fusion_undo_restores_both_windows():
    h = ca(CWND=100.0, RTT=0.050, reno_cwnd=60.0, EVENT=T.EV_FAST_RETRANSMIT, PRIOR_CWND=100.0)
    h.call("ssthresh")  # reno 60 → 30
    h.set(CWND=80.0)
    assert h.call("undo_cwnd") == 100.0
    assert h["reno_cwnd"] == 60.0


# --- engine-level sequence ------------------------------------------------------------------------------


def test_fusion_engine_sequence_loss_then_increase_decrease_steady():
    # iw = 100 packets, MSS 1000 B, flavor rfc, fusion.dwinc = 16 ms (so that a 6 Mbit/s path gives
    # W_inc > 1 and the increase phase differs from Reno's). All in round 0 (no round min yet →
    # the last sample). Times: ACK0 0 ms, ACK1 1 ms, ACK2 2 ms, ACK3 108 ms, ACK4 109, ACK5 110.
    # ACK0 dup, SACKs 40 packets, RTT 100 ms (RTTmin 0.1); Westwood+ bk = 40 000 B  → cwnd 100
    # ACK1 fast retransmit, SACKs 40 more (bk 80 000 B), RTT 125 ms:
    #      ssthresh = max(100·0.1/0.125 = 80, 50) = 80; reno 100/2 = 50; rfc: cwnd = 80
    # ACK2 recovery ends, 1 packet (bk 81 000 B), RTT 100 ms: diff 0 < α → increase; no bandwidth
    #      sample yet (2 ms < max(RTT, 50 ms)) → W_inc = 1: 80 + 1/80 = 80.0125; reno 50 + 1/50 = 50.02
    # ACK3 at 108 ms > max(100 ms, 50 ms): first sample B = 81 000 B/0.108 s = 750 000 B/s (6 Mbit/s),
    #      W_inc = B·Dwinc/MSS = 750 000·0.016/1000 = 12. RTT 100 ms: diff 0 < α → increase:
    #      80.0125 + 12/80.0125 = 80.0125 + 0.1499766 = 80.1624766 (Reno's +1/80.0125 would give
    #      80.0249980); reno 50.02 + 1/50.02 = 50.0399920
    # ACK4 1 packet, RTT 150 ms: diff = cwnd·50/150 > 3α = cwnd·12/150 → decrease:
    #      (α − diff)/cwnd = (4 − 50)/150 = −0.3066667 → 79.8558099; reno 50.0399920 + 1/50.0399920
    #      = 50.0599760
    # ACK5 1 packet, RTT 105 ms: α = cwnd·4/105 ≤ diff = cwnd·5/105 ≤ 3α → steady: 79.8558099;
    #      reno 50.0599760 + 1/50.0599760 = 50.0799521
    flight = 100 * MSS
    t = [0, 1, 2, 108, 109, 110]
    rows = [
        ack(acked_bytes=0, sacked_bytes=40 * MSS, dupack=1, rtt_s=0.100, ack=0, snd_max=flight, outstanding=flight),
        ack(
            acked_bytes=0,
            sacked_bytes=40 * MSS,
            dupack=3,
            rtt_s=0.125,
            ack=0,
            snd_max=flight,
            outstanding=flight,
            state="recovery",
            cong_event="fast_retransmit",
        ),
        ack(acked_bytes=MSS, rtt_s=0.100, ack=MSS, snd_max=flight + MSS, outstanding=flight),
        ack(acked_bytes=MSS, rtt_s=0.100, ack=2 * MSS, snd_max=flight + 2 * MSS, outstanding=flight),
        ack(acked_bytes=MSS, rtt_s=0.150, ack=3 * MSS, snd_max=flight + 3 * MSS, outstanding=flight),
        ack(acked_bytes=MSS, rtt_s=0.105, ack=4 * MSS, snd_max=flight + 4 * MSS, outstanding=flight),
    ]
    for r, ms in zip(rows, t):
        r["ts_ns"] = 1_000_000_000 + ms * 1_000_000
    out = next(
        iter(
            engine.replay(
                frame(rows),
                MSS,
                ["fusion"],
                ["fusion.iw=100", "fusion.dwinc=0.016", "fusion.flavor=rfc"],
                compiled=False,
            ).values()
        )
    )
    assert out["cwnd"].to_list() == pytest.approx([100.0, 80.0, 80.0125, 80.1624766, 79.8558099, 79.8558099], abs=1e-7)
    assert out["reno_cwnd"].to_list()[1:] == pytest.approx([50.0, 50.02, 50.0399920, 50.0599760, 50.0799521], abs=1e-7)
    assert out["phase"].to_list()[2:] == ["increase", "increase", "decrease", "steady"]
    assert out["w_inc"].to_list()[2:] == pytest.approx([1.0, 12.0, 12.0, 12.0], abs=1e-9)
    assert out["B"][3] == pytest.approx(6_000_000.0, abs=1e-3)  # bit/s


# --- property ----------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ack_streams(), hs.sampled_from(["rfc", "linux"]))
def test_fusion_property_never_below_reno_window(df, flavor):
    out = engine.replay(df, MSS, ["fusion"], [f"fusion.flavor={flavor}"], compiled=False)
    f = next(iter(out.values()))
    open_ = f.filter(f["state"] == "open")
    cwnd = open_["cwnd"].to_numpy()
    reno = open_["reno_cwnd"].to_numpy()
    assert np.all(np.isfinite(f["cwnd"].to_numpy()))
    assert np.all(cwnd >= reno - 1e-9)
    assert np.all(f["cwnd"].to_numpy() > 0)
