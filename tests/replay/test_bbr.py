"""BBR v1 (replay/algorithms/bbr.py, Linux tcp_bbr.c): each branch worked out by hand, then against the kernel.

Hook-level cases drive ``cong_control`` (Linux ``bbr_main``) on a crafted engine context with
the Hooks harness; the delivery-rate samples come from the engine (``engine.rate_samples``) and
are checked on a synthetic ACK clock. Units: MSS = 1000 B, windows in packets, bw in packets/s
inside the model (signals in bit/s = packets/s · 8000), times in s.

Numbers used throughout (flavor rfc: real-valued gains, no ACK-aggregation allowance, no pacing
margin, unless a case says linux):

* bw = 1000 packets/s (8 Mbit/s), min_rtt = 0.1 s → BDP = 100 packets;
* TSO goal (bbr_tso_segs_goal): pacing rate · 1/8 byte/bit / 2^10 ≈ 1 ms of data; at 8 Mbit/s ·
  gain ≤ 1.25 that is ≤ 1220 B → ⌊1220/1000⌋ = 1 packet, raised to the minimum of 2 (rate ≥
  1.2 Mbit/s) → quantization budget 3 · 2 = 6 packets, then rounded up to even, + 2 in phase 0.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hook_harness import Hooks
from replay_synth import SAMPLES, load_sample, stream

from hscc_trace.replay import engine, metrics
from hscc_trace.replay import tp as T

HG = 2.885  # high_gain (rfc, the parameter's value)


def bbr(**params) -> Hooks:
    h = Hooks("bbr", **{"flavor": "rfc", **params})
    h.set(CWND=10.0, SRTT=0.1, NOW=0.0, DELIVERED_TIME=0.0, FLAVOR=T.RFC)
    h.call("init")
    return h


def ack(
    h: Hooks,
    *,
    t: float,
    delivered: float,
    prior_delivered: float,
    interval: float,
    sample: float | None = None,
    n: float = 2.0,
    rtt: float | None = 0.1,
    pipe: float = 50.0,
    prior_flight: float = 50.0,
    state: float = T.OPEN,
    losses: float = 0.0,
) -> Hooks:
    """One ACK: the engine's slots as the loop sets them, then cong_control (n packets acked).
    ``sample`` = packets in the rate sample (delivered − prior_delivered unless given)."""
    h.set(
        NOW=t,
        DELIVERED_TIME=t,
        DELIVERED=delivered,
        RS_PRIOR_DELIVERED=prior_delivered,
        RS_DELIVERED=delivered - prior_delivered if sample is None else sample,
        RS_INTERVAL=interval,
        RS_LOSSES=losses,
        PIPE=pipe,
        PRIOR_FLIGHT=prior_flight,
        STATE=state,
        RTT_NEW=0.0 if rtt is None else 1.0,
        RTT=math.nan if rtt is None else rtt,
    )
    h.call("cong_control", n)
    return h


# --- bbr_init ---------------------------------------------------------------------------------------


def test_init_min_rtt_is_the_handshake_rtt():
    # bbr_init: min_rtt_us = tcp_min_rtt(tp) and the pacing rate from srtt — both the handshake's
    # sample, the only one the kernel has when congestion control starts (tcp_init_transfer).
    # Handshake 0.08 s, no data sample yet (srtt nan): min_rtt 0.08, pacing rate = high_gain ·
    # cwnd 10 / 0.08 s = 2.885 · 125 packets/s · 8000 = 2 885 000 bit/s, has_seen_rtt set.
    h = Hooks("bbr", flavor="rfc")
    h.set(CWND=10.0, SRTT=math.nan, NOW=0.0, DELIVERED_TIME=0.0, FLAVOR=T.RFC, HANDSHAKE_RTT=0.08)
    h.call("init")
    assert h["min_rtt"] == 0.08 and h["min_rtt_stamp"] == 0.0 and h["has_seen_rtt"] == 1
    assert h["pacing_rate"] == pytest.approx(HG * 125 * 8000)
    # first ACK: RTT sample 0.1 s > 0.08 s keeps the handshake's min_rtt; 100 packets / 0.1 s =
    # 1000 packets/s; target = ⌈1000 · 0.08 · 2.885⌉ = ⌈230.8⌉ = 231, TSO goal at 23.08 Mbit/s 2 →
    # + 6 = 237 → even 238 (296 with min_rtt 0.1 s: test_startup_paces_at_high_gain…)
    ack(h, t=0.1, delivered=100, prior_delivered=0, interval=0.1, rtt=0.1)
    assert h["min_rtt"] == 0.08 and h["target_cwnd"] == 238 and h["CWND"] == 12
    # a smaller data sample replaces it (bbr_update_min_rtt)
    ack(h, t=0.11, delivered=102, prior_delivered=2, interval=0.1, rtt=0.07)
    assert h["min_rtt"] == 0.07 and h["min_rtt_stamp"] == 0.11
    # no handshake captured (the engine's nan): min_rtt waits for the first sample
    h = Hooks("bbr", flavor="rfc")
    h.set(CWND=10.0, SRTT=math.nan, NOW=0.0, FLAVOR=T.RFC, HANDSHAKE_RTT=math.nan)
    h.call("init")
    assert h["min_rtt"] == math.inf and h["has_seen_rtt"] == 0


def test_engine_gives_bbr_the_handshake_rtt():
    # engine.replay(handshake_rtt=…) → tp.handshake_rtt → bbr_init's min_rtt; every data sample
    # here is 0.1 s (rtt_s and ca_rtt_s, the sample flavor linux reads), so min_rtt stays the
    # handshake's 0.05 s (without it: the first sample)
    df = stream([{"rtt": 0.1}] * 20, flight=10)

    def min_rtt(**kw: float) -> list[float]:
        (rep,) = engine.replay(df, 1000, ["bbr"], ["bbr.flavor=linux"], **kw).values()
        return rep["min_rtt"].to_list()

    assert min_rtt(handshake_rtt=0.05) == [0.05] * 20
    assert min_rtt() == [0.1] * 20


# --- STARTUP ------------------------------------------------------------------------------------------


def test_startup_paces_at_high_gain_and_grows_cwnd_by_the_packets_acked():
    h = bbr()
    # init: srtt 0.1 s → pacing rate = high_gain · cwnd / srtt = 2.885 · 10/0.1 · 8000 = 2 308 000 bit/s
    assert h["pacing_rate"] == pytest.approx(HG * 100 * 8000)
    # one ACK of 2 packets with a sample of 100 packets over 0.1 s = 1000 packets/s (a round start:
    # prior_delivered 0 ≥ next_rtt_delivered 0)
    ack(h, t=0.1, delivered=100, prior_delivered=0, interval=0.1)
    assert h["btl_bw"] == pytest.approx(1000 * 8000)
    assert h["min_rtt"] == 0.1 and h["mode"] == 0  # STARTUP
    assert h["pacing_gain"] == HG and h["cwnd_gain"] == HG
    # pacing = 2.885 · 1000 · 8000 = 23.08 Mbit/s, above the initial rate → taken
    assert h["pacing_rate"] == pytest.approx(HG * 1000 * 8000)
    # target = ⌈1000 · 0.1 · 2.885⌉ = 289; TSO goal at 23.08 Mbit/s: 2 885 000 B/s / 1024 = 2817 B → 2
    # packets → + 6 = 295 → even 296. STARTUP below target: cwnd = 10 + 2 acked = 12
    assert h["target_cwnd"] == 296
    assert h["CWND"] == 12


def test_startup_never_cuts_cwnd_but_probe_bw_snaps_down_to_target():
    # same ACK with cwnd already 400 > target 296: before the pipe is full BBR only grows
    # (cwnd ≥ target and delivered ≥ 10 → unchanged); once full it is min(cwnd + acked, target)
    h = bbr()
    h.set(CWND=400.0)
    ack(h, t=0.1, delivered=100, prior_delivered=0, interval=0.1)
    assert h["CWND"] == 400
    h = bbr()
    h.set(CWND=400.0, full_bw_reached=1.0, mode=2.0, cycle_idx=2.0)  # PROBE_BW, cruise phase
    ack(h, t=0.1, delivered=100, prior_delivered=0, interval=0.1)
    # PROBE_BW: cwnd_gain 2 → ⌈1000 · 0.1 · 2⌉ = 200, pacing 1.0 · 8 Mbit/s → TSO goal 2 → 206
    assert h["target_cwnd"] == 206 and h["CWND"] == 206


def test_full_bw_after_three_rounds_without_25_percent_growth_then_drain():
    h = bbr()
    h.set(CWND=300.0)
    # every ACK is a round start (its packet was sent at the previous ACK's delivered count).
    # bw per round (packets/s) and the full-pipe check (thresh = full_bw · 1.25):
    #   1000: ≥ 0      → full_bw 1000, cnt 0
    #   1240: < 1250   → cnt 1            (max filter: 1240)
    #   1240: < 1250   → cnt 2
    #   1300: ≥ 1250   → full_bw 1300, cnt 0 (growth resets the count)
    #   1300, 1300, 1300: < 1625 → cnt 1, 2, 3 → full_bw_reached → DRAIN
    seq = [1000, 1240, 1240, 1300, 1300, 1300, 1300]
    d = 0.0
    for k, bw in enumerate(seq):
        ack(h, t=0.1 * (k + 1), delivered=d + bw * 0.1, prior_delivered=d, interval=0.1, pipe=300.0)
        d += bw * 0.1
        if k < len(seq) - 1:
            assert h["mode"] == 0, k
    assert [h["full_bw_reached"], h["full_bw"], h["full_bw_cnt"]] == [1.0, 1300.0, 3.0]
    assert h["mode"] == 1  # DRAIN
    # DRAIN: ssthresh = the 1·BDP in-flight target: ⌈1300 · 0.1⌉ = 130 + 6 = 136 (pacing rate then
    # 2.885 · 10.4 Mbit/s → TSO goal 3 749 … B/ms → 3 packets → + 9 = 139 → even 140)
    assert h["SSTHRESH"] == 140
    assert h["pacing_gain"] == pytest.approx(1 / HG) and h["cwnd_gain"] == HG
    # the pipe is full, so the pacing rate may now fall: 1/2.885 · 1300 · 8000
    assert h["pacing_rate"] == pytest.approx(1300 * 8000 / HG)


def test_drain_exits_to_probe_bw_when_in_flight_reaches_the_bdp_target():
    h = bbr()
    h.set(full_bw_reached=1.0, mode=1.0, CWND=300.0, pacing_rate=1000 * 8000 / HG)
    ack(h, t=0.1, delivered=100, prior_delivered=0, interval=0.1, pipe=107.0)
    # target at gain 1: ⌈1000 · 0.1⌉ = 100 + 3 · 2 (TSO goal at 2.77 Mbit/s … ≥ 1.2 Mbit/s → 2) = 106
    assert h["mode"] == 1  # 107 > 106: still draining
    ack(h, t=0.11, delivered=102, prior_delivered=2, interval=0.1, pipe=106.0)
    assert h["mode"] == 2  # PROBE_BW
    assert h["cycle_idx"] == 2 and h["pacing_gain"] == 1.0 and h["cwnd_gain"] == 2.0  # cycle_start 2


# --- PROBE_BW gain cycle ------------------------------------------------------------------------------


def probe_bw_at_phase0() -> Hooks:
    h = bbr(cycle_start=0)
    h.set(full_bw_reached=1.0, mode=1.0, CWND=200.0, pacing_rate=8e6)
    ack(h, t=0.0, delivered=100, prior_delivered=0, interval=0.1, pipe=10.0)  # DRAIN → PROBE_BW phase 0
    assert (h["mode"], h["cycle_idx"], h["pacing_gain"]) == (2.0, 0.0, 1.25)
    return h


def test_probe_bw_up_phase_waits_for_in_flight_of_1_25_bdp():
    h = probe_bw_at_phase0()
    # phase 0 began at delivered time 0; 0.15 s > min_rtt, but the phase also needs in flight ≥
    # inflight(1.25) = ⌈125⌉ + 6 = 131 → even 132 → + 2 (phase 0) = 134, counting the TSO goal
    # (2) of the next skb: prior in flight 131 + 2 = 133 < 134 → stay
    ack(h, t=0.15, delivered=110, prior_delivered=10, interval=0.1, prior_flight=131.0)
    assert h["cycle_idx"] == 0
    ack(h, t=0.16, delivered=112, prior_delivered=12, interval=0.1, prior_flight=132.0)  # 134 ≥ 134
    assert h["cycle_idx"] == 1 and h["pacing_gain"] == 0.75


def test_probe_bw_up_phase_ends_on_loss_and_drain_phase_ends_at_the_bdp():
    h = probe_bw_at_phase0()
    ack(h, t=0.15, delivered=110, prior_delivered=10, interval=0.1, prior_flight=50.0, losses=1.0)
    assert h["cycle_idx"] == 1  # a loss ends the 1.25 phase once it is min_rtt long
    # 0.75 phase (began at 0.15): in flight 107 > inflight(1) = 100 + 6 = 106 and not min_rtt old → stay
    ack(h, t=0.2, delivered=112, prior_delivered=12, interval=0.1, prior_flight=107.0)
    assert h["cycle_idx"] == 1
    ack(h, t=0.21, delivered=114, prior_delivered=14, interval=0.1, prior_flight=106.0)
    assert h["cycle_idx"] == 2 and h["pacing_gain"] == 1.0


def test_probe_bw_gain_cycle_is_1_25_0_75_then_six_phases_at_1():
    h = probe_bw_at_phase0()
    gains = [h["pacing_gain"]]
    t, d = 0.0, 100.0
    for _ in range(9):  # each ACK a little over min_rtt after the previous phase began, in flight large
        t += 0.101
        d += 101.0
        ack(h, t=t, delivered=d, prior_delivered=d - 101.0, interval=0.101, prior_flight=140.0)
        gains.append(h["pacing_gain"])
    # 0.75 phase ends by time here (in flight 140 > 106); phases 2-7 by time; then phase 0 again
    assert gains == [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.25, 0.75]
    # pacing rate follows: gain · btl_bw (8 Mbit/s, rfc: no margin)
    assert h["pacing_rate"] == pytest.approx(0.75 * h["btl_bw"])


# --- PROBE_RTT ------------------------------------------------------------------------------------------


def test_probe_rtt_after_10_s_without_a_new_min_rtt_caps_cwnd_at_4_then_restores():
    h = bbr(cycle_start=2)
    h.set(full_bw_reached=1.0, mode=2.0, cycle_idx=2.0, CWND=206.0, pacing_rate=8e6)
    ack(h, t=0.0, delivered=100, prior_delivered=0, interval=0.1)  # min_rtt 0.1 set at t = 0
    assert h["CWND"] == 206
    # 9.9 s later, RTT samples of 0.12 s (never ≤ 0.1): not expired yet
    ack(h, t=9.9, delivered=200, prior_delivered=100, interval=0.1, rtt=0.12)
    assert h["mode"] == 2 and h["min_rtt"] == 0.1
    # 10.001 s: the 10 s filter has expired → the sample 0.12 s becomes min_rtt, PROBE_RTT,
    # cwnd saved (206) and capped at 4; in flight 50 > 4, so the 200 ms have not started
    ack(h, t=10.001, delivered=202, prior_delivered=102, interval=0.1, rtt=0.12)
    assert h["mode"] == 3 and h["CWND"] == 4 and h["prior_cwnd"] == 206
    assert h["min_rtt"] == 0.12 and h["pacing_gain"] == 1.0 and h["cwnd_gain"] == 1.0
    assert h["probe_rtt_done"] == -1
    # in flight falls to 4 at t = 10.1 (no RTT samples from here on): hold until 10.3 s and one round
    ack(h, t=10.1, delivered=204, prior_delivered=104, interval=0.1, pipe=4.0, rtt=None)
    assert h["probe_rtt_done"] == pytest.approx(10.3) and h["next_rtt_delivered"] == 204
    ack(h, t=10.35, delivered=206, prior_delivered=150, interval=0.1, pipe=4.0, rtt=None)  # 150 < 204: no round
    assert h["mode"] == 3 and h["CWND"] == 4
    ack(h, t=10.36, delivered=208, prior_delivered=204, interval=0.1, pipe=4.0, rtt=None)  # round, 200 ms over
    # back to PROBE_BW (the pipe was full) with cwnd restored to max(4 + …, prior 206), min_rtt
    # stamp renewed; then min(cwnd + acked, target ⌈1000·0.12·2⌉ + 6 = 246) keeps 206 + 2 = 208
    assert h["mode"] == 2 and h["min_rtt_stamp"] == 10.36
    assert h["CWND"] == 208


def test_probe_rtt_exit_without_full_pipe_returns_to_startup():
    h = bbr()
    h.set(
        mode=3.0,
        probe_rtt_done=1.0,
        probe_rtt_round_done=1.0,
        min_rtt=0.1,
        min_rtt_stamp=0.0,
        prior_cwnd=50.0,
        CWND=4.0,
        next_rtt_delivered=0.0,
    )
    ack(h, t=1.1, delivered=10, prior_delivered=0, interval=0.1, pipe=4.0)
    assert h["mode"] == 0 and h["CWND"] >= 50


# --- loss recovery ----------------------------------------------------------------------------------


def test_recovery_packet_conservation_then_restore():
    h = bbr(cycle_start=2)
    h.set(full_bw_reached=1.0, mode=2.0, cycle_idx=2.0, CWND=206.0, pacing_rate=8e6)
    ack(h, t=0.0, delivered=100, prior_delivered=0, interval=0.1)
    h.call("ssthresh")  # entering recovery saves cwnd (bbr_save_cwnd); ssthresh is left alone
    assert h["prior_cwnd"] == 206
    # first ACK in recovery, 1 packet newly lost: cwnd = in flight 150 + acked 2 (packet
    # conservation; the −1 for the loss is overridden by the in-flight reset)
    ack(h, t=0.01, delivered=102, prior_delivered=2, interval=0.1, state=T.RECOVERY, pipe=150.0, losses=1.0)
    assert h["CWND"] == 152 and h["packet_conservation"] == 1
    # next ACK, 3 more lost: cwnd = max(152 − 3, in flight 120 + 2) = 149
    ack(h, t=0.02, delivered=104, prior_delivered=4, interval=0.1, state=T.RECOVERY, pipe=120.0, losses=3.0)
    assert h["CWND"] == 149
    # recovery over (open again, not a round start): restore max(cwnd, prior_cwnd 206), then
    # capped at target 206
    ack(h, t=0.03, delivered=106, prior_delivered=6, interval=0.1, state=T.OPEN, pipe=120.0)
    assert h["CWND"] == 206 and h["packet_conservation"] == 0


# --- fixed point (flavor linux) -----------------------------------------------------------------------


def test_linux_flavor_uses_tcp_bbr_fixed_point_gains_and_units():
    h = Hooks("bbr")  # flavor linux (the engine puts the flavor in tp[FLAVOR]; the harness does not)
    h.set(CWND=10.0, SRTT=0.1, FLAVOR=T.LINUX)
    h.call("init")
    # bbr_high_gain = 256 · 2885/1000 + 1 = 739 → 739/256 = 2.88671875
    assert h["pacing_gain"] == 739 / 256
    # bw = ⌊100 · 2^24 / 100 000 µs⌋ = 16 777 (packets/µs << 24) → 16777 / 2^24 · 1e6 = 999.987 packets/s;
    # pacing rate = 739/256 · bw · 1448 B · 8 · 0.99 (1 % margin)
    ack(h, t=0.1, delivered=100, prior_delivered=0, interval=0.1)
    bw = 16777 / 2**24 * 1e6
    assert h["btl_bw"] == pytest.approx(bw * 1000 * 8, rel=1e-12)
    assert h["pacing_rate"] == pytest.approx(739 / 256 * bw * 1000 * 8 * 0.99, rel=1e-12)
    assert h["cwnd_gain"] == 739 / 256


# --- delivery-rate samples (engine) -------------------------------------------------------------------


def test_delivery_rate_samples_on_a_steady_ack_clock():
    # 400 ACKs 1 ms apart (t_i = i ms), each acknowledging 1 packet, 100 packets outstanding: each
    # ACK releases one packet. The packet ACK i acknowledges ends the batch sent after ACK i − 101
    # was processed, when the delivered count was D(i − 101) = i − 100 (ACK 0 delivers 1):
    # sample = D(i) − D(i − 101) = (i + 1) − (i − 100) = 101 packets.
    # Interval = max(send elapsed, ACK elapsed) (draft-cheng §3.3):
    # * ACK elapsed = t_i − t_(i−101) = 0.101 s;
    # * send elapsed = that batch's send time t_(i−101) − the send time of the newest packet
    #   delivered when it was sent (the one ACK i − 101 acknowledged, sent at t_(i−202)) = 0.101 s
    #   in steady state (i = 350) — but for i = 150 that packet belongs to the first flight, all
    #   of it stamped one RTT (0.1 s) before ACK 0: 0.049 + 0.1 = 0.149 s, which wins.
    df = stream([{"rtt": 0.1}] * 400, flight=100)
    ev = engine.rate_samples(engine.prepare(df, 1000)).ev
    i = 350
    assert ev[i, T.E_RS_DELIVERED] == pytest.approx(101.0)
    assert ev[i, T.E_RS_INTERVAL] == pytest.approx(0.101)  # → 1000 packets/s
    assert ev[i, T.E_RS_PRIOR_DELIVERED] == pytest.approx(250.0)
    assert ev[150, T.E_RS_DELIVERED] == pytest.approx(101.0)
    assert ev[150, T.E_RS_INTERVAL] == pytest.approx(0.149)
    # the first ACK: the initial flight was sent one RTT (its sample, 0.1 s) before it → 1 / 0.1 s
    assert ev[0, T.E_RS_DELIVERED] == 1.0 and ev[0, T.E_RS_INTERVAL] == pytest.approx(0.1)
    assert ev[:, T.E_RS_LOSSES].sum() == 0


def test_delivery_rate_no_sample_on_a_duplicate_ack():
    # ACK 1 delivers nothing (dupACK): no sample (nan). ACK 2 samples a packet of the first
    # flight, stamped one RTT (0.1 s) before ACK 0: interval = 0.002 + 0.1 = 0.102 s → kept.
    df = stream([{"rtt": 0.1}, {"a": 0, "rtt": None}, {"a": 1, "rtt": None}], flight=10)
    ev = engine.rate_samples(engine.prepare(df, 1000)).ev
    assert np.isnan(ev[1, T.E_RS_DELIVERED])
    assert ev[2, T.E_RS_INTERVAL] == pytest.approx(0.102) and ev[2, T.E_RS_DELIVERED] == 2.0


def test_delivery_rate_drops_samples_shorter_than_min_rtt():
    # One packet in flight, ACKs 1 ms apart (t_i = i ms), min RTT 0.1 s (ACK 0's sample). The
    # packet ACK i acknowledges was sent at t_(i−2) (after ACK i − 2). From ACK 4 on, both the
    # send elapsed (t_(i−2) − t_(i−3)... the newest delivered packet's send time, 1-2 ms) and the
    # ACK elapsed (t_i − t_(i−2) = 2 ms) are far below 0.1 s: an "ACK compression" sample of
    # 1 packet / 2 ms = 500 packets/s that Linux tcp_rate_gen drops. ACKs 1-3 still reach back to
    # the first flight (stamped 0.1 s before ACK 0) through the send-elapsed term → valid.
    df = stream([{"rtt": 0.1}] + [{"rtt": None}] * 5, flight=1)
    ev = engine.rate_samples(engine.prepare(df, 1000)).ev
    assert np.all(np.isfinite(ev[:4, T.E_RS_DELIVERED]))
    assert np.all(np.isnan(ev[4:, T.E_RS_DELIVERED]))


# --- engine integration ---------------------------------------------------------------------------------


def test_engine_leaves_cwnd_to_bbr_in_recovery_and_at_its_end():
    # Reno (flavor linux) would run PRR in recovery and set cwnd = ssthresh at its end; BBR's
    # cong_control owns cwnd: packet conservation (pipe + acked) then the restored cwnd.
    specs = (
        [{"rtt": 0.1}] * 30
        + [{"a": 0, "s": 1, "state": "recovery", "event": "fast_retransmit", "pipe": 20, "rtt": None}]
        + [{"a": 0, "s": 1, "state": "recovery", "pipe": 20, "rtt": None}] * 3
        + [{"a": 5, "rtt": 0.1}]
    )
    df = stream(specs, flight=40)
    out = engine.replay(df, 1000, ["bbr", "reno"])
    b, r = out["bbr"], out["reno"]
    cw = b["cwnd"].to_list()
    before = cw[29]
    # entering recovery: in flight (pipe 20) + 1 SACKed = 21, then 21 per ACK (conservation)
    assert cw[30:34] == [21.0, 21.0, 21.0, 21.0]
    # recovery over: restore to the cwnd saved on entry (max with the current one)
    assert cw[34] >= before
    assert r["cwnd"][34] == r["ssthresh"][34]  # Reno deflates to ssthresh: the engine's own path
    assert b["mode"][0] == "startup" and b["btl_bw"][29] > 0


# --- against the kernel (samples/, tcp_probe truth) -----------------------------------------------------

BBR_SAMPLES = [
    ("bbr", 0),
    ("bbr-rtt10", 0),
    ("bbr-rtt100", 0),
    ("bbr-loss", 0),
    ("bbr-40m", 0),
    ("bbr-vs-cubic", 0),
    ("bbr-vs-reno", 1),  # (the capture lists the Reno flow first)
]


def _present(name: str) -> bool:
    import json

    meta = SAMPLES / name / "meta.json"
    return meta.exists() and (SAMPLES / name / json.loads(meta.read_text())["capture"]["file"]).exists()


@pytest.mark.parametrize("name,flow", BBR_SAMPLES, ids=[f"{n}:{f}" for n, f in BBR_SAMPLES])
def test_bbr_linux_reproduces_kernel_cwnd(name, flow):
    # measured (2026-12-03): median 0.0-1.1 %, p90 2.2-4.3 % outside recovery; the bounds leave
    # a margin. btl_bw must sit at the link's payload rate (rate · 1448/1500; the emulator's
    # rate is exact to < 0.1 %) within 3 %, min_rtt within 1.5 ms of the kernel's smallest srtt.
    # min_rtt starts at the handshake's RTT (bbr_init: tcp_min_rtt), which the kernel's first
    # probe shows as its srtt: the capture's SYN → SYN/ACK is 11-60 µs shorter (the kernel times
    # from its own send to its own processing). Before the replay took it, bbr-vs-reno's min_rtt
    # was its first data sample (23.59 ms: Reno keeps the shared queue from ever emptying) against
    # the kernel's 20.215 ms, and its cwnd 13.2 % / 15.8 % off (86 packets against 76).
    if not _present(name):
        pytest.skip(f"sample {name} not present")
    fe, truth, ca = load_sample(name, flow)
    assert fe.handshake_rtt_s == pytest.approx(truth["srtt_us"][0] / 1e6, abs=1e-4)
    rep = next(iter(engine.replay_flow(fe, ["bbr"]).values()))
    e = metrics.truth_errors(fe.acks, rep, truth, ca)
    assert e.height >= 0.95 * truth.height
    rel = e.filter("outside_recovery")["rel_err"].to_numpy()
    assert rel.size > 500
    assert np.median(rel) <= 0.06, f"median {np.median(rel):.4f}"
    assert np.percentile(rel, 90) <= 0.15, f"p90 {np.percentile(rel, 90):.4f}"
    import json

    meta = json.loads((SAMPLES / name / "meta.json").read_text())
    payload_rate = meta["rate_bps"] * 1448 / 1500
    late = rep.filter(rep["mode"] == "probe_bw")
    if len(meta["flows"]) == 1:  # alone on the link: btl_bw is the link's payload rate
        assert abs(late["btl_bw"].median() / payload_rate - 1) < 0.03
    assert abs(rep["min_rtt"].min() - truth["srtt_us"].min() / 1e6) < 0.0015
    assert set(rep["mode"].unique().to_list()) >= {"startup", "probe_bw"}


# --- the fit compares what BBR governs --------------------------------------------------------------


@pytest.mark.parametrize(
    "name,flow,best",
    [
        ("bbr", 0, "bbr"),
        ("bbr-40m", 0, "bbr"),
        ("bbr-vs-cubic", 0, "bbr"),
        ("bbr-vs-cubic", 1, "cubic"),
        ("reno-bdp", 0, "reno"),
    ],
)
def test_fit_ranks_bbr_first_on_bbr_senders_only(name, flow, best):
    # The fit compares the trace's peak flight per cwnd-limited round with the replayed window;
    # for BBR that window is inflight_cap = min(cwnd, pacing_rate · srtt) (metrics.FIT_WINDOW):
    # a paced BBR flow's flight is ~1-1.25 BDP while its cwnd is ~2.3 BDP. Measured mare (bbr,
    # reno, cubic linux): bbr 0.042 / 0.208 / 0.167; bbr-40m 0.030 / 0.125 / 0.171; the BBR flow
    # of bbr-vs-cubic 0.031 / 0.130 / 0.112; its CUBIC flow 0.055 / 0.030 / 0.000; reno-bdp
    # 0.195 / 0.000 / 0.114 (on the CUBIC flow of bbr-vs-cubic BBR comes close, 0.055 vs 0.000:
    # the claim there is only that it is not first). With cwnd instead, BBR alone on its link (bbr, bbr-40m) gave mare
    # 0.88-0.91 (last); sharing with CUBIC, which fills the queue, the BBR flow is cwnd-bound and
    # cwnd fits as well (0.034).
    from hscc_trace import api

    if not (SAMPLES / name / "capture.pcap").exists():
        pytest.skip(f"sample {name} not present")
    fe, _, _ = load_sample(name, flow)
    algos = ["bbr", "reno", "cubic"]
    rep = api.replay(fe, algos, {"cubic": {"flavor": "linux"}})
    f = api.fit(fe, rep).sort("rank")
    assert f["algo"][0] == best, f.select("algo", "mare").rows()
    bbr_row = f.filter(f["algo"] == "bbr")
    if best == "bbr":
        assert bbr_row["mare"][0] < 0.1 and f["mare"][1] > 1.5 * bbr_row["mare"][0]
        if name != "bbr-vs-cubic":
            rep_cwnd = {**rep, "bbr": rep["bbr"].drop(metrics.FIT_WINDOW)}  # cwnd alone: the wrong yardstick
            assert api.fit(fe, rep_cwnd).filter(pl.col("algo") == "bbr")["mare"][0] > 0.5
    else:
        assert f["algo"][0] != "bbr"


# --- against the kernel's own BBR model (truth_signals.parquet) -------------------------------------

SIGNAL_SAMPLES = [
    ("bbr-rtt10", 0),
    ("bbr-rtt100", 0),
    ("bbr-loss", 0),
    ("bbr-40m", 0),
    ("bbr-vs-cubic", 0),
    ("bbr-vs-reno", 1),
]


def _kernel_mode(pacing_gain: np.ndarray, cwnd_gain: np.ndarray) -> np.ndarray:
    """tcp_bbr.c gains (BBR_UNIT = 256) → mode: 739 pacing = STARTUP, 88 = DRAIN, cwnd gain 256
    only in PROBE_RTT, else PROBE_BW (pacing 320 / 192 / 256, cwnd 512)."""
    return np.where(
        pacing_gain == 739,
        "startup",
        np.where(pacing_gain == 88, "drain", np.where(cwnd_gain == 256, "probe_rtt", "probe_bw")),
    )


@pytest.mark.parametrize("name,flow", SIGNAL_SAMPLES, ids=[f"{n}:{f}" for n, f in SIGNAL_SAMPLES])
def test_bbr_model_matches_the_kernels_btl_bw_min_rtt_and_mode(name, flow):
    # The testbed polls the sender's TCP_CC_INFO (struct tcp_bbr_info) every 2 ms on the capture's
    # clock. Each poll is compared with the replay row of the last ACK before it. Measured
    # (2026-12-03): btl_bw median error 0.00-0.2 % (p90 ≤ 2.8 %), mode agreement 96-100 %,
    # replayed min_rtt 0-0.06 ms below the kernel's — both are the handshake's (tcp_min_rtt at
    # bbr_init: SYN/SYN-ACK, 60-byte packets; no data sample is that small: a 1500-byte packet
    # serializes in 0.6-1.2 ms at 10-20 Mbit/s), the capture's a little shorter than the kernel's
    # own timing, unless a retransmission's timestamp-echo sample, whole ms in the kernel and in
    # acks.ca_rtt_s, is smaller still: both take it (bbr-40m: 20.000 ms, difference 0). The
    # PROBE_BW phase differs where the kernel drew another random first phase (pacing gains
    # agree 55-85 %), so gains are not checked.
    path = SAMPLES / name / "truth_signals.parquet"
    if not path.exists():
        pytest.skip(f"sample {name} has no truth_signals")
    fe, truth, _ = load_sample(name, flow)
    sig = pl.read_parquet(path).filter(pl.col("sport") == int(truth["sport"][0]))
    rep = next(iter(engine.replay_flow(fe, ["bbr"]).values()))
    k = np.searchsorted(rep["ts_ns"].to_numpy(), sig["ts_ns"].to_numpy(), side="right") - 1
    ok = (k >= 0) & (sig["bbr_bw_Bps"].to_numpy() > 0)
    k, sig = k[ok], sig.filter(pl.Series(ok))
    assert len(k) > 500
    err = np.abs(rep["btl_bw"].to_numpy()[k] / (sig["bbr_bw_Bps"].to_numpy() * 8.0) - 1)
    assert np.median(err) < 0.01 and np.percentile(err, 90) < 0.05
    d = rep["min_rtt"].to_numpy()[k] - sig["bbr_min_rtt_us"].to_numpy() / 1e6
    assert abs(np.median(d)) < 0.0001
    mode = _kernel_mode(sig["bbr_pacing_gain"].to_numpy(), sig["bbr_cwnd_gain"].to_numpy())
    assert np.mean(rep["mode"].cast(pl.String).to_numpy()[k] == mode) > 0.9


def test_delivery_rate_sample_of_a_retransmission_filling_a_hole():
    # t_i = i ms, 10 packets outstanding, RTT samples 8 ms (min RTT 0.008 s). The packet after
    # the cumulative ACK A of ACK 19 is lost: ACKs 20-22 SACK one packet each (the sender keeps
    # sending: outstanding 11, 12, 13), the fast retransmission leaves after ACK 20 (segment at
    # 20.5 ms), and ACK 23 cumulatively acknowledges the hole and the 3 SACKed packets.
    # Delivered count D: ACKs 0-19 deliver 1 each → D(19) = 20; D(20) = 21 (SACK), D(22) = 23, and
    # ACK 23 newly delivers only the retransmitted packet (the other 3 were counted when SACKed):
    # D(23) = 24.
    # The retransmission was sent after ACK 20: delivered 21, delivered time 0.020 s, and the
    # newest delivered packet then (ACK 20's SACKed one, byte A + 2 packets: the first SACK block
    # lies above the one-packet hole) was sent after ACK 10 → first-sent time 0.010 s.
    # ACK 23 delivers no byte above the highest SACKed one, so the sample is the retransmission's
    # (the most recently sent packet it delivers, tcp_rate_skb_delivered):
    # delivered 24 − 21 = 3 packets over max(0.020 − 0.010, 0.023 − 0.020) = 0.010 s.
    import polars as pl

    from hscc_trace import schema

    specs = [{"rtt": 0.008}] * 20 + [
        {"a": 0, "s": 1, "F": 11, "rtt": None},
        {"a": 0, "s": 1, "F": 12, "rtt": None},
        {"a": 0, "s": 1, "F": 13, "rtt": None},
        {"a": 4, "F": 10, "rtt": 0.008},
    ]
    df = stream(specs, flight=10)
    hole = int(df["ack"][19])
    seg = schema.conform(
        pl.DataFrame(
            [
                {
                    "frame": 1,
                    "ts_ns": int(df["ts_ns"][20]) + 500_000,
                    "seq": hole,
                    "len": 1000,
                    "kind": "fast_retransmission",
                    "end_seq": hole + 1000,
                    "rexmit": True,
                }
            ],
            schema=schema.polars_schema(schema.SEGMENTS),
            strict=False,
        ),
        schema.SEGMENTS,
    )
    ev = engine.rate_samples(engine.prepare(df, 1000, seg)).ev
    assert ev[23, T.E_RS_DELIVERED] == pytest.approx(3.0)
    assert ev[23, T.E_RS_INTERVAL] == pytest.approx(0.010)
    assert ev[23, T.E_RS_PRIOR_DELIVERED] == pytest.approx(21.0)
    assert ev[20, T.E_RS_LOSSES] == 1.0  # the retransmission that followed ACK 20
    # without the retransmission (no segments) ACK 23 gives no sample
    assert np.isnan(engine.rate_samples(engine.prepare(df, 1000)).ev[23, T.E_RS_DELIVERED])


def _new_segments(rows: list[tuple[int, float]]):
    """schema.SEGMENTS rows of new data: (seq, send time s since the stream's start), 1 MSS each."""
    from hscc_trace import schema

    return schema.conform(
        pl.DataFrame(
            [
                {
                    "frame": k + 1,
                    "ts_ns": 1_000_000_000 + int(round(t * 1e9)),
                    "seq": seq,
                    "len": 1000,
                    "kind": "new",
                    "end_seq": seq + 1000,
                    "rexmit": False,
                }
                for k, (seq, t) in enumerate(rows)
            ],
            schema=schema.polars_schema(schema.SEGMENTS),
            strict=False,
        ),
        schema.SEGMENTS,
    )


def test_delivery_rate_sample_times_each_packet_by_its_own_send_at_the_sender():
    # tcp_rate_skb_sent stamps each skb with its own transmit time (tcp_skb_timestamp_us) and
    # tcp_rate_skb_delivered takes the send phase P.sent − P.first_sent from it (tcp_rate.c:59-104,
    # Linux 6.12); at a sender-side capture that time is the segment's capture time.
    # ACK i at t_i = i ms acknowledges one packet (cumulative ACK 1 + 1000·(i+1)); snd_max stays
    # 10 packets ahead, so between ACK i and ACK i+1 the sender sends one packet, bytes
    # 1 + 1000·(i+11) … +1000, which ACK i+11 acknowledges (the first flight, bytes 1 … 11 001,
    # went out before ACK 0). A paced sender sends it 0.1 ms after ACK i, except the one after
    # ACK 15: 0.9 ms after (15.9 ms).
    # ACK 26 delivers that packet P: delivered 27 (one per ACK 0-26); when P was sent, delivered
    # was 16 (after ACK 15), the last delivery at t_15 = 15 ms, and the most recently delivered
    # packet then (ACK 15's, sent after ACK 4) had been sent at 4.1 ms.
    #   send phase = 15.9 − 4.1 = 11.8 ms; ACK phase = 26 − 15 = 11 ms → interval 11.8 ms
    #   (tcp_rate_gen: the longer phase): 11 packets / 11.8 ms = 932.2 packets/s.
    # Stamped with the ACK before it (no send times), P was "sent" at 15 ms and ACK 15's packet at
    # 4 ms: send phase 11 ms, interval 11 ms → 1000 packets/s, 7 % high.
    # ACK 25 (P' sent at 14.1 ms, first sent 3.1 ms): 11 ms either way.
    # A packet the capture lacks is stamped with the ACK before its batch: without P's segment,
    # P.sent = 15 ms, first_sent 4.1 ms → send phase 10.9 ms, interval max(10.9, 11) = 11 ms (not
    # the next captured segment's 16.1 ms, which would give 12 ms).
    df = stream([{"rtt": 0.009}] * 30, flight=10)
    first_flight = [(1 + 1000 * k, -0.009) for k in range(11)]
    paced = [(1 + 1000 * (i + 11), i / 1000 + (0.0009 if i == 15 else 0.0001)) for i in range(30)]
    assert int(df["ack"][26]) == paced[15][0] + 1000  # ACK 26 acknowledges P
    ev = engine.rate_samples(engine.prepare(df, 1000, _new_segments(first_flight + paced), send_times=True)).ev
    assert ev[26, T.E_RS_DELIVERED] == pytest.approx(11.0)
    assert ev[26, T.E_RS_PRIOR_DELIVERED] == pytest.approx(16.0)
    assert ev[26, T.E_RS_INTERVAL] == pytest.approx(0.0118)
    assert ev[25, T.E_RS_INTERVAL] == pytest.approx(0.011)
    # without send times (any other vantage): the ACK-stamped batch
    ev = engine.rate_samples(engine.prepare(df, 1000, _new_segments(first_flight + paced))).ev
    assert ev[26, T.E_RS_INTERVAL] == pytest.approx(0.011)
    # P not captured: its batch's stamp, 15 ms
    lacking = _new_segments(first_flight + paced[:15] + paced[16:])
    ev = engine.rate_samples(engine.prepare(df, 1000, lacking, send_times=True)).ev
    assert ev[26, T.E_RS_INTERVAL] == pytest.approx(0.011)


def test_replay_flow_takes_send_times_only_from_a_sender_side_capture():
    # FlowEvents.vantage "sender": the segments' capture times are transmit times; at a receiver
    # they are arrival times (an RTT's worth later), so they must not time the rate samples.
    from hscc_trace import model

    df = stream([{"rtt": 0.009}] * 30, flight=10)
    rows = [(1 + 1000 * k, -0.009) for k in range(11)]
    rows += [(1 + 1000 * (i + 11), i / 1000 + (0.0009 if i == 15 else 0.0001)) for i in range(30)]
    seg = _new_segments(rows)
    empty = pl.DataFrame()

    def sample_26(vantage: str) -> float:
        fe = model.FlowEvents(0, 0, 1000, vantage, seg, df, empty, empty)
        rep = engine.replay_flow(fe, ["bbr"], ["bbr.flavor=rfc"])
        return float(next(iter(rep.values()))["delivery_rate"][26])

    # delivery_rate (bit/s) = 11 packets / interval · 8000 (the worked example above): 11 / 0.0118
    # · 8000 = 7.458 Mbit/s at the sender, 11 / 0.011 · 8000 = 8 Mbit/s elsewhere
    assert sample_26("sender") == pytest.approx(11 / 0.0118 * 8000)
    assert sample_26("receiver") == pytest.approx(8e6)


def test_policer_detection_uses_the_long_term_rate_after_two_lossy_intervals():
    # bbr_lt_bw_sampling. Every ACK starts a round; the first loss (ACK 1, t = 0.1 s) starts an
    # interval: stamp 100 ms, delivered 100, lost 1. After 4 rounds (ACK 4, t = 0.4 s, 30 more
    # lost, delivered 200): loss 30/100 ≥ 50/256 → interval rate = 100 packets / 0.3 s = 333.3
    # packets/s, remembered as lt_bw (not used yet); next interval from 400 ms, delivered 200,
    # lost 31. ACK 8 (t = 0.7 s, 25 lost, delivered 300): 25/100 ≥ 19.5 %, rate 100 / 0.3 s =
    # 333.3, within 1/8 of lt_bw → policed: lt_bw = mean = 333.3, pacing gain 1, and the
    # bandwidth estimate is lt_bw (2.667 Mbit/s), not the max filter's 1000 packets/s.
    h = bbr()
    h.set(full_bw_reached=1.0, mode=2.0, cycle_idx=2.0, CWND=300.0, pacing_rate=8e6)
    plan = [
        (0.1, 100, 0, 1),
        (0.2, 133, 100, 0),
        (0.3, 166, 133, 0),
        (0.4, 200, 166, 30),
        (0.5, 225, 200, 0),
        (0.6, 250, 225, 0),
        (0.65, 275, 250, 0),
    ]
    for t, d, prior, lost in plan:
        ack(h, t=t, delivered=d, prior_delivered=prior, interval=0.1, losses=lost)
    assert h["lt_bw"] == pytest.approx(100 / 0.3) and h["lt_use_bw"] == 0
    assert h["lt_last_delivered"] == 200 and h["lt_last_lost"] == 31 and h["lt_last_stamp"] == 400
    assert h["btl_bw"] == pytest.approx(1000 * 8000)
    ack(h, t=0.7, delivered=300, prior_delivered=275, interval=0.1, losses=25)  # 4th round of interval 2
    assert h["lt_use_bw"] == 1 and h["pacing_gain"] == 1.0
    assert h["lt_bw"] == pytest.approx(100 / 0.3) and h["btl_bw"] == pytest.approx(100 / 0.3 * 8000)
    # ... and paces at 1.0 · lt_bw (rfc: no margin) instead of cycling
    assert h["pacing_rate"] == pytest.approx(100 / 0.3 * 8000)


def test_policer_detection_needs_20_percent_loss():
    h = bbr()
    h.set(full_bw_reached=1.0, mode=2.0, cycle_idx=2.0, CWND=300.0, pacing_rate=8e6)
    # the same intervals with 19 of 100 packets lost (19 · 256 = 4864 < 50 · 100): never sampled
    plan = [(0.1, 100, 0, 1), (0.2, 133, 100, 0), (0.3, 166, 133, 0), (0.4, 200, 166, 19)]
    for t, d, prior, lost in plan:
        ack(h, t=t, delivered=d, prior_delivered=prior, interval=0.1, losses=lost)
    assert h["lt_bw"] == 0 and h["lt_use_bw"] == 0
