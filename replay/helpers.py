"""Shared building blocks that algorithms call (no class hierarchy).

Every function is ``@jit`` (compiled into the calling loop, or plain Python under
``HSCC_TRACE_NO_JIT=1`` / ``compiled=False``). Windows are MSS-sized packets (floats), times
seconds. Functions that change the window write ``tp.cwnd`` / ``tp.cwnd_cnt`` like their Linux
counterparts write ``tp->snd_cwnd`` / ``tp->snd_cwnd_cnt``.

Sources: RFC 5681 §3.1 (slow start, congestion avoidance), RFC 3465 §2.3 (appropriate byte
counting, limit L), Linux net/ipv4/tcp_cong.c (``tcp_slow_start``, ``tcp_cong_avoid_ai``),
include/net/tcp.h (``tcp_is_cwnd_limited``), net/ipv4/tcp_westwood.c (bandwidth filter),
TCP-Fusion §II-A/B and HRF-TCP eq. 17 (Westwood-style decrease, Vegas diff).
"""

from __future__ import annotations

import math

from ._jit import jit
from .state import Field
from .tp import (
    LINUX,
    OPEN,
)

# --- generic (RFC) -----------------------------------------------------------------------------


@jit
def in_slow_start(tp):
    """True while cwnd < ssthresh (RFC 5681 §3.1)."""
    return tp.cwnd < tp.ssthresh


@jit
def slow_start_abc(tp, n, limit):
    """RFC 5681 §3.1 / RFC 3465 §2.3: ``cwnd += min(N, L)`` packets for an ACK of N packets."""
    tp.cwnd += min(n, limit)


@jit
def additive_increase(tp, n, a):
    """Congestion avoidance with byte counting: ``cwnd += a·N/cwnd`` (a packets per window)."""
    tp.cwnd += a * n / tp.cwnd


@jit
def flight_size(tp):
    """RFC 5681 §3.1 FlightSize for an open-loop replay: ``min(flight, cwnd)`` packets.

    FlightSize is the sender's own outstanding data. The trace's flight (``tp.flight``) is the
    traced sender's, which an open-loop replay does not control: it can exceed the replayed cwnd
    (the traced sender had a larger window), and a "reduction" to FlightSize/2 would then raise
    the window (replayed 11, trace flight 100 → 50). A sender running the replayed cwnd could
    have at most cwnd outstanding, so the replayed cwnd bounds it; a smaller trace flight
    (application-limited sender) is kept, as RFC 5681 eq. (4) intends."""
    return min(tp.flight, tp.cwnd)


# --- Linux tcp_cong.c ---------------------------------------------------------------------------


@jit
def linux_slow_start(tp, acked):
    """Linux ``tcp_slow_start``: cwnd = min(cwnd + acked, ssthresh); returns the acked packets
    left over for congestion avoidance (``acked − (new cwnd − old cwnd)``)."""
    cwnd = min(tp.cwnd + acked, tp.ssthresh)
    acked -= cwnd - tp.cwnd
    tp.cwnd = cwnd
    return acked


@jit
def linux_cong_avoid_ai(tp, w, acked):
    """Linux ``tcp_cong_avoid_ai``: one packet per ``w`` acked packets through the segment
    counter ``snd_cwnd_cnt`` (integer arithmetic, credits at a higher w applied gently)."""
    if tp.cwnd_cnt >= w:
        tp.cwnd_cnt = 0.0
        tp.cwnd += 1.0
    tp.cwnd_cnt += acked
    if tp.cwnd_cnt >= w:
        delta = math.floor(tp.cwnd_cnt / w)
        tp.cwnd_cnt -= delta * w
        tp.cwnd += delta


@jit
def linux_cwnd_limited(tp):
    """Linux ``tcp_is_cwnd_limited``: the window was the limit of the last flight
    (``is_cwnd_limited``, emulated by the engine from the trace), or — in slow start — cwnd is
    below twice the largest flight of the current window (``2·max_packets_out``)."""
    if tp.is_cwnd_limited > 0.0:
        return True
    if tp.cwnd < tp.ssthresh:
        return tp.cwnd < 2.0 * tp.max_packets_out
    return False


@jit
def linux_disorder(tp):
    """Linux ``TCP_CA_Disorder``, which the trace's states fold into open: the sender is open
    but SACKed or lost data is outstanding, or retransmissions are in flight
    (``tcp_try_keep_open``: ``tcp_left_out(tp) || tcp_any_retrans_done(sk)``). From the trace:
    the packets outstanding after the ACK differ from those in flight (pipe = outstanding −
    SACKed − lost + retransmitted; schema ACKS ``outstanding`` / ``pipe``). The state is set in
    ``tcp_fastretrans_alert``, before the ACK's ``cong_avoid``: the first SACK of a loss puts
    that very ACK in Disorder."""
    return tp.state == OPEN and tp.flight != tp.pipe


