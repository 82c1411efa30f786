"""Orchestration of an `analyze` run: many captures, many flows, optionally in parallel.

Work is split into two kinds of task:

1. per capture: read and decode it, build the flow table and every selected flow's event
   streams (:func:`prepare_capture`);
2. per flow: replay every algorithm on the flow's events and fit them to the actual sender
   (:func:`replay_flow`).

With ``jobs == 1`` (or inputs too small to pay for worker start-up, see
:data:`PARALLEL_MIN_BYTES`) the tasks run in this process, one after the other. Otherwise they
run in a :class:`concurrent.futures.ProcessPoolExecutor` (``spawn`` start method: polars and
numba keep threads, which ``fork`` would copy half-way): capture tasks for all files are
submitted at once and each capture's flow tasks as soon as its events are ready, so files and
flows overlap. Results are put back in input order (captures as given, directories expanded in
sorted order; flows by ``flow_id``), so ``--jobs 2`` gives exactly the results of ``--jobs 1``.

A capture that cannot be read (:class:`~hscc_trace.errors.InputError`) becomes a one-line
error for that capture; the others are still processed. Library code never prints: progress
is reported through an optional callback.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import polars as pl

from hscc_trace import __version__, results
from hscc_trace.errors import HsccError, InputError, Warn
from hscc_trace.model import Analysis, CaptureMeta, CaptureResult, FlowEvents, FlowResult

#: File name endings taken from a directory argument (a file named explicitly is always read).
CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap", ".dmp", ".pcap.gz", ".pcapng.gz", ".cap.gz")

#: Set HSCC_TRACE_DEBUG=1 to let unexpected exceptions in a stage propagate with a traceback
#: instead of becoming a one-line error for that capture.
DEBUG_ENV = "HSCC_TRACE_DEBUG"

#: progress(done, total, description) — called after every finished task; total may grow as
#: captures reveal their flows.
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Options:
    """What to run (see :class:`hscc_trace.api.Selection`): algorithm names as requested and the
    parameter overrides given (what workers replay), the labels and full parameter values
    (what the results record), BPF and flow selection."""

    algorithms: tuple[str, ...]
    params: dict[str, dict[str, Any]]
    labels: tuple[str, ...]
    values: dict[str, dict[str, Any]]
    bpf: str | None = None
    flows: tuple[int, ...] | None = None  # None = every flow
    jobs: int = 1


@dataclass
class Prepared:
    """The output of a capture task: everything but the packets (which stay in the worker)."""

    meta: CaptureMeta
    flows: pl.DataFrame  # schema.FLOWS, every flow of the capture
    events: list[tuple[dict[str, Any], FlowEvents | None]]  # selected flows: (FLOWS row, events)
    warnings: list[Warn] = field(default_factory=list)


@dataclass
class Run:
    """An analysis plus what the JSON results need to list inputs in order."""

    analysis: Analysis
    inputs: list[str]  # expanded capture paths, in order
    failed: dict[str, str]  # path -> one-line error (capture not readable)
    flow_failed: list[str] = field(default_factory=list)  # one line per flow whose replay/fit failed

    @property
    def errors(self) -> list[str]:
        """Every one-line error: unreadable captures, then flows that could not be analyzed."""
        return [*self.failed.values(), *self.flow_failed]

    def to_json(self) -> dict[str, Any]:
        """The versioned results document (:mod:`hscc_trace.results`)."""
        return results.to_dict(self.analysis, failed=self.failed, order=self.inputs)


# --- inputs ------------------------------------------------------------------------------------------


def expand_inputs(paths: Iterable[str | Path]) -> tuple[list[str], dict[str, str]]:
    """Files as given; directories replaced by the capture files below them (sorted, recursive).

    Returns ``(entries, errors)``: ``entries`` lists every capture to read and every unusable
    argument, in argument order; ``errors`` maps an unusable argument (missing, or a directory
    without captures) to its one-line message. Duplicates are read once.
    """
    out: list[str] = []
    errors: dict[str, str] = {}
    seen: set[str] = set()

    def add(p: str) -> None:
        key = os.path.normpath(os.path.abspath(p))
        if key not in seen:
            seen.add(key)
            out.append(p)

    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(
                str(f) for f in p.rglob("*")
                if f.is_file() and f.name.lower().endswith(CAPTURE_SUFFIXES)
            )
            if not found:
                errors[str(raw)] = f"{raw}: no capture files in directory ({', '.join(CAPTURE_SUFFIXES[:3])} …)"
                out.append(str(raw))
            for f in found:
                add(f)
        elif p.exists():
            add(str(raw))
        else:
            errors[str(raw)] = f"{raw}: no such file or directory"
            out.append(str(raw))
    return out, errors


# --- the two tasks (module-level so that worker processes can unpickle them) -----------------------


def _short(path: str) -> str:
    """``reno-bdp/capture.pcap``: enough of a path to tell captures apart in progress text."""
    return str(Path(*Path(path).parts[-2:])) if len(Path(path).parts) > 1 else path


def _one_line(path: str, exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return msg if msg.startswith(path) else f"{path}: {msg}"


def prepare_capture(path: str, bpf: str | None, flow_ids: tuple[int, ...] | None) -> Prepared:
    """Read one capture and build the event streams of the selected flows.

    Raises :class:`InputError` for an unreadable capture or a ``flow_ids`` entry it does not
    contain.
    """
    from hscc_trace import api

    cap = api.load(path, bpf=bpf)
    flows = cap.flows
    ids = [int(i) for i in flows["flow_id"].to_list()] if flows.height else []
    if flow_ids is not None:
        missing = [i for i in flow_ids if i not in ids]
        if missing:
            have = ("no TCP flow" if not ids else f"only flow {ids[0]}" if len(ids) == 1
                    else f"{len(ids)} flows, {ids[0]}–{ids[-1]}")
            raise InputError(f"{path}: no flow {', '.join(map(str, missing))} (the capture has {have})")
        ids = [i for i in ids if i in set(flow_ids)]
    rows = {int(r["flow_id"]): r for r in flows.to_dicts()}
    events: list[tuple[dict[str, Any], FlowEvents | None]] = []
    warnings = list(cap.warnings)
    if flow_ids is None:
        every = api.all_events(cap)  # packets partitioned once for all flows
        events = [(rows[fid], every.get(fid)) for fid in ids]
    else:
        events = [(rows[fid], api.events(cap, fid)) for fid in ids]
    # SACK blocks for the report's time/sequence graph come from the packet table, which stays
    # here: attach them to the events (only packets that carry SACK blocks are scanned)
    from hscc_trace.reports.sack import sack_blocks

    sack_pk = cap.packets.filter(pl.col("sack_n") > 0) if "sack_n" in cap.packets.columns else cap.packets.clear()
    for _, ev in events:
        if ev is not None and ev.sack_blocks is None:
            ev.sack_blocks = sack_blocks(sack_pk, ev)
    missing_ev = [str(fid) for fid, (_, ev) in zip(ids, events) if ev is None]
    if missing_ev:
        warnings.append(Warn(path, f"no event streams for flow {', '.join(missing_ev)}: not analyzed",
                             len(missing_ev)))
    return Prepared(meta=cap.meta, flows=flows, events=events, warnings=warnings)


def replay_flow(flow: dict[str, Any], ev: FlowEvents, algorithms: tuple[str, ...],
                params: dict[str, dict[str, Any]]) -> FlowResult:
    """Replay every algorithm on one flow and fit each to the actual sender."""
    from hscc_trace import api

    if ev.acks.height == 0 or ev.segments.height == 0:
        fit = api.empty_fit()
        return FlowResult(flow=flow, events=ev, replays={}, fit=fit,
                          warnings=[Warn(f"flow {flow.get('flow_id')}", "no data segments or ACKs: not replayed")])
    replays = api.replay(ev, algorithms, params)
    fit = api.fit(ev, replays)
    return FlowResult(flow=flow, events=ev, replays=replays, fit=fit)


def _guard(fn: Callable[..., Any], path: str, *args: Any) -> tuple[bool, Any]:
    """Run a task; (True, result) or (False, one-line error). Never raises for capture problems."""
    try:
        return True, fn(*args)
    except HsccError as exc:
        return False, _one_line(path, exc)
    except MemoryError:
        return False, f"{path}: out of memory"
    except Exception as exc:  # noqa: BLE001 - a stage bug on one capture must not lose the others
        if os.environ.get(DEBUG_ENV):
            raise
        return False, f"{path}: internal error ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); " \
                      f"rerun with {DEBUG_ENV}=1 for a traceback"


def _prepare_task(path: str, bpf: str | None, flow_ids: tuple[int, ...] | None) -> tuple[bool, Any]:
    return _guard(prepare_capture, path, path, bpf, flow_ids)


def _flow_task(path: str, flow: dict[str, Any], ev: FlowEvents, algorithms: tuple[str, ...],
               params: dict[str, dict[str, Any]]) -> tuple[bool, Any]:
    return _guard(replay_flow, path, flow, ev, algorithms, params)


# --- the run -----------------------------------------------------------------------------------------

#: Worker processes pay a fixed start-up (interpreter, polars/numba imports, loading the compiled
#: decoder, event and replay loops from the cache: about 1.5 s each on an idle core), which small
#: inputs never earn back. With ``--jobs N > 1`` the run uses processes only when the captures
#: total at least this many bytes; smaller inputs run in this process (same results, sooner).
#: Override with the environment variable HSCC_TRACE_PARALLEL_MIN_BYTES (0 = always).
PARALLEL_MIN_BYTES = 32 * 1024 * 1024
PARALLEL_MIN_BYTES_ENV = "HSCC_TRACE_PARALLEL_MIN_BYTES"


def use_processes(inputs: list[str], jobs: int) -> bool:
    """Whether a run with ``jobs`` over ``inputs`` should use worker processes (see
    :data:`PARALLEL_MIN_BYTES`)."""
    if jobs <= 1 or not inputs:
        return False
    try:
        threshold = int(os.environ.get(PARALLEL_MIN_BYTES_ENV, PARALLEL_MIN_BYTES))
    except ValueError:
        threshold = PARALLEL_MIN_BYTES
    total = 0
    for p in inputs:
        try:
            total += os.path.getsize(p)
        except OSError:
            pass
    return total >= threshold


def run(paths: Iterable[str | Path], opts: Options, progress: Progress | None = None) -> Run:
    """Analyze captures: files as given and directories expanded. See the module docstring."""
    order, input_errors = expand_inputs(paths)
    inputs = [p for p in order if p not in input_errors]
    failed: dict[str, str] = dict(input_errors)
    prepared: dict[str, Prepared] = {}
    flow_results: dict[tuple[str, int], FlowResult] = {}
    flow_errors: dict[tuple[str, int], str] = {}
    total = len(inputs)
    done = 0

    def tick(desc: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, desc)

    if progress is not None:
        progress(0, total, "reading captures")

    def take_prepared(path: str, ok: bool, value: Any) -> list[tuple[int, dict[str, Any], FlowEvents]]:
        nonlocal total
        if not ok:
            failed[path] = value
            tick(f"{_short(path)}: error")
            return []
        prepared[path] = value
        todo = [(i, row, ev) for i, (row, ev) in enumerate(value.events) if ev is not None]
        total += len(todo)
        tick(f"{_short(path)}: {len(todo)} flow(s)")
        return todo

    def take_flow(path: str, i: int, ok: bool, value: Any) -> None:
        if ok:
            flow_results[(path, i)] = value
        else:
            flow_errors[(path, i)] = value
        tick(f"{_short(path)}: flow {prepared[path].events[i][0].get('flow_id')}")

    if not use_processes(inputs, opts.jobs):
        for path in inputs:
            for i, row, ev in take_prepared(path, *_prepare_task(path, opts.bpf, opts.flows)):
                take_flow(path, i, *_flow_task(path, row, ev, opts.algorithms, opts.params))
    else:
        ctx = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(max_workers=opts.jobs, mp_context=ctx)
        try:
            pending: dict[Future, tuple[str, str, int]] = {}
            for path in inputs:
                pending[pool.submit(_prepare_task, path, opts.bpf, opts.flows)] = ("capture", path, -1)
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    kind, path, i = pending.pop(fut)
                    ok, value = _future_result(fut, path)
                    if kind == "capture":
                        for j, row, ev in take_prepared(path, ok, value):
                            f = pool.submit(_flow_task, path, row, ev, opts.algorithms, opts.params)
                            pending[f] = ("flow", path, j)
                    else:
                        take_flow(path, i, ok, value)
        finally:
            # every result is in: let the idle workers exit while the caller writes its outputs
            pool.shutdown(wait=False, cancel_futures=True)

    captures: list[CaptureResult] = []
    errors: list[str] = []
    flow_failed: list[str] = []
    for path in order:
        if path in failed:
            errors.append(failed[path])
            continue
        prep = prepared[path]
        flows: list[FlowResult] = []
        warns = list(prep.warnings)
        for i, (row, ev) in enumerate(prep.events):
            if (path, i) in flow_results:
                flows.append(flow_results[(path, i)])
            elif (path, i) in flow_errors:
                flow_failed.append(f"{path}: flow {row.get('flow_id')}: "
                                   f"{flow_errors[(path, i)].removeprefix(path + ': ')}")
                warns.append(Warn(path, f"flow {row.get('flow_id')} not replayed: "
                                        f"{flow_errors[(path, i)].removeprefix(path + ': ')}"))
        captures.append(CaptureResult(meta=prep.meta, flows=prep.flows, results=flows, warnings=warns))
    analysis = Analysis(
        captures=captures,
        algorithms=list(opts.labels),
        params={a: dict(opts.values.get(a, {})) for a in opts.labels},
        version=__version__,
        created=results.utc_now(),
        errors=errors + flow_failed,
    )
    return Run(analysis=analysis, inputs=order, failed={p: failed[p] for p in order if p in failed},
               flow_failed=flow_failed)


def _future_result(fut: Future, path: str) -> tuple[bool, Any]:
    try:
        return fut.result()
    except Exception as exc:  # noqa: BLE001 - e.g. a worker killed by the OOM killer
        if os.environ.get(DEBUG_ENV):
            raise
        return False, f"{path}: worker failed ({type(exc).__name__}: {exc})"
