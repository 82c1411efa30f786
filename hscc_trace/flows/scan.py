"""The flow table of a capture without its packet table: the fast path of ``hscc-trace flows``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from hscc_trace.capture.decode import FALLBACK, FRAGMENT, REASONS, Scratch, decode_all, status_counts
from hscc_trace.capture.pipe import import_tables as _import_tables
from hscc_trace.capture.pipe import in_thread
from hscc_trace.capture.reader import Batch, ReadInfo, is_stream, iter_batches, linktype_name
from hscc_trace.errors import InputError, Warn

if TYPE_CHECKING:
    import polars as pl

    from hscc_trace.flows.tracker import FlowTracker
    from hscc_trace.model import CaptureMeta

__all__ = ["load_flows", "flow_rows", "FlowRows"]

#: decoded batches that may wait between the reader thread and the flow kernel
QUEUE_DEPTH = 1  # deeper (3) measured no faster on replica-5M, only larger
#: share of each batch's records the reader thread decodes; this thread decodes the rest before
#: running the flow kernel. Per packet (replica-5M) the reader walks the records of the mapped
#: file (≈ 33 ns with its page mapping), decoding takes ≈ 25 ns and the flow kernel ≈ 48 ns:
#: four fifths of the decoding in the reader balances the two threads.
READER_SHARE = 0.8
#: bytes of the file per batch (hscc_trace.capture.reader.CHUNK for the packet table)
CHUNK = 8 * 1024 * 1024


def load_flows(path: str | os.PathLike, *, bpf: str | None = None) -> tuple[pl.DataFrame, CaptureMeta, list[Warn]]:
    """The flow table (schema.FLOWS) of a capture without building its packet table.

    A reader thread reads, filters and decodes batches (compiled code that releases the GIL, as
    does gzip) while this thread feeds each decoded batch straight into the streaming flow
    kernel (:meth:`hscc_trace.flows.tracker.FlowTracker.feed_decoded`, which skips the records that are
    not TCP by their decoder status, so no column is copied); a third thread imports polars
    meanwhile (needed only for the final table). Memory holds a few batches plus the
    per-connection state and the RTT samples. The result equals ``load(path).flows``. A capture
    with records the fast decoder hands to scapy (other link types, tunnels, fragments) takes
    the full :func:`load` path instead, because those rows must be merged in frame order.
    """
    p = os.fspath(path)
    scan = None if is_stream(p) else _scan(p, bpf, import_tables=True)  # (a pipe cannot be read twice)
    if scan is None:
        from hscc_trace.flows.ingest import load

        cap = load(p, bpf=bpf)
        return cap.flows, cap.meta, cap.warnings
    tr, meta, warnings = scan
    return tr.table(), meta(), warnings


@dataclass
class FlowRows:
    """:func:`flow_rows`' answer: the flow table as row dicts and what the title line needs."""

    rows: list[dict]  # schema.FLOWS rows, ``vantage`` as str: load_flows' table .to_dicts()
    format: str  # as CaptureMeta.format
    link_types: list[str]  # as CaptureMeta.link_types
    packets_total: int  # records read
    packets_tcp: int  # records decoded as TCP
    warnings: list[Warn]


def flow_rows(path: str | os.PathLike, *, bpf: str | None = None) -> FlowRows:
    """The rows of :func:`load_flows`' table (``vantage`` as text), without importing polars.

    What ``hscc-trace flows`` prints. Same pass over the file as :func:`load_flows`; the rows
    come from :meth:`hscc_trace.flows.tracker.FlowTracker.rows` instead of a DataFrame, which saves the
    polars import (CPU time holding the GIL, a sizeable part of a command that reads millions of
    packets in about a second). Captures that need scapy take the :func:`load` path (with polars).
    """
    p = os.fspath(path)
    scan = None if is_stream(p) else _scan(p, bpf, import_tables=False)  # (a pipe cannot be read twice)
    if scan is None:
        import polars as pl

        from hscc_trace.flows.ingest import load

        cap = load(p, bpf=bpf)
        m = cap.meta
        rows = cap.flows.with_columns(pl.col("vantage").cast(str)).to_dicts()
        return FlowRows(rows, m.format, m.link_types, m.packets_total, m.packets_tcp, cap.warnings)
    tr, meta, warnings = scan
    info: ReadInfo = meta.info  # type: ignore[attr-defined]
    return FlowRows(
        tr.rows(), info.format, [linktype_name(lt) for lt in info.linktypes], info.records, int(tr.acc[0]), warnings
    )


