"""HRF-TCP and its comparison rows — Ogura, Nemoto, Su, Katto, IEICE Trans. Inf. & Syst. E95-D(2), 2012
(papers/hrf-tcp-paper.txt §2.2-2.4, §3, §4 eqs. 3-8, 14-17, §5.2).

HRF ("W+CR+CI", §4 and §5.2), per ACK of N packets in congestion avoidance:

* no queue, ``RTT ≤ RTTmin + tol`` (Model I): CR, eq. (15) ``cwnd += k·RTT²`` per RTT, i.e.
  ``cwnd += k·RTT²·N/cwnd`` per ACK, with ``k = 1/RTTref²`` (eq. 7);
* a queue, ``RTT > RTTmin + tol`` (Model II): CI, eq. (16) ``cwnd += k′·RTT`` per RTT, i.e.
  ``cwnd += k′·RTT·N/cwnd``, with ``k′ = 1/(RTTref + s/B)`` (eq. 14), the queuing delay s/B
  observed as ``RTT − RTTmin``;
* loss: eq. (17) ``cwnd = max(RTTmin/RTT · cwnd, cwnd/2)`` (TCP-Westwood, eq. 2;
  helpers.westwood_decrease).

The §5.2 rows are presets of the same hooks (``Dec + M1 + M2``): ``hrf-cr`` (CR: Reno halving
eq. 4, CR in both models, eq. 3), ``hrf-ci`` (CI: halving, eq. 5 in both models),
``hrf-w-cr-reno`` and ``hrf-w-cr-cr``. Reno's increment is 1 packet per RTT (Table 1).

Slow start is Reno's (the paper modifies only the congestion-avoidance increase and the
decrease); on an RTO every row behaves as Reno (ssthresh from Reno's hook, cwnd = 1).

Interpretations (docs/algorithms/hrf.md): "RTT" is the latest RTT sample (switch
``rtt_source``); with no RTT sample yet the increase is Reno's; the increment of the CI mode in
Model I (no queue) uses eq. (14) with s/B = 0, which is eq. (8).
"""

from __future__ import annotations

import math

from hscc_trace.replay import helpers as H
from hscc_trace.replay._jit import jit
from hscc_trace.replay.interface import Algorithm, Param, Signal
from hscc_trace.replay.tp import CWND, EV_RTO, EVENT, MIN_RTT, RTT

from . import reno as R

# --- state slots -------------------------------------------------------------------------------
MODE = 0  # 0 CR, 1 CI, 2 Reno, 3 slow start (mode of the last growth opportunity)
K = 1  # 1/s² — CR constant k = 1/RTTref² (eq. 7)
K_PRIME = 2  # 1/s — CI constant k′ = 1/(RTTref + qdelay) (eq. 14)
INC_RTT = 3  # packets — increment per RTT of the current mode (Table 1)
QDELAY = 4  # s — observed queuing delay RTT − RTTmin
RTT_USED = 5  # s — RTT of the last mode decision
QUEUE = 6  # 1 if RTT > RTTmin + tol (Model II) at the last decision
NSTATE = 7

# --- parameter slots ---------------------------------------------------------------------------
P_RTT_REF = 0  # s — RTT of the Reno flow k and k′ are matched to
P_TOL = 1  # s — tolerance of "RTT = RTTmin"
P_M1 = 2  # increase without queue: 0 cr, 1 ci, 2 reno
P_M2 = 3  # increase with a queue: 0 cr, 1 ci, 2 reno
P_DECREASE = 4  # 0 westwood (eq. 17), 1 reno (eq. 4)
P_RTT_SOURCE = 5  # index into helpers.RTT_SOURCES: 0 round_min, 1 srtt, 2 last
P_L = 6  # packets — slow-start ABC limit (rfc)
NPARAMS = 7

CR, CI, RENO, SS = 0.0, 1.0, 2.0, 3.0


@jit
def per_rtt_increment(mode, rtt, k, k_prime):
    """Table 1: packets per RTT — CR k·RTT², CI k′·RTT, Reno 1."""
    if mode == CR:
        return k * rtt * rtt
    if mode == CI:
        return k_prime * rtt
    return 1.0


@jit
def init(st, p, tp):
    st[MODE] = SS
    st[K] = 1.0 / (p[P_RTT_REF] * p[P_RTT_REF])
    st[K_PRIME] = 1.0 / p[P_RTT_REF]
    st[INC_RTT] = 0.0
    st[QDELAY] = 0.0
    st[RTT_USED] = math.nan
    st[QUEUE] = 0.0


@jit
def ssthresh(st, p, tp):
    if tp[EVENT] == EV_RTO:  # Reno behaviour on a timeout
        return R.ssthresh(st, p, tp)
    if p[P_DECREASE] == 0.0:  # eq. (17)
        return max(H.westwood_decrease(tp[CWND], tp[MIN_RTT], tp[RTT]), 2.0)
    return max(tp[CWND] / 2.0, 2.0)  # eq. (4)


