"""The replay engine: a flow's ACK stream in, each algorithm's window and signals out.

Open-loop semantics (docs/replay.md): the ACK stream, RTT samples, losses and RTT rounds are
those the *actual* sender produced. A replay answers "what would this algorithm have set as its
window, given exactly these ACKs?" — not "what would the network have done had it sent that
window". The congestion state (open / recovery / loss) follows the trace's ``state`` and
``cong_event`` columns; rounds follow the trace's ``round`` / ``round_end``.

Entry points: :func:`prepare` (schema.ACKS → the per-ACK input matrix), :func:`run` (one
algorithm over a prepared stream), :func:`replay` (a DataFrame and algorithm names in, one
DataFrame per algorithm out) and :func:`replay_flow` (a :class:`~hscc_trace.model.FlowEvents`).
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import polars as pl

from hscc_trace import schema
from hscc_trace.errors import InputError
from hscc_trace.perf import usable_cpus
from hscc_trace.perf.jit import njit

from . import state as S
from . import tp as T
from .compile import loop_function
from .metrics import enum_codes
from .registry import Resolved, resolve, resolve_many
from .tp import (
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
)

#: CPUs this process may run on (the loops run ahead in a helper thread only with two or more)
_CPUS = usable_cpus()
_STATE_CODE = {s: i for i, s in enumerate(schema.CONG_STATES)}  # open 0, recovery 1, loss 2
#: schema.ACKS columns an ACK table may lack (added after ACK tables were first exported)
_OPTIONAL_ACK_COLUMNS = frozenset({"retrans_bytes"})
_EVENT_CODE = {
    "fast_retransmit": T.EV_FAST_RETRANSMIT,
    "sack_recovery": T.EV_SACK_RECOVERY,
    "rto": T.EV_RTO,
    "ecn": T.EV_ECN,
}


@dataclass
class Prepared:
    """A flow's ACK stream as the engine consumes it."""

    ev: np.ndarray  # (n, tp.NEV) float64, columns tp.E_*
    ts_ns: np.ndarray  # (n,) int64 — ACK capture times
    mss: int  # bytes
    first_flight: float  # packets in flight before the first ACK of new data (iw = 0)
    rate_done: bool = False  # the delivery-rate columns (tp.E_RS_*) are filled (see rate_samples)
    # the ACKs' frame numbers (schema.ACKS ``frame``, UInt64): every replay row carries its ACK's
    # frame, the key that joins a replay to the ACK stream; None → the column is null
    frame: pl.Series | None = None
    # s — the handshake's RTT as the sender measured it (FlowEvents.handshake_rtt_s; tp.handshake_rtt), nan: unknown
    handshake_rtt: float = math.nan
    # s — when the sender's congestion control started (tp.ca_init): the SYN/ACK's capture time at a
    # capture at the sender (its last SYN + the handshake RTT, :func:`_ca_init_time`); nan: unknown
    ca_init: float = math.nan
    # the transmit times of new data, when the segments' capture times are the sender's (a capture
    # at the data sender): each new-data segment's first and end byte (bytes, the ACKs' sequence
    # space, ends ascending) and its capture time (s, the clock of ``ev[:, E_T]``); empty: unknown
    # (rate_samples then stamps data with the ACK that released it)
    send_seq: np.ndarray = field(default_factory=lambda: np.zeros(0))
    send_end: np.ndarray = field(default_factory=lambda: np.zeros(0))
    send_t: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # packets — each ACK's snd_max as a packet count (:func:`_packet_counts`, Linux
    # tcp_skb_pcount per segment), and that of the cumulative ACK before the first ACK; empty
    # when ``segments`` were not given (then bytes / MSS)
    snd_pk: np.ndarray = field(default_factory=lambda: np.zeros(0))
    pk0: float = 0.0
    # the pieces of the replay tables that a flow's replays may share (built on first use by
    # _frame: the frame and ts_ns keys, and the last Enum column of each name with its codes)
    _shared: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return int(self.ev.shape[0])


def prepare(
    acks: pl.DataFrame,
    mss: int,
    segments: pl.DataFrame | None = None,
    handshake_rtt: float | None = None,
    *,
    send_times: bool = False,
    at_sender: bool = False,
) -> Prepared:
    """Build the input matrix from a schema.ACKS DataFrame.

    ``mss`` (bytes) converts bytes to packets. The per-ACK "sent since the previous ACK" count that
    PRR and the cwnd-limited test use is the growth of ``snd_max`` plus the retransmitted bytes:
    the ``retrans_bytes`` column (placed as the sender saw them, also at a receiver-side capture),
    or, for an ACK table without it, those of ``segments`` (schema.SEGMENTS) by capture time;
    with neither, only new data is counted. ``handshake_rtt`` (s, None: unknown) is the
    connection's handshake RTT (:attr:`hscc_trace.model.FlowEvents.handshake_rtt_s`), which the
    loop gives the algorithms as ``tp.handshake_rtt``. ``send_times``: the capture times of
    ``segments`` are the sender's transmit times (a capture at the data sender,
    ``FlowEvents.vantage == "sender"``); the delivery-rate samples then time each packet by its
    own transmission (:func:`rate_samples`). ``at_sender``: the capture is at the data sender,
    so that the SYN/ACK's capture time (the SYN's + ``handshake_rtt``) is when the sender's
    congestion control started (``tp.ca_init``, :func:`_ca_init_time`).
    """
    if mss is None or mss <= 0:
        raise InputError(f"MSS must be a positive number of bytes (got {mss!r})")
    have = set(acks.columns)  # (``acks.columns`` makes a new list at each access)
    missing = [c.name for c in schema.ACKS if c.name not in have and c.name not in _OPTIONAL_ACK_COLUMNS]
    if missing:
        raise InputError(f"ACK stream lacks column(s) {', '.join(missing)} (see docs/schema.md)")
    n = acks.height
    ev = np.empty((n, T.NEV), dtype=np.float64)  # every column written by _fill_inputs
    hs = math.nan if handshake_rtt is None or not handshake_rtt > 0 else float(handshake_rtt)
    if n == 0:
        return Prepared(
            ev,
            np.zeros(0, dtype=np.int64),
            int(mss),
            0.0,
            frame=pl.Series("frame", [], dtype=pl.UInt64),
            handshake_rtt=hs,
        )
    m = float(mss)

    # The ACK columns the engine reads, as rows of one float matrix (one kernel signature
    # whatever the columns' dtypes and nulls). Every eager polars expression (fill_null,
    # replace_strict, filter …) plans and runs a query (~0.1 ms); a flow has ~20 columns, so
    # nulls are filled only where there are any; a numeric column without nulls is converted
    # by numpy while copied (as polars' cast to Float64 would).
    cols = np.empty((_NCOLS, n), dtype=np.float64)

    def col(row: int, name: str, fill: float | bool = 0.0) -> None:
        s = acks.get_column(name)
        nulls = s.null_count()
        if not nulls and (s.dtype.is_integer() or s.dtype.is_float() or s.dtype == pl.Boolean):
            cols[row] = s.to_numpy()
            return
        if nulls and s.dtype.is_float() and not math.isnan(fill):
            s = s.fill_null(float(fill))  # a float column may hold real NaNs besides its nulls
        x = (s if s.dtype == pl.Float64 else s.cast(pl.Float64)).to_numpy()
        if nulls and not s.dtype.is_float():  # to_numpy gave NaN exactly at the nulls
            x = np.where(np.isnan(x), float(fill), x)
        cols[row] = x

    ts_s = acks.get_column("ts_ns")
    if ts_s.null_count():
        ts_s = ts_s.fill_null(strategy="forward").fill_null(0)
    ts = ts_s.to_numpy().astype(np.int64)
    col(_C_ACKED, "acked_bytes")
    col(_C_SACKED, "sacked_bytes")
    col(_C_OUTSTANDING, "outstanding")
    pipe = acks.get_column("pipe")
    if pipe.null_count():  # unknown pipe: the outstanding bytes (never below 0)
        known = pipe.cast(pl.Float64).to_numpy()
        cols[_C_PIPE] = np.where(pipe.is_null().to_numpy(), np.maximum(cols[_C_OUTSTANDING], 0.0), known)
    else:
        col(_C_PIPE, "pipe")
    col(_C_ACK, "ack")
    col(_C_SND_MAX, "snd_max")
    has_extra = True  # bytes retransmitted since the previous ACK, when known
    if "retrans_bytes" in have and not acks.get_column("retrans_bytes").null_count():
        col(_C_EXTRA, "retrans_bytes")
    elif segments is not None and segments.height:
        cols[_C_EXTRA] = _retransmitted_between(segments, ts)
    else:
        has_extra = False
    col(_C_RTT, "rtt_s", math.nan)
    if "ca_rtt_s" in have:
        col(_C_CA_RTT, "ca_rtt_s", math.nan)
    else:
        cols[_C_CA_RTT] = cols[_C_RTT]
    col(_C_RWND, "rwnd_bytes", math.inf)
    col(_C_SCALE_KNOWN, "rwnd_scale_known", 1.0)
    cols[_C_STATE] = _column_codes(acks, "state", _STATE_CODE, 0.0)
    cols[_C_EVENT] = _column_codes(acks, "cong_event", _EVENT_CODE, -1.0)
    col(_C_UNDO, "spurious_undo")
    col(_C_ROUND, "round")
    col(_C_ROUND_END, "round_end")
    col(_C_ECE, "ece")
    col(_C_DUPACK, "dupack")
    pk = np.zeros((2, 0))
    pk0 = 0.0
    pmap = _packet_map(segments, m) if segments is not None and segments.height else None
    if pmap is not None:  # the ACKs' and snd_max's sequence numbers as kernel packet counts
        a0 = cols[_C_ACKED, 0] if cols[_C_ACKED, 0] > 0.0 else 0.0
        pk = _packet_counts(pmap, np.stack((cols[_C_ACK], cols[_C_SND_MAX])), m)
        pk0 = float(_packet_counts(pmap, np.array([cols[_C_ACK, 0] - a0]), m)[0])
    first_flight = _fill_inputs(ev, ts, cols, has_extra, m, pk, pk0)
    _idle_times(ev, ts, segments)
    frame = acks.get_column("frame").cast(pl.UInt64).alias("frame")
    prep = Prepared(ev, ts, int(mss), first_flight, frame=frame, handshake_rtt=hs)
    if at_sender and segments is not None and segments.height and hs == hs:
        prep.ca_init = _ca_init_time(segments, int(ts[0]), hs)
    if pmap is not None:
        prep.snd_pk, prep.pk0 = np.ascontiguousarray(pk[1]), pk0
    if send_times and segments is not None and segments.height:
        prep.send_seq, prep.send_end, prep.send_t = _new_data_send_times(segments, int(ts[0]))
    return prep


