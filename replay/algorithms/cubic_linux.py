"""CUBIC, flavor ``linux`` — Linux net/ipv4/tcp_cubic.c (RFC 9438 as the kernel implements it).

The RFC model is the flavor ``rfc`` of the same algorithm, in :mod:`cubic_rfc` beside this
file. This one follows ``tcp_cubic.c`` in integer arithmetic as the kernel: β = 717/1024,
C = 41/1024 (``bic_scale``), time in jiffies (HZ parameter, 250 on the reference kernel) and
2⁻¹⁰ s units, ``bictcp_update`` with the 1/32 s update gate, the table-based ``cubic_root``,
look-ahead by ``delay_min`` (not srtt), ``cnt`` capped at 20 before the first loss,
TCP-friendliness through ``ack_cnt``/``tcp_cwnd``, ``cnt ≥ 2``; ``tcp_cong_avoid_ai(cnt)``;
ssthresh from cwnd (``max(cwnd·717/1024, 2)``); HyStart (ACK-train and delay detection,
``hystart_low_window`` 16, ``hystart_ack_delta`` 2 ms, delay threshold clamp(delay_min/8, 4 ms,
16 ms) after 8 samples), delay samples ignored for 1 s after an epoch starts; state (incl. W_max
and delay_min) wiped on RTO (``cubictcp_state``); undo is Linux ``tcp_reno_undo_cwnd`` (the
engine's default). Not modelled: the epoch shift after an idle period (``CA_EVENT_TX_START``).
"""

from __future__ import annotations

import math

import numpy as np

from hscc_trace.replay import helpers as H
from hscc_trace.replay._jit import jit
from hscc_trace.replay.interface import Algorithm, Param, Signal
from hscc_trace.replay.tp import CWND, MSS, NOW, SND_MAX, SND_UNA, SRTT, SSTHRESH

# --- state slots ----------------------------------------------------------------------------
W_MAX = 0  # packets — last_max_cwnd
K = 1  # s — bic_K / 1024
T_EPOCH = 2  # jiffies — epoch_start; −1 = no epoch
CWND_EPOCH = 3  # packets — cwnd at the epoch start
W_EST = 4  # packets — tcp_cwnd, the Reno-friendly estimate
REGION = 5  # 0 slow start, 1 Reno-friendly, 2 concave, 3 convex
TARGET = 6  # packets — bictcp_update's target of the last update
ORIGIN = 7  # packets — bic_origin_point
K_UNITS = 8  # 2^-10 s — bic_K
CNT = 9  # packets — ca->cnt (ACKed packets per +1)
ACK_CNT = 10  # packets — ca->ack_cnt
LAST_CWND = 11  # packets — ca->last_cwnd
LAST_TIME = 12  # jiffies — ca->last_time
DELAY_MIN = 13  # µs — ca->delay_min (0 = none)
FOUND = 14  # 1 = HyStart found the exit point
ROUND_START = 15  # µs — HyStart round start
END_SEQ = 16  # bytes — HyStart end_seq (snd_nxt at round start)
LAST_ACK = 17  # µs — HyStart last_ack
CURR_RTT = 18  # µs — HyStart min RTT of the current round
SAMPLE_CNT = 19  # HyStart samples in the current round
HYSTART_EXIT = 20  # packets — cwnd at which HyStart ended slow start (0 = not yet)
NSTATE = 21

P_FAST_CONVERGENCE = 0  # bool
P_RENO_FRIENDLY = 1  # bool — tcp_friendliness
P_HYSTART = 2  # bool
P_HZ = 3  # 1/s — kernel tick rate
P_HYSTART_LOW_WINDOW = 4  # packets
P_HYSTART_ACK_DELTA = 5  # s
NPARAMS = 6

