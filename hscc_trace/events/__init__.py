"""Per-flow event streams from the data sender's point of view.

``flow_events(capture, flow_id)`` → :class:`hscc_trace.model.FlowEvents` with the tables
schema.SEGMENTS, ACKS, EPISODES and ROUNDS. ``events_from_packets(packets, flow)`` is the
lower-level entry that takes one flow's rows of schema.PACKETS and (optionally) its row of
schema.FLOWS. The rules are documented in docs/events.md and in the modules:

* :mod:`.prep` — sequence/timestamp unwrapping, handshake facts (vectorized);
* :mod:`.core` — the per-packet state machine (numba): segment kinds, ACK stream, SACK
  scoreboard, pipe, episodes, rounds;
* :mod:`.vantage` — sender / receiver / mid-path and the RTT correction;
* :mod:`.tables` — the polars tables and the per-round limit classification.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hscc_trace.errors import InputError
from hscc_trace.model import Capture, FlowEvents

from .prep import COLUMNS, NEED, group_rows, source_columns
from .tables import CHUNK_ROWS, build_flow_events

if TYPE_CHECKING:  # (imported where needed: a capture can be read while polars loads)
    import polars as pl

__all__ = ["flow_events", "events_from_packets", "all_flow_events", "flow_event_batches"]

#: :func:`flow_event_batches`: packets and flows per batch (at most this many flows' tables at
#: once). Half of one of the builder's chunks: one set of its working arrays (≈ 350 bytes a
#: packet) while the load arena is still full — two chunks built by two threads side by side
#: took ≈ 75 MB more at the start of ``analyze`` on replica-5M (≈ 700 against ≈ 630 MB) for no
#: less CPU time, and one chunk ≈ 25 MB more than half of one (508–517 against 482–490 MiB, the
#: same CPU time; a quarter saved nothing more). A longer flow is a batch of its own
BATCH_ROWS = CHUNK_ROWS // 2
BATCH_FLOWS = 512


def _check(packets: pl.DataFrame) -> None:
    missing = [c for c in NEED if c not in packets.columns]
    if missing:
        raise InputError(f"packets table lacks columns: {', '.join(missing)}")


def _index_dtype(n: int) -> type:
    """Row numbers as int32 when they fit (half the memory of the grouping)."""
    return np.int32 if n < 2**31 else np.int64


def _frame_order(frame: np.ndarray) -> np.ndarray:
    """Rows in frame order (empty when they already are)."""
    if frame.size < 2 or bool((frame[1:] >= frame[:-1]).all()):
        return np.empty(0, np.int64)
    return np.argsort(frame, kind="stable")


def _one_flow(packets: pl.DataFrame, flow: dict[str, Any] | None, flow_id: int) -> FlowEvents:
    _check(packets)
    if packets.height == 0:
        raise InputError("flow has no packets")
    src = source_columns(packets)
    order = _frame_order(src[0])
    if order.size == 0:
        order = np.arange(packets.height)
    order = order.astype(_index_dtype(order.size), copy=False)

    def get(name: str, unknown: int) -> np.ndarray:
        v = None if flow is None else flow.get(name)
        return np.array([unknown if v is None else int(v)], np.int64)

    mss = get("mss", 0)
    end = np.array([_END.get(str(None if flow is None else flow.get("vantage")), -1)], np.int64)
    return build_flow_events(
        src,
        order,
        np.array([0, packets.height], np.int64),
        [flow_id],
        get("sender_dir", -1),
        np.maximum(mss, 0),
        get("wscale_a", -1),
        get("wscale_b", -1),
        f_end=end,
    )[0]


def events_from_packets(
    packets: pl.DataFrame, flow: dict[str, Any] | None = None, flow_id: int | None = None
) -> FlowEvents:
    """Event streams of one flow from its packets (schema.PACKETS rows) and optional flow row."""
    if flow_id is None:
        if flow is not None and flow.get("flow_id") is not None:
            flow_id = int(flow["flow_id"])
        elif "flow_id" in packets.columns and packets.height:
            flow_id = int(packets.get_column("flow_id")[0])
        else:
            flow_id = 0
    return _one_flow(packets, flow, flow_id)


def flow_events(capture: Capture, flow_id: int) -> FlowEvents:
    """Event streams of flow ``flow_id`` of a decoded capture."""
    import polars as pl

    flows = capture.flows
    row = None
    if flows is not None and flows.height and "flow_id" in flows.columns:
        hit = flows.filter(pl.col("flow_id") == flow_id)
        if hit.height:
            row = hit.row(0, named=True)
    dec = getattr(capture, "decoded", None)
    if dec is not None:  # the decoder's columns in flow order: no packets table
        _usable(dec)
        fs = dec.src
        if not 0 <= flow_id < dec.n_flows or fs.bounds[flow_id] == fs.bounds[flow_id + 1]:
            known = "" if flows is None or not flows.height else f" (flows: 0..{flows.height - 1})"
            raise InputError(f"no flow with id {flow_id} in {capture.meta.path}{known}")
        sdir, mss, wsa, wsb, end = _flow_params(flows, np.array([flow_id], np.int64))
        rows = fs.rows(flow_id, flow_id + 1)  # (this flow's rows only)
        bnd = np.array([0, rows.size], np.int64)
        return build_flow_events(fs.src, rows, bnd, [flow_id], sdir, mss, wsa, wsb, f_end=end)[0]
    packets = capture.packets
    read = [c for c in (*COLUMNS, "flow_id") if c in packets.columns]  # (not all 39 columns)
    pk = packets.select(read).filter(pl.col("flow_id") == flow_id)
    if pk.height == 0:
        known = "" if flows is None or not flows.height else f" (flows: 0..{flows.height - 1})"
        raise InputError(f"no flow with id {flow_id} in {capture.meta.path}{known}")
    return _one_flow(pk, row, flow_id)


def _usable(dec: Any) -> None:
    """A load arena given back by ``flow_event_batches(release=True)`` has no packets left."""
    if getattr(getattr(dec, "arena", None), "released", False):
        raise ValueError("this capture's packets were released while its events were built: load it again")


#: the flows table's vantage as :func:`.tables.build_flow_events`' ``f_end`` (-1: the others)
_END = {"sender": 0, "receiver": 1}


def _flow_params(flows: pl.DataFrame | None, fids: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per flow of ``fids``: sender_dir (-1), mss (0), wscale_a (-1), wscale_b (-1) from the flows
    table (unknown in brackets), and its vantage as ``f_end`` (-1); the last row of a flow id wins."""
    import polars as pl

    n = fids.size
    out = [np.full(n, -1, np.int64), np.zeros(n, np.int64), np.full(n, -1, np.int64), np.full(n, -1, np.int64)]
    out.append(np.full(n, -1, np.int64))
    if flows is None or not flows.height or "flow_id" not in flows.columns:
        return tuple(out)
    pos = {int(v): i for i, v in enumerate(flows.get_column("flow_id").to_list())}
    rows = np.array([pos.get(int(f), -1) for f in fids], np.int64)
    hit = rows >= 0
    for k, (name, unknown) in enumerate((("sender_dir", -1), ("mss", 0), ("wscale_a", -1), ("wscale_b", -1))):
        if name in flows.columns:
            s = flows.get_column(name).cast(pl.Int64)
            v = s.to_numpy()  # (no fill_null: an eager polars expression plans a query, ≈ 0.1–0.3 ms)
            if s.null_count():  # (then float64, NaN at the nulls: small ints, exact)
                v = np.where(np.isnan(v), unknown, v).astype(np.int64)
            out[k][hit] = v[rows[hit]]
    if "vantage" in flows.columns:
        codes = np.array(
            [_END.get(str(v), -1) for v in flows.get_column("vantage").cast(pl.String).to_list()], np.int64
        )
        out[4][hit] = codes[rows[hit]]
    out[1] = np.maximum(out[1], 0)
    return tuple(out)


