"""HighSpeed, CUBIC, Vegas and Westwood+ branch tests with values worked out by hand.

Formula checks call the hooks as plain Python on a crafted context (hook_harness.Hooks, the same
source the engine compiles); sequences go through the engine (replay_synth.stream).
"""

from __future__ import annotations

import math

import pytest
from hook_harness import Hooks
from replay_synth import MSS, stream

from hscc_trace.replay import engine
from hscc_trace.replay import helpers as H
from hscc_trace.replay import tp as T
from hscc_trace.replay._jit import pure
from hscc_trace.replay.algorithms import cubic_linux as CU
from hscc_trace.replay.algorithms import highspeed as HS

# --- HighSpeed (RFC 3649) ------------------------------------------------------------------------

a_of_w = pure(HS.a_of_w)
b_of_w = pure(HS.b_of_w)


def a_b(w):
    return a_of_w(w, 38.0, 83000.0, 1e-7, 0.1, False), b_of_w(w, 38.0, 83000.0, 0.1)


@pytest.mark.parametrize(
    "w,a,b",
    [
        # RFC 3649 Appendix B: the window at which a(w) reaches each integer, with b(w).
        (38, 1, 0.50),
        (118, 2, 0.44),
        (221, 3, 0.41),
        (347, 4, 0.38),
        (495, 5, 0.37),
        (663, 6, 0.35),
        (851, 7, 0.34),
        (1058, 8, 0.33),
        (1284, 9, 0.32),
        (2076, 12, 0.29),
        (5036, 20, 0.25),
        (10661, 30, 0.21),
        (24402, 45, 0.16),
        (84035, 71, 0.10),
    ],
)
def test_highspeed_rfc3649_table(w, a, b):
    got_a, got_b = a_b(w)
    assert got_a == pytest.approx(a, abs=0.05 if w < 50000 else 0.1)
    assert got_b == pytest.approx(b, abs=0.006)


def test_highspeed_w1000():
    # b(1000) = −0.4·(ln 1000 − ln 38)/(ln 83000 − ln 38) + 0.5 = −0.4·3.2702/7.6890 + 0.5 = 0.3299
    # p(1000) = 0.078/1000^1.2 = 1.9593e-5; a = 1000²·p·2b/(2 − b) = 19.593·0.6598/1.6701 = 7.74
    a, b = a_b(1000.0)
    assert b == pytest.approx(0.3299, abs=1e-4)
    assert a == pytest.approx(7.74, abs=0.01)


def test_highspeed_reno_below_low_window():
    assert a_b(38.0) == (1.0, 0.5)
    assert a_b(10.0) == (1.0, 0.5)


@pytest.mark.parametrize(
    "response, expected",
    [
        # RFC 3649 §5 by hand at w = 1000 (Low_Window 38, High_Window 83000, High_P 1e-7, High_Decrease 0.1):
        #   ln 1000 = 6.9077553, ln 38 = 3.6375862, ln 83000 = 11.3265959
        #   b = (0.1 − 0.5)·(6.9077553 − 3.6375862)/(11.3265959 − 3.6375862) + 0.5
        #     = −0.4·3.2701691/7.6890097 + 0.5 = −0.4·0.4253043 + 0.5 = 0.3298783
        #   2b/(2 − b) = 0.6597565/1.6701217 = 0.3950350
        # table: p = 0.078/1000^1.2 = 0.078/3981.0717 = 1.9592714e-5; w²·p = 19.592714
        #   a = 19.592714·0.3950350 = 7.7398078; ACK of 2: 2·7.7398078/1000 = 0.0154796 → 1000.0154796
        # exact: Low_P = (1.2/38)² = 9.9722992e-4; S = (ln 83000 − ln 38)/(ln 1e-7 − ln Low_P)
        #   = 7.6890097/(−16.1180957 + 6.9105292) = 7.6890097/(−9.2075665) = −0.8350751
        #   p = Low_P·(1000/38)^(1/S) = 9.9722992e-4·26.3157895^(−1.1974970) = 1.9865081e-5
        #   a = 19.865081·0.3950350 = 7.8474024; ACK of 2: 0.0156948 → 1000.0156948
        # (Reno would add 2/1000 = 0.002 → 1000.002)
        ("table", 1000.0154796),
        ("exact", 1000.0156948),
    ],
)
def test_highspeed_congestion_avoidance_increment_rfc(response, expected):
    h = Hooks("highspeed", response=response).set(CWND=1000.0, SSTHRESH=500.0)
    h.call("cong_avoid", 2.0)
    assert h["CWND"] == pytest.approx(expected, abs=1e-7)
    assert h["b_w"] == pytest.approx(0.3298783, abs=1e-7)


def test_highspeed_loss_decrease_rfc():
    # ssthresh = w·(1 − b(w)): w = 1000 → 1000·(1 − 0.3299) = 670.1; w = 30 (Reno) → 15.
    h = Hooks("highspeed").set(CWND=1000.0)
    assert h.call("ssthresh") == pytest.approx(670.1, abs=0.05)
    assert Hooks("highspeed").set(CWND=30.0).call("ssthresh") == 15.0


