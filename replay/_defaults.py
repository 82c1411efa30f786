"""Default bodies of the optional hooks (bound by the generated loop when a module omits one).

See :data:`hscc_trace.replay.interface.HOOKS` for the contract of each hook.
"""

from __future__ import annotations

from ._jit import jit


@jit
def on_ack(st, p, tp):
    """Every ACK: nothing by default."""


@jit
def on_rtt_sample(st, p, tp, rtt):
    """Each RTT sample (s): nothing by default (the engine keeps min RTT, srtt, round min)."""


@jit
def on_round_end(st, p, tp):
    """The ACK that closes an RTT round: nothing by default."""


@jit
def on_recovery_exit(st, p, tp):
    """After the engine set cwnd = ssthresh at the end of recovery: nothing by default."""


@jit
def on_rto(st, p, tp):
    """After the engine set ssthresh (via the ssthresh hook) and cwnd on an RTO: nothing."""


@jit
def cwnd_event(st, p, tp, event):
    """Linux ``ca_ops->cwnd_event`` (``CA_EVENT_TX_START``, ``CA_EVENT_CWND_RESTART``): nothing."""


@jit
def cong_control(st, p, tp, n):
    """Every ACK instead of the engine's PRR / cong_avoid: unused unless the module defines it
    (the generated loop then sets HAS_CONG_CONTROL)."""


@jit
def undo_cwnd(st, p, tp):
    """Linux ``tcp_reno_undo_cwnd``: the window before the (spurious) reduction, max(cwnd, prior_cwnd)."""
    return max(tp.cwnd, tp.prior_cwnd)


@jit
def write_signals(st, i, out, codes, nans, tops):
    """Row ``i`` of the algorithm's signals into ``out`` / ``codes``: generated per algorithm
    (:mod:`hscc_trace.replay.compile`, from its signal declarations); nothing here."""
