"""`hscc-trace compile [CAPTURE…]`: compile every kernel and replay loop into the cache now."""

from __future__ import annotations

import sys
import time

import typer

from .typer_app import app


@app.command("compile")
def compile_(
    captures: list[str] = typer.Argument(
        None,
        metavar="CAPTURE",
        help="Also run these captures through every step (a generated capture is always run).",
    ),
) -> None:
    """Compile every kernel and replay loop now, into the cache later runs load them from.

    Without it, a kernel that is not compiled yet runs interpreted while its work is small and is compiled on its first large use. Run it once where the cache folder is kept: a CI cache, a container image ([cyan]docs/ci.md[/cyan]). Progress on stderr; the cache folder on stdout.
    """
    from hscc_trace import api

    from .common import one_line_errors
    from .compiling import compile_notice

    t0 = time.perf_counter()

    def step(text: str) -> None:
        print(f"hscc-trace: {text} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)

    with one_line_errors(), compile_notice(always=True):
        done = api.compile_kernels(captures or (), on_step=step)
    took = time.perf_counter() - t0
    loaded = sum(1 for r in done if r["compiled_calls"])
    typer.echo(
        f"{loaded} kernels and replay loops compiled or loaded from the cache in {took:.0f} s: {api.cache_folder()}"
    )