def test_highspeed_linux_table_increment_and_decrease():
    # tcp_highspeed: cwnd 120 lies in (118, 221] → ai = 2 (a = 3); per ACK cnt += 3; the counter
    # reaches cwnd = 120 after 40 ACKs → cwnd 121. ssthresh = 120 − (120·104 >> 8) = 120 − 48 = 72.
    h = Hooks("highspeed").set(FLAVOR=1.0, CWND=120.0, SSTHRESH=60.0, IS_CWND_LIMITED=1.0)
    for _ in range(39):
        h.call("cong_avoid", 1.0)
    assert (h["CWND"], h["CWND_CNT"], h["ai"]) == (120.0, 117.0, 2.0)
    h.call("cong_avoid", 1.0)
    assert (h["CWND"], h["CWND_CNT"]) == (121.0, 0.0)
    h.set(CWND=120.0)
    assert h.call("ssthresh") == 72.0


# --- CUBIC (RFC 9438) ------------------------------------------------------------------------------


def test_cubic_rfc_k_and_w_of_t():
    # Engine run, flavor rfc, iw 100, RTT samples 0.1 s (srtt 0.1).
    # ACK0 (t = 0): loss with 100 outstanding: W_max = 100 (first loss), ssthresh = 100·0.7 = 70.
    # ACK1 (t = 0.01) ends recovery: cwnd = 70; the CA epoch starts: K = ∛((100 − 70)/0.4) = ∛75
    #   = 4.21716 s; W_est = 70 + 0.52941/70 = 70.00756 (α = 3·0.3/1.7 = 0.52941 while W_est <
    #   cwnd_prior = 100); W_cubic(0) = 0.4·(−4.21716)³ + 100 = 70 < W_est → Reno-friendly:
    #   cwnd = W_est = 70.00756.
    # ACK2 (t = 2.01, 2 s into the epoch): W_est = 70.00756 + 0.52941/70.00756 = 70.01512;
    #   W_cubic(2) = 0.4·(2 − 4.21716)³ + 100 = 0.4·(−10.89922) + 100 = 95.64031 > W_est →
    #   concave: target = W_cubic(2 + 0.1) = 0.4·(−2.11716)³ + 100 = 0.4·(−9.48992) + 100 = 96.20403
    #   (inside [cwnd, 1.5·cwnd]); cwnd = 70.00756 + 26.19647/70.00756 = 70.38176.
    specs = [{"a": 0, "t": 0.0, "state": "recovery", "event": "fast_retransmit"}, {"t": 0.01}, {"t": 2.01}]
    out = next(iter(engine.replay(stream(specs), MSS, ["cubic"], ["cubic.iw=100", "cubic.flavor=rfc"]).values()))
    assert out["W_max"].to_list() == [100.0, 100.0, 100.0]
    assert out["ssthresh"][0] == pytest.approx(70.0)
    assert out["K"][1] == pytest.approx(75 ** (1 / 3), abs=1e-9)
    assert out["K"][1] == pytest.approx(4.21716, abs=1e-5)
    assert out["region"].to_list() == ["slow_start", "reno_friendly", "concave"]
    assert out["cwnd"][1] == pytest.approx(70.00756, abs=1e-5)
    assert out["target"][2] == pytest.approx(96.20403, abs=1e-4)
    assert out["cwnd"][2] == pytest.approx(70.38176, abs=1e-4)


def test_cubic_rfc_fast_convergence():
    # W_max = 100 from the previous loss; a new loss at cwnd 80 < W_max with fast convergence:
    # W_max = 80·(1 + 0.7)/2 = 68; without it W_max = 80.
    h = Hooks("cubic", flavor="rfc").set(CWND=80.0, FLIGHT=80.0, w_max=100.0)
    assert h.call("ssthresh") == pytest.approx(56.0)
    assert h["w_max"] == pytest.approx(68.0)
    h = Hooks("cubic", flavor="rfc", fast_convergence="off").set(CWND=80.0, FLIGHT=80.0, w_max=100.0)
    h.call("ssthresh")
    assert h["w_max"] == 80.0


@pytest.mark.parametrize(
    "cwnd, flight, expected",
    [
        # RFC 9438 §4.6: ssthresh = max(flight_size·β, 2), β = 0.7, flight_size = min(trace flight, cwnd)
        (11.0, 100.0, 7.7),  # trace flight 100 > replayed 11: 11·0.7 = 7.7 (the trace's 100 gave 70)
        (80.0, 40.0, 28.0),  # application-limited: 40·0.7 = 28 (cwnd·β would be 56)
        (2.0, 100.0, 2.0),  # 2·0.7 = 1.4 → floor 2
    ],
)
def test_cubic_rfc_ssthresh_flightsize_is_min_of_trace_flight_and_replayed_cwnd(cwnd, flight, expected):
    h = Hooks("cubic", flavor="rfc").set(CWND=cwnd, FLIGHT=flight)
    assert h.call("ssthresh") == pytest.approx(expected, abs=1e-12)
    assert h["w_max"] == cwnd  # W_max is the window at the event (no earlier W_max)


