"""Reading captures: pcap / pcapng (optionally gzip-compressed) records in, decoded TCP rows out.

:func:`read` reads in chunks (:mod:`.reader`), applies a BPF ``--filter`` compiled by libpcap
(:mod:`.bpf`), decodes TCP with the compiled fast path (:mod:`.decode`) and hands whatever it
does not know to scapy (:mod:`.slow`). Every record that does not become a TCP packet row is
counted by reason in ``CaptureMeta.skipped`` and reported as a warning. Connections are assigned
one layer up (:mod:`hscc_trace.flows.tracker`): :func:`read` takes the flow tracker and the per-flow
arena as arguments and never imports them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, cast

import numpy as np

from hscc_trace.errors import InputError, Warn

from .decode import FALLBACK, FRAGMENT, REASONS, Scratch, decode_arrays, to_frame
from .pipe import import_tables as _import_tables
from .pipe import in_thread as _in_thread
from .pipe import tables_imported as _tables_imported
from .reader import ReadInfo, iter_batches, linktype_name

if TYPE_CHECKING:  # polars (via schema/model) is imported where tables are built: see load_flows
    import polars as pl

    from hscc_trace.model import CaptureMeta

__all__ = ["load_packets", "read", "read_packets", "eager_table", "capture_meta", "no_tcp_message", "RawRead"]


def _packet_cols() -> list[str]:
    from hscc_trace import schema

    return [c.name for c in schema.PACKETS if c.name not in ("flow_id", "dir")]


def load_packets(
    path: str | os.PathLike,
    *,
    bpf: str | None = None,
    fallback: bool = True,
    force_slow: bool = False,
    limit: int | None = None,
) -> tuple[pl.DataFrame, CaptureMeta, list[Warn]]:
    """Read and decode ``path``: (TCP packet rows in capture order without flow_id/dir, meta, warnings).

    ``fallback=False`` disables the scapy decoder (its records are then counted as skipped);
    ``force_slow=True`` decodes *every* record with scapy (for the fast/slow parity test);
    ``limit`` stops after that many records. Records removed by ``bpf`` are neither decoded
    nor counted as skipped.
    """
    pk, meta, warnings, _ = read_packets(path, bpf=bpf, fallback=fallback, force_slow=force_slow, limit=limit)
    return pk, meta, warnings


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


class RawRead:
    """What :func:`_read` collected (see there)."""

    def __init__(self) -> None:
        self.parts: list[tuple[dict[str, np.ndarray], np.ndarray | None, np.ndarray | None]] = []
        self.slow_recs: list[tuple[int, int, int, int, int, bytes]] = []  # frame, ts_ns, iface, wire, linktype, bytes
        self.skipped: dict[str, int] = {}
        self.info = ReadInfo()
        self.matched = 0
        self.rows = 0  # rows added to an arena
        self.aborted = False


def read(path: str, *, bpf=None, fallback=True, force_slow=False, limit=None, tracker=None, arena=None) -> RawRead:
    """Read and decode ``path`` (reader thread) and, with a FlowTracker, assign every TCP row its
    connection here: the fast decoder's columns per batch (``parts``: columns, flow, side; no
    table is built), the records for scapy, skip counts and the reader's info. With an ``arena``
    (and a tracker) the rows go to the arena instead of ``parts``, and reading stops
    (``aborted``) at the first record that needs scapy."""
    raw = RawRead()
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
                    recs.append(
                        (
                            int(frames[j]),
                            int(batch.ts_ns[i]),
                            int(batch.iface[i]),
                            int(batch.wire[i]),
                            int(batch.linktype[i]),
                            bytes(batch.buf[o : o + int(batch.cap[i])]),
                        )
                    )
            yield len(batch), cols, status, recs

    # this thread assigns connections while the reader decodes the next batch
    batches = _in_thread(produce)
    importer = None
    imported = _tables_imported()  # (a process that analyzed a capture before: no thread for it)
    try:
        for nrec, cols, status, recs in batches:
            if importer is None and not imported:  # the compiled kernels are loaded: import polars while they run
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


def capture_meta(
    path: str,
    raw: RawRead,
    rows: int,
    first_ns: int | None,
    last_ns: int | None,
    bpf: str | None,
    decoded_by: dict[str, int],
    limit: int | None = None,
) -> tuple[CaptureMeta, list[Warn]]:
    from hscc_trace.model import CaptureMeta

    info, skipped = raw.info, raw.skipped
    warnings: list[Warn] = [
        Warn(path, reason, k, True, *info.lost.get(reason, (None, None))) for reason, k in info.problems.items()
    ]
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


def read_packets(path, *, bpf=None, fallback=True, force_slow=False, limit=None, tracker=None):
    """load_packets(); with a FlowTracker, rows also carry flow_id/side unless scapy rows were
    merged in (4th value False: the caller must then run build_flows on the whole table)."""
    path = os.fspath(path)
    raw = read(path, bpf=bpf, fallback=fallback, force_slow=force_slow, limit=limit, tracker=tracker)
    return eager_table(path, raw, bpf=bpf, force_slow=force_slow, limit=limit, tracker=tracker)


def eager_table(path, raw: RawRead, *, bpf=None, force_slow=False, limit=None, tracker=None):
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
    meta, warnings = capture_meta(
        path,
        raw,
        pk.height,
        cast(int, pk["ts_ns"].min()) if pk.height else None,
        cast(int, pk["ts_ns"].max()) if pk.height else None,
        bpf,
        decoded_by,
        limit,
    )
    return pk, meta, warnings, tracked and pk.height > 0


def no_tcp_message(meta: CaptureMeta, warnings: list[Warn]) -> str:
    p = meta.path
    if meta.packets_total == 0:
        why = "; ".join(w.message for w in warnings) or "the file holds no packet records"
        return f"{p}: no packets could be read ({why})"
    reasons = ", ".join(f"{r}: {k}" for r, k in sorted(meta.skipped.items(), key=lambda x: -x[1]))
    lts = ",".join(meta.link_types)
    return f"{p}: no TCP packets among {meta.packets_total} records (link type {lts}; {reasons})"
