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
from enum import IntEnum

from hscc_trace.replay import helpers as H
from hscc_trace.replay._jit import jit
from hscc_trace.replay.interface import Algorithm, Param, Signal
from hscc_trace.replay.state import Field, choice_names
from hscc_trace.replay.tp import EV_RTO

from . import reno as R


class Increase(IntEnum):
    """Parameters ``m1`` / ``m2``: the increase rule of a model (Table 1)."""

    CR = 0  # k·RTT² per RTT (eq. 15)
    CI = 1  # k′·RTT per RTT (eq. 16)
    RENO = 2  # 1 packet per RTT


class Decrease(IntEnum):
    """Parameter ``decrease``: the window decrease on a congestion event."""

    WESTWOOD = 0  # eq. (17)
    RENO = 1  # eq. (4), halving


# field ``mode``: the Increase rule applied (RENO also before the first RTT sample), or slow start
CR, CI, RENO = float(Increase.CR), float(Increase.CI), float(Increase.RENO)
SS = 3.0


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
    st.mode = SS
    st.k = 1.0 / (p.rtt_ref * p.rtt_ref)
    st.k_prime = 1.0 / p.rtt_ref
    st.inc_rtt = 0.0
    st.qdelay = 0.0
    st.rtt_used = math.nan
    st.queue = False


@jit
def ssthresh(st, p, tp):
    if tp.event == EV_RTO:  # Reno behaviour on a timeout
        return R.ssthresh(st, p, tp)
    if p.decrease == Decrease.WESTWOOD:  # eq. (17)
        return max(H.westwood_decrease(tp.cwnd, tp.min_rtt, tp.rtt), 2.0)
    return max(tp.cwnd / 2.0, 2.0)  # eq. (4)


@jit
def cong_avoid(st, p, tp, n):
    g = H.growth_gate(tp, n, p.L)
    if g == H.HELD:
        return
    if g == H.SLOW_START:
        st.mode = SS
        return
    rtt = H.rtt_by_source(p.rtt_source, tp)
    rmin = tp.min_rtt
    st.rtt_used = rtt
    if not (rtt > 0.0 and rmin > 0.0):  # no delay information yet: Reno
        st.mode = RENO
        st.inc_rtt = 1.0
        H.additive_increase(tp, n, 1.0)
        return
    queue = rtt > rmin + p.tol
    st.queue = queue
    st.qdelay = max(rtt - rmin, 0.0)
    st.k_prime = 1.0 / (p.rtt_ref + st.qdelay)  # eq. (14)
    mode = float(p.m2 if queue else p.m1)
    st.mode = mode
    inc = per_rtt_increment(mode, rtt, st.k, st.k_prime)
    st.inc_rtt = inc
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
        choices=choice_names(Increase),
    ),
    Param(
        "m2",
        "",
        "ci",
        "HRF-TCP §5.2 (Dec + M1 + M2 notation), eq. (16)",
        "increase when packets are buffered (Model II)",
        kind="choice",
        choices=choice_names(Increase),
    ),
    Param(
        "decrease",
        "",
        "westwood",
        "HRF-TCP eq. (17) (westwood) / eq. (4) (reno halving)",
        "window decrease on a congestion event",
        kind="choice",
        choices=choice_names(Decrease),
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

_STATE = (
    Field("mode", "", "CR, CI, RENO or SS: the increase mode of the last growth opportunity"),
    Field("k", "1/s²", "CR constant k = 1/RTTref² (eq. 7)"),
    Field("k_prime", "1/s", "CI constant k′ = 1/(RTTref + qdelay) (eq. 14)"),
    Field("inc_rtt", "packets", "increment per RTT of the current mode (Table 1)"),
    Field("qdelay", "s", "observed queuing delay RTT − RTTmin"),
    Field("rtt_used", "s", "RTT of the last mode decision"),
    Field("queue", "", "RTT > RTTmin + tol (Model II) at the last decision", "bool"),
)

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
