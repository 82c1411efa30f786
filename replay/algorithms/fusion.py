"""TCP-Fusion — Kaneko, Fujikawa, Su, Katto, PFLDnet 2007 (papers/tcp-fusion-paper.txt §II, slides).

Two windows (§II, first paragraph): a Reno window ``reno_cwnd`` (+1/reno_cwnd per acknowledged
packet, halved on loss) and the Fusion window; the sending window is the larger one (§II-B, last
line of the update rule: ``cwnd_new = reno_cwnd if cwnd_new < reno_cwnd``).

Congestion avoidance, per ACK of N newly acknowledged packets (§II-B, slides "Congestion window
increase"), with ``diff = cwnd·(RTT − RTTmin)/RTT`` (helpers.vegas_diff) and ``α = cwnd·Dmin/RTT``
(§II-C, the last form of α):

* increase phase ``diff < α``:        ``cwnd += W_inc·N/cwnd``
* decrease phase ``diff > 3α``:       ``cwnd += (α − diff)·N/cwnd``
* steady phase otherwise:             cwnd unchanged
* then ``cwnd = max(cwnd, reno_cwnd)``.

``W_inc = B·Dwinc/MSS`` packets (B the Westwood+ bandwidth estimate in bytes/s, helpers
westwood_on_ack; §II-C: ``W_inc ≤ G = B·Dmin/(8·packet_size)``, "W_inc = B/12 Mbps" for 1 ms and
1500-byte packets), at least 1 (docs/algorithms/fusion.md#decisions).

Congestion event (§II-A, the TCPW-RE decrease with a 1/2 floor):
``cwnd = max(RTTmin/RTT · cwnd, cwnd/2)`` with RTT the last sample before the loss
(helpers.westwood_decrease); ``reno_cwnd = max(reno_cwnd/2, 2)``. RTO: Reno behaviour for both
windows (the paper is silent; docs/algorithms/fusion.md#decisions): ssthresh as Reno's, cwnd = reno_cwnd = 1.

Slow start is Reno's (the paper changes only congestion avoidance); the Reno window follows the
sending window while in slow start. A decrease phase that takes cwnd below ssthresh lowers
ssthresh to cwnd so that the flow stays in congestion avoidance (as Linux ``tcp_vegas`` does
with ``tcp_vegas_ssthresh``).

Interpretations (docs/algorithms/fusion.md): the per-ACK formulas of the paper assume one ACK
per packet; with N packets acknowledged by one ACK the increment is multiplied by N (byte
counting, as the Reno model does). Before the first RTT sample no phase can be computed
and the Fusion window holds (the Reno floor still grows).
"""

from __future__ import annotations

import math

from hscc_trace.replay import helpers as H
from hscc_trace.replay._jit import jit
from hscc_trace.replay.interface import Algorithm, Param, Signal
from hscc_trace.replay.tp import (
    ACKED,
    CWND,
    EV_RTO,
    EVENT,
    FLAVOR,
    LINUX,
    MIN_RTT,
    MSS,
    PRIOR_CWND,
    RTT,
    SACKED,
    SSTHRESH,
)

from . import reno as R

# --- state slots -------------------------------------------------------------------------------
RENO_CWND = 0  # packets — the Reno window (lower bound of cwnd)
DIFF = 1  # packets — Vegas diff, packets queued in the bottleneck (last CA update)
ALPHA = 2  # packets — lower-bound threshold α = cwnd·Dmin/RTT
ALPHA3 = 3  # packets — upper-bound threshold 3·α
W_INC = 4  # packets — increment per window in the increase phase, max(B·Dwinc/MSS, 1)
PHASE = 5  # 0 slow start, 1 increase, 2 steady, 3 decrease (last growth opportunity)
BW = 6  # bit/s — Westwood+ bandwidth estimate B (output copy of the filter, in bit/s)
RTT_USED = 7  # s — the RTT the last phase decision used (per rtt_source)
PRIOR_RENO = 8  # packets — reno_cwnd before the last reduction (undo)
WW = 9  # first of helpers.WW_NSLOTS slots of the Westwood+ filter (bytes, s, bytes/s, bytes/s)
WW_1 = 10
WW_2 = 11
WW_3 = 12
WL = 13  # flavor linux: helpers.WL_NSLOTS slots of the estimator as Linux counts it (jiffies)
WL_1 = 14
WL_2 = 15
WL_3 = 16
WL_4 = 17
WL_5 = 18
WL_6 = 19
WL_7 = 20
WL_8 = 21
WL_9 = 22
NSTATE = 23

