"""Orchestration of an `analyze` run: many captures, many flows, optionally in parallel.

Work is split into two kinds of task:

1. per capture: read and decode it, build the flow table and every selected flow's event
   streams (:func:`prepare_capture`);
2. per flow: replay every algorithm on the flow's events and fit them to the actual sender
   (:func:`replay_flow`).

With ``jobs == 1`` (or inputs too small to pay for worker start-up, see
:data:`PARALLEL_MIN_BYTES`) the tasks run in this process, one after the other. Otherwise
(:func:`_run_parallel`) this process and ``jobs − 1`` worker processes (``spawn`` start method:
polars and numba keep threads, which ``fork`` would copy half-way) take tasks from one queue:
captures largest first, then each capture's flows in batches as soon as its events are ready, so
files and flows overlap. This process starts working at once, while the workers start up.
Results are put back in input order (captures as given, directories expanded in sorted order;
flows by ``flow_id``), so ``--jobs 2`` gives exactly the results of ``--jobs 1``.

A capture that cannot be read (:class:`~hscc_trace.errors.InputError`) becomes a one-line
error for that capture; the others are still processed. Library code never prints: progress
is reported through an optional callback.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import threading
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
    from hscc_trace.reports.sack import COLUMNS as SACK_COLUMNS, sack_blocks

    # (only the columns sack_blocks reads, grouped by flow once: a query per flow over the whole
    # capture's SACK packets cost ~2.5 ms a flow, 25 s for 10 000 flows)
    by_flow: dict[Any, pl.DataFrame] = {}
    no_sack = cap.packets.clear()
    if "sack_n" in cap.packets.columns:
        sack_pk = (cap.packets.lazy().filter(pl.col("sack_n") > 0)
                   .select([c for c in cap.packets.columns if c in SACK_COLUMNS]).collect())
        no_sack = sack_pk.clear()
        by_flow = {k[0]: part for k, part in sack_pk.partition_by("flow_id", as_dict=True).items()}
    for _, ev in events:
        if ev is not None and ev.sack_blocks is None:
            ev.sack_blocks = sack_blocks(by_flow.get(ev.flow_id, no_sack), ev)
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
#: decoder, event and replay loops from the cache: about 1.5 s each on an idle core). This process
#: works through the task queue itself while they start (see :func:`_run_parallel`), so a worker
#: that is not ready in time costs no wall time directly, only that start-up CPU on another core
#: (which this process's own threads — events, polars — would otherwise use). With ``--jobs N > 1``
#: the run uses worker processes when the captures total at least this many bytes: the nine
#: samples (9.5 MiB, ~1 s of work) are done before a worker is ready; the replicas are not.
#: Override with the environment variable HSCC_TRACE_PARALLEL_MIN_BYTES (0 = always).
PARALLEL_MIN_BYTES = 16 * 1024 * 1024
PARALLEL_MIN_BYTES_ENV = "HSCC_TRACE_PARALLEL_MIN_BYTES"

#: Flow tasks per lane (this process and each worker) a capture's flows are split into: enough
#: that lanes finishing early still find work, few enough that per-task costs stay small.
BATCHES_PER_LANE = 4


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


def _flow_outcome(path: str, flow: dict[str, Any], ev: FlowEvents, algorithms: tuple[str, ...],
                  params: dict[str, dict[str, Any]]) -> tuple[bool, Any]:
    """:func:`_flow_task` without the events in the result (the parent holds them already):
    ``(True, (replays, fit, warnings))`` or ``(False, one-line error)``."""
    ok, value = _flow_task(path, flow, ev, algorithms, params)
    return (True, (value.replays, value.fit, value.warnings)) if ok else (False, value)


def _warm_up() -> None:
    """Import every stage and load the compiled reader, decoder and event loops (what the first
    capture task of a fresh worker would otherwise pay for). The replay loops are not loaded here:
    that takes ~0.17 s per algorithm (2.5 s for the default 15), and a worker is more useful
    taking capture tasks meanwhile; its first flow task loads them."""
    from hscc_trace import api, capture, events  # noqa: F401
    from hscc_trace.replay import engine, metrics, registry  # noqa: F401
    from hscc_trace.reports import sack  # noqa: F401
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hscc-warm-") as d:  # reader, decoder and event loops
        path = os.path.join(d, "warm.pcap")
        with open(path, "wb") as fh:
            fh.write(_tiny_pcap())
        prepare_capture(path, None, None)


def _tiny_pcap() -> bytes:
    """A 4-packet pcap (handshake, 100 bytes of data, its ACK) that exercises every stage."""
    import struct

    def pkt(t: int, src: int, dst: int, sport: int, dport: int, seq: int, ack: int, flags: int,
            payload: int = 0) -> bytes:
        tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + b"x" * payload
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0,
                         src.to_bytes(4, "big"), dst.to_bytes(4, "big"))
        eth = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00"
        frame = eth + ip + tcp
        return struct.pack("<IIII", 1_700_000_000, t, len(frame), len(frame)) + frame

    a, b = 0x0A000001, 0x0A000002
    return (struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
            + pkt(0, a, b, 40000, 5201, 0, 0, 0x02) + pkt(1000, b, a, 5201, 40000, 0, 1, 0x12)
            + pkt(2000, a, b, 40000, 5201, 1, 1, 0x18, 100) + pkt(3000, b, a, 5201, 40000, 1, 101, 0x10))


def _worker_main(conn: Any, algorithms: tuple[str, ...], params: dict[str, dict[str, Any]]) -> None:
    """A worker process: warm up, then run the tasks the parent sends until it sends None.

    Messages in: ``("capture", path, bpf, flow_ids)`` → ``(ok, Prepared | error)``; the events of a
    capture prepared here are kept (``held``) so that its flow batches run without shipping them
    back; ``("flows", path, indices, items | None, release)`` → ``[(ok, outcome), …]`` where
    ``items`` are the ``(FLOWS row, events)`` pairs when this worker does not hold them and
    ``release`` lists captures whose events are no longer needed here."""
    try:
        _warm_up()
    except Exception:  # noqa: BLE001 - a task will report the problem with its capture's path
        pass
    conn.send("ready")
    held: dict[str, list[tuple[dict[str, Any], FlowEvents | None]]] = {}
    while True:
        msg = conn.recv()
        if msg is None:
            return
        if msg[0] == "capture":
            _, path, bpf, flow_ids = msg
            ok, value = _prepare_task(path, bpf, flow_ids)
            if ok:
                held[path] = value.events
            conn.send((ok, value))
        else:
            _, path, idx, items, release = msg
            for p in release:
                held.pop(p, None)
            if items is None:
                items = [held[path][i] for i in idx]
            conn.send([_flow_outcome(path, row, ev, algorithms, params) for row, ev in items])


_TASK_KEYS = itertools.count()


@dataclass
class _Task:
    kind: str  # "capture" or "flows"
    path: str
    weight: float  # bytes of the file (capture) or ACK rows (flows): larger first
    idx: tuple[int, ...] = ()  # flows: indices into the capture's Prepared.events
    origin: int = -1  # flows: the lane holding the capture's events besides this process (-1: none)
    key: int = field(default_factory=lambda: next(_TASK_KEYS))  # unique (id() is reused after GC)


class _Scheduler:
    """Shared task queue of a parallel run. Lane -1 is this process; lanes 0… are worker processes,
    each driven by a thread. Every method runs under one condition variable."""

    def __init__(self, inputs: list[str], opts: Options, lanes: int,
                 on_capture: Callable[[str, bool, Any], list[tuple[int, dict[str, Any], FlowEvents]]],
                 on_flow: Callable[[str, int, bool, Any], None]) -> None:
        self.cv = threading.Condition()
        self.opts = opts
        self.lanes = lanes
        self.on_capture, self.on_flow = on_capture, on_flow
        self.queue: list[_Task] = sorted(
            (_Task("capture", p, float(_size(p))) for p in inputs), key=lambda t: -t.weight)
        self.inflight: dict[int, tuple[int, _Task]] = {}  # _Task.key -> (lane, task)
        self.completed: set[int] = set()  # keys of tasks whose outcome is recorded
        self.backup: set[int] = set()  # keys of worker tasks this process runs as well
        self.alive = lanes + 1  # lanes that can still take tasks (this process always can)
        self.events: dict[str, list[tuple[dict[str, Any], FlowEvents | None]]] = {}
        self.held: dict[int, set[str]] = {lane: set() for lane in range(lanes)}
        self.error: BaseException | None = None

    # queue --------------------------------------------------------------------------------------

    def _pick(self, lane: int) -> _Task | None:
        if not self.queue:
            return None
        pos = 0
        if self.queue[0].kind == "flows":  # flows whose events a worker holds: preferably that worker
            pos = next((k for k, t in enumerate(self.queue) if t.origin == lane), 0)
        return self.queue.pop(pos)

    @property
    def running(self) -> int:
        return len(self.inflight)

    def next(self, lane: int) -> _Task | None:
        """The next task for ``lane``, waiting while other lanes may still add some; None when done.

        With the queue empty, this process (lane −1) does not sit idle while a worker is still
        busy: it runs the largest such task as well (a backup task), and the first outcome to
        arrive counts. A run with workers thus never ends later than this process alone would
        have finished the tail (same results: the tasks are deterministic)."""
        with self.cv:
            while True:
                if self.error is not None:
                    return None
                task = self._pick(lane)
                if task is not None:
                    self.inflight[task.key] = (lane, task)
                    return task
                if not self.inflight:
                    self.cv.notify_all()
                    return None
                if lane < 0:
                    spare = [t for ln, t in self.inflight.values() if ln >= 0 and t.key not in self.backup]
                    if spare:
                        task = max(spare, key=lambda t: t.weight)
                        self.backup.add(task.key)
                        return task
                self.cv.wait()

    def finished(self, lane: int, task: _Task, ok: bool, value: Any) -> None:
        """Record a task's outcome (any thread; the first of a backed-up task's two outcomes
        counts) and queue the flow batches of a new capture."""
        with self.cv:
            if task.key in self.completed:
                return
            self.completed.add(task.key)
            try:
                if task.kind == "capture":
                    todo = self.on_capture(task.path, ok, value)
                    if ok:
                        self.events[task.path] = value.events
                        if lane >= 0:
                            self.held[lane].add(task.path)
                    self.queue.extend(self._batches(task.path, todo, lane))
                    self.queue.sort(key=lambda t: (t.kind != "capture", -t.weight))
                else:
                    for i, (fok, fval) in zip(task.idx, value):
                        self.on_flow(task.path, i, fok, fval)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
                self.error = exc
            finally:
                self.inflight.pop(task.key, None)
                self.cv.notify_all()

    def _batches(self, path: str, todo: list[tuple[int, dict[str, Any], FlowEvents]], origin: int) -> list[_Task]:
        if not todo:
            return []
        n = min(len(todo), BATCHES_PER_LANE * (self.lanes + 1))
        by_size = sorted(todo, key=lambda t: -t[2].acks.height)
        groups: list[list[int]] = [[] for _ in range(n)]
        weights = [0.0] * n
        for i, _, ev in by_size:  # largest first onto the lightest batch
            k = min(range(n), key=weights.__getitem__)
            groups[k].append(i)
            weights[k] += ev.acks.height + 1
        return [_Task("flows", path, weights[k], tuple(sorted(groups[k])), origin) for k in range(n) if groups[k]]

    def message(self, lane: int, task: _Task) -> tuple:
        """What to send a worker lane for ``task`` (events only when it does not hold them)."""
        with self.cv:
            if task.kind == "capture":
                return ("capture", task.path, self.opts.bpf, self.opts.flows)
            mine = task.origin == lane
            pending = {t.path for t in self.queue if t.kind == "flows" and t.origin == lane}
            release = tuple(p for p in self.held[lane] if p not in pending and not (mine and p == task.path))
            self.held[lane].difference_update(release)
            items = None if mine else [self.events[task.path][i] for i in task.idx]
            return ("flows", task.path, task.idx, items, release)

    def lane_failed(self, lane: int, task: _Task | None, exc: BaseException) -> None:
        """A worker died (e.g. killed by the OOM killer): its task fails, its held events are
        shipped from here from now on, and the other lanes carry on."""
        with self.cv:
            self.alive -= 1
            self.held[lane].clear()
            for t in self.queue:
                if t.origin == lane:
                    t.origin = -1
        if task is not None and task.key not in self.backup:  # else this process's outcome counts
            msg = f"worker failed ({type(exc).__name__}: {exc})"
            if task.kind == "capture":
                self.finished(lane, task, False, f"{task.path}: {msg}")
            else:
                self.finished(lane, task, True, [(False, f"{task.path}: {msg}")] * len(task.idx))


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


#: Tests set this to False to make worker processes do every task (this process only waits).
_PARENT_WORKS = True


def _run_parallel(inputs: list[str], opts: Options,
                  on_capture: Callable[[str, bool, Any], list[tuple[int, dict[str, Any], FlowEvents]]],
                  on_flow: Callable[[str, int, bool, Any], None]) -> None:
    """Run every task over ``opts.jobs`` lanes: this process plus ``jobs − 1`` worker processes.

    Why this shape: worker start-up (~1.5 s) is spent while this process already works through
    the queue, so a worker never delays a run; results a worker sends back carry no events this
    process already has (capture events come back once, with the capture; flow batches of a
    capture a worker prepared run preferably on that worker, which kept its events); flows are
    batched (:data:`BATCHES_PER_LANE`) so 10 000 short flows are not 10 000 messages."""
    ctx = multiprocessing.get_context("spawn")
    sched = _Scheduler(inputs, opts, opts.jobs - 1, on_capture, on_flow)
    procs: list[Any] = []
    conns: list[Any] = []
    ready = [False] * sched.lanes  # warmed up
    busy = [False] * sched.lanes  # waiting for a task's outcome

    def drive(lane: int) -> None:
        conn = conns[lane]
        task = None
        try:
            if conn.recv() != "ready":
                raise RuntimeError("worker did not start")
            ready[lane] = True
            while True:
                task = sched.next(lane)
                if task is None:
                    return
                busy[lane] = True
                conn.send(sched.message(lane, task))
                value = conn.recv()
                busy[lane] = False
                ok, val = (value if task.kind == "capture" else (True, value))
                done, task = task, None
                sched.finished(lane, done, ok, val)
        except (EOFError, OSError, RuntimeError) as exc:
            sched.lane_failed(lane, task, exc)

    threads = []
    try:
        for lane in range(sched.lanes):
            parent_end, child_end = ctx.Pipe()
            p = ctx.Process(target=_worker_main, args=(child_end, opts.algorithms, opts.params), daemon=True)
            p.start()
            child_end.close()
            procs.append(p)
            conns.append(parent_end)
            t = threading.Thread(target=drive, args=(lane,), daemon=True)
            t.start()
            threads.append(t)
        if not _PARENT_WORKS:  # wait for the workers; take over only if every one of them died
            with sched.cv:
                while (sched.queue or sched.running) and sched.error is None and sched.alive > 1:
                    sched.cv.wait()
        while True:
            task = sched.next(-1)
            if task is None:
                break
            if task.kind == "capture":
                ok, value = _prepare_task(task.path, opts.bpf, opts.flows)
            else:
                ev = sched.events[task.path]
                ok, value = True, [_flow_outcome(task.path, ev[i][0], ev[i][1], opts.algorithms, opts.params)
                                   for i in task.idx]
            sched.finished(-1, task, ok, value)
        if sched.error is not None:
            raise sched.error
    finally:
        with sched.cv:
            sched.queue.clear()
            sched.cv.notify_all()
        for lane, p in enumerate(procs):
            if ready[lane] and not busy[lane] and sched.error is None:
                try:
                    conns[lane].send(None)  # idle worker: let it exit on its own
                except OSError:
                    pass
            else:
                # still starting up, or busy with a task this process finished first (backup):
                # its outcome is not needed
                p.terminate()
        for t in threads:
            t.join(timeout=1.0)
        for c in conns:
            c.close()


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
        row, ev = prepared[path].events[i]
        if ok:
            if isinstance(value, tuple):  # (replays, fit, warnings) from a parallel run
                value = FlowResult(flow=row, events=ev, replays=value[0], fit=value[1], warnings=value[2])
            flow_results[(path, i)] = value
        else:
            flow_errors[(path, i)] = value
        tick(f"{_short(path)}: flow {row.get('flow_id')}")

    if not use_processes(inputs, opts.jobs):
        for path in inputs:
            for i, row, ev in take_prepared(path, *_prepare_task(path, opts.bpf, opts.flows)):
                take_flow(path, i, *_flow_task(path, row, ev, opts.algorithms, opts.params))
    else:
        _run_parallel(inputs, opts, take_prepared, take_flow)

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
