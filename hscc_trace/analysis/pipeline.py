"""Orchestration of an `analyze` run: many captures, many flows, optionally in parallel.

Work is split into two kinds of task:

1. per capture: read and decode it, build the flow table (:func:`open_capture`), then the
   selected flows' event streams a batch at a time (:func:`hscc_trace.events.flow_event_batches`:
   only a batch's tables, or two, are held at once);
2. per flow: replay every algorithm on the flow's events and fit them to the actual sender
   (:func:`analyze_flow`), and attach the sending kernel's truth when the capture's folder holds
   it (:mod:`hscc_trace.analysis.truth`).

With ``jobs == 1`` the tasks run in this thread, one after the other — but for the building of
a capture's next batch, which a helper thread does while this thread analyzes the current batch
(:class:`_Ahead`: the compiled stages of the build release the GIL, so they overlap the flows'
Python and polars work on the second core), as long as the batches are small
(:data:`AHEAD_BATCH_EVENTS`): one batch ahead holds a second batch's working arrays and tables,
and a long flow's cost too much memory (the figures at :data:`AHEAD_BATCH_EVENTS`). With ``jobs = N > 1``
(:func:`_run_parallel`) they run over N lanes of one process: this thread reads the captures,
largest first, and builds their batches, at most :data:`AHEAD_FLOWS` flows ahead, while N − 1
helper threads replay and fit the flows already built (largest first) and hash the input files
for the JSON results; once every capture is read this thread replays as well.

A finished flow is kept (:class:`Run`'s analysis holds every :class:`FlowResult`, what
:func:`hscc_trace.api.analyze` returns), or, with a :class:`hscc_trace.analysis.stream.Stream`
(``hscc-trace analyze``), its outputs are written at once and only a summary of it is kept: then
memory does not grow with the number of flows. Threads rather than worker processes: a thread starts at once (a ``spawn``
worker process needed ≈ 3 s of CPU for imports and compiled loops, more than it saved on two
cores) and no event or replay table is copied between processes (pickling the replays back
cost about as much as replaying them). The price is the GIL: the compiled replay loops
(``nogil``), hashing and compression run in parallel, but building the replay frames and the
fit (polars and numpy calls on ~10⁴-row columns, about two thirds of a flow task) take turns,
so two lanes replay ≈ 1.3–1.5× as fast as one, not 2×. ``api.analyze``
also writes the report while it builds the JSON results (with ``jobs`` > 1). Results
are put in input order (captures as given, directories expanded in sorted order; flows by
``flow_id``), so ``--jobs 2`` gives exactly the results of ``--jobs 1``.

A capture that cannot be read (:class:`~hscc_trace.errors.InputError`) becomes a one-line
error for that capture; the others are still processed. Library code never prints: progress
is reported through an optional callback.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from hscc_trace import __version__
from hscc_trace.analysis import results, truth
from hscc_trace.errors import HsccError, InputError, InternalMessage, Warn
from hscc_trace.model import Analysis, CaptureMeta, CaptureResult, FlowEvents, FlowResult
from hscc_trace.perf import usable_cpus

#: File name endings taken from a directory argument (a file named explicitly is always read).
CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap", ".dmp", ".pcap.gz", ".pcapng.gz", ".cap.gz")

#: Set HSCC_TRACE_DEBUG=1 to let unexpected exceptions in a stage propagate with a traceback
#: instead of becoming a one-line error for that capture.
from hscc_trace.errors import DEBUG_ENV  # noqa: E402 (re-exported)

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
    #: False: a flow whose kernel truth names its algorithm is not replayed — its label then
    #: needs no verdict (bottleneck groups only: :func:`hscc_trace.api.group_input`)
    replay_labelled: bool = True


@dataclass
class PreparedCapture:
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
    digests: dict[str, str | None] = field(default_factory=dict)  # path -> BLAKE3 hashed during the run
    stream: Any = None  # the hscc_trace.analysis.stream.Stream of a streamed run
    doc: dict[str, Any] | None = None  # the results document, when api.analyze made one (json_out, keep_results)
    written: list[str] = field(default_factory=list)  # one line per output file api.analyze wrote

    @property
    def errors(self) -> list[str]:
        """Every one-line error: unreadable captures, then flows that could not be analyzed."""
        return [*self.failed.values(), *self.flow_failed]

    def to_json(self, lazy: bool = False) -> dict[str, Any]:
        """The versioned results document (:mod:`hscc_trace.analysis.results`); ``lazy``: a
        streamed run's flow entries are read from its spool as they are used."""
        return results.to_dict(self.analysis, failed=self.failed, order=self.inputs, digests=self.digests, lazy=lazy)


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
        if str(raw) == "-":  # standard input (hscc_trace.capture.reader.STDIN)
            if "-" not in seen:
                seen.add("-")
                out.append("-")
            continue
        p = Path(raw)
        try:
            os.stat(p)
        except OSError as exc:  # missing, a name too long for the file system …
            from hscc_trace.names import os_error

            errors[str(raw)] = os_error(raw, exc).replace(": no such file", ": no such file or directory", 1)
            out.append(str(raw))
            continue
        if p.is_dir():
            found = sorted(str(f) for f in p.rglob("*") if f.is_file() and f.name.lower().endswith(CAPTURE_SUFFIXES))
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


