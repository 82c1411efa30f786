"""Run a corpus on Dask distributed: a LocalCluster of worker processes by default, or a running
scheduler (``tcp://HOST:8786``; without one, Dask's own configuration ``DASK_SCHEDULER_ADDRESS``).

Each capture is analyzed by :func:`analyze_capture`: it fetches the input (a URL is copied to a
temporary file), hashes it, analyzes it through :mod:`hscc_trace.api`, hands that capture's rows
of every table to its task's :class:`~hscc_trace.corpus.dataset.PartWriter` and returns a small
summary dict. A task writes its captures' rows as one part when it ends (one Parquet file per
table, not six per capture), so a capture is complete once its task's part is written. Nothing
here prints: progress goes to a callback, called once per capture.

**Batches.** A Dask task costs the client process (scheduler, nannies, client) a few ms of CPU
whatever it does, which on a machine whose cores all run workers is taken from the analysis. So a
task (:func:`analyze_batch`) analyzes a *batch* of captures one after another, in order, and
returns their summaries. The batch size follows a guided rule (:func:`batch_size`), evaluated at
each submission: ``ceil(remaining / (BATCH_TASKS_PER_THREAD × worker threads))``, between 1 and
:data:`BATCH_MAX`. A large corpus gets batches of :data:`BATCH_MAX` while plenty remains, every
worker thread still gets at least :data:`BATCH_TASKS_PER_THREAD` tasks from what is left, and the
batches shrink as the end nears (the last ones are single captures), so the tail stays short; a
run of at most ``BATCH_TASKS_PER_THREAD × threads`` captures is one capture per task throughout.

Failures are data (an ``errors`` row each, see :func:`hscc_trace.corpus.dataset.write_error`):

* a capture that cannot be fetched or read: ``unreadable`` (written by the worker itself);
* an unexpected exception in the analysis: ``internal``;
* a worker process that dies (OOM kill, segfault): Dask retries the task once on a fresh worker
  (``distributed.scheduler.allowed-failures`` = 1), and a capture on which two workers died gives
  ``worker_died``;
* ``timeout_per_capture``: every capture then announces on the Dask event topic :data:`TOPIC` when
  it starts (its task, its index in the batch, its worker; then its hash); a capture still running
  that many seconds after its start is cancelled and **its worker is restarted** through its nanny
  (``Client.restart_workers``), so the capture cannot keep that worker busy; the capture becomes a
  ``timeout`` error. Workers without a nanny (``dask worker --no-nanny``) cannot be restarted this
  way (Dask removes them).

How a batch's failure finds its culprit and loses nothing else:

* *Worker deaths.* Before a capture starts, its worker writes a counter file
  ``DIR/.attempts/<key>`` (:data:`ATTEMPTS_DIR`, keyed by :func:`~hscc_trace.corpus.inputs.name_key`
  of the input) holding the number of attempts begun on that capture; it is removed when the
  capture ends (analyzed, error row written, or an exception). A counter left behind is a worker
  that died on that capture. A capture whose counter already says 2 is not run again: the worker
  records ``worker_died`` for it and goes on. Dask's retry of a batch starts it again from its
  first capture: those whose part or error row was written are skipped (a part's ``captures``
  file is written last), those done in the dead task are analyzed again (their part was not
  written), the one that was running is tried a second time on a fresh worker, then the rest.
  If the retry dies as well, the client gets ``KilledWorker`` for the batch and resubmits every
  capture of it as a task of its own: completed ones return ``skipped`` at once (counted as
  analyzed in this run, below), a capture that killed two workers is recorded as
  ``worker_died`` by the next worker without being run, and the rest are analyzed. So the
  culprit is named by the dataset's state, not guessed from the order of events, and a worker
  death costs its batch nothing but the analysis again of the captures the dead task had done.
  A single-capture task that gets ``KilledWorker`` is recorded as ``worker_died`` by the client,
  as before batching. The counters are cleared when a run starts (a counter left by a killed run
  is not a death).
* *Exceptions escaping a task* (not the analysis's own, which are ``internal`` rows written by the
  worker): a batch is resubmitted as single-capture tasks; a single capture is ``internal``.
* *Timeouts.* The announcement names the capture's index in its batch, and the clock restarts at
  every capture. The culprit is the announced one: it is recorded ``timeout``, its worker
  restarted, and the other captures of its batch are resubmitted as one new batch (those that
  completed before it return ``skipped``: with a timeout, each capture's rows are written as a
  part of its own when it ends, so no analysis goes with the restarted worker).

A capture of this run whose summary came back ``skipped`` although it was not in the dataset when
the run started (a retry, a resubmission, a result lost with its worker) counts as analyzed (or as
its recorded error), not as skipped: every capture is counted exactly once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Test hook: a worker analyzing a capture whose file name equals this variable's value exits at
#: once (``os._exit``), as an OOM kill or segfault would. ``NAME:once`` crashes only the first
#: attempt (a marker file ``.crashed-NAME`` in the dataset folder, one byte per death, remembers
#: it), so the retry runs; several names are separated by commas.
CRASH_ENV = "HSCC_TRACE_CORPUS_CRASH"
#: Test hook: a capture whose file name equals this variable's value never finishes (it sleeps).
HANG_ENV = "HSCC_TRACE_CORPUS_HANG"
#: Dask event topic on which a capture announces its start (with a timeout only):
#: ``{"key", "i", "worker", "sha"}`` (its task, its index in the task's batch, its worker, its hash
#: once known).
TOPIC = "hscc-trace-corpus"
#: Folder of the dataset holding the attempt counters of the captures being analyzed (module
#: docstring); cleared when a run starts.
ATTEMPTS_DIR = ".attempts"
#: Largest number of captures in one task: ≈ 1 s of analysis (≈ 60 ms a capture on this project's
#: samples), so a batch's tail and what a retry analyzes again stay small.
BATCH_MAX = 16
#: Tasks each worker thread still gets, at least, from the captures left (see :func:`batch_size`).
BATCH_TASKS_PER_THREAD = 8
#: The embedded cluster's settings (a running scheduler needs the first two, see docs/corpus.md):
#: a capture is retried once after its worker dies, and a worker holds only the tasks it runs
#: (no queue of its own), so a worker that dies or is restarted takes no innocent capture's
#: retry with it. The workers' statistical profiler (a thread sampling every thread's stack every
#: 10 ms, for the dashboard's profile page) is off: each sample takes the GIL from the analysis,
#: and a capture's task is the analysis of files, which needs no profile. Every server (the
#: scheduler, each nanny, each worker) checks its event loop's health every 1 s instead of every
#: 20 ms (Dask's default): with two workers that check alone cost ≈ 25 ms of CPU per second in the
#: client process and ≈ 20 in the workers, ≈ 2 % of two cores, for a metric nothing here reads (a
#: loop blocked for more than ``distributed.admin.tick.limit``, 3 s, is still noticed).
SCHEDULER_CONFIG = {
    "distributed.scheduler.allowed-failures": 1,
    "distributed.scheduler.worker-saturation": 1.0,
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
}
#: How often the client looks at the clocks of running captures when there is a timeout.
POLL_S = 0.1


def _first_line(exc: BaseException) -> str:
    s = str(exc).strip()
    return s.splitlines()[0] if s else type(exc).__name__


def _summary(sha: str | None, item: str, status: str, **kw: Any) -> dict[str, Any]:
    return {"blake3": sha, "capture": item, "status": status, **kw}


def batch_size(remaining: int, nthreads: int, most: int = BATCH_MAX) -> int:
    """Captures in the next task when ``remaining`` are left to submit over ``nthreads`` worker
    threads: ``ceil(remaining / (BATCH_TASKS_PER_THREAD × nthreads))`` between 1 and ``most``
    (guided scheduling: large batches while much is left, single captures at the end)."""
    per = BATCH_TASKS_PER_THREAD * max(1, nthreads)
    return max(1, min(most, -(-remaining // per)))


def _announce(i: int, sha: str | None) -> None:
    """Tell the client that capture ``i`` of this task runs (and, once known, its hash)."""
    try:
        from distributed import get_worker

        w = get_worker()
    except ValueError:  # called outside a Dask worker (tests, a plain loop)
        return
    w.log_event(TOPIC, {"key": w.get_current_task(), "i": i, "worker": w.address, "sha": sha})


def _test_hooks(item: str, dataset: str) -> None:
    name = Path(item.split("?", 1)[0]).name
    for crash in filter(None, os.environ.get(CRASH_ENV, "").split(",")):
        target, _, mode = crash.partition(":")
        if name == target:
            marker = Path(dataset) / f".crashed-{name}"
            if mode != "once" or not marker.exists():
                with open(marker, "a") as f:  # one byte per death: the tests count them
                    f.write("x")
                os._exit(137)
    if os.environ.get(HANG_ENV) and name == os.environ[HANG_ENV]:
        while True:
            time.sleep(1)


def analyze_capture(
    item: str,
    dataset: str,
    algorithms: Sequence[str] | None,
    params: dict[str, dict[str, Any]] | None,
    announce: int | None = None,
    parts: Any = None,
) -> dict[str, Any]:
    """Analyze one capture and write its rows of every table; returns a summary dict (status
    ``ok``, ``skipped`` — already in the dataset — or ``error``). With ``announce`` (a run with a
    timeout: the capture's index in its task's batch), the capture tells the client on
    :data:`TOPIC` when it starts and which capture it holds (two Dask events: a few ms of
    scheduler work, spent only when a clock needs them). With ``parts`` (a
    :class:`~hscc_trace.corpus.dataset.PartWriter`), the rows are buffered there, written when it
    is flushed; without, at once (a part of this capture alone). An error row is written at once."""
    import polars as pl

    from hscc_trace import api
    from hscc_trace.corpus import dataset as ds
    from hscc_trace.corpus import inputs
    from hscc_trace.errors import HsccError, InternalMessage

    if announce is not None:
        _announce(announce, None)
    _test_hooks(item, dataset)
    # a folder for a URL's copy only (creating and removing one costs ≈ 0.3 ms of CPU)
    url = inputs.is_url(item)
    with tempfile.TemporaryDirectory(prefix="hscc-corpus-") if url else contextlib.nullcontext("") as tmp:
        try:
            local = inputs.fetch_local(item, tmp)
            sha = inputs.content_hash(local)
        except Exception as exc:  # noqa: BLE001 - missing file, HTTP 404, network error: data, not a crash
            nk = inputs.name_key(item)
            ds.write_error(dataset, nk, item, "unreadable", _first_line(exc))
            return _summary(nk, item, "error", reason="unreadable", message=_first_line(exc))
        if announce is not None:
            _announce(announce, sha)
        if (parts is not None and sha in parts) or sha in ds.complete(dataset):
            return _summary(sha, item, "skipped", was="ok")
        if ds.path(dataset, "errors", sha).exists():
            row = pl.read_parquet(ds.path(dataset, "errors", sha)).row(0, named=True)
            return _summary(sha, item, "skipped", was="error", reason=row["reason"], message=row["message"])
        t0 = time.perf_counter()
        try:
            run = api.analyze_run([local], algorithms, params, jobs=1)
        except HsccError as exc:
            reason, msg = "unreadable", _first_line(exc)
            run = None
        except Exception as exc:  # noqa: BLE001 - a bug on one capture must not stop the corpus
            reason, msg = "internal", f"{type(exc).__name__}: {_first_line(exc)}"
            run = None
        if run is not None and not run.analysis.captures:
            failed = list(run.failed.values())
            reason = "internal" if any(isinstance(m, InternalMessage) for m in failed) else "unreadable"
            msg = "; ".join(m.replace(local, item).removeprefix(f"{item}: ") for m in failed) or "no capture read"
            run = None
        if run is None:
            ds.write_error(dataset, sha, item, reason, msg)
            return _summary(sha, item, "error", reason=reason, message=msg)
    tables = _capture_tables(run, sha, item, t0)
    out = parts if parts is not None else ds.PartWriter(dataset)
    # (its error row by name, if it was unreadable before, goes once the rows are written)
    out.add(sha, tables, remove=ds.path(dataset, "errors", inputs.name_key(item)))
    if parts is None or out.events >= ds.FLUSH_ROWS:
        out.flush()
    return _summary(sha, item, "ok", flows=tables["flows"].height, seconds=tables["captures"]["seconds"][0])


def _keyed(df: Any, sha: str, item: str) -> Any:
    """``df`` with the capture's key columns (schema.CORPUS_KEY) first, as every corpus table
    has them (so that its conform to the table is a check, not a rebuild), and without any
    column of theirs it had. Series, not expressions: each eager polars expression plans a
    query (≈ 0.1–0.3 ms), and a capture's six tables asked for a dozen."""
    import polars as pl

    n = df.height
    key = [pl.Series("blake3", [sha], dtype=pl.String), pl.Series("capture", [item], dtype=pl.String)]
    key = [k.new_from_index(0, n) if n else k.clear() for k in key]
    return pl.DataFrame(key).hstack([c for c in df.get_columns() if c.name not in ("blake3", "capture")])


