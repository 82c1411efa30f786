"""Run a corpus on Dask distributed: a LocalCluster of worker processes by default, or a running
scheduler (``tcp://HOST:8786``; without one, Dask's own configuration ``DASK_SCHEDULER_ADDRESS``).

Each task is one capture (:func:`analyze_capture`); it writes that capture's rows and returns a
small summary dict. A worker that dies is retried once (Dask's ``allowed-failures`` = 1), then the
capture gets an error row ``worker_died``. Nothing here prints: progress goes to a callback.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Test hook: a worker analyzing a capture whose file name equals this variable's value exits at
#: once (``os._exit``), as an OOM kill or segfault would.
CRASH_ENV = "HSCC_TRACE_CORPUS_CRASH"


def _summary(sha: str | None, item: str, status: str, **kw: Any) -> dict[str, Any]:
    return {"sha256": sha, "capture": item, "status": status, **kw}


def _error_row(dataset: str, sha: str, item: str, reason: str, message: str) -> None:
    import polars as pl

    from hscc_trace.corpus import dataset as ds

    ds.write_part(
        dataset,
        "errors",
        sha,
        pl.DataFrame({"sha256": [sha], "capture": [item], "reason": [reason], "message": [message]}),
    )


def content_hash(item: str) -> str:
    """sha256 of a capture's bytes (as stored: a .gz file is hashed compressed)."""
    import hashlib

    if "://" in item:
        import fsspec

        opener = fsspec.open(item, "rb")
    else:
        opener = open(item, "rb")
    h = hashlib.sha256()
    with opener as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def analyze_capture(
    item: str,
    dataset: str,
    algorithms: Sequence[str] | None,
    params: dict[str, dict[str, Any]] | None,
    sha: str | None = None,
) -> dict[str, Any]:
    """Analyze one capture and write its rows of every table; returns a summary dict."""
    import polars as pl

    from hscc_trace import api, schema
    from hscc_trace.analysis.results import cwnd_limited_rounds
    from hscc_trace.corpus import dataset as ds
    from hscc_trace.corpus import inputs

    if os.environ.get(CRASH_ENV) and Path(item).name == os.environ[CRASH_ENV]:
        os._exit(137)
    try:
        sha = sha or content_hash(item)
    except OSError as exc:
        return _summary(None, item, "error", reason="unreadable", message=str(exc))
    if ds.path(dataset, "captures", sha).exists():
        return _summary(sha, item, "skipped", was="ok")
    if ds.path(dataset, "errors", sha).exists():
        row = pl.read_parquet(ds.path(dataset, "errors", sha)).row(0, named=True)
        return _summary(sha, item, "skipped", was="error", reason=row["reason"], message=row["message"])
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hscc-corpus-") as tmp:
        try:
            local = inputs.fetch_local(item, tmp)
            run = api.analyze_run([local], algorithms, params, jobs=1)
        except Exception as exc:  # noqa: BLE001 - a failed capture is data, not a crash of the run
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            _error_row(dataset, sha, item, "unreadable", msg)
            return _summary(sha, item, "error", reason="unreadable", message=msg)
    a = run.analysis
    if not a.captures:
        msg = "; ".join(run.failed.values()) or "no capture read"
        _error_row(dataset, sha, item, "unreadable", msg)
        return _summary(sha, item, "error", reason="unreadable", message=msg)
    key = [pl.lit(sha).alias("sha256"), pl.lit(item).alias("capture")]
    flows = api.flow_table(a).drop("capture").with_columns(key)
    fits = api.fit_table(a).drop("capture").with_columns(key)
    eps, rounds = [], []
    for cr in a.captures:
        for fr in cr.results:
            fid = int(fr.flow["flow_id"])
            ev = fr.events
            if ev.episodes.height:
                eps.append(schema.conform(ev.episodes, schema.EPISODES).with_columns(pl.lit(fid).alias("flow_id")))
            rounds.append(
                {"flow_id": fid, "rounds": ev.rounds.height, "cwnd_limited_rounds": cwnd_limited_rounds(ev.rounds)}
            )
    episodes = (
        pl.concat(eps, how="diagonal_relaxed")
        if eps
        else schema.empty(schema.EPISODES).with_columns(pl.lit(0).alias("flow_id")).clear()
    )
    rounds_df = pl.DataFrame(rounds, schema={"flow_id": pl.Int64, "rounds": pl.Int64, "cwnd_limited_rounds": pl.Int64})
    m = a.captures[0].meta
    cap = pl.DataFrame(
        {
            "sha256": [sha],
            "capture": [item],
            "format": [m.format],
            "packets_total": [m.packets_total],
            "packets_tcp": [m.packets_tcp],
            "first_ns": [m.first_ns],
            "last_ns": [m.last_ns],
            "flows": [flows.height],
            "analyzed_flows": [len(a.captures[0].results)],
            "algorithms": [",".join(a.algorithms)],
            "version": [a.version],
            "seconds": [time.perf_counter() - t0],
        },
        schema_overrides={"first_ns": pl.Int64, "last_ns": pl.Int64},
    )
    for name, df in (
        ("flows", flows),
        ("fits", fits),
        ("episodes", episodes.with_columns(key)),
        ("rounds", rounds_df.with_columns(key)),
    ):
        ds.write_part(dataset, name, sha, df)
    ds.write_part(dataset, "captures", sha, cap)  # last: marks the capture complete
    return _summary(sha, item, "ok", flows=flows.height, seconds=cap["seconds"][0])


