"""The replay event loop: the engine's half of every replay (source template).

This file is a *template*: :mod:`hscc_trace.replay.compile` copies its text into a small
generated module per algorithm, appends the bindings of the hook names used below (``init``,
``ssthresh``, ``cong_avoid``, ``on_ack`` …) to that algorithm's functions and compiles
``run_loop`` with ``numba.njit(cache=True)``. Imported as is, the names are bound to the default
hooks of :mod:`hscc_trace.replay._defaults`, and ``init``/``ssthresh``/``cong_avoid`` (which
every algorithm must provide) to None: the file is valid Python that lint and types can read,
but only the generated modules run.

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
6. output row: cwnd, ssthresh (nan while infinite: never set) and the float signals into
   ``out`` (``nans[k]`` set once column k holds a nan); the state and the enum/bool signals
   as label indices into ``codes`` (:func:`_label_index`; the signals by the generated
   ``write_signals``, which reads each by name) — so that the table's float columns
   are zero-copy views of ``out`` alone, and nothing is left to convert but bools
   (``engine._frame``).
"""

from __future__ import annotations

import math

from ._defaults import (
    cong_control,
    on_ack,
    on_recovery_exit,
    on_round_end,
    on_rto,
    on_rtt_sample,
    undo_cwnd,
    write_signals,
)
from ._jit import jit
from .tp import (
    ACKED,
    ACKS,
    CUR_ROUND_MIN_RTT,
    CUR_ROUND_SAMPLES,
    CWND,
    CWND_CNT,
    CWND_USAGE_SEQ,
    DELIVERED,
    DELIVERED_TIME,
    DUPACK,
    E_ACK,
    E_ACKED,
    E_CA_RTT,
    E_DATA_ACKED,
    E_DUPACK,
    E_ECE,
    E_EVENT,
    E_FLIGHT,
    E_PIPE,
    E_PREV_ACK,
    E_PRIOR_FLIGHT,
    E_ROUND,
    E_ROUND_END,
    E_RS_DELIVERED,
    E_RS_INTERVAL,
    E_RS_LOSSES,
    E_RS_PRIOR_DELIVERED,
    E_RTT,
    E_RWND,
    E_SACKED,
    E_SENT,
    E_SND_MAX,
    E_STATE,
    E_T,
    E_UNDO,
    ECE,
    EV_ECN,
    EV_FAST_RETRANSMIT,
    EV_RTO,
    EV_SACK_RECOVERY,
    EVENT,
    EXIT_ON_PARTIAL,
    FLAVOR,
    FLIGHT,
    IS_CWND_LIMITED,
    LAST_ECN_ROUND,
    LINUX,
    LOSS,
    MAX_PACKETS_OUT,
    MIN_RTT,
    MSS,
    NOW,
    OPEN,
    PIPE,
    PRIOR_CWND,
    PRIOR_FLIGHT,
    PRIOR_SSTHRESH,
    PRR_DELIVERED,
    PRR_OUT,
    RECOVERY,
    ROUND,
    ROUND_END,
    ROUND_MIN_RTT,
    ROUND_SAMPLES,
    RS_DELIVERED,
    RS_INTERVAL,
    RS_LOSSES,
    RS_PRIOR_DELIVERED,
    RTT,
    RTT_NEW,
    RTTVAR,
    RWND,
    SACKED,
    SENT,
    SND_MAX,
    SND_UNA,
    SRTT,
    SSTHRESH,
    STATE,
)

HAS_CONG_CONTROL = False  # rebound to True by the generated bindings when the algorithm has cong_control
# the required hooks: every algorithm provides them, and the generated bindings bind them
init = ssthresh = cong_avoid = None


@jit
def _current_ssthresh(tp, linux):
    """Linux ``tcp_current_ssthresh`` (remembered for undo): max(ssthresh, ¾·cwnd) outside a
    reduction; the RFC flavor remembers ssthresh itself."""
    if linux:
        return max(tp[SSTHRESH], math.floor(tp[CWND] / 2.0) + math.floor(tp[CWND] / 4.0))
    return tp[SSTHRESH]