def all_flow_events(capture: Capture) -> dict[int, FlowEvents]:
    """Event streams of every flow, in order of each flow's first packet in the table.

    The packets are grouped by flow once (a counting sort of the row numbers; no table copy) and
    the flows are processed in batches (:func:`.tables.build_flow_events`). A capture from
    :func:`hscc_trace.flows.load` is read from its decoder's columns instead
    (``Capture.decoded``, :class:`.source.Arena`): only the columns the events need, copied
    into flow order once; its packets table is not built.
    """
    out: dict[int, FlowEvents] = {}
    dec = getattr(capture, "decoded", None)
    if dec is not None:  # the decoder's columns, put in flow order once (no packets table)
        _usable(dec)
        fs = dec.src
        present = np.flatnonzero(fs.first >= 0)
        sdir, mss, wsa, wsb, end = _flow_params(capture.flows, present)
        bnd = np.concatenate((fs.bounds[present], [fs.bounds[-1]]))
        evs = build_flow_events(fs.src, fs.order, bnd, [int(f) for f in present], sdir, mss, wsa, wsb, f_end=end)
        for k in np.argsort(fs.first[present], kind="stable"):
            out[int(present[k])] = evs[k]
        return out
    pk = capture.packets
    if pk.height == 0:
        return out
    _check(pk)
    if "flow_id" not in pk.columns:
        raise InputError("packets table lacks columns: flow_id")
    src = source_columns(pk)
    fid = pk.get_column("flow_id")
    if fid.null_count():
        fid = fid.fill_null(0)  # (the old partition would have failed on a null key)
    key = fid.to_numpy()
    ids = None
    if key.size and int(key.max()) > 4 * key.size + 1024:  # sparse ids: compact them first
        ids, key = np.unique(key, return_inverse=True)
    nbins = int(key.max()) + 1
    order: np.ndarray = np.empty(key.size, _index_dtype(key.size))
    bounds, first = group_rows(key, _frame_order(src[0]), nbins, order)
    present = np.flatnonzero(first >= 0)
    fids = present if ids is None else ids[present]
    sdir, mss, wsa, wsb, end = _flow_params(capture.flows, fids)
    bnd = np.concatenate((bounds[present], [bounds[-1]]))  # (ids without packets are empty groups)
    evs = build_flow_events(src, order, bnd.astype(np.int64), [int(f) for f in fids], sdir, mss, wsa, wsb, f_end=end)
    for k in np.argsort(first[present], kind="stable"):
        out[int(fids[k])] = evs[k]
    return out


