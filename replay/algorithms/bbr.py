"""BBR v1 — Linux net/ipv4/tcp_bbr.c; draft-cardwell-iccrg-bbr-congestion-control-00 (BBR v1).

BBR does not grow a window from ACKs and cut it on loss: it builds a model of the path and sets
the pacing rate and cwnd from it (Linux ``cong_control`` hook, called on every ACK *instead of*
PRR / cong_avoid — the engine's ``cong_control`` contract). Per ACK (``bbr_main``):

* **model** (``bbr_update_model``): the ACK's delivery-rate sample (engine, tp.rs_*: delivered
  packets / interval, draft-cheng-iccrg-delivery-rate-estimation as in Linux tcp_rate.c) feeds
  ``btl_bw`` = windowed max over ``bw_rounds`` packet-timed rounds (Kathleen Nichols' 3-sample
  max filter, Linux lib/win_minmax.c); a round starts when the sampled packet was sent after the
  previous round's start (``prior_delivered ≥ next_rtt_delivered``). ``min_rtt`` = smallest RTT
  sample, the handshake's included (``bbr_init``: ``tcp_min_rtt``; ``tp.handshake_rtt``), renewed
  by any sample once it is ``min_rtt_win`` old;
* **ACK aggregation** (``bbr_update_ack_aggregation``): packets acknowledged in the current epoch
  beyond ``btl_bw · epoch``; the max over 5-10 rounds is added to the target cwnd once the pipe
  is full (at most ``btl_bw · 100 ms``);
* **modes**: STARTUP (pacing and cwnd gain ``high_gain`` = 2/ln 2) until ``btl_bw`` has not grown
  by 25 % (``full_bw_thresh``) for 3 rounds (``full_bw_rounds``); then DRAIN (pacing gain
  ``drain_gain`` = 1/high_gain, ssthresh = the 1·BDP in-flight target) until packets in flight ≤
  that target; then PROBE_BW, cycling the pacing gain 1.25, 0.75, 1 ×6 (a phase lasts min_rtt;
  the 1.25 phase also waits for in-flight ≥ 1.25·BDP or a loss, the 0.75 phase ends early at
  in-flight ≤ BDP); when min_rtt is ``min_rtt_win`` (10 s) old, PROBE_RTT: cwnd ≤ 4 packets for
  ``probe_rtt_time`` (200 ms) and one round after in-flight ≤ 4, then back to PROBE_BW (or STARTUP
  if the pipe was never full) with cwnd restored;
* **pacing rate** = pacing_gain · btl_bw · (1 − 1 % margin); before the pipe is full it only rises;
  the first one is high_gain · cwnd / srtt;
* **cwnd** (``bbr_set_cwnd``): ``target_cwnd`` = ⌈cwnd_gain · btl_bw · min_rtt⌉ + ACK-aggregation
  allowance, plus the quantization budget (``bbr_quantization_budget``: 3 TSO-goal skbs, rounded
  up to even, +2 in the 1.25 phase); cwnd grows by the packets acked toward it (once the pipe is
  full it is capped there, so it snaps down); minimum 4. Loss recovery: cwnd −= newly lost
  packets, packet conservation (cwnd = in flight + acked) for the first round of recovery, the
  pre-recovery cwnd restored at its end; RTO: cwnd = 1 (engine, ``tcp_enter_loss``) and a
  slow-start back towards the target.

Units: windows and in-flight in packets (MSS), bandwidths inside the model in packets/s (the
signals ``btl_bw``, ``pacing_rate`` and ``delivery_rate`` in bit/s of TCP payload:
packets/s · MSS · 8), times in s.

Flavors: ``linux`` (default) = tcp_bbr.c, gains in its 1/256 fixed point (high_gain 739/256 =
2.8867, drain_gain 88/256 = 0.34375), delivery-rate samples in its integer units (packets/µs ·
2²⁴), ACK-aggregation allowance (Linux ≥ 5.1), 1 % pacing margin; ``rfc`` = the v1 draft's
real-valued gains (2/ln 2, ln 2/2), no ACK-aggregation allowance and no pacing margin.

Policer detection (``bbr_lt_bw_sampling``, parameter ``lt_bw``): two 4-16-round intervals with
≥ 20 % loss and the same delivery rate → pace at their mean (gain 1) for 48 rounds; losses are
the engine's estimate (retransmissions, tp.rs_losses).

Restart after idle (``bbr_cwnd_event``, flavor linux: the engine raises ``CA_EVENT_TX_START``
when the sender transmits with nothing in flight, where Linux's ``tcp_sendmsg_locked`` has just
marked the connection app-limited, ``tcp_rate_check_app_limited``): ``idle_restart`` is set
until an ACK delivers data, and no PROBE_RTT begins meanwhile; the ACK-aggregation epoch
restarts; in PROBE_BW the pacing rate is btl_bw itself (gain 1), in PROBE_RTT its end is checked.

Not modelled (documented in docs/algorithms/bbr.md): the app-limited marking of the rate samples
of the flight sent after idle, the EDT
pacing offset of ``bbr_packets_in_net_at_edt`` (taken as 0: in-flight is the trace's), the
random first PROBE_BW phase (the kernel draws it from {0, 2..7}; here parameter ``cycle_start``),
app-limited delivery-rate samples other than BBR's own PROBE_RTT marking. BBRv3
(draft-ietf-ccwg-bbr) is not implemented: see the doc page for how it differs.
"""

