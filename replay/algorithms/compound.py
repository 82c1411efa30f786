"""Compound TCP — Tan, Song, Zhang, Sridharan, PFLDnet 2006 (papers/compound-tcp-paper.txt §III).

The equation images of the paper are missing; docs/algorithms/compound.md#decisions states the
reading used here:

* §III-A eq. (1): ``win = min(cwnd + dwnd, awnd)`` — the sending window; ``cwnd`` (here
  ``cwnd_loss``) is the loss-based Reno component, ``dwnd`` the delay-based component and
  ``awnd`` the receiver's advertised window. The engine's window (``tp.cwnd``, the ``cwnd``
  output column) is ``win``.
* §III-A eq. (2): in congestion avoidance ``cwnd_loss += N/win`` per ACK of N packets; slow
  start is Reno's with ``dwnd = 0`` (§III-A, "we initially set dwnd to zero if the connection
  is in slow-start state").
* §III-B eqs. (3)-(5), once per round (skipped when the round had ≤ 2 samples; no sampling or
  update during recovery — flavor linux: outside TCP_CA_Open, so in Disorder too, judged on the
  state before the ACK's state machine as the kernel's pkts_acked / in_ack_event see it), with
  ``RTT`` per the ``rtt_source`` parameter — ``round_min`` (default:
  the smallest sample of the round, as Vegas, which §III-B says the scheme derives from) or
  ``srtt`` (the "exponentially smoothed current RTT, sRTT" of §III-B's text; the engine's RFC 6298
  srtt at the round end): ``diff = win·(1 − baseRTT/RTT)``;
  ``diff < γ`` → ``dwnd += max(α·win^k − 1, 0)``; ``diff ≥ γ`` → ``dwnd = max(dwnd − ζ·diff, 0)``.
* Loss (§III-B eq. (5), third line): ``cwnd_loss = cwnd_loss/2``,
  ``dwnd = max(win·(1 − β) − cwnd_loss_old/2, 0)``.
* RTO (§III-B, last paragraph): ``dwnd = 0``, the delay component is off until congestion
  avoidance. baseRTT stays the smallest RTT observed since the connection started (§III-B: "when
  the connection is started, baseRTT is updated by the minimal RTT that has been observed so
  far"; the paper resets nothing else at an RTO).
* The delay component "only kicks in when win is larger than" ``low_window`` (§III-B, last
  sentence; 41 in §IV's simulations): the per-round update of eq. (5) lines 1-2 runs only while
  ``win > low_window``; at or below it dwnd is held, so the whole window grows by 1 packet per
  round (eq. (2)) and halves on loss (eq. (5) line 3 with β = 1/2) — standard TCP behaviour,
  as the paragraph asks ("CTCP also revert to standard TCP behavior when the window is small").
  Flavor linux compares the window the TCP core sends with, whole packets (``⌊win⌋``, as
  ``snd_cwnd``): a window of 41.4 is at the low window of 41, not above it.
  The loss rule always applies: the whole window goes to ``win·(1 − β)``, whether or not the
  reduced window is above ``low_window``.
* γ auto-tuning (§III-C; draft-sridharan-tcpm-ctcp): at each loss with a valid measurement
  ``γ ← (1 − λ)·γ + λ·¾·diff_reno``, clamped to [γ_min, γ_max], where
  ``diff_reno = cwnd_loss·(1 − baseRTT/RTT)`` is the Reno component's backlog measured at the
  last round end.

Interpretations (flagged in docs/algorithms/compound.md): the congestion-event ssthresh is the
whole reduced window ``cwnd_loss/2 + dwnd`` (so recovery deflates to the CTCP window, not to its
loss part); each round measurement feeds at most one γ update; with ``awnd`` on, dwnd is also
kept ≤ awnd − cwnd_loss so that an unused delay window does not build up behind a receive-window
limit.
"""

from __future__ import annotations

import math
from enum import IntEnum

from numba.extending import overload

from hscc_trace.replay import helpers as H
from hscc_trace.replay._jit import jit
from hscc_trace.replay.interface import Algorithm, Param, Signal
from hscc_trace.replay.state import Field, choice_names
from hscc_trace.replay.tp import EV_RTO, LINUX, OPEN


class RttSource(IntEnum):
    """Parameter ``rtt_source``: the RTT of diff at a round end."""

    ROUND_MIN = 0  # the round's smallest sample (Vegas' minRTT)
    SRTT = 1  # the engine's RFC 6298 srtt


