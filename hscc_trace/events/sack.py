"""SACK blocks of a flow's ACKs in the event streams' sequence space (schema.SACK_BLOCKS).

The time/sequence graph draws each SACK block the receiver reported, as tcptrace does. The
packet table keeps the blocks' raw 32-bit edges; the event streams use sequence numbers unwrapped
to 64 bits and relative to the sender's ISN. The ACK that carried a block knows both spaces (its
raw ``ack`` in the packet table, its relative ``ack`` in the ACK stream), and a block lies within
2³¹ bytes of the cumulative ACK (RFC 2018 blocks sit above it, D-SACK blocks just below), so

    relative edge = relative ack + signed32(raw edge − raw ack)

needs no ISN and survives sequence wrap-around. :func:`with_sack_blocks` returns a flow's events
with ``FlowEvents.sack_blocks`` set; the report draws them when present.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from hscc_trace import schema
from hscc_trace.model import Capture, FlowEvents
from hscc_trace.perf.jit import njit

from .core import seek

if TYPE_CHECKING:
    from hscc_trace.flows.arena import SackRows

#: the packet columns :func:`sack_blocks` reads (schema.PACKETS names)
COLUMNS = frozenset(
    ["frame", "flow_id", "dir", "ack", "sack_n", *(f"sack_{e}{i}" for i in range(4) for e in ("l", "r"))]
)


_EMPTY: list[pl.DataFrame] = []


def _empty() -> pl.DataFrame:
    """schema.SACK_BLOCKS without rows, made once (most flows have no SACK block: a clone is
    a hundredth of the cost of a new table)."""
    if not _EMPTY:
        _EMPTY.append(schema.empty(schema.SACK_BLOCKS))
    return _EMPTY[0]


_HALF = 1 << 31
_LAST = np.uint64(0xFFFFFFFFFFFFFFFF)


_BLOCKS: list[pl.Expr] = []


def _blocks() -> list[pl.Expr]:
    """The SACK edges with 0 for null, and ``has0`` … ``has3`` (UInt8): both edges of block i
    present (the expressions are made once)."""
    if not _BLOCKS:
        _BLOCKS.extend(pl.col(f"sack_{e}{i}").fill_null(0) for i in range(4) for e in ("l", "r"))
        _BLOCKS.extend(
            (pl.col(f"sack_l{i}").is_not_null() & pl.col(f"sack_r{i}").is_not_null()).cast(pl.UInt8).alias(f"has{i}")
            for i in range(4)
        )
    return _BLOCKS


def _column(df: pl.DataFrame, name: str) -> tuple[np.ndarray, np.ndarray | None]:
    """A column as numpy (zero-copy when it has no null) and, when it has nulls, which rows are
    valid (a null's value is then 0)."""
    s = df.get_column(name)
    if s.null_count():
        return s.fill_null(0).to_numpy(), s.is_not_null().to_numpy()
    return s.to_numpy(), None


def _join(keys: np.ndarray, probe: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The inner join of ``probe`` with ``keys`` (rows of each, one pair per match, a probe
    matching every row of an equal key). ``keys`` is sorted and unique for a flow's ACK stream
    (its frames); any other order or a repeated key is joined all the same."""
    by = None
    if keys.size > 1 and not bool((keys[1:] > keys[:-1]).all()):
        by = np.argsort(keys, kind="stable")
        keys = keys[by]
    lo = np.searchsorted(keys, probe, "left")
    cnt = np.searchsorted(keys, probe, "right") - lo
    if bool((cnt == 1).all()):
        p_rows, k_rows = np.arange(probe.size), lo
    else:
        p_rows = np.repeat(np.arange(probe.size), cnt)
        k_rows = np.repeat(lo, cnt) + (np.arange(p_rows.size) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    return p_rows, (k_rows if by is None else by[k_rows])


def sack_blocks(packets: pl.DataFrame, events: FlowEvents) -> pl.DataFrame:
    """Every SACK block carried by ``events``' ACKs (schema.SACK_BLOCKS), ordered by time.

    ``packets`` is the capture's packet table (schema.PACKETS, with flow_id and dir); only the
    flow's receiver-to-sender packets that are in ``events.acks`` are used.

    One vectorized pass over the flow's SACK packets: they are matched to the ACK stream by
    frame, each block both of whose edges are present becomes a row (edges mapped as the module
    docstring says, in 32-bit arithmetic: ``(raw edge − raw ack) mod 2³²`` read as signed), and
    the rows are sorted by time, frame, left and right edge (blocks may share a left edge).
    """
    need = {"frame", "flow_id", "dir", "ack", "sack_n"}
    if not packets.height or not need <= set(packets.columns) or events.acks is None or not events.acks.height:
        return _empty().clone()
    fid, fid_ok = _column(packets, "flow_id")
    drc, drc_ok = _column(packets, "dir")
    sn, sn_ok = _column(packets, "sack_n")
    fr, fr_ok = _column(packets, "frame")
    keep = (fid.astype(np.int64) == events.flow_id) & (drc.astype(np.int64) == 1 - events.sender_dir) & (sn > 0)
    for ok in (fid_ok, drc_ok, sn_ok, fr_ok):  # (a null compares to nothing, as in a filter)
        if ok is not None:
            keep &= ok
    rows = np.flatnonzero(keep)
    if not rows.size:
        return _empty().clone()
    acks = events.acks
    p, k = _join(acks.get_column("frame").to_numpy(), fr[rows].astype(np.uint64))
    rows = rows[p]
    a_raw, a_ok = _column(packets, "ack")
    a_raw = a_raw[rows].astype(np.uint32)  # (an integer cast keeps the value mod 2³²)
    a_rel = acks.get_column("ack").to_numpy()[k]
    a_ts = acks.get_column("ts_ns").to_numpy()[k]
    frame = fr[rows].astype(np.uint64)
    null = None if a_ok is None or a_ok[rows].all() else ~a_ok[rows]  # (no raw ack: null edges)
    # a packet's blocks as keys (edge − raw ack, as signed 32-bit offsets, left then right) in
    # one unsigned 64-bit word each: sorting a packet's keys orders its blocks by left and right
    # edge (they share the ACK's relative value)
    key = np.zeros((rows.size, 4), np.uint64)
    nb = np.zeros(rows.size, np.int64)
    blocks = packets.select(_blocks())  # (one query: a call per column costs more than the work)
    for i in range(4):
        has = blocks.get_column(f"has{i}").to_numpy()[rows].view(np.bool_)
        d_l = (blocks.get_column(f"sack_l{i}").to_numpy()[rows].astype(np.uint32) - a_raw).view(np.int32)
        d_r = (blocks.get_column(f"sack_r{i}").to_numpy()[rows].astype(np.uint32) - a_raw).view(np.int32)
        word = ((d_l.astype(np.int64) + _HALF) << 32 | (d_r.astype(np.int64) + _HALF)).view(np.uint64)
        key[:, i] = np.where(has, word, _LAST)
        nb += has
    key.sort(axis=1)  # (a block absent sorts last; the first nb[p] are packet p's blocks)
    words = key[np.arange(4) < nb[:, None]]
    if not words.size:
        return _empty().clone()
    rel = np.repeat(a_rel, nb)
    cols = {
        "frame": np.repeat(frame, nb),
        "ts_ns": np.repeat(a_ts, nb),
        "left": rel + ((words >> 32).astype(np.int64) - _HALF),
        "right": rel + ((words & 0xFFFFFFFF).astype(np.int64) - _HALF),
    }
    if null is not None:
        null = np.repeat(null, nb)
    ts, fr_ = a_ts, frame
    if null is not None or not bool(((ts[1:] > ts[:-1]) | ((ts[1:] == ts[:-1]) & (fr_[1:] > fr_[:-1]))).all()):
        # packets not in (time, frame) order, or a missing raw ACK: sort every row
        last = np.zeros(words.size, np.bool_) if null is None else ~null
        order = np.lexsort((cols["right"], cols["left"], last, cols["frame"], cols["ts_ns"]))  # (nulls first)
        cols = {name: v[order] for name, v in cols.items()}
        null = None if null is None else null[order]
    out = [pl.Series(c.name, cols[c.name], c.dtype) for c in schema.SACK_BLOCKS]
    if null is not None:
        at = pl.Series(np.flatnonzero(null))
        out = [s.scatter(at, None) if s.name in ("left", "right") else s for s in out]
    return pl.DataFrame(out)


@njit(work=lambda a: int(a[7] - a[6]), cost=(3.37, 4.85e-05), cache=True, nogil=True)
def _flow_blocks(frame, dirs, ack, sn, perm, edges, lo, hi, want, afr, aack, ats, o_frame, o_ts, o_left, o_right):
    """:func:`sack_blocks` of one flow's SACK entries ``lo:hi`` (``frame``, ``dirs``, raw
    ``ack``, ``sn`` blocks, in capture order; entry ``i``'s raw edges at ``perm[i]`` of the eight
    ``edges`` columns) against its ACK stream (``afr`` frames, ``aack`` relative ACKs, ``ats``
    times): the rows written to ``o_*`` in :func:`sack_blocks`' order, and their number; -1
    (nothing meaningful written) where :func:`sack_blocks` has more to do than this one pass —
    ACK frames not strictly increasing, or the matched ACKs not in (time, frame) order."""
    na = afr.shape[0]
    for i in range(1, na):
        if afr[i] <= afr[i - 1]:
            return -1
    half = np.int64(1) << 31
    low = np.uint64(0xFFFFFFFF)
    key = np.empty(4, np.uint64)
    q = 0
    have = False
    pts = np.int64(0)
    pfr = np.uint64(0)
    j = 0
    for i in range(lo, hi):
        if np.int64(dirs[i]) != want or sn[i] == 0:
            continue
        fr = np.uint64(frame[i])
        j = seek(afr, fr, False, j)  # (frames increase: from the previous ACK on)
        if j >= na or afr[j] != fr:
            continue
        t = ats[j]
        if have and not (t > pts or (t == pts and fr > pfr)):
            return -1
        have = True
        pts = t
        pfr = fr
        raw = np.int64(ack[i])
        r = perm[i]
        m = 0
        for b in range(4):
            if sn[i] > b:
                dl = (np.int64(edges[2 * b][r]) - raw) & 0xFFFFFFFF  # (signed 32-bit offset + 2³¹)
                dr = (np.int64(edges[2 * b + 1][r]) - raw) & 0xFFFFFFFF
                w = (np.uint64(dl ^ half) << np.uint64(32)) | np.uint64(dr ^ half)
                k = m
                while k > 0 and key[k - 1] > w:  # (insertion sort: left, then right edge)
                    key[k] = key[k - 1]
                    k -= 1
                key[k] = w
                m += 1
        rel = aack[j]
        for k in range(m):
            w = key[k]
            o_frame[q] = fr
            o_ts[q] = t
            o_left[q] = rel + (np.int64(w >> np.uint64(32)) - half)
            o_right[q] = rel + (np.int64(w & low) - half)
            q += 1
    return q


def _blocks_of(s: SackRows, k: int, events: FlowEvents) -> pl.DataFrame | None:
    """:func:`sack_blocks` of ``events`` from entry ``k`` of ``s`` (its flow's SACK entries), or
    None when the one compiled pass does not apply (:func:`_flow_blocks`)."""
    acks = events.acks
    if acks is None or not acks.height:
        return _empty().clone()
    lo, hi = int(s.lo[k]), int(s.hi[k])
    if lo == hi:
        return _empty().clone()
    n = 4 * (hi - lo)
    out = (np.empty(n, np.uint64), np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64))
    got = _flow_blocks(
        s.frame,
        s.dir,
        s.ack,
        s.sack_n,
        s.perm,
        s.edges,
        np.int64(lo),
        np.int64(hi),
        np.int64(1 - events.sender_dir),
        acks.get_column("frame").to_numpy(),
        acks.get_column("ack").to_numpy(),
        acks.get_column("ts_ns").to_numpy(),
        *out,
    )
    if got < 0:
        return None
    if got == 0:
        return _empty().clone()
    return pl.DataFrame(
        [pl.Series(c.name, col[:got].copy(), c.dtype) for c, col in zip(schema.SACK_BLOCKS, out, strict=True)]
    )


class SackGroups:
    """A capture's SACK-carrying packets (the columns :func:`sack_blocks` reads), sorted by flow
    once: :meth:`of` is one flow's rows (a zero-copy slice, in capture order), so that flows can
    be given their blocks a batch at a time without a table per flow held for the whole capture.

    With ``rows_of`` (a capture read into load's arena: ``rows_of(flow_ids)`` gives those flows'
    rows, by flow, from the arena's SACK index) no table of the whole capture is made:
    :meth:`only` makes one for a batch of flows (≈ 40 MB less at the start of ``analyze`` on
    replica-5M), and :meth:`of` one for its flow."""

    def __init__(
        self,
        packets: pl.DataFrame,
        rows_of: Callable[[list[int]], pl.DataFrame] | None = None,
        arrays_of: Callable[[list[int]], SackRows] | None = None,
    ) -> None:
        self._rows_of = rows_of
        self._arrays_of = arrays_of
        self._arrays: SackRows | None = None
        self._at: dict[int, int] = {}
        if packets.height and packets.get_column("flow_id").null_count():
            packets = packets.filter(pl.col("flow_id").is_not_null())  # (no flow: no flow's blocks)
        self._pk = packets.sort("flow_id", maintain_order=True) if packets.height else packets
        self._ids = self._pk.get_column("flow_id").to_numpy() if packets.height else np.empty(0, np.int64)

    def only(self, flow_ids: Iterable[Any]) -> SackGroups:
        """The groups of the flows ``flow_ids`` (at least: all of them when the capture's table is
        at hand)."""
        if self._rows_of is None:
            return self
        ids = sorted({int(f) for f in flow_ids})
        if self._arrays_of is None:
            return SackGroups(self._rows_of(ids))
        g = SackGroups(pl.DataFrame(), rows_of=self._rows_of)  # (its tables only on demand: of())
        g._arrays = self._arrays_of(ids)
        g._at = {int(f): k for k, f in enumerate(g._arrays.flows)}
        return g

    def blocks(self, events: FlowEvents) -> pl.DataFrame:
        """:func:`sack_blocks` of ``events`` (a flow of these groups): one compiled pass over its
        SACK entries when the groups hold them as arrays (:meth:`only` of a capture read into
        load's arena), else over :meth:`of`'s table."""
        k = self._at.get(int(events.flow_id)) if self._arrays is not None else None
        if k is not None and self._arrays is not None:
            got = _blocks_of(self._arrays, k, events)
            if got is not None:
                return got
        return sack_blocks(self.of(events.flow_id), events)

    def of(self, flow_id: Any) -> pl.DataFrame:
        if self._rows_of is not None:
            return self.only([flow_id]).of(flow_id)
        lo = int(np.searchsorted(self._ids, flow_id, side="left"))
        hi = int(np.searchsorted(self._ids, flow_id, side="right"))
        return self._pk.slice(lo, hi - lo)


def sack_groups(cap: Capture) -> SackGroups:
    """The SACK packets of ``cap`` by flow (:class:`SackGroups`). They come from load's arena when
    the capture was read by the fast path (the packet table, a second read of the file, is then
    never built), a batch of flows at a time (:meth:`SackGroups.only`), else from the packet table."""
    if cap.decoded is not None:
        arena = getattr(cap.decoded, "arena", None)
        arrays = getattr(arena, "sack_arrays_of", None)
        return SackGroups(pl.DataFrame(), rows_of=cap.decoded.sack_rows_of, arrays_of=arrays)
    if "sack_n" in cap.packets.columns:
        sack_pk = (
            cap.packets.lazy()
            .filter(pl.col("sack_n") > 0)
            .select([c for c in cap.packets.columns if c in COLUMNS])
            .collect()
        )
    else:
        sack_pk = cap.packets.clear()
    return SackGroups(sack_pk)


def with_sack_blocks(
    cap: Capture, events: list[FlowEvents | None], groups: SackGroups | None = None
) -> list[FlowEvents | None]:
    """``events`` (flows of ``cap``; None stays None) with their SACK blocks attached: new
    :class:`FlowEvents` with ``sack_blocks`` set where it was None, the others unchanged.

    The capture's SACK packets are grouped by flow once (:func:`sack_groups`; pass ``groups``
    to reuse them over several calls, e.g. a batch of flows at a time): a query per flow over
    the whole capture's SACK packets grows with flows × SACK packets.
    """
    g = groups if groups is not None else sack_groups(cap).only(ev.flow_id for ev in events if ev is not None)
    return [ev if ev is None or ev.sack_blocks is not None else replace(ev, sack_blocks=g.blocks(ev)) for ev in events]