def _per_flow(frames: list[tuple[int, Any]], table: str, sha: str, item: str) -> Any:
    """The rows of table ``episodes`` or ``rounds``: each flow's frame of its events (``frames``:
    (flow id, frame), those with rows) with its ``flow_id``, one after another, keyed."""
    import numpy as np
    import polars as pl

    from hscc_trace.corpus import dataset as ds

    if not frames:
        return ds.empty_part(table)
    if any("flow_id" in f.columns for _, f in frames):  # (replaced, as a with_columns would)
        frames = [(fid, f.drop("flow_id", strict=False)) for fid, f in frames]
    body = pl.concat([f for _, f in frames], how="diagonal_relaxed")
    ids = np.repeat(np.array([fid for fid, _ in frames], dtype=np.uint32), [f.height for _, f in frames])
    return _keyed(pl.DataFrame([pl.Series("flow_id", ids)]).hstack(body.get_columns()), sha, item)


def _capture_tables(run: Any, sha: str, item: str, t0: float) -> dict[str, Any]:
    """The capture's rows of every corpus table (schema.CORPUS_TABLES) from its analysis
    (``run``, one capture; ``t0``: when the analysis started, for ``seconds``)."""
    import numpy as np
    import polars as pl

    from hscc_trace import api, schema
    from hscc_trace.analysis.results import cwnd_limited_rounds

    a = run.analysis
    cr = a.captures[0]
    counts, eps, rounds = [], [], []
    for fr in cr.results:
        fid = int(fr.flow["flow_id"])
        ev = fr.events
        counts.append((fid, ev.rounds.height, cwnd_limited_rounds(ev.rounds)))
        if ev.episodes.height:
            eps.append((fid, ev.episodes))
        if ev.rounds.height:
            rounds.append((fid, ev.rounds))
    per_flow = pl.DataFrame(
        counts, schema={"flow_id": pl.UInt32, "rounds": pl.UInt32, "cwnd_limited_rounds": pl.UInt32}, orient="row"
    )
    table = api.flow_table(a)
    table.replace_column(table.get_column_index("flow_id"), table.get_column("flow_id").cast(pl.UInt32))
    flows = _keyed(table, sha, item)
    same = flows.height == per_flow.height and bool(
        np.array_equal(flows.get_column("flow_id").to_numpy(), per_flow.get_column("flow_id").to_numpy())
    )
    if same and len(set(per_flow.get_column("flow_id").to_list())) == per_flow.height:
        flows = flows.hstack(per_flow.get_columns()[1:])  # (the left join on flow_id, row for row)
    else:
        flows = flows.join(per_flow, on="flow_id", how="left")
    fits = [schema.conform(fr.fit, schema.FIT_METRICS, extra=True) for fr in cr.results if fr.fit.height]
    if fits:  # (api.fit_table's rows and columns, without its capture column)
        both = pl.concat(fits, how="diagonal_relaxed")
        fit = _keyed(pl.DataFrame([both.get_column(c.name) for c in schema.FIT_METRICS]), sha, item)
    else:
        fit = _keyed(schema.empty(schema.FIT_METRICS), sha, item)
    m = cr.meta
    cap = pl.DataFrame(
        {
            "blake3": [sha],
            "capture": [item],
            "format": [m.format],
            "packets_total": [m.packets_total],
            "packets_tcp": [m.packets_tcp],
            "first_ns": [m.first_ns],
            "last_ns": [m.last_ns],
            "flows": [flows.height],
            "flows_failed": [len(run.flow_failed)],
            "warnings": [len(cr.warnings)],
            "algorithms": [",".join(a.algorithms)],
            "version": [a.version],
            "seconds": [time.perf_counter() - t0],
        },
        schema=schema.polars_schema(schema.CORPUS_CAPTURES),
    )
    return {
        "flows": flows,
        "fits": fit,
        "episodes": _per_flow(eps, "episodes", sha, item),
        "rounds": _per_flow(rounds, "rounds", sha, item),
        "groups": _group_rows(cr, sha, item),
        "captures": cap,
    }