def _ca_init_time(segments: pl.DataFrame, t0_ns: int, handshake_rtt: float) -> float:
    """When the sender's congestion control started (s since ``t0_ns``; nan: no SYN captured).
    An active opener runs ``tcp_init_congestion_control`` (the module's ``init``) as the SYN/ACK
    arrives (net/ipv4/tcp_input.c ``tcp_rcv_synsent_state_process`` → ``tcp_finish_connect`` →
    ``tcp_init_transfer``). At a capture at the sender that is the SYN/ACK's capture time: the
    last SYN's (the segment at sequence 0 without payload that the SYN/ACK answers, the last one
    before the first byte of data) plus the handshake RTT (SYN → SYN/ACK there)."""
    seq = segments.get_column("seq").to_numpy()
    length = segments.get_column("len").to_numpy()
    end = segments.get_column("end_seq").to_numpy()
    data = np.flatnonzero(length > 0)
    upto = int(data[0]) if data.size else seq.size
    syn = np.flatnonzero((seq[:upto] == 0) & (length[:upto] == 0) & (end[:upto] == 1))
    if not syn.size:
        return math.nan
    return (int(segments.get_column("ts_ns").to_numpy()[syn[-1]]) - t0_ns) / 1e9 + handshake_rtt


def _packet_map(segments: pl.DataFrame, mss: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The sender's packets over its sequence space, as Linux counts them: (starts, ends, cum) of
    contiguous pieces (bytes, ascending) and ``cum[k]`` the packets below piece k (``cum`` has one
    more entry: the total); None without a new-data segment.

    Linux counts the packets of an skb (``tcp_skb_pcount``) when it is built or split:
    net/ipv4/tcp_output.c ``tcp_set_skb_tso_segs`` sets 1 for ``len`` ≤ mss_now, else
    DIV_ROUND_UP(len, mss_now) — a short segment is one packet, a GSO super-segment
    ⌈len / mss⌉. Each new-data segment of the capture (``kind`` new, payload > 0; FIN's
    sequence byte left out) is one piece of ⌈len / mss⌉ packets; a segment whose end does not
    pass every earlier one's is a re-send of captured bytes and adds none, one that overlaps
    the bytes before it counts from their end; bytes no segment covers (not captured) are one
    piece of ⌈gap / mss⌉."""
    kind = segments.get_column("kind")
    length = segments.get_column("len").cast(pl.Float64).to_numpy()
    keep = (_codes(kind, {"new": 1.0}, 0.0) > 0.0) & (length > 0.0)
    if not keep.any():
        return None
    seq = segments.get_column("seq").cast(pl.Float64).to_numpy()[keep]
    end = seq + length[keep]
    first = end > np.concatenate(([-np.inf], np.maximum.accumulate(end)[:-1]))
    seq, end = seq[first], end[first]
    prev_end = np.concatenate((seq[:1], end[:-1]))
    start = np.maximum(seq, prev_end)
    gap = start > prev_end
    starts = np.concatenate((start, prev_end[gap]))
    ends = np.concatenate((end, start[gap]))
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    cum = np.concatenate(([0.0], np.cumsum(np.ceil((ends - starts) / mss))))
    return starts, ends, cum


def _packet_counts(pmap: tuple[np.ndarray, np.ndarray, np.ndarray], x: np.ndarray, mss: float) -> np.ndarray:
    """Packets below each sequence number of ``x`` (bytes, any shape) by the map of
    :func:`_packet_map`. Inside a piece of c packets ending at e: the packets below it plus
    c − ⌈(e − x) / mss⌉ — an ACK into the middle of an skb leaves the rest as one of
    ⌈rest / mss⌉ packets (net/ipv4/tcp_input.c ``tcp_tso_acked``: ``tcp_trim_head``, then
    packets acked = pcount before − pcount after). Below the first piece and beyond the last
    (a SYN or FIN byte, bytes sent after the capture ended): bytes / MSS from that end."""
    starts, ends, cum = pmap
    k = np.searchsorted(starts, x, side="right") - 1
    kc = np.clip(k, 0, starts.shape[0] - 1)
    inside = cum[kc] + np.ceil((ends[kc] - starts[kc]) / mss) - np.ceil((ends[kc] - x) / mss)
    out = np.where(x >= ends[kc], cum[kc + 1] + (x - ends[kc]) / mss, inside)
    return np.where(k < 0, (x - starts[0]) / mss, out)


def _new_data_send_times(segments: pl.DataFrame, t0_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(seq, end, time) of the new-data segments (``kind`` new, with payload), by ascending end:
    bytes and s since ``t0_ns``. A segment whose end does not pass every earlier one's
    (reordered in the capture) is left out, so that ``end`` is strictly ascending."""
    kind = segments.get_column("kind")
    is_new = _codes(kind, {"new": 1.0}, 0.0) > 0.0
    seq = segments.get_column("seq").cast(pl.Float64).to_numpy()
    end = segments.get_column("end_seq").cast(pl.Float64).to_numpy()
    length = segments.get_column("len").cast(pl.Float64).to_numpy()
    keep = is_new & (length > 0.0)
    seq, end = seq[keep], end[keep]
    t = (segments.get_column("ts_ns").to_numpy()[keep] - t0_ns) / 1e9
    if end.size:
        first = end > np.concatenate(([-np.inf], np.maximum.accumulate(end)[:-1]))
        seq, end, t = seq[first], end[first], t[first]
    return np.ascontiguousarray(seq), np.ascontiguousarray(end), np.ascontiguousarray(t)


# rows of prepare's column matrix (the ACK columns _fill_inputs reads, as float64)
_C_ACKED = 0  # bytes (acked_bytes)
_C_SACKED = 1  # bytes (sacked_bytes)
_C_OUTSTANDING = 2  # bytes
_C_PIPE = 3  # bytes (null: the outstanding bytes)
_C_ACK = 4  # bytes
_C_SND_MAX = 5  # bytes
_C_EXTRA = 6  # bytes retransmitted since the previous ACK (when known)
_C_RTT = 7  # s (rtt_s, nan: none)
_C_CA_RTT = 8  # s (ca_rtt_s, else rtt_s)
_C_RWND = 9  # bytes (null: no limit)
_C_SCALE_KNOWN = 10  # 0/1 (null: known)
_C_STATE = 11  # codes of _STATE_CODE
_C_EVENT = 12  # codes of _EVENT_CODE (-1 none)
_C_UNDO = 13  # 0/1
_C_ROUND = 14
_C_ROUND_END = 15  # 0/1
_C_ECE = 16  # 0/1
_C_DUPACK = 17
_NCOLS = 18


@njit(work=lambda a: len(a[1]), cost=(0.74, 9.3e-06), cache=True, nogil=True)
def _fill_inputs(ev, ts, cols, has_extra, mss, pk, pk0):  # pragma: no cover - compiled
    """Fill the input matrix ``ev`` (n × tp.NEV, row-major) row by row from the ACK columns
    (``cols``, rows ``_C_*``: float64, nulls filled; row ``_C_EXTRA`` read only if ``has_extra``)
    and capture times ``ts`` (int64) → the flight before the first ACK of new data (packets).

    Packets: ``pk`` (2 × n, or 2 × 0 without segments) holds each ACK's cumulative ACK and
    snd_max as packet counts (:func:`_packet_counts`; ``pk0`` that of the cumulative ACK before
    the first ACK). With them, the packets an ACK newly acknowledges cumulatively, those
    outstanding and those sent since the previous ACK are counted per segment as Linux does
    (``tcp_skb_pcount``: a short segment is one packet). The bytes schema.ACKS gives without
    their segments — newly SACKed, SACKed before and now covered by the cumulative ACK, left
    out of pipe (SACKed or lost), retransmitted since the previous ACK — are ⌈bytes / MSS⌉
    packets: segments of the MSS with at most one short one among them. Without ``pk``:
    bytes / MSS throughout.

    One pass, row by row: filling the row-major matrix a column at a time with numpy touched
    every cache line of it once per column (~25 times). Byte and packet quantities are clamped
    at 0 as ``np.maximum(x, 0.0)`` does (nan kept).

    ``E_ACKED`` counts the bytes each ACK newly delivers *cumulatively*, excluding bytes already
    SACKed before (Linux ``tcp_newly_delivered`` counts a packet once: when SACKed or, if never
    SACKed, when cumulatively ACKed). schema.ACKS gives the cumulative advance ``acked_bytes``
    and the newly SACKed bytes but not the SACK scoreboard, so the SACKed bytes above the
    cumulative ACK are tracked as a running total S: an ACK that advances while S > 0 must first
    cover a hole (at least one MSS that was never SACKed — the retransmission), and the rest of
    its advance is taken from S."""
    n = ts.shape[0]
    acked, sacked, outstanding, pipe = cols[_C_ACKED], cols[_C_SACKED], cols[_C_OUTSTANDING], cols[_C_PIPE]
    ack, snd_max, extra = cols[_C_ACK], cols[_C_SND_MAX], cols[_C_EXTRA]
    first_flight = 0.0
    found = False
    s = 0.0  # bytes SACKed above the cumulative ACK
    t0 = ts[0] if n else 0
    has_pk = pk.shape[1] == n
    prev_pipe_pk = 0.0  # packets, pipe after the previous ACK (with pk)
    for i in range(n):
        a = acked[i] if (acked[i] > 0.0 or acked[i] != acked[i]) else 0.0
        sk = sacked[i] if (sacked[i] > 0.0 or sacked[i] != sacked[i]) else 0.0
        o = outstanding[i] if (outstanding[i] > 0.0 or outstanding[i] != outstanding[i]) else 0.0
        covered = 0.0
        if a > 0.0 and s > 0.0:
            covered = min(s, max(a - mss, 0.0))
        delivered = a - covered
        s = s - covered + sk
        if s > o:
            s = o
        if s < 0.0:
            s = 0.0
        if i == 0:
            prev_ack = ack[0] - a
            prev_snd_max = prev_ack  # everything outstanding before the first ACK was "sent since"
            prev_pipe = 0.0
        else:
            prev_ack = ack[i - 1]
            prev_snd_max = snd_max[i - 1]
            prev_pipe = pipe[i - 1]
        grown = snd_max[i] - prev_snd_max
        pp = pipe[i]
        if has_pk:
            pk_prev = pk0 if i == 0 else pk[0, i - 1]
            grown_pk = pk[1, i] - (pk_prev if i == 0 else pk[1, i - 1])
            sent = grown_pk if (grown_pk > 0.0 or grown_pk != grown_pk) else 0.0
            acked_pk = pk[0, i] - pk_prev - math.ceil(covered / mss - 1e-9) if a == a else a
            acked_pk = acked_pk if (acked_pk > 0.0 or acked_pk != acked_pk) else 0.0
            sacked_pk = math.ceil(sk / mss - 1e-9) if sk > 0.0 else sk
            flight_pk = pk[1, i] - pk[0, i] if o == o else o
            flight_pk = flight_pk if (flight_pk > 0.0 or flight_pk != flight_pk) else 0.0
            left_out = o - pp  # bytes SACKed or lost (less those retransmitted)
            pipe_pk = flight_pk - (math.ceil(left_out / mss - 1e-9) if left_out > 0.0 else left_out / mss)
            prev_pipe_n = prev_pipe_pk
            prev_pipe_pk = pipe_pk
            packets_out = pk[1, i] - pk_prev
        else:
            sent = (grown if (grown > 0.0 or grown != grown) else 0.0) / mss
            acked_pk = delivered / mss
            sacked_pk = sk / mss
            flight_pk = o / mss
            pipe_pk = pp / mss
            prev_pipe_n = prev_pipe / mss
            packets_out = (snd_max[i] - prev_ack) / mss
        if has_extra and has_pk:
            sent = sent + (math.ceil(extra[i] / mss - 1e-9) if extra[i] > 0.0 else 0.0)
        elif has_extra:
            sent = sent + extra[i] / mss
        prior = prev_pipe_n + sent
        ev[i, E_T] = (ts[i] - t0) / 1e9
        ev[i, E_ACKED] = acked_pk
        ev[i, E_SACKED] = sacked_pk
        ev[i, E_RTT] = cols[_C_RTT, i]
        ev[i, E_FLIGHT] = flight_pk
        ev[i, E_PIPE] = pipe_pk if (pipe_pk > 0.0 or pipe_pk != pipe_pk) else 0.0
        ev[i, E_PRIOR_FLIGHT] = prior if (prior > 0.0 or prior != prior) else 0.0
        ev[i, E_PACKETS_OUT] = packets_out
        ev[i, E_SENT] = sent
        # a window whose scale is unknown (handshake not captured) is only a lower bound of the
        # real one: no limit rather than clamp the replay to an unscaled window
        ev[i, E_RWND] = (cols[_C_RWND, i] if cols[_C_SCALE_KNOWN, i] != 0.0 else math.inf) / mss
        ev[i, E_STATE] = cols[_C_STATE, i]
        ev[i, E_EVENT] = cols[_C_EVENT, i]
        ev[i, E_UNDO] = cols[_C_UNDO, i]
        ev[i, E_ROUND] = cols[_C_ROUND, i]
        ev[i, E_ROUND_END] = cols[_C_ROUND_END, i]
        ev[i, E_ECE] = cols[_C_ECE, i]
        ev[i, E_DUPACK] = cols[_C_DUPACK, i]
        ev[i, E_ACK] = ack[i]
        ev[i, E_SND_MAX] = snd_max[i]
        ev[i, E_PREV_ACK] = prev_ack
        ev[i, E_DATA_ACKED] = 1.0 if a > 0.0 else 0.0
        ev[i, E_RS_DELIVERED] = 0.0  # (filled by rate_samples when an algorithm needs them)
        ev[i, E_RS_INTERVAL] = 0.0
        ev[i, E_RS_PRIOR_DELIVERED] = 0.0
        ev[i, E_RS_LOSSES] = 0.0
        ev[i, E_CA_RTT] = cols[_C_CA_RTT, i]
        ev[i, E_IDLE] = 0.0  # (filled by _idle_times)
        if a > 0.0 and not found:
            found = True
            first_flight = ev[i, E_PRIOR_FLIGHT]
    return first_flight


def _idle_times(ev: np.ndarray, ts: np.ndarray, segments: pl.DataFrame | None) -> None:
    """Fill ``E_IDLE`` in place: on ACK i, when nothing was outstanding after ACK i−1 and the
    sender transmitted new data before ACK i, Linux's ``now − lsndtime`` at that transmission
    (s; include/net/tcp.h ``tcp_slow_start_after_idle_check``, net/ipv4/tcp_output.c
    ``tcp_event_data_sent``): the time from the sender's last data segment to its next one.

    With ``segments`` (schema.SEGMENTS, payload-carrying ones): the first segment captured
    after ACK i−1 minus the last one captured before it — at a sender-side capture both are
    send times; at a receiver-side one both are shifted by the same one-way delay. Without:
    each segment's send time is estimated as its ACK's time minus that ACK's RTT sample
    (ACK i−1's acknowledged the last segment before the idle period, ACK i's the first after);
    no value where either ACK lacks a sample."""
    n = ts.shape[0]
    if n < 2:
        return
    cand = np.flatnonzero((ev[:-1, E_FLIGHT] <= 0.0) & (ev[1:, E_SND_MAX] > ev[:-1, E_SND_MAX])) + 1
    if cand.size == 0:
        return
    if segments is not None and segments.height:
        # (a numpy mask: an eager polars filter plans a query, ≈ 0.1–0.3 ms, once per replay call)
        has_data = segments.get_column("len").to_numpy() > 0
        st = np.sort(segments.get_column("ts_ns").to_numpy().astype(np.int64)[has_data])
        if st.shape[0] < 2:  # no two data segments to bracket an idle period: no value
            return
        j = np.searchsorted(st, ts[cand - 1], side="right")  # first segment after ACK i−1
        ok = (j > 0) & (j < st.shape[0])
        j = np.where(ok, j, 1)
        ok &= st[np.minimum(j, st.shape[0] - 1)] <= ts[cand]
        idle = (st[np.minimum(j, st.shape[0] - 1)] - st[j - 1]) / 1e9
    else:
        t, rtt = ev[:, E_T], ev[:, E_RTT]
        ok = (rtt[cand] > 0.0) & (rtt[cand - 1] > 0.0)
        idle = (t[cand] - rtt[cand]) - (t[cand - 1] - rtt[cand - 1])
    ok &= idle > 0.0
    ev[cand[ok], E_IDLE] = idle[ok]


def _column_codes(acks: pl.DataFrame, name: str, code: Mapping[str, float], default: float) -> np.ndarray:
    """:func:`_codes` of column ``name`` of ``acks``; an Enum column through the label indices
    kept for the table (:func:`hscc_trace.replay.metrics.enum_codes`: the fit and the verdict
    of the flow ask for the same)."""
    coded = enum_codes(acks, name)
    if coded is None:
        return _codes(acks.get_column(name), code, default)
    x, labels = coded
    lut = np.array([code.get(c, default) for c in labels] + [default], dtype=np.float64)
    return lut[x]  # (−1, a null: the last entry)


def _codes(s: pl.Series, code: Mapping[str, float], default: float) -> np.ndarray:
    """Labels → float codes (``default`` for null or unmapped labels). An Enum column maps its
    physical codes through a lookup table; any other dtype goes through strings."""
    dtype = s.dtype  # (made anew at each access: for an Enum, with its categories)
    if isinstance(dtype, pl.Enum):
        cats = dtype.categories.to_list()
        lut = np.array([code.get(c, default) for c in cats] + [default], dtype=np.float64)
        nulls = s.null_count()
        if nulls == s.len():  # (no label at all: the cong_event of most flows)
            return np.full(s.len(), lut[-1])
        phys = s.to_physical()
        if nulls:  # nulls take the last entry (to_numpy gives floats, NaN at the nulls)
            x = phys.to_numpy()
            return lut[np.where(np.isnan(x), len(cats), x).astype(np.intp)]
        return lut[phys.to_numpy()]
    return s.cast(pl.String).replace_strict(code, default=default, return_dtype=pl.Float64).to_numpy()


def _retransmitted_between(segments: pl.DataFrame, ack_ts: np.ndarray) -> np.ndarray:
    """Bytes retransmitted in (ACK i−1, ACK i] for every ACK i (first: everything before it)."""
    out = np.zeros(ack_ts.shape[0])
    not_new = _codes(segments.get_column("kind"), {"new": 0.0}, 1.0)  # null kind: dropped below
    kind = segments.get_column("kind")
    if kind.null_count():
        not_new[kind.is_null().to_numpy()] = 0.0
    rx = np.flatnonzero(not_new)
    if rx.size == 0:
        return out
    t = segments.get_column("ts_ns").to_numpy()[rx]
    b = segments.get_column("len").cast(pl.Float64).to_numpy()[rx]
    idx = np.searchsorted(ack_ts, t, side="left")  # segment before ACK idx
    ok = idx < ack_ts.shape[0]
    np.add.at(out, idx[ok], b[ok])
    return out


def rate_samples(prep: Prepared) -> Prepared:
    """Fill the per-ACK delivery-rate sample columns (``tp.E_RS_*``) of ``prep`` in place, once.

    Linux computes one ``struct rate_sample`` per ACK in the TCP core (net/ipv4/tcp_rate.c,
    draft-cheng-iccrg-delivery-rate-estimation §3): every transmitted packet P records the
    connection's ``delivered`` count and ``delivered_time`` and the send time of the most
    recently delivered packet (``first_sent_time``); when P is (S)ACKed, ``delivered`` over
    ``interval = max(P.sent − P.first_sent, now − P.delivered_time)`` is a sample of the
    delivery rate. From the trace (:func:`_rate_samples`):

    * the data a sender transmits between ACK i−1 and ACK i (growth of ``snd_max``) is one *send
      batch*, sent after ACK i−1 was processed: it records the delivered count after that ACK,
      the time of the last delivery and ``first_sent_time`` then in force; after idle (nothing
      outstanding) both times restart at the send (tcp_rate_skb_sent);
    * a packet's send time (``P.sent``, Linux ``tcp_skb_timestamp_us``) is its own capture time
      when the capture is at the sender (``prepare(send_times=True)``: ``Prepared.send_t``);
      otherwise the batch is stamped with ACK i−1's time, which is late by up to the inter-ACK
      gap for a paced sender (~1-2 ms of a 10-100 ms interval at 10 Mbit/s);
    * the packet an ACK samples is the most recently sent of those it delivers (Linux
      ``tcp_rate_skb_delivered``): the highest byte delivered so far — the cumulative ACK, or,
      for SACKed data, the highest delivered byte plus the newly SACKed bytes (SACK blocks arrive
      in send order; the first lies above a hole of at least one packet) — whose batch holds it; or, when the cumulative ACK fills a
      hole below that byte, a retransmission: retransmissions (packets sent beyond the growth of
      ``snd_max``, known when ``segments`` were given to :func:`prepare`) form their own batches,
      delivered one packet per hole-filling ACK in send order. ACKs that deliver nothing give no
      sample (nan);
    * a sample whose interval is shorter than the smallest RTT so far is dropped, as Linux
      ``tcp_rate_gen`` does (ACK compression would overestimate the rate);
    * ``losses``: packets retransmitted between this ACK and the next (the sender retransmits
      what this ACK marked lost). App-limited marking is not inferred (treated as never
      app-limited, apart from what an algorithm marks itself, e.g. BBR's PROBE_RTT).

    Retransmissions are stamped with the ACK before them either way.
    """
    if prep.rate_done or len(prep) == 0:
        prep.rate_done = True
        return prep
    ev = prep.ev
    # (strided views of the row-major matrix: the kernel reads a row's few columns at a time,
    # where copying each column first cost more than the kernel)
    out = _rate_samples(
        ev[:, T.E_T],
        ev[:, T.E_ACKED],
        ev[:, T.E_SACKED],
        ev[:, T.E_ACK],
        ev[:, T.E_PREV_ACK],
        ev[:, T.E_SND_MAX],
        ev[:, T.E_RTT],
        ev[:, T.E_SENT],
        ev[:, T.E_FLIGHT],
        float(prep.mss),
        prep.send_seq,
        prep.send_end,
        prep.send_t,
        prep.snd_pk,
        prep.pk0,
    )
    ev[:, T.E_RS_DELIVERED] = out[0]
    ev[:, T.E_RS_INTERVAL] = out[1]
    ev[:, T.E_RS_PRIOR_DELIVERED] = out[2]
    ev[:, T.E_RS_LOSSES] = out[3]
    prep.rate_done = True
    return prep


@njit(work=lambda a: len(a[0]), cost=(0.73, 3.7e-06), cache=True, nogil=True)
def _rate_samples(  # pragma: no cover - compiled
    t, acked, sacked, ack, prev_ack, snd_max, rtt, sent, flight, mss, send_seq, send_end, send_t, snd_pk, pk0
):
    """(delivered, interval, prior_delivered, losses) per ACK — see :func:`rate_samples`.
    Units: t and rtt s; acked, sacked, sent, flight packets; ack, prev_ack, snd_max bytes;
    ``send_seq`` / ``send_end`` (bytes, ends ascending) / ``send_t`` (s): the new-data segments
    and their transmit times (Prepared.send_*; empty: unknown). A byte no segment covers (not
    captured) is stamped with the ACK before its batch. ``snd_pk`` (packets, empty: bytes / MSS)
    and ``pk0``: snd_max and the first ACK's previous cumulative ACK as Prepared.snd_pk counts
    them, so that new data is counted in the packets ``sent`` counts."""
    n = t.shape[0]
    n_tx = send_end.shape[0]
    res = np.full((4, n), np.nan)
    # send batches of new data, in sequence order
    b_end = np.empty(n)  # bytes — end of the batch (snd_max after it)
    b_del = np.empty(n)  # packets — delivered when the batch was sent
    b_dtime = np.empty(n)  # s — delivered_time when it was sent
    b_sent = np.empty(n)  # s — its send time
    b_first = np.empty(n)  # s — first_sent_time when it was sent
    # retransmission batches, in send order (each fills holes below the highest delivered byte)
    r_left = np.empty(n)  # packets of the batch not yet delivered
    r_del = np.empty(n)
    r_dtime = np.empty(n)
    r_sent = np.empty(n)
    r_first = np.empty(n)
    nb = 0
    ptr = 0
    nr = 0
    rptr = 0
    delivered = 0.0
    dtime = np.nan  # Linux tp->delivered_mstamp
    first_tx = np.nan  # Linux tp->first_tx_mstamp
    high = prev_ack[0]  # bytes — highest byte delivered so far (+1)
    prev_max = prev_ack[0]
    has_pk = snd_pk.shape[0] == n
    prev_max_pk = pk0  # packets — prev_max as snd_pk counts it
    min_rtt = np.inf
    for i in range(n):
        # 1. what was sent since the previous ACK (after it was processed)
        if has_pk:
            new_pk = max(snd_pk[i] - prev_max_pk, 0.0)
        else:
            new_pk = max(snd_max[i] - prev_max, 0.0) / mss
        rtx_pk = max(sent[i] - new_pk, 0.0) if i > 0 else 0.0
        if new_pk > 0.0 or rtx_pk > 0.0:
            if i > 0:
                ts = t[i - 1]
                idle = flight[i - 1] <= 0.0
            else:  # the first flight, sent one RTT before the first ACK if that is known
                ts = t[0] - rtt[0] if rtt[0] > 0.0 else t[0]
                idle = True
            t_idle = ts
            if new_pk > 0.0 and n_tx > 0:  # the batch's first new segment, when its send time is known
                k = np.searchsorted(send_end, prev_max, side="right")
                if k < n_tx and send_seq[k] <= prev_max:
                    t_idle = send_t[k]
            if idle or not (dtime == dtime):
                dtime = t_idle
                first_tx = t_idle
            if rtx_pk > 0.0:
                r_left[nr] = rtx_pk
                r_del[nr] = delivered
                r_dtime[nr] = dtime
                r_sent[nr] = ts
                r_first[nr] = first_tx
                nr += 1
            if new_pk > 0.0:
                b_end[nb] = snd_max[i]
                b_del[nb] = delivered
                b_dtime[nb] = dtime
                b_sent[nb] = ts
                b_first[nb] = first_tx
                nb += 1
                prev_max = snd_max[i]
                if has_pk:
                    prev_max_pk = snd_pk[i]
        # 2. what this ACK delivers
        if rtt[i] > 0.0 and rtt[i] < min_rtt:
            min_rtt = rtt[i]
        d = acked[i] + sacked[i]
        delivered += d
        new_high = ack[i]
        if sacked[i] > 0.0:  # SACKed data lies above a hole of at least one packet
            below = high if high > ack[i] else ack[i] + mss
            new_high = max(new_high, below + sacked[i] * mss)
        new_high = min(new_high, snd_max[i])
        if d > 0.0:
            dtime = t[i]
        # the packet sampled is the most recently sent of those delivered (tcp_rate_skb_delivered):
        # a retransmission when the cumulative ACK filled a hole below the highest delivered byte,
        # else (or if sent later) the batch holding the new highest delivered byte
        s_del, s_dtime, s_sent, s_first = np.nan, np.nan, -np.inf, np.nan
        if ack[i] > prev_ack[i] and prev_ack[i] < high and rptr < nr:
            s_del, s_dtime, s_sent, s_first = r_del[rptr], r_dtime[rptr], r_sent[rptr], r_first[rptr]
            r_left[rptr] -= 1.0
            if r_left[rptr] <= 1e-9:
                rptr += 1
        if new_high > high and nb > 0:
            high = new_high
            while ptr < nb - 1 and b_end[ptr] < high:
                ptr += 1
            # its send time: that of the segment holding the highest delivered byte, when known
            # (tcp_rate_skb_sent stamps each skb with its own transmit time), else the batch's
            p_sent = b_sent[ptr]
            if n_tx > 0:
                k = np.searchsorted(send_end, high, side="left")
                if k < n_tx and send_seq[k] < high:
                    p_sent = send_t[k]
            if p_sent >= s_sent:
                s_del, s_dtime, s_sent, s_first = b_del[ptr], b_dtime[ptr], p_sent, b_first[ptr]
        if s_del == s_del:
            interval = max(s_sent - s_first, t[i] - s_dtime)
            first_tx = s_sent
            if interval > 0.0 and not (interval < min_rtt):
                res[0, i] = delivered - s_del
                res[1, i] = interval
                res[2, i] = s_del
        # 3. losses: what the sender retransmitted before the next ACK (its reaction to this one)
        if i + 1 < n:
            nxt_new = max(snd_pk[i + 1] - snd_pk[i], 0.0) if has_pk else max(snd_max[i + 1] - snd_max[i], 0.0) / mss
            res[3, i] = max(sent[i + 1] - nxt_new, 0.0)
        else:
            res[3, i] = 0.0
    return res


def _needs_rate(r: Resolved) -> bool:
    return callable(getattr(r.base.module, "cong_control", None))


def run(algo: Resolved | str, prep: Prepared, *, compiled: bool | None = None) -> pl.DataFrame:
    """Replay one algorithm over a prepared stream → schema.REPLAY_BASE + the algorithm's signals.

    ``compiled``: ``True`` the compiled loop (compiled now if not cached), ``False`` the same
    source as plain Python, ``None`` (default) by the first-use rule: compiled when cached, else
    interpreted while the work is small (:func:`hscc_trace.replay.compile.loop_function`)."""
    r = resolve(algo) if isinstance(algo, str) else algo
    if not prep.rate_done and _needs_rate(r):
        rate_samples(prep)
    loop, plan = _setup(r, prep, compiled)
    (mats,) = _outputs(len(prep), [plan])
    loop(*mats)
    return _frame(prep.ts_ns, *mats, plan, prep.frame, prep._shared)


def _setup(r: Resolved, prep: Prepared, compiled: bool | None) -> tuple[Callable[..., None], _Plan]:
    """(a call running ``r``'s loop over ``prep`` into given output matrices, the plan of its
    table): everything but the loop itself, its outputs and the table, done in the calling
    thread. ``prep``'s rate samples must be filled already if ``r`` needs them (:func:`run`
    does it)."""
    init = _initial(r)
    plan = init.plans.get(compiled)
    if plan is None:
        plan = init.plans[compiled] = _plan(r, compiled)
    tpa = init.tpa.copy()
    if init.flow_iw:
        iw = max(round(prep.first_flight), 1.0) if prep.first_flight > 0 else 10.0
        tpa[T.IW] = iw
        tpa[T.CWND] = iw
    tpa[T.MSS] = float(prep.mss)
    tpa[T.HANDSHAKE_RTT] = prep.handshake_rtt
    tpa[T.CA_INIT] = prep.ca_init
    st = S.copy(init.st)
    p = S.copy(init.p)
    fn, tops, ev = plan.fn, plan.tops, prep.ev

    def loop(out: np.ndarray, codes: np.ndarray, nans: np.ndarray) -> None:
        fn(ev, T.record(tpa), st, p, tops, out, codes, nans)

    return loop, plan


@dataclass(frozen=True)
class _Initial:
    """What a loop starts from that does not depend on the flow (made once per algorithm):
    the common parameters ``tpa`` but for the MSS (and the initial window where ``flow_iw``:
    then it is the flow's first flight), the zero state and the parameters (copied per flow), its :class:`_Plan`."""

    r: Resolved  # (kept, so that its id in _INITIAL stays its own)
    tpa: np.ndarray
    flow_iw: bool
    st: Any  # the zero state (Resolved.new_state), copied for each flow
    p: Any  # the parameters (Resolved.new_params)
    plans: dict[bool | None, _Plan] = field(default_factory=dict)  # _plan(r, compiled) by compiled


_INITIAL: dict[int, _Initial] = {}


def _initial(r: Resolved) -> _Initial:
    """:class:`_Initial` of ``r`` (resolved algorithms are immutable: made once per process,
    where ``_setup`` made the same arrays for every flow and algorithm, ≈ 40 µs each)."""
    hit = _INITIAL.get(id(r))
    if hit is not None and hit.r is r:
        return hit
    tpa = np.zeros(T.NTP, dtype=np.float64)
    flavor = r.values["flavor"]
    tpa[T.FLAVOR] = T.LINUX if flavor == "linux" else T.RFC
    iw = float(r.values["iw"])
    tpa[T.IW] = iw
    tpa[T.CWND] = iw
    tpa[T.SSTHRESH] = math.inf
    for k in (T.RTT, T.MIN_RTT, T.SRTT, T.RTTVAR, T.ROUND_MIN_RTT, T.CUR_ROUND_MIN_RTT):
        tpa[k] = math.nan
    tpa[T.LAST_ECN_ROUND] = -1.0
    tpa[T.DELIVERED_TIME] = math.nan
    tpa[T.HANDSHAKE_RTT] = math.nan
    tpa[T.CA_INIT] = math.nan
    tpa[T.CWND_USAGE_SEQ] = -math.inf
    tpa.setflags(write=False)
    hit = _Initial(r, tpa, iw <= 0.0, r.new_state(), r.new_params())
    if len(_INITIAL) >= 256:
        _INITIAL.clear()
    _INITIAL[id(r)] = hit
    return hit


def _outputs(n: int, plans: list[_Plan]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each plan's (out, codes, nans) for a flow of ``n`` ACKs (:class:`_Plan`), column-major
    (every column contiguous): ``out`` its own float matrix (its table's float columns are
    zero-copy views of it), ``codes`` a block of columns of one index matrix for the whole flow
    (gathered into Enum columns, then dropped: one allocation, far fewer page faults than one a
    table), ``nans`` its loop's flags of float columns holding a nan.

    The float matrices stay one per algorithm: one for the whole flow (fewer page faults still)
    kept more memory at the peak of ``analyze`` on replica-5M (635 MB against 597–603 MB): a
    column kept past its table keeps its whole matrix."""
    codes = np.empty((n, sum(p.ncodes for p in plans)), dtype=np.uint32, order="F")
    nans = np.zeros(sum(p.nout for p in plans), dtype=np.uint8)
    blocks = []
    a = c = 0
    for p in plans:
        out = np.empty((n, p.nout), dtype=np.float64, order="F")
        blocks.append((out, codes[:, c : c + p.ncodes], nans[a : a + p.nout]))
        a += p.nout
        c += p.ncodes
    return blocks


#: Loops run ahead in a helper thread while this one builds the previous algorithm's table, for
#: flows of at least this many ACKs (below, a thread hand-over costs more than it saves). The
#: compiled loops release the GIL (``nogil``), the tables need it: on two cores a flow's replays
#: take about the longer of the two instead of their sum. Outputs are the same either way: each
#: loop writes only its own arrays, and the input matrix is read-only by then.
AHEAD_MIN_ACKS = 2000
#: Whether loops may run ahead at all. Off in the corpus runner's tasks
#: (:mod:`hscc_trace.corpus.runner`): its worker processes already keep every core busy, and there
#: the hand-overs only cost CPU (400 captures on 2 workers, two alternating rounds, load ≈ 2:
#: 18.4 / 19.2 s with the look-ahead, 15.5 / 17.4 s without).
LOOK_AHEAD = True
_POOL: Any = None
_POOL_LOCK = threading.Lock()


class _Ahead:
    """A flow's loops shared between the helper thread (:meth:`helper`, from the first on) and
    the calling thread (:meth:`wait`, which takes back the last ones the helper has not
    started): one task handed to the helper per flow, one lock, one condition — where a
    future per loop cost ≈ 50 µs each to submit and collect. A loop's error is raised in the
    calling thread at that loop's turn (the loops' order), wherever it ran."""

    def __init__(self, calls: list[Callable[[], Any]]) -> None:
        self.calls = calls
        self.cv = threading.Condition(threading.Lock())
        self.front = 0  # loops front.. not started by the helper
        self.back = len(calls)  # loops back.. taken back by the calling thread
        self.done = [False] * len(calls)
        self.failed: dict[int, BaseException] = {}

    def _run(self, k: int, here: bool) -> None:
        try:
            self.calls[k]()
        except Exception as exc:  # noqa: BLE001 - raised at its own turn (wait)
            self.failed[k] = exc
        except BaseException as exc:  # (an interrupt: at once in the calling thread)
            self.failed[k] = exc
            if here:
                raise
        finally:
            with self.cv:
                self.done[k] = True
                self.cv.notify_all()

    def helper(self) -> None:
        """The helper thread's part: the loops from the first on, until they meet the ones
        taken back."""
        while True:
            with self.cv:
                k = self.front
                if k >= self.back:
                    return
                self.front = k + 1
            self._run(k, False)

    def wait(self, k: int) -> None:
        """Loop ``k`` has run (the loops before it have): rather than wait for the helper, run
        the last loop it has not started, or loop ``k`` itself if it has not; raises loop ``k``'s
        error."""
        while True:
            with self.cv:
                if self.done[k]:
                    break
                if self.front == k:  # (not started by the helper: run here)
                    self.front = k + 1
                    take = k
                elif self.back - 1 > k and self.back - 1 >= self.front:
                    self.back -= 1
                    take = self.back
                else:
                    self.cv.wait()
                    continue
            self._run(take, True)
        exc = self.failed.get(k)
        if exc is not None:
            raise exc

    def stop(self) -> None:
        """No more loops for the helper (this thread is done with the flow, or failed)."""
        with self.cv:
            self.back = min(self.back, self.front)


def _pool() -> Any:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            from concurrent.futures import ThreadPoolExecutor

            _POOL = ThreadPoolExecutor(1, thread_name_prefix="hscc-replay-loop")
        return _POOL


@dataclass(frozen=True)
class _Plan:
    """How an algorithm's loop writes its outputs and how they become its table (the same for
    every flow).

    The loop writes cwnd, ssthresh and the float signals into ``out`` (one column each, in that
    order) and the state and the enum/bool signals, as label indices (``_loop._label_index``
    with ``tops``), into ``codes`` (the state, then the enum signals, then the bool signals):
    the table's float columns are zero-copy views of ``out``, which holds nothing else, and
    ``codes`` is gathered into Enum and Boolean columns and dropped."""

    base: Any  # the registry's Algorithm objects (kept, so that their ids in _PLANS stay theirs)
    wrapper: Any
    fn: Any  # run_loop(ev, tp, st, p, tops, out, codes, nans)
    nout: int  # columns of ``out``: 2 + float signals
    ncodes: int  # columns of ``codes``: 1 + enum + bool signals
    tops: np.ndarray  # per column of ``codes``: the largest label index (enum), -1 (bool)
    # the signals in declaration order: (name, kind, column in ``out`` or ``codes``, labels)
    columns: tuple[tuple[str, str, int, tuple[str, ...]], ...]


_PLANS: dict[tuple[int, int, bool | None], _Plan] = {}


def _plan(r: Resolved, compiled: bool | None) -> _Plan:
    """The :class:`_Plan` of an algorithm: the same for every flow, so made once per process
    (finding the generated module and listing the signals cost ~0.1 ms a call, as much as
    replaying a short flow). Keyed by the registry's Algorithm objects (kept in the entry, so
    their ids stay theirs)."""
    key = (id(r.base), id(r.wrapper), compiled)
    hit = _PLANS.get(key)
    if hit is None or hit.base is not r.base or hit.wrapper is not r.wrapper:
        sigs = r.signals()
        seen = set(_BASE_NAMES)
        for s in sigs:
            if s.name in seen:
                raise RuntimeError(f"signal {s.name!r} collides with a base column")
            seen.add(s.name)
        # (the order the generated loop writes them in: interface.signal_sources)
        by_kind: dict[str, list[Any]] = {"float": [], "enum": [], "bool": []}
        for s in sigs:
            by_kind[s.kind if s.kind in ("enum", "bool") else "float"].append(s)
        col = {}
        for k, at in (("float", 2), ("enum", 1), ("bool", 1 + len(by_kind["enum"]))):
            for j, s in enumerate(by_kind[k]):
                col[s.name] = at + j
        hit = _Plan(
            r.base,
            r.wrapper,
            loop_function(r.base, r.wrapper, compiled=compiled),
            2 + len(by_kind["float"]),
            1 + len(by_kind["enum"]) + len(by_kind["bool"]),
            np.array(
                [len(_STATES) - 1] + [len(s.labels) - 1 for s in by_kind["enum"]] + [-1] * len(by_kind["bool"]),
                dtype=np.float64,
            ),
            tuple((s.name, s.kind, col[s.name], tuple(s.labels)) for s in sigs),
        )
        _PLANS[key] = hit
    return hit


@lru_cache(maxsize=256)
def _enum_labels(name: str, labels: tuple[str, ...]) -> pl.Series:
    """The labels of an Enum column as a Series of that Enum (built once per process: creating
    the Enum dtype and its string Series costs ~1 ms, more than the whole rest of a frame)."""
    return pl.Series(name, list(labels), dtype=pl.Enum(list(labels)))


def _enum(name: str, labels: tuple[str, ...], idx: np.ndarray, shared: dict[Any, Any] | None = None) -> pl.Series:
    """Label indices (uint32, each < len(labels)) → an Enum column, gathered from the labels (no
    per-row strings).

    With ``shared`` (one dict per flow), a column whose indices equal those of the flow's
    previous column of the same name and labels is that Series again (polars Series are
    immutable): the congestion state follows the trace, so every replay of a flow mostly has the
    same ``state``; comparing the indices costs a fraction of building the column."""
    key = ("enum", name, labels)
    if shared is not None:
        hit = shared.get(key)
        if hit is not None and hit[0].shape == idx.shape and np.logical_and.reduce(hit[0] == idx):
            return hit[1]  # (np.array_equal's checks, without its wrappers)
    col = _gather(_enum_labels(name, labels), idx)
    if shared is not None:
        shared[key] = (idx.copy(), col)  # (a copy: a view would keep the loop's whole output alive)
    return col


_STATES = tuple(schema.CONG_STATES)
_BASE_NAMES = frozenset(c.name for c in schema.REPLAY_BASE)


# The replay table's column constructors, public polars only: ``_f64(name, float64 array,
# has_nan)`` (NaN as null, zero-copy; ``has_nan`` false: no scan for NaN), ``_bool(name, bool
# array)`` and ``_gather(labels, uint32 indices)`` (an Enum column from its labels, :func:`_enum`).
# polars' private constructors (``PySeries.new_f64`` …) were 3–4× faster a column; the public
# ones cost 1.1–1.8 ms more a flow's 15 tables (replica-1M: 3.2–4.4 ms against 2.1–2.6 ms).


# (``v`` is float64, or bool: its dtype is the column's, and no ``dtype=`` is given, which would
# cost a cast of the new Series, ≈ 40 % of a column's construction)


def _f64(name: str, v: np.ndarray, has_nan: Any = True) -> pl.Series:
    return pl.Series(name, v, nan_to_null=bool(has_nan))


def _bool(name: str, v: np.ndarray) -> pl.Series:
    return pl.Series(name, v)


def _gather(labels: pl.Series, idx: np.ndarray) -> pl.Series:
    return labels[idx]  # (Series[ndarray] gathers without the expression engine)


def _frame(
    ts_ns: np.ndarray,
    out: np.ndarray,
    codes: np.ndarray,
    nans: np.ndarray,
    plan: _Plan,
    frame: pl.Series | None = None,
    shared: dict[Any, Any] | None = None,
) -> pl.DataFrame:
    """The replay table from the loop's outputs (:class:`_Plan`): one Series per column straight
    from numpy (no expression engine: each eager polars expression costs a query plan, ~0.1 ms).
    Row i answers ACK i: ``frame`` and ``ts_ns`` are that ACK's (the keys of
    schema.REPLAY_BASE).

    Float columns are zero-copy views of ``out``, which the loop filled with them alone (so the
    table keeps no other output alive), nan as null; only a column the loop flagged in ``nans``
    is scanned for its nans. ``codes`` (label indices, may be scratch) is gathered into Enum
    columns and bool columns; ts_ns is the flow's one array.

    ``shared`` (a dict per flow, :class:`Prepared`) keeps what a flow's tables have in common:
    the frame of the ``frame`` and ``ts_ns`` columns is built once per flow, an Enum column
    equal to the previous one of its name is reused (:func:`_enum`)."""
    keys = shared.get("keys") if shared is not None else None
    if keys is None or keys[0] is not ts_ns or keys[1] is not frame:
        frames = (
            frame.alias("frame")
            if frame is not None and len(frame) == len(ts_ns)
            else pl.Series("frame", [None] * len(ts_ns), dtype=pl.UInt64)
        )
        keys = (ts_ns, frame, pl.DataFrame([frames, pl.Series("ts_ns", ts_ns, dtype=pl.Int64)]))
        if shared is not None:
            shared["keys"] = keys
    cols = [
        _f64("cwnd", out[:, 0], nans[0]),
        _f64("ssthresh", out[:, 1], nans[1]),
        _enum("state", _STATES, codes[:, 0], shared),
    ]
    for name, kind, c, labels in plan.columns:
        if kind == "bool":
            cols.append(_bool(name, codes[:, c] != 0))
        elif kind == "enum":
            cols.append(_enum(name, labels, codes[:, c], shared))
        else:
            cols.append(_f64(name, out[:, c], nans[c]))
    # (the flow's key frame, extended: DataFrame(list of Series) validates in Python, ~30 µs)
    return keys[2].hstack(cols)


def replay(
    acks: pl.DataFrame,
    mss: int,
    algos: Iterable[str | Resolved],
    params: Iterable[str] = (),
    *,
    segments: pl.DataFrame | None = None,
    compiled: bool | None = None,
    meanwhile: Callable[[], Any] | None = None,
    handshake_rtt: float | None = None,
    send_times: bool = False,
) -> dict[str, pl.DataFrame]:
    """Replay several algorithms over one ACK stream → ``{label: frame}``.

    ``algos`` are names (``reno``, ``kyushu+cubic``) or resolved algorithms; ``params`` are
    ``algo.name=value`` overrides for the named ones; ``compiled`` as in :func:`run`.
    ``meanwhile``: called once, in this thread, while the loops run ahead in the helper thread
    (before the first table is built), or before the loops when they do not run ahead — work
    of the caller's that does not need the replays (the pipeline's evidence of the flow: the
    loops of a long flow otherwise leave this thread waiting). ``handshake_rtt``: as in
    :func:`prepare`; ``send_times``: the capture is at the data sender (:func:`prepare`'s
    ``at_sender``, and its ``send_times`` when an algorithm takes rate samples).
    """
    algos = list(algos)
    names = [a for a in algos if isinstance(a, str)]
    params = list(params)
    if params and not names:
        raise InputError("--param overrides apply to algorithms given by name")
    rs = resolve_many(names, params) if names else []
    order = [a if not isinstance(a, str) else rs.pop(0) for a in algos]
    if not order:
        raise InputError("no algorithm given (see `hscc-trace algorithms`)")
    # (the send times serve only the rate samples: not looked up for a set that needs none)
    need_rate = any(_needs_rate(r) for r in order)
    prep = prepare(acks, mss, segments, handshake_rtt, send_times=send_times and need_rate, at_sender=send_times)
    labels = [r.label for r in order]
    for k, label in enumerate(labels):
        if label in labels[:k]:
            raise InputError(f"algorithm {label} requested twice")
    if not prep.rate_done and need_rate:
        rate_samples(prep)  # (before any loop runs: the loops only read the input matrix)
    jobs = [_setup(r, prep, compiled) for r in order]
    mats = _outputs(len(prep), [plan for _, plan in jobs])
    out: dict[str, pl.DataFrame] = {}
    if not LOOK_AHEAD or len(jobs) < 2 or len(prep) < AHEAD_MIN_ACKS or _CPUS < 2 or compiled is False:
        if meanwhile is not None:
            meanwhile()
        for label, (loop, plan), m in zip(labels, jobs, mats):
            loop(*m)
            out[label] = _frame(prep.ts_ns, *m, plan, prep.frame, prep._shared)
        return out
    # (every loop at once: the helper runs them one after the other, first to last, while this
    # thread does ``meanwhile``, then builds the tables in order; where it would wait for the
    # helper, it takes back the last loop the helper has not started and runs it itself: once
    # this thread has caught up, both cores run loops)
    ahead = _Ahead([functools.partial(loop, *m) for (loop, _), m in zip(jobs, mats)])
    _pool().submit(ahead.helper)
    try:
        if meanwhile is not None:
            meanwhile()
        for k, (label, (_, plan), m) in enumerate(zip(labels, jobs, mats)):
            ahead.wait(k)
            out[label] = _frame(prep.ts_ns, *m, plan, prep.frame, prep._shared)
    finally:
        ahead.stop()
    return out


def replay_flow(
    events: Any,
    algos: Iterable[str | Resolved],
    params: Iterable[str] = (),
    *,
    compiled: bool | None = None,
    meanwhile: Callable[[], Any] | None = None,
) -> dict[str, pl.DataFrame]:
    """:func:`replay` on a :class:`hscc_trace.model.FlowEvents`."""
    return replay(
        events.acks,
        events.mss,
        algos,
        params,
        segments=events.segments,
        compiled=compiled,
        meanwhile=meanwhile,
        handshake_rtt=getattr(events, "handshake_rtt_s", None),
        send_times=getattr(events, "vantage", None) == "sender",
    )
