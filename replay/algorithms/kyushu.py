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
from hscc_trace.replay.tp import (
    CWND,
    DELIVERED,
    EV_ECN,
    EV_FAST_RETRANSMIT,
    EV_RTO,
    EV_SACK_RECOVERY,
    EVENT,
    FLAVOR,
    LINUX,
    SSTHRESH,
)

# --- state slots (the wrapper's own slice) ---------------------------------------------------------
W1 = 0  # packets — window just before the last drop
W2 = 1  # packets — estimated stably available BDP, α·w1
TC = 2  # light congestion events (fast retransmissions) since the last slow start
B = 3  # packets — length of the non-aggressive period, Tc²·w2
NON_AGGR = 4  # 1 while the window is held at w2
SENT = 5  # packets sent since the non-aggressive period began
ARMED = 6  # 1 after a congestion event until w2 is reached (or missed)
CWND_BEFORE = 7  # packets — window before the base's growth on the current ACK
PRIOR_W1 = 8  # undo snapshot of w1 … armed
PRIOR_W2 = 9
PRIOR_TC = 10
PRIOR_B = 11
PRIOR_NON_AGGR = 12
PRIOR_SENT = 13
PRIOR_ARMED = 14
DELIV0 = 15  # packets — engine's delivered count when the period began
NSTATE = 16

# --- parameter slots ---------------------------------------------------------------------------
P_REDUCTION_RATIO = 0  # α of eq. (1)
P_ENGAGE_ABOVE = 1  # packets — the base's high-speed regime starts above this window
P_ECN_COUNTS = 2  # 1: an ECN echo increments Tc like a fast retransmission
NPARAMS = 3


@jit
def post_init(ws, wp, tp):
    ws[W1] = math.nan
    ws[W2] = math.nan
    ws[TC] = 0.0
    ws[B] = 0.0
    ws[NON_AGGR] = 0.0
    ws[SENT] = 0.0
    ws[ARMED] = 0.0
    ws[CWND_BEFORE] = tp[CWND]
    ws[DELIV0] = 0.0
    for i in range(PRIOR_W1, PRIOR_ARMED + 1):
        ws[i] = ws[i - PRIOR_W1]


@jit
def post_ssthresh(ws, wp, tp, value):
    for i in range(W1, ARMED + 1):  # undo snapshot
        ws[PRIOR_W1 + i] = ws[i]
    ev = tp[EVENT]
    ws[W1] = tp[CWND]  # the engine calls ssthresh with the pre-event window
    ws[W2] = wp[P_REDUCTION_RATIO] * ws[W1]
    if tp[FLAVOR] == LINUX:  # the Linux core counts whole packets (snd_cwnd is an integer)
        ws[W2] = math.floor(ws[W2])
    if ev == EV_RTO:
        ws[TC] = 0.0
    elif ev == EV_FAST_RETRANSMIT or ev == EV_SACK_RECOVERY or (ev == EV_ECN and wp[P_ECN_COUNTS] > 0.0):
        ws[TC] += 1.0
    ws[B] = ws[TC] * ws[TC] * ws[W2]
    ws[NON_AGGR] = 0.0  # a loss ends the period
    ws[SENT] = 0.0
    ws[ARMED] = 1.0
    return value


@jit
def post_on_rto(ws, wp, tp):
    # the base re-enters slow start: Tc = 0 (§3), so the next period is empty
    ws[TC] = 0.0
    ws[B] = 0.0
    ws[NON_AGGR] = 0.0
    ws[SENT] = 0.0


@jit
def post_undo_cwnd(ws, wp, tp, value):
    for i in range(W1, ARMED + 1):
        ws[i] = ws[PRIOR_W1 + i]
    return value


@jit
def pre_cong_avoid(ws, wp, tp, n):
    """False (skip the base's growth) while the window is held at w2."""
    if ws[NON_AGGR] > 0.0:
        # the held window releases one packet per packet delivered (cumulative + SACKed, also
        # on ACKs that do not call cong_avoid): the engine's delivered count since the start
        ws[SENT] = tp[DELIVERED] - ws[DELIV0]
        if ws[SENT] > ws[B]:  # period over: the base grows again from this ACK
            ws[NON_AGGR] = 0.0
            ws[ARMED] = 0.0
            ws[CWND_BEFORE] = tp[CWND]
            return True
        tp[CWND] = ws[W2]
        return False
    ws[CWND_BEFORE] = tp[CWND]
    return True


@jit
def post_cong_avoid(ws, wp, tp, n):
    if ws[ARMED] == 0.0 or ws[NON_AGGR] > 0.0:
        return
    before = ws[CWND_BEFORE]
    w2 = ws[W2]
    if before < tp[SSTHRESH] or tp[CWND] < w2:  # slow start, or w2 not reached yet
        return
    if before > w2 or w2 <= wp[P_ENGAGE_ABOVE] or ws[B] <= 0.0:
        ws[ARMED] = 0.0  # already above w2, below the high-speed regime, or an empty period
        return
    tp[CWND] = w2
    ws[NON_AGGR] = 1.0
    ws[SENT] = 0.0
    ws[DELIV0] = tp[DELIVERED]


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
    "w1",
    "w2",
    "tc",
    "b",
    "non_aggr",
    "sent",
    "armed",
    "cwnd_before",
    "prior_w1",
    "prior_w2",
    "prior_tc",
    "prior_b",
    "prior_non_aggr",
    "prior_sent",
    "prior_armed",
    "deliv0",
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
