"""The per-packet state machine behind the event streams (numba, one pass in capture order).

One call handles one flow: every packet of both directions, in frame order (not timestamp
order, so that a clock stepping backwards cannot reorder the conversation — Wireshark does the
same). Sequence numbers arrive already unwrapped to 64 bits and relative to the data sender's
ISN (see :mod:`hscc_trace.events.prep`).

What it computes, and from which source:

* **Segment kinds** with the semantics of Wireshark's ``tcp.analysis`` flags
  (``epan/dissectors/packet-tcp.c``, ``tcp_analyze_sequence_number``): zero-window probe,
  keep-alive, spurious retransmission (``seq + len <= last ACK``), fast retransmission
  (>= 2 duplicate ACKs, ``seq == last ACK`` and within 20 ms of the last ACK), out-of-order
  (below the highest sequence, within the initial RTT — 3 ms when unknown — of the highest
  segment, and not ending exactly at it), otherwise retransmission. Wireshark's own
  duplicate-ACK rule (same window, non-zero window, same ACK, no payload) drives these.
* **rexmit** (loss sense): the segment re-sends bytes already sent (overlaps the sent space
  ``[first seen, snd_max)`` minus holes the capture never saw); keep-alives and zero-window
  probes are never retransmissions in this sense.
* **ACK stream**: cumulative ACK advance, duplicate ACKs (RFC 5681 §2 definition; with SACK an
  ACK that SACKs new data also counts, RFC 6675 §2), the SACK scoreboard (RFC 2018) with
  D-SACK detection (RFC 2883 §4: first block below the cumulative ACK or inside the second
  block), RTT samples (Karn/Partridge — RFC 6298 §3: a data/ACK match only when none of the
  newly acknowledged bytes was ever retransmitted or previously SACKed; otherwise from the
  timestamp echo, RFC 7323 §4), ``outstanding = snd_max − snd_una`` and the pipe (Linux's
  ``tcp_packets_in_flight``, bytes lost as RACK marks them, :func:`tcp_pipe`).
* **Congestion episodes and sender state**: see :func:`analyze` (rules documented in
  docs/events.md) — fast retransmit / SACK recovery after duplicate ACKs or SACK, RTO after a
  silence of about one RTO (RFC 6298 estimator with Linux's 200 ms minimum), ECN once per round
  (RFC 3168 §6.1.2); an episode ends when its recovery point (snd_max at onset, RFC 6582 §3.2)
  is cumulatively acknowledged. Spurious episodes: all retransmissions D-SACKed (RFC 3708) or
  the Eifel check (RFC 3522: the ACK of the first retransmission echoes an older timestamp).
* **Rounds**: a round ends on the first ACK at or above the snd_max recorded when the round
  began (and above the round's starting ACK).

The steps, named after what Linux (``net/ipv4/tcp_input.c``, ``tcp_output.c``) or Wireshark
calls them; :func:`analyze` runs them per row, the state in two records (:data:`STATE`, the
flow's; :data:`PKT`, the packet's — see "the state, in named records" below):

* a data segment (:func:`tcp_data_segment`, then :func:`tcp_data_segment_end`):
  :func:`tcp_analyze_sequence_number` (Wireshark's, the ``tcp.analysis`` flags);
  :func:`tcp_skb_ever_retrans` (the loss sense: re-sent bytes, RFC 6675 IsLost);
  :func:`tcp_transmit_skb` (holes, the ever-retransmitted and in-flight sets —
  :func:`tcp_retrans_in_flight`, Linux's ``retrans_out`` — and, for a first transmission,
  :func:`tcp_event_new_data_sent`); for a retransmission, :func:`tcp_retx_episode_kind` (the
  decision ``tcp_fastretrans_alert`` / the RTO timer takes, with :func:`tcp_rto`) and
  :func:`tcp_enter_recovery` (``tcp_enter_recovery`` / ``tcp_enter_loss``, opening the episode,
  :func:`episode_open`);
* an ACK (:func:`tcp_ack`, then :func:`tcp_ack_end`): :func:`tcp_analyze_ack` (Wireshark's
  duplicate-ACK bookkeeping); :func:`tcp_ack_snd_una`; :func:`tcp_clean_rtx_queue` (cumulative
  advance, the data/ACK RTT sample); :func:`tcp_sacktag_write_queue` (SACK and D-SACK,
  ``tcp_check_dsack``); :func:`tcp_ack_update_rtt` (timestamp-echo sample,
  :func:`tcp_rtt_estimator`); the duplicate-ACK count; :func:`tcp_try_undo` (Eifel as
  ``tcp_packet_delayed``, ``tcp_try_undo_dsack``); :func:`tcp_end_recovery` (``snd_una >=
  high_seq``, and :func:`released_retx_pending` away from the sender);
  :func:`tcp_fastretrans_alert` (the restart, :func:`tcp_ecn_rcv_ecn_echo`);
  :func:`tcp_pipe` (``tcp_packets_in_flight``, RACK's lost bytes); :func:`round_update` (BBR's
  ``bbr_update_round``); :func:`tcp_ca_rtt` (``ca_rtt_us``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba.extending import overload

from hscc_trace.perf.jit import njit

from . import ranges as rg
from .ranges import _bsearch, _gsearch  # noqa: F401 (used here and by the modules importing core)
from .records import Episodes, PacketOut, Rows, SenderView

NOTS = np.int64(-(2**62))  # "no timestamp option" sentinel for unwrapped TS values

# segment kinds (order of schema.SEGMENT_KINDS)
K_NEW, K_RETX, K_FAST, K_SPUR, K_OOO = 0, 1, 2, 3, 4
# probe kinds (schema.PROBE_KINDS)
P_NONE, P_KA, P_ZWP = 0, 1, 2
# states (schema.CONG_STATES)
S_OPEN, S_REC, S_LOSS = 0, 1, 2
# episode kinds (schema.EPISODE_KINDS)
E_FAST, E_SACK, E_RTO, E_ECN = 0, 1, 2, 3
# RTT sources (schema.RTT_SOURCES)
R_SEQ, R_TS = 0, 1

#: ns — how long after a sender-side capture sees an ACK the kernel reads the clock it times the
#: ACK's timestamp-echo sample by (``tcp_mstamp_refresh`` in ``tcp_rcv_established``), counting
#: too the latest-consistent tick start's lateness (:func:`linux_ts_ticks`). Default 15 µs,
#: chosen on the tuning samples' ACKs timed by their echo, against the kernel's own sample (read
#: off ``tcp_probe``'s srtt updates, RFC 6298 §2 in Linux's ×8 fixed point): 0 → 15 µs took the
#: ticks that match from 2,636 to 2,657 of 2,670 there (held out: 2,769 → 2,776 of 2,786); 20 µs
#: and more match fewer on both.
TS_CLOCK_READ_NS = 15_000

F_FIN, F_SYN, F_RST, F_ACK, F_ECE = 0x01, 0x02, 0x04, 0x10, 0x40

# warning counter slots
W_TS_BACK, W_ACK_UNSEEN, W_NEG_RTT, W_GAP = 0, 1, 2, 3
N_WARN = 4


@njit(cache=True, inline="always")
def seek(a, v, right, h):
    """``np.searchsorted(a, v, "right" if right else "left")`` (``a`` sorted), galloping from
    ``h`` (the previous answer: queries that mostly move forward a little)."""
    n = a.shape[0]
    if h > n:
        h = n
    if h > 0 and not (a[h - 1] < v or (right and a[h - 1] == v)):
        return _gsearch(a, 0, h, v, right, True)  # (the answer is before h)
    return _gsearch(a, h, n, v, right, False)


@njit(cache=True)
def _ts_lookup(vals, times, n, v):
    i = np.searchsorted(vals[:n], v)
    if i < n and vals[i] == v:
        return times[i]
    return np.int64(-1)


@njit(cache=True, nogil=True)
def linux_ts_ticks(snd, ts, tsv, tse, rtt_src, rtt, ca):
    """At the sender: the RTT sample Linux hands congestion control on an ACK timed by its
    timestamp echo (``rtt_src`` ``R_TS``: the ACK covers retransmitted or previously SACKed data,
    so Karn's rule leaves no sequence sample). The kernel counts it in whole ticks of its TSval
    clock, ``tcp_rtt_tsopt_us``: (clock now − TSecr) · 1 ms, 0 ticks counted as 1 (TCP_TS_HZ =
    1000 since Linux 4.13), where the capture gives the µs value. The clock is read off the
    sender's own TSvals: a least-squares line through (capture time, TSval) of its packets gives
    the rate, and the latest tick start consistent with every packet the phase (a TSval is
    stamped before its packet reaches the capture point, never after); the kernel reads the clock
    for an ACK :data:`TS_CLOCK_READ_NS` after the capture sees it. ``ca`` (ns, −1 = none) is
    rewritten in place where the ACK's own sample is used (not a SACK sample), when the clock
    ticks every millisecond (rate within 1 %), the line predicts at least 90 % of the sender's
    TSvals exactly, and the tick count agrees with the µs sample within 1.5 ticks; otherwise the
    µs value stays. Returns the number of samples rewritten."""
    n = snd.shape[0]
    t0 = np.int64(0)
    v0 = np.int64(0)
    m = 0
    span = 0.0
    sx = 0.0
    sy = 0.0
    sxx = 0.0
    sxy = 0.0
    for i in range(n):
        if snd[i] and tsv[i] != NOTS:
            if m == 0:
                t0 = ts[i]
                v0 = tsv[i]
            x = (ts[i] - t0) / 1e6  # ms
            y = float(tsv[i] - v0)
            span = max(span, y)
            m += 1
            sx += x
            sy += y
            sxx += x * x
            sxy += x * y
    if m < 16:
        return 0
    den = m * sxx - sx * sx
    if den <= 0.0:
        return 0
    slope = (m * sxy - sx * sy) / den  # ticks per ms
    if abs(slope - 1.0) > 0.01 or span < 100.0:  # not a 1 kHz clock, or too short to tell it
        return 0
    phase = np.inf
    for i in range(n):
        if snd[i] and tsv[i] != NOTS:
            d = slope * ((ts[i] - t0) / 1e6) - float(tsv[i] - v0)
            if d < phase:
                phase = d
    hit = 0
    for i in range(n):
        if snd[i] and tsv[i] != NOTS:
            if np.floor(slope * ((ts[i] - t0) / 1e6) - phase + 1e-9) == float(tsv[i] - v0):
                hit += 1
    if hit < 0.9 * m:
        return 0
    done = 0
    for i in range(n):
        if snd[i] or rtt_src[i] != R_TS or tse[i] == NOTS or ca[i] != rtt[i] or rtt[i] < 0:
            continue
        now = np.floor(slope * ((ts[i] + TS_CLOCK_READ_NS - t0) / 1e6) - phase + 1e-9)
        ticks = now - float(tse[i] - v0)
        if ticks < 0.0:
            continue
        if ticks == 0.0:
            ticks = 1.0
        if abs(ticks - rtt[i] / 1e6) > 1.5:
            continue
        ca[i] = np.int64(ticks) * 1_000_000
        done += 1
    return done


# ---- the state, in named records ------------------------------------------------------------
#
# The flow's scalar state is one structured numpy record (:data:`STATE`, ``st["snd_una"]``), the
# packet at hand another (:data:`PKT`: its columns in, its outputs out): numba passes a record as
# one pointer into its array, so a step reads and writes them in place at the cost of a load or a
# store, with no reference counting; interpreted (:mod:`hscc_trace.perf.firstuse`) each is a
# dict of the same fields (:func:`state_array`). The byte-range sets are the rows of one 2-D
# array, grown as they fill, the queues those of another, sized once (:func:`new_state`). Only
# :func:`analyze_rows` touches the batch's arrays: it loads each row into the packet record,
# runs the steps, and stores the outputs; the steps that need other rows
# (:func:`tcp_enter_recovery`, :func:`released_retx_pending`) take the arrays and are called
# only when they act.


class Flow(NamedTuple):
    """The flow's constants: MSS (bytes), the receiver's window-scale shift, SACK permitted,
    DupThresh, the out-of-order threshold (ns), the RTO floor (ns), the vantage."""

    mss: int
    shift: int
    sack: bool
    dupthresh: int
    ooo_ns: int
    rto_min_ns: int
    at_sender: bool


_B, _I = np.bool_, np.int64
_EPISODE = ("kind", "start_t", "end_t", "start_i", "end_i", "flight", "retx", "rp", "spur")

#: One flow's scalar state. Groups: the flow's constants (:class:`Flow`, and ``n`` its rows);
#: what Linux keeps in ``struct tcp_sock`` as the capture shows it (``snd_una``, the highest
#: ``snd_nxt`` as ``snd_max``, the lowest sequence sent, the duplicate-ACK count, the window last
#: seen, the last advancing ACK's time and sender-side RTT part, the RFC 6298 estimator in ns,
#: ``icsk_ca_state`` as ``S_*``, the rows the episode logic refers back to); Wireshark's
#: ``tcp_analyze_seq_info`` of the two directions (``ws_*``: the sender's ``nextseq`` and when
#: it moved, the receiver's ``lastack`` and when, its ``dupack_num``, raw window and next
#: sequence); the congestion episodes (``ep_*``: how many, the current one — its row of the
#: episode table and that row's columns, whether active (its recovery point ``ep_rp`` is Linux's
#: ``high_seq``), its first retransmission's sequence and TSval for Eifel, the bytes D-SACKed
#: inside its retransmitted span; ``pe_*``: the one before, until :func:`analyze` stores it);
#: RTT rounds (``rnd_*``, as BBR's ``bbr_update_round``: a round ends when the data sent at its
#: start is acknowledged; the round of the last ECN reaction); the lengths of the range sets and
#: queues and the bytes they hold (:func:`new_state`); the current ACK's RTT sample; warnings.
STATE = np.dtype(
    [
        *[("mss", _I), ("shift", _I), ("sack", _B), ("dupthresh", _I), ("ooo_ns", _I)],
        *[("rto_min_ns", _I), ("at_sender", _B), ("n", _I)],
        # struct tcp_sock
        *[("have_snd", _B), ("have_una", _B), ("snd_min", _I), ("snd_max", _I), ("snd_una", _I)],
        *[("dupacks", _I), ("last_win", _I), ("adv_t", _I), ("adv_off", _I), ("have_adv", _B)],
        *[("srtt", _I), ("rttvar", _I), ("ca_state", _I)],
        ("pending_cong", _I),  # an RTO's onset, marked on the next ACK
        ("last_ack_row", _I),
        ("last_end_row", _I),  # the ACK that ended the last episode
        ("trig_row", _I),  # the ACK that crossed DupThresh (-1: none since the last advance)
        ("prev_t", _I),
        # Wireshark
        *[("ws_have_next", _B), ("ws_next_seq", _I), ("ws_next_t", _I), ("ws_have_lastack", _B)],
        *[("ws_lastack", _I), ("ws_lastack_t", _I), ("ws_dupnum", _I), ("ws_rev_win", _I)],
        *[("ws_have_rev_next", _B), ("ws_rev_next", _I)],
        # congestion episodes
        *[("ep_n", _I), ("ep_active", _B), ("ep_cur", _I), ("ep_first_seq", _I), ("ep_first_tsv", _I)],
        *[("ep_eifel_done", _B), ("ep_dsack", _I), ("ep_retx_lo", _I), ("ep_retx_hi", _I)],
        *[("ep_" + k, _B if k == "spur" else _I) for k in _EPISODE],
        ("pe_cur", _I),
        *[("pe_" + k, _B if k == "spur" else _I) for k in _EPISODE],
        # rounds
        *[("rnd", _I), ("rnd_started", _B), ("rnd_target", _I), ("rnd_start_ack", _I), ("rnd_last_ecn", _I)],
        # range sets and queues: lengths and byte counts
        *[("sack_n", _I), ("sacked", _I), ("ever_n", _I), ("rtx_n", _I), ("rtx_bytes", _I)],
        *[("rtx_sacked", _I), ("hole_n", _I), ("q_head", _I), ("q_n", _I), ("tsv_n", _I)],
        # the current ACK's RTT sample: value, source (R_*, -1 none), its sender-side part
        *[("ack_rtt", _I), ("ack_src", _I), ("ack_off", _I)],
        *[("warn_gap", _I), ("warn_ack_unseen", _I), ("warn_neg_rtt", _I)],
    ],
    align=True,
)

_OUT = ("kind", "probe", "rexmit", "seg_out", "seg_round", "isack", "ackrel", "acked", "sacked", "dsack")
_OUT += ("dup", "rwnd", "rtt", "rtt_src", "snd_max", "out", "pipe", "round", "round_end", "tgt")
_OUT += ("state", "cong", "undo", "ca_rtt")
_OUT_BOOL = ("rexmit", "isack", "round_end", "undo")

#: The packet at hand: its columns (:class:`.records.Rows`, :class:`.records.SenderView`; ``off``
#: may be rewritten), its outputs (``o_*``: :class:`.records.PacketOut`; ``seg_set``: the
#: segment's are set, ``ack_set``: the ACK's), and what one step tells the next (``retx_ep``: a
#: retransmission above snd_una; ``sack_hi``: the right edge of the highest block that SACKs new
#: data at its end; ``undo``).
PKT = np.dtype(
    [
        *[("ts", _I), ("seq", _I), ("ack", _I), ("plen", _I), ("flags", _I), ("win", _I)],
        *[("tsv", _I), ("tse", _I), ("sn", _I), ("off", _I), ("ahead", _I), ("rel", _I)],
        *[("o_" + k, _B if k in _OUT_BOOL else _I) for k in _OUT],
        *[("seg_set", _B), ("ack_set", _B), ("retx_ep", _B), ("sack_hi", _I), ("undo", _B)],
    ],
    align=True,
)


def _fields(dtype: np.dtype) -> dict[str, object]:
    assert dtype.names is not None
    return {k: np.bool_(False) if dtype[k] == np.bool_ else np.int64(0) for k in dtype.names}


def state_array() -> list[dict[str, object]]:
    """A zeroed 1-element :data:`STATE` array. Compiled (the overload below) a numpy record
    array; interpreted (:mod:`hscc_trace.perf.firstuse`) a list holding a dict of the same fields
    and zeros: in Python a numpy record's field costs about 0.5 µs, a dict's 0.03 µs, and the
    steps read the same ``st["field"]`` from either."""
    return [_fields(STATE)]


def packet_array() -> list[dict[str, object]]:
    """A zeroed 1-element :data:`PKT` array, as :func:`state_array`."""
    return [_fields(PKT)]


@overload(state_array)
def _state_array_compiled():  # type: ignore[no-untyped-def]
    return lambda: np.zeros(1, STATE)


@overload(packet_array)
def _packet_array_compiled():  # type: ignore[no-untyped-def]
    return lambda: np.zeros(1, PKT)


# rows of the range-set array ``bd`` (:func:`new_state`): the SACK scoreboard; the bytes ever
# retransmitted (``TCPCB_EVER_RETRANS``: Karn); the retransmitted bytes in flight
# (``retrans_out``); the holes the capture never saw (each ``[l, r)``, :mod:`.ranges`)
SACK_L, SACK_R, EVER_L, EVER_R, RTX_L, RTX_R, HOLE_L, HOLE_R = 0, 1, 2, 3, 4, 5, 6, 7
N_SETS = 8
# rows of the queue array ``qd``: the first transmissions (end, send time, sender-side RTT part),
# sorted by end — Linux's retransmit queue, ``q_head`` its first unacknowledged entry; the
# sender's TSvals with the time each was first seen and its sender-side RTT part
Q_E, Q_T, Q_O, TSV_V, TSV_T, TSV_O = 0, 1, 2, 3, 4, 5
N_QUEUES = 6
#: ranges the set array ``bd`` starts with (each row; fewer when the flow cannot need them): it
#: doubles when an insertion could overflow it (:func:`analyze`)
SETS_START = 32


@njit(cache=True)
def new_state(flow, r):
    """The state at the flow's first row (a 1-element :data:`STATE` array), its range sets
    (``bd``: ``N_SETS`` rows of :data:`SETS_START` ranges, or the flow's worst case if smaller —
    one range per insertion and per split — grown by :func:`analyze`) and its queues (``qd``:
    ``N_QUEUES`` rows, one entry per data segment at most: never grown)."""
    n = r.snd.shape[0]
    n_snd = 0
    n_blk = 0
    for i in range(n):
        if r.snd[i]:
            n_snd += 1
        else:
            n_blk += r.sn[i]
    worst = max(n_blk, 2 * n_snd) + 1
    bd = np.empty((N_SETS, min(worst, SETS_START)), np.int64)
    qd = np.empty((N_QUEUES, max(n_snd, 1)), np.int64)
    sa = state_array()
    st = sa[0]
    st["mss"] = flow.mss
    st["shift"] = flow.shift
    st["sack"] = flow.sack
    st["dupthresh"] = flow.dupthresh
    st["ooo_ns"] = flow.ooo_ns
    st["rto_min_ns"] = flow.rto_min_ns
    st["at_sender"] = flow.at_sender
    st["n"] = n
    st["last_win"] = -1
    st["srtt"] = -1
    st["pending_cong"] = -1
    st["last_ack_row"] = -1
    st["last_end_row"] = -1
    st["trig_row"] = -1
    st["prev_t"] = r.ts[0] if n > 0 else 0
    st["ws_rev_win"] = -1
    st["ep_cur"] = -1
    st["pe_cur"] = -1
    st["ep_first_seq"] = -1
    st["ep_first_tsv"] = NOTS
    st["ep_eifel_done"] = True
    st["rnd_last_ecn"] = -1
    st["ca_state"] = S_OPEN
    return sa, bd, qd


@njit(cache=True, inline="always")
def pkt_end(pk):
    """End of the packet's sequence space: SYN and FIN count one each."""
    f = pk["flags"]
    return pk["seq"] + pk["plen"] + (1 if (f & F_SYN) != 0 else 0) + (1 if (f & F_FIN) != 0 else 0)


@njit(cache=True)
def episode_store(st, e, prev):
    """Write the current episode (``prev``: the one before it) to its row of ``e``."""
    if prev:
        j = st["pe_cur"]
        e.kind[j] = st["pe_kind"]
        e.start_t[j] = st["pe_start_t"]
        e.end_t[j] = st["pe_end_t"]
        e.start_i[j] = st["pe_start_i"]
        e.end_i[j] = st["pe_end_i"]
        e.flight[j] = st["pe_flight"]
        e.retx[j] = st["pe_retx"]
        e.rp[j] = st["pe_rp"]
        e.spur[j] = st["pe_spur"]
        st["pe_cur"] = -1
        return
    j = st["ep_cur"]
    e.kind[j] = st["ep_kind"]
    e.start_t[j] = st["ep_start_t"]
    e.end_t[j] = st["ep_end_t"]
    e.start_i[j] = st["ep_start_i"]
    e.end_i[j] = st["ep_end_i"]
    e.flight[j] = st["ep_flight"]
    e.retx[j] = st["ep_retx"]
    e.rp[j] = st["ep_rp"]
    e.spur[j] = st["ep_spur"]


# ---- sender → receiver: one segment ----------------------------------------------------------


@njit(cache=True, inline="always")
def tcp_analyze_sequence_number(st, pk):
    """Wireshark's ``tcp_analyze_sequence_number`` on a sender segment: its probe kind (``P_*``:
    ``tcp.analysis.zero_window_probe``, ``keep_alive``) and segment kind (``K_*``:
    ``spurious_retransmission``, ``fast_retransmission``, ``out_of_order``, ``retransmission``),
    then ``nextseq`` advanced (on every packet but a zero-window probe: a pure ACK carries
    snd_nxt too)."""
    s = pk["seq"]
    ln = pk["plen"]
    t = pk["ts"]
    e = pkt_end(pk)
    f = pk["flags"]
    syn_fin_rst = (f & (F_SYN | F_FIN | F_RST)) != 0
    have_next = st["ws_have_next"]
    nxt = st["ws_next_seq"]
    probe = P_NONE
    if ln == 1 and have_next and s == nxt and st["ws_rev_win"] == 0:
        probe = P_ZWP
    elif ln <= 1 and have_next and s == nxt - 1 and not syn_fin_rst:
        probe = P_KA
    kind = K_NEW
    is_seg = ln > 0 or (f & (F_SYN | F_FIN)) != 0
    if is_seg and probe != P_KA:
        not_adv = have_next and s < nxt
        if ln > 1 and have_next and nxt - 1 == s:
            not_adv = False
        if ln > 0 and st["ws_have_lastack"] and s + ln <= st["ws_lastack"]:
            kind = K_SPUR
        # Wireshark computes these gaps as unsigned: a clock step back never qualifies
        elif not_adv and st["ws_dupnum"] >= 2 and st["ws_lastack"] == s and 0 <= (t - st["ws_lastack_t"]) < 20_000_000:
            kind = K_FAST
        elif not_adv and 0 <= (t - st["ws_next_t"]) < st["ooo_ns"] and nxt != e:
            kind = K_OOO
        elif not_adv:
            kind = K_RETX
    if probe != P_ZWP and ((not have_next) or e > nxt):
        st["ws_have_next"] = True
        st["ws_next_seq"] = e
        st["ws_next_t"] = t
    return probe, kind


@njit(cache=True, inline="always")
def tcp_skb_ever_retrans(st, pk, bd, probe, kind):
    """Whether the segment re-sends bytes already sent (the loss sense of a retransmission):
    it overlaps the sent space ``[snd_min, snd_max)`` minus the holes the capture never saw, or
    Wireshark calls it a retransmission, or (RFC 6675 IsLost) the receiver has SACKed more than
    (DupThresh − 1) · MSS above it — an out-of-order segment long after the highest one re-sends
    bytes lost before the capture point. Probes never count."""
    s = pk["seq"]
    e = pkt_end(pk)
    snd_min = st["snd_min"]
    snd_max = st["snd_max"]
    pre = 0
    if s < snd_min:
        pre = (e if e < snd_min else snd_min) - s
    ml = s if s > snd_min else snd_min
    mr = e if e < snd_max else snd_max
    inside = 0
    if mr > ml:
        hom = st["hole_n"]
        inside = (mr - ml) - (rg.overlap(bd[HOLE_L], bd[HOLE_R], hom, ml, mr) if hom > 0 else 0)
    sent_before = pre + inside
    rexmit = probe == P_NONE and (sent_before > 0 or kind == K_RETX or kind == K_FAST or kind == K_SPUR)
    sbm = st["sack_n"]
    if (not rexmit) and probe == P_NONE and e < snd_max and sbm > 0:
        if rg.overlap(bd[SACK_L], bd[SACK_R], sbm, e, snd_max) > (st["dupthresh"] - 1) * st["mss"]:
            rexmit = True
    return rexmit, sent_before


@njit(cache=True, inline="always")
def tcp_retrans_in_flight(st, bd, xl, xr):
    """Add ``[xl, xr)`` to the retransmitted bytes in flight (``retrans_out``), keeping how many of
    them the scoreboard covers."""
    sbm = st["sack_n"]
    xpm = st["rtx_n"]
    if sbm > 0:
        st["rtx_sacked"] += rg.gain(bd[RTX_L], bd[RTX_R], xpm, xl, xr, bd[SACK_L], bd[SACK_R], sbm)
    xpm, added = rg.insert(bd[RTX_L], bd[RTX_R], xpm, xl, xr)
    st["rtx_n"] = xpm
    st["rtx_bytes"] += added


@njit(cache=True, inline="always")
def tcp_event_new_data_sent(st, pk, qd):
    """A first transmission: its send time (and sender-side RTT part) into the queue sorted by
    end, for the data/ACK RTT match (Linux stamps ``skb->skb_mstamp_ns``)."""
    rh = st["q_head"]
    rm = st["q_n"]
    e = pkt_end(pk)
    q_e, q_t, q_o = qd[Q_E], qd[Q_T], qd[Q_O]
    pos = rm if (rm == rh or q_e[rm - 1] <= e) else _gsearch(q_e, rh, rm, e, False, True)
    q = rm
    while q > pos:
        q_e[q] = q_e[q - 1]
        q_t[q] = q_t[q - 1]
        q_o[q] = q_o[q - 1]
        q -= 1
    q_e[pos] = e
    q_t[pos] = pk["ts"]
    q_o[pos] = pk["off"]
    st["q_n"] = rm + 1


@njit(cache=True, inline="always")
def tcp_transmit_skb(st, pk, bd, qd, probe, rexmit, sent_before):
    """The sender's bookkeeping of a segment: a probe byte goes to the ever-retransmitted set (an
    ACK covering it gives no RTT: Karn); otherwise a jump past snd_max leaves a hole the capture
    never saw, the segment fills holes, a retransmission goes to the ever-retransmitted and
    in-flight sets (``tcp_retransmit_skb``), a first transmission to the queue
    (:func:`tcp_event_new_data_sent`); snd_max advances."""
    s = pk["seq"]
    e = pkt_end(pk)
    if probe == P_ZWP:
        xam, _a = rg.insert(bd[EVER_L], bd[EVER_R], st["ever_n"], s, e)
        st["ever_n"] = xam
        return
    snd_max = st["snd_max"]
    if s > snd_max:
        hom, _a = rg.insert(bd[HOLE_L], bd[HOLE_R], st["hole_n"], snd_max, s)
        st["hole_n"] = hom
        st["warn_gap"] += 1
    hom = st["hole_n"]
    if hom > 0 and s < bd[HOLE_R, hom - 1] and e > bd[HOLE_L, 0]:
        hom, _f = rg.remove(bd[HOLE_L], bd[HOLE_R], hom, s, e)
        st["hole_n"] = hom
    if rexmit:
        una = st["snd_una"]
        xl = s if s > una else una
        xr = e if e < snd_max else snd_max
        if xr > xl:
            xam, _a = rg.insert(bd[EVER_L], bd[EVER_R], st["ever_n"], xl, xr)
            st["ever_n"] = xam
            tcp_retrans_in_flight(st, bd, xl, xr)
    elif sent_before == 0 and pk["plen"] > 0:
        tcp_event_new_data_sent(st, pk, qd)
    if e > snd_max:
        st["snd_max"] = e


@njit(cache=True, inline="always")
def tcp_rto(st):
    """The retransmission timeout (RFC 6298 §2 with Linux's floor; 1 s before any sample)."""
    srtt = st["srtt"]
    if srtt > 0:
        var4 = 4 * st["rttvar"]
        return srtt + (var4 if var4 > st["rto_min_ns"] else st["rto_min_ns"])
    return np.int64(1_000_000_000)


@njit(cache=True, inline="always")
def episode_open(st, kind, t, i, rp):
    """A new congestion episode (row ``ep_n`` of the episode table) of ``kind`` at row ``i``,
    recovery point ``rp`` (Linux's ``high_seq``); the one it follows is kept in ``pe_*`` until
    :func:`analyze` writes it to its row (:func:`episode_store`)."""
    st["pe_cur"] = st["ep_cur"]
    st["pe_kind"] = st["ep_kind"]
    st["pe_start_t"] = st["ep_start_t"]
    st["pe_end_t"] = st["ep_end_t"]
    st["pe_start_i"] = st["ep_start_i"]
    st["pe_end_i"] = st["ep_end_i"]
    st["pe_flight"] = st["ep_flight"]
    st["pe_retx"] = st["ep_retx"]
    st["pe_rp"] = st["ep_rp"]
    st["pe_spur"] = st["ep_spur"]
    cur = st["ep_n"]
    st["ep_cur"] = cur
    st["ep_n"] = cur + 1
    st["ep_active"] = True
    st["ep_kind"] = kind
    st["ep_start_t"] = t
    st["ep_start_i"] = i
    st["ep_end_t"] = -1
    st["ep_end_i"] = -1
    st["ep_flight"] = rp - st["snd_una"]
    st["ep_retx"] = 0
    st["ep_rp"] = rp
    st["ep_spur"] = False
    st["ep_eifel_done"] = True
    st["ep_dsack"] = 0
    st["ep_retx_lo"] = 0
    st["ep_retx_hi"] = 0


@njit(cache=True, inline="always")
def tcp_retx_episode_kind(st, pk, bd):
    """Which episode a retransmission opens (``E_*``, −1: none), as Linux's
    ``tcp_fastretrans_alert`` decides from ``icsk_ca_state``: in Open, an RTO after a silence of
    about one RTO at the head with no duplicate ACK or SACK, else fast retransmit / SACK
    recovery after them, else an RTO after half an RTO at the head; in Recovery, an RTO after
    about one RTO (the head retransmitted again, or nothing duplicated); in Loss, an RTO backoff
    (no new episode: the recovery point moves, ``tcp_enter_loss`` again). Away from the
    sender, a retransmission released before the ACK that ended the last episode counts there."""
    s = pk["seq"]
    t = pk["ts"]
    una = st["snd_una"]
    rto = tcp_rto(st)
    have_adv = st["have_adv"]
    ref = st["adv_t"] if have_adv else t
    elapsed = t - ref
    if (not st["at_sender"]) and have_adv:
        # the retransmission reaches the capture point one sender-side part after it left the
        # sender, the advancing ACK left the capture point that much before it reached the sender
        elapsed -= st["adv_off"]
    head = s <= una
    dup_or_sack = st["dupacks"] > 0 or st["sacked"] > 0
    state = st["ca_state"]
    cur = st["ep_cur"]
    active = st["ep_active"]
    if (
        (not st["at_sender"])
        and state == S_OPEN
        and cur >= 0
        and (not active)
        and st["ep_kind"] != E_ECN
        and 0 <= pk["rel"] < st["last_end_row"]
    ):
        # away from the sender: released by an ACK before the one that ended the last episode,
        # so sent while the sender was still in it — its bytes count there, no new episode
        snd_max = st["snd_max"]
        ee = pkt_end(pk)
        st["ep_retx"] += (ee if ee < snd_max else snd_max) - (s if s > una else una)
        return -1
    if state == S_OPEN:
        if head and (not dup_or_sack) and elapsed * 10 >= rto * 9:
            return E_RTO
        if dup_or_sack:
            return E_SACK if (st["sack"] or st["sacked"] > 0) else E_FAST
        if head and elapsed * 2 >= rto:
            return E_RTO
        return -1
    again = rg.overlap(bd[RTX_L], bd[RTX_R], st["rtx_n"], una, una + 1) > 0 and active and st["ep_retx"] > 0
    if head and elapsed * 10 >= rto * 9 and (state == S_LOSS or again or not dup_or_sack):
        if state == S_LOSS:
            # RTO backoff inside Loss: no new transition, the recovery point moves
            st["ep_rp"] = st["snd_max"]
            return -1
        return E_RTO
    return -1


@njit(cache=True, inline="always")
def tcp_enter_recovery(st, pk, bd, o, ts, i, start):
    """Open the episode ``start`` a retransmission shows (``tcp_enter_recovery`` /
    ``tcp_enter_loss``): it begins at the ACK the sender decided on — away from the sender the
    one that released the retransmission, else the one that crossed DupThresh — its recovery
    point is the sender's snd_max then. Fast retransmit / SACK recovery marks that ACK (and the
    ACKs seen between it and the retransmission) in Recovery; an RTO marks the next ACK, and
    (``tcp_enter_loss``) takes earlier retransmissions out of flight."""
    s = pk["seq"]
    ee = pkt_end(pk)
    t = pk["ts"]
    una = st["snd_una"]
    snd_max = st["snd_max"]
    last_end_row = st["last_end_row"]
    if st["ep_active"]:
        st["ep_end_t"] = t
        st["ep_end_i"] = i
    rp = snd_max
    mark = st["last_ack_row"]
    if not st["at_sender"]:
        # the sender decided on the ACK that released this retransmission; the recovery point
        # is the sender's snd_max when it sent it (bytes lost before the capture point included)
        rel = pk["rel"]
        trig = st["trig_row"]
        if rel > last_end_row and rel <= mark and o.isack[rel]:
            mark = rel
        elif trig > last_end_row and trig >= 0:
            # no ACK placed before it: the ACK that crossed DupThresh (duplicates or SACKed bytes)
            mark = trig
        if pk["ahead"] > rp:
            rp = pk["ahead"]
    episode_open(st, start, t, i, rp)
    if (not st["at_sender"]) and mark >= 0 and start != E_RTO:
        st["ep_start_t"] = ts[mark]
        st["ep_start_i"] = mark
    st["ep_first_seq"] = s
    st["ep_first_tsv"] = pk["tsv"]
    st["ep_eifel_done"] = pk["tsv"] == NOTS
    st["ep_retx_lo"] = s
    st["ep_retx_hi"] = ee
    st["last_ack_row"] = mark
    if start != E_RTO and mark >= 0 and o.cong[mark] < 0 and mark > last_end_row:
        # fast retransmit / SACK recovery: the sender decided on the ACK it just received (the
        # DupThresh-th duplicate or the SACK that marked loss) — mark that ACK, in recovery
        o.cong[mark] = start
        o.state[mark] = S_REC
        # away from the sender, the ACKs seen between that ACK and the retransmission reached
        # the sender after it: in recovery too
        for q in range(mark + 1, i):
            if o.isack[q] and o.state[q] == S_OPEN:
                o.state[q] = S_REC
    else:
        # RTO: the timer fired after the last ACK; mark the next ACK
        st["pending_cong"] = start
    if start == E_RTO:
        st["ca_state"] = S_LOSS
        # Linux tcp_enter_loss: everything outstanding is lost; earlier retransmissions are no
        # longer counted in flight
        st["rtx_n"] = 0
        st["rtx_bytes"] = 0
        st["rtx_sacked"] = 0
        xl = s if s > una else una
        xr = ee if ee < snd_max else snd_max
        if xr > xl:
            tcp_retrans_in_flight(st, bd, xl, xr)
    else:
        st["ca_state"] = S_REC


@njit(cache=True)
def tcp_data_segment(st, pk, bd, qd):
    """A packet of the data sender: its TSval remembered, Wireshark's analysis, a pure ACK's
    sequence (snd_nxt) past snd_max a hole, the loss sense and bookkeeping. Returns the episode a
    retransmission of bytes above snd_una opens (``E_*``, −1: none; :func:`tcp_retx_episode_kind`,
    opened by :func:`tcp_enter_recovery`)."""
    s = pk["seq"]
    ln = pk["plen"]
    f = pk["flags"]
    rst = (f & F_RST) != 0
    if not st["have_snd"]:
        st["have_snd"] = True
        st["snd_min"] = s
        st["snd_max"] = s
        if not st["have_una"]:
            st["snd_una"] = s
            st["have_una"] = True
    tv = pk["tsv"]
    tsn = st["tsv_n"]
    if tv != NOTS and (tsn == 0 or tv > qd[TSV_V, tsn - 1]):
        qd[TSV_V, tsn] = tv
        qd[TSV_T, tsn] = pk["ts"]
        qd[TSV_O, tsn] = pk["off"]
        st["tsv_n"] = tsn + 1
    is_seg = ln > 0 or (f & (F_SYN | F_FIN)) != 0
    probe, kind = tcp_analyze_sequence_number(st, pk)
    if (not is_seg) and (not rst) and s > st["snd_max"]:
        # a pure ACK's sequence number is the sender's snd_nxt: data the capture missed
        hom, _a = rg.insert(bd[HOLE_L], bd[HOLE_R], st["hole_n"], st["snd_max"], s)
        st["hole_n"] = hom
        st["warn_gap"] += 1
        st["snd_max"] = s
    if not is_seg or rst:
        return -1
    rexmit, sent_before = tcp_skb_ever_retrans(st, pk, bd, probe, kind)
    tcp_transmit_skb(st, pk, bd, qd, probe, rexmit, sent_before)
    pk["seg_set"] = True
    pk["o_kind"] = kind
    pk["o_probe"] = probe
    pk["o_rexmit"] = rexmit
    if rexmit and pkt_end(pk) > st["snd_una"]:
        pk["retx_ep"] = True
        return tcp_retx_episode_kind(st, pk, bd)
    return -1


@njit(cache=True)
def tcp_data_segment_end(st, pk):
    """After :func:`tcp_data_segment` (and :func:`tcp_enter_recovery`): a retransmission's bytes
    count in the active episode (not an ECN one), whose retransmitted span grows to cover it; the
    segment's outputs."""
    s = pk["seq"]
    ee = pkt_end(pk)
    una = st["snd_una"]
    snd_max = st["snd_max"]
    if pk["retx_ep"] and st["ep_active"] and st["ep_cur"] >= 0 and st["ep_kind"] != E_ECN:
        st["ep_retx"] += (ee if ee < snd_max else snd_max) - (s if s > una else una)
        if s < st["ep_retx_lo"]:
            st["ep_retx_lo"] = s
        if ee > st["ep_retx_hi"]:
            st["ep_retx_hi"] = ee
    if pk["seg_set"]:
        pk["o_seg_out"] = (ee if (pk["o_probe"] == P_ZWP and ee > snd_max) else snd_max) - una
        pk["o_seg_round"] = st["rnd"]
    pk["o_snd_max"] = snd_max


# ---- receiver → sender: one ACK --------------------------------------------------------------


@njit(cache=True, inline="always")
def tcp_analyze_ack(st, pk):
    """Wireshark's bookkeeping of the receiver's direction: its duplicate-ACK count (same window,
    non-zero window, same ACK, no payload, its next sequence), last ACK, window, next sequence."""
    a = pk["ack"]
    f = pk["flags"]
    if (f & F_ACK) != 0:
        if (
            pk["plen"] == 0
            and pk["win"] != 0
            and pk["win"] == st["ws_rev_win"]
            and st["ws_have_rev_next"]
            and pk["seq"] == st["ws_rev_next"]
            and st["ws_have_lastack"]
            and a == st["ws_lastack"]
            and (f & (F_SYN | F_FIN | F_RST)) == 0
        ):
            st["ws_dupnum"] += 1
        if (not st["ws_have_lastack"]) or a != st["ws_lastack"]:
            st["ws_dupnum"] = 0
        st["ws_have_lastack"] = True
        st["ws_lastack"] = a
    st["ws_lastack_t"] = pk["ts"]
    st["ws_rev_win"] = pk["win"]
    re = pkt_end(pk)
    if (not st["ws_have_rev_next"]) or re > st["ws_rev_next"]:
        st["ws_rev_next"] = re
        st["ws_have_rev_next"] = True


@njit(cache=True, inline="always")
def tcp_clean_rtx_queue(st, pk, bd, qd):
    """The cumulative ACK advances snd_una: the bytes newly acknowledged; the data/ACK RTT sample
    (Karn/Partridge, RFC 6298 §3: the ACK ends a first transmission and none of the newly acked
    bytes was retransmitted or SACKed) with the sender-side part of the segment it times; the
    range sets pruned below the new snd_una. Returns the bytes newly acknowledged; the sample goes to
    ``st["ack_rtt"]``, ``ack_src``, ``ack_off``."""
    a = pk["ack"]
    t = pk["ts"]
    una = st["snd_una"]
    acked = np.int64(0)
    st["ack_rtt"] = -1
    st["ack_src"] = -1
    st["ack_off"] = pk["off"]
    if a <= una:
        return acked
    acked = a - una
    rh = st["q_head"]
    rm = st["q_n"]
    sbm = st["sack_n"]
    xam = st["ever_n"]
    if rm > rh:
        idx = _gsearch(qd[Q_E], rh, rm, a, False, False)
        if idx < rm and qd[Q_E, idx] == a:
            if (xam == 0 or rg.overlap(bd[EVER_L], bd[EVER_R], xam, una, a) == 0) and (
                sbm == 0 or rg.overlap(bd[SACK_L], bd[SACK_R], sbm, una, a) == 0
            ):
                st["ack_rtt"] = t - qd[Q_T, idx]
                st["ack_src"] = R_SEQ
                st["ack_off"] = qd[Q_O, idx]
        st["q_head"] = _gsearch(qd[Q_E], rh, rm, a, True, False)
    xpm = st["rtx_n"]
    if sbm > 0 and xpm > 0:
        st["rtx_sacked"] -= rg.overlap_sets_below(bd[RTX_L], bd[RTX_R], xpm, bd[SACK_L], bd[SACK_R], sbm, a)
    st["snd_una"] = a
    if sbm > 0:
        sbm, pr = rg.prune_below(bd[SACK_L], bd[SACK_R], sbm, a)
        st["sack_n"] = sbm
        st["sacked"] -= pr
    if xam > 0:
        xam, _p = rg.prune_below(bd[EVER_L], bd[EVER_R], xam, a)
        st["ever_n"] = xam
    if xpm > 0:
        xpm, _p = rg.prune_below(bd[RTX_L], bd[RTX_R], xpm, a)
        st["rtx_n"] = xpm
        st["rtx_bytes"] -= _p
    hom = st["hole_n"]
    if hom > 0:
        hom, _p = rg.prune_below(bd[HOLE_L], bd[HOLE_R], hom, a)
        st["hole_n"] = hom
    st["dupacks"] = 0
    st["trig_row"] = -1
    st["adv_t"] = t
    st["adv_off"] = pk["off"]
    st["have_adv"] = True
    return acked


@njit(cache=True, inline="always")
def tcp_sacktag_write_queue(st, pk, bd, sl, sr, i):
    """The ACK's SACK blocks onto the scoreboard (RFC 2018), clipped to ``[snd_una, snd_max)``;
    a D-SACK block (``tcp_check_dsack``, RFC 2883 §4: the first block below the cumulative ACK or
    inside the second) is counted apart, and inside the current episode's retransmitted span
    toward its undo. Returns ``(newly SACKed bytes, D-SACKed bytes, sack_hi)``: ``sack_hi`` the
    right edge of the highest block that SACKs new data at its end (−1: none)."""
    a = pk["ack"]
    una = st["snd_una"]
    snd_max = st["snd_max"]
    newly = np.int64(0)
    dsk = np.int64(0)
    sack_hi = np.int64(-1)
    nb = pk["sn"]
    for k in range(nb):
        l = sl[i, k]
        rr = sr[i, k]
        if rr <= l:
            continue
        isd = False
        if k == 0:
            if rr <= a:
                isd = True
            elif nb > 1 and l >= sl[i, 1] and rr <= sr[i, 1]:
                isd = True
        if isd:
            dsk += rr - l
            if st["ep_cur"] >= 0:
                lo_ = st["ep_retx_lo"]
                hi_ = st["ep_retx_hi"]
                ol = l if l > lo_ else lo_
                orr = rr if rr < hi_ else hi_
                if orr > ol:
                    st["ep_dsack"] += orr - ol
            continue
        if l < una:
            l = una
        if rr > snd_max:
            rr = snd_max
        if rr > l:
            sbm = st["sack_n"]
            fresh_end = sbm == 0 or rg.overlap(bd[SACK_L], bd[SACK_R], sbm, rr - 1, rr) == 0
            xpm = st["rtx_n"]
            if xpm > 0:
                st["rtx_sacked"] += rg.gain(bd[SACK_L], bd[SACK_R], sbm, l, rr, bd[RTX_L], bd[RTX_R], xpm)
            sbm, added = rg.insert(bd[SACK_L], bd[SACK_R], sbm, l, rr)
            st["sack_n"] = sbm
            newly += added
            if added > 0 and fresh_end and rr > sack_hi:
                sack_hi = rr
    st["sacked"] += newly
    return newly, dsk, sack_hi


@njit(cache=True, inline="always")
def tcp_rtt_estimator(st, sample):
    """RFC 6298 §2 (alpha = 1/8, beta = 1/4), in ns."""
    srtt = st["srtt"]
    if srtt < 0:
        st["srtt"] = sample
        st["rttvar"] = sample // 2
    else:
        d = srtt - sample
        if d < 0:
            d = -d
        st["rttvar"] = (3 * st["rttvar"] + d) // 4
        st["srtt"] = (7 * srtt + sample) // 8


@njit(cache=True, inline="always")
def tcp_ack_update_rtt(st, pk, qd, acked):
    """The ACK's RTT sample (``st["ack_rtt"]``, ``ack_src``): the data/ACK one, else (RFC 7323 §4,
    ACKs of new data) from the timestamp echo; a negative one dropped (clock stepped back). A
    sample feeds the estimator with the sender-side part of the segment it times, written back
    (the tables add it too)."""
    tsn = st["tsv_n"]
    tse = pk["tse"]
    rtt = st["ack_rtt"]
    src = st["ack_src"]
    s_off = st["ack_off"]
    if src < 0 and acked > 0 and tse != NOTS and tsn > 0:
        j = _gsearch(qd[TSV_V], 0, tsn, tse, False, True)
        t0 = qd[TSV_T, j] if (j < tsn and qd[TSV_V, j] == tse) else np.int64(-1)
        if t0 >= 0:
            rtt = pk["ts"] - t0
            src = R_TS
            s_off = qd[TSV_O, j]
    if src >= 0 and rtt < 0:
        st["warn_neg_rtt"] += 1
        rtt = -1
        src = -1
    if src >= 0:
        pk["off"] = s_off
        tcp_rtt_estimator(st, rtt + s_off)
    st["ack_rtt"] = rtt
    st["ack_src"] = src


@njit(cache=True, inline="always")
def tcp_try_undo(st, pk):
    """Whether the current episode proves spurious on this ACK: Eifel (RFC 3522 §2, Linux's
    ``tcp_packet_delayed``: the ACK covering the first retransmission echoes an older TSval) or
    D-SACK (RFC 3708 §3, ``tcp_try_undo_dsack``: every retransmitted byte reported twice)."""
    cur = st["ep_cur"]
    if cur < 0:
        return False
    undo = False
    tse = pk["tse"]
    if not st["ep_eifel_done"] and st["snd_una"] > st["ep_first_seq"] and tse != NOTS:
        st["ep_eifel_done"] = True
        if tse < st["ep_first_tsv"] and not st["ep_spur"]:
            st["ep_spur"] = True
            undo = True
    if not st["ep_spur"] and st["ep_kind"] != E_ECN and st["ep_retx"] > 0 and st["ep_dsack"] >= st["ep_retx"]:
        st["ep_spur"] = True
        undo = True
    return undo


@njit(cache=True, inline="always")
def tcp_end_recovery(st, pk, i):
    """The episode ends when its recovery point is cumulatively acknowledged (RFC 6582 §3.2 step 3;
    ``tcp_fastretrans_alert``: ``snd_una >= high_seq``). Returns ``(kind, check)``: the kind of the
    episode that begins on this same ACK (−1: none) — data sent during the recovery and already
    retransmitted in it (lost beyond the recovery point) still outstanding and not SACKed: Linux
    leaves recovery and enters it again at once (``lost_out > 0`` → ``tcp_time_to_recover``), a
    second congestion event with its own reduction whose retransmission came before; ``check``:
    away from the sender, whether it does is :func:`released_retx_pending`."""
    una = st["snd_una"]
    if not (st["ep_active"] and una >= st["ep_rp"]):
        return -1, False
    st["ep_active"] = False
    st["ep_end_t"] = pk["ts"]
    st["ep_end_i"] = i
    st["ca_state"] = S_OPEN
    st["last_end_row"] = i
    kind = st["ep_kind"]
    if kind != E_FAST and kind != E_SACK:
        return -1, False
    if st["rtx_n"] > 0 and st["rtx_bytes"] - st["rtx_sacked"] > 0:
        return kind, False
    return -1, not st["at_sender"]


@njit(cache=True)
def released_retx_pending(r, v, i, una):
    """Away from the sender, a retransmission it sent before ACK row ``i`` reached it may not have
    arrived yet: one released by an earlier ACK, seen later, that re-sends bytes (it starts below
    the sender's snd_max then) the ACK does not cover. (Segments are released in capture order:
    the first one released by this ACK or later ends the search.)"""
    for q in range(i + 1, r.snd.shape[0]):
        if not r.snd[q] or (r.plen[q] == 0 and (r.flags[q] & (F_SYN | F_FIN)) == 0):
            continue
        if v.rel[q] >= i:
            return False
        if v.rel[q] >= 0 and r.seq[q] < v.ahead[q] and r.seq[q] + r.plen[q] > una:
            return True
    return False


@njit(cache=True, inline="always")
def tcp_ecn_rcv_ecn_echo(st, pk, i):
    """An ECN echo (RFC 3168 §6.1.2: one reaction per round, in Open with no episode active)
    opens an ECN episode, which ends at once when nothing is outstanding. Returns whether it did."""
    if (pk["flags"] & F_ECE) == 0 or (pk["flags"] & F_SYN) != 0:
        return False
    if st["ca_state"] != S_OPEN or st["ep_active"] or st["rnd_last_ecn"] == st["rnd"]:
        return False
    st["rnd_last_ecn"] = st["rnd"]
    t = pk["ts"]
    snd_max = st["snd_max"]
    episode_open(st, E_ECN, t, i, snd_max)
    if snd_max <= st["snd_una"]:
        st["ep_active"] = False
        st["ep_end_t"] = t
        st["ep_end_i"] = i
    return True


@njit(cache=True, inline="always")
def tcp_pipe(st, bd):
    """Linux's ``tcp_packets_in_flight`` in bytes (RFC 6675 §4 SetPipe's form: outstanding −
    SACKed − lost + retransmitted and not SACKed since), with the bytes lost as Linux's RACK marks
    them (net/ipv4/tcp_recovery.c, ``tcp_recovery`` = 1, the default): ``tcp_rack_reo_wnd``
    returns 0 when no reordering was seen (``tp->reord_seen``; the capture is taken to show none)
    and either the sender is in recovery (``icsk_ca_state >= TCP_CA_Recovery``) or
    ``sacked_out >= tp->reordering`` (3, DupThresh; counted here as DupThresh SACK ranges or more
    than (DupThresh − 1) · MSS SACKed bytes); ``tcp_rack_detect_loss`` then marks every unSACKed
    segment sent before the most recently delivered one lost — every unSACKed byte below the
    highest SACKed byte (originals go out in sequence order; a retransmitted one stays in flight
    through the retransmitted term). Without that, a hole waits out RACK's reordering window
    (``min_rtt/4``) and nothing is lost yet. In Loss every byte below the recovery point not
    SACKed is lost (``tcp_enter_loss``). Returns ``(outstanding, pipe)``."""
    una = st["snd_una"]
    snd_max = st["snd_max"]
    sbm = st["sack_n"]
    sb_tot = st["sacked"]
    out = snd_max - una
    lost = np.int64(0)
    cur = st["ep_cur"]
    dup = st["dupthresh"]
    if st["ca_state"] == S_LOSS and cur >= 0:
        rp = st["ep_rp"] if st["ep_rp"] < snd_max else snd_max
        if rp > una:
            lost = (rp - una) - (rg.overlap(bd[SACK_L], bd[SACK_R], sbm, una, rp) if sbm > 0 else 0)
    elif sbm > 0 and (st["ca_state"] == S_REC or sbm >= dup or sb_tot > (dup - 1) * st["mss"]):
        # RACK with reo_wnd 0: the ranges are sorted, the last one ends at the highest SACKed byte
        lost = (bd[SACK_R, sbm - 1] - una) - sb_tot
    retx_in = st["rtx_bytes"] - st["rtx_sacked"]  # (retransmitted bytes in flight: not SACKed since)
    pipe = out - sb_tot - lost + retx_in
    if pipe < 0:
        pipe = 0
    return out, pipe


@njit(cache=True, inline="always")
def round_update(st, pk):
    """A round ends on the first ACK at or above the snd_max recorded when it began (and above the
    round's starting ACK) — away from the sender, the sender's snd_max when it processed the ACK
    (``ahead``). Returns ``(round of this ACK, whether it ends a round)``."""
    una = st["snd_una"]
    snd_max = st["snd_max"]
    myr = st["rnd"]
    tgt = snd_max if st["at_sender"] or pk["ahead"] < snd_max else pk["ahead"]
    if not st["rnd_started"]:
        st["rnd_started"] = True
        st["rnd_target"] = tgt
        st["rnd_start_ack"] = una
        return myr, False
    if una >= st["rnd_target"] and una > st["rnd_start_ack"]:
        st["rnd"] = myr + 1
        st["rnd_target"] = tgt
        st["rnd_start_ack"] = una
        return myr, True
    return myr, False


@njit(cache=True, inline="always")
def tcp_ca_rtt(st, pk, bd, qd, sack_hi):
    """Linux's RTT sample for congestion control (``tcp_clean_rtx_queue`` → ``ca_rtt_us``, what
    the modules' ``pkts_acked`` and rate sample get): the newest segment this ACK newly SACKs (its
    first transmission, never retransmitted) when there is one, else the ACK's own sample — with
    the vantage correction of the segment it times (the tables add none). (A timestamp-echo
    sample is whole ms ticks in the kernel, ``tcp_rtt_tsopt_us``: at the sender
    :func:`linux_ts_ticks` rewrites it once the flow is done.)"""
    ca = st["ack_rtt"] + pk["off"] if st["ack_src"] >= 0 else np.int64(-1)
    rh = st["q_head"]
    rm = st["q_n"]
    if sack_hi > 0 and rm > rh:
        idx = _gsearch(qd[Q_E], rh, rm, sack_hi, False, False)
        xam = st["ever_n"]
        if (
            idx < rm
            and qd[Q_E, idx] == sack_hi
            and (xam == 0 or rg.overlap(bd[EVER_L], bd[EVER_R], xam, sack_hi - 1, sack_hi) == 0)
        ):
            t = pk["ts"]
            if t >= qd[Q_T, idx]:
                ca = t - qd[Q_T, idx] + qd[Q_O, idx]
    return ca


@njit(cache=True, inline="always")
def tcp_ack_snd_una(st, bd, a):
    """snd_una from the first ACK seen (before any data, snd_max too); an ACK beyond snd_max
    (data the capture did not see) moves snd_max to it."""
    if not st["have_snd"] and not st["have_una"]:
        st["snd_una"] = a
        st["snd_max"] = a
        st["snd_min"] = a
        st["have_una"] = True
    elif not st["have_una"]:
        st["snd_una"] = a
        st["have_una"] = True
    if a > st["snd_max"]:
        st["warn_ack_unseen"] += 1
        bd = bd
        if st["hole_n"] > 0:
            hom, _a = rg.remove(bd[HOLE_L], bd[HOLE_R], st["hole_n"], st["snd_max"], a)
            st["hole_n"] = hom
        st["snd_max"] = a


@njit(cache=True, inline="always")
def tcp_fastretrans_alert(st, pk, i, restart):
    """The episode transitions on an ACK after the end of the current one
    (:func:`tcp_end_recovery`): its immediate restart (``restart``, −1: none), else an ECN
    reaction (:func:`tcp_ecn_rcv_ecn_echo`). Returns the episode kind this ACK begins (−1:
    none)."""
    cong = -1
    if restart >= 0:
        snd_max = st["snd_max"]
        # (away from the sender: the sender's snd_max when it processed this ACK)
        rp = snd_max if (st["at_sender"] or pk["ahead"] < snd_max) else pk["ahead"]
        episode_open(st, restart, pk["ts"], i, rp)
        st["ca_state"] = S_REC
        cong = restart
    if tcp_ecn_rcv_ecn_echo(st, pk, i):
        cong = E_ECN
    return cong


@njit(cache=True)
def tcp_ack(st, pk, bd, qd, sl, sr, i):
    """A packet of the receiver: Wireshark's bookkeeping, then (if it carries an ACK) the
    cumulative advance, the SACK blocks (``sl``, ``sr``: the batch's rows), the RTT sample, the
    duplicate-ACK count (RFC 5681 §2; with SACK an ACK that SACKs new data counts too, RFC 6675
    §2), undo, the end of the episode. Returns :func:`tcp_end_recovery`'s ``(kind, check)``;
    :func:`tcp_ack_end` goes on."""
    tcp_analyze_ack(st, pk)
    f = pk["flags"]
    if (f & F_ACK) == 0:
        pk["o_snd_max"] = st["snd_max"]
        return -1, False
    a = pk["ack"]
    tcp_ack_snd_una(st, bd, a)
    acked = tcp_clean_rtx_queue(st, pk, bd, qd)
    newly, dsk, sack_hi = tcp_sacktag_write_queue(st, pk, bd, sl, sr, i)
    pk["o_acked"] = acked
    pk["o_sacked"] = newly
    pk["o_dsack"] = dsk
    pk["sack_hi"] = sack_hi
    tcp_ack_update_rtt(st, pk, qd, acked)
    una = st["snd_una"]
    if (
        acked == 0
        and a == una
        and pk["plen"] == 0
        and (f & (F_FIN | F_RST | F_SYN)) == 0
        and st["snd_max"] > una
        and (pk["win"] == st["last_win"] or newly > 0)
    ):
        st["dupacks"] += 1
    st["last_win"] = pk["win"]
    pk["undo"] = tcp_try_undo(st, pk)
    return tcp_end_recovery(st, pk, i)


@njit(cache=True)
def tcp_ack_end(st, pk, bd, qd, i, restart):
    """After :func:`tcp_ack`: the episode transitions (:func:`tcp_fastretrans_alert`), then — but
    on a SYN/ACK, which moves snd_una past the SYN but is not part of the ACK clock — an RTO's
    onset marked, the pipe, the round; the ACK's outputs."""
    cong = tcp_fastretrans_alert(st, pk, i, restart)
    pk["o_snd_max"] = st["snd_max"]
    if (pk["flags"] & F_SYN) != 0:
        return
    if st["pending_cong"] >= 0 and cong < 0:
        cong = st["pending_cong"]
        st["pending_cong"] = -1
    out, pipe = tcp_pipe(st, bd)
    myr, rend = round_update(st, pk)
    pk["ack_set"] = True
    pk["o_isack"] = True
    pk["o_ackrel"] = pk["ack"]
    pk["o_dup"] = st["dupacks"]
    pk["o_rwnd"] = pk["win"] << st["shift"]
    pk["o_rtt"] = st["ack_rtt"]
    pk["o_ca_rtt"] = tcp_ca_rtt(st, pk, bd, qd, pk["sack_hi"])
    pk["o_rtt_src"] = st["ack_src"]
    pk["o_out"] = out
    pk["o_pipe"] = pipe
    pk["o_round"] = myr
    pk["o_round_end"] = rend
    pk["o_tgt"] = st["rnd_target"]
    state = st["ca_state"]
    pk["o_state"] = state
    pk["o_cong"] = cong
    pk["o_undo"] = pk["undo"]
    st["last_ack_row"] = i
    if (
        st["trig_row"] < 0
        and state == S_OPEN
        and (st["dupacks"] >= st["dupthresh"] or st["sacked"] > (st["dupthresh"] - 1) * st["mss"])
    ):
        st["trig_row"] = i


# ---- one flow ---------------------------------------------------------------------------------


@njit(cache=True)
def flow_rows(rows, sv, lo, hi):
    """Rows ``lo:hi`` of a batch's rows and sender view (one flow)."""
    r = Rows(
        rows.frame[lo:hi],
        rows.snd[lo:hi],
        rows.ts[lo:hi],
        rows.seq[lo:hi],
        rows.ack[lo:hi],
        rows.plen[lo:hi],
        rows.flags[lo:hi],
        rows.win[lo:hi],
        rows.tsv[lo:hi],
        rows.tse[lo:hi],
        rows.rtsv[lo:hi],
        rows.sl[lo:hi],
        rows.sr[lo:hi],
        rows.sn[lo:hi],
        rows.ecn[lo:hi],
    )
    v = SenderView(sv.off[lo:hi], sv.ahead[lo:hi], sv.rel[lo:hi], sv.peak[lo:hi])
    return r, v


@njit(cache=True)
def flow_outputs(po, ep, lo, hi, el, eh):
    """Rows ``lo:hi`` of a batch's per-row outputs and ``el:eh`` of its episode rows (one flow)."""
    o = PacketOut(
        po.kind[lo:hi],
        po.probe[lo:hi],
        po.rexmit[lo:hi],
        po.seg_out[lo:hi],
        po.seg_round[lo:hi],
        po.isack[lo:hi],
        po.ackrel[lo:hi],
        po.acked[lo:hi],
        po.sacked[lo:hi],
        po.dsack[lo:hi],
        po.dup[lo:hi],
        po.rwnd[lo:hi],
        po.rtt[lo:hi],
        po.rtt_src[lo:hi],
        po.snd_max[lo:hi],
        po.out[lo:hi],
        po.pipe[lo:hi],
        po.round[lo:hi],
        po.round_end[lo:hi],
        po.tgt[lo:hi],
        po.state[lo:hi],
        po.cong[lo:hi],
        po.undo[lo:hi],
        po.ca_rtt[lo:hi],
        po.rtx[lo:hi],
    )
    e = Episodes(
        ep.kind[el:eh],
        ep.start_t[el:eh],
        ep.end_t[el:eh],
        ep.start_i[el:eh],
        ep.end_i[el:eh],
        ep.flight[el:eh],
        ep.retx[el:eh],
        ep.rp[el:eh],
        ep.spur[el:eh],
    )
    return o, e


@njit(cache=True)
def analyze_rows(st, pk, bd, qd, r, v, o, e, warn, i0):
    """:func:`analyze`'s loop from row ``i0``: returns the row it stopped before — the flow's end,
    or a row that could overflow the range sets ``bd`` (then grown by :func:`analyze`, the loop
    goes on from there; ``bd`` is never replaced inside the loop, where a replaced array would
    cost reference-count traffic on every row)."""
    cap = bd.shape[1]
    for i in range(i0, r.snd.shape[0]):
        # the most ranges this row can add to one set: one per SACK block, else two (a hole
        # opened and one split)
        if max(st["sack_n"], st["ever_n"], st["rtx_n"], st["hole_n"]) + (2 if r.snd[i] else r.sn[i]) > cap:
            return i
        t = r.ts[i]
        if t < st["prev_t"]:
            warn[W_TS_BACK] += 1
        st["prev_t"] = t
        pk["ts"] = t
        pk["seq"] = r.seq[i]
        pk["ack"] = r.ack[i]
        pk["plen"] = r.plen[i]
        pk["flags"] = r.flags[i]
        pk["win"] = r.win[i]
        pk["tsv"] = r.tsv[i]
        pk["tse"] = r.tse[i]
        pk["sn"] = r.sn[i]
        pk["off"] = v.off[i]
        pk["ahead"] = v.ahead[i]
        pk["rel"] = v.rel[i]
        pk["o_kind"] = -1
        pk["o_probe"] = 0
        pk["o_rexmit"] = False
        pk["o_isack"] = False
        pk["o_cong"] = -1
        pk["o_undo"] = False
        pk["o_rtt"] = -1
        pk["o_rtt_src"] = -1
        pk["o_round_end"] = False
        pk["seg_set"] = False
        pk["ack_set"] = False
        pk["retx_ep"] = False
        if r.snd[i]:
            start = tcp_data_segment(st, pk, bd, qd)
            if start >= 0:
                tcp_enter_recovery(st, pk, bd, o, r.ts, i, start)
            tcp_data_segment_end(st, pk)
        else:
            restart, check = tcp_ack(st, pk, bd, qd, r.sl, r.sr, i)
            if check and released_retx_pending(r, v, i, st["snd_una"]):
                restart = st["ep_kind"]
            if (pk["flags"] & F_ACK) != 0:
                tcp_ack_end(st, pk, bd, qd, i, restart)
            v.off[i] = pk["off"]
        if st["pe_cur"] >= 0:
            episode_store(st, e, True)
        o.kind[i] = pk["o_kind"]
        o.probe[i] = pk["o_probe"]
        o.rexmit[i] = pk["o_rexmit"]
        o.isack[i] = pk["o_isack"]
        o.cong[i] = pk["o_cong"]
        o.undo[i] = pk["o_undo"]
        o.rtt[i] = pk["o_rtt"]
        o.rtt_src[i] = pk["o_rtt_src"]
        o.round_end[i] = pk["o_round_end"]
        o.snd_max[i] = pk["o_snd_max"]
        if pk["seg_set"]:
            o.seg_out[i] = pk["o_seg_out"]
            o.seg_round[i] = pk["o_seg_round"]
        if pk["ack_set"]:
            o.ackrel[i] = pk["o_ackrel"]
            o.acked[i] = pk["o_acked"]
            o.sacked[i] = pk["o_sacked"]
            o.dsack[i] = pk["o_dsack"]
            o.dup[i] = pk["o_dup"]
            o.rwnd[i] = pk["o_rwnd"]
            o.ca_rtt[i] = pk["o_ca_rtt"]
            o.out[i] = pk["o_out"]
            o.pipe[i] = pk["o_pipe"]
            o.round[i] = pk["o_round"]
            o.tgt[i] = pk["o_tgt"]
            o.state[i] = pk["o_state"]
    return r.snd.shape[0]


@njit(cache=True)
def analyze(flow, r, v, o, e, warn):
    """Run the state machine over one flow's rows ``r`` (:class:`.records.Rows`, from
    :func:`flow_rows`) with constants ``flow`` (:class:`Flow`), its sender's view ``v``
    (:class:`.records.SenderView`), its per-row outputs ``o`` (:class:`.records.PacketOut`) and
    episode rows ``e`` (:class:`.records.Episodes`, rows + 1 long; from :func:`flow_outputs`) and
    its warning counters ``warn``; returns the number of episodes.

    ``v.off`` (per packet) is added to RTT samples before they feed the RTO estimator;
    ``flow.at_sender`` is False for receiver-side/mid-path captures, where ``v.ahead`` (per ACK
    row) estimates the sender's snd_max when it processed the ACK, ``v.rel`` (per data-segment
    row) the row of the ACK that released the segment (−1 unknown; see
    :func:`hscc_trace.events.vantage.sender_view`), and ``v.off`` the sender-side part of the RTT
    (at an ACK with an RTT sample it is replaced by that of the segment the sample times, which
    the tables then add too): an episode then begins at the ACK that released its first
    retransmission, its recovery point is the sender's snd_max then, and the time since the last
    advancing ACK (RTO test) is the sender's (the capture point sees the retransmission one
    sender-side part later).

    ``r.snd`` marks packets from the data sender; ``r.seq`` is the sender's relative unwrapped
    sequence for sender packets and the receiver's own (unwrapped) sequence for receiver packets;
    ``r.ack`` is the receiver's cumulative ACK in the sender's relative space (only meaningful
    where ``flags & ACK``). Times in ns; ``flow.mss`` in bytes; ``flow.shift`` the receiver's
    window-scale shift (0 when unknown).
    """
    sa, bd, qd = new_state(flow, r)
    st = sa[0]
    pa = packet_array()
    pk = pa[0]
    i = analyze_rows(st, pk, bd, qd, r, v, o, e, warn, 0)
    while i < r.snd.shape[0]:
        need = max(st["sack_n"], st["ever_n"], st["rtx_n"], st["hole_n"]) + (2 if r.snd[i] else r.sn[i])
        wider = np.empty((N_SETS, max(2 * bd.shape[1], need)), np.int64)
        wider[:, : bd.shape[1]] = bd
        bd = wider
        i = analyze_rows(st, pk, bd, qd, r, v, o, e, warn, i)
    if st["ep_cur"] >= 0:
        episode_store(st, e, False)
    warn[W_GAP] += st["warn_gap"]
    warn[W_ACK_UNSEEN] += st["warn_ack_unseen"]
    warn[W_NEG_RTT] += st["warn_neg_rtt"]
    return sa[0]["ep_n"] + 0 * len(pa)  # (sa, pa: the arrays st and pk point into, live to here)