@jit
def cong_avoid(st, p, tp, n):
    g = H.growth_gate(tp, n, p[P_L])
    if g == H.HELD:
        return
    if g == H.SLOW_START:
        st[MODE] = SS
        return
    rtt = H.rtt_by_source(p[P_RTT_SOURCE], tp)
    rmin = tp[MIN_RTT]
    st[RTT_USED] = rtt
    if not (rtt > 0.0 and rmin > 0.0):  # no delay information yet: Reno
        st[MODE] = RENO
        st[INC_RTT] = 1.0
        H.additive_increase(tp, n, 1.0)
        return
    queue = rtt > rmin + p[P_TOL]
    st[QUEUE] = 1.0 if queue else 0.0
    st[QDELAY] = max(rtt - rmin, 0.0)
    st[K_PRIME] = 1.0 / (p[P_RTT_REF] + st[QDELAY])  # eq. (14)
    mode = p[P_M2] if queue else p[P_M1]
    st[MODE] = mode
    inc = per_rtt_increment(mode, rtt, st[K], st[K_PRIME])
    st[INC_RTT] = inc
    H.additive_increase(tp, n, inc)  # per-RTT amount spread over the window's ACKs


_PARAMS = (
    Param(
        "rtt_ref",
        "s",
        0.040,
        "HRF-TCP eqs. (7), (14); §5 (k, k′ for a Reno flow of RTT = 40 ms)",
        "RTT_Reno,min that k = 1/RTTref² and k′ = 1/(RTTref + qdelay) are matched to",
        lo=1e-6,
        hi=100.0,
    ),
    Param(
        "tol",
        "s",
        0.001,
        "docs/algorithms/hrf.md#decisions (tol = 1 ms)",
        "a queue exists when RTT > RTTmin + tol (eqs. 15/16 conditions)",
        lo=0.0,
        hi=10.0,
    ),
    Param(
        "m1",
        "",
        "cr",
        "HRF-TCP §5.2 (Dec + M1 + M2 notation), eq. (15)",
        "increase when the bottleneck is vacant (Model I)",
        kind="choice",
        choices=("cr", "ci", "reno"),
    ),
    Param(
        "m2",
        "",
        "ci",
        "HRF-TCP §5.2 (Dec + M1 + M2 notation), eq. (16)",
        "increase when packets are buffered (Model II)",
        kind="choice",
        choices=("cr", "ci", "reno"),
    ),
    Param(
        "decrease",
        "",
        "westwood",
        "HRF-TCP eq. (17) (westwood) / eq. (4) (reno halving)",
        "window decrease on a congestion event",
        kind="choice",
        choices=("westwood", "reno"),
    ),
    Param(
        "rtt_source",
        "",
        "last",
        "docs/algorithms/hrf.md (interpretation: the paper's observed RTT)",
        "RTT of the mode decision: the last sample, the last round's min, or srtt",
        kind="choice",
        choices=H.RTT_SOURCES,
    ),
    Param(
        "L",
        "packets",
        2.0,
        "RFC 3465 §2.3 (Reno slow start, L = 2 SMSS)",
        "flavor rfc: at most L packets of slow-start growth per ACK",
        lo=0.0,
    ),
)

_SIGNALS = (
    Signal(
        "mode",
        "mode",
        "",
        "increase mode at the last growth opportunity (§4)",
        kind="enum",
        labels=("CR", "CI", "Reno", "slow_start"),
    ),
    Signal("k", "k", "1/s²", "CR constant k = 1/RTTref² (eq. 7)"),
    Signal("k_prime", "k_prime", "1/s", "CI constant k′ = 1/(RTTref + RTT − RTTmin) (eq. 14)"),
    Signal("inc_per_rtt", "inc_rtt", "packets", "window increment per RTT of the current mode (Table 1)"),
    Signal("qdelay", "qdelay", "s", "observed queuing delay RTT − RTTmin"),
)

_STATE = ("mode", "k", "k_prime", "inc_rtt", "qdelay", "rtt_used", "queue")

_FLAVOR_DOC = (
    "rfc: the paper's per-RTT increments spread over the ACKs (byte counting); linux: the same in "
    "the Linux TCP core (cwnd-limited check, tcp_slow_start, PRR)"
)


def _row(name: str, summary: str, defaults: dict[str, str], reduces_to: str = "") -> Algorithm:
    return Algorithm(
        name=name,
        summary=summary,
        citation="Ogura et al., HRF-TCP, IEICE E95-D(2) 2012, §2.2-2.4 eqs. (2)-(5), §4 eqs. (7), (14)-(17), §5.2",
        state=_STATE,
        params=_PARAMS,
        signals=_SIGNALS,
        default_flavor="linux",
        flavor_doc=_FLAVOR_DOC,
        defaults=defaults,
        doc_page="algorithms/hrf.md",
        reduces_to=reduces_to,
    )


ALGORITHMS = (
    _row("hrf", "HRF-TCP (W+CR+CI): CR without queue, CI with a queue, Westwood decrease", {}),
    _row("hrf-cr", "CR (HRF paper row): k·RTT² per RTT, Reno halving", {"decrease": "reno", "m1": "cr", "m2": "cr"}),
    _row("hrf-ci", "CI (HRF paper row): k′·RTT per RTT, Reno halving", {"decrease": "reno", "m1": "ci", "m2": "ci"}),
    _row(
        "hrf-w-cr-reno",
        "W+CR+Reno (HRF paper row): CR without queue, Reno with a queue, Westwood decrease",
        {"m2": "reno"},
        reduces_to="reno",  # Reno's growth whenever a queue exists, and Reno's halving while the queue ≥ RTTmin
    ),
    _row("hrf-w-cr-cr", "W+CR+CR (HRF paper row): CR always, Westwood decrease", {"m2": "cr"}),
)