@jit
def _label_index(v, top):
    """A code slot as the index of its label (``top`` ≥ 0, the last index): nan and codes < 0
    → 0, codes above ``top`` → ``top``, fractions truncated; a bool (``top`` < 0): 1 where
    non-zero (nan included)."""
    if top < 0.0:
        return 1 if v != 0.0 else 0
    if v > 0.0:
        return int(min(v, top))
    return 0


def run_loop(ev, tp, st, p, tops, out, codes, nans):  # one flat loop on purpose (compiled)
    n_ev = ev.shape[0]
    mss = tp[MSS]
    linux = tp[FLAVOR] == LINUX
    init(st, p, tp)
    suppressed = False  # flavor rfc + EXIT_ON_PARTIAL: local recovery ended before the trace's
    # flavor linux: the CWR state an ECN echo puts the sender in (Linux tcp_enter_cwr), until
    # snd_una passes high_seq (snd_max when it began); the trace's state stays open meanwhile
    cwr = False
    cwr_high = 0.0
    for i in range(n_ev):
        tp[NOW] = ev[i, E_T]
        tp[ACKS] += 1.0
        state = int(tp[STATE])
        cwnd_now = tp[CWND]

        # 1. tcp_cwnd_validate for what the sender transmitted since the previous ACK --------
        sent = ev[i, E_SENT]
        prior_flight = ev[i, E_PRIOR_FLIGHT]
        tp[SENT] = sent
        tp[PRIOR_FLIGHT] = prior_flight
        if sent > 0.0 or prior_flight >= cwnd_now - 1e-9:
            is_lim = prior_flight >= cwnd_now - 1e-9
            prev_ack = ev[i, E_PREV_ACK]
            packets_out = (ev[i, E_SND_MAX] - prev_ack) / mss
            if (
                prev_ack >= tp[CWND_USAGE_SEQ]
                or is_lim
                or (tp[IS_CWND_LIMITED] == 0.0 and packets_out > tp[MAX_PACKETS_OUT])
            ):
                tp[IS_CWND_LIMITED] = 1.0 if is_lim else 0.0
                tp[MAX_PACKETS_OUT] = packets_out
                tp[CWND_USAGE_SEQ] = ev[i, E_SND_MAX]
        if state == RECOVERY or cwr:
            tp[PRR_OUT] += sent

        # 2. the ACK's fields and its RTT sample -------------------------------------------------
        acked = ev[i, E_ACKED]
        sacked = ev[i, E_SACKED]
        tp[ACKED] = acked
        tp[SACKED] = sacked
        tp[DELIVERED] += acked + sacked
        tp[FLIGHT] = ev[i, E_FLIGHT]
        tp[PIPE] = ev[i, E_PIPE]
        tp[RWND] = ev[i, E_RWND]
        tp[ECE] = ev[i, E_ECE]
        tp[DUPACK] = ev[i, E_DUPACK]
        tp[SND_UNA] = ev[i, E_ACK]
        tp[SND_MAX] = ev[i, E_SND_MAX]
        tp[ROUND] = ev[i, E_ROUND]
        tp[ROUND_END] = ev[i, E_ROUND_END]
        if HAS_CONG_CONTROL:
            tp[RS_DELIVERED] = ev[i, E_RS_DELIVERED]
            tp[RS_INTERVAL] = ev[i, E_RS_INTERVAL]
            tp[RS_PRIOR_DELIVERED] = ev[i, E_RS_PRIOR_DELIVERED]
            tp[RS_LOSSES] = ev[i, E_RS_LOSSES]
            if acked + sacked > 0.0:
                tp[DELIVERED_TIME] = ev[i, E_T]
        evk = int(ev[i, E_EVENT])
        tp[EVENT] = evk
        # flavor linux: the sample Linux hands congestion control (a newly SACKed segment's when
        # there is one, tcp_clean_rtx_queue's ca_rtt_us); rfc: the RFC 6298 (Karn) sample
        rtt = ev[i, E_CA_RTT] if linux else ev[i, E_RTT]
        if rtt > 0.0:  # False for nan
            tp[RTT] = rtt
            tp[RTT_NEW] = 1.0
            if not (tp[MIN_RTT] <= rtt):  # nan-safe
                tp[MIN_RTT] = rtt
            if tp[SRTT] > 0.0:  # RFC 6298 §2.3
                tp[RTTVAR] = 0.75 * tp[RTTVAR] + 0.25 * abs(tp[SRTT] - rtt)
                tp[SRTT] = 0.875 * tp[SRTT] + 0.125 * rtt
            else:  # RFC 6298 §2.2
                tp[SRTT] = rtt
                tp[RTTVAR] = rtt / 2.0
            if not (tp[CUR_ROUND_MIN_RTT] <= rtt):
                tp[CUR_ROUND_MIN_RTT] = rtt
            tp[CUR_ROUND_SAMPLES] += 1.0
            on_rtt_sample(st, p, tp, rtt)
        else:
            tp[RTT_NEW] = 0.0
        on_ack(st, p, tp)

        # 3. congestion state, driven by the trace ------------------------------------------------
        ts = int(ev[i, E_STATE])
        if cwr and tp[SND_UNA] > cwr_high:
            # Linux tcp_fastretrans_alert, TCP_CA_CWR: an ACK above high_seq ends the reduction
            # (tcp_end_cwnd_reduction: cwnd = ssthresh) and the sender is open again
            if tp[SSTHRESH] < 1e300:
                tp[CWND] = tp[SSTHRESH]
            cwr = False
        if ts == OPEN:
            suppressed = False
        if ev[i, E_UNDO] > 0.0 and state != OPEN:  # Linux tcp_undo_cwnd_reduction
            tp[CWND] = undo_cwnd(st, p, tp)
            if tp[PRIOR_SSTHRESH] > tp[SSTHRESH]:
                tp[SSTHRESH] = tp[PRIOR_SSTHRESH]
            tp[CWND_CNT] = 0.0
            state = OPEN
        elif state == RECOVERY and (
            ts == OPEN
            or evk == EV_FAST_RETRANSMIT
            or evk == EV_SACK_RECOVERY
            or (not linux and tp[EXIT_ON_PARTIAL] > 0.0 and ev[i, E_DATA_ACKED] > 0.0)
        ):
            # end of recovery (Linux tcp_end_cwnd_reduction; RFC 6582 step 3 "full ACK";
            # RFC 5681 §3.2 step 6 for EXIT_ON_PARTIAL): deflate to ssthresh
            if tp[SSTHRESH] < 1e300 and not HAS_CONG_CONTROL:
                tp[CWND] = tp[SSTHRESH]
            state = OPEN
            if ts != OPEN:
                suppressed = evk != EV_FAST_RETRANSMIT and evk != EV_SACK_RECOVERY
            on_recovery_exit(st, p, tp)
        elif state == LOSS and ts == OPEN:  # Linux tcp_try_undo_recovery → Open
            state = OPEN

        if evk == EV_RTO or (ts == LOSS and state != LOSS):  # Linux tcp_enter_loss
            tp[STATE] = state
            if state == OPEN:  # reduce ssthresh only once per episode
                tp[PRIOR_SSTHRESH] = _current_ssthresh(tp, linux)
                tp[PRIOR_CWND] = tp[CWND]
                tp[EVENT] = EV_RTO
                tp[SSTHRESH] = ssthresh(st, p, tp)
            tp[CWND] = 1.0  # packets in flight (0 after the timeout marks all lost) + 1
            tp[CWND_CNT] = 0.0
            cwr = False
            state = LOSS
            tp[STATE] = state
            on_rto(st, p, tp)
        elif (
            (evk == EV_FAST_RETRANSMIT or evk == EV_SACK_RECOVERY or ts == RECOVERY)
            and state == OPEN
            and not suppressed
        ):  # Linux tcp_enter_recovery
            if evk < 0:
                tp[EVENT] = EV_FAST_RETRANSMIT
            if not cwr:  # (from CWR the reduction in progress goes on: tcp_in_cwnd_reduction)
                tp[PRIOR_SSTHRESH] = _current_ssthresh(tp, linux)
                tp[PRIOR_CWND] = tp[CWND]
                tp[SSTHRESH] = ssthresh(st, p, tp)
                tp[CWND_CNT] = 0.0
                tp[PRR_DELIVERED] = 0.0
                tp[PRR_OUT] = 0.0
            cwr = False
            state = RECOVERY
            if not linux and not HAS_CONG_CONTROL:  # RFC 6675 §5 step 4.2: cwnd = ssthresh
                tp[CWND] = tp[SSTHRESH]
        elif (
            state == OPEN
            and not cwr
            and (
                (evk == EV_ECN and tp[LAST_ECN_ROUND] != tp[ROUND])
                or (linux and not HAS_CONG_CONTROL and tp[ECE] > 0.0)
            )
        ):
            # RFC 3168 §6.1.2: react at most once per round. Flavor linux: any ECE while open (Linux
            # tcp_try_to_open → tcp_enter_cwr; the trace's ECN episodes end when snd_una reaches
            # high_seq, the kernel's CWR only when an ACK passes it, so the ECE of the next one may
            # come before the trace's next episode): the sender enters CWR
            # (tcp_enter_cwr → tcp_init_cwnd_reduction: high_seq = snd_nxt, prior_cwnd, PRR
            # counters reset, ssthresh from the algorithm) and reduces by PRR until it ends; rfc:
            # an immediate reduction to ssthresh.
            tp[PRIOR_SSTHRESH] = _current_ssthresh(tp, linux)
            tp[PRIOR_CWND] = tp[CWND]
            tp[SSTHRESH] = ssthresh(st, p, tp)
            if linux and not HAS_CONG_CONTROL:
                cwr = True
                cwr_high = tp[SND_MAX]
                tp[PRR_DELIVERED] = 0.0
                tp[PRR_OUT] = 0.0
            elif not HAS_CONG_CONTROL:
                tp[CWND] = min(tp[CWND], tp[SSTHRESH])
            tp[CWND_CNT] = 0.0
            tp[LAST_ECN_ROUND] = tp[ROUND]
        tp[STATE] = state

        # 4. round end ---------------------------------------------------------------------------
        if ev[i, E_ROUND_END] > 0.0:
            tp[ROUND_MIN_RTT] = tp[CUR_ROUND_MIN_RTT]
            tp[ROUND_SAMPLES] = tp[CUR_ROUND_SAMPLES]
            tp[CUR_ROUND_MIN_RTT] = math.nan
            tp[CUR_ROUND_SAMPLES] = 0.0
            on_round_end(st, p, tp)

        # 5. window growth / reduction ------------------------------------------------------------
        n = acked + sacked
        if HAS_CONG_CONTROL:  # Linux tcp_cong_control: ca_ops->cong_control on every ACK
            cong_control(st, p, tp, n)
        elif state == RECOVERY or cwr:
            if linux and n > 0.0:  # Linux tcp_cwnd_reduction (PRR, RFC 6937)
                tp[PRR_DELIVERED] += n
                pipe = tp[PIPE]
                delta = tp[SSTHRESH] - pipe
                if delta < 0.0:
                    sndcnt = math.ceil(tp[SSTHRESH] * tp[PRR_DELIVERED] / tp[PRIOR_CWND] - 1e-9) - tp[PRR_OUT]
                else:
                    sndcnt = max(tp[PRR_DELIVERED] - tp[PRR_OUT], n)
                    if ev[i, E_DATA_ACKED] > 0.0:  # FLAG_SND_UNA_ADVANCED
                        sndcnt += 1.0
                    sndcnt = min(delta, sndcnt)
                if tp[PRR_OUT] == 0.0:  # force the fast retransmit
                    sndcnt = max(sndcnt, 1.0)
                else:
                    sndcnt = max(sndcnt, 0.0)
                tp[CWND] = pipe + sndcnt
        elif ev[i, E_DATA_ACKED] > 0.0:
            cong_avoid(st, p, tp, n)

        # 6. output ------------------------------------------------------------------------------
        v = tp[CWND]
        out[i, 0] = v
        if v != v:
            nans[0] = 1
        v = tp[SSTHRESH]
        if not math.isfinite(v):  # infinite: not set
            v = math.nan
            nans[1] = 1
        out[i, 1] = v
        codes[i, 0] = _label_index(float(state), tops[0])
        write_signals(st, i, out, codes, nans, tops)
    return n_ev