def test_cubic_linux_cubic_root():
    root = pure(CU.linux_cubic_root)
    # a < 64: (v[a] + 35) >> 6: a = 27 → (190 + 35) >> 6 = 3; a = 8 → (123 + 35) >> 6 = 2.
    assert root(27) == 3 and root(8) == 2
    # a = 1000: fls = 10 → b = ((10·84) >> 8) − 1 = 2; shift = 1000 >> 6 = 15;
    # x = ((v[15] + 10) << 2) >> 6 = (166·4) >> 6 = 10; Newton: 2·10 + 1000 // (10·9) = 31;
    # (31·341) >> 10 = 10.
    assert root(1000) == 10
    # K for W_max − cwnd = 30 packets: cube_factor·30 = 2681735677·30 → ∛ = 4317.6 (2⁻¹⁰ s)
    assert root(2681735677 * 30) == pytest.approx(4317.6, rel=0.005)


def test_cubic_linux_ssthresh_and_w_max():
    # cubictcp_recalc_ssthresh: cwnd 100 → max(100·717 >> 10, 2) = 70 (70.02 floored); W_max = 100.
    # Next loss at 80 < 100 with fast convergence: W_max = 80·(1024 + 717)/2048 = 68.0 (floor 68).
    h = Hooks("cubic", flavor="linux").set(FLAVOR=1.0, CWND=100.0)
    assert h.call("ssthresh") == 70.0
    assert h["w_max"] == 100.0
    h.set(CWND=80.0)
    assert h.call("ssthresh") == 56.0  # 80·717/1024 = 56.02
    assert h["w_max"] == 68.0


def test_cubic_linux_state_wiped_on_rto():
    h = Hooks("cubic", flavor="linux").set(FLAVOR=1.0, CWND=100.0, w_max=120.0, delay_min=40000.0, t_epoch=10.0)
    h.call("on_rto")
    assert (h["w_max"], h["delay_min"], h["t_epoch"]) == (0.0, 0.0, -1.0)


@pytest.mark.parametrize(
    "phase, epoch",
    [
        # HZ 250 (4 ms jiffies), the first congestion-avoidance ACK 2.5 ms after the flow's first ACK:
        (0.0, 0.0),  # tick at the first ACK: ⌊0.0025·250⌋ = ⌊0.625⌋ = 0
        (0.003, 1.0),  # the sender's tick 3 ms into a jiffy: ⌊(0.0025 + 0.003)·250⌋ = ⌊1.375⌋ = 1
    ],
)
def test_cubic_linux_counts_jiffies_from_the_tick_phase(phase, epoch):
    # bictcp_update starts the epoch at tcp_jiffies32 (docs/replay.md#jiffies)
    h = Hooks("cubic", flavor="linux", tick_phase=str(phase)).set(FLAVOR=1.0, CWND=50.0, SSTHRESH=40.0, NOW=0.0025)
    h.call("init")  # (no epoch yet)
    h.set(IS_CWND_LIMITED=1.0)
    h.call("cong_avoid", 1.0)
    assert (h["t_epoch"], h["last_time"]) == (epoch, epoch)


# --- Vegas -----------------------------------------------------------------------------------------


def _ack(h, una, snd_max):
    # one ACK of new data: cumulative ACK ``una``, highest sequence sent before it ``snd_max``
    h.set(SND_UNA=float(una), SND_MAX=float(snd_max))
    h.call("cong_avoid", 1.0)


def test_vegas_plus_minus_one_per_round():
    h = Hooks("vegas").set(FLAVOR=1.0, CWND=20.0, SSTHRESH=10.0, IS_CWND_LIMITED=1.0)
    h.call("init")  # beg_snd_nxt = 1 (connection start: the first data byte)
    # Linux arithmetic: integer µs with vrtt = rtt_us + 1 (baseRTT 0.1 s → 100001).
    # Round 1: three samples of 0.100 s → baseRTT = minRTT = 100001, cntRTT 3; the ACK of 1449
    # is beyond beg_snd_nxt 1: diff = cwnd·(RTT − base)/base = 0 < α = 2 → cwnd + 1 = 21, and
    # the next round ends beyond snd_nxt = 30000.
    for r in (0.1, 0.1, 0.1):
        h.call("on_rtt_sample", r)
    _ack(h, 1449, 30000)
    assert h["CWND"] == 21.0 and h["adjust"] == 1.0 and h["beg_snd_nxt"] == 30000.0
    # Between round ends congestion avoidance holds.
    _ack(h, 20000, 40000)
    assert h["CWND"] == 21.0
    # Round 2: minRTT 0.125 s → diff = 21·(125001 − 100001) // 100001 = 525000 // 100001 = 5 > β = 4
    # → cwnd 20; ssthresh = tcp_vegas_ssthresh = min(10, 20) = 10, then tcp_current_ssthresh:
    # max(10, (20 >> 1) + (20 >> 2)) = 15.
    for r in (0.125, 0.13, 0.14):
        h.call("on_rtt_sample", r)
    _ack(h, 30001, 60000)
    assert h["CWND"] == 20.0 and h["adjust"] == -1.0 and h["diff"] == 5.0
    assert h["SSTHRESH"] == 15.0
    # Round 3: minRTT 0.115 → diff = 20·15000 // 100001 = 2: neither < α nor > β → hold.
    for r in (0.115, 0.115, 0.12):
        h.call("on_rtt_sample", r)
    _ack(h, 60001, 90000)
    assert h["CWND"] == 20.0 and h["adjust"] == 0.0 and h["diff"] == 2.0
    # Round 4: minRTT 0.11 → diff = 20·10000 // 100001 = 1 < α → 21.
    for r in (0.11, 0.11, 0.11):
        h.call("on_rtt_sample", r)
    _ack(h, 90001, 120000)
    assert h["CWND"] == 21.0 and h["adjust"] == 1.0


