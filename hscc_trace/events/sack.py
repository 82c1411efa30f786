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
from typing import Any

import numpy as np
import polars as pl

from hscc_trace import schema
from hscc_trace.model import Capture, FlowEvents


def _signed32(expr: pl.Expr) -> pl.Expr:
    """(x mod 2³²) as a signed 32-bit distance, in Int64."""
    m = expr % (1 << 32)
    return pl.when(m >= (1 << 31)).then(m - (1 << 32)).otherwise(m)


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


def sack_blocks(packets: pl.DataFrame, events: FlowEvents) -> pl.DataFrame:
    """Every SACK block carried by ``events``' ACKs (schema.SACK_BLOCKS), ordered by time.

    ``packets`` is the capture's packet table (schema.PACKETS, with flow_id and dir); only the
    flow's receiver-to-sender packets that are in ``events.acks`` are used.
    """
    need = {"frame", "flow_id", "dir", "ack", "sack_n"}
    if not packets.height or not need <= set(packets.columns) or events.acks is None or not events.acks.height:
        return _empty().clone()
    rx = (
        packets.lazy()
        .filter(
            (pl.col("flow_id") == events.flow_id) & (pl.col("dir") == 1 - events.sender_dir) & (pl.col("sack_n") > 0)
        )
        .select(
            "frame",
            pl.col("ack").cast(pl.Int64).alias("ack_raw"),
            *(pl.col(f"sack_{e}{i}").cast(pl.Int64) for i in range(4) for e in ("l", "r")),
        )
        .join(events.acks.lazy().select("frame", "ts_ns", pl.col("ack").alias("ack_rel")), on="frame", how="inner")
    )
    parts = []
    for i in range(4):
        left, right = pl.col(f"sack_l{i}"), pl.col(f"sack_r{i}")
        parts.append(
            rx.filter(left.is_not_null() & right.is_not_null()).select(
                "frame",
                "ts_ns",
                (pl.col("ack_rel") + _signed32(left - pl.col("ack_raw"))).alias("left"),
                (pl.col("ack_rel") + _signed32(right - pl.col("ack_raw"))).alias("right"),
            )
        )
    out = (
        pl.concat(parts).sort("ts_ns", "frame", "left", "right").collect()
    )  # total order: blocks may share a left edge
    return schema.conform(out, schema.SACK_BLOCKS)


class SackGroups:
    """A capture's SACK-carrying packets (the columns :func:`sack_blocks` reads), sorted by flow
    once: :meth:`of` is one flow's rows (a zero-copy slice, in capture order), so that flows can
    be given their blocks a batch at a time without a table per flow held for the whole capture.

    With ``rows_of`` (a capture read into load's arena: ``rows_of(flow_ids)`` gives those flows'
    rows, by flow, from the arena's SACK index) no table of the whole capture is made:
    :meth:`only` makes one for a batch of flows (≈ 40 MB less at the start of ``analyze`` on
    replica-5M), and :meth:`of` one for its flow."""

    def __init__(self, packets: pl.DataFrame, rows_of: Callable[[list[int]], pl.DataFrame] | None = None) -> None:
        self._rows_of = rows_of
        if packets.height and packets.get_column("flow_id").null_count():
            packets = packets.filter(pl.col("flow_id").is_not_null())  # (no flow: no flow's blocks)
        self._pk = packets.sort("flow_id", maintain_order=True) if packets.height else packets
        self._ids = self._pk.get_column("flow_id").to_numpy() if packets.height else np.empty(0, np.int64)

    def only(self, flow_ids: Iterable[Any]) -> SackGroups:
        """The groups of the flows ``flow_ids`` (at least: all of them when the capture's table is
        at hand)."""
        if self._rows_of is None:
            return self
        return SackGroups(self._rows_of(sorted({int(f) for f in flow_ids})))

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
        return SackGroups(pl.DataFrame(), rows_of=cap.decoded.sack_rows_of)
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
    return [
        ev if ev is None or ev.sack_blocks is not None else replace(ev, sack_blocks=sack_blocks(g.of(ev.flow_id), ev))
        for ev in events
    ]