def _group_rows(cr: Any, sha: str, item: str) -> Any:
    """The capture's bottleneck groups (hscc_trace.analysis.groups), one row per flow of a group."""
    import polars as pl

    from hscc_trace.analysis.groups import DEFAULT_MIN_BYTES, capture_groups
    from hscc_trace.corpus import dataset as ds

    # (a default group needs two flows of DEFAULT_MIN_BYTES or more: a capture without two such
    # flows costs nothing here — most captures of a corpus)
    big = sum(
        1
        for fr in cr.results
        if int(fr.flow.get("payload_ab") or 0) + int(fr.flow.get("payload_ba") or 0) >= DEFAULT_MIN_BYTES
    )
    if big < 2:
        return ds.empty_part("groups")
    rows = [
        {
            "group": g.index,
            "flow_id": f.flow_id,
            "flows": len(g.flows),
            "algo": f.algo,
            "goodput_bps": f.goodput_bps,
            "share": f.share,
            "friendliness": f.friendliness,
            "jain": g.jain,
            "capacity_bps": g.capacity_bps,
            "utilization": g.utilization,
        }
        for g in capture_groups(cr)
        for f in g.flows
    ]
    if not rows:
        return ds.empty_part("groups")
    return _keyed(pl.DataFrame(rows, infer_schema_length=None), sha, item)