#: what :func:`growth_gate` did
HELD = 0  # flavor linux and not cwnd-limited: no growth on this ACK
SLOW_START = 1  # cwnd < ssthresh: slow-start growth applied
CONG_AVOID = 2  # cwnd ≥ ssthresh: the algorithm's own congestion-avoidance rule applies


@jit
def slow_start_step(tp, n, limit):
    """Slow-start growth for N newly acknowledged packets in either flavor: Linux
    ``tcp_slow_start`` (flavor linux) or RFC 5681 / RFC 3465 ``cwnd += min(N, L)`` (rfc)."""
    if tp.flavor == LINUX:
        linux_slow_start(tp, n)
    else:
        slow_start_abc(tp, n, limit)


@jit
def growth_gate(tp, n, limit):
    """The start of every window-growing ``cong_avoid``: no growth when flavor linux and the
    window was not the limit (``tcp_is_cwnd_limited``), slow start below ssthresh
    (:func:`slow_start_step`); returns :data:`HELD`, :data:`SLOW_START` or :data:`CONG_AVOID`."""
    if tp.flavor == LINUX and not linux_cwnd_limited(tp):
        return HELD
    if tp.cwnd < tp.ssthresh:
        slow_start_step(tp, n, limit)
        return SLOW_START
    return CONG_AVOID


#: ``rtt_source`` choices of the delay-based algorithms, in the order :func:`rtt_by_source` reads
RTT_SOURCES = ("round_min", "srtt", "last")


@jit
def rtt_by_source(src, tp):
    """The RTT (s) a delay-based decision uses, per the ``rtt_source`` choice index
    (:data:`RTT_SOURCES`): the last completed round's smallest sample, the RFC 6298 srtt, or the
    latest sample; the latest sample when the chosen one does not exist yet."""
    rtt = tp.rtt
    if src == 0.0:
        rtt = tp.round_min_rtt
    elif src == 1.0:
        rtt = tp.srtt
    if not (rtt > 0.0):
        rtt = tp.rtt
    return rtt


@jit
def reno_cong_avoid(tp, n, limit):
    """Reno growth for N newly acknowledged packets in either flavor; returns 0 when held
    (flavor linux and not cwnd-limited), 1 after slow-start growth, 2 after congestion
    avoidance. ``rfc``: ``cwnd += min(N, L)`` below ssthresh, else ``cwnd += N/cwnd``.
    ``linux``: ``tcp_reno_cong_avoid`` (cwnd-limited check, tcp_slow_start, tcp_cong_avoid_ai)."""
    if tp.flavor == LINUX:
        if not linux_cwnd_limited(tp):
            return 0
        if tp.cwnd < tp.ssthresh:
            n = linux_slow_start(tp, n)
            if n <= 0.0:
                return 1
        linux_cong_avoid_ai(tp, tp.cwnd, n)
        return 2
    if tp.cwnd < tp.ssthresh:
        slow_start_abc(tp, n, limit)
        return 1
    additive_increase(tp, n, 1.0)
    return 2


# --- delay-based pieces ---------------------------------------------------------------------------


@jit
def vegas_diff(cwnd, rtt, rtt_min):
    """Packets queued in the network, ``cwnd·(RTT − RTTmin)/RTT`` (TCP-Fusion §II-B; CTCP's
    ``(Expected − Actual)·baseRTT``). 0 when either RTT is unknown."""
    if not (rtt > 0.0) or not (rtt_min > 0.0):
        return 0.0
    return cwnd * (rtt - rtt_min) / rtt


@jit
def westwood_decrease(cwnd, rtt_min, rtt):
    """The Westwood-style decrease of TCP-Fusion §II-A / HRF-TCP eq. 17:
    ``max(RTTmin/RTT · cwnd, cwnd/2)``; plain halving when an RTT is unknown."""
    if rtt > 0.0 and rtt_min > 0.0:
        return max(rtt_min / rtt * cwnd, cwnd / 2.0)
    return cwnd / 2.0


