"""Capture ingestion: a capture file in, a :class:`~hscc_trace.model.Capture` out.

``load(path)`` reads pcap / pcapng (optionally gzip-compressed) in chunks
(:mod:`.reader`), applies a BPF ``--filter`` compiled by libpcap (:mod:`.bpf`), decodes TCP with
the compiled fast path (:mod:`.decode`) and hands whatever it does not know to scapy
(:mod:`.slow`); then :func:`hscc_trace.flows.build_flows` assigns connections. Every record
that does not become a TCP packet row is counted by reason in ``CaptureMeta.skipped`` and
reported as a warning.
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from typing import TYPE_CHECKING, Iterator

import numpy as np

from hscc_trace._alloc import small_pages
from hscc_trace.errors import InputError, Warn

from .decode import FALLBACK, FRAGMENT, REASONS, Scratch, decode_arrays, to_frame
from .pipe import import_tables as _import_tables
from .pipe import in_thread as _in_thread
from .reader import ReadInfo, is_stream, iter_batches, linktype_name

if TYPE_CHECKING:  # polars (via schema/model) is imported where tables are built: see load_flows
    import polars as pl

    from hscc_trace.model import Capture, CaptureMeta

__all__ = ["load", "load_packets", "load_flows"]


def _packet_cols() -> list[str]:
    from hscc_trace import schema

    return [c.name for c in schema.PACKETS if c.name not in ("flow_id", "dir")]


def load_packets(path: str | os.PathLike, *, bpf: str | None = None, fallback: bool = True,
                 force_slow: bool = False, limit: int | None = None) -> tuple[pl.DataFrame, CaptureMeta, list[Warn]]:
    """Read and decode ``path``: (TCP packet rows in capture order without flow_id/dir, meta, warnings).

    ``fallback=False`` disables the scapy decoder (its records are then counted as skipped);
    ``force_slow=True`` decodes *every* record with scapy (for the fast/slow parity test);
    ``limit`` stops after that many records. Records removed by ``bpf`` are neither decoded
    nor counted as skipped.
    """
    pk, meta, warnings, _ = _read_packets(path, bpf=bpf, fallback=fallback, force_slow=force_slow, limit=limit)
    return pk, meta, warnings


class Decoded:
    """The TCP rows of a capture as :func:`load` kept them when every record was decoded by the
    fast path: grouped by connection as they were read (:class:`hscc_trace.events.source.Arena`:
    the columns the event builder reads, in flow order, ``src``). :meth:`table` builds
    schema.PACKETS on first use of ``Capture.packets``: from a regular file by reading it again
    (the arena then keeps nothing else: 18 bytes a packet less), otherwise from the other
    columns, which the arena then keeps in capture order.
    """

    def __init__(self, arena, tracker, path: str, bpf: str | None, stat: os.stat_result | None) -> None:
        from hscc_trace.flows import C_PORT0

        nf = tracker.n_flows
        self.arena = arena
        self.n_flows = nf
        self.rows = arena.rows
        self.a_side = tracker.a_side()
        self.src = arena.finish(self.a_side)  # (events.source.FlowSource)
        self._addr = tracker.ADDR[:nf].copy()
        self._ports = tracker.S[:nf, C_PORT0:C_PORT0 + 2].copy()
        self._path, self._bpf, self._stat = path, bpf, stat

    def sack_packets(self) -> pl.DataFrame:
        """The rows with SACK blocks (:meth:`hscc_trace.events.source.Arena.sack_table`): the
        columns of :meth:`table` the report's SACK blocks read, without reading the file again."""
        return self.arena.sack_table()

    def table(self) -> pl.DataFrame:
        """schema.PACKETS of these rows, exactly as the eager path builds it."""
        if self._stat is None:
            return self.arena.table(self._addr, self._ports)
        if _file_id(self._path) != self._stat:
            raise InputError(f"{self._path}: the file changed after it was loaded; load it again to read its packets")
        from hscc_trace.flows import FlowTracker

        tracker = FlowTracker()
        with _gc_paused():
            pk, _meta, _w, tracked = _read_packets(self._path, bpf=self._bpf, tracker=tracker)
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


def _concat(parts: list, cols: list[str]) -> pl.DataFrame:
    """The batch tables as one table in frame order, columns ``cols`` cast to schema.PACKETS."""
    import polars as pl

    from hscc_trace import schema

    _PACKET_COLS = _packet_cols()
    if parts:
        sel = [p.select(cols) for p in parts]
        same = all(x.schema == sel[0].schema for x in sel)
        pk = pl.concat(sel, how="vertical" if same else "vertical_relaxed", rechunk=False)
        if len(parts) > 1 and not pk["frame"].is_sorted():
            pk = pk.sort("frame")
    else:
        pk = schema.empty(schema.PACKETS).select(_PACKET_COLS)
    return pk.with_columns([pl.col(c.name).cast(c.dtype) for c in schema.PACKETS if c.name in _PACKET_COLS])