# Linux constants (tcp_cubic.c): beta 717/1024, bic_scale 41, BICTCP_HZ 10
BETA_LINUX = 717.0
BETA_SCALE = 1024.0
CUBE_RTT_SCALE = 410.0  # bic_scale * 10
CUBE_FACTOR = 2681735677.0  # (1 << 40) / 410, integer division
BETA_FRIENDLY = 15.0  # 8 * (1024 + 717) / 3 / (1024 - 717), integer arithmetic
CBRT_V = np.array(
    [
        0,
        54,
        54,
        54,
        118,
        118,
        118,
        118,
        123,
        129,
        134,
        138,
        143,
        147,
        151,
        156,
        157,
        161,
        164,
        168,
        170,
        173,
        176,
        179,
        181,
        185,
        187,
        190,
        192,
        194,
        197,
        199,
        200,
        202,
        204,
        206,
        209,
        211,
        213,
        215,
        217,
        219,
        221,
        222,
        224,
        225,
        227,
        229,
        231,
        232,
        234,
        236,
        237,
        239,
        240,
        242,
        244,
        245,
        246,
        248,
        250,
        251,
        252,
        254,
    ],
    dtype=np.int64,
)


@jit
def linux_cubic_root(a):
    """Linux ``cubic_root``: table lookup + one Newton-Raphson step (avg error 0.195 %)."""
    v = int(a)
    if v <= 0:
        return 0
    b = 0
    x = v
    while x > 0:  # fls64
        b += 1
        x >>= 1
    if b < 7:
        return (int(CBRT_V[v]) + 35) >> 6
    b = ((b * 84) >> 8) - 1
    shift = v >> (b * 3)
    x = ((int(CBRT_V[shift]) + 10) << b) >> 6
    x = 2 * x + v // (x * (x - 1))
    x = (x * 341) >> 10
    return x


@jit
def _hystart_reset(st, tp):
    now_us = math.floor(tp[NOW] * 1e6)
    st[ROUND_START] = now_us
    st[LAST_ACK] = now_us
    st[END_SEQ] = tp[SND_MAX]
    st[CURR_RTT] = math.inf
    st[SAMPLE_CNT] = 0.0


@jit
def _reset(st, tp):
    """bictcp_reset: everything but the HyStart round."""
    st[CNT] = 0.0
    st[W_MAX] = 0.0
    st[LAST_CWND] = 0.0
    st[LAST_TIME] = 0.0
    st[ORIGIN] = 0.0
    st[K_UNITS] = 0.0
    st[K] = 0.0
    st[DELAY_MIN] = 0.0
    st[T_EPOCH] = -1.0
    st[ACK_CNT] = 0.0
    st[W_EST] = 0.0
    st[FOUND] = 0.0


@jit
def init(st, p, tp):
    st[CWND_EPOCH] = 0.0
    st[REGION] = 0.0
    st[TARGET] = 0.0
    st[HYSTART_EXIT] = 0.0
    _reset(st, tp)
    _hystart_reset(st, tp)


# --- congestion events ----------------------------------------------------------------------


@jit
def ssthresh(st, p, tp):
    """cubictcp_recalc_ssthresh: fast convergence, then max(cwnd·717/1024, 2)."""
    cwnd = tp[CWND]
    st[T_EPOCH] = -1.0
    if cwnd < st[W_MAX] and p[P_FAST_CONVERGENCE] > 0.0:
        st[W_MAX] = math.floor(cwnd * (BETA_SCALE + BETA_LINUX) / (2.0 * BETA_SCALE))
    else:
        st[W_MAX] = cwnd
    return max(math.floor(cwnd * BETA_LINUX / BETA_SCALE), 2.0)


@jit
def on_rto(st, p, tp):
    """cubictcp_state(TCP_CA_Loss): bictcp_reset and a HyStart reset."""
    _reset(st, tp)
    _hystart_reset(st, tp)


# --- RTT samples: cubictcp_acked (delay_min, HyStart) --------------------------------------------


@jit
def on_rtt_sample(st, p, tp, rtt):
    hz = p[P_HZ]
    jiffies = math.floor(tp[NOW] * hz)
    if st[T_EPOCH] >= 0.0 and jiffies - st[T_EPOCH] < hz:  # discard samples right after recovery
        return
    delay = max(math.floor(rtt * 1e6), 1.0)
    if st[DELAY_MIN] == 0.0 or st[DELAY_MIN] > delay:
        st[DELAY_MIN] = delay
    if st[FOUND] == 0.0 and tp[CWND] < tp[SSTHRESH] and p[P_HYSTART] > 0.0:
        _hystart_update(st, p, tp, delay)