from __future__ import annotations

import math
from enum import IntEnum

from hscc_trace.replay._jit import jit
from hscc_trace.replay.interface import Algorithm, Param, Signal
from hscc_trace.replay.state import Field, choice_names
from hscc_trace.replay.tp import (
    CA_EVENT_TX_START,
    LINUX,
    OPEN,
    RECOVERY,
)


class Mode(IntEnum):
    """State ``mode`` (enum bbr_mode; signal labels)."""

    STARTUP = 0
    DRAIN = 1
    PROBE_BW = 2
    PROBE_RTT = 3


CYCLE_LEN = 8  # phases of the PROBE_BW gain cycle (tcp_bbr.c CYCLE_LEN)
TCP_INIT_CWND = 10.0  # packets (include/net/tcp.h)
GSO_BYTES_MAX = 65536.0 - 1.0 - 320.0  # bytes — GSO_MAX_SIZE − 1 − MAX_TCP_HEADER (≈, x86-64)
BW_UNIT = 16777216.0  # 2^24: Linux keeps bw in packets/µs << 24


@jit
def _q(g, tp):
    """A gain in Linux's 1/256 fixed point (BBR_UNIT) for flavor linux; as is for rfc."""
    if tp.flavor == LINUX:
        return math.floor(g * 256.0) / 256.0
    return g


@jit
def _high_gain(p, tp):
    """bbr_high_gain = BBR_UNIT · 2885 / 1000 + 1 (= 739/256) for linux; 2/ln 2 for rfc."""
    if tp.flavor == LINUX:
        return (math.floor(p.high_gain * 256.0) + 1.0) / 256.0
    return p.high_gain


@jit
def _probe_gain(idx, tp):
    """bbr_pacing_gain[]: 5/4, 3/4, then 1 for six phases."""
    if idx == 0.0:
        return 1.25
    if idx == 1.0:
        return 0.75
    return 1.0


@jit
def _max_bw(st):
    return st.bw0_v  # packets/s


@jit
def _bw(st):
    """bbr_bw: the policed rate lt_bw while it is in use, else the max filter (packets/s)."""
    return st.lt_bw if st.lt_use_bw else st.bw0_v


@jit
def _reset_lt_interval(st, tp):
    """bbr_reset_lt_bw_sampling_interval."""
    dt = tp.delivered_time
    st.lt_last_stamp = math.floor(dt * 1000.0) if dt == dt else 0.0  # ms; nan before any delivery
    st.lt_last_delivered = tp.delivered
    st.lt_last_lost = st.lost
    st.lt_rtt_cnt = 0.0


@jit
def _reset_lt(st, tp):
    """bbr_reset_lt_bw_sampling."""
    st.lt_bw = 0.0
    st.lt_use_bw = False
    st.lt_is_sampling = False
    _reset_lt_interval(st, tp)


@jit
def _lt_interval_done(st, p, tp, bw):
    """bbr_lt_bw_interval_done: two intervals within 1/8 (or 4 kbit/s) → policed, use their mean."""
    if st.lt_bw > 0.0:
        diff = abs(bw - st.lt_bw)
        if diff <= st.lt_bw / 8.0 or diff * tp.mss * (1.0 - p.pacing_margin) <= 500.0:
            st.lt_bw = (bw + st.lt_bw) / 2.0
            st.lt_use_bw = True
            st.pacing_gain = 1.0
            st.lt_rtt_cnt = 0.0
            return
    st.lt_bw = bw
    _reset_lt_interval(st, tp)


@jit
def _lt_sampling(st, p, tp, losses, app_limited):
    """bbr_lt_bw_sampling: a token-bucket policer shows as 2 intervals of 4-16 rounds with ≥ 20 %
    loss (50/256) and the same delivery rate; then lt_bw is used for 48 rounds."""
    if not p.lt_bw:
        return
    if st.lt_use_bw:
        if st.mode == Mode.PROBE_BW and st.round_start:
            st.lt_rtt_cnt += 1.0
            if st.lt_rtt_cnt >= 48.0:  # bbr_lt_bw_max_rtts
                _reset_lt(st, tp)
                _reset_probe_bw(st, p, tp)
        return
    if not st.lt_is_sampling:
        if losses <= 0.0:
            return
        _reset_lt_interval(st, tp)
        st.lt_is_sampling = True
    if app_limited:
        _reset_lt(st, tp)
        return
    if st.round_start:
        st.lt_rtt_cnt += 1.0
    if st.lt_rtt_cnt < 4.0:  # bbr_lt_intvl_min_rtts
        return
    if st.lt_rtt_cnt > 16.0:
        _reset_lt(st, tp)
        return
    if losses <= 0.0:
        return
    lost = st.lost - st.lt_last_lost
    delivered = tp.delivered - st.lt_last_delivered
    if delivered <= 0.0 or lost * 256.0 < 50.0 * delivered:  # bbr_lt_loss_thresh = 50/256
        return
    t_ms = math.floor(tp.delivered_time * 1000.0) - st.lt_last_stamp
    if t_ms < 1.0:
        return
    if tp.flavor == LINUX:  # delivered · 2^24 / (t · 1000 µs), integer
        bw = math.floor(delivered * BW_UNIT / (t_ms * 1000.0)) / BW_UNIT * 1e6
    else:
        bw = delivered / (t_ms / 1000.0)
    _lt_interval_done(st, p, tp, bw)


