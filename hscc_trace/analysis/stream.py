"""Streamed outputs of an ``analyze`` run: each flow's outputs are written as it finishes, and only
a summary of it stays in memory.

Without this, a run holds every flow's event tables, replays and fit until the report and the
JSON results are written: ≈ 200–300 KB per short flow, so 50 000 connections needed 7 GB
(issue #20). A :class:`Stream` given to :func:`hscc_trace.analysis.pipeline.run` takes every
finished flow (:meth:`Stream.done`, in the pipeline's calling thread) and

* writes its ``--export`` tables at once (atomic files, :func:`hscc_trace.analysis.export.export_flow`);
* writes its JSON results entry (:func:`hscc_trace.analysis.results.flow_entry`) to a spool —
  in memory up to :data:`~hscc_trace.analysis.results.SPOOL_MEMORY`, then an unnamed temporary file — from which the results
  document and the terminal summary are written at the end
  (:class:`~hscc_trace.analysis.results.Entry`);
* keeps a :class:`~hscc_trace.model.FlowSummary` (verdict, limits, vantage, warnings, where its
  entry is): what the report's overview and header need;
* when the report draws the flow in full — the ``keep`` flows with the most payload, as
  :func:`hscc_trace.reports.write_report` chooses them (:func:`report_rank`) — keeps what the
  report needs of it, in one of two ways.

**A run of one capture** that can be read again (not a pipe), given a ``drawer`` (the report's
``hscc_trace.reports.html.Drawer``, with the options the report will be written with): the
flows the report draws are known as soon as the capture's flow table is (:meth:`Stream.opened`:
its order is the flows' payload, in the FLOWS row before any analysis, among the flows with
packets — one without has no event streams and is never analyzed), and each is drawn when
it finishes (:meth:`Stream.done`), from the replays it already has: its figures' payloads and
its store, compressed (:class:`_Drawn`; the flow's tables and replays go). No flow's tables are
compressed while the run goes on and no flow is replayed twice. ``write_report`` checks every
section against its own plan (points per series, full resolution, colours, options) and makes
again one that differs, the flow read and analyzed again from its capture
(``FlowResult.drawn.restore()``); when a planned flow cannot be analyzed, the next one by payload
is drawn instead, analyzed again from the capture at the end of the run (:meth:`results`). Those
are the rare paths; what they cost is a read of the capture per flow made again. A planned flow
whose packets do not fit in the report's event budget (a flow has at most one event per packet)
is drawn when it finishes if every larger planned flow is analyzed by then, its full resolution
decided by their events and its own (``Drawer.settle``: a capture's largest or only flow always
is); one finished before a larger flow is kept as below.

**Otherwise** (several captures, standard input): a kept flow is one of the top ``keep`` of the
flows finished so far, its event tables compressed until the run ends (:class:`_Packed`) and its
replays released (:class:`~hscc_trace.model.ReleasedReplays`: the report replays a drawn flow
again, one at a time); a flow pushed out of the top ``keep`` by a larger one is dropped.

The captures of a streamed run then hold the kept flows in ``CaptureResult.results`` and every
analyzed flow in ``CaptureResult.summaries``. The outputs are those of an unstreamed run, byte
for byte (tests/analysis/test_stream.py), with one exception: when a capture's events fail after some of
its flows were analyzed (the whole capture is then an error, its flows forgotten), flows of other
captures that its flows had pushed out of the top ``keep``, or kept out of it, are gone, and the
report draws fewer flows in full than an unstreamed run would (every flow is still in its
overview, the JSON results and the exports). Keeping them would mean keeping every flow that
might be drawn until every capture is read: the memory this module saves.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import heapq
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hscc_trace.analysis.results import Entry, Spool, entry_text, flow_entry
from hscc_trace.model import DrawnFlow, FlowEvents, FlowResult, FlowSummary, ReleasedReplays, VerdictBrief

if TYPE_CHECKING:
    import polars as pl


def report_rank(flow: dict[str, Any]) -> int:
    """The report's order of flows (most payload first, ties in analysis order): this key, ascending."""
    return -int(flow.get("payload_ab", 0) or 0) - int(flow.get("payload_ba", 0) or 0)


