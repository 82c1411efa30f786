"""What every command shares: one-line errors, exit codes of a run, the progress bar."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hscc_trace.errors import DEBUG_ENV, HsccError, InternalError, exit_code_of

__all__ = ["exit_code_of", "one_line_errors", "progress_bar"]


@contextmanager
def one_line_errors() -> Iterator[None]:
    """Turn an unexpected exception (a bug) into the one-line error of :func:`hscc_trace.cli.main`
    instead of a traceback; ``HSCC_TRACE_DEBUG=1`` lets it through."""
    try:
        yield
    except HsccError:
        raise
    except Exception as exc:  # noqa: BLE001
        if os.environ.get(DEBUG_ENV):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise InternalError(
            f"internal error ({type(exc).__name__}: {first}); rerun with {DEBUG_ENV}=1 for a traceback"
        ) from None


@contextmanager
def progress_bar(label: str, enabled: bool) -> Iterator[Any]:
    """A rich progress bar on stderr when it is a terminal; a no-op callback otherwise."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[what]}"),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None, what="")

        def update(done: int, total: int, what: str) -> None:
            bar.update(task, completed=done, total=max(total, 1), what=what)

        yield update