def test_vegas_linux_round_ends_beyond_beg_snd_nxt_not_at_it():
    # tcp_vegas.c: the round ends on after(ack, beg_snd_nxt) — strictly beyond the snd_nxt of the
    # last adjustment. The trace's round (ROUND_END) ends at the first ACK *at or above* it; the
    # two differ on the ACK of the window's last segment, ack == beg_snd_nxt exactly.
    # cwnd 20, ssthresh 10 (CA); first round: 3 samples of 0.1 s, ACK 1449 > 1 → +1 = 21, next
    # round ends beyond 30000. Next round: minRTT 0.125 → diff = 21·25000 // 100001 = 5 > β.
    h = Hooks("vegas").set(FLAVOR=1.0, CWND=20.0, SSTHRESH=10.0, IS_CWND_LIMITED=1.0)
    h.call("init")
    for r in (0.1, 0.1, 0.1):
        h.call("on_rtt_sample", r)
    _ack(h, 1449, 30000)
    assert h["CWND"] == 21.0
    for r in (0.125, 0.13, 0.14):
        h.call("on_rtt_sample", r)
    h.set(ROUND_END=1.0)  # the trace's round ends here (ack 30000 ≥ 30000) ...
    _ack(h, 30000, 45000)
    assert h["CWND"] == 21.0 and h["cnt_rtt"] == 3.0  # ... but Vegas' does not: no decision yet
    h.set(ROUND_END=0.0)
    _ack(h, 31448, 46448)  # the next ACK is beyond it: 21 → 20, next round beyond 46448
    assert h["CWND"] == 20.0 and h["adjust"] == -1.0 and h["beg_snd_nxt"] == 46448.0
    # flavor rfc keeps the trace's rounds: the same first ACKs, ROUND_END on ack 30000 decides
    # there: diff = 21·(0.125 − 0.1)/0.125 = 4.2 > β → 20
    g = Hooks("vegas").set(FLAVOR=0.0, CWND=20.0, SSTHRESH=10.0)
    g.call("init")
    for r in (0.1, 0.1, 0.1):
        g.call("on_rtt_sample", r)
    g.set(ROUND_END=1.0)
    _ack(g, 1449, 30000)
    for r in (0.125, 0.13, 0.14):
        g.call("on_rtt_sample", r)
    _ack(g, 30000, 45000)
    assert g["CWND"] == 20.0 and g["diff"] == pytest.approx(4.2)


def _vegas_round(h, samples):
    for r in samples:
        h.call("on_rtt_sample", r)
    una = h["beg_snd_nxt"] + 1448.0
    _ack(h, una, una + 30000.0)


def test_vegas_linux_no_cwnd_limited_check_in_tcp_vegas_cong_avoid():
    # kernel 6.x tcp_vegas_cong_avoid has no tcp_is_cwnd_limited check: an application-limited flow
    # (IS_CWND_LIMITED 0, max_packets_out 0) still gets the per-round decision.
    # cwnd 20, ssthresh 10 (CA); three samples of 0.1 s: diff = 0 < α = 2 → 21 (a cwnd-limited
    # check would have held it at 20).
    h = Hooks("vegas").set(FLAVOR=1.0, CWND=20.0, SSTHRESH=10.0, IS_CWND_LIMITED=0.0)
    h.call("init")
    _vegas_round(h, (0.1, 0.1, 0.1))
    assert h["CWND"] == 21.0 and h["adjust"] == 1.0
    # slow start between round ends: tcp_slow_start, also without the check: 5 + 1 = 6
    h = Hooks("vegas").set(FLAVOR=1.0, CWND=5.0, SSTHRESH=10.0, IS_CWND_LIMITED=0.0)
    h.call("init")
    h.call("cong_avoid", 1.0)
    assert h["CWND"] == 6.0