def limit_shares(rounds: pl.DataFrame | None) -> dict[str, float]:
    """Share of a flow's rounds (schema.ROUNDS) limited by each ``limit`` (cwnd, rwnd, app)."""
    import polars as pl

    if rounds is None or not rounds.height:
        return {}
    counts = rounds["limit"].cast(pl.String).value_counts()
    total = rounds.height
    return {row[0]: row[1] / total for row in counts.iter_rows() if row[0] is not None}


def summarize(fr: FlowResult, entry: Entry | None = None) -> FlowSummary:
    """What a streamed run keeps of a finished flow (:class:`~hscc_trace.model.FlowSummary`)."""
    ev, v = fr.events, fr.verdict
    return FlowSummary(
        flow_id=int(fr.flow["flow_id"]),
        vantage=str(ev.vantage or fr.flow.get("vantage") or "unknown"),
        limits=limit_shares(ev.rounds),
        warnings=(*fr.warnings, *ev.warnings),
        verdict=VerdictBrief(v.cls, v.name, v.error, v.threshold, tuple(v.candidates)) if v is not None else None,
        entry=entry,
        series=_series(fr),
    )


def _series(fr: FlowResult) -> Any:
    """The flow's bottleneck-group input (:func:`hscc_trace.analysis.groups.flow_series`), for a
    flow carrying at least :data:`~hscc_trace.analysis.groups.SERIES_MIN_BYTES` of payload."""
    from hscc_trace.analysis import groups

    payload = int(fr.flow.get("payload_ab", 0) or 0) + int(fr.flow.get("payload_ba", 0) or 0)
    return groups.flow_series(fr) if payload >= groups.SERIES_MIN_BYTES else None


# --- the stream ------------------------------------------------------------------------------


@dataclass
class _Export:
    folder: Path
    fmt: str
    planned: dict[str, str]  # capture path -> its folder's name, assuming every capture is read
    files: dict[str, list[tuple[int, list[Path]]]]  # capture path -> (flow index, files)