# --- parameter slots ---------------------------------------------------------------------------
P_DMIN = 0  # s — Dmin of α
P_DWINC = 1  # s — Dmin of W_inc
P_WINC_MIN = 2  # packets — floor of W_inc
P_RTT_SOURCE = 3  # 0 round_min, 1 srtt, 2 last
P_L = 4  # packets — slow-start ABC limit (rfc flavor)
P_HZ = 5  # 1/s — kernel tick rate (flavor linux: the Westwood+ estimator counts jiffies)
NPARAMS = 6

SS, INCREASE, STEADY, DECREASE = 0.0, 1.0, 2.0, 3.0


@jit
def fusion_increment(cwnd, diff, alpha, w_inc, n):
    """§II-B per-ACK rule: (increment in packets, phase code) for N acknowledged packets."""
    if diff < alpha:
        return w_inc * n / cwnd, INCREASE
    if diff > 3.0 * alpha:
        return (alpha - diff) * n / cwnd, DECREASE
    return 0.0, STEADY


@jit
def init(st, p, tp):
    st[RENO_CWND] = tp[CWND]
    st[DIFF] = 0.0
    st[ALPHA] = math.nan
    st[ALPHA3] = math.nan
    st[W_INC] = p[P_WINC_MIN]
    st[PHASE] = SS
    st[BW] = 0.0
    st[RTT_USED] = math.nan
    st[PRIOR_RENO] = tp[CWND]
    H.westwood_init(st, WW, tp)
    H.westwood_linux_init(st, WL, p[P_HZ])


@jit
def on_rtt_sample(st, p, tp, rtt):
    H.westwood_linux_rtt(st, WL, rtt, p[P_HZ])


@jit
def on_ack(st, p, tp):
    if tp[FLAVOR] == LINUX:  # the estimator as tcp_westwood.c counts it (helpers.westwood_linux_on_ack)
        bw = H.westwood_linux_on_ack(st, WL, tp, p[P_HZ])
        st[BW] = 8.0 * bw
        st[W_INC] = max(bw * p[P_DWINC] / tp[MSS], p[P_WINC_MIN])
        return
    # Westwood+ filter over every ACK (bytes newly acked cumulatively + SACKed)
    start = st[WW + H.WW_WIN_START]
    bw = H.westwood_on_ack(st, WW, tp, (tp[ACKED] + tp[SACKED]) * tp[MSS])
    if st[WW + H.WW_WIN_START] != start:  # a new bandwidth sample was taken
        st[BW] = 8.0 * bw
        st[W_INC] = max(bw * p[P_DWINC] / tp[MSS], p[P_WINC_MIN])


@jit
def ssthresh(st, p, tp):
    st[PRIOR_RENO] = st[RENO_CWND]
    if tp[EVENT] == EV_RTO:  # Reno behaviour (docs/algorithms/fusion.md#decisions): Reno's own ssthresh hook
        return R.ssthresh(st, p, tp)
    st[RENO_CWND] = max(st[RENO_CWND] / 2.0, 2.0)
    new = H.westwood_decrease(tp[CWND], tp[MIN_RTT], tp[RTT])
    return max(new, st[RENO_CWND], 2.0)


@jit
def on_rto(st, p, tp):
    st[RENO_CWND] = tp[CWND]  # 1 packet: both windows restart in slow start
    st[PHASE] = SS


@jit
def undo_cwnd(st, p, tp):
    # the reduction was spurious: both windows return to their values before it
    st[RENO_CWND] = max(st[RENO_CWND], st[PRIOR_RENO])
    return max(tp[CWND], tp[PRIOR_CWND], st[RENO_CWND])


@jit
def cong_avoid(st, p, tp, n):
    g = H.growth_gate(tp, n, p[P_L])
    if g == H.HELD:
        return
    if g == H.SLOW_START:  # slow start (Reno's), the Reno window follows
        st[PHASE] = SS
        st[RENO_CWND] = tp[CWND]
        return
    # the Reno window: +1/reno_cwnd per acknowledged packet
    st[RENO_CWND] += n / st[RENO_CWND]
    cwnd = tp[CWND]
    rtt = H.rtt_by_source(p[P_RTT_SOURCE], tp)
    st[RTT_USED] = rtt
    if rtt > 0.0 and tp[MIN_RTT] > 0.0:
        diff = H.vegas_diff(cwnd, rtt, tp[MIN_RTT])
        alpha = cwnd * p[P_DMIN] / rtt
        inc, phase = fusion_increment(cwnd, diff, alpha, st[W_INC], n)
        st[DIFF] = diff
        st[ALPHA] = alpha
        st[ALPHA3] = 3.0 * alpha
        st[PHASE] = phase
        cwnd += inc
    else:
        st[PHASE] = STEADY
    tp[CWND] = max(cwnd, st[RENO_CWND])
    if tp[CWND] < tp[SSTHRESH]:  # a decrease phase stays in congestion avoidance (as Linux tcp_vegas)
        tp[SSTHRESH] = tp[CWND]


