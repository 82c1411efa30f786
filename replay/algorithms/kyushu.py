"""Kyushu-TCP (KTCP) add-on — Yoshimizu, Koga, Kouyama, Shimamura, Kumazoe, Tsuru, IEICE Trans. Commun.
E93-B(5), 2010 (papers/kyushu-tcp-paper.txt §3, Figs. 2-3, §4).

A wrapper composed over any base algorithm (``kyushu+highspeed``, ``kyushu+cubic``). The base runs unchanged; KTCP only adds a *non-aggressive period* to its congestion
avoidance (§3, Fig. 2):

* on a congestion event: ``w1`` = the window just before the drop, ``w2 = α·w1`` (eq. 1,
  α = 0.9 from §5.1.1); ``Tc += 1`` for a fast retransmission (3 dupACKs / SACK recovery;
  Fig. 3); ``Tc = 0`` when the base re-enters slow start (an RTO, §3 last paragraph);
* after the base algorithm's reduction the base grows normally up to ``w2``; then the window is
  held at ``w2`` until the packets sent since the period began exceed ``B = Tc²·w2`` (eq. 2),
  or a new loss ends the period;
* KTCP engages only while the base is in its high-speed regime (§4: "KTCP enters the
  non-aggressive state when HSTCP uses the specialized algorithm", i.e. w above HighSpeed's
  low window; parameter ``engage_above``).

Interpretations (docs/algorithms/kyushu.md): packets "sent" in a replay are the packets the
held window releases, i.e. the packets newly acknowledged (cumulative + SACKed) while it is held;
the ACK whose count makes ``sent > B`` ends the period and the base grows again on that ACK;
a period of ``B = 0`` (Tc = 0 after an RTO) is empty (no hold); while held the base's growth
hook is not called (CUBIC's clock keeps running, so CUBIC resumes on its curve); an ECN echo is
a light congestion event and counts in Tc (switch ``ecn_counts``); a proven spurious reduction
(undo) restores w1, w2, Tc and the period as they were before it; with flavor ``linux`` w2 is
rounded down to whole packets (the kernel's snd_cwnd is an integer).
"""

from __future__ import annotations

import math

from hscc_trace.replay._jit import jit
from hscc_trace.replay.interface import Algorithm, Param, Signal
from hscc_trace.replay.state import Field
from hscc_trace.replay.tp import (
    EV_ECN,
    EV_FAST_RETRANSMIT,
    EV_RTO,
    EV_SACK_RECOVERY,
    LINUX,
)


@jit
def _save(st):
    """The undo snapshot: prior_w1 … prior_armed = w1 … armed."""
    st.prior_w1 = st.w1
    st.prior_w2 = st.w2
    st.prior_tc = st.tc
    st.prior_b = st.b
    st.prior_non_aggr = st.non_aggr
    st.prior_sent = st.sent
    st.prior_armed = st.armed


@jit
def post_init(st, p, tp):
    st.w1 = math.nan
    st.w2 = math.nan
    st.tc = 0.0
    st.b = 0.0
    st.non_aggr = False
    st.sent = 0.0
    st.armed = False
    st.cwnd_before = tp.cwnd
    st.deliv0 = 0.0
    _save(st)


@jit
def post_ssthresh(st, p, tp, value):
    _save(st)  # undo snapshot
    ev = tp.event
    st.w1 = tp.cwnd  # the engine calls ssthresh with the pre-event window
    st.w2 = p.reduction_ratio * st.w1
    if tp.flavor == LINUX:  # the Linux core counts whole packets (snd_cwnd is an integer)
        st.w2 = math.floor(st.w2)
    if ev == EV_RTO:
        st.tc = 0.0
    elif ev == EV_FAST_RETRANSMIT or ev == EV_SACK_RECOVERY or (ev == EV_ECN and p.ecn_counts):
        st.tc += 1.0
    st.b = st.tc * st.tc * st.w2
    st.non_aggr = False  # a loss ends the period
    st.sent = 0.0
    st.armed = True
    return value


@jit
def post_on_rto(st, p, tp):
    # the base re-enters slow start: Tc = 0 (§3), so the next period is empty
    st.tc = 0.0
    st.b = 0.0
    st.non_aggr = False
    st.sent = 0.0


@jit
def post_undo_cwnd(st, p, tp, value):
    st.w1 = st.prior_w1
    st.w2 = st.prior_w2
    st.tc = st.prior_tc
    st.b = st.prior_b
    st.non_aggr = st.prior_non_aggr
    st.sent = st.prior_sent
    st.armed = st.prior_armed
    return value