def _with_dir(pk: pl.DataFrame, a_side: np.ndarray) -> pl.DataFrame:
    """Rows with flow_id/side (from the tracker) → schema.PACKETS with ``dir``."""
    import polars as pl

    from hscc_trace import schema

    a = pl.lit(pl.Series(a_side, dtype=pl.UInt8))
    pk = pk.with_columns((pl.col("side") ^ a.gather(pl.col("flow_id"))).alias("dir"))
    return schema.conform(pk, schema.PACKETS)


class _Raw:
    """What :func:`_read` collected (see there)."""

    def __init__(self) -> None:
        self.parts: list[tuple[dict[str, np.ndarray], np.ndarray | None, np.ndarray | None]] = []
        self.slow_recs: list[tuple[int, int, int, int, int, bytes]] = []  # frame, ts_ns, iface, wire, linktype, bytes
        self.skipped: dict[str, int] = {}
        self.info = ReadInfo()
        self.matched = 0
        self.rows = 0  # rows added to an arena
        self.aborted = False


def _read(path: str, *, bpf=None, fallback=True, force_slow=False, limit=None, tracker=None, arena=None) -> _Raw:
    """Read and decode ``path`` (reader thread) and, with a FlowTracker, assign every TCP row its
    connection here: the fast decoder's columns per batch (``parts``: columns, flow, side; no
    table is built), the records for scapy, skip counts and the reader's info. With an ``arena``
    (and a tracker) the rows go to the arena instead of ``parts``, and reading stops
    (``aborted``) at the first record that needs scapy."""
    raw = _Raw()
    info, skipped = raw.info, raw.skipped
    flt = None
    if bpf is not None:
        from .bpf import BpfFilter

        flt = BpfFilter(bpf)

    def produce() -> Iterator[tuple[int, dict | None, np.ndarray, list]]:
        """Reader thread: read, filter, decode (compiled, no GIL) and copy out scapy's records."""
        seen = 0
        # with an arena the decoded columns are copied out before the next-but-one batch:
        # decode into three reused sets (one being added, one queued, one being decoded)
        scratches = [Scratch(), Scratch(), Scratch()] if arena is not None else None
        k = 0
        for batch in iter_batches(path, info):
            if limit is not None:
                if seen >= limit:
                    break
                if seen + len(batch) > limit:
                    batch = batch.subset(np.arange(len(batch)) < limit - seen)
                seen += len(batch)
            if flt is not None:
                batch = batch.subset(flt.match(batch))
                if len(batch) == 0:
                    continue
            if force_slow:
                cols, status = None, np.full(len(batch), FALLBACK, np.uint8)
            elif scratches is not None:
                cols, status = decode_arrays(batch, scratches[k % 3])
                k += 1
            else:
                cols, status = decode_arrays(batch)
            recs = []
            if fallback:  # the batch buffer is reused for the next batch: copy these records now
                sel = np.flatnonzero((status == FALLBACK) | (status == FRAGMENT))
                frames = batch.frame_numbers(sel)
                for j, i in enumerate(sel.tolist()):
                    o = int(batch.off[i])
                    recs.append((int(frames[j]), int(batch.ts_ns[i]), int(batch.iface[i]), int(batch.wire[i]),
                                 int(batch.linktype[i]), bytes(batch.buf[o : o + int(batch.cap[i])])))
            yield len(batch), cols, status, recs

    # this thread assigns connections while the reader decodes the next batch
    batches = _in_thread(produce)
    importer = None
    try:
        for nrec, cols, status, recs in batches:
            if importer is None:  # the compiled kernels are loaded: import polars while they run
                importer = threading.Thread(target=_import_tables, name="hscc-import", daemon=True)
                importer.start()
            raw.matched += nrec
            raw.slow_recs += recs
            if arena is not None and recs:  # scapy's rows must be merged: the caller reads again
                raw.aborted = True
                break
            if cols is not None and len(cols["flags"]):
                if arena is not None:
                    flow, side, _kind, _rtt = tracker.feed(cols)
                    arena.add(cols, flow, side, tracker.n_flows, copy=True)
                    raw.rows += len(flow)
                elif tracker is not None:
                    flow, side, _kind, _rtt = tracker.feed(cols)
                    raw.parts.append((cols, flow.astype(np.uint32), side))
                else:
                    raw.parts.append((cols, None, None))
            counts = np.bincount(status, minlength=len(REASONS) + 1)
            for c in np.flatnonzero(counts[1:]).tolist():
                c += 1
                if fallback and c in (FALLBACK, FRAGMENT):
                    continue
                r = REASONS.get(c, f"decoder status {c}")
                skipped[r] = skipped.get(r, 0) + int(counts[c])
    finally:
        batches.close()  # on an error here: stop and join the reader thread now
        if importer is not None:
            importer.join()
    return raw


