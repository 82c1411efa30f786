"""The flow table of a capture without its packet table: the fast path of ``hscc-trace flows``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterator

import numpy as np

from hscc_trace.errors import InputError, Warn

from .decode import FALLBACK, FRAGMENT, REASONS, Scratch, decode_all
from .pipe import in_thread
from .reader import ReadInfo, iter_batches, linktype_name

if TYPE_CHECKING:
    import polars as pl

    from hscc_trace.model import CaptureMeta

__all__ = ["load_flows"]


def load_flows(path: str | os.PathLike, *, bpf: str | None = None) -> tuple[pl.DataFrame, CaptureMeta, list[Warn]]:
    """The flow table (schema.FLOWS) of a capture without building its packet table.

    The fast path of ``hscc-trace flows``: a reader thread reads, filters and decodes batches
    (compiled code that releases the GIL, as does gzip) while this thread feeds each decoded
    batch straight into the streaming flow kernel (:meth:`hscc_trace.flows.FlowTracker.feed_decoded`,
    which skips the records that are not TCP by their decoder status, so no column is copied);
    a third thread imports polars meanwhile (needed only for the final table). Memory holds a
    few batches plus the per-connection state and the RTT samples. The result equals
    ``load(path).flows``. A capture with records the fast decoder hands to scapy (other link
    types, tunnels, fragments) takes the full :func:`load` path instead, because those rows must
    be merged in frame order.
    """
    import threading

    from hscc_trace.flows import FlowTracker

    p = os.fspath(path)
    info = ReadInfo()
    flt = None
    if bpf is not None:
        from .bpf import BpfFilter

        flt = BpfFilter(bpf)

    def produce() -> Iterator[tuple[int, dict, np.ndarray, np.ndarray]]:
        # three scratch sets: one being fed by the consumer, one queued, one being decoded
        scratches = [Scratch(), Scratch(), Scratch()]
        k = 0
        for batch in iter_batches(p, info):
            if flt is not None:
                batch = batch.subset(flt.match(batch))
                if len(batch) == 0:
                    continue
            cols, status = decode_all(batch, scratches[k % 3])
            k += 1
            yield len(batch), cols, status, np.bincount(status, minlength=len(REASONS) + 1)

    importer: threading.Thread | None = None
    skipped: dict[str, int] = {}
    tr = FlowTracker()
    matched = 0
    batches = in_thread(produce)
    fallback = False
    try:
        for nrec, cols, status, counts in batches:
            matched += nrec
            if counts[FALLBACK] or counts[FRAGMENT]:
                fallback = True
                break
            for c in np.flatnonzero(counts[1:]).tolist():
                r = REASONS.get(c + 1, f"decoder status {c + 1}")
                skipped[r] = skipped.get(r, 0) + int(counts[c + 1])
            tr.feed_decoded(cols, status)
            if importer is None:  # the kernels are loaded: import polars while they run
                importer = threading.Thread(target=_import_tables, name="hscc-import", daemon=True)
                importer.start()
    finally:
        batches.close()  # stops and joins the reader thread (early stop, or an error here)
    if importer is not None:
        importer.join()
    if fallback:
        from . import load

        cap = load(p, bpf=bpf)
        return cap.flows, cap.meta, cap.warnings
    from hscc_trace.model import CaptureMeta

    if flt is not None and matched == 0 and info.records:
        raise InputError(f"{p}: no packet matches the filter {bpf!r} ({info.records} packets read)")
    tcp = int(tr.acc[0])
    first_ns, last_ns = (int(tr.acc[1]), int(tr.acc[2])) if tcp else (None, None)
    warnings = [Warn(p, reason, k) for reason, k in info.problems.items()]
    warnings += [Warn(p, f"skipped: {reason}", k) for reason, k in skipped.items()]
    meta = CaptureMeta(path=p, format=info.format, link_types=[linktype_name(lt) for lt in info.linktypes],
                       snaplen=info.snaplen, packets_total=info.records, packets_tcp=tcp, first_ns=first_ns,
                       last_ns=last_ns, bpf=bpf, skipped=skipped, decoded_by={"fast": tcp} if tcp else {})
    if tcp == 0:
        from . import _no_tcp_message

        raise InputError(_no_tcp_message(meta, warnings))
    return tr.table(), meta, warnings


def _import_tables() -> None:
    """Import polars and the table modules (run in a thread while compiled kernels hold no GIL).

    Importing is Python code holding the GIL; the reader and flow threads need it only briefly
    between compiled calls, so the switch interval is shortened meanwhile (default 5 ms: each
    of those brief needs could otherwise wait that long).
    """
    import sys

    if "polars" in sys.modules and "hscc_trace.model" in sys.modules:
        return
    old = sys.getswitchinterval()
    sys.setswitchinterval(min(old, 2e-4))
    try:
        import polars  # noqa: F401

        from hscc_trace import model, schema  # noqa: F401
    finally:
        sys.setswitchinterval(old)