@jit
def _minmax_running_max(st, win, t, v):
    """lib/win_minmax.c minmax_running_max: windowed max of (round t, value v) over win rounds."""
    if v >= st.bw0_v or t - st.bw2_t > win:  # new max, or nothing left in the window: reset
        st.bw0_t = t
        st.bw0_v = v
        st.bw1_t = t
        st.bw1_v = v
        st.bw2_t = t
        st.bw2_v = v
        return
    if v >= st.bw1_v:
        st.bw1_t = t
        st.bw1_v = v
        st.bw2_t = t
        st.bw2_v = v
    elif v >= st.bw2_v:
        st.bw2_t = t
        st.bw2_v = v
    # minmax_subwin_update
    dt = t - st.bw0_t
    if dt > win:
        st.bw0_t = st.bw1_t
        st.bw0_v = st.bw1_v
        st.bw1_t = st.bw2_t
        st.bw1_v = st.bw2_v
        st.bw2_t = t
        st.bw2_v = v
        if t - st.bw0_t > win:
            st.bw0_t = st.bw1_t
            st.bw0_v = st.bw1_v
            st.bw1_t = st.bw2_t
            st.bw1_v = st.bw2_v
            st.bw2_t = t
            st.bw2_v = v
    elif st.bw1_t == st.bw0_t and dt > win / 4.0:
        st.bw1_t = t
        st.bw1_v = v
        st.bw2_t = t
        st.bw2_v = v
    elif st.bw2_t == st.bw1_t and dt > win / 2.0:
        st.bw2_t = t
        st.bw2_v = v


@jit
def _bdp(st, bw, gain):
    """bbr_bdp: ⌈bw · min_rtt · gain⌉ packets; TCP_INIT_CWND before any RTT sample."""
    if not (st.min_rtt < math.inf):
        return TCP_INIT_CWND
    return math.ceil(bw * st.min_rtt * gain - 1e-9)


@jit
def _tso_segs_goal(st, p, tp):
    """bbr_tso_segs_goal: packets per skb the pacing rate allows (≈ 1 ms of data: rate >> 10)."""
    rate_bytes = st.pacing_rate / 8.0
    by = min(rate_bytes / 2.0**p.pacing_shift, GSO_BYTES_MAX)
    min_segs = 1.0 if rate_bytes < p.min_tso_rate / 8.0 else 2.0  # bbr_min_tso_segs
    return min(max(math.floor(by / tp.mss), min_segs), 127.0)


@jit
def _quantization_budget(st, p, tp, cwnd):
    """bbr_quantization_budget: + 3 TSO-goal skbs, round up to even, + 2 in the 1.25 phase."""
    cwnd = cwnd + 3.0 * _tso_segs_goal(st, p, tp)
    cwnd = 2.0 * math.ceil(cwnd / 2.0 - 1e-9)
    if st.mode == Mode.PROBE_BW and st.cycle_idx == 0.0:
        cwnd += 2.0
    return cwnd


@jit
def _inflight(st, p, tp, bw, gain):
    """bbr_inflight: the in-flight target for ``gain`` (BDP + quantization budget)."""
    return _quantization_budget(st, p, tp, _bdp(st, bw, gain))


@jit
def _pacing_rate(st, p, tp, bw, gain):
    """bbr_bw_to_pacing_rate in bit/s: gain · bw · MSS · 8 · (1 − margin) (no margin for rfc)."""
    margin = p.pacing_margin if tp.flavor == LINUX else 0.0
    return bw * tp.mss * 8.0 * gain * (1.0 - margin)


@jit
def _init_pacing_rate(st, p, tp):
    """bbr_init_pacing_rate_from_rtt: high_gain · cwnd / srtt (nominal 1 ms before any sample).
    At bbr_init the kernel's srtt is the handshake's sample (tcp_rtt_estimator's first sample
    sets srtt to it): tp.handshake_rtt when the capture has the handshake."""
    if tp.srtt > 0.0:
        rtt = tp.srtt
        st.has_seen_rtt = True
    elif tp.handshake_rtt > 0.0:
        rtt = tp.handshake_rtt
        st.has_seen_rtt = True
    else:
        rtt = 0.001
    st.pacing_rate = _pacing_rate(st, p, tp, tp.cwnd / rtt, _high_gain(p, tp))


@jit
def _reset_probe_bw(st, p, tp):
    """bbr_reset_probe_bw_mode: PROBE_BW at the phase before ``cycle_start``, then advance."""
    st.mode = Mode.PROBE_BW
    st.cycle_idx = (p.cycle_start + CYCLE_LEN - 1.0) % CYCLE_LEN
    _advance_cycle(st, tp)


@jit
def _advance_cycle(st, tp):
    st.cycle_idx = (st.cycle_idx + 1.0) % CYCLE_LEN
    st.cycle_stamp = tp.delivered_time


@jit
def _reset_mode(st, p, tp):
    if not st.full_bw_reached:
        st.mode = Mode.STARTUP
    else:
        _reset_probe_bw(st, p, tp)


