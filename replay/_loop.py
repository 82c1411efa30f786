"""The replay event loop: the engine's half of every replay (source template).

This file is a *template*: :mod:`hscc_trace.replay.compile` copies its text into a small
generated module per algorithm, appends the bindings of the hook names used below (``init``,
``ssthresh``, ``cong_avoid``, ``on_ack`` …) to that algorithm's functions and compiles
``run_loop`` with ``numba.njit(cache=True)``. Imported as is, the names are bound to the default
hooks of :mod:`hscc_trace.replay._defaults` (``init``/``ssthresh``/``cong_avoid`` are missing:
every algorithm must provide them).

Per ACK, in the order of Linux ``tcp_ack`` (net/ipv4/tcp_input.c):

1. cwnd validation for the transmissions since the previous ACK (``tcp_cwnd_validate``):
   ``is_cwnd_limited`` / ``max_packets_out`` from the trace's flight vs the replayed cwnd;
2. the ACK's fields; RTT sample → min RTT, RFC 6298 srtt, round min → ``on_rtt_sample``;
   ``on_ack`` (every ACK);
3. congestion state DRIVEN BY THE TRACE (``state``, ``cong_event``, ``spurious_undo``): undo,
   recovery exit (cwnd = ssthresh, ``on_recovery_exit``), RTO (``ssthresh`` hook unless already
   reduced in this episode, cwnd = 1, ``on_rto``), entry into recovery (``ssthresh`` hook,
   PRR counters), ECN (``ssthresh`` hook, cwnd = min(cwnd, ssthresh), once per round);
4. round end (trace ``round_end``) → round min RTT / sample count → ``on_round_end``;
5. growth: in recovery PRR (flavor linux, RFC 6937 as in Linux ``tcp_cwnd_reduction``) or
   cwnd held at ssthresh (flavor rfc, RFC 6675 §5); otherwise ``cong_avoid(N)`` on ACKs that
   newly acknowledge data (Linux ``FLAG_DATA_ACKED``), N = newly acked + newly SACKed packets.
   An algorithm with a ``cong_control`` hook (Linux ``tcp_congestion_ops.cong_control``, e.g.
   BBR) replaces all of step 5 on every ACK, and the engine then leaves cwnd alone at recovery
   entry (rfc), recovery exit and ECN (Linux ``tcp_end_cwnd_reduction`` returns early for such
   modules; the RTO's cwnd = 1 of ``tcp_enter_loss`` still applies);
6. output row: cwnd, ssthresh, state, then the algorithm's signal slots.
"""

from __future__ import annotations

import math

from ._defaults import (  # noqa: F401
    cong_control,  # noqa: F401
    on_ack,
    on_recovery_exit,
    on_round_end,
    on_rto,
    on_rtt_sample,
    undo_cwnd,
)
from ._jit import jit
from .tp import *  # noqa: F401,F403

HAS_CONG_CONTROL = False  # rebound to True by the generated bindings when the algorithm has cong_control


@jit
def _current_ssthresh(tp, linux):
    """Linux ``tcp_current_ssthresh`` (remembered for undo): max(ssthresh, ¾·cwnd) outside a
    reduction; the RFC flavor remembers ssthresh itself."""
    if linux:
        return max(tp[SSTHRESH], math.floor(tp[CWND] / 2.0) + math.floor(tp[CWND] / 4.0))  # noqa: F405
    return tp[SSTHRESH]  # noqa: F405