@jit
def pre_cong_avoid(st, p, tp, n):
    """False (skip the base's growth) while the window is held at w2."""
    if st.non_aggr:
        # the held window releases one packet per packet delivered (cumulative + SACKed, also
        # on ACKs that do not call cong_avoid): the engine's delivered count since the start
        st.sent = tp.delivered - st.deliv0
        if st.sent > st.b:  # period over: the base grows again from this ACK
            st.non_aggr = False
            st.armed = False
            st.cwnd_before = tp.cwnd
            return True
        tp.cwnd = st.w2
        return False
    st.cwnd_before = tp.cwnd
    return True


@jit
def post_cong_avoid(st, p, tp, n):
    if not st.armed or st.non_aggr:
        return
    before = st.cwnd_before
    w2 = st.w2
    if before < tp.ssthresh or tp.cwnd < w2:  # slow start, or w2 not reached yet
        return
    if before > w2 or w2 <= p.engage_above or st.b <= 0.0:
        st.armed = False  # already above w2, below the high-speed regime, or an empty period
        return
    tp.cwnd = w2
    st.non_aggr = True
    st.sent = 0.0
    st.deliv0 = tp.delivered


_PARAMS = (
    Param(
        "reduction_ratio",
        "",
        0.9,
        "Kyushu-TCP §3 eq. (1), §5.1.1 (α = 0.90 recommended); docs/algorithms/kyushu.md#decisions",
        "α of w2 = α·w1, the estimated stably available BDP",
        lo=0.0,
        hi=1.0,
    ),
    Param(
        "engage_above",
        "packets",
        38.0,
        "Kyushu-TCP §4 (only in HighSpeed's specialized regime); RFC 3649 Low_Window = 38 (the paper's "
        "setup quotes 83)",
        "KTCP holds only when w2 is above this window (set it to the base's low window; 0 = always)",
        lo=0.0,
    ),
    Param(
        "ecn_counts",
        "",
        True,
        "docs/algorithms/kyushu.md (interpretation: ECN is a light congestion event)",
        "an ECN echo increments Tc like a fast retransmission",
        kind="bool",
    ),
)

_SIGNALS = (
    Signal("w1", "w1", "packets", "window just before the last drop (§3)"),
    Signal("w2", "w2", "packets", "hold level α·w1, the estimated stably available BDP (eq. 1)"),
    Signal("Tc", "tc", "", "fast retransmissions since the last slow start (Fig. 3)"),
    Signal(
        "B_ktcp",
        "b",
        "packets",
        "B, length of the non-aggressive period Tc²·w2 (eq. 2); named apart "
        "from the Westwood+ estimate B of Fusion/Westwood bases",
    ),
    Signal("non_aggressive", "non_aggr", "", "window held at w2 (non-aggressive period)", kind="bool"),
    Signal("sent_in_period", "sent", "packets", "packets sent since the non-aggressive period began"),
)

_STATE = (
    Field("w1", "packets", "window just before the last drop"),
    Field("w2", "packets", "estimated stably available BDP, α·w1"),
    Field("tc", "", "light congestion events (fast retransmissions) since the last slow start"),
    Field("b", "packets", "length of the non-aggressive period, Tc²·w2"),
    Field("non_aggr", "", "the window is held at w2", "bool"),
    Field("sent", "packets", "packets sent since the non-aggressive period began"),
    Field("armed", "", "after a congestion event until w2 is reached (or missed)", "bool"),
    Field("cwnd_before", "packets", "window before the base's growth on the current ACK"),
    Field("prior_w1", "packets", "undo snapshot of w1"),
    Field("prior_w2", "packets", "undo snapshot of w2"),
    Field("prior_tc", "", "undo snapshot of tc"),
    Field("prior_b", "packets", "undo snapshot of b"),
    Field("prior_non_aggr", "", "undo snapshot of non_aggr", "bool"),
    Field("prior_sent", "packets", "undo snapshot of sent"),
    Field("prior_armed", "", "undo snapshot of armed", "bool"),
    Field("deliv0", "packets", "engine's delivered count when the period began"),
)


def _decl(name: str) -> Algorithm:
    return Algorithm(
        name=name,
        summary="Kyushu-TCP add-on: hold the base's window at w2 = α·w1 for Tc²·w2 packets after a loss",
        citation="Yoshimizu et al., Kyushu-TCP, IEICE E93-B(5) 2010, §3 eqs. (1)-(2), Figs. 2-3",
        state=_STATE,
        params=_PARAMS,
        signals=_SIGNALS,
        wraps=True,
        doc_page="algorithms/kyushu.md",
    )


ALGORITHMS = (_decl("kyushu"),)