@dataclass
class CorpusRun:
    total: int
    ok: int = 0
    skipped: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)


def client(workers: int | None = None, scheduler: str | None = None, threads_per_worker: int = 1):
    """A dask.distributed Client: to ``scheduler`` (or Dask's configured address), else a
    LocalCluster of ``workers`` processes (default: CPU count) with ``threads_per_worker`` each."""
    import dask
    from distributed import Client, LocalCluster

    dask.config.set({"distributed.scheduler.allowed-failures": 1})
    addr = scheduler or dask.config.get("scheduler-address", None)
    if addr:
        return Client(addr)
    cluster = LocalCluster(
        n_workers=workers or os.cpu_count() or 1,
        threads_per_worker=threads_per_worker,
        processes=True,
        dashboard_address=None,
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
) -> CorpusRun:
    """Analyze ``items`` into ``dataset``; one task per capture, a bounded number in flight."""
    from distributed import as_completed
    from distributed.scheduler import KilledWorker

    from hscc_trace import api
    from hscc_trace.corpus import dataset as ds

    sel = api.select(algorithms, params)  # validate once, on the client
    algos, overrides = list(sel.names), sel.overrides
    dataset = str(Path(dataset).resolve())
    Path(dataset).mkdir(parents=True, exist_ok=True)
    state = CorpusRun(total=len(items))
    before = ds.done(dataset)  # a capture written during this run and then recomputed (its worker
    # died after the task finished, before its summary was fetched) counts as analyzed, not skipped
    with client(workers, scheduler, threads_per_worker) as c:
        nthreads = max(1, sum(c.nthreads().values()))
        # with a timeout, no task waits queued on the client's clock: in flight = threads
        slots = nthreads if timeout_per_capture is not None else 2 * nthreads
        pending = list(reversed(items))
        started: dict[Any, tuple[str, float]] = {}
        ac = as_completed()

        def submit() -> None:
            while pending and len(started) < slots:
                it = pending.pop()
                f = c.submit(
                    analyze_capture, it, dataset, algos, overrides, key=f"capture-{len(pending)}-{it}", pure=False
                )
                started[f] = (it, time.monotonic())
                ac.add(f)

        def record(s: dict[str, Any]) -> None:
            if s["status"] == "ok":
                state.ok += 1
            elif s["status"] == "skipped" and s.get("sha256") not in before:
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

        submit()
        while started:
            batch = ac.next_batch(block=False) if ac.has_ready() else []
            if not batch:
                try:
                    batch = [next(iter(ac))] if timeout_per_capture is None else []
                except StopIteration:
                    batch = []
            for f in batch:
                it, _ = started.pop(f, (None, 0))
                if it is None:
                    continue
                try:
                    record(f.result())
                except KilledWorker:
                    record(_failed(dataset, it, "worker_died", "the worker died twice analyzing it"))
                except Exception as exc:  # noqa: BLE001
                    record(
                        _failed(dataset, it, "internal", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
                    )
            if timeout_per_capture is not None:
                now = time.monotonic()
                for f, (it, t) in list(started.items()):
                    if not f.done() and now - t > timeout_per_capture:
                        started.pop(f)
                        f.cancel()
                        record(_failed(dataset, it, "timeout", f"not done after {timeout_per_capture:g} s"))
                if not batch:
                    time.sleep(0.05)
            submit()
    return state


def _failed(dataset: str, item: str, reason: str, message: str) -> dict[str, Any]:
    try:
        sha = content_hash(item)
        _error_row(dataset, sha, item, reason, message)
    except OSError:
        sha = None
    return _summary(sha, item, "error", reason=reason, message=message)
