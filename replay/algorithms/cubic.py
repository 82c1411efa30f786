"""CUBIC — RFC 9438 (Xu, Ha, Rhee, Goel, Eggert, 2023); Linux net/ipv4/tcp_cubic.c.

Flavor ``rfc`` (RFC 9438 §4), windows in packets, t in seconds:

* congestion event (§4.6): ``cwnd_prior = cwnd``; fast convergence (§4.7) ``W_max = cwnd·(1+β)/2``
  if cwnd < W_max else ``W_max = cwnd``; ``ssthresh = max(flight_size·β, 2)`` (RFC 9438 uses
  flight_size; here ``min(flight, cwnd)``, helpers.flight_size), β = 0.7; the engine sets
  cwnd = ssthresh at recovery exit;
* a congestion-avoidance epoch begins on the first ACK in congestion avoidance (§4.2):
  ``t_epoch = now``, ``cwnd_epoch = cwnd``, ``W_est = cwnd_epoch``,
  ``K = ∛((W_max − cwnd_epoch)/C)`` (0 when W_max ≤ cwnd_epoch), C = 0.4;
* per ACK of N packets (§4.2–4.5): ``W_cubic(t) = C·(t − K)³ + W_max``;
  ``W_est += α_cubic·N/cwnd`` with ``α_cubic = 3(1−β)/(1+β)`` until W_est ≥ cwnd_prior, then 1
  (§4.3); if ``W_cubic(t) < W_est`` (Reno-friendly region) ``cwnd = W_est``; otherwise
  ``target = clamp(W_cubic(t + RTT), cwnd, 1.5·cwnd)`` with RTT = srtt and
  ``cwnd += (target − cwnd)·N/cwnd`` (concave region t < K, convex t ≥ K);
* slow start is standard (``cwnd += min(N, L)``; HyStart++ is not modelled in this flavor);
* timeout (§4.8): ssthresh as §4.6, cwnd = 1; the next epoch uses K = 0 and W_max = cwnd_epoch;
* spurious congestion event (§4.9): W_max and cwnd restored (undo_cwnd).

Flavor ``linux`` (tcp_cubic.c, integer arithmetic as the kernel): β = 717/1024, C = 41/1024
(``bic_scale``), time in jiffies (HZ parameter, 250 on the reference kernel) and 2⁻¹⁰ s units,
``bictcp_update`` with the 1/32 s update gate, the table-based ``cubic_root``, look-ahead by
``delay_min`` (not srtt), ``cnt`` capped at 20 before the first loss, TCP-friendliness through
``ack_cnt``/``tcp_cwnd``, ``cnt ≥ 2``; ``tcp_cong_avoid_ai(cnt)``; ssthresh from cwnd
(``max(cwnd·717/1024, 2)``); HyStart (ACK-train and delay detection, ``hystart_low_window`` 16,
``hystart_ack_delta`` 2 ms, delay threshold clamp(delay_min/8, 4 ms, 16 ms) after 8 samples),
delay samples ignored for 1 s after an epoch starts; state (incl. W_max and delay_min) wiped on
RTO. Not modelled: the epoch shift after an idle period (``CA_EVENT_TX_START``).
"""

from __future__ import annotations

import math

import numpy as np

from hscc_trace.replay import helpers as H
from hscc_trace.replay._jit import jit
from hscc_trace.replay.interface import Algorithm, Param, Signal
from hscc_trace.replay.tp import CWND, FLAVOR, LINUX, MSS, NOW, PRIOR_CWND, SND_MAX, SND_UNA, SRTT, SSTHRESH

# --- state slots ----------------------------------------------------------------------------
W_MAX = 0  # packets — W_max (Linux last_max_cwnd)
K = 1  # s — time to reach W_max from the epoch start (Linux bic_K / 1024)
T_EPOCH = 2  # s (rfc) or jiffies (linux) — epoch start; −1 = no epoch
CWND_EPOCH = 3  # packets — cwnd at the epoch start (Linux: bic_origin_point kept in ORIGIN)
W_EST = 4  # packets — Reno-friendly estimate W_est (Linux tcp_cwnd)
CWND_PRIOR = 5  # packets — cwnd before the last reduction
PRIOR_W_MAX = 6  # packets — W_max before the last reduction (RFC 9438 §4.9 undo)
REGION = 7  # 0 slow start, 1 Reno-friendly, 2 concave, 3 convex
AFTER_RTO = 8  # 1 = the next epoch starts with K = 0, W_max = cwnd_epoch (RFC 9438 §4.8)
TARGET = 9  # packets — target window of the last update
# Linux-only
ORIGIN = 10  # packets — bic_origin_point
K_UNITS = 11  # 2^-10 s — bic_K
CNT = 12  # packets — ca->cnt (ACKed packets per +1)
ACK_CNT = 13  # packets — ca->ack_cnt
LAST_CWND = 14  # packets — ca->last_cwnd
LAST_TIME = 15  # jiffies — ca->last_time
DELAY_MIN = 16  # µs — ca->delay_min (0 = none)
FOUND = 17  # 1 = HyStart found the exit point
ROUND_START = 18  # µs — HyStart round start
END_SEQ = 19  # bytes — HyStart end_seq (snd_nxt at round start)
LAST_ACK = 20  # µs — HyStart last_ack
CURR_RTT = 21  # µs — HyStart min RTT of the current round
SAMPLE_CNT = 22  # HyStart samples in the current round
HYSTART_EXIT = 23  # packets — cwnd at which HyStart ended slow start (0 = not yet)
NSTATE = 24

