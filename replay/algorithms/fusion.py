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
from hscc_trace.replay.interface import TICK_PHASE, Algorithm, Param, Signal
from hscc_trace.replay.state import Field
from hscc_trace.replay.tp import (
    EV_RTO,
    LINUX,
)

from . import reno as R

SS, INCREASE, STEADY, DECREASE = 0.0, 1.0, 2.0, 3.0  # field ``phase``


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
    st.reno_cwnd = tp.cwnd
    st.diff = 0.0
    st.alpha = math.nan
    st.alpha3 = math.nan
    st.w_inc = p.winc_min
    st.phase = SS
    st.bw = 0.0
    st.rtt_used = math.nan
    st.prior_reno = tp.cwnd
    H.westwood_init(st, tp)
    H.westwood_linux_init(st, p.HZ)


@jit
def on_rtt_sample(st, p, tp, rtt):
    H.westwood_linux_rtt(st, rtt, p.HZ)


@jit
def on_ack(st, p, tp):
    if tp.flavor == LINUX:  # the estimator as tcp_westwood.c counts it (helpers.westwood_linux_on_ack)
        bw = H.westwood_linux_on_ack(st, tp, p.HZ, p.tick_phase)
        st.bw = 8.0 * bw
        st.w_inc = max(bw * p.dwinc / tp.mss, p.winc_min)
        return
    # Westwood+ filter over every ACK (bytes newly acked cumulatively + SACKed)
    start = st.ww_win_start
    bw = H.westwood_on_ack(st, tp, (tp.acked + tp.sacked) * tp.mss)
    if st.ww_win_start != start:  # a new bandwidth sample was taken
        st.bw = 8.0 * bw
        st.w_inc = max(bw * p.dwinc / tp.mss, p.winc_min)


@jit
def ssthresh(st, p, tp):
    st.prior_reno = st.reno_cwnd
    if tp.event == EV_RTO:  # Reno behaviour (docs/algorithms/fusion.md#decisions): Reno's own ssthresh hook
        return R.ssthresh(st, p, tp)
    st.reno_cwnd = max(st.reno_cwnd / 2.0, 2.0)
    new = H.westwood_decrease(tp.cwnd, tp.min_rtt, tp.rtt)
    return max(new, st.reno_cwnd, 2.0)


@jit
def on_rto(st, p, tp):
    st.reno_cwnd = tp.cwnd  # 1 packet: both windows restart in slow start
    st.phase = SS


@jit
def undo_cwnd(st, p, tp):
    # the reduction was spurious: both windows return to their values before it
    st.reno_cwnd = max(st.reno_cwnd, st.prior_reno)
    return max(tp.cwnd, tp.prior_cwnd, st.reno_cwnd)


@jit
def cong_avoid(st, p, tp, n):
    g = H.growth_gate(tp, n, p.L)
    if g == H.HELD:
        return
    if g == H.SLOW_START:  # slow start (Reno's), the Reno window follows
        st.phase = SS
        st.reno_cwnd = tp.cwnd
        return
    # the Reno window: +1/reno_cwnd per acknowledged packet
    st.reno_cwnd += n / st.reno_cwnd
    cwnd = tp.cwnd
    rtt = H.rtt_by_source(p.rtt_source, tp)
    st.rtt_used = rtt
    if rtt > 0.0 and tp.min_rtt > 0.0:
        diff = H.vegas_diff(cwnd, rtt, tp.min_rtt)
        alpha = cwnd * p.dmin / rtt
        inc, phase = fusion_increment(cwnd, diff, alpha, st.w_inc, n)
        st.diff = diff
        st.alpha = alpha
        st.alpha3 = 3.0 * alpha
        st.phase = phase
        cwnd += inc
    else:
        st.phase = STEADY
    tp.cwnd = max(cwnd, st.reno_cwnd)
    if tp.cwnd < tp.ssthresh:  # a decrease phase stays in congestion avoidance (as Linux tcp_vegas)
        tp.ssthresh = tp.cwnd


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
    TICK_PHASE,
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
    Field("reno_cwnd", "packets", "the Reno window (lower bound of cwnd)"),
    Field("diff", "packets", "Vegas diff, packets queued in the bottleneck (last CA update)"),
    Field("alpha", "packets", "lower-bound threshold α = cwnd·Dmin/RTT"),
    Field("alpha3", "packets", "upper-bound threshold 3·α"),
    Field("w_inc", "packets", "increment per window in the increase phase, max(B·Dwinc/MSS, 1)"),
    Field("phase", "", "SS, INCREASE, STEADY or DECREASE at the last growth opportunity"),
    Field("bw", "bit/s", "Westwood+ bandwidth estimate B (output copy of the filter, in bit/s)"),
    Field("rtt_used", "s", "the RTT the last phase decision used (per rtt_source)"),
    Field("prior_reno", "packets", "reno_cwnd before the last reduction (undo)"),
    *H.WESTWOOD_STATE,
    *H.WESTWOOD_LINUX_STATE,
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