@jit
def _save_cwnd(st, tp):
    """bbr_save_cwnd: remember the last good cwnd (never one cut by recovery or PROBE_RTT)."""
    if st.prev_ca_state == OPEN and st.mode != Mode.PROBE_RTT:
        st.prior_cwnd = tp.cwnd
    else:
        st.prior_cwnd = max(st.prior_cwnd, tp.cwnd)


@jit
def init(st, p, tp):
    """bbr_init. ``min_rtt_us = tcp_min_rtt(tp)``: BBR starts after the handshake
    (tcp_init_transfer), so its min_rtt is the handshake's RTT sample (tp.handshake_rtt, when
    captured) until a data sample is smaller; inf (the first sample) without it. The stamp is
    the first ACK's time (the kernel's is the handshake's end, about one RTT earlier)."""
    st.mode = Mode.STARTUP
    st.cycle_idx = 0.0
    st.min_rtt = tp.handshake_rtt if tp.handshake_rtt > 0.0 else math.inf
    st.min_rtt_stamp = tp.now
    st.probe_rtt_done = -1.0
    st.idle_restart = False
    st.app_limited_from = math.inf
    st.app_limited_to = math.inf
    st.pacing_gain = _high_gain(p, tp)
    st.cwnd_gain = _high_gain(p, tp)
    st.target_cwnd = math.nan
    st.delivery_rate = math.nan
    _init_pacing_rate(st, p, tp)
    _reset_lt(st, tp)


@jit
def ssthresh(st, p, tp):
    """bbr_ssthresh: entering recovery saves cwnd; ssthresh itself is left as it is."""
    _save_cwnd(st, tp)
    return tp.ssthresh


@jit
def cong_avoid(st, p, tp, n):
    """Never called: BBR has cong_control (the engine calls that on every ACK instead)."""


@jit
def on_rto(st, p, tp):
    """bbr_set_state(TCP_CA_Loss): restart full-pipe detection; the RTO counts as a round end."""
    st.prev_ca_state = 2.0
    st.full_bw = 0.0
    st.round_start = True
    _lt_sampling(st, p, tp, 1.0, False)  # rs.losses = 1


@jit
def undo_cwnd(st, p, tp):
    """bbr_undo_cwnd: a spurious slow-down restarts full-pipe detection; cwnd stays."""
    st.full_bw = 0.0
    st.full_bw_cnt = 0.0
    _reset_lt(st, tp)
    return tp.cwnd


@jit
def _update_bw(st, p, tp, valid, app_limited):
    """bbr_update_bw: round counting and the max filter (packets/s)."""
    st.round_start = False
    if not valid:
        return
    if tp.rs_prior_delivered >= st.next_rtt_delivered - 1e-9:
        st.next_rtt_delivered = tp.delivered
        st.rtt_cnt += 1.0
        st.round_start = True
        st.packet_conservation = False
    _lt_sampling(st, p, tp, tp.rs_losses, app_limited)
    if tp.flavor == LINUX:  # bw = delivered · 2^24 / interval_us, integer (packets/µs << 24)
        bw = math.floor(tp.rs_delivered * BW_UNIT / math.floor(tp.rs_interval * 1e6)) / BW_UNIT * 1e6
    else:
        bw = tp.rs_delivered / tp.rs_interval
    st.delivery_rate = bw * tp.mss * 8.0
    if not app_limited or bw >= _max_bw(st):
        _minmax_running_max(st, p.bw_rounds, st.rtt_cnt, bw)


@jit
def _update_ack_aggregation(st, p, tp, valid, acked):
    """bbr_update_ack_aggregation: max packets acked beyond btl_bw · epoch, over 5-10 rounds."""
    if not p.extra_acked or tp.flavor != LINUX or acked <= 0.0 or not valid:
        return
    if st.round_start:
        st.extra_acked_win_rtts = min(31.0, st.extra_acked_win_rtts + 1.0)
        if st.extra_acked_win_rtts >= p.extra_acked_rounds:
            st.extra_acked_win_rtts = 0.0
            st.extra_acked_win_idx = 1.0 - st.extra_acked_win_idx
            if st.extra_acked_win_idx == 0.0:
                st.extra_acked0 = 0.0
            else:
                st.extra_acked1 = 0.0
    now = tp.delivered_time
    expected = math.floor(_bw(st) * (now - st.ack_epoch_stamp))
    if st.ack_epoch_acked <= expected or st.ack_epoch_acked + acked >= 1048576.0:
        st.ack_epoch_acked = 0.0
        st.ack_epoch_stamp = now
        expected = 0.0
    st.ack_epoch_acked = min(1048575.0, st.ack_epoch_acked + acked)
    extra = min(st.ack_epoch_acked - expected, tp.cwnd)
    if st.extra_acked_win_idx == 0.0:
        st.extra_acked0 = max(st.extra_acked0, extra)
    else:
        st.extra_acked1 = max(st.extra_acked1, extra)


@jit
def _ack_aggregation_cwnd(st, p, tp):
    """bbr_ack_aggregation_cwnd: the allowance, once the pipe is full, ≤ btl_bw · 100 ms."""
    if not p.extra_acked or tp.flavor != LINUX or not st.full_bw_reached:
        return 0.0
    cap = math.floor(_bw(st) * p.extra_acked_max)
    return min(math.floor(max(st.extra_acked0, st.extra_acked1)), cap)