def analyze_batch(
    items: Sequence[str],
    dataset: str,
    algorithms: Sequence[str] | None,
    params: dict[str, dict[str, Any]] | None,
    announce: bool = False,
) -> list[dict[str, Any]]:
    """One task: :func:`analyze_capture` for each of ``items`` in order, each under its attempt
    counter (module docstring); returns their summaries in the same order, once the task's part
    is written. The replays' loops do not run ahead in a helper thread here
    (``engine.LOOK_AHEAD``), nor the next batch of event tables (``pipeline.BATCHES_AHEAD``): a
    corpus keeps every core busy with workers, the hand-overs would only cost CPU, and a batch
    built ahead memory in every worker. Nor does the analysis hash the file again, or trim the
    heaps after every capture (``pipeline.DIGEST_AND_TRIM``): the task does both once."""
    from hscc_trace.analysis import pipeline
    from hscc_trace.corpus import dataset as ds
    from hscc_trace.corpus import inputs
    from hscc_trace.perf.memory import trim
    from hscc_trace.replay import engine

    engine.LOOK_AHEAD = False
    pipeline.BATCHES_AHEAD = False
    pipeline.DIGEST_AND_TRIM = False  # (each capture is hashed here; the heaps trimmed per task)

    # (with a clock, each capture is written when it ends: a timeout restarts the worker, and
    # the captures done before it in the task are then skipped, not analyzed again)
    parts = None if announce else ds.PartWriter(dataset)
    out = []
    for i, item in enumerate(items):
        counter = Path(dataset) / ATTEMPTS_DIR / inputs.name_key(item)
        try:
            begun = int(counter.read_text())
        except (OSError, ValueError):
            begun = 0
        if begun >= 2:  # two workers died on it already: not a third
            out.append(_failed(dataset, item, None, "worker_died", "its worker died twice while analyzing it"))
            continue
        counter.parent.mkdir(parents=True, exist_ok=True)
        counter.write_text(str(begun + 1))
        try:
            out.append(analyze_capture(item, dataset, algorithms, params, i if announce else None, parts))
        except Exception as exc:  # noqa: BLE001 - outside the analysis' own handling (a failed write)
            out.append(_failed(dataset, item, None, "internal", f"{type(exc).__name__}: {_first_line(exc)}"))
        finally:
            counter.unlink(missing_ok=True)
    if parts is not None:
        parts.flush()  # the task's captures are complete once it returns (module docstring)
    trim()
    return out