@jit
def set_win(st, p, tp):
    """win = min(cwnd_loss + dwnd, awnd); tp.cwnd = win.

    Only called in congestion avoidance: a window that shrank below ssthresh lowers ssthresh with
    it, so that the flow does not fall back into slow start."""
    win = st.cwnd_loss + st.dwnd
    if p.awnd and tp.rwnd > 0.0:
        awnd = max(tp.rwnd, 1.0)
        if win > awnd:
            st.dwnd = max(min(st.dwnd, awnd - st.cwnd_loss), 0.0)
            win = awnd
    st.win = win
    tp.cwnd = win
    if win < tp.ssthresh:  # a retreating dwnd / awnd cap stays in congestion avoidance (Linux tcp_vegas)
        tp.ssthresh = win


@jit
def dwnd_update(dwnd, win, diff, gamma, alpha, k, zeta):
    """§III-B eq. (5), first two lines: the delay window after one round."""
    if diff < gamma:
        return dwnd + max(alpha * win**k - 1.0, 0.0)
    return max(dwnd - zeta * diff, 0.0)


@jit
def gamma_update(gamma, diff_reno, lam, gmin, gmax):
    """§III-C γ auto-tuning: ``(1 − λ)·γ + λ·¾·diff_reno`` clamped to [gmin, gmax]."""
    g = (1.0 - lam) * gamma + lam * 0.75 * diff_reno
    return min(max(g, gmin), gmax)


def _lambda(params):
    """Parameter ``lambda`` (``p.lambda`` does not parse: a Python keyword)."""
    return getattr(params, "lambda")


@overload(_lambda)
def _lambda_compiled(params):
    """Compiled, the record's field by its literal name."""
    return lambda params: params["lambda"]


@jit
def init(st, p, tp):
    st.cwnd_loss = tp.cwnd
    st.dwnd = 0.0
    st.win = tp.cwnd
    st.diff = 0.0
    st.gamma = p.gamma
    st.diff_reno = math.nan
    st.diff_reno_valid = False
    st.base_rtt = math.nan
    st.rnd_min = math.nan
    st.rnd_n = 0
    st.prior_loss = tp.cwnd
    st.prior_dwnd = 0.0
    st.active = False
    st.sampling = True
    st.left_out = False


@jit
def _open_before_ack(st, tp):
    """The sender was open before this ACK's state machine: no sampling or delay update during
    recovery (§III-B). Flavor linux: TCP_CA_Open exactly — not Disorder either, where the
    previous ACK left SACKed, lost or retransmitted data (``tcp_set_ca_state`` to Disorder in
    ``tcp_try_keep_open``); pkts_acked and in_ack_event run before ``tcp_fastretrans_alert``,
    so it is the previous ACK's state that counts."""
    if tp.state != OPEN:
        return False
    return not (tp.flavor == LINUX and st.left_out)


@jit
def on_rtt_sample(st, p, tp, rtt):
    if not (st.base_rtt <= rtt):
        st.base_rtt = rtt
    if _open_before_ack(st, tp):  # no sampling during recovery
        if not (st.rnd_min <= rtt):
            st.rnd_min = rtt
        st.rnd_n += 1


@jit
def on_ack(st, p, tp):
    st.sampling = _open_before_ack(st, tp)
    st.left_out = H.linux_disorder(tp)  # for the next ACK (before its state machine)


@jit
def on_round_end(st, p, tp):
    rtt = st.rnd_min if p.rtt_source == RttSource.ROUND_MIN else tp.srtt
    nsamp = st.rnd_n
    st.rnd_min = math.nan
    st.rnd_n = 0
    linux_held = tp.flavor == LINUX and not st.sampling  # Disorder or recovery before this ACK
    if linux_held or tp.state != OPEN or tp.cwnd < tp.ssthresh:  # recovery, or slow start
        st.active = False
        return
    if nsamp <= p.min_samples or not (rtt > 0.0) or not (st.base_rtt > 0.0):
        return
    q = 1.0 - st.base_rtt / rtt
    st.diff = st.win * q
    st.diff_reno = st.cwnd_loss * q
    st.diff_reno_valid = True
    # (flavor linux: the window the TCP core sends with is whole packets, ⌊win⌋ — snd_cwnd)
    if (math.floor(st.win) if tp.flavor == LINUX else st.win) > p.low_window:
        st.active = True
        if tp.flavor == LINUX and st.diff < st.gamma and not H.linux_cwnd_limited(tp):
            return  # linux: no growth of an unused window
        st.dwnd = dwnd_update(st.dwnd, st.win, st.diff, st.gamma, p.alpha, p.k, p.zeta)
    else:
        st.active = False
    set_win(st, p, tp)