@jit
def _update_cycle_phase(st, p, tp):
    """bbr_update_cycle_phase / bbr_is_next_cycle_phase (EDT offset taken as 0)."""
    if st.mode != Mode.PROBE_BW:
        return
    full_length = tp.delivered_time - st.cycle_stamp > st.min_rtt
    gain = st.pacing_gain
    if gain == 1.0:
        nxt = full_length
    else:
        inflight = tp.prior_flight
        bw = _max_bw(st)
        if gain > 1.0:
            inflight += _tso_segs_goal(st, p, tp)  # the skb departing at EDT
            nxt = full_length and (tp.rs_losses > 0.0 or inflight >= _inflight(st, p, tp, bw, gain))
        else:
            nxt = full_length or inflight <= _inflight(st, p, tp, bw, 1.0)
    if nxt:
        _advance_cycle(st, tp)


@jit
def _check_full_bw_reached(st, p, tp, app_limited):
    """bbr_check_full_bw_reached: 3 rounds without 25 % bw growth → the pipe is full."""
    if st.full_bw_reached or not st.round_start or app_limited:
        return
    thresh = st.full_bw * _q(p.full_bw_thresh, tp)
    if _max_bw(st) >= thresh:
        st.full_bw = _max_bw(st)
        st.full_bw_cnt = 0.0
        return
    st.full_bw_cnt += 1.0
    if st.full_bw_cnt >= p.full_bw_rounds:
        st.full_bw_reached = True


@jit
def _check_drain(st, p, tp):
    """bbr_check_drain: STARTUP → DRAIN (ssthresh = 1·BDP target) → PROBE_BW once drained."""
    if st.mode == Mode.STARTUP and st.full_bw_reached:
        st.mode = Mode.DRAIN
        tp.ssthresh = _inflight(st, p, tp, _max_bw(st), 1.0)
    if st.mode == Mode.DRAIN and tp.pipe <= _inflight(st, p, tp, _max_bw(st), 1.0):
        _reset_probe_bw(st, p, tp)


@jit
def _check_probe_rtt_done(st, p, tp):
    if not (st.probe_rtt_done >= 0.0 and tp.now > st.probe_rtt_done):
        return
    st.min_rtt_stamp = tp.now  # wait a while until the next PROBE_RTT
    tp.cwnd = max(tp.cwnd, st.prior_cwnd)
    _reset_mode(st, p, tp)


@jit
def _update_min_rtt(st, p, tp, valid):
    """bbr_update_min_rtt: min_rtt filter, PROBE_RTT entry, hold and exit."""
    expired = tp.now > st.min_rtt_stamp + p.min_rtt_win
    if tp.rtt_new > 0.0 and (tp.rtt <= st.min_rtt or expired):
        st.min_rtt = tp.rtt
        st.min_rtt_stamp = tp.now
    if p.probe_rtt_time > 0.0 and expired and not st.idle_restart and st.mode != Mode.PROBE_RTT:
        st.mode = Mode.PROBE_RTT  # dip, drain the queue
        _save_cwnd(st, tp)
        st.probe_rtt_done = -1.0
    if st.mode == Mode.PROBE_RTT:
        # samples of packets sent now are app-limited (tp->app_limited = delivered + in flight)
        if not (st.app_limited_to == math.inf and st.app_limited_from < math.inf):
            st.app_limited_from = tp.delivered
            st.app_limited_to = math.inf
        if st.probe_rtt_done < 0.0 and tp.pipe <= p.min_cwnd:
            st.probe_rtt_done = tp.now + p.probe_rtt_time
            st.probe_rtt_round_done = False
            st.next_rtt_delivered = tp.delivered
        elif st.probe_rtt_done >= 0.0:
            if st.round_start:
                st.probe_rtt_round_done = True
            if st.probe_rtt_round_done:
                _check_probe_rtt_done(st, p, tp)
    elif st.app_limited_to == math.inf and st.app_limited_from < math.inf:
        st.app_limited_to = tp.delivered  # marking ends with PROBE_RTT
    if tp.acked + tp.sacked > 0.0:  # restart after idle ends once an ACK delivers data (rs->delivered > 0)
        st.idle_restart = False


@jit
def cwnd_event(st, p, tp, event):
    """bbr_cwnd_event, CA_EVENT_TX_START while app-limited (after idle the engine's only
    TX_START; tcp_sendmsg_locked's tcp_rate_check_app_limited has just set tp->app_limited, the
    write queue being empty and nothing in flight): idle_restart, a new ACK-aggregation epoch
    (ack_epoch_mstamp = now: the engine's now is the ACK after the transmission, and the next ACK
    restarts the epoch either way, its acked ≤ btl_bw · the time since), and "avoid pointless
    buffer overflows": pace at btl_bw (gain 1) in PROBE_BW (bbr_set_pacing_rate: taken when the
    pipe is full or it is a rise), check the end of PROBE_RTT in PROBE_RTT."""
    if event != CA_EVENT_TX_START:
        return
    st.idle_restart = True
    st.ack_epoch_stamp = tp.now
    st.ack_epoch_acked = 0.0
    if st.mode == Mode.PROBE_BW:
        rate = _pacing_rate(st, p, tp, _bw(st), 1.0)
        if st.full_bw_reached or rate > st.pacing_rate:
            st.pacing_rate = rate
    elif st.mode == Mode.PROBE_RTT:
        _check_probe_rtt_done(st, p, tp)