def test_vegas_linux_outside_open_state_is_reno_with_its_cwnd_limited_check():
    # after an RTO (state loss) tcp_vegas_state disabled Vegas: tcp_reno_cong_avoid, which checks
    # tcp_is_cwnd_limited: not limited (IS_CWND_LIMITED 0; slow start needs cwnd < 2·max_packets_out
    # = 0) → no growth, cwnd stays 2; the same ACK in the open state grows 2 → 3 (tcp_slow_start).
    h = Hooks("vegas").set(FLAVOR=1.0, CWND=2.0, SSTHRESH=10.0, IS_CWND_LIMITED=0.0, STATE=2.0)
    h.call("init")
    h.call("cong_avoid", 1.0)
    assert h["CWND"] == 2.0
    h.set(STATE=0.0)
    h.call("cong_avoid", 1.0)
    assert h["CWND"] == 3.0
    # cwnd-limited in the loss state: Reno's slow start grows, min(3 + 1, 10) = 4
    h.set(STATE=2.0, IS_CWND_LIMITED=1.0)
    h.call("cong_avoid", 1.0)
    assert h["CWND"] == 4.0


def test_vegas_linux_round_end_in_disorder_is_reno_then_vegas_restarts():
    # The first SACK of a loss puts Linux in TCP_CA_Disorder (tcp_fastretrans_alert runs before
    # cong_avoid): tcp_vegas_state → doing_vegas_now = 0, so a round that ends on that ACK makes
    # no Vegas decision; tcp_reno_cong_avoid runs instead. The trace shows it as open with
    # outstanding ≠ pipe (FLIGHT 22, PIPE 21: one packet SACKed).
    # cwnd 23, ssthresh 16 (CA), three samples of 0.080 s: in the open state diff = 0 < α → 24.
    h = Hooks("vegas").set(FLAVOR=1.0, CWND=23.0, SSTHRESH=16.0, IS_CWND_LIMITED=1.0, FLIGHT=22.0, PIPE=22.0)
    h.call("init")
    _vegas_round(h, (0.08, 0.08, 0.08))
    assert h["CWND"] == 24.0 and h["adjust"] == 1.0
    # The same round ending in Disorder: Reno's AI, cwnd_cnt 0 + 1 < 23 → cwnd stays 23 (so the
    # recovery that follows halves 23 to 11, not 24 to 12: sweep vegas t6).
    h = Hooks("vegas").set(FLAVOR=1.0, CWND=23.0, SSTHRESH=16.0, IS_CWND_LIMITED=1.0, FLIGHT=22.0, PIPE=21.0)
    h.call("init")
    _vegas_round(h, (0.08, 0.08, 0.08))
    assert h["CWND"] == 23.0 and h["CWND_CNT"] == 1.0
    # The ACK that clears the scoreboard is open again: vegas_enable, the round restarts at
    # snd_nxt (beg_snd_nxt = SND_MAX 90000) with its samples forgotten; no decision on this ACK.
    h.set(PIPE=22.0)
    _ack(h, 60000, 90000)
    assert h["CWND"] == 23.0 and h["beg_snd_nxt"] == 90000.0 and h["cnt_rtt"] == 0.0
    # flavor rfc keeps the paper's Vegas: no Disorder state, the decision is taken (23 → 24)
    g = Hooks("vegas").set(FLAVOR=0.0, CWND=23.0, SSTHRESH=16.0, FLIGHT=22.0, PIPE=21.0, ROUND_END=1.0)
    g.call("init")
    _vegas_round(g, (0.08, 0.08, 0.08))
    assert g["CWND"] == 24.0


def test_vegas_linux_ssthresh_is_min_ssthresh_cwnd_not_cwnd_minus_1():
    # tcp_vegas_ssthresh (6.x) = min(ssthresh, cwnd); older kernels used cwnd − 1.
    # CA decrease: cwnd 20 = ssthresh 20, round min 0.15 s, base 0.1 s (µs + 1):
    #   diff = 20·(150001 − 100001) // 100001 = 1000000 // 100001 = 9 > β = 4 → cwnd 19;
    #   ssthresh = min(20, 19) = 19 (old: 18); tcp_current_ssthresh = max(19, 9 + 4) = 19 (old 18).
    h = Hooks("vegas").set(FLAVOR=1.0, CWND=20.0, SSTHRESH=20.0, IS_CWND_LIMITED=1.0)
    h.call("init")
    h.call("on_rtt_sample", 0.1)
    h.st.min_rtt = 0.15
    h.st.cnt_rtt = 3
    _ack(h, 1449, 30000)
    assert h["diff"] == 9.0 and h["CWND"] == 19.0 and h["SSTHRESH"] == 19.0
    # slow-start exit: cwnd 30, ssthresh ∞; diff = 30·50000 // 100001 = 14 > γ = 1;
    #   target = 30·100001 // 150001 = 3000030 // 150001 = 20 → cwnd = min(30, 20 + 1) = 21;
    #   ssthresh = min(∞, 21) = 21 (old: 20); tcp_current_ssthresh = max(21, 10 + 5) = 21 (old 20).
    h = Hooks("vegas").set(FLAVOR=1.0, CWND=30.0, IS_CWND_LIMITED=1.0)
    h.call("init")
    h.call("on_rtt_sample", 0.1)
    h.st.min_rtt = 0.15
    h.st.cnt_rtt = 3
    _ack(h, 1449, 30000)
    assert h["diff"] == 14.0 and h["CWND"] == 21.0 and h["SSTHRESH"] == 21.0 and h["adjust"] == 2.0