@jit
def ssthresh(st, p, tp):
    st.prior_loss = st.cwnd_loss
    st.prior_dwnd = st.dwnd
    if tp.event != EV_RTO and p.gamma_tuning and st.diff_reno_valid:
        st.gamma = gamma_update(st.gamma, st.diff_reno, _lambda(p), p.gamma_min, p.gamma_max)
        st.diff_reno_valid = False
    win = st.win
    half = st.cwnd_loss / 2.0
    st.dwnd = max(win * (1.0 - p.beta) - half, 0.0)
    st.cwnd_loss = max(half, 2.0)
    st.win = st.cwnd_loss + st.dwnd
    return st.win


@jit
def on_recovery_exit(st, p, tp):
    # the engine set cwnd = ssthresh = cwnd_loss + dwnd; apply awnd
    set_win(st, p, tp)


@jit
def on_rto(st, p, tp):
    st.cwnd_loss = tp.cwnd  # 1 packet, slow start
    st.dwnd = 0.0
    st.win = tp.cwnd
    st.rnd_min = math.nan
    st.rnd_n = 0
    st.diff_reno_valid = False
    st.active = False


@jit
def undo_cwnd(st, p, tp):
    st.cwnd_loss = max(st.cwnd_loss, st.prior_loss)
    st.dwnd = max(st.dwnd, st.prior_dwnd)
    st.win = st.cwnd_loss + st.dwnd
    return max(tp.cwnd, st.win)


@jit
def cong_avoid(st, p, tp, n):
    g = H.growth_gate(tp, n, p.L)
    if g == H.HELD:
        return
    if g == H.SLOW_START:  # slow start: Reno's, dwnd = 0
        st.cwnd_loss = tp.cwnd
        st.dwnd = 0.0
        st.win = tp.cwnd
        return
    if abs(tp.cwnd - st.win) > 1e-9:  # the engine moved the window (e.g. ECN, undo): follow it
        st.cwnd_loss = max(tp.cwnd - st.dwnd, 1.0)
    st.cwnd_loss += n / max(st.win, 1.0)  # eq. (2): +1/win per packet
    set_win(st, p, tp)


_PARAMS = (
    Param("alpha", "", 0.125, "CTCP §III-C (α = 1/8)", "delay-window increase factor α"),
    Param(
        "beta",
        "",
        0.5,
        "CTCP §III-C (β = 1/2)",
        "multiplicative decrease β of the whole window",
        lo=0.0,
        hi=1.0,
    ),
    Param("k", "", 0.75, "CTCP §III-C (k = 0.75, HSTCP-like aggressiveness)", "exponent k of α·win^k"),
    Param(
        "zeta",
        "",
        1.0,
        "CTCP §III-B eq. (5); docs/algorithms/compound.md#decisions (ζ = 1)",
        "how fast dwnd retreats per packet of backlog ζ",
    ),
    Param(
        "gamma",
        "packets",
        30.0,
        "CTCP §III-C; docs/algorithms/compound.md#decisions (γ starts at 30)",
        "initial early-congestion threshold γ (fixed when gamma_tuning is off)",
        lo=0.0,
    ),
    Param(
        "low_window",
        "packets",
        41.0,
        "CTCP §III-B/§IV (41 in the simulations); IETF drafts say 38",
        "the per-round dwnd update (eq. 5 lines 1-2) runs only while win > low_window; at or below it "
        "dwnd is held (standard TCP behaviour of the whole window)",
        lo=0.0,
    ),
    Param(
        "gamma_tuning",
        "",
        True,
        "CTCP §III-C; draft-sridharan-tcpm-ctcp; docs/algorithms/compound.md#decisions",
        "γ auto-tuning from the Reno component's backlog at each loss",
        kind="bool",
    ),
    Param(
        "lambda",
        "",
        0.25,
        "docs/algorithms/compound.md#decisions (γ auto-tuning, λ = 1/4)",
        "smoothing weight λ of γ updates",
        lo=0.0,
        hi=1.0,
    ),
    Param(
        "gamma_min",
        "packets",
        5.0,
        "docs/algorithms/compound.md#decisions (γ clamped to [5, 30])",
        "lower clamp of the tuned γ",
        lo=0.0,
    ),
    Param(
        "gamma_max",
        "packets",
        30.0,
        "docs/algorithms/compound.md#decisions (γ clamped to [5, 30])",
        "upper clamp of the tuned γ",
        lo=0.0,
    ),
    Param(
        "min_samples",
        "",
        2.0,
        "docs/algorithms/compound.md#decisions (a round with ≤ 2 samples is skipped)",
        "a round with at most this many RTT samples does not update dwnd",
        kind="int",
        lo=0,
    ),
    Param(
        "awnd",
        "",
        True,
        "CTCP §III-A eq. (1) (win = min(cwnd + dwnd, awnd))",
        "cap the window by the receiver's advertised window",
        kind="bool",
    ),
    Param(
        "L",
        "packets",
        2.0,
        "RFC 3465 §2.3 (Reno slow start, L = 2 SMSS)",
        "flavor rfc: at most L packets of slow-start growth per ACK",
        lo=0.0,
    ),
    Param(
        "rtt_source",
        "",
        "round_min",
        'CTCP §III-B: srtt = the text\'s "exponentially smoothed current RTT, sRTT"; round_min = the '
        'Vegas minRTT of the round (§III-B: "derived from TCP Vegas"; Linux tcp_vegas.c)',
        "RTT of diff = win·(1 − baseRTT/RTT) at a round end: the round's smallest sample (default: "
        "filters delayed-ACK and jitter noise, reacts within the round; docs/algorithms/compound.md) "
        "or the engine's RFC 6298 srtt (the paper's text)",
        kind="choice",
        choices=choice_names(RttSource),
    ),
)