@jit
def _update_gains(st, p, tp):
    m = st.mode
    if m == Mode.STARTUP:
        st.pacing_gain = _high_gain(p, tp)
        st.cwnd_gain = _high_gain(p, tp)
    elif m == Mode.DRAIN:
        st.pacing_gain = _q(p.drain_gain, tp)
        st.cwnd_gain = _high_gain(p, tp)
    elif m == Mode.PROBE_BW:
        st.pacing_gain = 1.0 if st.lt_use_bw else _probe_gain(st.cycle_idx, tp)
        st.cwnd_gain = _q(p.cwnd_gain, tp)
    else:
        st.pacing_gain = 1.0
        st.cwnd_gain = 1.0


@jit
def _set_cwnd(st, p, tp, acked, bw, gain):
    """bbr_set_cwnd with bbr_set_cwnd_to_recover_or_restore."""
    cwnd = tp.cwnd
    if acked > 0.0:
        conserve = False
        if tp.rs_losses > 0.0:
            cwnd = max(cwnd - tp.rs_losses, 1.0)
        state = tp.state
        prev = st.prev_ca_state
        if state == RECOVERY and prev != RECOVERY:  # first round of recovery: packet conservation
            st.packet_conservation = True
            st.next_rtt_delivered = tp.delivered  # start the round now
            cwnd = tp.pipe + acked
        elif prev != OPEN and state == OPEN:  # recovery over: restore the saved cwnd
            cwnd = max(cwnd, st.prior_cwnd)
            st.packet_conservation = False
        st.prev_ca_state = state
        if st.packet_conservation:
            conserve = True
            cwnd = max(cwnd, tp.pipe + acked)
        if not conserve:
            target = _bdp(st, bw, gain) + _ack_aggregation_cwnd(st, p, tp)
            target = _quantization_budget(st, p, tp, target)
            st.target_cwnd = target
            if st.full_bw_reached:  # only cut cwnd once the pipe was filled
                cwnd = min(cwnd + acked, target)
            elif cwnd < target or tp.delivered < TCP_INIT_CWND:
                cwnd = cwnd + acked
            cwnd = max(cwnd, p.min_cwnd)
    tp.cwnd = cwnd
    if st.mode == Mode.PROBE_RTT:  # drain the queue, refresh min_rtt
        tp.cwnd = min(tp.cwnd, p.min_cwnd)


@jit
def cong_control(st, p, tp, n):
    """bbr_main: update the model, then the pacing rate and cwnd (n = packets acked + SACKed)."""
    valid = tp.rs_delivered >= 0.0 and tp.rs_interval > 0.0  # False for nan (no sample)
    if tp.rs_losses > 0.0:
        st.lost += tp.rs_losses
    app_limited = valid and st.app_limited_from <= tp.rs_prior_delivered < st.app_limited_to
    # bbr_update_model
    _update_bw(st, p, tp, valid, app_limited)
    _update_ack_aggregation(st, p, tp, valid, n)
    _update_cycle_phase(st, p, tp)
    _check_full_bw_reached(st, p, tp, app_limited)
    _check_drain(st, p, tp)
    _update_min_rtt(st, p, tp, valid)
    _update_gains(st, p, tp)
    bw = _bw(st)
    st.btl_bw = bw * tp.mss * 8.0
    # bbr_set_pacing_rate
    rate = _pacing_rate(st, p, tp, bw, st.pacing_gain)
    if not st.has_seen_rtt and tp.srtt > 0.0:
        _init_pacing_rate(st, p, tp)
    if st.full_bw_reached or rate > st.pacing_rate:
        st.pacing_rate = rate
    _set_cwnd(st, p, tp, n, bw, st.cwnd_gain)
    # a paced sender's flight is its pacing rate times the RTT (Little's law), capped by cwnd
    if tp.srtt > 0.0:
        st.inflight_cap = min(tp.cwnd, st.pacing_rate / (8.0 * tp.mss) * tp.srtt)
    else:
        st.inflight_cap = tp.cwnd


