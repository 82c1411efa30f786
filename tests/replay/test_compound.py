"""Compound TCP (replay/algorithms/compound.py): one test per branch, per-ACK values worked out by hand.

Paper: papers/compound-tcp-paper.txt §III (equations as docs/algorithms/compound.md#decisions reads them). Defaults: α = 1/8,
β = 1/2, k = 0.75, ζ = 1, γ = 30, low_window = 41, λ = 1/4, γ clamped to [5, 30].
RTTs are chosen as exact binary fractions where a branch sits near a threshold.
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


def ca(loss: float, dwnd: float, **slots: float) -> Hooks:
    """CTCP in congestion avoidance with the given components (win = loss + dwnd)."""
    params = ("gamma_tuning", "zeta", "awnd", "rtt_source")
    h = Hooks("compound", **{k: v for k, v in slots.items() if k in params})
    h.call("init")
    h.set(cwnd_loss=loss, dwnd=dwnd, win=loss + dwnd, CWND=loss + dwnd, SSTHRESH=min(loss, 40.0))
    h.set(**{k: v for k, v in slots.items() if k not in params})
    return h


# --- §III-A: the loss-based component and slow start ----------------------------------------------


def test_ctcp_loss_component_adds_n_over_win_in_congestion_avoidance():
    # cwnd 50, dwnd 30 → win 80. ACK of 1 packet: cwnd = 50 + 1/80 = 50.0125, win 80.0125.
    # ACK of 2 packets: 50.0125 + 2/80.0125 = 50.0125 + 0.0249961 = 50.0374961, win 80.0374961.
    h = ca(50.0, 30.0)
    h.call("cong_avoid", 1.0)
    assert h["cwnd_loss"] == pytest.approx(50.0125, abs=1e-12)
    assert h["CWND"] == pytest.approx(80.0125, abs=1e-12)
    h.call("cong_avoid", 2.0)
    assert h["cwnd_loss"] == pytest.approx(50.0374961, abs=1e-7)
    assert h["win"] == pytest.approx(80.0374961, abs=1e-7)
    assert h["dwnd"] == 30.0


def test_ctcp_dwnd_zero_in_slow_start():
    # slow start (ssthresh ∞): Reno's cwnd += min(N, 2): 10 + min(3, 2) = 12, dwnd stays 0 even
    # when a round ends with no queue (3 samples at baseRTT).
    h = Hooks("compound")
    h.set(CWND=10.0)
    h.call("init")
    h.call("cong_avoid", 3.0)
    assert h["CWND"] == 12.0 and h["cwnd_loss"] == 12.0 and h["dwnd"] == 0.0
    h.set(base_rtt=0.1, rnd_min=0.1, rnd_n=3.0)
    h.call("on_round_end")
    assert h["dwnd"] == 0.0 and h["CWND"] == 12.0


# --- §III-B eq. (5): the delay window once per round ---------------------------------------------------


def test_ctcp_dwnd_grows_alpha_win_pow_k_minus_1_when_diff_below_gamma():
    # win = cwnd = 100, baseRTT 100 ms, round min 101 ms (3 samples):
    #   diff = 100·(1 − 100/101) = 0.990099 < γ = 30
    #   dwnd += 0.125·100^0.75 − 1 = 0.125·31.6227766 − 1 = 3.9528471 − 1 = 2.9528471
    h = ca(100.0, 0.0, SSTHRESH=50.0, base_rtt=0.100, rnd_min=0.101, rnd_n=3.0)
    h.call("on_round_end")
    assert h["diff"] == pytest.approx(0.990099, abs=1e-6)
    assert h["dwnd"] == pytest.approx(2.9528471, abs=1e-7)
    assert h["win"] == pytest.approx(102.9528471, abs=1e-7)
    assert h["CWND"] == h["win"]
    assert h["diff_reno"] == pytest.approx(0.990099, abs=1e-6)  # dwnd was 0: same backlog


def test_ctcp_dwnd_retreats_by_zeta_diff_when_diff_reaches_gamma():
    # cwnd 100, dwnd 100, win 200; baseRTT 93.75 ms, round min 125 ms → 1 − 0.75 = 0.25:
    #   diff = 200·0.25 = 50 ≥ 30 → dwnd = 100 − 1·50 = 50, win 150; diff_reno = 100·0.25 = 25
    h = ca(100.0, 100.0, SSTHRESH=50.0, base_rtt=0.09375, rnd_min=0.125, rnd_n=3.0)
    h.call("on_round_end")
    assert h["diff"] == 50.0
    assert h["dwnd"] == 50.0
    assert h["win"] == 150.0
    assert h["diff_reno"] == 25.0


def test_ctcp_dwnd_retreat_scaled_by_zeta():
    # as above with ζ = 0.5: dwnd = 100 − 0.5·50 = 75
    h = ca(100.0, 100.0, zeta=0.5, SSTHRESH=50.0, base_rtt=0.09375, rnd_min=0.125, rnd_n=3.0)
    h.call("on_round_end")
    assert h["dwnd"] == 75.0


def test_ctcp_dwnd_retreat_floored_at_zero():
    # cwnd 100, dwnd 20, win 120; baseRTT 62.5 ms, round min 125 ms → 1 − 0.5:
    #   diff = 60 ≥ 30 → dwnd = max(20 − 60, 0) = 0, win = 100
    h = ca(100.0, 20.0, SSTHRESH=50.0, base_rtt=0.0625, rnd_min=0.125, rnd_n=3.0)
    h.call("on_round_end")
    assert h["dwnd"] == 0.0
    assert h["CWND"] == 100.0


@pytest.mark.parametrize(
    "source, diff, dwnd",
    [
        # cwnd 150, dwnd 50, win 200; baseRTT 100 ms; the round's min sample 100 ms, srtt 125 ms.
        # round_min: diff = 200·(1 − 0.1/0.1) = 0 < γ = 30 → dwnd += 0.125·200^0.75 − 1
        #            = 0.125·53.1829590 − 1 = 6.6478699 − 1 = 5.6478699 → 55.6478699
        # srtt:      diff = 200·(1 − 0.1/0.125) = 200·0.2 = 40 ≥ 30 → dwnd = 50 − 1·40 = 10
        ("round_min", 0.0, 55.6478699),
        ("srtt", 40.0, 10.0),
    ],
)
def test_ctcp_rtt_source_round_min_vs_srtt(source, diff, dwnd):
    h = ca(150.0, 50.0, rtt_source=source, SSTHRESH=50.0, base_rtt=0.1, rnd_min=0.1, rnd_n=3.0, SRTT=0.125)
    h.call("on_round_end")
    assert h["diff"] == pytest.approx(diff, abs=1e-9)
    assert h["dwnd"] == pytest.approx(dwnd, abs=1e-7)
    assert h["CWND"] == pytest.approx(150.0 + dwnd, abs=1e-7)


def test_ctcp_round_with_two_samples_is_skipped():
    # the growth case above but only 2 samples in the round: no update
    h = ca(100.0, 0.0, SSTHRESH=50.0, base_rtt=0.100, rnd_min=0.101, rnd_n=2.0)
    h.call("on_round_end")
    assert h["dwnd"] == 0.0 and h["CWND"] == 100.0
    assert math.isnan(h["diff_reno"])
    assert h["rnd_n"] == 0.0 and math.isnan(h["rnd_min"])  # the next round starts afresh


def test_ctcp_no_sampling_or_update_during_recovery():
    h = ca(100.0, 10.0, SSTHRESH=50.0, base_rtt=0.100, rnd_min=0.101, rnd_n=3.0, STATE=float(T.RECOVERY))
    h.call("on_rtt_sample", 0.090)
    assert h["rnd_n"] == 3.0  # a sample during recovery is not a round sample …
    assert h["base_rtt"] == 0.090  # … but baseRTT is still the minimum of all samples
    h.call("on_round_end")
    assert h["dwnd"] == 10.0 and h["CWND"] == 110.0


def test_ctcp_linux_no_sampling_or_update_after_an_ack_that_left_disorder():
    # flavor linux: TCP_CA_Open exactly. An ACK that leaves SACKed or lost data outstanding
    # (outstanding 110 ≠ pipe 107 packets) puts Linux in Disorder; the next ACK's RTT sample and
    # round end come before its tcp_fastretrans_alert, so they see Disorder: no round sample, no
    # dwnd update. The growth case of test_ctcp_dwnd_grows_… (win 100, baseRTT 100 ms, round min
    # 101 ms, 3 samples) then updates only once an ACK left the sender open again.
    h = ca(100.0, 0.0, SSTHRESH=50.0, base_rtt=0.100, rnd_min=0.101, rnd_n=3.0, FLAVOR=float(T.LINUX))
    h.set(IS_CWND_LIMITED=1.0)  # (linux grows dwnd only when the window was the limit)
    h.set(FLIGHT=110.0, PIPE=107.0)
    h.call("on_ack")  # this ACK itself was judged on the open state before it
    assert h["sampling"] == 1.0 and h["left_out"] == 1.0
    h.set(FLIGHT=110.0, PIPE=110.0)  # the next ACK: the SACKed data acknowledged
    h.call("on_rtt_sample", 0.1005)
    assert h["rnd_n"] == 3.0 and h["rnd_min"] == 0.101  # the previous ACK left Disorder: no sample
    h.call("on_ack")
    assert h["sampling"] == 0.0 and h["left_out"] == 0.0
    h.call("on_round_end")
    assert h["dwnd"] == 0.0 and h["CWND"] == 100.0  # held: the round ended in Disorder
    # a round later, after an ACK that left the sender open: 3 samples at 101 ms → +2.9528471
    h.set(rnd_min=0.101, rnd_n=3.0)
    h.call("on_ack")
    assert h["sampling"] == 1.0
    h.call("on_round_end")
    assert h["dwnd"] == pytest.approx(2.9528471, abs=1e-7)


def test_ctcp_rfc_samples_in_disorder():
    # flavor rfc: the paper's "recovery" is the trace's recovery state; Disorder is open. The
    # same ACKs as above: the sample counts (4 samples, min 100.5 ms) and the round updates:
    #   diff = 100·(1 − 0.1/0.1005) = 0.4975124 < γ → dwnd += 2.9528471
    h = ca(100.0, 0.0, SSTHRESH=50.0, base_rtt=0.100, rnd_min=0.101, rnd_n=3.0, FLAVOR=float(T.RFC))
    h.set(FLIGHT=110.0, PIPE=107.0)
    h.call("on_ack")
    h.set(FLIGHT=110.0, PIPE=110.0)
    h.call("on_rtt_sample", 0.1005)
    assert h["rnd_n"] == 4.0 and h["rnd_min"] == 0.1005
    h.call("on_ack")
    h.call("on_round_end")
    assert h["diff"] == pytest.approx(0.4975124, abs=1e-7)
    assert h["dwnd"] == pytest.approx(2.9528471, abs=1e-7)


def test_ctcp_dwnd_held_at_or_below_low_window():
    # §III-B last paragraph: the delay component "only kicks in when win is larger than" low_window.
    # cwnd 33, dwnd 8, win 41 = low_window, no queue (round min = baseRTT, 3 samples):
    #   diff = 0 < γ would grow dwnd by 0.125·41^0.75 − 1 = 1.0253 above the low window, but at
    #   win = 41 the update is skipped and dwnd is held at 8 (not grown, not zeroed): win stays 41.
    h = ca(33.0, 8.0, SSTHRESH=20.0, base_rtt=0.100, rnd_min=0.100, rnd_n=3.0)
    h.call("on_round_end")
    assert h["dwnd"] == 8.0 and h["active"] == 0.0 and h["CWND"] == 41.0
    # with a queue and γ = 5: round min 125 ms, diff = 41·(1 − 0.1/0.125) = 41·0.2 = 8.2 ≥ 5, which
    # above the low window would retreat dwnd to max(8 − 8.2, 0) = 0; at win = 41 it is held at 8
    h = ca(33.0, 8.0, SSTHRESH=20.0, gamma=5.0, base_rtt=0.100, rnd_min=0.125, rnd_n=3.0)
    h.call("on_round_end")
    assert h["dwnd"] == 8.0 and h["CWND"] == 41.0
    # win = 42 > 41 (cwnd 42, dwnd 0): dwnd += 0.125·42^0.75 − 1 = 0.125·16.4982153 − 1 = 1.0622769
    h = ca(42.0, 0.0, SSTHRESH=20.0, base_rtt=0.100, rnd_min=0.100, rnd_n=3.0)
    h.call("on_round_end")
    assert h["dwnd"] == pytest.approx(1.0622769, abs=1e-7)


@pytest.mark.parametrize(
    "flavor, dwnd, active",
    [
        # cwnd 33.4, dwnd 8, win 41.4, no queue (3 samples at baseRTT 100 ms): diff = 0 < γ.
        # linux: ⌊41.4⌋ = 41 is at the low window (snd_cwnd is whole packets): dwnd held at 8.
        (T.LINUX, 8.0, 0.0),
        # rfc: 41.4 > 41: dwnd += 0.125·41.4^0.75 − 1 = 0.125·16.3211312 − 1 = 1.0401414 → 9.0401414
        (T.RFC, 9.0401414, 1.0),
    ],
)
def test_ctcp_linux_low_window_compares_whole_packets(flavor, dwnd, active):
    h = ca(33.4, 8.0, SSTHRESH=20.0, base_rtt=0.100, rnd_min=0.100, rnd_n=3.0, FLAVOR=float(flavor))
    h.set(IS_CWND_LIMITED=1.0)
    h.call("on_round_end")
    assert h["dwnd"] == pytest.approx(dwnd, abs=1e-7) and h["active"] == active


# --- loss, RTO, γ auto-tuning ---------------------------------------------------------------------------


def test_ctcp_loss_halves_cwnd_and_sets_dwnd_to_reduced_window_gap():
    # cwnd 100, dwnd 60, win 160: cwnd = 50; dwnd = 160·(1 − 1/2) − 100/2 = 80 − 50 = 30;
    # the reduced window (ssthresh) 80 = 160·(1 − β)
    h = ca(100.0, 60.0, EVENT=float(T.EV_FAST_RETRANSMIT))
    assert h.call("ssthresh") == 80.0
    assert h["cwnd_loss"] == 50.0 and h["dwnd"] == 30.0


def test_ctcp_loss_below_low_window_keeps_whole_window_times_one_minus_beta():
    # §III-B eq. (5) line 3: dwnd = (win·(1 − β) − cwnd/2)+, so the whole window goes to win·(1 − β)
    # even when the reduced window is at or below low_window (41).
    # cwnd 59.5, dwnd 14.25, win 73.75: cwnd = 29.75; dwnd = 73.75·0.5 − 29.75 = 36.875 − 29.75
    #   = 7.125; ssthresh = win = 36.875 (a rule that dropped dwnd at ≤ 41 gave 29.75, deeper than
    #   Reno's 73.75/2 = 36.875).
    h = ca(59.5, 14.25, EVENT=float(T.EV_FAST_RETRANSMIT))
    assert h.call("ssthresh") == 36.875
    assert h["cwnd_loss"] == 29.75 and h["dwnd"] == 7.125
    # the next ACK in congestion avoidance keeps dwnd (no drop at ≤ low_window):
    #   cwnd = 29.75 + 1/36.875 = 29.75 + 0.0271186 = 29.7771186, win = 36.9021186
    h.set(CWND=36.875, SSTHRESH=36.875, EVENT=-1.0)
    h.call("cong_avoid", 1.0)
    assert h["dwnd"] == 7.125
    assert h["CWND"] == pytest.approx(36.9021186, abs=1e-7)


def test_ctcp_gamma_autotune_moves_toward_three_quarters_diff_reno():
    # γ = 30, diff_reno = 9 at the last round end: γ = 0.75·30 + 0.25·0.75·9 = 22.5 + 1.6875 = 24.1875
    h = ca(100.0, 60.0, EVENT=float(T.EV_FAST_RETRANSMIT), diff_reno=9.0, diff_reno_valid=1.0)
    h.call("ssthresh")
    assert h["gamma"] == 24.1875
    # the measurement is used once: a second loss before the next round end leaves γ alone
    h.call("ssthresh")
    assert h["gamma"] == 24.1875


@pytest.mark.parametrize(
    "gamma0, diff_reno, expected",
    [
        (6.0, 0.5, 5.0),  # 0.75·6 + 0.25·0.75·0.5 = 4.5 + 0.09375 = 4.59375 → clamp 5
        (30.0, 200.0, 30.0),  # 22.5 + 37.5 = 60 → clamp 30
        (10.0, 20.0, 11.25),  # 7.5 + 3.75 = 11.25 (inside)
    ],
)
def test_ctcp_gamma_autotune_clamps(gamma0, diff_reno, expected):
    h = ca(100.0, 60.0, EVENT=float(T.EV_FAST_RETRANSMIT), gamma=gamma0, diff_reno=diff_reno, diff_reno_valid=1.0)
    h.call("ssthresh")
    assert h["gamma"] == expected


def test_ctcp_gamma_tuning_off_keeps_gamma():
    h = ca(100.0, 60.0, gamma_tuning="off", EVENT=float(T.EV_FAST_RETRANSMIT), diff_reno=9.0, diff_reno_valid=1.0)
    h.call("ssthresh")
    assert h["gamma"] == 30.0


def test_ctcp_rto_resets_dwnd_and_keeps_base_rtt():
    # §III-B: an RTO resets dwnd and disables the delay component; baseRTT stays "the minimal RTT
    # that has been observed so far" since the connection started (50 ms here).
    h = ca(100.0, 60.0, EVENT=float(T.EV_RTO), base_rtt=0.05, diff_reno=9.0, diff_reno_valid=1.0)
    h.call("ssthresh")
    assert h["gamma"] == 30.0  # an RTO is not a light loss: no γ update
    h.set(CWND=1.0)
    h.call("on_rto")
    assert h["cwnd_loss"] == 1.0 and h["dwnd"] == 0.0
    h.call("on_rtt_sample", 0.2)
    assert h["base_rtt"] == 0.05
    # back in congestion avoidance at win 100 (dwnd 0), a round with min 200 ms: with baseRTT kept,
    # diff = 100·(1 − 0.05/0.2) = 75 ≥ γ = 30 → retreat, dwnd = max(0 − 75, 0) = 0. Had baseRTT been
    # re-measured (0.2 s), diff = 0 < γ and dwnd would grow by 0.125·100^0.75 − 1 = 2.9528.
    h.set(cwnd_loss=100.0, dwnd=0.0, win=100.0, CWND=100.0, SSTHRESH=50.0, EVENT=0.0, rnd_min=0.2, rnd_n=3.0)
    h.call("on_round_end")
    assert h["diff"] == pytest.approx(75.0, abs=1e-12)
    assert h["dwnd"] == 0.0


def test_ctcp_awnd_caps_window():
    # cwnd 100, dwnd 50, awnd 120: cwnd = 100 + 1/150 = 100.0066667; cwnd + dwnd = 150.0066667 > 120
    # → win = 120 and dwnd trimmed to 120 − 100.0066667 = 19.9933333
    h = ca(100.0, 50.0, RWND=120.0)
    h.call("cong_avoid", 1.0)
    assert h["CWND"] == 120.0
    assert h["dwnd"] == pytest.approx(19.9933333, abs=1e-7)
    # with awnd off the window is the plain sum
    h = ca(100.0, 50.0, awnd="off", RWND=120.0)
    h.call("cong_avoid", 1.0)
    assert h["CWND"] == pytest.approx(150.0066667, abs=1e-7)


def test_ctcp_undo_restores_both_components():
    h = ca(100.0, 60.0, EVENT=float(T.EV_FAST_RETRANSMIT))
    h.call("ssthresh")
    h.set(CWND=80.0)
    assert h.call("undo_cwnd") == 160.0
    assert h["cwnd_loss"] == 100.0 and h["dwnd"] == 60.0


# --- engine-level sequence --------------------------------------------------------------------------------


def test_ctcp_engine_sequence_loss_round_growth_and_retreat():
    # iw 162, MSS 1000 B, flavor rfc.
    # ACK0-2 duplicate ACKs with RTT 100 ms (baseRTT; 3 round samples, all in open state)
    # ACK3 fast retransmit: cwnd 162 → 81, dwnd = 162·0.5 − 81 = 0, ssthresh 81 (rfc: cwnd = 81)
    # ACK4 recovery ends (cwnd = 81) and closes round 0: diff = 0 < 30 →
    #      dwnd = 0.125·81^0.75 − 1 = 0.125·27 − 1 = 2.375; then +1 packet: cwnd = 81 + 1/83.375
    #      = 81.0119940, win 83.3869940
    # ACK5 RTT 200 ms: cwnd 81.0119940 + 1/83.3869940 = 81.0239863, win 83.3989863
    # ACK6 RTT 200 ms: 81.0239863 + 1/83.3989863 = 81.0359768, win 83.4109768
    # ACK7 RTT 200 ms closes round 1 (3 samples, min 200 ms): diff = 83.4109768·(1 − 0.1/0.2)
    #      = 41.7054884 ≥ 30 → dwnd = max(2.375 − 41.7054884, 0) = 0; diff_reno = 81.0359768·0.5
    #      = 40.5179884; then +1 packet: 81.0359768 + 1/81.0359768 = 81.0483170
    # ACK8 fast retransmit: γ = 0.75·30 + 0.25·0.75·40.5179884 = 22.5 + 7.5971228 = 30.097 → 30;
    #      cwnd 81.0483170/2 = 40.5241585, dwnd = 81.0483170·0.5 − 40.5241585 = 0
    flight = 100 * MSS
    dup = dict(acked_bytes=0, dupack=1, ack=0, snd_max=flight, outstanding=flight)
    rows = [
        ack(rtt_s=0.1, **dup),
        ack(rtt_s=0.1, **dup),
        ack(rtt_s=0.1, **dup),
        ack(rtt_s=None, state="recovery", cong_event="fast_retransmit", **dup),
        ack(rtt_s=None, ack=MSS, snd_max=flight + MSS, outstanding=flight, round_end=True),
    ]
    for i in range(3):
        rows.append(
            ack(
                rtt_s=0.2,
                ack=(2 + i) * MSS,
                snd_max=flight + (2 + i) * MSS,
                outstanding=flight,
                round=1,
                round_end=i == 2,
            )
        )
    rows.append(
        ack(
            rtt_s=None,
            acked_bytes=0,
            dupack=3,
            ack=4 * MSS,
            snd_max=flight + 4 * MSS,
            outstanding=flight,
            round=2,
            state="recovery",
            cong_event="fast_retransmit",
        )
    )
    out = next(
        iter(
            engine.replay(
                frame(rows), MSS, ["compound"], ["compound.iw=162", "compound.flavor=rfc"], compiled=False
            ).values()
        )
    )
    assert out["cwnd"].to_list() == pytest.approx(
        [162, 162, 162, 81, 83.3869940, 83.3989863, 83.4109768, 81.0483170, 40.5241585], abs=1e-6
    )
    assert out["dwnd"].to_list() == pytest.approx([0, 0, 0, 0, 2.375, 2.375, 2.375, 0, 0], abs=1e-12)
    assert out["diff"][7] == pytest.approx(41.7054884, abs=1e-6)
    assert out["diff_reno"][7] == pytest.approx(40.5179884, abs=1e-6)
    assert out["gamma"].to_list()[-1] == 30.0
    assert out["cwnd_loss"].to_list()[-1] == pytest.approx(40.5241585, abs=1e-6)


# --- property ----------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ack_streams(), hs.sampled_from(["rfc", "linux"]), hs.sampled_from([5, 41]))
def test_ctcp_property_dwnd_nonnegative_zero_in_slow_start_and_until_above_low_window(df, flavor, low):
    out = next(
        iter(
            engine.replay(
                df,
                MSS,
                ["compound"],
                [f"compound.flavor={flavor}", f"compound.low_window={low}", "compound.iw=60"],
                compiled=False,
            ).values()
        )
    )
    dwnd = out["dwnd"].to_numpy()
    loss = out["cwnd_loss"].to_numpy()
    cwnd = out["cwnd"].to_numpy()
    ssth = out["ssthresh"].fill_null(math.inf).to_numpy()
    not_recovery = (out["state"] != "recovery").to_numpy()
    assert np.all(np.isfinite(cwnd)) and np.all(cwnd > 0)
    assert np.all(dwnd >= 0.0)
    assert np.all(dwnd[not_recovery & (cwnd < ssth)] == 0.0)  # slow start
    # dwnd becomes positive only through a round-end update above the low window: while the
    # window has never exceeded low_window it is 0
    assert np.all(dwnd[np.maximum.accumulate(cwnd) <= low] == 0.0)
    assert np.all(loss > 0.0)
    assert np.all(out["gamma"].to_numpy() >= 5.0) and np.all(out["gamma"].to_numpy() <= 30.0)
