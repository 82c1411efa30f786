"""Capture ingestion: a capture file in, a :class:`~hscc_trace.model.Capture` out.

``load(path)`` reads pcap / pcapng (optionally gzip-compressed) in chunks
(:mod:`.reader`), applies a BPF ``--filter`` compiled by libpcap (:mod:`.bpf`), decodes TCP with
the compiled fast path (:mod:`.decode`) and hands whatever it does not know to scapy
(:mod:`.slow`); then :func:`hscc_trace.flows.build_flows` assigns connections. Every record
that does not become a TCP packet row is counted by reason in ``CaptureMeta.skipped`` and
reported as a warning.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterator

import numpy as np

from hscc_trace.errors import InputError, Warn

from .decode import FALLBACK, FRAGMENT, REASONS, decode_arrays, to_frame
from .pipe import in_thread as _in_thread
from .reader import ReadInfo, iter_batches, linktype_name

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


def _read_packets(path, *, bpf=None, fallback=True, force_slow=False, limit=None, tracker=None):
    """load_packets(); with a FlowTracker, rows also carry flow_id/side unless scapy rows were
    merged in (4th value False: the caller must then run build_flows on the whole table)."""
    import polars as pl

    from hscc_trace import schema
    from hscc_trace.model import CaptureMeta

    _PACKET_COLS = _packet_cols()
    path = os.fspath(path)
    info = ReadInfo()
    parts: list[pl.DataFrame] = []
    skipped: dict[str, int] = {}
    slow_recs: list[tuple[int, int, int, int, int, bytes]] = []  # frame, ts_ns, iface, wire, linktype, bytes
    flt = None
    if bpf is not None:
        from .bpf import BpfFilter

        flt = BpfFilter(bpf)
    matched = 0

    def produce() -> Iterator[tuple[int, dict | None, np.ndarray, list]]:
        """Reader thread: read, filter, decode (compiled, no GIL) and copy out scapy's records."""
        seen = 0
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

    # this thread assigns connections and builds the batch tables while the reader decodes the next
    batches = _in_thread(produce)
    try:
        for nrec, cols, status, recs in batches:
            matched += nrec
            slow_recs += recs
            if cols is not None and len(cols["flags"]):
                parts.append(to_frame(cols, tracker))
            counts = np.bincount(status, minlength=len(REASONS) + 1)
            for c in np.flatnonzero(counts[1:]).tolist():
                c += 1
                if fallback and c in (FALLBACK, FRAGMENT):
                    continue
                r = REASONS.get(c, f"decoder status {c}")
                skipped[r] = skipped.get(r, 0) + int(counts[c])
    finally:
        batches.close()  # on an error here: stop and join the reader thread now
    decoded_by = {"fast": sum(p.height for p in parts)}
    if slow_recs:
        from .slow import decode_records

        sdf, sskip = decode_records(slow_recs)
        for r, k in sskip.items():
            skipped[r] = skipped.get(r, 0) + k
        decoded_by["scapy"] = sdf.height
        if sdf.height:
            parts.append(sdf)
    tracked = tracker is not None and not slow_recs and not force_slow
    cols = _PACKET_COLS + (["flow_id", "side"] if tracked else [])
    if parts:
        sel = [p.select(cols) for p in parts]
        same = all(x.schema == sel[0].schema for x in sel)
        pk = pl.concat(sel, how="vertical" if same else "vertical_relaxed", rechunk=False)
        if len(parts) > 1 and not pk["frame"].is_sorted():
            pk = pk.sort("frame")
    else:
        pk = schema.empty(schema.PACKETS).select(_PACKET_COLS)
    pk = pk.with_columns([pl.col(c.name).cast(c.dtype) for c in schema.PACKETS if c.name in _PACKET_COLS])
    warnings: list[Warn] = [Warn(path, reason, k) for reason, k in info.problems.items()]
    warnings += [Warn(path, f"skipped: {reason}", k) for reason, k in skipped.items()]
    meta = CaptureMeta(
        path=path,
        format=info.format,
        link_types=[linktype_name(lt) for lt in info.linktypes],
        snaplen=info.snaplen,
        packets_total=info.records if limit is None else min(info.records, limit),
        packets_tcp=pk.height,
        first_ns=int(pk["ts_ns"].min()) if pk.height else None,
        last_ns=int(pk["ts_ns"].max()) if pk.height else None,
        bpf=bpf,
        skipped=skipped,
        decoded_by={k: v for k, v in decoded_by.items() if v},
    )
    if flt is not None and matched == 0 and info.records:
        raise InputError(f"{path}: no packet matches the filter {bpf!r} ({info.records} packets read)")
    return pk, meta, warnings, tracked and pk.height > 0


def load(path: str | os.PathLike, *, bpf: str | None = None) -> Capture:
    """Read, decode and group a capture into packets (schema.PACKETS) and flows (schema.FLOWS).

    Raises :class:`~hscc_trace.errors.InputError` (one line) for unusable input: a missing,
    empty or non-capture file, an unsupported link type, an invalid filter, or a capture in which
    no TCP packet could be decoded. Partial problems (truncated last record, undecodable records)
    become warnings with counts.
    """
    import polars as pl

    from hscc_trace import schema
    from hscc_trace.flows import FlowTracker, build_flows
    from hscc_trace.model import Capture

    tracker = FlowTracker()
    pk, meta, warnings, tracked = _read_packets(path, bpf=bpf, tracker=tracker)
    if pk.height == 0:
        raise InputError(_no_tcp_message(meta, warnings))
    if tracked:  # connections were assigned batch by batch, in capture order, as build_flows would
        a_side = pl.lit(pl.Series(tracker.a_side(), dtype=pl.UInt8))
        pk = pk.with_columns((pl.col("side") ^ a_side.gather(pl.col("flow_id"))).alias("dir"))
        packets, flows = schema.conform(pk, schema.PACKETS), tracker.table()
    else:  # scapy rows were merged in frame order: assign connections over the whole table
        packets, flows = build_flows(pk)
    return Capture(meta=meta, packets=packets, flows=flows, warnings=warnings)


def _no_tcp_message(meta: CaptureMeta, warnings: list[Warn]) -> str:
    p = meta.path
    if meta.packets_total == 0:
        why = "; ".join(w.message for w in warnings) or "the file holds no packet records"
        return f"{p}: no packets could be read ({why})"
    reasons = ", ".join(f"{r}: {k}" for r, k in sorted(meta.skipped.items(), key=lambda x: -x[1]))
    lts = ",".join(meta.link_types)
    return f"{p}: no TCP packets among {meta.packets_total} records (link type {lts}; {reasons})"


from .flowscan import load_flows  # noqa: E402  (the fast path of `hscc-trace flows`)