# Westwood+ bandwidth filter (Linux net/ipv4/tcp_westwood.c). The caller splices
# WESTWOOD_STATE into its state (the helpers read those fields by name, ``st.ww_bw``) and calls
# westwood_init once, westwood_on_ack on every ACK with the bytes it newly acknowledged
# (cumulative + SACKed, Linux westwood_acked_count).
WESTWOOD_STATE = (
    Field("ww_bk", "bytes", "Westwood+ filter: bytes acknowledged in the current sampling window"),
    Field("ww_win_start", "s", "Westwood+ filter: start of the current sampling window (Linux rtt_win_sx)"),
    Field("ww_bw_ns", "bytes/s", "Westwood+ filter: first 7/8 filter stage (Linux bw_ns_est)"),
    Field("ww_bw", "bytes/s", "Westwood+ filter: bandwidth estimate B (Linux bw_est)"),
)
WESTWOOD_RTT_MIN = 0.05  # s — Linux TCP_WESTWOOD_RTT_MIN (HZ/20)


@jit
def westwood_init(st, tp):
    st.ww_bk = 0.0
    st.ww_win_start = tp.now
    st.ww_bw_ns = 0.0
    st.ww_bw = 0.0


@jit
def westwood_on_ack(st, tp, acked_bytes):
    """Linux ``tcp_westwood_ack``: first ``westwood_update_window`` — once more than
    ``max(RTT, 50 ms)`` has passed since the window began, feed bk/Δt through two cascaded 7/8
    filters (the first sample fills both) and restart — then add this ACK's ``acked_bytes``
    to bk. Returns B in bytes/s."""
    delta = tp.now - st.ww_win_start
    rtt = tp.rtt
    if rtt > 0.0 and delta > max(rtt, WESTWOOD_RTT_MIN):
        sample = st.ww_bk / delta
        if st.ww_bw_ns == 0.0 and st.ww_bw == 0.0:
            st.ww_bw_ns = sample
            st.ww_bw = sample
        else:
            st.ww_bw_ns = (7.0 * st.ww_bw_ns + sample) / 8.0
            st.ww_bw = (7.0 * st.ww_bw + st.ww_bw_ns) / 8.0
        st.ww_bk = 0.0
        st.ww_win_start = tp.now
    st.ww_bk += acked_bytes
    return st.ww_bw


# The same estimator as Linux counts it (flavor linux): time in jiffies (1/HZ s), RTTs rounded up
# to whole jiffies (usecs_to_jiffies), B in whole bytes per jiffy with integer 7/8 filters, the
# window opened when the connection was established (tcp_westwood_init as the SYN-ACK arrives,
# tp.ca_init; unknown: one RTT before the first ACK of data), the first ACK's own bytes not counted
# (first_ack) — that ACK closes the window when more than max(RTT, 50 ms) have passed since, with
# bk = 0, which leaves the filters empty for the next sample (westwood_filter) —, duplicate and SACK
# ACKs counted by westwood_acked_count (one MSS each, taken back when the cumulative ACK moves).
# The kernel's jiffies phase against the trace's clock is unknown: jiffies = ⌊t·HZ⌋ from the
# first ACK. The caller splices WESTWOOD_LINUX_STATE into its state; westwood_linux_rtt on each
# RTT sample (pkts_acked), westwood_linux_on_ack on every ACK (in_ack_event).
WESTWOOD_LINUX_STATE = (
    Field("wl_bk", "bytes", "Linux Westwood+ estimator: bytes acknowledged in the current window"),
    Field("wl_win_sx", "jiffies", "Linux Westwood+ estimator: start of the window (rtt_win_sx)"),
    Field("wl_bw_ns", "bytes/jiffy", "Linux Westwood+ estimator: first filter stage (bw_ns_est)"),
    Field("wl_bw", "bytes/jiffy", "Linux Westwood+ estimator: B (bw_est)"),
    Field("wl_snd_una", "bytes", "Linux Westwood+ estimator: snd_una as last accounted"),
    Field("wl_accounted", "bytes", "Linux Westwood+ estimator: duplicate ACKs counted ahead of the cumulative ACK"),
    Field("wl_first", "", "Linux Westwood+ estimator: before the first ACK (first_ack)", "bool"),
    Field("wl_rtt_j", "jiffies", "Linux Westwood+ estimator: latest RTT sample"),
    Field("wl_rtt_min_j", "jiffies", "Linux Westwood+ estimator: RTTmin"),
    Field("wl_reset_min", "", "Linux Westwood+ estimator: the next ACK re-takes RTTmin (init, RTO)", "bool"),
)


