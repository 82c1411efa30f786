"""Ingestion: a capture file in, a :class:`~hscc_trace.model.Capture` out (packets grouped by flow).

``load(path)`` reads and decodes the capture (:mod:`hscc_trace.capture`), assigns every TCP row
its connection with the flow tracker (:mod:`.tracker`) and, when the fast decoder read every
record, keeps the columns the event builder reads grouped by flow in an arena (:mod:`.arena`);
otherwise scapy's rows are merged in frame order and the packet table is built at once.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from hscc_trace.capture import capture_meta, eager_table, no_tcp_message, read, read_packets
from hscc_trace.capture.reader import is_stream
from hscc_trace.errors import InputError, Warn

if TYPE_CHECKING:
    import polars as pl

    from hscc_trace.model import Capture

__all__ = ["load", "Decoded"]


class Decoded:
    """The TCP rows of a capture as :func:`load` kept them when every record was decoded by the
    fast path: grouped by connection as they were read (:class:`hscc_trace.flows.arena.Arena`:
    the columns the event builder reads, in flow order, ``src``). :meth:`table` builds
    schema.PACKETS on first use of ``Capture.packets``: from a regular file by reading it again
    (the arena then keeps nothing else: 18 bytes a packet less), otherwise from the other
    columns, which the arena then keeps in capture order.
    """

    def __init__(self, arena, tracker, path: str, bpf: str | None, stat: tuple[int, int, int, int] | None) -> None:
        from hscc_trace.flows.tracker import C_PORT0

        nf = tracker.n_flows
        self.arena = arena
        self.n_flows = nf
        self.rows = arena.rows
        self.a_side = tracker.a_side()
        self.src = arena.finish(self.a_side)  # (events.source.FlowSource)
        self._addr = tracker.ADDR[:nf].copy()
        self._ports = tracker.S[:nf, C_PORT0 : C_PORT0 + 2].copy()
        self._path, self._bpf, self._stat = path, bpf, stat

    def sack_packets(self) -> pl.DataFrame:
        """The rows with SACK blocks (:meth:`hscc_trace.flows.arena.Arena.sack_table`): the
        columns of :meth:`table` the report's SACK blocks read, without reading the file again."""
        return self.arena.sack_table()

    def sack_rows_of(self, flow_ids: list[int]) -> pl.DataFrame:
        """:meth:`sack_packets`' rows of these flows (increasing ids), by flow, each in capture
        order (:meth:`hscc_trace.flows.arena.Arena.sack_rows_of`: also after the arena's release)."""
        return self.arena.sack_rows_of(flow_ids)

    def table(self) -> pl.DataFrame:
        """schema.PACKETS of these rows, exactly as the eager path builds it."""
        if self._stat is None:
            return self.arena.table(self._addr, self._ports)
        if _file_id(self._path) != self._stat:
            raise InputError(f"{self._path}: the file changed after it was loaded; load it again to read its packets")
        from hscc_trace.flows.tracker import FlowTracker

        tracker = FlowTracker()
        with _gc_paused():
            pk, _meta, _w, tracked = read_packets(self._path, bpf=self._bpf, tracker=tracker)
        if not tracked or pk.height != self.rows:  # (cannot happen for an unchanged file)
            raise InputError(f"{self._path}: the file changed after it was loaded; load it again to read its packets")
        return _with_dir(pk, tracker.a_side())


def _file_id(path: str) -> tuple[int, int, int, int] | None:
    """(device, inode, size, mtime ns) of a regular file, else None (a pipe, a device …)."""
    import stat

    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _with_dir(pk: pl.DataFrame, a_side: np.ndarray) -> pl.DataFrame:
    """Rows with flow_id/side (from the tracker) → schema.PACKETS with ``dir``."""
    import polars as pl

    from hscc_trace import schema

    a = pl.lit(pl.Series(a_side, dtype=pl.UInt8))
    pk = pk.with_columns((pl.col("side") ^ a.gather(pl.col("flow_id"))).alias("dir"))
    return schema.conform(pk, schema.PACKETS)


def load(path: str | os.PathLike, *, bpf: str | None = None) -> Capture:
    """Read, decode and group a capture into packets (schema.PACKETS) and flows (schema.FLOWS).

    Raises :class:`~hscc_trace.errors.InputError` (one line) for unusable input: a missing,
    empty or non-capture file, an unsupported link type, an invalid filter, or a capture in which
    no TCP packet could be decoded. Partial problems (truncated last record, undecodable records)
    become warnings with counts.

    When every record was decoded by the fast path (no scapy rows to merge), no table is built
    here: ``Capture.packets`` is built on first access from the decoder's columns, which the
    event builder reads directly (``Capture.decoded``, :class:`Decoded`).
    """
    from hscc_trace.flows.arena import Arena
    from hscc_trace.flows.tracker import FlowTracker, build_flows
    from hscc_trace.model import Capture, Deferred

    path = os.fspath(path)
    if not is_stream(path):
        with _gc_paused():
            tracker = FlowTracker()
            fid = _file_id(path)  # a regular file can be read again for its packet table
            arena = Arena(_rows_hint(path), keep=fid is None)
            raw = read(path, bpf=bpf, tracker=tracker, arena=arena)
            if not raw.aborted and raw.rows:
                dec = Decoded(arena, tracker, path, bpf, fid)
                meta, warnings = capture_meta(
                    path, raw, dec.rows, arena.ts_range[0], arena.ts_range[1], bpf, {"fast": dec.rows}
                )
                _add(warnings, tracker.wscale_warning(path))
                return Capture(
                    meta=meta,
                    packets=Deferred(dec.table),  # type: ignore[arg-type]  # (built on first access: model._PacketsSlot)
                    flows=tracker.table(),
                    warnings=warnings,
                    decoded=dec,
                )
        del arena
    # scapy's rows are merged in frame order: read again and build the whole table now (a pipe
    # or standard input, which can be read only once, comes straight here)
    tracker = FlowTracker()
    raw = read(path, bpf=bpf, tracker=tracker)
    pk, meta, warnings, tracked = eager_table(path, raw, bpf=bpf, tracker=tracker)
    if pk.height == 0:
        raise InputError(no_tcp_message(meta, warnings))
    if tracked:  # connections were assigned batch by batch, in capture order, as build_flows would
        packets, flows = _with_dir(pk, tracker.a_side()), tracker.table()
        _add(warnings, tracker.wscale_warning(path))
    else:  # assign connections over the whole table
        packets, flows = build_flows(pk, warnings=warnings, source=path)
    return Capture(meta=meta, packets=packets, flows=flows, warnings=warnings)


def _add(warnings: list[Warn], w: Warn | None) -> None:
    if w is not None:
        warnings.append(w)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a capture is read by the fast path, then
    back as it was.

    Reading creates few objects of its own, but the first compiled calls and the background
    import of polars create tens of thousands, and each of the ~100–270 collections they would
    trigger scans every object of numba, numpy and polars (≈ 0.1–0.2 s in all). The fast path
    forms no reference cycles, so nothing is held longer; the next collection after loading
    sees what was created meanwhile. (The scapy path, whose packets do form cycles, runs with
    the collector as it was.)"""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _rows_hint(path: str) -> int:
    """At most how many TCP rows ``path`` can hold (a record is ≥ 56 bytes: 16 of pcap header,
    20 of IPv4, 20 of TCP); compressed files: 8 × that of their size."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return 1 << 20
    if path.endswith(".gz"):
        size *= 8
    return min(size // 56 + 1, 1 << 28)