P_C = 0  # packets/s³ — C (rfc)
P_BETA = 1  # fraction — β (rfc)
P_FAST_CONVERGENCE = 2  # bool
P_RENO_FRIENDLY = 3  # bool — Reno-friendly region / Linux tcp_friendliness
P_HYSTART = 4  # bool — Linux HyStart (flavor linux)
P_HZ = 5  # 1/s — kernel tick rate (flavor linux)
P_HYSTART_LOW_WINDOW = 6  # packets
P_HYSTART_ACK_DELTA = 7  # s
P_L = 8  # packets
NPARAMS = 9

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
def _linux_reset(st, tp):
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
    st[W_MAX] = 0.0
    st[K] = 0.0
    st[T_EPOCH] = -1.0
    st[CWND_EPOCH] = 0.0
    st[W_EST] = 0.0
    st[CWND_PRIOR] = 0.0
    st[PRIOR_W_MAX] = 0.0
    st[REGION] = 0.0
    st[AFTER_RTO] = 0.0
    st[TARGET] = 0.0
    st[HYSTART_EXIT] = 0.0
    _linux_reset(st, tp)
    _hystart_reset(st, tp)


# --- congestion events ----------------------------------------------------------------------


@jit
def ssthresh(st, p, tp):
    cwnd = tp[CWND]
    st[PRIOR_W_MAX] = st[W_MAX]
    st[CWND_PRIOR] = cwnd
    st[T_EPOCH] = -1.0
    if tp[FLAVOR] == LINUX:  # cubictcp_recalc_ssthresh
        if cwnd < st[W_MAX] and p[P_FAST_CONVERGENCE] > 0.0:
            st[W_MAX] = math.floor(cwnd * (BETA_SCALE + BETA_LINUX) / (2.0 * BETA_SCALE))
        else:
            st[W_MAX] = cwnd
        return max(math.floor(cwnd * BETA_LINUX / BETA_SCALE), 2.0)
    beta = p[P_BETA]
    if cwnd < st[W_MAX] and p[P_FAST_CONVERGENCE] > 0.0:  # RFC 9438 §4.7
        st[W_MAX] = cwnd * (1.0 + beta) / 2.0
    else:
        st[W_MAX] = cwnd
    return max(H.flight_size(tp) * beta, 2.0)  # RFC 9438 §4.6, flight_size ≤ the replayed cwnd


@jit
def on_rto(st, p, tp):
    if tp[FLAVOR] == LINUX:  # cubictcp_state(TCP_CA_Loss): bictcp_reset + hystart reset
        _linux_reset(st, tp)
        _hystart_reset(st, tp)
    else:
        st[AFTER_RTO] = 1.0
        st[T_EPOCH] = -1.0


@jit
def undo_cwnd(st, p, tp):
    if tp[FLAVOR] != LINUX:  # RFC 9438 §4.9: restore W_max
        st[W_MAX] = st[PRIOR_W_MAX]
        st[T_EPOCH] = -1.0
    return max(tp[CWND], tp[PRIOR_CWND])


# --- RTT samples: Linux cubictcp_acked (delay_min, HyStart) --------------------------------------


@jit
def on_rtt_sample(st, p, tp, rtt):
    if tp[FLAVOR] != LINUX:
        return
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


# --- growth --------------------------------------------------------------------------------------


@jit
def _linux_update(st, p, tp, cwnd, acked):
    """Linux bictcp_update: sets st[CNT]."""
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
def _rfc_w_cubic(st, p, t):
    d = t - st[K]
    return p[P_C] * d * d * d + st[W_MAX]