_SRC = "Linux net/ipv4/tcp_bbr.c"
ALGORITHMS = (
    Algorithm(
        name="bbr",
        summary="BBR v1: cwnd and pacing rate from a model of bottleneck bandwidth and min RTT "
        "(STARTUP, DRAIN, PROBE_BW gain cycle, PROBE_RTT); loss does not halve it",
        citation="Linux net/ipv4/tcp_bbr.c (BBR v1); draft-cardwell-iccrg-bbr-congestion-control-00; "
        "delivery rate: draft-cheng-iccrg-delivery-rate-estimation, Linux net/ipv4/tcp_rate.c",
        state=(
            Field("mode", "", "Mode (enum bbr_mode)", "int"),
            Field("cycle_idx", "", "PROBE_BW gain-cycle phase 0-7 (0: 1.25, 1: 0.75, 2-7: 1.0)"),
            Field("btl_bw", "bit/s", "the bandwidth model max_bw (signal; bw0_v holds it in packets/s)"),
            Field("min_rtt", "s", "min_rtt_us (inf until the first sample)"),
            Field("pacing_rate", "bit/s", "sk_pacing_rate"),
            Field("pacing_gain", "", "current pacing gain"),
            Field("cwnd_gain", "", "current cwnd gain"),
            Field("target_cwnd", "packets", "target cwnd of the last bbr_set_cwnd that computed one"),
            Field("delivery_rate", "bit/s", "the last valid delivery-rate sample"),
            Field("full_bw_reached", "", "STARTUP found the pipe full", "bool"),
            Field("full_bw", "packets/s", "bw at the last 25 % growth"),
            Field("full_bw_cnt", "", "rounds without 25 % growth"),
            Field("rtt_cnt", "", "packet-timed rounds so far"),
            Field("next_rtt_delivered", "packets", "delivered count that starts the next round"),
            Field("round_start", "", "this ACK starts a round", "bool"),
            Field("min_rtt_stamp", "s", "when min_rtt was last set"),
            Field("probe_rtt_done", "s", "end of PROBE_RTT's 200 ms (-1: not yet started)"),
            Field("probe_rtt_round_done", "", "a round passed in PROBE_RTT at low in-flight", "bool"),
            Field("idle_restart", "", "restarting after idle until an ACK delivers data (no PROBE_RTT entry)", "bool"),
            Field("prior_cwnd", "packets", "cwnd saved on entering recovery / PROBE_RTT"),
            Field("prev_ca_state", "", "engine state (0 open, 1 recovery, 2 loss) at the previous bbr_set_cwnd"),
            Field("packet_conservation", "", "in the first round of recovery", "bool"),
            Field("cycle_stamp", "s", "start of the current gain-cycle phase (delivered time)"),
            Field("has_seen_rtt", "", "the pacing rate was initialised from srtt", "bool"),
            Field("ack_epoch_stamp", "s", "start of the ACK-aggregation epoch"),
            Field("ack_epoch_acked", "packets", "acknowledged in the epoch"),
            Field("extra_acked0", "packets", "max extra acked, window slot 0"),
            Field("extra_acked1", "packets", "max extra acked, window slot 1"),
            Field("extra_acked_win_rtts", "", "rounds in the current extra-acked slot"),
            Field("extra_acked_win_idx", "", "current slot (0/1)"),
            Field("bw0_t", "round", "of the best max-filter sample"),
            Field("bw0_v", "packets/s", "best sample"),
            Field("bw1_t", "round", "second-best"),
            Field("bw1_v", "packets/s", "second-best sample"),
            Field("bw2_t", "round", "third-best"),
            Field("bw2_v", "packets/s", "third-best sample"),
            Field(
                "app_limited_from",
                "packets",
                "delivered count when PROBE_RTT began marking samples app-limited (inf: none)",
            ),
            Field("app_limited_to", "packets", "delivered count when the marking ended (inf: still marking)"),
            Field("inflight_cap", "packets", "min(cwnd, pacing_rate · srtt): what the model lets into flight (fit)"),
            Field("lost", "packets", "cumulative losses (Linux tp->lost), from the rate samples' losses"),
            Field("lt_is_sampling", "", 'a long-term ("policer") sampling interval runs', "bool"),
            Field("lt_rtt_cnt", "", "rounds in the long-term interval (or using lt_bw)"),
            Field("lt_use_bw", "", "the policed rate lt_bw is the bandwidth estimate", "bool"),
            Field("lt_bw", "packets/s", "long-term (policed) delivery rate"),
            Field("lt_last_delivered", "packets", "delivered at the interval start"),
            Field("lt_last_stamp", "ms (integer)", "delivered time at the interval start"),
            Field("lt_last_lost", "packets", "lost at the interval start"),
        ),
        params=(
            Param(
                "high_gain",
                "",
                2.885,
                f"{_SRC} bbr_high_gain (BBR_UNIT·2885/1000 + 1); draft §4.3.2.1: 2/ln 2",
                "STARTUP pacing and cwnd gain (linux: floor(256·g)+1 in 1/256 units)",
                lo=1.0,
                hi=10.0,
            ),
            Param(
                "drain_gain",
                "",
                1.0 / 2.885,
                f"{_SRC} bbr_drain_gain (BBR_UNIT·1000/2885)",
                "DRAIN pacing gain (linux: floor(256·g)/256 = 0.34375)",
                lo=0.01,
                hi=1.0,
            ),
            Param("cwnd_gain", "", 2.0, f"{_SRC} bbr_cwnd_gain", "PROBE_BW cwnd gain (× BDP)", lo=0.1, hi=10.0),
            Param(
                "bw_rounds",
                "rounds",
                10.0,
                f"{_SRC} bbr_bw_rtts = CYCLE_LEN + 2",
                "window of the btl_bw max filter (packet-timed rounds)",
                lo=1.0,
                hi=1000.0,
            ),
            Param(
                "min_rtt_win",
                "s",
                10.0,
                f"{_SRC} bbr_min_rtt_win_sec",
                "min_rtt expires after this long without a new minimum (then PROBE_RTT)",
                lo=0.001,
                hi=3600.0,
            ),
            Param(
                "probe_rtt_time",
                "s",
                0.2,
                f"{_SRC} bbr_probe_rtt_mode_ms",
                "time held at min_cwnd in PROBE_RTT (0 = never enter PROBE_RTT)",
                lo=0.0,
                hi=60.0,
            ),
            Param(
                "min_cwnd",
                "packets",
                4.0,
                f"{_SRC} bbr_cwnd_min_target",
                "smallest cwnd; the cwnd cap in PROBE_RTT",
                lo=1.0,
                hi=1e6,
            ),
            Param(
                "full_bw_thresh",
                "",
                1.25,
                f"{_SRC} bbr_full_bw_thresh (BBR_UNIT·5/4)",
                "btl_bw growth per round that means STARTUP is still finding bandwidth",
                lo=1.0,
                hi=10.0,
            ),
            Param(
                "full_bw_rounds",
                "rounds",
                3.0,
                f"{_SRC} bbr_full_bw_cnt",
                "rounds without that growth after which the pipe is full",
                lo=1.0,
                hi=100.0,
            ),
            Param(
                "extra_acked",
                "",
                True,
                f"{_SRC} bbr_extra_acked_gain = BBR_UNIT (Linux ≥ 5.1)",
                "add the ACK-aggregation allowance to the target cwnd (flavor linux only)",
                kind="bool",
            ),
            Param(
                "extra_acked_rounds",
                "rounds",
                5.0,
                f"{_SRC} bbr_extra_acked_win_rtts",
                "rounds per slot of the two-slot extra-acked max filter",
                lo=1.0,
                hi=31.0,
            ),
            Param(
                "extra_acked_max",
                "s",
                0.1,
                f"{_SRC} bbr_extra_acked_max_us",
                "the allowance is at most btl_bw times this",
                lo=0.0,
                hi=10.0,
            ),
            Param(
                "cycle_start",
                "",
                2,
                f"{_SRC} bbr_reset_probe_bw_mode (kernel: random in 0, 2..7)",
                "PROBE_BW gain-cycle phase entered after DRAIN / PROBE_RTT (0: 1.25, 1: 0.75, 2-7: 1.0); "
                "the kernel draws it at random, the replay cannot know it",
                kind="int",
                lo=0,
                hi=7,
            ),
            Param(
                "pacing_margin",
                "",
                0.01,
                f"{_SRC} bbr_pacing_margin_percent",
                "pace this fraction below gain · btl_bw (flavor linux)",
                lo=0.0,
                hi=0.5,
            ),
            Param(
                "pacing_shift",
                "",
                10,
                "Linux include/net/sock.h sk_pacing_shift (default 10)",
                "TSO autosizing: an skb carries pacing_rate >> pacing_shift bytes (≈ 1 ms)",
                kind="int",
                lo=0,
                hi=20,
            ),
            Param(
                "min_tso_rate",
                "bit/s",
                1.2e6,
                f"{_SRC} bbr_min_tso_rate",
                "below this pacing rate the TSO goal is 1 packet, else at least 2",
                lo=0.0,
            ),
            Param(
                "lt_bw",
                "",
                True,
                f"{_SRC} bbr_lt_bw_sampling (bbr_lt_intvl_min_rtts 4, bbr_lt_loss_thresh 50/256, "
                "bbr_lt_bw_ratio 1/8, bbr_lt_bw_diff 4 kbit/s, bbr_lt_bw_max_rtts 48)",
                "policer detection: after two 4-16-round intervals with >= 20 % loss and the same delivery "
                "rate, pace at their mean (gain 1) for 48 rounds",
                kind="bool",
            ),
        ),
        signals=(
            Signal("mode", "mode", "", "BBR mode", kind="enum", labels=choice_names(Mode)),
            Signal("cycle_idx", "cycle_idx", "", "PROBE_BW gain-cycle phase (0: gain 1.25, 1: 0.75, 2-7: 1.0)"),
            Signal(
                "btl_bw",
                "btl_bw",
                "bit/s",
                "bandwidth estimate bbr_bw: windowed max delivery rate, or the policed rate lt_bw while it is in use",
            ),
            Signal("min_rtt", "min_rtt", "s", "min RTT estimate (10 s window)"),
            Signal("pacing_rate", "pacing_rate", "bit/s", "pacing rate (payload bits)"),
            Signal("pacing_gain", "pacing_gain", "", "current pacing gain"),
            Signal("cwnd_gain", "cwnd_gain", "", "current cwnd gain"),
            Signal(
                "target_cwnd",
                "target_cwnd",
                "packets",
                "cwnd_gain · BDP + ACK-aggregation allowance + quantization budget",
            ),
            Signal("delivery_rate", "delivery_rate", "bit/s", "last valid delivery-rate sample"),
            Signal("full_bw_reached", "full_bw_reached", "", "STARTUP found the pipe full", kind="bool"),
            Signal("lt_use_bw", "lt_use_bw", "", "the long-term (policed) rate is the bandwidth estimate", kind="bool"),
            Signal(
                "inflight_cap",
                "inflight_cap",
                "packets",
                "what the model lets into flight, min(cwnd, pacing_rate · srtt / (8 · MSS)); the fit compares "
                "this with the trace's flight (a paced sender rarely fills its cwnd)",
            ),
        ),
        default_flavor="linux",
        flavor_doc="linux: tcp_bbr.c (1/256 fixed-point gains, integer bw units, ACK-aggregation allowance, "
        "1 % pacing margin); rfc: the v1 draft's real-valued gains, no aggregation allowance, no margin",
        doc_page="algorithms/bbr.md",
    ),
)