@dataclass
class CorpusRun:
    """What a run did so far (passed to the progress callback after every capture)."""

    total: int
    ok: int = 0
    skipped: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    @property
    def done(self) -> int:
        return self.ok + self.skipped + len(self.errors)


def client(workers: int | None = None, scheduler: str | None = None, threads_per_worker: int = 1):
    """A dask.distributed Client: to ``scheduler`` (or Dask's configured address), else a
    LocalCluster of ``workers`` processes (default: CPU count) with ``threads_per_worker`` each,
    whose scheduler retries a capture once after a worker death."""
    import dask
    from distributed import Client, LocalCluster

    addr = scheduler or dask.config.get("scheduler-address", None)
    if addr:
        return Client(addr)
    with dask.config.set(SCHEDULER_CONFIG):
        cluster = LocalCluster(
            n_workers=workers or os.cpu_count() or 1,
            threads_per_worker=threads_per_worker,
            processes=True,
            dashboard_address=":0",  # any free port (8787 may be taken by another cluster)
            silence_logs=logging.CRITICAL,  # failures are rows of the dataset, not log lines
        )
    return Client(cluster)


def run(
    items: Sequence[str],
    dataset: str | Path,
    algorithms: Sequence[str] | None = None,
    params: dict[str, dict[str, Any]] | None = None,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    threads_per_worker: int = 1,
    timeout_per_capture: float | None = None,
    progress: Callable[[CorpusRun, dict[str, Any]], None] | None = None,
    batch: int | None = None,
) -> CorpusRun:
    """Analyze ``items`` into ``dataset``; tasks of a batch of captures each (``batch`` captures,
    else :func:`batch_size`'s rule), a bounded number in flight. ``progress`` is called once per
    capture (the captures of a batch one after another when its task ends). Without the
    ``corpus`` extra installed: :class:`hscc_trace.errors.UsageError` (:func:`hscc_trace.corpus.require`)."""
    from hscc_trace import corpus

    corpus.require()
    from distributed import wait
    from distributed.scheduler import KilledWorker

    from hscc_trace import api
    from hscc_trace.corpus import dataset as ds
    from hscc_trace.corpus import inputs

    if batch is not None and batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    sel = api.select(algorithms, params)  # validate once, on the client
    algos, overrides = list(sel.names), sel.overrides
    inputs.check_protocols(items)
    dataset = str(Path(dataset).resolve())
    Path(dataset).mkdir(parents=True, exist_ok=True)
    ds.check_key(dataset)
    ds.remove_partial_writes(dataset)
    shutil.rmtree(Path(dataset) / ATTEMPTS_DIR, ignore_errors=True)  # a killed run's counters are no deaths
    (Path(dataset) / ATTEMPTS_DIR).mkdir()
    state = CorpusRun(total=len(items))
    before = ds.done(dataset)  # a capture written during this run and then recomputed (its worker
    # died after the task finished, before its summary was fetched) counts as analyzed, not skipped
    lock = threading.Lock()
    running: dict[str, tuple[float, str, str | None, int]] = {}  # task key -> (start, worker, sha, index)

    def on_event(event: Any) -> None:
        msg = event[1]
        with lock:
            prev = running.get(msg["key"])
            same = prev is not None and prev[1] == msg["worker"] and prev[3] == msg["i"] and msg["sha"] is not None
            start = prev[0] if same and prev else time.monotonic()
            running[msg["key"]] = (start, msg["worker"], msg["sha"], msg["i"])

    def record(s: dict[str, Any]) -> None:
        if s["status"] == "ok":
            state.ok += 1
        elif s["status"] == "skipped" and s.get("blake3") not in before:
            if s.get("was") == "ok":
                state.ok += 1
            else:
                state.errors.append({**s, "status": "error"})
        elif s["status"] == "skipped":
            state.skipped += 1
        else:
            state.errors.append(s)
        if progress:
            progress(state, s)

    clock = timeout_per_capture is not None
    with client(workers, scheduler, threads_per_worker) as c:
        if clock:
            c.subscribe_topic(TOPIC, on_event)
        nthreads = max(1, sum(c.nthreads().values()))
        slots = 4 * nthreads  # the scheduler queues the extra ones: a worker never waits for the client
        pending = list(reversed(items))  # popped from the end: in order
        again: list[list[str]] = []  # batches to submit first: a failed batch's captures (module docstring)
        inflight: dict[str, tuple[Any, list[str]]] = {}
        seq = 0

        def submit() -> None:
            nonlocal seq
            while (again or pending) and len(inflight) < slots:
                if again:
                    todo = again.pop(0)
                else:
                    n = batch if batch is not None else batch_size(len(pending), nthreads)
                    todo = [pending.pop() for _ in range(min(n, len(pending)))]
                key = f"corpus-{seq}"
                seq += 1
                f = c.submit(analyze_batch, todo, dataset, algos, overrides, clock, key=key, pure=False)
                inflight[key] = (f, todo)

        submit()
        while inflight:
            try:
                wait(
                    [f for f, _ in inflight.values()],
                    timeout=POLL_S if timeout_per_capture is not None else None,
                    return_when="FIRST_COMPLETED",
                )
            except TimeoutError:
                pass
            for key, (f, todo) in list(inflight.items()):
                if not f.done():
                    continue
                del inflight[key]
                now_at = running.pop(key, None)
                sha = now_at[2] if now_at is not None and now_at[3] == 0 else None
                try:
                    summaries = f.result()
                except KilledWorker:
                    if len(todo) > 1:  # each capture on its own: the attempt counters name the culprit
                        again += [[it] for it in todo]
                        continue
                    summaries = [
                        _failed(dataset, todo[0], sha, "worker_died", "its worker died twice while analyzing it")
                    ]
                except Exception as exc:  # noqa: BLE001 - the task itself failed outside its own handling
                    if len(todo) > 1:
                        again += [[it] for it in todo]
                        continue
                    summaries = [
                        _failed(dataset, todo[0], sha, "internal", f"{type(exc).__name__}: {_first_line(exc)}")
                    ]
                for s in summaries:
                    record(s)
            if timeout_per_capture is not None:
                now = time.monotonic()
                with lock:
                    late = [(k, *running[k]) for k in inflight if k in running]
                for key, t0, worker, sha, i in late:
                    f, todo = inflight[key]
                    if f.done() or now - t0 <= timeout_per_capture:
                        continue
                    del inflight[key]
                    running.pop(key, None)
                    f.cancel()
                    # the capture's thread cannot be interrupted: restart its worker process (the
                    # nanny starts a fresh one); other tasks queued there are rescheduled by Dask
                    c.restart_workers([worker], raise_for_error=False)
                    msg = f"not done after {timeout_per_capture:g} s (worker restarted)"
                    record(_failed(dataset, todo[i], sha, "timeout", msg))
                    if len(todo) > 1:  # the others again (those done before it come back skipped)
                        again.append(todo[:i] + todo[i + 1 :])
            submit()
        if clock:
            c.unsubscribe_topic(TOPIC)
    shutil.rmtree(Path(dataset) / ATTEMPTS_DIR, ignore_errors=True)
    ds.remove_partial_writes(dataset)  # parts a worker died while writing (their captures were redone)
    return state


def _failed(dataset: str, item: str, sha: str | None, reason: str, message: str) -> dict[str, Any]:
    """Record a capture that failed outside the analysis's own handling (on the client, or on a
    worker for a capture two workers died on); its attempt counter goes."""
    from hscc_trace.corpus import dataset as ds
    from hscc_trace.corpus import inputs

    (Path(dataset) / ATTEMPTS_DIR / inputs.name_key(item)).unlink(missing_ok=True)

    if sha is None:  # the task never got as far as hashing: hash a local file here, key a URL by name
        try:
            sha = inputs.name_key(item) if inputs.is_url(item) else inputs.content_hash(item)
        except OSError:
            sha = inputs.name_key(item)
    if sha in ds.complete(dataset):  # it finished after all (just before the end)
        return _summary(sha, item, "ok")
    ds.write_error(dataset, sha, item, reason, message)
    return _summary(sha, item, "error", reason=reason, message=message)