def test_vegas_too_few_samples_behaves_like_reno():
    # cntRTT = 2 ≤ 2 at the round end: Reno for this ACK (segment counter 0 → 1, cwnd 20).
    h = Hooks("vegas").set(FLAVOR=1.0, CWND=20.0, SSTHRESH=10.0, IS_CWND_LIMITED=1.0)
    h.call("init")
    h.call("on_rtt_sample", 0.1)
    h.call("on_rtt_sample", 0.3)
    _ack(h, 1449, 30000)
    assert (h["CWND"], h["CWND_CNT"]) == (20.0, 1.0)


def test_vegas_rfc_diff_over_rtt():
    # Brakmo & Peterson: diff = cwnd·(RTT − base)/RTT = 21·(0.12 − 0.1)/0.12 = 3.5 (≤ β: hold).
    h = Hooks("vegas").set(FLAVOR=0.0, CWND=21.0, SSTHRESH=10.0)
    h.call("init")
    for r in (0.1, 0.12, 0.12):
        h.call("on_rtt_sample", r)
    h.st.min_rtt = 0.12
    h.set(ROUND_END=1.0)
    h.call("cong_avoid", 1.0)
    assert h["diff"] == pytest.approx(3.5) and h["CWND"] == 21.0


# --- Westwood+ -------------------------------------------------------------------------------------


def test_westwood_filter_values():
    on_ack = pure(H.westwood_on_ack)
    h = Hooks("westwood").set(NOW=0.0, RTT=0.1)
    pure(H.westwood_init)(h.st, h.tp)
    # t = 0.05, 10000 B: 0.05 s < max(RTT 0.1, 50 ms) → no sample yet; bk = 10000.
    h.set(NOW=0.05)
    assert on_ack(h.st, h.tp, 10000.0) == 0.0
    # t = 0.12, 5000 B: window of 0.12 s > 0.1 → sample 10000/0.12 = 83333.33 B/s fills both
    # stages; new window, bk = 5000.
    h.set(NOW=0.12)
    assert on_ack(h.st, h.tp, 5000.0) == pytest.approx(83333.333, abs=1e-3)
    # t = 0.25: 0.13 s > 0.1 → sample 5000/0.13 = 38461.54;
    # bw_ns = (7·83333.33 + 38461.54)/8 = 77724.36; bw = (7·83333.33 + 77724.36)/8 = 82632.21.
    h.set(NOW=0.25)
    assert on_ack(h.st, h.tp, 0.0) == pytest.approx(82632.21, abs=0.01)
    assert h.st.ww_bw_ns == pytest.approx(77724.36, abs=0.01)


def test_westwood_linux_recovery_exit_sets_bandwidth_delay_window():
    # linux (tcp_westwood.c CA_EVENT_COMPLETE_CWR: snd_cwnd = snd_ssthresh = bw_rttmin) in the
    # kernel's integers: B = 330 bytes per jiffy (82 500 B/s at HZ 250), RTTmin 25 jiffies (0.1 s),
    # MSS 1000 B: ⌊330·25/1000⌋ = ⌊8.25⌋ = 8 (the real-valued estimate gave 8.25).
    h = Hooks("westwood").set(CWND=20.0, SSTHRESH=10.0, FLAVOR=1.0, MSS=1000.0)
    h.st.wl_bw = 330.0
    h.st.wl_rtt_min_j = 25.0
    h.call("on_recovery_exit")
    assert h["CWND"] == 8.0 and h["SSTHRESH"] == 8.0
    # B·RTTmin below 2 packets: floor 2.
    h.st.wl_bw = 4.0
    h.call("on_recovery_exit")
    assert h["CWND"] == 2.0