class Stream:
    """Outputs written as flows finish (module docstring).

    ``keep``: flows kept whole for the report (its ``max_flows``; 0 without a report);
    ``entries``: spool every flow's JSON entry (for the results document or the terminal
    summary); ``export``: ``(folder, format)`` to write every flow's tables under."""

    def __init__(
        self,
        *,
        keep: int = 0,
        entries: bool = True,
        export: tuple[str | Path, str] | None = None,
        drawer: Any = None,
    ) -> None:
        from hscc_trace.analysis import export as _export

        self.keep = max(int(keep), 0)
        self.drawer = drawer if self.keep else None
        self.spool = Spool() if entries else None
        self._export: _Export | None = None
        if export is not None:
            folder, fmt = export
            ext = "." + fmt.lower().lstrip(".")
            _export.format_of(f"x{ext}")
            self._export = _Export(Path(folder), ext, {}, {})
        self._summaries: dict[str, dict[int, FlowSummary]] = {}
        self._kept: dict[tuple[str, int], _Packed | _Drawn] = {}
        self._heap: list[tuple[tuple[int, int, int], tuple[str, int]]] = []  # (negated rank key, (path, index))
        self._order: dict[str, int] = {}
        self._replay: Any = None
        self._reanalyze: Any = None
        self._labels: tuple[str, ...] = ()
        self._plan: dict[int, bool] | None = None  # a planned run: flow index -> drawn as it finishes
        self._ids: list[int] = []  # a planned run's selected flows
        self._rank: dict[int, int] = {}  # a planned run: every analyzed flow's report_rank

    def start(
        self, inputs: list[str], replay: Any, reanalyze: Any = None, labels: tuple[str, ...] | list[str] = ()
    ) -> None:
        """Called by the pipeline before the first flow: the captures in input order (readable
        or not), ``replay(events)`` that replays a flow as the run does, ``reanalyze(path,
        flow_ids)`` that analyzes flows of a capture again as the run does (``{flow_id:
        FlowResult}``) and the replays' labels."""
        from hscc_trace.analysis import export as _export

        self._order = {p: k for k, p in enumerate(inputs)}
        self._replay = replay
        self._reanalyze = reanalyze
        self._labels = tuple(labels)
        if self._export is not None:
            stems = _export.capture_stems([Path(p).name for p in inputs])
            self._export.planned = dict(zip(inputs, stems))

    def opened(
        self, path: str, flows: pl.DataFrame, ids: list[int], bpf: str | None, present: list[int] | None = None
    ) -> None:
        """Called by the pipeline when capture ``path`` is read: its flow table, its selected
        flows and, when known, those of them with packets (the others have no event streams and
        are never analyzed). A run of one capture that can be read again plans here which flows
        the report draws, and draws them as they finish (module docstring)."""
        from hscc_trace.capture.reader import is_stream

        if self.drawer is None or self._reanalyze is None or len(self._order) != 1 or is_stream(path):
            return
        try:
            self._plan = self.drawer.plan(flows, ids, self._labels, bpf, present)
        except Exception:  # noqa: BLE001 - a report bug: the flows are kept as in an unplanned run
            self._plan = None  # (write_report draws them, and its error is the report's alone)
            return
        self._ids = list(ids)

    def done(self, path: str, index: int, fr: FlowResult) -> None:
        """Flow ``index`` of capture ``path`` is analyzed: write its outputs, keep its summary and,
        when the report draws it, the flow (module docstring)."""
        from hscc_trace.analysis import export as _export

        if self._export is not None:
            x = self._export
            stem = x.planned.get(path) or _export.capture_stems([Path(path).name])[0]
            files = _export.export_flow(fr, x.folder / stem, x.fmt)
            x.files.setdefault(path, []).append((index, files))
        entry = self.spool.add(entry_text(flow_entry(fr))) if self.spool is not None else None
        self._summaries.setdefault(path, {})[index] = summarize(fr, entry)
        if not self.keep:
            return
        if self._plan is not None:  # a planned run: the flows the report draws are known
            self._rank[index] = report_rank(fr.flow)
            now = self._plan.get(index)
            if now is not None and self.drawer is not None:  # (an open flow is known once the larger ones are)
                now = self.drawer.settle(index, fr.events.acks.height + fr.events.segments.height)
            drawn = None
            if now and self.drawer is not None:
                try:
                    drawn = self.drawer.draw(index, fr)
                except Exception:  # noqa: BLE001 - a report bug costs the report, not the run:
                    drawn = None  # the flow is kept packed, and write_report draws it (and fails) then
            if drawn is not None:
                self._kept[(path, index)] = _Drawn.of(fr, drawn)
            elif now is not None:  # (its full resolution depends on flows not analyzed yet)
                self._kept[(path, index)] = self._compact(fr)
            return
        key = (report_rank(fr.flow), self._order.get(path, len(self._order)), index)
        neg = (-key[0], -key[1], -key[2])
        if len(self._heap) < self.keep:
            heapq.heappush(self._heap, (neg, (path, index)))
        elif neg > self._heap[0][0]:  # ranks before the last one kept: that one goes
            _, out = heapq.heapreplace(self._heap, (neg, (path, index)))
            self._kept.pop(out, None)
        else:
            return
        self._kept[(path, index)] = self._compact(fr)

    def _compact(self, fr: FlowResult) -> _Packed:
        """A kept flow while the run goes on: its event tables compressed (:class:`_Packed`), its
        replays dropped (the report makes them again)."""
        return _Packed.of(fr)

    def failed(self, path: str) -> None:
        """Capture ``path`` could not be read after all (an error while building its events):
        forget its flows and remove the tables exported for it."""
        self._summaries.pop(path, None)
        for k in [k for k in self._kept if k[0] == path]:
            del self._kept[k]
        self._plan, self._rank = None, {}
        self._heap = [h for h in self._heap if h[1][0] != path]
        heapq.heapify(self._heap)
        if self._export is not None:
            for _i, files in self._export.files.pop(path, []):
                for f in files:
                    with contextlib.suppress(OSError):
                        f.unlink()
            with contextlib.suppress(OSError, KeyError):  # its folder, when nothing else is in it
                (self._export.folder / self._export.planned[path]).rmdir()

    def results(self, path: str) -> tuple[list[FlowResult], list[FlowSummary]]:
        """The kept flows and the summaries of every analyzed flow of ``path``, in flow order.

        A planned run's kept flows are those the report draws: the ``keep`` analyzed flows with
        the most payload. One that was not planned (a planned flow could not be analyzed) is
        analyzed again here, from the capture."""
        summaries = self._summaries.get(path, {})
        if self._plan is not None:
            drawn = sorted(sorted(self._rank, key=lambda i: (self._rank[i], i))[: self.keep])
            missing = [i for i in drawn if (path, i) not in self._kept]
            try:
                again = self._reanalyze(path, [self._ids[i] for i in missing]) if missing else {}
            except Exception:  # noqa: BLE001 - the capture cannot be read again: those flows are
                again = {}  # not drawn in full (the report's overview still lists them)
            out: list[FlowResult] = []
            for i in drawn:
                if (path, i) not in self._kept and self._ids[i] not in again:
                    continue
                k = self._kept.pop((path, i), None)
                if isinstance(k, _Drawn):
                    out.append(k.result(functools.partial(self._restore, path, self._ids[i])))
                elif k is not None:
                    out.append(k.unpack(self._replay))
                else:
                    fr = again[self._ids[i]]
                    released = _released(tuple(fr.replays), fr.events, self._replay)
                    out.append(dataclasses.replace(fr, replays={}, released=released))
            for key in [key for key in self._kept if key[0] == path]:  # (none: every planned flow analyzed is drawn)
                del self._kept[key]
            return out, [summaries[i] for i in sorted(summaries)]
        kept = sorted(
            (i, k.unpack(self._replay)) for (p, i), k in self._kept.items() if p == path and isinstance(k, _Packed)
        )  # (a run not planned keeps no _Drawn)
        return [fr for _, fr in kept], [summaries[i] for i in sorted(summaries)]

    def _restore(self, path: str, flow_id: int) -> FlowResult:
        """A flow drawn as it finished, whole again: read and analyzed again from its capture."""
        return self._reanalyze(path, [flow_id])[flow_id]

    def finish_export(self, paths: list[str]) -> list[Path]:
        """The exported tables, once the readable captures (``paths``, in order) are known: each
        capture's folder is named as :func:`~hscc_trace.analysis.export.export_analysis` names it
        (when a capture that shares its file name could not be read, the names change: the
        tables are moved). Returns every file, by capture, flow and table."""
        from hscc_trace.analysis import export as _export

        if self._export is None:
            return []
        x = self._export
        final = dict(zip(paths, _export.capture_stems([Path(p).name for p in paths])))
        out: list[Path] = []
        moves = sorted(
            (p for p in paths if final[p] != x.planned.get(p)), key=lambda p: paths.index(p)
        )  # (each capture's final name is at most its planned one: in this order no move meets another's files)
        for p in moves:
            dest = x.folder / final[p]
            dest.mkdir(parents=True, exist_ok=True)
            for _i, files in x.files.get(p, []):
                for k, f in enumerate(files):
                    target = dest / f.name
                    os.replace(f, target)
                    files[k] = target
            if p in x.planned:  # its planned folder, now empty (unless it held other files)
                with contextlib.suppress(OSError):
                    (x.folder / x.planned[p]).rmdir()
        for p in paths:
            for _i, files in sorted(x.files.get(p, []), key=lambda t: t[0]):
                out += files
        return out

    def close(self) -> None:
        if self.spool is not None:
            self.spool.close()
        if self.drawer is not None:
            self.drawer.close()