class _Meta:
    """CaptureMeta of a scan, built on demand (hscc_trace.model imports polars)."""

    def __init__(self, p: str, info: ReadInfo, tr, bpf: str | None, skipped: dict[str, int]):
        self.p, self.info, self.tr, self.bpf, self.skipped = p, info, tr, bpf, skipped

    def __call__(self) -> CaptureMeta:
        from hscc_trace.model import CaptureMeta

        info, tr = self.info, self.tr
        tcp = int(tr.acc[0])
        first_ns, last_ns = (int(tr.acc[1]), int(tr.acc[2])) if tcp else (None, None)
        return CaptureMeta(
            path=self.p,
            format=info.format,
            link_types=[linktype_name(lt) for lt in info.linktypes],
            snaplen=info.snaplen,
            packets_total=info.records,
            packets_tcp=tcp,
            first_ns=first_ns,
            last_ns=last_ns,
            bpf=self.bpf,
            skipped=self.skipped,
            decoded_by={"fast": tcp} if tcp else {},
        )


def _scan(p: str, bpf: str | None, *, import_tables: bool) -> tuple[FlowTracker, _Meta, list[Warn]] | None:
    """One pass over the capture: the fed FlowTracker, its meta (on demand) and the warnings;
    None when records need scapy (the caller takes the full load path). Raises InputError for
    a filter that matches nothing and for a capture without TCP."""
    import threading

    from hscc_trace.flows.tracker import SAMPLES_PER_PACKET, FlowTracker

    info = ReadInfo()
    try:  # RTT samples ≤ SAMPLES_PER_PACKET per TCP packet; records take ≥ 70 bytes (pcap header + Ethernet/IP/TCP)
        hint = min(os.path.getsize(p) // 70, 1 << 26)
    except OSError:
        hint = 0  # (the reader reports the missing file)
    flt = None
    if bpf is not None:
        from hscc_trace.capture.bpf import BpfFilter

        flt = BpfFilter(bpf)

    def produce() -> Iterator[tuple[Batch, Scratch, int, np.ndarray]]:
        # scratch sets (and read buffers): one being fed by the consumer, QUEUE_DEPTH queued,
        # one being decoded
        scratches = [Scratch() for _ in range(QUEUE_DEPTH + 2)]
        k = 0
        for batch in iter_batches(p, info, buffers=QUEUE_DEPTH + 2, chunk=CHUNK, reuse=True):
            if flt is not None:
                batch = batch.subset(flt.match(batch))
                if len(batch) == 0:
                    continue
            sc = scratches[k % len(scratches)]
            k += 1
            m = int(len(batch) * READER_SHARE)
            _cols, status = decode_all(batch, sc, 0, m)
            yield batch, sc, m, status_counts(status[:m])

    importer: threading.Thread | None = None
    skipped: dict[str, int] = {}
    tr = FlowTracker(samples=SAMPLES_PER_PACKET * hint)
    matched = 0
    batches = in_thread(produce, depth=QUEUE_DEPTH)
    fallback = False
    try:
        tr.preload()  # while the reader thread reads the first batch
        for batch, sc, m, counts in batches:
            matched += len(batch)
            cols, status = decode_all(batch, sc, m)  # the rest of the batch, here
            counts = counts + status_counts(status[m:])
            if counts[FALLBACK] or counts[FRAGMENT]:
                fallback = True
                break
            for c in np.flatnonzero(counts[1:]).tolist():
                r = REASONS.get(c + 1, f"decoder status {c + 1}")
                skipped[r] = skipped.get(r, 0) + int(counts[c + 1])
            tr.feed_decoded(cols, status)
            if import_tables and importer is None:  # the kernels are loaded: import polars while they run
                importer = threading.Thread(target=_import_tables, name="hscc-import", daemon=True)
                importer.start()
    finally:
        batches.close()  # stops and joins the reader thread (early stop, or an error here)
    if importer is not None:
        importer.join()
    if fallback:
        return None
    if flt is not None and matched == 0 and info.records:
        raise InputError(f"{p}: no packet matches the filter {bpf!r} ({info.records} packets read)")
    warnings = [Warn(p, reason, k, True, *info.lost.get(reason, (None, None))) for reason, k in info.problems.items()]
    warnings += [Warn(p, f"skipped: {reason}", k) for reason, k in skipped.items()]
    ws = tr.wscale_warning(p)
    if ws is not None:
        warnings.append(ws)
    meta = _Meta(p, info, tr, bpf, skipped)
    if int(tr.acc[0]) == 0:
        from hscc_trace.capture import no_tcp_message

        raise InputError(no_tcp_message(meta(), warnings))
    return tr, meta, warnings
