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
from pathlib import Path
from typing import Any

import typer

from hscc_trace import api

from .typer_app import app


def run_dataset(o: api.DatasetOptions, quiet: bool = False) -> int:
    """The corpus run behind ``analyze --dataset``; ``quiet``: no progress bar, no summary line.
    Exit code 0, 2 when any capture failed, 70 when any failure was an internal error
    (docs/exit-codes.md)."""
    items = api.corpus_inputs(o)
    with corpus_progress(len(items), enabled=not quiet) as update:
        state = api.corpus_run(o, items, progress=update)
    for e in state.errors:
        typer.echo(f"hscc-trace: error: {e['capture']}: {e['reason']}: {e['message']}", err=True)
    if not quiet:
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
        api.census(dataset, output)
    typer.echo(f"census: {output}")