@jit
def _hystart_update(st, p, tp, delay):
    if tp[SND_UNA] > st[END_SEQ]:
        _hystart_reset(st, tp)
    if tp[CWND] < p[P_HYSTART_LOW_WINDOW]:
        return
    now_us = math.floor(tp[NOW] * 1e6)
    # ACK-train detection
    if now_us - st[LAST_ACK] <= p[P_HYSTART_ACK_DELTA] * 1e6:
        st[LAST_ACK] = now_us
        # hystart_ack_delay: min(1 ms, 4·GSO_MAX_SIZE / pacing rate), slow-start pacing rate 2·cwnd·mss/srtt
        ack_delay = 1000.0
        if tp[SRTT] > 0.0:
            rate = 2.0 * tp[CWND] * tp[MSS] / tp[SRTT]
            ack_delay = min(1000.0, math.floor(65536.0 * 4.0 * 1e6 / rate))
        threshold = math.floor((st[DELAY_MIN] + ack_delay) / 2.0)  # no pacing: threshold >>= 1
        if now_us - st[ROUND_START] > threshold:
            st[FOUND] = 1.0
            tp[SSTHRESH] = tp[CWND]
            st[HYSTART_EXIT] = tp[CWND]
    # delay detection
    if st[CURR_RTT] > delay:
        st[CURR_RTT] = delay
    if st[SAMPLE_CNT] < 8.0:
        st[SAMPLE_CNT] += 1.0
    else:
        thresh = min(max(math.floor(st[DELAY_MIN] / 8.0), 4000.0), 16000.0)
        if st[CURR_RTT] > st[DELAY_MIN] + thresh:
            st[FOUND] = 1.0
            tp[SSTHRESH] = tp[CWND]
            st[HYSTART_EXIT] = tp[CWND]


# --- growth ---------------------------------------------------------------------------------------


@jit
def _update(st, p, tp, cwnd, acked):
    """bictcp_update: sets st[CNT] (and the region and target signals)."""
    hz = p[P_HZ]
    jiffies = math.floor(tp[NOW] * hz)
    st[ACK_CNT] += acked
    if st[LAST_CWND] == cwnd and jiffies - st[LAST_TIME] <= math.floor(hz / 32.0):
        return
    if not (st[T_EPOCH] >= 0.0 and jiffies == st[LAST_TIME]):
        st[LAST_CWND] = cwnd
        st[LAST_TIME] = jiffies
        if st[T_EPOCH] < 0.0:
            st[T_EPOCH] = jiffies
            st[ACK_CNT] = acked
            st[W_EST] = cwnd
            if st[W_MAX] <= cwnd:
                st[K_UNITS] = 0.0
                st[ORIGIN] = cwnd
            else:
                st[K_UNITS] = float(linux_cubic_root(CUBE_FACTOR * (st[W_MAX] - cwnd)))
                st[ORIGIN] = st[W_MAX]
            st[K] = st[K_UNITS] / 1024.0
            st[CWND_EPOCH] = cwnd
        # t = (jiffies − epoch_start + usecs_to_jiffies(delay_min)) in 2^-10 s
        dj = math.ceil(st[DELAY_MIN] * hz / 1e6)
        t = math.floor((jiffies - st[T_EPOCH] + dj) * 1024.0 / hz)
        if t < st[K_UNITS]:
            offs = st[K_UNITS] - t
        else:
            offs = t - st[K_UNITS]
        delta = math.floor(CUBE_RTT_SCALE * offs * offs * offs / 1099511627776.0)  # >> (10 + 3·10)
        if t < st[K_UNITS]:
            target = st[ORIGIN] - delta
            st[REGION] = 2.0
        else:
            target = st[ORIGIN] + delta
            st[REGION] = 3.0
        st[TARGET] = target
        if target > cwnd:
            st[CNT] = math.floor(cwnd / (target - cwnd))
        else:
            st[CNT] = 100.0 * cwnd
        if st[W_MAX] == 0.0 and st[CNT] > 20.0:
            st[CNT] = 20.0
    # tcp_friendliness
    if p[P_RENO_FRIENDLY] > 0.0:
        d = math.floor(cwnd * BETA_FRIENDLY / 8.0)
        if d > 0.0:
            while st[ACK_CNT] > d:
                st[ACK_CNT] -= d
                st[W_EST] += 1.0
        if st[W_EST] > cwnd:
            max_cnt = math.floor(cwnd / (st[W_EST] - cwnd))
            if st[CNT] > max_cnt:
                st[CNT] = max_cnt
                st[REGION] = 1.0
    st[CNT] = max(st[CNT], 2.0)