#: FlowEvents fields that are tables (the rest are a few scalars)
_TABLES = ("segments", "acks", "episodes", "rounds", "sack_blocks")


@dataclass
class _Packed:
    """A flow the report will draw, kept while the run goes on: everything but its tables as they
    are, its event tables as compressed Arrow IPC (zstd: about a sixth of their size — the events
    of replica-5M's 25 largest flows, 134 MB, take ≈ 25 MB), its replays not at all."""

    parts: dict[str, Any]  # the FlowResult's other fields (flow row, fit, warnings, verdict)
    labels: tuple[str, ...]
    scalars: dict[str, Any]  # the FlowEvents' other fields
    tables: dict[str, bytes | None]

    @classmethod
    def of(cls, fr: FlowResult) -> _Packed:
        ev = fr.events
        scalars = {f.name: getattr(ev, f.name) for f in dataclasses.fields(ev) if f.name not in _TABLES}
        tables = {t: _pack(getattr(ev, t)) for t in _TABLES}
        parts = {f.name: getattr(fr, f.name) for f in dataclasses.fields(fr) if f.name not in _DROPPED}
        labels = tuple(fr.replays) if fr.replays else (fr.released.labels if fr.released is not None else ())
        return cls(parts, labels, scalars, tables)

    def unpack(self, replay: Any) -> FlowResult:
        """The flow whole but for its replays, which ``replay(events)`` makes again (released)."""
        tables: dict[str, Any] = {t: _unpack(b) for t, b in self.tables.items()}
        ev = FlowEvents(**self.scalars, **tables)
        return FlowResult(**self.parts, events=ev, replays={}, released=_released(self.labels, ev, replay))