_PARAMS = (
    Param(
        "dmin",
        "s",
        0.004,
        'TCP-Fusion §II-C ("we set it to 4ms based on our implementation experiments")',
        "queuing delay Dmin of the lower-bound threshold α = cwnd·Dmin/RTT",
        lo=0.0,
        hi=10.0,
    ),
    Param(
        "dwinc",
        "s",
        0.001,
        'TCP-Fusion §II-C ("Dmin = 1ms is reasonable"; W_inc = B/12 Mbps)',
        "delay of the increment W_inc = B·Dwinc/MSS (B the Westwood+ estimate)",
        lo=0.0,
        hi=10.0,
    ),
    Param(
        "winc_min",
        "packets",
        1.0,
        "docs/algorithms/fusion.md#decisions (W_inc at least 1)",
        "floor of W_inc (also its value before the first bandwidth sample)",
        lo=0.0,
        hi=1e6,
    ),
    Param(
        "rtt_source",
        "",
        "round_min",
        "docs/algorithms/fusion.md#decisions (rtt_source, default round_min as Vegas)",
        "RTT used for diff and α: min sample of the last round, srtt, or the last sample",
        kind="choice",
        choices=("round_min", "srtt", "last"),
    ),
    Param(
        "L",
        "packets",
        2.0,
        "RFC 3465 §2.3 (Reno slow start, L = 2 SMSS)",
        "flavor rfc: at most L packets of slow-start growth per ACK",
        lo=0.0,
        hi=1e6,
    ),
    Param(
        "HZ",
        "1/s",
        250.0,
        "CONFIG_HZ of the reference kernel (samples/*/meta.json)",
        "flavor linux: kernel tick rate of the Westwood+ estimator behind W_inc (tcp_westwood.c counts jiffies)",
        lo=1.0,
        hi=10000.0,
    ),
)

_SIGNALS = (
    Signal("diff", "diff", "packets", "Vegas diff = cwnd·(RTT − RTTmin)/RTT, packets queued (§II-B)"),
    Signal("alpha", "alpha", "packets", "lower-bound threshold α = cwnd·Dmin/RTT (§II-C)"),
    Signal("alpha3", "alpha3", "packets", "upper-bound threshold 3·α (§II-B)"),
    Signal("w_inc", "w_inc", "packets", "increase-phase increment per window, max(B·Dwinc/MSS, 1) (§II-C)"),
    Signal(
        "phase",
        "phase",
        "",
        "phase at the last growth opportunity (§II-B)",
        kind="enum",
        labels=("slow_start", "increase", "steady", "decrease"),
    ),
    Signal("reno_cwnd", "reno_cwnd", "packets", "the Reno window, lower bound of cwnd (§II)"),
    Signal("B", "bw", "bit/s", "Westwood+ bandwidth estimate (helpers.westwood_on_ack, ×8)"),
    Signal("rtt_used", "rtt_used", "s", "RTT of the last phase decision (rtt_source)"),
)

_STATE = (
    "reno_cwnd",
    "diff",
    "alpha",
    "alpha3",
    "w_inc",
    "phase",
    "bw",
    "rtt_used",
    "prior_reno",
    "ww",
    "ww_1",
    "ww_2",
    "ww_3",
    "wl",
    *(f"wl_{k}" for k in range(1, 10)),
)

ALGORITHMS = (
    Algorithm(
        name="fusion",
        reduces_to="reno",  # §II: the sending window never falls below the Reno window
        summary="TCP-Fusion: Vegas-style three-phase delay window over a Reno floor, Westwood-RE decrease",
        citation="Kaneko et al., TCP-Fusion, PFLDnet 2007, §II-A (decrease), §II-B (phases), §II-C (α, W_inc)",
        state=_STATE,
        params=_PARAMS,
        signals=_SIGNALS,
        default_flavor="linux",
        flavor_doc="rfc: the paper's per-ACK model with byte counting; linux: the same rules in the Linux "
        "TCP core (cwnd-limited check, tcp_slow_start, PRR in recovery) as the paper's Linux module",
        doc_page="algorithms/fusion.md",
    ),
)