@jit
def cong_avoid(st, p, tp, n):
    """cubictcp_cong_avoid: tcp_slow_start, then bictcp_update and tcp_cong_avoid_ai(cnt)."""
    if not H.linux_cwnd_limited(tp):
        return
    if tp[CWND] < tp[SSTHRESH]:
        st[REGION] = 0.0
        n = H.linux_slow_start(tp, n)
        if n <= 0.0:
            return
    _update(st, p, tp, tp[CWND], n)
    H.linux_cong_avoid_ai(tp, st[CNT], n)


ALGORITHMS = (
    Algorithm(
        name="cubic",
        summary="CUBIC: window a cubic function of the time since the last loss, Reno-friendly floor",
        citation="RFC 9438 §4; Linux net/ipv4/tcp_cubic.c",
        state=(
            "w_max",
            "k",
            "t_epoch",
            "cwnd_epoch",
            "w_est",
            "region",
            "target",
            "origin",
            "k_units",
            "cnt",
            "ack_cnt",
            "last_cwnd",
            "last_time",
            "delay_min",
            "found",
            "round_start",
            "end_seq",
            "last_ack",
            "curr_rtt",
            "sample_cnt",
            "hystart_exit",
        ),
        params=(
            Param(
                "fast_convergence",
                "",
                True,
                "Linux tcp_cubic.c fast_convergence = 1 (RFC 9438 §4.7)",
                "release bandwidth faster when W_max shrinks",
                kind="bool",
            ),
            Param(
                "reno_friendly",
                "",
                True,
                "Linux tcp_cubic.c tcp_friendliness = 1 (RFC 9438 §4.3)",
                "never grow slower than the Reno estimate tcp_cwnd",
                kind="bool",
            ),
            Param(
                "hystart",
                "",
                True,
                "Linux tcp_cubic.c hystart = 1 (Ha & Rhee 2011)",
                "HyStart slow-start exit (ACK train + delay)",
                kind="bool",
            ),
            Param(
                "HZ",
                "1/s",
                250.0,
                "CONFIG_HZ of the reference kernel (samples/*/meta.json)",
                "kernel tick rate (time is counted in jiffies)",
                lo=1.0,
                hi=10000.0,
            ),
            Param(
                "hystart_low_window",
                "packets",
                16.0,
                "Linux tcp_cubic.c hystart_low_window = 16",
                "HyStart acts only at or above this window",
                lo=0.0,
            ),
            Param(
                "hystart_ack_delta",
                "s",
                0.002,
                "Linux tcp_cubic.c hystart_ack_delta_us = 2000",
                "ACKs closer than this form a train",
                lo=0.0,
            ),
        ),
        signals=(
            Signal("W_max", "w_max", "packets", "window at the last congestion event (after fast convergence)"),
            Signal("K", "k", "s", "time from the epoch start to reach W_max"),
            Signal("w_est", "w_est", "packets", "Reno-friendly estimate (Linux tcp_cwnd)"),
            Signal("target", "target", "packets", "cubic target of the last update"),
            Signal(
                "region",
                "region",
                "",
                "growth region at the last ACK",
                kind="enum",
                labels=("slow_start", "reno_friendly", "concave", "convex"),
            ),
        ),
        default_flavor="linux",
        flavor="linux",
        flavor_doc="rfc: RFC 9438 (module cubic_rfc); linux: tcp_cubic.c (integer arithmetic, HyStart, "
        "β = 717/1024) in the Linux TCP core (module cubic_linux)",
    ),
)