@jit
def cong_avoid(st, p, tp, n):
    if tp[FLAVOR] == LINUX:
        if not H.linux_cwnd_limited(tp):
            return
        if tp[CWND] < tp[SSTHRESH]:
            st[REGION] = 0.0
            n = H.linux_slow_start(tp, n)
            if n <= 0.0:
                return
        _linux_update(st, p, tp, tp[CWND], n)
        H.linux_cong_avoid_ai(tp, st[CNT], n)
        return
    if tp[CWND] < tp[SSTHRESH]:
        st[REGION] = 0.0
        H.slow_start_abc(tp, n, p[P_L])
        return
    cwnd = tp[CWND]
    c = p[P_C]
    beta = p[P_BETA]
    if st[T_EPOCH] < 0.0:  # RFC 9438 §4.2: a new congestion-avoidance epoch
        st[T_EPOCH] = tp[NOW]
        st[CWND_EPOCH] = cwnd
        st[W_EST] = cwnd
        if st[AFTER_RTO] > 0.0 or st[W_MAX] < cwnd:  # §4.8 after a timeout; no loss yet
            st[W_MAX] = cwnd
            st[AFTER_RTO] = 0.0
        st[K] = ((st[W_MAX] - cwnd) / c) ** (1.0 / 3.0) if st[W_MAX] > cwnd else 0.0
    t = tp[NOW] - st[T_EPOCH]
    rtt = tp[SRTT] if tp[SRTT] > 0.0 else 0.0
    # §4.3 Reno-friendly estimate
    alpha = 3.0 * (1.0 - beta) / (1.0 + beta)
    if st[W_EST] >= st[CWND_PRIOR]:
        alpha = 1.0
    st[W_EST] += alpha * n / cwnd
    w_t = _rfc_w_cubic(st, p, t)
    if p[P_RENO_FRIENDLY] > 0.0 and w_t < st[W_EST]:
        st[REGION] = 1.0
        st[TARGET] = st[W_EST]
        tp[CWND] = max(cwnd, st[W_EST])
        return
    target = _rfc_w_cubic(st, p, t + rtt)
    target = min(max(target, cwnd), 1.5 * cwnd)
    st[TARGET] = target
    st[REGION] = 2.0 if t < st[K] else 3.0
    tp[CWND] = cwnd + (target - cwnd) * n / cwnd


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
            "cwnd_prior",
            "prior_w_max",
            "region",
            "after_rto",
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
                "C",
                "packets/s³",
                0.4,
                "RFC 9438 §5.1",
                "cubic scaling constant (flavor linux: 41/1024·10 fixed)",
                lo=1e-6,
            ),
            Param(
                "beta",
                "",
                0.7,
                "RFC 9438 §5.1 (β_cubic); Linux 717/1024",
                "multiplicative decrease factor (flavor linux: 717/1024 fixed)",
                lo=0.0,
                hi=1.0,
            ),
            Param(
                "fast_convergence",
                "",
                True,
                "RFC 9438 §4.7; Linux fast_convergence = 1",
                "release bandwidth faster when W_max shrinks",
                kind="bool",
            ),
            Param(
                "reno_friendly",
                "",
                True,
                "RFC 9438 §4.3; Linux tcp_friendliness = 1",
                "never grow slower than the Reno estimate W_est",
                kind="bool",
            ),
            Param(
                "hystart",
                "",
                True,
                "Linux tcp_cubic.c hystart = 1 (Ha & Rhee 2011)",
                "flavor linux: HyStart slow-start exit (ACK train + delay)",
                kind="bool",
            ),
            Param(
                "HZ",
                "1/s",
                250.0,
                "CONFIG_HZ of the reference kernel (samples/*/meta.json)",
                "flavor linux: kernel tick rate (time is counted in jiffies)",
                lo=1.0,
                hi=10000.0,
            ),
            Param(
                "hystart_low_window",
                "packets",
                16.0,
                "Linux tcp_cubic.c hystart_low_window = 16",
                "flavor linux: HyStart acts only at or above this window",
                lo=0.0,
            ),
            Param(
                "hystart_ack_delta",
                "s",
                0.002,
                "Linux tcp_cubic.c hystart_ack_delta_us = 2000",
                "flavor linux: ACKs closer than this form a train",
                lo=0.0,
            ),
            Param("L", "packets", 2.0, "RFC 3465 §2.3", "flavor rfc: slow-start growth limit per ACK", lo=0.0),
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
        default_flavor="rfc",
        flavor_doc="rfc: RFC 9438; linux: tcp_cubic.c (integer arithmetic, HyStart, β = 717/1024) in the "
        "Linux TCP core",
    ),
)
