"""`hscc-trace analyze … --dataset DIR` (corpus run on Dask) and `hscc-trace census DATASET`.

`analyze` hands over to :func:`run_dataset` when ``--dataset`` is given. There, ``--workers N``
is the number of worker *processes* (a LocalCluster; default: the CPU count) and ``--jobs`` the
threads per worker (default 1: the analysis holds the GIL for much of a capture, so processes,
not threads, scale a corpus). ``--scheduler`` (or Dask's ``DASK_SCHEDULER_ADDRESS``) uses a
running cluster instead; ``--workers`` is then ignored.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from hscc_trace.errors import UsageError

from .typer_app import app


@dataclass(frozen=True)
class DatasetRun:
    """The options of ``analyze --dataset`` (docs/corpus.md)."""

    #: captures, directories or URLs (FILE_OR_DIR...)
    inputs: list[str]
    #: the dataset folder (``--dataset``)
    dataset: Path
    #: algorithms and parameter overrides, as the configuration resolved them
    algorithms: Any
    params: Any
    #: local Dask workers, >= 1 (None: one per core); ``scheduler``: an existing Dask scheduler's address
    workers: int | None = None
    scheduler: str | None = None
    #: a file listing more inputs, one per line (``--inputs-from``)
    inputs_from: Path | None = None
    #: threads per worker (``--jobs``), >= 1
    threads: int = 1
    #: seconds a capture may take before it is recorded as an error (None: no limit)
    timeout: float | None = None
    #: no progress bar, no summary line
    quiet: bool = False


def run_dataset(o: DatasetRun) -> int:
    """The corpus run behind ``analyze --dataset``. Exit code 0, 2 when any capture failed, 70
    when any failure was an internal error (docs/exit-codes.md)."""
    from hscc_trace import corpus

    corpus.require()  # (the corpus extra: before anything else is checked)
    from hscc_trace.corpus import inputs as cin
    from hscc_trace.corpus import runner

    items = list(o.inputs) + (cin.read_list(o.inputs_from) if o.inputs_from is not None else [])
    if not items:
        raise UsageError("no input given (FILE_OR_DIR... or --inputs-from)")
    if o.workers is not None and o.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {o.workers}")
    if o.timeout is not None and o.timeout <= 0:
        raise UsageError(f"--timeout-per-capture must be > 0, got {o.timeout}")
    items = cin.expand(items)
    cin.check_protocols(items)
    with corpus_progress(len(items), enabled=not o.quiet) as update:
        state = runner.run(
            items,
            o.dataset,
            o.algorithms,
            o.params,
            workers=o.workers,
            scheduler=o.scheduler,
            threads_per_worker=o.threads,
            timeout_per_capture=o.timeout,
            progress=update,
        )
    for e in state.errors:
        typer.echo(f"hscc-trace: error: {e['capture']}: {e['reason']}: {e['message']}", err=True)
    if not o.quiet:
        typer.echo(
            f"{state.total} capture(s): {state.ok} analyzed, {state.skipped} already in the dataset, "
            f"{len(state.errors)} error(s); dataset: {o.dataset}"
        )
    if any(e.get("reason") == "internal" for e in state.errors):
        return 70
    return 2 if state.errors else 0


def rate_eta(done: int, total: int, elapsed: float) -> tuple[str, str]:
    """The progress bar's rate and ETA: captures per second so far, and the time the rest take
    at that rate (``h:mm:ss``); empty before the first capture."""
    if done <= 0 or elapsed <= 0:
        return "", ""
    rate = done / elapsed
    left = round(max(total - done, 0) / rate)
    return f"{rate:.1f} captures/s", f"ETA {left // 3600}:{left // 60 % 60:02d}:{left % 60:02d}"


@contextmanager
def corpus_progress(total: int, enabled: bool) -> Iterator[Any]:
    """A progress bar on stderr (when it is a terminal): captures done / total, rate, ETA and
    the errors so far; yields the runner's progress callback (None when there is no bar)."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("[bold]corpus"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[eta]}"),
        TextColumn("errors: {task.fields[errors]}"),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("corpus", total=total, rate="", eta="", errors=0)

        def update(state: Any, _summary: dict[str, Any]) -> None:
            rate, eta = rate_eta(state.done, state.total, time.monotonic() - state.started)
            bar.update(task, completed=state.done, rate=rate, eta=eta, errors=len(state.errors))

        yield update


@app.command()
def census(
    dataset: Path = typer.Argument(..., help="A dataset written by `hscc-trace analyze … --dataset DIR`."),
    output: Path = typer.Option(..., "-o", "--output", help="Write the self-contained HTML census here."),
) -> None:
    """Census of a corpus dataset: best fits by algorithm, goodput/RTT distributions, episodes, errors."""
    from .common import one_line_errors

    with one_line_errors():
        from hscc_trace.corpus import census as _census
        from hscc_trace.errors import InputError

        if not (dataset / "captures").is_dir() and not (dataset / "errors").is_dir():
            raise InputError(f"{dataset}: not a corpus dataset (no captures/ or errors/ folder)")
        _census.write(dataset, output)
    typer.echo(f"census: {output}")