def run_loop(ev, tp, st, p, sig_idx, out):  # noqa: C901 - one flat loop on purpose (compiled)
    n_ev = ev.shape[0]
    nsig = sig_idx.shape[0]
    mss = tp[MSS]
    linux = tp[FLAVOR] == LINUX  # noqa: F405
    init(st, p, tp)  # noqa: F821 - bound in the generated module
    suppressed = False  # flavor rfc + EXIT_ON_PARTIAL: local recovery ended before the trace's
    for i in range(n_ev):
        tp[NOW] = ev[i, E_T]  # noqa: F405
        tp[ACKS] += 1.0  # noqa: F405
        state = int(tp[STATE])  # noqa: F405
        cwnd_now = tp[CWND]  # noqa: F405

        # 1. tcp_cwnd_validate for what the sender transmitted since the previous ACK --------
        sent = ev[i, E_SENT]  # noqa: F405
        prior_flight = ev[i, E_PRIOR_FLIGHT]  # noqa: F405
        tp[SENT] = sent  # noqa: F405
        tp[PRIOR_FLIGHT] = prior_flight  # noqa: F405
        if sent > 0.0 or prior_flight >= cwnd_now - 1e-9:
            is_lim = prior_flight >= cwnd_now - 1e-9
            prev_ack = ev[i, E_PREV_ACK]  # noqa: F405
            packets_out = (ev[i, E_SND_MAX] - prev_ack) / mss  # noqa: F405
            if (
                prev_ack >= tp[CWND_USAGE_SEQ]
                or is_lim  # noqa: F405
                or (tp[IS_CWND_LIMITED] == 0.0 and packets_out > tp[MAX_PACKETS_OUT])
            ):  # noqa: F405
                tp[IS_CWND_LIMITED] = 1.0 if is_lim else 0.0  # noqa: F405
                tp[MAX_PACKETS_OUT] = packets_out  # noqa: F405
                tp[CWND_USAGE_SEQ] = ev[i, E_SND_MAX]  # noqa: F405
        if state == RECOVERY:  # noqa: F405
            tp[PRR_OUT] += sent  # noqa: F405

        # 2. the ACK's fields and its RTT sample -------------------------------------------------
        acked = ev[i, E_ACKED]  # noqa: F405
        sacked = ev[i, E_SACKED]  # noqa: F405
        tp[ACKED] = acked  # noqa: F405
        tp[SACKED] = sacked  # noqa: F405
        tp[DELIVERED] += acked + sacked  # noqa: F405
        tp[FLIGHT] = ev[i, E_FLIGHT]  # noqa: F405
        tp[PIPE] = ev[i, E_PIPE]  # noqa: F405
        tp[RWND] = ev[i, E_RWND]  # noqa: F405
        tp[ECE] = ev[i, E_ECE]  # noqa: F405
        tp[DUPACK] = ev[i, E_DUPACK]  # noqa: F405
        tp[SND_UNA] = ev[i, E_ACK]  # noqa: F405
        tp[SND_MAX] = ev[i, E_SND_MAX]  # noqa: F405
        tp[ROUND] = ev[i, E_ROUND]  # noqa: F405
        tp[ROUND_END] = ev[i, E_ROUND_END]  # noqa: F405
        if HAS_CONG_CONTROL:
            tp[RS_DELIVERED] = ev[i, E_RS_DELIVERED]  # noqa: F405
            tp[RS_INTERVAL] = ev[i, E_RS_INTERVAL]  # noqa: F405
            tp[RS_PRIOR_DELIVERED] = ev[i, E_RS_PRIOR_DELIVERED]  # noqa: F405
            tp[RS_LOSSES] = ev[i, E_RS_LOSSES]  # noqa: F405
            if acked + sacked > 0.0:
                tp[DELIVERED_TIME] = ev[i, E_T]  # noqa: F405
        evk = int(ev[i, E_EVENT])  # noqa: F405
        tp[EVENT] = evk  # noqa: F405
        rtt = ev[i, E_RTT]  # noqa: F405
        if rtt > 0.0:  # False for nan
            tp[RTT] = rtt  # noqa: F405
            tp[RTT_NEW] = 1.0  # noqa: F405
            if not (tp[MIN_RTT] <= rtt):  # noqa: F405 - nan-safe
                tp[MIN_RTT] = rtt  # noqa: F405
            if tp[SRTT] > 0.0:  # noqa: F405 - RFC 6298 §2.3
                tp[RTTVAR] = 0.75 * tp[RTTVAR] + 0.25 * abs(tp[SRTT] - rtt)  # noqa: F405
                tp[SRTT] = 0.875 * tp[SRTT] + 0.125 * rtt  # noqa: F405
            else:  # RFC 6298 §2.2
                tp[SRTT] = rtt  # noqa: F405
                tp[RTTVAR] = rtt / 2.0  # noqa: F405
            if not (tp[CUR_ROUND_MIN_RTT] <= rtt):  # noqa: F405
                tp[CUR_ROUND_MIN_RTT] = rtt  # noqa: F405
            tp[CUR_ROUND_SAMPLES] += 1.0  # noqa: F405
            on_rtt_sample(st, p, tp, rtt)
        else:
            tp[RTT_NEW] = 0.0  # noqa: F405
        on_ack(st, p, tp)

        # 3. congestion state, driven by the trace ------------------------------------------------
        ts = int(ev[i, E_STATE])  # noqa: F405
        if ts == OPEN:  # noqa: F405
            suppressed = False
        if ev[i, E_UNDO] > 0.0 and state != OPEN:  # noqa: F405 - Linux tcp_undo_cwnd_reduction
            tp[CWND] = undo_cwnd(st, p, tp)  # noqa: F405
            if tp[PRIOR_SSTHRESH] > tp[SSTHRESH]:  # noqa: F405
                tp[SSTHRESH] = tp[PRIOR_SSTHRESH]  # noqa: F405
            tp[CWND_CNT] = 0.0  # noqa: F405
            state = OPEN  # noqa: F405
        elif state == RECOVERY and (
            ts == OPEN
            or evk == EV_FAST_RETRANSMIT
            or evk == EV_SACK_RECOVERY  # noqa: F405
            or (not linux and tp[EXIT_ON_PARTIAL] > 0.0 and ev[i, E_DATA_ACKED] > 0.0)
        ):  # noqa: F405
            # end of recovery (Linux tcp_end_cwnd_reduction; RFC 6582 step 3 "full ACK";
            # RFC 5681 §3.2 step 6 for EXIT_ON_PARTIAL): deflate to ssthresh
            if tp[SSTHRESH] < 1e300 and not HAS_CONG_CONTROL:  # noqa: F405
                tp[CWND] = tp[SSTHRESH]  # noqa: F405
            state = OPEN  # noqa: F405
            if ts != OPEN:
                suppressed = evk != EV_FAST_RETRANSMIT and evk != EV_SACK_RECOVERY  # noqa: F405
            on_recovery_exit(st, p, tp)
        elif state == LOSS and ts == OPEN:  # noqa: F405 - Linux tcp_try_undo_recovery → Open
            state = OPEN  # noqa: F405

        if evk == EV_RTO or (ts == LOSS and state != LOSS):  # noqa: F405 - Linux tcp_enter_loss
            tp[STATE] = state  # noqa: F405
            if state == OPEN:  # noqa: F405 - reduce ssthresh only once per episode
                tp[PRIOR_SSTHRESH] = _current_ssthresh(tp, linux)  # noqa: F405
                tp[PRIOR_CWND] = tp[CWND]  # noqa: F405
                tp[EVENT] = EV_RTO  # noqa: F405
                tp[SSTHRESH] = ssthresh(st, p, tp)  # noqa: F405,F821
            tp[CWND] = 1.0  # noqa: F405 - packets in flight (0 after the timeout marks all lost) + 1
            tp[CWND_CNT] = 0.0  # noqa: F405
            state = LOSS  # noqa: F405
            tp[STATE] = state  # noqa: F405
            on_rto(st, p, tp)
        elif (
            (evk == EV_FAST_RETRANSMIT or evk == EV_SACK_RECOVERY or ts == RECOVERY)  # noqa: F405
            and state == OPEN
            and not suppressed
        ):  # noqa: F405 - Linux tcp_enter_recovery
            tp[PRIOR_SSTHRESH] = _current_ssthresh(tp, linux)  # noqa: F405
            tp[PRIOR_CWND] = tp[CWND]  # noqa: F405
            if evk < 0:
                tp[EVENT] = EV_FAST_RETRANSMIT  # noqa: F405
            tp[SSTHRESH] = ssthresh(st, p, tp)  # noqa: F405,F821
            tp[CWND_CNT] = 0.0  # noqa: F405
            tp[PRR_DELIVERED] = 0.0  # noqa: F405
            tp[PRR_OUT] = 0.0  # noqa: F405
            state = RECOVERY  # noqa: F405
            if not linux and not HAS_CONG_CONTROL:  # RFC 6675 §5 step 4.2: cwnd = ssthresh
                tp[CWND] = tp[SSTHRESH]  # noqa: F405
        elif evk == EV_ECN and state == OPEN and tp[LAST_ECN_ROUND] != tp[ROUND]:  # noqa: F405
            # RFC 3168 §6.1.2: react at most once per round; Linux enters CWR (PRR down to
            # ssthresh) — modelled as an immediate reduction to ssthresh.
            tp[PRIOR_SSTHRESH] = _current_ssthresh(tp, linux)  # noqa: F405
            tp[PRIOR_CWND] = tp[CWND]  # noqa: F405
            tp[SSTHRESH] = ssthresh(st, p, tp)  # noqa: F405,F821
            if not HAS_CONG_CONTROL:
                tp[CWND] = min(tp[CWND], tp[SSTHRESH])  # noqa: F405
            tp[CWND_CNT] = 0.0  # noqa: F405
            tp[LAST_ECN_ROUND] = tp[ROUND]  # noqa: F405
        tp[STATE] = state  # noqa: F405

        # 4. round end ---------------------------------------------------------------------------
        if ev[i, E_ROUND_END] > 0.0:  # noqa: F405
            tp[ROUND_MIN_RTT] = tp[CUR_ROUND_MIN_RTT]  # noqa: F405
            tp[ROUND_SAMPLES] = tp[CUR_ROUND_SAMPLES]  # noqa: F405
            tp[CUR_ROUND_MIN_RTT] = math.nan  # noqa: F405
            tp[CUR_ROUND_SAMPLES] = 0.0  # noqa: F405
            on_round_end(st, p, tp)

        # 5. window growth / reduction ------------------------------------------------------------
        n = acked + sacked
        if HAS_CONG_CONTROL:  # Linux tcp_cong_control: ca_ops->cong_control on every ACK
            cong_control(st, p, tp, n)
        elif state == RECOVERY:  # noqa: F405
            if linux and n > 0.0:  # Linux tcp_cwnd_reduction (PRR, RFC 6937)
                tp[PRR_DELIVERED] += n  # noqa: F405
                pipe = tp[PIPE]  # noqa: F405
                delta = tp[SSTHRESH] - pipe  # noqa: F405
                if delta < 0.0:
                    sndcnt = math.ceil(tp[SSTHRESH] * tp[PRR_DELIVERED] / tp[PRIOR_CWND] - 1e-9) - tp[PRR_OUT]  # noqa: F405
                else:
                    sndcnt = max(tp[PRR_DELIVERED] - tp[PRR_OUT], n)  # noqa: F405
                    if ev[i, E_DATA_ACKED] > 0.0:  # noqa: F405 - FLAG_SND_UNA_ADVANCED
                        sndcnt += 1.0
                    sndcnt = min(delta, sndcnt)
                if tp[PRR_OUT] == 0.0:  # noqa: F405 - force the fast retransmit
                    sndcnt = max(sndcnt, 1.0)
                else:
                    sndcnt = max(sndcnt, 0.0)
                tp[CWND] = pipe + sndcnt  # noqa: F405
        elif ev[i, E_DATA_ACKED] > 0.0:  # noqa: F405
            cong_avoid(st, p, tp, n)  # noqa: F821

        # 6. output ------------------------------------------------------------------------------
        out[i, 0] = tp[CWND]  # noqa: F405
        out[i, 1] = tp[SSTHRESH]  # noqa: F405
        out[i, 2] = state
        for k in range(nsig):
            out[i, 3 + k] = st[sig_idx[k]]
    return n_ev