def flow_event_batches(
    capture: Capture,
    flow_ids: Sequence[int] | None = None,
    *,
    rows: int = BATCH_ROWS,
    flows: int = BATCH_FLOWS,
    release: bool = False,
) -> Iterator[list[tuple[int, FlowEvents]]]:
    """The event streams of :func:`all_flow_events` (or of ``flow_ids``, in that order, as
    :func:`flow_events` builds them), a batch at a time: lists of ``(flow_id, FlowEvents)`` of
    about ``rows`` packets or at most ``flows`` flows, every flow by flow id (but with ``release``, below), each batch built
    when the iteration reaches it. A caller that is done with a batch before taking the next
    holds one batch's tables at a time instead of every flow's (``analyze`` on many flows:
    docs/performance.md). The tables are those of :func:`all_flow_events` — each flow's events
    depend on its own packets only.

    ``release`` (a capture read by :func:`hscc_trace.flows.load`, every flow): once a batch's
    packets are read (a batch built in one piece, e.g. one long flow: as soon as they are copied
    into the working arrays, before its state machine runs; otherwise once its tables are
    built), their memory in the load arena is given back to the system
    (:meth:`hscc_trace.flows.arena.Arena.release`) — the capture can then build no events and
    no packet table any more; ``analyze``, which reads each capture once, frees it as it goes.
    The flows then come fewest packets first (equal counts by flow id), each batch in that
    order: the largest flows, whose events and analysis take the most memory, come when the
    arena holds little more than their own packets (a long flow's packets have pages of their
    own in the arena: :data:`hscc_trace.flows.arena.RUN_ROWS`)."""
    if flow_ids is not None:
        for fid in flow_ids:
            yield [(int(fid), flow_events(capture, int(fid)))]
        return
    dec = getattr(capture, "decoded", None)
    if dec is None:  # a packets table (scapy's rows, a pipe): grouped once, as all_flow_events does
        every = all_flow_events(capture)
        ids = sorted(every)
        for k in range(0, len(ids), max(flows, 1)):
            yield [(f, every.pop(f)) for f in ids[k : k + max(flows, 1)]]
        return
    _usable(dec)
    fs = dec.src
    present = np.flatnonzero(fs.first >= 0)
    if not present.size:
        return
    size = fs.bounds[present + 1] - fs.bounds[present]
    if release:  # (fewest packets first: the docstring)
        by = np.argsort(size, kind="stable")
        present, size = present[by], size[by]
    sdir, mss, wsa, wsb, ends = _flow_params(capture.flows, present)
    cum = np.concatenate(([0], np.cumsum(size)))
    k, n = 0, present.size
    while k < n:
        end = int(np.searchsorted(cum, cum[k] + rows, side="right")) - 1  # flows k..end-1 hold ≤ rows
        end = min(max(end, k + 1), k + max(flows, 1), n)
        sel = present[k:end]
        bnd = cum[k : end + 1] - cum[k]
        at = fs.rows_of(sel)  # (the batch's rows alone: no list of every row)
        fids = [int(f) for f in sel]
        # with ``release``, the batch's arena rows go once they are read (no table column is a
        # view of the arena): for a batch of one long flow, before its state machine runs
        evs = build_flow_events(
            fs.src,
            at,
            bnd,
            fids,
            sdir[k:end],
            mss[k:end],
            wsa[k:end],
            wsb[k:end],
            read=functools.partial(dec.arena.release, at) if release else None,
            f_end=ends[k:end],
        )
        del at
        yield list(zip(fids, evs))
        k = end