@jit
def westwood_linux_init(st, hz):
    st.wl_bk = 0.0
    st.wl_win_sx = 0.0
    st.wl_bw_ns = 0.0
    st.wl_bw = 0.0
    st.wl_snd_una = 0.0
    st.wl_accounted = 0.0
    st.wl_first = True
    st.wl_reset_min = True
    st.wl_rtt_j = 20.0 * hz  # TCP_WESTWOOD_INIT_RTT
    st.wl_rtt_min_j = 20.0 * hz


@jit
def usecs_to_jiffies(rtt, hz):
    """Linux ``usecs_to_jiffies`` of an RTT in seconds (whole µs, rounded up to a jiffy)."""
    us = math.floor(rtt * 1e6 + 1e-6)
    return math.ceil(us * hz / 1e6 - 1e-9)


@jit
def westwood_linux_rtt(st, rtt, hz):
    """tcp_westwood_pkts_acked: the latest RTT sample in jiffies."""
    if rtt > 0.0:
        st.wl_rtt_j = usecs_to_jiffies(rtt, hz)


@jit
def westwood_linux_on_ack(st, tp, hz, phase):
    """tcp_westwood_ack on one ACK: close the window if more than max(RTT, HZ/20) jiffies have
    passed (B ← integer 7/8 filters of bk/Δt), count the ACK's bytes, update RTTmin. Returns B
    in bytes/s (bytes per jiffy × HZ). ``phase``: the tick's place on the capture's clock (s, the
    parameter ``tick_phase``): jiffies = ⌊(t + phase)·HZ⌋."""
    now = math.floor((tp.now + phase) * hz + 1e-9)
    # the slow path (not header-predicted): duplicate ACKs, ACKs with SACK information, every ACK
    # while the sender is out of the open state (its ACKs carry SACK blocks)
    slow = tp.acked == 0.0 or tp.sacked > 0.0 or tp.state != OPEN
    if st.wl_first:
        # rtt_win_sx = the jiffies of tcp_westwood_init: as the SYN/ACK arrived (tp.ca_init) or,
        # unknown, one RTT before this ACK (when the first data went out)
        opened = tp.ca_init
        if not (opened <= tp.now):  # (nan-safe)
            opened = tp.now - (tp.rtt if tp.rtt > 0.0 else 0.0)
        st.wl_win_sx = math.floor((opened + phase) * hz + 1e-9)
        st.wl_snd_una = tp.snd_una
        st.wl_first = False
        slow = True  # the connection's first ACKs are not header-predicted: it counts as one MSS
    delta = now - st.wl_win_sx
    rtt_j = st.wl_rtt_j
    if rtt_j > 0.0 and delta > max(rtt_j, float(int(hz) // 20)):
        sample = math.floor(st.wl_bk / delta)
        if st.wl_bw_ns == 0.0 and st.wl_bw == 0.0:
            st.wl_bw_ns = sample
            st.wl_bw = sample
        else:
            st.wl_bw_ns = math.floor((7.0 * st.wl_bw_ns + sample) / 8.0)
            st.wl_bw = math.floor((7.0 * st.wl_bw + st.wl_bw_ns) / 8.0)
        st.wl_bk = 0.0
        st.wl_win_sx = now
    una = tp.snd_una
    if slow:  # slow path (duplicate / SACK ACKs): westwood_acked_count
        mss = tp.mss
        cumul = una - st.wl_snd_una
        if cumul == 0.0:
            st.wl_accounted += mss
            cumul = mss
        if cumul > mss:
            if st.wl_accounted >= cumul:
                st.wl_accounted -= cumul
                cumul = mss
            else:
                cumul -= st.wl_accounted
                st.wl_accounted = 0.0
        st.wl_bk += cumul
    else:  # fast path: snd_una's advance
        st.wl_bk += una - st.wl_snd_una
    st.wl_snd_una = una
    if st.wl_reset_min:
        st.wl_rtt_min_j = rtt_j
        st.wl_reset_min = False
    elif rtt_j < st.wl_rtt_min_j:
        st.wl_rtt_min_j = rtt_j
    return st.wl_bw * hz


@jit
def westwood_linux_bw_rttmin(st, tp):
    """tcp_westwood_bw_rttmin: max(⌊B·RTTmin/MSS⌋, 2) with B in bytes/jiffy, RTTmin in jiffies."""
    return max(math.floor(st.wl_bw * st.wl_rtt_min_j / tp.mss), 2.0)


@jit
def westwood_bw_rttmin(st, tp, mss):
    """Linux ``tcp_westwood_bw_rttmin``: ``max(B·RTTmin/MSS, 2)`` packets."""
    rtt_min = tp.min_rtt
    if not (rtt_min > 0.0):
        return 2.0
    return max(st.ww_bw * rtt_min / mss, 2.0)