_SIGNALS = (
    Signal("cwnd_loss", "cwnd_loss", "packets", "loss-based component cwnd (§III-A)"),
    Signal("dwnd", "dwnd", "packets", "delay-based component dwnd (§III-B)"),
    Signal("win", "win", "packets", "sending window min(cwnd + dwnd, awnd) (§III-A eq. 1)"),
    Signal(
        "diff",
        "diff",
        "packets",
        "backlog estimate win·(1 − baseRTT/RTT) at the last round end, RTT per rtt_source (§III-B)",
    ),
    Signal("gamma", "gamma", "packets", "early-congestion threshold γ (§III-C, auto-tuned)"),
    Signal("diff_reno", "diff_reno", "packets", "Reno component's backlog cwnd·(1 − baseRTT/RTT) (γ tuning)"),
    Signal(
        "delay_active", "active", "", "delay component active (win > low_window, congestion avoidance)", kind="bool"
    ),
)

_STATE = (
    Field("cwnd_loss", "packets", "loss-based (Reno) component"),
    Field("dwnd", "packets", "delay-based component"),
    Field("win", "packets", "sending window min(cwnd_loss + dwnd, awnd)"),
    Field("diff", "packets", "backlog estimate win·(1 − baseRTT/RTT) at the last round end"),
    Field("gamma", "packets", "early-congestion threshold γ"),
    Field("diff_reno", "packets", "the Reno component's backlog cwnd_loss·(1 − baseRTT/RTT), last round end"),
    Field("diff_reno_valid", "", "diff_reno is a fresh measurement not yet used by a γ update", "bool"),
    Field("base_rtt", "s", "baseRTT, min sample since the connection started"),
    Field("rnd_min", "s", "min sample of the current round (samples taken outside recovery)"),
    Field("rnd_n", "", "samples of the current round (outside recovery)", "int"),
    Field("prior_loss", "packets", "cwnd_loss before the last reduction (undo)"),
    Field("prior_dwnd", "packets", "dwnd before the last reduction (undo)"),
    Field("active", "", "the delay component was active at the last round end", "bool"),
    Field("sampling", "", "open before this ACK's state machine (flavor linux: not Disorder either)", "bool"),
    Field("left_out", "", "the last ACK left the sender in Disorder (helpers.linux_disorder)", "bool"),
)

ALGORITHMS = (
    Algorithm(
        name="compound",
        reduces_to="reno",  # §III-A: dwnd stays 0 while win ≤ low_window, and halves with it
        summary="Compound TCP: Reno window plus a scalable delay window, with γ auto-tuning",
        citation="Tan et al., Compound TCP, PFLDnet 2006, §III-A (win), §III-B eq. (5) (dwnd), §III-C (k, γ)",
        state=_STATE,
        params=_PARAMS,
        signals=_SIGNALS,
        default_flavor="linux",
        flavor_doc="rfc: the paper's model with byte counting; linux: the same rules in the Linux TCP core "
        "(cwnd-limited check, tcp_slow_start, PRR in recovery)",
        doc_page="algorithms/compound.md",
    ),
)