# --- the two tasks: read a capture, replay one flow ---------------------------------------------------


def _short(path: str) -> str:
    """``reno-bdp/capture.pcap``: enough of a path to tell captures apart in progress text."""
    return str(Path(*Path(path).parts[-2:])) if len(Path(path).parts) > 1 else path


def _one_line(path: str, exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return msg if msg.startswith(path) else f"{path}: {msg}"


@dataclass
class OpenCapture:
    """A capture read (:func:`open_capture`): its flows' event streams are built a batch at a time
    by ``batches`` — lists of ``(index, FLOWS row, events)``, ``index`` the flow's place among
    the selected flows (``ids``) — so that only a batch's tables are held at once."""

    meta: CaptureMeta
    flows: pl.DataFrame  # schema.FLOWS, every flow of the capture
    ids: list[int]  # the selected flows, in the flow table's order
    expected: int  # selected flows with packets (those ``batches`` will give)
    batches: Iterator[list[tuple[int, dict[str, Any], FlowEvents]]]
    warnings: list[Warn] = field(default_factory=list)  # (a flow without event streams adds one when met)
    present: list[int] | None = None  # the selected flows with packets, when known (else every one may have)


def selected_flows(path: str, flows: Any, flow_ids: Sequence[int] | None) -> list[int]:
    """The flow ids of a capture's conversation table ``flows`` to analyze: all, or ``flow_ids`` in
    the table's order. Raises :class:`InputError` naming what the capture has for an id it lacks."""
    ids = [int(i) for i in flows["flow_id"].to_list()] if flows.height else []
    if flow_ids is None:
        return ids
    wanted = {int(i) for i in flow_ids}
    missing = [int(i) for i in flow_ids if int(i) not in ids]
    if missing:
        have = (
            "no TCP flow"
            if not ids
            else f"only flow {ids[0]}"
            if len(ids) == 1
            else f"{len(ids)} flows, {ids[0]}–{ids[-1]}"
        )
        raise InputError(f"{path}: no flow {', '.join(map(str, missing))} (the capture has {have})")
    return [i for i in ids if i in wanted]


def open_capture(path: str, bpf: str | None, flow_ids: tuple[int, ...] | None) -> OpenCapture:
    """Read one capture; its selected flows' event streams follow batch by batch (:class:`OpenCapture`).

    Raises :class:`InputError` for an unreadable capture or a ``flow_ids`` entry it does not
    contain; building a batch may raise as well (then the capture could not be read after all).
    """
    from hscc_trace.flows import load

    cap = load(path, bpf=bpf)
    flows = cap.flows
    ids = selected_flows(path, flows, flow_ids)
    warnings = list(cap.warnings)
    dec = cap.decoded
    present = None
    if dec is not None and flow_ids is None:
        first = dec.src.first
        present = [f for f in ids if 0 <= f < len(first) and first[f] >= 0]
    expected = len(ids) if present is None else len(present)
    return OpenCapture(
        meta=cap.meta,
        flows=flows,
        ids=ids,
        expected=expected,
        batches=_batches(cap, ids, flow_ids is not None, warnings),
        warnings=warnings,
        present=present,
    )


#: the C heaps are trimmed after this many batches (hscc_trace.perf.memory.trim): trimming after
#: every batch kept replica-5M ≈ 15 MB lower but gave back the next batch's working set each time
#: (≈ 1–2.5 s more system time in page faults); every fourth keeps most of the saving for ≈ 0.5 s
TRIM_EVERY = 4


def _batches(
    cap: Any, ids: list[int], selected: bool, warnings: list[Warn]
) -> Iterator[list[tuple[int, dict[str, Any], FlowEvents]]]:
    """The event streams of flows ``ids`` of ``cap``, a batch at a time (:func:`open_capture`);
    the capture (its packet arena) is released once the last batch is built."""
    from hscc_trace.events import flow_event_batches
    from hscc_trace.events.sack import sack_groups, with_sack_blocks
    from hscc_trace.perf.memory import in_background, trim

    index = {fid: i for i, fid in enumerate(ids)}
    flows = cap.flows
    row_of = {int(f): r for r, f in enumerate(flows["flow_id"].to_list())} if flows.height else {}
    path = cap.meta.path
    groups = sack_groups(cap)  # SACK blocks for the report's time/sequence graph, a batch's flows at a time
    seen: set[int] = set()
    done = 0
    # every flow of a capture read by load: its packets' memory is given back batch by batch
    release = not selected and getattr(cap, "decoded", None) is not None
    for batch in flow_event_batches(cap, ids if selected else None, release=release):
        mine = [(fid, ev) for fid, ev in batch if fid in index]
        del batch
        if not mine:
            continue
        evs = with_sack_blocks(cap, [ev for _, ev in mine], groups.only(fid for fid, _ in mine))
        # (row by row: a gather of the table per batch took ≈ 2 ms in analyze, waiting for the GIL)
        rows = [flows.row(row_of[fid], named=True) for fid, _ in mine]
        seen.update(fid for fid, _ in mine)
        out = [(index[fid], row, ev) for (fid, _), row, ev in zip(mine, rows, evs) if ev is not None]
        del mine, evs, rows
        yield out
        del out  # (the caller is done with the batch: its tables are freed) …
        done += 1
        if done % TRIM_EVERY == 0:
            in_background(trim)  # … and the C heaps give their free pages back (the memory thread)
    del cap, groups
    missing_ev = [str(fid) for fid in ids if fid not in seen]
    if missing_ev:
        warnings.append(Warn(path, f"no event streams for flow {', '.join(missing_ev)}: not analyzed", len(missing_ev)))


#: Whether a one-lane run (:func:`_run_serial`) builds a capture's next batch of event tables in
#: a helper thread while this thread analyzes the current batch (:class:`_Ahead`). Off in the
#: corpus runner's tasks (:mod:`hscc_trace.corpus.runner`), as ``engine.LOOK_AHEAD``: its worker
#: processes already keep every core busy, and each would hold two batches at a time.
BATCHES_AHEAD = True
#: Whether a one-lane run hashes each file (BLAKE3, for the results document's ``blake3``) in a
#: helper thread beside the analysis (``Run.digests``), and returns the C heaps' free memory to
#: the system when it ends (:func:`hscc_trace.perf.memory.trim`). Off in the corpus runner's
#: tasks, which hash each capture themselves, write no results document (``Run.to_json`` still
#: hashes a file whose digest is not in ``Run.digests``) and trim once per task.
DIGEST_AND_TRIM = True


class _Ahead:
    """A capture's batches (``OpenCapture.batches``), each next one built in a helper thread
    ("hscc-batches") while the caller analyzes the one it was given: at most one batch ahead.

    The batches, their order and their errors are those of the iterator itself — a build that
    raises raises in the caller at that batch's turn (after the previous batch's flows), and the
    end comes as the iterator's. ``may(batch)``, asked in the caller when it is given ``batch``,
    says whether the next one may be built meanwhile (else it is built in the caller, at its
    turn, as without this class). The helper has ended when the iterator's end or error has
    been handed over; :meth:`close` waits for a running build (:func:`run`, when the run stops
    before: no thread outlives it, nor a Ctrl-C)."""

    def __init__(self, batches: Iterator[Any], may: Callable[[Any], bool]) -> None:
        self._batches = batches
        self._may = may
        self._thread: threading.Thread | None = None
        self._out: tuple[bool, Any] = (True, None)

    def __iter__(self) -> _Ahead:
        return self

    def _build(self) -> None:
        try:
            self._out = (True, next(self._batches))
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller, at its turn
            self._out = (False, exc)

    def __next__(self) -> Any:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            (ok, batch), self._out = self._out, (True, None)
            if not ok:
                raise batch
        else:
            batch = next(self._batches)  # (StopIteration and errors as they come)
        if self._may(batch):
            self._thread = threading.Thread(target=self._build, name="hscc-batches", daemon=True)
            self._thread.start()
        return batch

    def close(self) -> None:
        """Wait for the build running ahead, if any, and drop its batch."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._out = (True, None)


def prepare_capture(path: str, bpf: str | None, flow_ids: tuple[int, ...] | None) -> PreparedCapture:
    """Read one capture and build the event streams of every selected flow at once
    (:func:`open_capture`, every batch collected).

    Raises :class:`InputError` for an unreadable capture or a ``flow_ids`` entry it does not
    contain.
    """
    oc = open_capture(path, bpf, flow_ids)
    got: dict[int, tuple[dict[str, Any], FlowEvents]] = {}
    for batch in oc.batches:
        for i, row, ev in batch:
            got[i] = (row, ev)
    rows = {int(r["flow_id"]): r for r in oc.flows.to_dicts()} if oc.flows.height else {}
    events: list[tuple[dict[str, Any], FlowEvents | None]] = [
        got.get(i, (rows[fid], None)) for i, fid in enumerate(oc.ids)
    ]
    return PreparedCapture(meta=oc.meta, flows=oc.flows, events=events, warnings=oc.warnings)


def analyze_flow(
    flow: dict[str, Any], ev: FlowEvents, algorithms: tuple[str, ...], params: dict[str, dict[str, Any]]
) -> FlowResult:
    """Replay every algorithm on one flow (none: ``algorithms`` empty) and fit each to the actual sender."""
    from hscc_trace import schema
    from hscc_trace.analysis.verdict import judge
    from hscc_trace.replay import engine, metrics, selection

    if ev.acks.height == 0 or ev.segments.height == 0:
        fit = schema.empty(schema.FIT_METRICS)
        return FlowResult(
            flow=flow,
            events=ev,
            replays={},
            fit=fit,
            warnings=[Warn(f"flow {flow.get('flow_id')}", "no data segments or ACKs: not replayed")],
            verdict=judge(ev, {}),
        )
    from hscc_trace.analysis.evidence import observe

    evidence: list[Any] = []

    def meanwhile() -> None:  # what needs no replay, while the look-ahead thread runs the loops
        # (an error here is left to fit and judge, which compute it again: the flow then fails
        # where and as it failed without this, after the replays' own errors)
        try:
            evidence.append(observe(ev))
            metrics.warm(ev)
        except Exception:  # noqa: BLE001, S110 - raised again, in order, by fit or judge
            pass

    replays = engine.replay_flow(ev, selection.resolved(algorithms, params), meanwhile=meanwhile) if algorithms else {}
    fit = metrics.fit(ev, replays) if replays else schema.empty(schema.FIT_METRICS)
    verdict = judge(ev, replays, evidence=evidence[0] if evidence else None)
    return FlowResult(flow=flow, events=ev, replays=replays, fit=fit, verdict=verdict)


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
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return False, InternalMessage(
            f"{path}: internal error ({type(exc).__name__}: {first}); rerun with {DEBUG_ENV}=1 for a traceback"
        )


def _prepare_task(path: str, bpf: str | None, flow_ids: tuple[int, ...] | None) -> tuple[bool, Any]:
    """Read a capture: (True, :class:`OpenCapture`) or (False, one-line error)."""
    return _guard(open_capture, path, path, bpf, flow_ids)


def _each_batch(path: str, batches: Iterator[Any], on_failed: OnFailed) -> Iterator[Any]:
    """A capture's batches of flows in order; a batch that cannot be built ends them, with its
    one-line error given to ``on_failed``. A batch is not held here once handed out (the caller's
    ``del`` frees it before the next one is built)."""
    while True:
        ok, batch = _guard(next, path, batches, None)
        if not ok:
            on_failed(path, batch)
            return
        if batch is None:
            return
        yield batch
        batch = None


def analyze_flow_of(
    path: str,
    flow: dict[str, Any],
    ev: FlowEvents,
    algorithms: tuple[str, ...],
    params: dict[str, dict[str, Any]],
    replay_labelled: bool = True,
) -> FlowResult:
    """:func:`analyze_flow`, plus the sending kernel's truth when files beside the capture hold it
    (:mod:`hscc_trace.analysis.truth`: the samples' ``truth_probe.parquet``); without
    ``replay_labelled`` a flow whose truth names its algorithm is not replayed (``Options``)."""
    folder = truth.truth_dir(path)
    kt, problem = None, None
    if folder is not None:
        try:
            kt = truth.flow_truth(folder, flow, ev)
        except Exception as exc:  # noqa: BLE001 - files anyone may write: never lose the flow for them
            if os.environ.get(DEBUG_ENV):
                raise
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            problem = Warn(str(folder), f"kernel truth beside the capture not used ({type(exc).__name__}: {first})")
    labelled = kt is not None and bool(kt.algo)
    fr = analyze_flow(flow, ev, algorithms if replay_labelled or not labelled else (), params)
    fr.truth = kt
    if problem is not None:
        fr.warnings.append(problem)
    return fr


def reanalyze(path: str, flow_ids: list[int], *, opts: Options) -> dict[int, FlowResult]:
    """Flows ``flow_ids`` of capture ``path`` read and analyzed again as a run with ``opts``
    analyzed them (a streamed run's report wants whole a flow it did not keep:
    :mod:`hscc_trace.analysis.stream`): ``{flow_id: FlowResult}``."""
    pc = prepare_capture(path, opts.bpf, tuple(flow_ids))
    return {
        int(row["flow_id"]): analyze_flow_of(path, row, ev, opts.algorithms, opts.params, opts.replay_labelled)
        for row, ev in pc.events
        if ev is not None
    }


def _flow_task(path: str, flow: dict[str, Any], ev: FlowEvents, opts: Options) -> tuple[bool, Any]:
    return _guard(analyze_flow_of, path, path, flow, ev, opts.algorithms, opts.params, opts.replay_labelled)


# --- the run -----------------------------------------------------------------------------------------


class _Lanes:
    """The task queue of a parallel run: ``n`` helper threads and, once every capture is read,
    the calling thread take tasks largest first; outcomes are handed back to the calling thread
    (:meth:`drain`), which alone touches the run's results and calls ``progress``.

    Threads, not processes: see the module docstring. A task's outcome is ``(True, value)`` or
    ``(False, exception)``."""

    def __init__(self, n: int) -> None:
        self._heap: list[tuple[float, int, Callable[[], Any], Any]] = []
        self._seq = itertools.count()  # ties: first submitted first
        self.cv = threading.Condition()
        self._outcomes: list[tuple[Any, tuple[bool, Any]]] = []
        self._pending = 0  # tasks queued or running
        self._closed = False
        self._threads = [threading.Thread(target=self._work, name=f"hscc-lane-{k}", daemon=True) for k in range(n)]
        for t in self._threads:
            t.start()

    def submit(self, weight: float, fn: Callable[[], Any], tag: Any) -> None:
        """Queue ``fn()``; larger ``weight`` runs first; ``tag`` comes back with its outcome."""
        with self.cv:
            heapq.heappush(self._heap, (-weight, next(self._seq), fn, tag))
            self._pending += 1
            self.cv.notify()

    def _take(self, block: bool) -> tuple[Callable[[], Any], Any] | None:
        with self.cv:
            while not self._heap:
                if self._closed or not block:
                    return None
                self.cv.wait()
            _, _, fn, tag = heapq.heappop(self._heap)
            return fn, tag

    def _run(self, fn: Callable[[], Any], tag: Any) -> None:
        try:
            out: tuple[bool, Any] = (True, fn())
        except BaseException as exc:  # noqa: BLE001 - handed back and re-raised by the caller
            out = (False, exc)
        with self.cv:
            self._outcomes.append((tag, out))
            self._pending -= 1
            self.cv.notify_all()

    def _work(self) -> None:
        while (job := self._take(True)) is not None:
            self._run(*job)

    def drain(self, block: bool = False, work: bool = True) -> list[tuple[Any, tuple[bool, Any]]]:
        """The outcomes that arrived since the last call. With ``block``, first make progress:
        run a queued task in the calling thread (unless not ``work``) or wait for an outcome."""
        if block:
            job = self._take(False) if work else None
            if job is not None:
                self._run(*job)
            else:
                with self.cv:
                    while self._pending and not self._outcomes:
                        self.cv.wait()
        with self.cv:
            out, self._outcomes = self._outcomes, []
        return out

    @property
    def busy(self) -> bool:
        """Whether a task is queued or running."""
        with self.cv:
            return self._pending > 0

    def close(self) -> None:
        """Drop queued tasks and wait for the helper threads (each finishes its running task)."""
        with self.cv:
            self._closed = True
            self._heap.clear()
            self.cv.notify_all()
        for t in self._threads:
            t.join()


#: Tests set this to False so that the helper threads replay every flow (this thread only reads).
_CALLER_REPLAYS = True
#: A parallel run's reading thread builds the next batch of flows only while fewer than this many
#: flows, or events (ACKs + segments) of flows, wait for their lanes: memory holds about two
#: batches of event tables whatever the number of flows (hscc_trace.events.flow_event_batches)
AHEAD_FLOWS = 2 * 512
AHEAD_EVENTS = 2 * (1 << 18)

#: what the reading side hands over per capture: (path, ok, OpenCapture or error) -> whether to go on
OnCapture = Callable[[str, bool, Any], bool]
#: (path, index, FLOWS row, ok, FlowResult or error)
OnFlow = Callable[[str, int, dict[str, Any], bool, Any], None]
#: (path, one-line error): a capture's events failed after some of its flows were handed over
OnFailed = Callable[[str, Any], None]


def _events_of(ev: FlowEvents) -> int:
    return int(ev.acks.height + ev.segments.height)


#: :class:`_Ahead` builds the next batch meanwhile only after a batch of at most this many events
#: (ACKs + segments; a batch of many flows holds up to ``events.BATCH_ROWS`` packets). The batches
#: come smallest flows first, so this is up to the first long flow: a long flow built ahead
#: holds its working arrays and tables (≈ 600 bytes a packet) beside the flow being analyzed —
#: replica-5M's peak rose from ≈ 475 to 560–566 MiB when every batch was built ahead, against
#: ≈ 10–25 MiB more for the small ones only
AHEAD_BATCH_EVENTS = 1 << 16


_CPUS = usable_cpus()


def _builds_ahead() -> bool:
    """Whether :func:`_run_serial` builds batches ahead (:class:`_Ahead`): unless switched off
    (:data:`BATCHES_AHEAD`), on one core, or with interpreted kernels (their builds would hold
    the GIL throughout: nothing to overlap)."""
    from hscc_trace.perf.firstuse import current_mode

    return BATCHES_AHEAD and _CPUS > 1 and current_mode() != "interpret"


def _may_build_ahead(batch: list[tuple[int, dict[str, Any], FlowEvents]]) -> bool:
    return sum(_events_of(ev) for _, _, ev in batch) <= AHEAD_BATCH_EVENTS


def _run_serial(inputs: list[str], opts: Options, on_capture: OnCapture, on_flow: OnFlow, on_failed: OnFailed) -> None:
    """Every task in this thread: a capture, then its flows batch by batch."""
    for path in inputs:
        ok, oc = _prepare_task(path, opts.bpf, opts.flows)
        if not on_capture(path, ok, oc):
            continue
        if _builds_ahead():  # (run() closes it if the run stops before the capture's end)
            oc.batches = _Ahead(oc.batches, _may_build_ahead)
        for batch in _each_batch(path, oc.batches, on_failed):
            for i, row, ev in batch:
                on_flow(path, i, row, *_flow_task(path, row, ev, opts))
            del batch


def _run_parallel(
    inputs: list[str], opts: Options, on_capture: OnCapture, on_flow: OnFlow, on_failed: OnFailed
) -> dict[str, str | None]:
    """Run every task over ``opts.jobs`` lanes: this thread reads the captures one after the
    other, largest first (reading is itself multi-threaded: reader and event threads), and
    builds their flows' events batch by batch, while ``jobs − 1`` helper threads replay and fit
    the flows already built, largest first. This thread stays at most :data:`AHEAD_FLOWS` flows
    (:data:`AHEAD_EVENTS` events) ahead of the lanes — meanwhile it replays too — and once
    every capture is read it replays with them. The helpers also hash the input files for the
    JSON results (returned: path → BLAKE3, :func:`hscc_trace.analysis.results.digest_file`).

    Outcomes do not depend on which lane ran a task or when: :func:`run` files them by
    ``(capture, flow index)``, so the results equal a one-lane run's."""
    from hscc_trace.analysis.results import digest_file

    lanes = _Lanes(max(opts.jobs - 1, 1))
    digests: dict[str, str | None] = {}
    ahead = [0, 0]  # flows, events handed to the lanes and not back yet

    def hand_back(block: bool, work: bool = True) -> None:
        for tag, (ok, value) in lanes.drain(block, work=work and _CALLER_REPLAYS):
            if tag[0] == "digest":
                if ok:  # else the JSON results hash the file themselves
                    digests[tag[1]] = value
            elif not ok:  # _flow_task never raises but with HSCC_TRACE_DEBUG (or a bug in it)
                raise value
            else:
                _, path, i, row, n = tag
                ahead[0] -= 1
                ahead[1] -= n
                on_flow(path, i, row, *value)

    try:
        for path in inputs:  # hashing reads the files from the page cache: cheap, and without the GIL
            if _is_stream(path):  # a pipe or standard input can be read once: by the reader
                continue
            lanes.submit(math.inf, functools.partial(digest_file, path), ("digest", path))
        for path in sorted(inputs, key=lambda p: -_size(p)):  # the largest capture's flows overlap the rest
            ok, oc = _prepare_task(path, opts.bpf, opts.flows)
            if not on_capture(path, ok, oc):
                hand_back(False)
                continue
            for batch in _each_batch(path, oc.batches, on_failed):
                for i, row, ev in batch:
                    n = _events_of(ev)
                    ahead[0] += 1
                    ahead[1] += n
                    lanes.submit(
                        ev.acks.height,
                        functools.partial(_flow_task, path, row, ev, opts),
                        ("flow", path, i, row, n),
                    )
                del batch
                hand_back(False)
                while ahead[0] and (ahead[0] >= AHEAD_FLOWS or ahead[1] >= AHEAD_EVENTS):
                    hand_back(True)  # far enough ahead: replay (or wait) until the lanes catch up
        while lanes.busy:  # every capture read: this thread replays too
            hand_back(True)
        hand_back(False)
    finally:
        lanes.close()
    return digests


def _is_stream(path: str) -> bool:
    from hscc_trace.capture.reader import is_stream

    return is_stream(path)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _run_serial_hashing(
    inputs: list[str],
    opts: Options,
    on_capture: OnCapture,
    on_flow: OnFlow,
    on_failed: OnFailed,
    opened: dict[str, OpenCapture],
) -> dict[str, str | None]:
    """:func:`_run_serial`, with the files' BLAKE3 for the JSON results hashed by one thread
    beside the analysis (blake3 releases the GIL: its wall time on replica-5M is no longer at the
    end), each file once it is read: while it is read, the reader thread and this thread's
    compiled kernels take both cores (replica-5M: ≈ 0.25 s less wall). Returns the digests."""
    from concurrent.futures import ThreadPoolExecutor

    hasher = ThreadPoolExecutor(1, thread_name_prefix="hscc-digest")
    hashing: dict[str, Any] = {}

    def hash_file(path: str) -> None:
        if path not in hashing and not _is_stream(path):
            hashing[path] = hasher.submit(results.digest_file, path)

    def read_then_hash(path: str, ok: bool, oc: Any) -> bool:
        hash_file(path)
        return on_capture(path, ok, oc)

    try:
        _run_serial(inputs, opts, read_then_hash, on_flow, on_failed)
        for p in inputs:
            hash_file(p)
        digests = {p: hashing[p].result() for p in inputs if p in hashing}
    except BaseException:  # (Ctrl-C or an error: the files not hashed yet are not read …
        hasher.shutdown(wait=False, cancel_futures=True)
        for oc in opened.values():  # … and a batch being built ahead is waited for)
            if isinstance(oc.batches, _Ahead):
                oc.batches.close()
        raise
    hasher.shutdown()
    return digests


def run(paths: Iterable[str | Path], opts: Options, progress: Progress | None = None, stream: Any = None) -> Run:
    """Analyze captures: files as given and directories expanded. See the module docstring.

    With ``stream`` (a :class:`hscc_trace.analysis.stream.Stream`) every finished flow goes to
    it — its outputs written, a summary kept — and the captures hold only the flows it keeps
    (``CaptureResult.summaries`` lists every one): memory does not grow with the number of flows.
    """
    order, input_errors = expand_inputs(paths)
    inputs = [p for p in order if p not in input_errors]
    failed: dict[str, str] = dict(input_errors)
    opened: dict[str, OpenCapture] = {}
    flow_results: dict[tuple[str, int], FlowResult] = {}
    flow_errors: dict[tuple[str, int], tuple[Any, str]] = {}  # (flow_id, one-line error)
    total = len(inputs)
    done = 0
    ticked: dict[str, int] = {}  # flows of each capture counted so far

    def tick(desc: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, desc)

    if progress is not None:
        progress(0, total, "reading captures")
    if stream is not None:
        from hscc_trace.replay import engine, selection

        resolved = selection.resolved(opts.algorithms, opts.params)
        stream.start(
            inputs, lambda ev: engine.replay_flow(ev, resolved), functools.partial(reanalyze, opts=opts), opts.labels
        )

    def take_capture(path: str, ok: bool, value: Any) -> bool:
        nonlocal total
        if not ok:
            failed[path] = value
            tick(f"{_short(path)}: error")
            return False
        opened[path] = value
        if stream is not None:
            stream.opened(path, value.flows, value.ids, value.meta.bpf, value.present)
        total += value.expected
        tick(f"{_short(path)}: {value.expected} flow(s)")
        return True

    def take_flow(path: str, i: int, row: dict[str, Any], ok: bool, value: Any) -> None:
        if path in failed:  # (its events failed after this flow was handed to a lane)
            return
        if not ok:
            flow_errors[(path, i)] = (row.get("flow_id"), value)
        elif stream is not None:
            stream.done(path, i, value)
        else:
            flow_results[(path, i)] = value
        ticked[path] = ticked.get(path, 0) + 1
        tick(f"{_short(path)}: flow {row.get('flow_id')}")

    def capture_failed(path: str, error: Any) -> None:
        nonlocal total
        failed[path] = error
        oc = opened.pop(path, None)
        if oc is not None:  # its flows not counted yet never will be: the total shrinks by them
            total -= max(oc.expected - ticked.get(path, 0), 0)
            if progress is not None:
                progress(done, total, f"{_short(path)}: error")
        for key in [k for k in (*flow_results, *flow_errors) if k[0] == path]:
            flow_results.pop(key, None)
            flow_errors.pop(key, None)
        if stream is not None:
            stream.failed(path)

    digests: dict[str, str | None] = {}
    if opts.jobs <= 1 and not DIGEST_AND_TRIM:
        _run_serial(inputs, opts, take_capture, take_flow, capture_failed)
    elif opts.jobs <= 1:
        digests = _run_serial_hashing(inputs, opts, take_capture, take_flow, capture_failed, opened)
    else:
        digests = _run_parallel(inputs, opts, take_capture, take_flow, capture_failed)
    from hscc_trace.perf.memory import trim

    if DIGEST_AND_TRIM or opts.jobs > 1:
        trim()  # (the C heaps of every thread give back what the run freed)

    captures: list[CaptureResult] = []
    errors: list[str] = []
    flow_failed: list[str] = []
    for path in order:
        if path in failed:
            errors.append(failed[path])
            continue
        oc = opened[path]
        warns = list(oc.warnings)
        for i, _fid in enumerate(oc.ids):
            if (path, i) not in flow_errors:
                continue
            fid, err = flow_errors[(path, i)]
            msg = f"{path}: flow {fid}: {err.removeprefix(path + ': ')}"
            flow_failed.append(InternalMessage(msg) if isinstance(err, InternalMessage) else msg)
            warns.append(Warn(path, f"flow {fid} not replayed: {err.removeprefix(path + ': ')}"))
        if stream is not None:
            kept, summaries = stream.results(path)
            captures.append(
                CaptureResult(meta=oc.meta, flows=oc.flows, results=kept, warnings=warns, summaries=summaries)
            )
        else:
            flows = [flow_results[(path, i)] for i in range(len(oc.ids)) if (path, i) in flow_results]
            captures.append(CaptureResult(meta=oc.meta, flows=oc.flows, results=flows, warnings=warns))
    analysis = Analysis(
        captures=captures,
        algorithms=list(opts.labels),
        params={a: dict(opts.values.get(a, {})) for a in opts.labels},
        version=__version__,
        created=results.utc_now(),
        errors=errors + flow_failed,
    )
    return Run(
        analysis=analysis,
        inputs=order,
        failed={p: failed[p] for p in order if p in failed},
        flow_failed=flow_failed,
        digests=digests,
        stream=stream,
    )