def test_westwood_linux_estimator_counts_like_tcp_westwood():
    # HZ 250 (4 ms jiffies), MSS 1000 B, RTT 0.04 s → usecs_to_jiffies(40000) = 10 jiffies.
    h = Hooks("westwood").set(FLAVOR=1.0, MSS=1000.0, SACKED=0.0)
    h.call("init")

    def ack(now, una, acked):
        h.call("on_rtt_sample", 0.04)
        h.set(NOW=now, RTT=0.04, SND_UNA=float(una), ACKED=float(acked))
        h.call("on_ack")
        return h["bw_bps"] / 8.0  # B, bytes/s

    # first ACK (t 0): the window opened at the SYN-ACK, one RTT earlier: ⌊−0.04·250⌋ = −10;
    # first_ack takes snd_una as it is now, so the slow path counts the ACK as one MSS: bk 1000;
    # Δ = 0 − (−10) = 10 jiffies, not > max(10, HZ/20 = 12): no sample. RTTmin = 10 jiffies.
    ack(0.0, 1001, 1)
    assert h.st.wl_bk == 1000.0 and h.st.wl_rtt_min_j == 10.0
    # t 0.01 (jiffy 2), +20000 B on the fast path: bk 21000; Δ 12, not > 12
    ack(0.01, 21001, 20)
    # t 0.012 (jiffy 3): Δ 13 > 12 → sample ⌊21000/13⌋ = 1615 B/jiffy fills both filters; then
    # this ACK's 20000 B start the next window
    assert ack(0.012, 41001, 20) == 1615.0 * 250.0
    # t 0.064 (jiffy 16): Δ 13 → sample ⌊20000/13⌋ = 1538; bw_ns = ⌊(7·1615 + 1538)/8⌋ = ⌊12843/8⌋
    # = 1605; bw = ⌊(7·1615 + 1605)/8⌋ = ⌊12910/8⌋ = 1613 B/jiffy = 403 250 B/s
    assert ack(0.064, 61001, 20) == 1613.0 * 250.0
    # B·RTTmin/MSS = ⌊1613·10/1000⌋ = 16 (the continuous filter would give a fraction)
    assert h["bw_rttmin"] == 16.0


def test_westwood_linux_counts_jiffies_from_the_tick_phase():
    # the estimator test above with the sender's tick 3 ms into a jiffy (tick_phase 0.003 s): the
    # ACKs at t 0, 0.01, 0.012, 0.064 s fall in jiffies ⌊0.75⌋ = 0, ⌊3.25⌋ = 3, ⌊3.75⌋ = 3,
    # ⌊16.75⌋ = 16; the window opened one RTT before the first ACK, ⌊(−0.04 + 0.003)·250⌋ = −10.
    h = Hooks("westwood", tick_phase="0.003").set(FLAVOR=1.0, MSS=1000.0, SACKED=0.0)
    h.call("init")

    def ack(now, una, acked):
        h.call("on_rtt_sample", 0.04)
        h.set(NOW=now, RTT=0.04, SND_UNA=float(una), ACKED=float(acked))
        h.call("on_ack")
        return h["bw_bps"] / 8.0

    # first ACK (jiffy 0): Δ 10, not > 12; bk 1000 (one MSS, the slow path)
    assert ack(0.0, 1001, 1) == 0.0
    # t 0.01 (jiffy 3): Δ 13 > 12 → sample ⌊1000/13⌋ = 76 B/jiffy fills both filters (with tick 0,
    # jiffy 2, Δ 12: no sample yet); this ACK's 20000 B start the next window
    assert ack(0.01, 21001, 20) == 76.0 * 250.0
    # t 0.012 (jiffy 3): Δ 0, bk 40000. t 0.064 (jiffy 16): Δ 13 → ⌊40000/13⌋ = 3076;
    # bw_ns = ⌊(7·76 + 3076)/8⌋ = ⌊3608/8⌋ = 451; bw = ⌊(7·76 + 451)/8⌋ = ⌊983/8⌋ = 122 B/jiffy
    ack(0.012, 41001, 20)
    assert ack(0.064, 61001, 20) == 122.0 * 250.0


def test_westwood_linux_window_opens_at_the_synack_and_first_ack_closes_it_empty():
    # tcp_westwood_init sets rtt_win_sx at the SYN/ACK (tp.ca_init); here the SYN/ACK came 60 ms
    # before the first ACK of data (the application wrote 20 ms after it, the RTT is 40 ms).
    # HZ 250, MSS 1000 B, RTT 0.04 s → 10 jiffies.
    def run(ca_init):
        h = Hooks("westwood").set(FLAVOR=1.0, MSS=1000.0, SACKED=0.0, CA_INIT=ca_init)
        h.call("init")
        out = []
        for now, una, acked in ((0.0, 1001, 1), (0.01, 21001, 20), (0.052, 41001, 20)):
            h.call("on_rtt_sample", 0.04)
            h.set(NOW=now, RTT=0.04, SND_UNA=float(una), ACKED=float(acked))
            h.call("on_ack")
            out.append((h.st.wl_bk, h["bw_bps"] / 8.0))
        return out

    # known: rtt_win_sx = ⌊−0.06·250⌋ = −15. First ACK (jiffy 0): Δ 15 > max(10, 12) → the window
    # closes with bk 0: sample ⌊0/15⌋ = 0, and westwood_filter leaves the filters empty (both 0);
    # the window reopens at jiffy 0 and the ACK counts one MSS (slow path): bk 1000, B 0.
    # t 0.01 (jiffy 2): Δ 2, bk 21000. t 0.052 (jiffy 13): Δ 13 > 12 → sample ⌊21000/13⌋ = 1615
    # fills both filters: B = 1615 B/jiffy = 403 750 B/s; bk restarts with this ACK's 20000.
    assert run(-0.06) == [(1000.0, 0.0), (21000.0, 0.0), (20000.0, 1615.0 * 250.0)]
    # unknown (nan): the window opened one RTT before the first ACK, ⌊−0.04·250⌋ = −10: Δ 10 at
    # the first ACK, not > 12; Δ 12 at jiffy 2, not > 12; at jiffy 13 Δ 23 → ⌊21000/23⌋ = 913: the
    # first sample takes in the first ACK's flight as well and spreads it over 23 jiffies
    assert run(math.nan) == [(1000.0, 0.0), (21000.0, 0.0), (20000.0, 913.0 * 250.0)]