def _meta(path: str, raw: _Raw, rows: int, first_ns: int | None, last_ns: int | None, bpf: str | None,
          decoded_by: dict[str, int], limit: int | None = None) -> tuple[CaptureMeta, list[Warn]]:
    from hscc_trace.model import CaptureMeta

    info, skipped = raw.info, raw.skipped
    warnings: list[Warn] = [Warn(path, reason, k, True, *info.lost.get(reason, (None, None)))
                            for reason, k in info.problems.items()]
    warnings += [Warn(path, f"skipped: {reason}", k) for reason, k in skipped.items()]
    meta = CaptureMeta(
        path=path,
        format=info.format,
        link_types=[linktype_name(lt) for lt in info.linktypes],
        snaplen=info.snaplen,
        packets_total=info.records if limit is None else min(info.records, limit),
        packets_tcp=rows,
        first_ns=first_ns,
        last_ns=last_ns,
        bpf=bpf,
        skipped=skipped,
        decoded_by={k: v for k, v in decoded_by.items() if v},
    )
    if bpf is not None and raw.matched == 0 and info.records:
        raise InputError(f"{path}: no packet matches the filter {bpf!r} ({info.records} packets read)")
    return meta, warnings


def _read_packets(path, *, bpf=None, fallback=True, force_slow=False, limit=None, tracker=None):
    """load_packets(); with a FlowTracker, rows also carry flow_id/side unless scapy rows were
    merged in (4th value False: the caller must then run build_flows on the whole table)."""
    path = os.fspath(path)
    raw = _read(path, bpf=bpf, fallback=fallback, force_slow=force_slow, limit=limit, tracker=tracker)
    return _eager(path, raw, bpf=bpf, force_slow=force_slow, limit=limit, tracker=tracker)


def _eager(path, raw: _Raw, *, bpf=None, force_slow=False, limit=None, tracker=None):
    """The packets table of what :func:`_read` collected, scapy's rows merged in frame order."""
    import polars as pl

    parts: list[pl.DataFrame] = []
    for c, flow, side in raw.parts:
        df = to_frame(c, None)
        if flow is not None:
            df = df.with_columns(pl.Series("flow_id", flow), pl.Series("side", side))
        parts.append(df)
    skipped = raw.skipped
    decoded_by = {"fast": sum(p.height for p in parts)}
    if raw.slow_recs:
        from .slow import decode_records

        sdf, sskip = decode_records(raw.slow_recs)
        for r, k in sskip.items():
            skipped[r] = skipped.get(r, 0) + k
        decoded_by["scapy"] = sdf.height
        if sdf.height:
            parts.append(sdf)
    tracked = tracker is not None and not raw.slow_recs and not force_slow
    pk = _concat(parts, _packet_cols() + (["flow_id", "side"] if tracked else []))
    meta, warnings = _meta(path, raw, pk.height, int(pk["ts_ns"].min()) if pk.height else None,
                           int(pk["ts_ns"].max()) if pk.height else None, bpf, decoded_by, limit)
    return pk, meta, warnings, tracked and pk.height > 0


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
    from hscc_trace.events.source import Arena
    from hscc_trace.flows import FlowTracker, build_flows
    from hscc_trace.model import Capture, Deferred

    path = os.fspath(path)
    if not is_stream(path):
        with _gc_paused(), small_pages():  # (hscc_trace._alloc: 4 kB pages are cheaper to fill here)
            tracker = FlowTracker()
            fid = _file_id(path)  # a regular file can be read again for its packet table
            arena = Arena(_rows_hint(path), keep=fid is None)
            raw = _read(path, bpf=bpf, tracker=tracker, arena=arena)
            if not raw.aborted and raw.rows:
                dec = Decoded(arena, tracker, path, bpf, fid)
                meta, warnings = _meta(path, raw, dec.rows, arena.ts_range[0], arena.ts_range[1], bpf,
                                       {"fast": dec.rows})
                _add(warnings, tracker.wscale_warning(path))
                return Capture(meta=meta, packets=Deferred(dec.table), flows=tracker.table(), warnings=warnings,
                               decoded=dec)
        del arena
    # scapy's rows are merged in frame order: read again and build the whole table now (a pipe
    # or standard input, which can be read only once, comes straight here)
    tracker = FlowTracker()
    raw = _read(path, bpf=bpf, tracker=tracker)
    pk, meta, warnings, tracked = _eager(path, raw, bpf=bpf, tracker=tracker)
    if pk.height == 0:
        raise InputError(_no_tcp_message(meta, warnings))
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


def _no_tcp_message(meta: CaptureMeta, warnings: list[Warn]) -> str:
    p = meta.path
    if meta.packets_total == 0:
        why = "; ".join(w.message for w in warnings) or "the file holds no packet records"
        return f"{p}: no packets could be read ({why})"
    reasons = ", ".join(f"{r}: {k}" for r, k in sorted(meta.skipped.items(), key=lambda x: -x[1]))
    lts = ",".join(meta.link_types)
    return f"{p}: no TCP packets among {meta.packets_total} records (link type {lts}; {reasons})"


from .flowscan import load_flows  # noqa: E402  (the fast path of `hscc-trace flows`)
