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
engine's default). After an idle period (``CA_EVENT_TX_START``, ``cubictcp_cwnd_event``) the
epoch start moves on by the idle time, at most to now, so that growth stays on the cubic curve.
"""

from __future__ import annotations

import math

import numpy as np

from hscc_trace.replay import helpers as H
from hscc_trace.replay._jit import jit
from hscc_trace.replay.algorithms.cubic_rfc import Region
from hscc_trace.replay.interface import TICK_PHASE, Algorithm, Param, Signal
from hscc_trace.replay.state import Field, choice_names
from hscc_trace.replay.tp import CA_EVENT_TX_START

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
    now_us = math.floor(tp.now * 1e6)
    st.round_start = now_us
    st.last_ack = now_us
    st.end_seq = tp.snd_max
    st.curr_rtt = math.inf
    st.sample_cnt = 0


@jit
def _reset(st, tp):
    """bictcp_reset: everything but the HyStart round."""
    st.cnt = 0.0
    st.w_max = 0.0
    st.last_cwnd = 0.0
    st.last_time = 0.0
    st.origin = 0.0
    st.k_units = 0.0
    st.k = 0.0
    st.delay_min = 0.0
    st.t_epoch = -1.0
    st.ack_cnt = 0.0
    st.w_est = 0.0
    st.found = False


@jit
def init(st, p, tp):
    st.cwnd_epoch = 0.0
    st.region = Region.SLOW_START
    st.target = 0.0
    st.hystart_exit = 0.0
    _reset(st, tp)
    _hystart_reset(st, tp)


# --- congestion events ----------------------------------------------------------------------


@jit
def cwnd_event(st, p, tp, event):
    """cubictcp_cwnd_event (net/ipv4/tcp_cubic.c), CA_EVENT_TX_START: delta = now − lsndtime in
    jiffies; with an epoch running and delta > 0, epoch_start += delta, at most now."""
    if event == CA_EVENT_TX_START:
        hz = p.HZ
        delta = math.floor(tp.idle * hz)
        if st.t_epoch >= 0.0 and delta > 0:
            now = math.floor((tp.now + p.tick_phase) * hz)
            st.t_epoch = min(st.t_epoch + delta, now)


@jit
def ssthresh(st, p, tp):
    """cubictcp_recalc_ssthresh: fast convergence, then max(cwnd·717/1024, 2)."""
    cwnd = tp.cwnd
    st.t_epoch = -1.0
    if cwnd < st.w_max and p.fast_convergence:
        st.w_max = math.floor(cwnd * (BETA_SCALE + BETA_LINUX) / (2.0 * BETA_SCALE))
    else:
        st.w_max = cwnd
    return max(math.floor(cwnd * BETA_LINUX / BETA_SCALE), 2.0)


@jit
def on_rto(st, p, tp):
    """cubictcp_state(TCP_CA_Loss): bictcp_reset and a HyStart reset."""
    _reset(st, tp)
    _hystart_reset(st, tp)


# --- RTT samples: cubictcp_acked (delay_min, HyStart) --------------------------------------------


@jit
def on_rtt_sample(st, p, tp, rtt):
    hz = p.HZ
    jiffies = math.floor((tp.now + p.tick_phase) * hz)
    if st.t_epoch >= 0.0 and jiffies - st.t_epoch < hz:  # discard samples right after recovery
        return
    delay = max(math.floor(rtt * 1e6), 1.0)
    if st.delay_min == 0.0 or st.delay_min > delay:
        st.delay_min = delay
    if not st.found and tp.cwnd < tp.ssthresh and p.hystart:
        _hystart_update(st, p, tp, delay)


@jit
def _hystart_update(st, p, tp, delay):
    if tp.snd_una > st.end_seq:
        _hystart_reset(st, tp)
    if tp.cwnd < p.hystart_low_window:
        return
    now_us = math.floor(tp.now * 1e6)
    # ACK-train detection
    if now_us - st.last_ack <= p.hystart_ack_delta * 1e6:
        st.last_ack = now_us
        # hystart_ack_delay: min(1 ms, 4·GSO_MAX_SIZE / pacing rate), slow-start pacing rate 2·cwnd·mss/srtt
        ack_delay = 1000.0
        if tp.srtt > 0.0:
            rate = 2.0 * tp.cwnd * tp.mss / tp.srtt
            ack_delay = min(1000.0, math.floor(65536.0 * 4.0 * 1e6 / rate))
        threshold = math.floor((st.delay_min + ack_delay) / 2.0)  # no pacing: threshold >>= 1
        if now_us - st.round_start > threshold:
            st.found = True
            tp.ssthresh = tp.cwnd
            st.hystart_exit = tp.cwnd
    # delay detection
    if st.curr_rtt > delay:
        st.curr_rtt = delay
    if st.sample_cnt < 8:
        st.sample_cnt += 1
    else:
        thresh = min(max(math.floor(st.delay_min / 8.0), 4000.0), 16000.0)
        if st.curr_rtt > st.delay_min + thresh:
            st.found = True
            tp.ssthresh = tp.cwnd
            st.hystart_exit = tp.cwnd


# --- growth ---------------------------------------------------------------------------------------


@jit
def _update(st, p, tp, cwnd, acked):
    """bictcp_update: sets st.cnt (and the region and target signals)."""
    hz = p.HZ
    jiffies = math.floor((tp.now + p.tick_phase) * hz)
    st.ack_cnt += acked
    if st.last_cwnd == cwnd and jiffies - st.last_time <= math.floor(hz / 32.0):
        return
    if not (st.t_epoch >= 0.0 and jiffies == st.last_time):
        st.last_cwnd = cwnd
        st.last_time = jiffies
        if st.t_epoch < 0.0:
            st.t_epoch = jiffies
            st.ack_cnt = acked
            st.w_est = cwnd
            if st.w_max <= cwnd:
                st.k_units = 0.0
                st.origin = cwnd
            else:
                st.k_units = float(linux_cubic_root(CUBE_FACTOR * (st.w_max - cwnd)))
                st.origin = st.w_max
            st.k = st.k_units / 1024.0
            st.cwnd_epoch = cwnd
        # t = (jiffies − epoch_start + usecs_to_jiffies(delay_min)) in 2^-10 s
        dj = math.ceil(st.delay_min * hz / 1e6)
        t = math.floor((jiffies - st.t_epoch + dj) * 1024.0 / hz)
        if t < st.k_units:
            offs = st.k_units - t
        else:
            offs = t - st.k_units
        delta = math.floor(CUBE_RTT_SCALE * offs * offs * offs / 1099511627776.0)  # >> (10 + 3·10)
        if t < st.k_units:
            target = st.origin - delta
            st.region = Region.CONCAVE
        else:
            target = st.origin + delta
            st.region = Region.CONVEX
        st.target = target
        if target > cwnd:
            st.cnt = math.floor(cwnd / (target - cwnd))
        else:
            st.cnt = 100.0 * cwnd
        if st.w_max == 0.0 and st.cnt > 20.0:
            st.cnt = 20.0
    # tcp_friendliness
    if p.reno_friendly:
        d = math.floor(cwnd * BETA_FRIENDLY / 8.0)
        if d > 0.0:
            while st.ack_cnt > d:
                st.ack_cnt -= d
                st.w_est += 1.0
        if st.w_est > cwnd:
            max_cnt = math.floor(cwnd / (st.w_est - cwnd))
            if st.cnt > max_cnt:
                st.cnt = max_cnt
                st.region = Region.RENO_FRIENDLY
    st.cnt = max(st.cnt, 2.0)


@jit
def cong_avoid(st, p, tp, n):
    """cubictcp_cong_avoid: tcp_slow_start, then bictcp_update and tcp_cong_avoid_ai(cnt)."""
    if not H.linux_cwnd_limited(tp):
        return
    if tp.cwnd < tp.ssthresh:
        st.region = Region.SLOW_START
        n = H.linux_slow_start(tp, n)
        if n <= 0.0:
            return
    _update(st, p, tp, tp.cwnd, n)
    H.linux_cong_avoid_ai(tp, st.cnt, n)


ALGORITHMS = (
    Algorithm(
        name="cubic",
        summary="CUBIC: window a cubic function of the time since the last loss, Reno-friendly floor",
        citation="RFC 9438 §4; Linux net/ipv4/tcp_cubic.c",
        state=(
            Field("w_max", "packets", "last_max_cwnd"),
            Field("k", "s", "bic_K / 1024"),
            Field("t_epoch", "jiffies", "epoch_start; −1 = no epoch"),
            Field("cwnd_epoch", "packets", "cwnd at the epoch start"),
            Field("w_est", "packets", "tcp_cwnd, the Reno-friendly estimate"),
            Field("region", "", "Region of the last update", "int"),
            Field("target", "packets", "bictcp_update's target of the last update"),
            Field("origin", "packets", "bic_origin_point"),
            Field("k_units", "2^-10 s", "bic_K"),
            Field("cnt", "packets", "ca->cnt (ACKed packets per +1)"),
            Field("ack_cnt", "packets", "ca->ack_cnt"),
            Field("last_cwnd", "packets", "ca->last_cwnd"),
            Field("last_time", "jiffies", "ca->last_time"),
            Field("delay_min", "µs", "ca->delay_min (0 = none)"),
            Field("found", "", "HyStart found the exit point", "bool"),
            Field("round_start", "µs", "HyStart round start"),
            Field("end_seq", "bytes", "HyStart end_seq (snd_nxt at round start)"),
            Field("last_ack", "µs", "HyStart last_ack"),
            Field("curr_rtt", "µs", "HyStart min RTT of the current round"),
            Field("sample_cnt", "", "HyStart samples in the current round", "int"),
            Field("hystart_exit", "packets", "cwnd at which HyStart ended slow start (0 = not yet)"),
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
            TICK_PHASE,
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
                labels=choice_names(Region),
            ),
        ),
        default_flavor="linux",
        flavor="linux",
        flavor_doc="rfc: RFC 9438 (module cubic_rfc); linux: tcp_cubic.c (integer arithmetic, HyStart, "
        "β = 717/1024) in the Linux TCP core (module cubic_linux)",
    ),
)
