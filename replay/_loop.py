"""The replay event loop: the engine's half of every replay (source template).

This file is a *template*: :mod:`hscc_trace.replay.compile` copies its text into a small
generated module per algorithm, appends the bindings of the hook names used below (``init``,
``ssthresh``, ``cong_avoid``, ``on_ack`` …) to that algorithm's functions and compiles
``run_loop`` with ``numba.njit(cache=True)``. Imported as is, the names are bound to the default
hooks of :mod:`hscc_trace.replay._defaults`, and ``init``/``ssthresh``/``cong_avoid`` (which
every algorithm must provide) to None: the file is valid Python that lint and types can read,
but only the generated modules run.

Per ACK, in the order of Linux ``tcp_ack`` (net/ipv4/tcp_input.c):

0. flavor linux, when the sender transmitted new data with nothing in flight since the
   previous ACK (``E_IDLE`` > 0): the idle restart of ``tcp_slow_start_after_idle_check``
   (``tcp_cwnd_restart``, unless the algorithm has ``cong_control``) and ``CA_EVENT_TX_START``;
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
    cwnd_event,
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
    CA_EVENT_CWND_RESTART,
    CA_EVENT_TX_START,
    E_ACK,
    E_ACKED,
    E_CA_RTT,
    E_DATA_ACKED,
    E_DUPACK,
    E_ECE,
    E_EVENT,
    E_FLIGHT,
    E_IDLE,
    E_PACKETS_OUT,
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
    EV_ECN,
    EV_FAST_RETRANSMIT,
    EV_RTO,
    EV_SACK_RECOVERY,
    LINUX,
    LOSS,
    OPEN,
    RECOVERY,
)

HAS_CONG_CONTROL = False  # rebound to True by the generated bindings when the algorithm has cong_control
# the required hooks: every algorithm provides them, and the generated bindings bind them
init = ssthresh = cong_avoid = None


@jit
def _current_ssthresh(tp, linux):
    """Linux ``tcp_current_ssthresh`` (remembered for undo): max(ssthresh, ¾·cwnd) outside a
    reduction; the RFC flavor remembers ssthresh itself."""
    if linux:
        return max(tp.ssthresh, math.floor(tp.cwnd / 2.0) + math.floor(tp.cwnd / 4.0))
    return tp.ssthresh


@jit
def _rto(tp):
    """Linux ``icsk_rto`` (s) from the engine's srtt / rttvar: ``__tcp_set_rto`` (include/net/
    tcp.h) = srtt + rttvar_us, where rttvar_us (net/ipv4/tcp_input.c ``tcp_rtt_estimator``) is
    4·mdev floored at ``tcp_rto_min`` (TCP_RTO_MIN, 200 ms), then ``tcp_bound_rto`` caps it at
    TCP_RTO_MAX (120 s); before any RTT sample TCP_TIMEOUT_INIT (1 s)."""
    if not (tp.srtt > 0.0):
        return 1.0
    return min(tp.srtt + max(4.0 * tp.rttvar, 0.2), 120.0)


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
    linux = tp.flavor == LINUX
    init(st, p, tp)
    suppressed = False  # flavor rfc + EXIT_ON_PARTIAL: local recovery ended before the trace's
    # flavor linux: the CWR state an ECN echo puts the sender in (Linux tcp_enter_cwr), until
    # snd_una passes high_seq (snd_max when it began); the trace's state stays open meanwhile
    cwr = False
    cwr_high = 0.0
    for i in range(n_ev):
        tp.now = ev[i, E_T]
        tp.acks += 1.0
        state = int(tp.state)
        cwnd_now = tp.cwnd

        # 0. a transmission after idle (flavor linux) ----------------------------------------------
        idle = ev[i, E_IDLE]
        tp.idle = idle
        if linux and idle > 0.0:
            # tcp_slow_start_after_idle_check (include/net/tcp.h; sysctl tcp_slow_start_after_idle
            # = 1, the default): nothing in flight and no cong_control hook → if now − lsndtime >
            # icsk_rto, tcp_cwnd_restart (net/ipv4/tcp_output.c)
            rto = _rto(tp)
            if not HAS_CONG_CONTROL and idle > rto:
                cwnd_event(st, p, tp, CA_EVENT_CWND_RESTART)
                if state == OPEN and not cwr:  # tcp_current_ssthresh
                    tp.ssthresh = _current_ssthresh(tp, linux)
                c = math.floor(tp.cwnd + 1e-9)  # (snd_cwnd, whole packets)
                restart = min(math.floor(tp.iw + 1e-9), c)  # min(tcp_init_cwnd, cwnd)
                delta = idle - rto
                while delta > 0.0 and c > restart:  # halve once per RTO elapsed
                    c = math.floor(c / 2.0)
                    delta -= rto
                tp.cwnd = max(c, restart)
                cwnd_now = tp.cwnd
            cwnd_event(st, p, tp, CA_EVENT_TX_START)  # tcp_event_data_sent, packets in flight 0

        # 1. tcp_cwnd_validate for what the sender transmitted since the previous ACK --------
        sent = ev[i, E_SENT]
        prior_flight = ev[i, E_PRIOR_FLIGHT]
        tp.sent = sent
        tp.prior_flight = prior_flight
        # (Linux tcp_write_xmit sends whole packets: the window it fills is snd_cwnd, ⌊cwnd⌋)
        whole = math.floor(cwnd_now + 1e-9)
        if sent > 0.0 or prior_flight >= whole - 1e-9:
            is_lim = prior_flight >= whole - 1e-9
            prev_ack = ev[i, E_PREV_ACK]
            packets_out = ev[i, E_PACKETS_OUT]
            if (
                prev_ack >= tp.cwnd_usage_seq
                or is_lim
                or (tp.is_cwnd_limited == 0.0 and packets_out > tp.max_packets_out)
            ):
                tp.is_cwnd_limited = 1.0 if is_lim else 0.0
                tp.max_packets_out = packets_out
                tp.cwnd_usage_seq = ev[i, E_SND_MAX]
        if state == RECOVERY or cwr:
            tp.prr_out += sent

        # 2. the ACK's fields and its RTT sample -------------------------------------------------
        acked = ev[i, E_ACKED]
        sacked = ev[i, E_SACKED]
        tp.acked = acked
        tp.sacked = sacked
        tp.delivered += acked + sacked
        tp.flight = ev[i, E_FLIGHT]
        tp.pipe = ev[i, E_PIPE]
        tp.rwnd = ev[i, E_RWND]
        tp.ece = ev[i, E_ECE]
        tp.dupack = ev[i, E_DUPACK]
        tp.snd_una = ev[i, E_ACK]
        tp.snd_max = ev[i, E_SND_MAX]
        tp.round = ev[i, E_ROUND]
        tp.round_end = ev[i, E_ROUND_END]
        if HAS_CONG_CONTROL:
            tp.rs_delivered = ev[i, E_RS_DELIVERED]
            tp.rs_interval = ev[i, E_RS_INTERVAL]
            tp.rs_prior_delivered = ev[i, E_RS_PRIOR_DELIVERED]
            tp.rs_losses = ev[i, E_RS_LOSSES]
            if acked + sacked > 0.0:
                tp.delivered_time = ev[i, E_T]
        evk = int(ev[i, E_EVENT])
        tp.event = evk
        # flavor linux: the sample Linux hands congestion control (a newly SACKed segment's when
        # there is one, tcp_clean_rtx_queue's ca_rtt_us); rfc: the RFC 6298 (Karn) sample
        rtt = ev[i, E_CA_RTT] if linux else ev[i, E_RTT]
        if rtt > 0.0:  # False for nan
            tp.rtt = rtt
            tp.rtt_new = 1.0
            if not (tp.min_rtt <= rtt):  # nan-safe
                tp.min_rtt = rtt
            if tp.srtt > 0.0:  # RFC 6298 §2.3
                tp.rttvar = 0.75 * tp.rttvar + 0.25 * abs(tp.srtt - rtt)
                tp.srtt = 0.875 * tp.srtt + 0.125 * rtt
            else:  # RFC 6298 §2.2
                tp.srtt = rtt
                tp.rttvar = rtt / 2.0
            if not (tp.cur_round_min_rtt <= rtt):
                tp.cur_round_min_rtt = rtt
            tp.cur_round_samples += 1.0
            on_rtt_sample(st, p, tp, rtt)
        else:
            tp.rtt_new = 0.0
        on_ack(st, p, tp)

        # 3. congestion state, driven by the trace ------------------------------------------------
        ts = int(ev[i, E_STATE])
        if cwr and tp.snd_una > cwr_high:
            # Linux tcp_fastretrans_alert, TCP_CA_CWR: an ACK above high_seq ends the reduction
            # (tcp_end_cwnd_reduction: cwnd = ssthresh) and the sender is open again
            if tp.ssthresh < 1e300:
                tp.cwnd = tp.ssthresh
            cwr = False
        if ts == OPEN:
            suppressed = False
        if ev[i, E_UNDO] > 0.0 and state != OPEN:  # Linux tcp_undo_cwnd_reduction
            tp.cwnd = undo_cwnd(st, p, tp)
            if tp.prior_ssthresh > tp.ssthresh:
                tp.ssthresh = tp.prior_ssthresh
            tp.cwnd_cnt = 0.0
            state = OPEN
        elif state == RECOVERY and (
            ts == OPEN
            or evk == EV_FAST_RETRANSMIT
            or evk == EV_SACK_RECOVERY
            or (not linux and tp.exit_on_partial > 0.0 and ev[i, E_DATA_ACKED] > 0.0)
        ):
            # end of recovery (Linux tcp_end_cwnd_reduction; RFC 6582 step 3 "full ACK";
            # RFC 5681 §3.2 step 6 for EXIT_ON_PARTIAL): deflate to ssthresh
            if tp.ssthresh < 1e300 and not HAS_CONG_CONTROL:
                tp.cwnd = tp.ssthresh
            state = OPEN
            if ts != OPEN:
                suppressed = evk != EV_FAST_RETRANSMIT and evk != EV_SACK_RECOVERY
            on_recovery_exit(st, p, tp)
        elif state == LOSS and ts == OPEN:  # Linux tcp_try_undo_recovery → Open
            state = OPEN

        if evk == EV_RTO or (ts == LOSS and state != LOSS):  # Linux tcp_enter_loss
            tp.state = state
            if state == OPEN:  # reduce ssthresh only once per episode
                tp.prior_ssthresh = _current_ssthresh(tp, linux)
                tp.prior_cwnd = tp.cwnd
                tp.event = EV_RTO
                tp.ssthresh = ssthresh(st, p, tp)
            tp.cwnd = 1.0  # packets in flight (0 after the timeout marks all lost) + 1
            tp.cwnd_cnt = 0.0
            cwr = False
            state = LOSS
            tp.state = state
            on_rto(st, p, tp)
        elif (
            (evk == EV_FAST_RETRANSMIT or evk == EV_SACK_RECOVERY or ts == RECOVERY)
            and state == OPEN
            and not suppressed
        ):  # Linux tcp_enter_recovery
            if evk < 0:
                tp.event = EV_FAST_RETRANSMIT
            if not cwr:  # (from CWR the reduction in progress goes on: tcp_in_cwnd_reduction)
                tp.prior_ssthresh = _current_ssthresh(tp, linux)
                tp.prior_cwnd = tp.cwnd
                tp.ssthresh = ssthresh(st, p, tp)
                tp.cwnd_cnt = 0.0
                tp.prr_delivered = 0.0
                tp.prr_out = 0.0
            cwr = False
            state = RECOVERY
            if not linux and not HAS_CONG_CONTROL:  # RFC 6675 §5 step 4.2: cwnd = ssthresh
                tp.cwnd = tp.ssthresh
        elif (
            state == OPEN
            and not cwr
            and ((evk == EV_ECN and tp.last_ecn_round != tp.round) or (linux and not HAS_CONG_CONTROL and tp.ece > 0.0))
        ):
            # RFC 3168 §6.1.2: react at most once per round. Flavor linux: any ECE while open (Linux
            # tcp_try_to_open → tcp_enter_cwr; the trace's ECN episodes end when snd_una reaches
            # high_seq, the kernel's CWR only when an ACK passes it, so the ECE of the next one may
            # come before the trace's next episode): the sender enters CWR
            # (tcp_enter_cwr → tcp_init_cwnd_reduction: high_seq = snd_nxt, prior_cwnd, PRR
            # counters reset, ssthresh from the algorithm) and reduces by PRR until it ends; rfc:
            # an immediate reduction to ssthresh.
            tp.prior_ssthresh = _current_ssthresh(tp, linux)
            tp.prior_cwnd = tp.cwnd
            tp.ssthresh = ssthresh(st, p, tp)
            if linux and not HAS_CONG_CONTROL:
                cwr = True
                cwr_high = tp.snd_max
                tp.prr_delivered = 0.0
                tp.prr_out = 0.0
            elif not HAS_CONG_CONTROL:
                tp.cwnd = min(tp.cwnd, tp.ssthresh)
            tp.cwnd_cnt = 0.0
            tp.last_ecn_round = tp.round
        tp.state = state

        # 4. round end ---------------------------------------------------------------------------
        if ev[i, E_ROUND_END] > 0.0:
            tp.round_min_rtt = tp.cur_round_min_rtt
            tp.round_samples = tp.cur_round_samples
            tp.cur_round_min_rtt = math.nan
            tp.cur_round_samples = 0.0
            on_round_end(st, p, tp)

        # 5. window growth / reduction ------------------------------------------------------------
        n = acked + sacked
        if HAS_CONG_CONTROL:  # Linux tcp_cong_control: ca_ops->cong_control on every ACK
            cong_control(st, p, tp, n)
        elif state == RECOVERY or cwr:
            if linux and n > 0.0:  # Linux tcp_cwnd_reduction (PRR, RFC 6937)
                tp.prr_delivered += n
                pipe = tp.pipe
                delta = tp.ssthresh - pipe
                if delta < 0.0:
                    sndcnt = math.ceil(tp.ssthresh * tp.prr_delivered / tp.prior_cwnd - 1e-9) - tp.prr_out
                else:
                    sndcnt = max(tp.prr_delivered - tp.prr_out, n)
                    if ev[i, E_DATA_ACKED] > 0.0:  # FLAG_SND_UNA_ADVANCED
                        sndcnt += 1.0
                    sndcnt = min(delta, sndcnt)
                if tp.prr_out == 0.0:  # force the fast retransmit
                    sndcnt = max(sndcnt, 1.0)
                else:
                    sndcnt = max(sndcnt, 0.0)
                tp.cwnd = pipe + sndcnt
        elif ev[i, E_DATA_ACKED] > 0.0:
            cong_avoid(st, p, tp, n)

        # 6. output ------------------------------------------------------------------------------
        v = tp.cwnd
        out[i, 0] = v
        if v != v:
            nans[0] = 1
        v = tp.ssthresh
        if not math.isfinite(v):  # infinite: not set
            v = math.nan
            nans[1] = 1
        out[i, 1] = v
        codes[i, 0] = _label_index(float(state), tops[0])
        write_signals(st, i, out, codes, nans, tops)
    return n_ev
