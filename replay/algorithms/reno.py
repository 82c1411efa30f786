"""Reno and NewReno — RFC 5681, RFC 6582, RFC 3465, RFC 6928; Linux ``tcp_reno``.

Two declarations share these hooks:

* ``reno`` (default flavor ``linux``) and ``newreno`` (default flavor ``rfc``).

Flavor ``rfc`` (RFC 5681 §3.1–3.2 with appropriate byte counting, RFC 3465 §2.3):

* slow start while cwnd < ssthresh: ``cwnd += min(N, L)`` per ACK of N new packets, L = 2;
* congestion avoidance: ``cwnd += N/cwnd`` (one packet per window of acknowledged data);
* congestion event: ``ssthresh = max(FlightSize/2, 2)`` (RFC 5681 eq. 4) with
  ``FlightSize = min(flight, cwnd)`` (helpers.flight_size: the trace's outstanding packets,
  bounded by the replayed cwnd, since in an open-loop replay the traced sender's flight can
  exceed the replayed window); during recovery the engine holds cwnd at ssthresh (RFC 6675 §5) and sets
  ``cwnd = ssthresh`` when recovery ends;
* ``recovery_exit``: ``full_ack`` (RFC 6582 NewReno: recovery ends when the recovery point is
  acknowledged — the trace's episode end) or ``new_ack`` (RFC 5681 §3.2 step 6, plain Reno: the
  first ACK of new data deflates the window and ends recovery);
* RTO: ``cwnd = 1`` (loss window, RFC 5681 §3.1), slow start.

Flavor ``linux`` (net/ipv4/tcp_cong.c ``tcp_reno_cong_avoid``/``tcp_reno_ssthresh`` with the
TCP core of net/ipv4/tcp_input.c, which the engine models):

* no growth unless ``tcp_is_cwnd_limited`` (the last flight filled cwnd, or in slow start cwnd
  < 2·max_packets_out) — helpers.linux_cwnd_limited;
* slow start ``tcp_slow_start`` (cwnd += acked, capped at ssthresh, the rest carried into
  congestion avoidance); congestion avoidance ``tcp_cong_avoid_ai`` with the ``snd_cwnd_cnt``
  segment counter (+1 packet per cwnd packets acknowledged);
* ``ssthresh = max(cwnd/2, 2)`` from cwnd (integer halving), PRR inside recovery (engine),
  ``cwnd = ssthresh`` at recovery exit, RTO → in-flight + 1, undo on a proven spurious
  retransmission (``tcp_reno_undo_cwnd``: max(cwnd, prior_cwnd)).
"""

from __future__ import annotations

import math
from enum import IntEnum

from hscc_trace.replay import helpers as H
from hscc_trace.replay._jit import jit
from hscc_trace.replay.interface import Algorithm, Param, Signal
from hscc_trace.replay.state import Field, choice_names
from hscc_trace.replay.tp import LINUX


class RecoveryExit(IntEnum):
    """Parameter ``recovery_exit`` (flavor rfc): when recovery ends."""

    FULL_ACK = 0  # NewReno: the full ACK of the recovery point (the trace's episode end)
    NEW_ACK = 1  # Reno: the first ACK of new data


class Phase(IntEnum):
    """State ``phase``: the growth phase at the last growth opportunity (signal labels)."""

    SLOW_START = 0
    CONG_AVOID = 1


@jit
def init(st, p, tp):
    st.limited = True
    st.phase = Phase.SLOW_START
    if tp.flavor != LINUX and p.recovery_exit == RecoveryExit.NEW_ACK:
        tp.exit_on_partial = 1.0


@jit
def ssthresh(st, p, tp):
    if tp.flavor == LINUX:  # tcp_reno_ssthresh: max(snd_cwnd >> 1, 2)
        return max(math.floor(tp.cwnd / 2.0), 2.0)
    return max(H.flight_size(tp) / 2.0, 2.0)  # RFC 5681 eq. 4, FlightSize ≤ the replayed cwnd


@jit
def cong_avoid(st, p, tp, n):
    r = H.reno_cong_avoid(tp, n, p.L)
    if r == H.HELD:
        st.limited = False
    else:
        st.limited = True
        st.phase = Phase.SLOW_START if r == H.SLOW_START else Phase.CONG_AVOID


_PARAMS = (
    Param(
        "L",
        "packets",
        2.0,
        "RFC 3465 §2.3 (limit L = 2 SMSS)",
        "flavor rfc: at most L packets of slow-start growth per ACK",
        lo=0.0,
        hi=1e6,
    ),
    Param(
        "recovery_exit",
        "",
        "new_ack",
        "RFC 5681 §3.2 step 6 (new_ack); RFC 6582 §3.2 step 3 (full_ack)",
        "flavor rfc: when recovery ends — first ACK of new data (Reno) or the full ACK of the recovery "
        "point (NewReno); flavor linux always follows the trace's episode end",
        kind="choice",
        choices=choice_names(RecoveryExit),
    ),
)
_SIGNALS = (
    Signal(
        "cwnd_limited",
        "limited",
        "",
        "growth allowed on the last ACK of new data (linux: tcp_is_cwnd_limited)",
        kind="bool",
    ),
    Signal(
        "phase",
        "phase",
        "",
        "slow start or congestion avoidance at the last growth opportunity",
        kind="enum",
        labels=choice_names(Phase),
    ),
)
_STATE = (
    Field("limited", "", "the last growth opportunity was allowed (cwnd-limited), else held", "bool"),
    Field("phase", "", "Phase at the last growth opportunity", "int"),
)

ALGORITHMS = (
    Algorithm(
        name="reno",
        summary="Reno: slow start, additive increase, halving on loss (Linux tcp_reno by default)",
        citation="RFC 5681 §3.1-3.2, RFC 3465 §2.3, RFC 6928; Linux net/ipv4/tcp_cong.c tcp_reno",
        state=_STATE,
        params=_PARAMS,
        signals=_SIGNALS,
        default_flavor="linux",
        flavor_doc="rfc: RFC 5681 Reno with byte counting; linux: Linux tcp_reno in the Linux TCP core "
        "(segment counter, cwnd-limited check, PRR, undo)",
    ),
    Algorithm(
        name="newreno",
        summary="NewReno: Reno whose recovery ends only at the full ACK of the recovery point",
        citation="RFC 6582 §3, RFC 5681 §3.1, RFC 3465 §2.3 (L = 2)",
        state=_STATE,
        params=_PARAMS,
        signals=_SIGNALS,
        default_flavor="rfc",
        flavor_doc="rfc: RFC 6582 NewReno with byte counting; linux: Linux tcp_reno in the Linux TCP core",
        defaults={"recovery_exit": "full_ack"},
        default_set=False,  # its Linux flavor is Linux reno itself (Linux recovery is NewReno's)
    ),
)