def test_westwood_rfc_loss_cwnd_is_min_of_cwnd_and_bandwidth_delay_window():
    # Westwood+ on n dupACKs: ssthresh = max(2, B·RTTmin/MSS); if cwnd > ssthresh: cwnd = ssthresh.
    # B = 12 500 000 B/s (100 Mbit/s), RTTmin 80 ms, MSS 1000 B: B·RTTmin/MSS = 1 000 000/1000 = 1000.
    # cwnd 70.7 < 1000: the window stays 70.7 (without the min it became 999-ish → 1000), and
    # after recovery ssthresh = 1000 > cwnd, so the flow slow-starts towards it.
    h = Hooks("westwood").set(CWND=70.7, rtt_min=0.08, EVENT=float(T.EV_FAST_RETRANSMIT))
    h.st.ww_bw = 12_500_000.0
    assert h.call("ssthresh") == 70.7  # the engine holds cwnd here through recovery (rfc)
    assert h["ssthresh_loss"] == pytest.approx(1000.0)
    h.set(CWND=70.7, SSTHRESH=70.7)  # the engine's recovery exit: cwnd = ssthresh
    h.call("on_recovery_exit")
    assert h["CWND"] == 70.7 and h["SSTHRESH"] == pytest.approx(1000.0)
    # cwnd 1500 > 1000: cwnd = ssthresh = 1000
    h.set(CWND=1500.0)
    assert h.call("ssthresh") == pytest.approx(1000.0)
    # linux flavor for contrast: ssthresh = 70.7 >> 1 = 35 on entry, and CA_EVENT_COMPLETE_CWR
    # sets cwnd = ssthresh = B·RTTmin at the exit (the kernel has no min there); the same B and
    # RTTmin in the kernel's units: 50 000 bytes per jiffy (HZ 250), 20 jiffies → 1000
    h.set(CWND=70.7, FLAVOR=1.0, MSS=1000.0)
    h.st.wl_bw = 50_000.0
    h.st.wl_rtt_min_j = 20.0
    assert h.call("ssthresh") == 35.0
    h.set(CWND=35.0, SSTHRESH=35.0)
    h.call("on_recovery_exit")
    assert h["CWND"] == 1000.0


def test_westwood_rfc_ecn_returns_bandwidth_delay_ssthresh():
    # ECN: the hook returns B·RTTmin/MSS = 1000 (as above) and the engine applies
    # cwnd = min(cwnd, ssthresh) itself: 70.7 stays 70.7, ssthresh 1000.
    h = Hooks("westwood").set(CWND=70.7, rtt_min=0.08, EVENT=float(T.EV_ECN))
    h.st.ww_bw = 12_500_000.0
    assert h.call("ssthresh") == pytest.approx(1000.0)


def test_westwood_ssthresh_by_flavor():
    h = Hooks("westwood").set(CWND=40.0, rtt_min=0.1)
    h.st.ww_bw = 200000.0  # → B·RTTmin/MSS = 20 packets
    assert h.call("ssthresh") == pytest.approx(20.0)  # rfc: Westwood+ sets ssthresh = B·RTTmin
    h.set(FLAVOR=1.0)
    assert h.call("ssthresh") == 20.0  # linux: tcp_reno_ssthresh = 40 >> 1


def test_helpers_westwood_decrease_and_vegas_diff():
    # max(RTTmin/RTT·cwnd, cwnd/2): 0.1/0.125·100 = 80 > 50 → 80; 0.1/0.3·100 = 33.3 < 50 → 50.
    assert pure(H.westwood_decrease)(100.0, 0.1, 0.125) == pytest.approx(80.0)
    assert pure(H.westwood_decrease)(100.0, 0.1, 0.3) == 50.0
    # diff = cwnd·(RTT − RTTmin)/RTT = 100·0.025/0.125 = 20 packets queued.
    assert pure(H.vegas_diff)(100.0, 0.125, 0.1) == pytest.approx(20.0)
    assert pure(H.vegas_diff)(100.0, math.nan, 0.1) == 0.0
    # additive increase with byte counting: cwnd 10, N = 2 → 10 + 1·2/10 = 10.2
    h = Hooks("reno").set(CWND=10.0)
    pure(H.additive_increase)(h.tp, 2.0, 1.0)
    assert h["CWND"] == pytest.approx(10.2)