def _released(labels: tuple[str, ...], ev: FlowEvents, replay: Any) -> ReleasedReplays | None:
    """The replays ``labels`` of a flow with events ``ev``, released: ``replay(ev)`` makes them again."""
    return ReleasedReplays(labels, functools.partial(replay, ev)) if labels and replay else None


#: FlowResult fields a packed flow does not keep as they are
_DROPPED = ("events", "replays", "released", "drawn")


@dataclass
class _Drawn:
    """A flow the report draws, drawn as it finished: its section (compressed; the report's
    ``Section``), everything but its tables and replays, its tables as zero-row frames."""

    parts: dict[str, Any]
    scalars: dict[str, Any]
    empty: dict[str, Any]  # table -> its zero-row frame (or None)
    section: Any

    @classmethod
    def of(cls, fr: FlowResult, section: Any) -> _Drawn:
        ev = fr.events
        scalars = {f.name: getattr(ev, f.name) for f in dataclasses.fields(ev) if f.name not in _TABLES}
        empty = {t: (None if getattr(ev, t) is None else getattr(ev, t).clear()) for t in _TABLES}
        parts = {f.name: getattr(fr, f.name) for f in dataclasses.fields(fr) if f.name not in _DROPPED}
        return cls(parts, scalars, empty, section)

    def result(self, restore: Any) -> FlowResult:
        ev = FlowEvents(**self.scalars, **self.empty)
        return FlowResult(**self.parts, events=ev, replays={}, drawn=DrawnFlow(self.section, restore))


def _pack(df: pl.DataFrame | None) -> bytes | None:
    if df is None:
        return None
    buf = io.BytesIO()
    df.write_ipc(buf, compression="zstd")
    return buf.getvalue()


def _unpack(data: bytes | None) -> pl.DataFrame | None:
    import polars as pl

    return None if data is None else pl.read_ipc(io.BytesIO(data))
