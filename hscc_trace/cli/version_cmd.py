"""`hscc-trace version`."""

import typer

from hscc_trace import __version__

from .app import app


@app.command()
def version() -> None:
    """Print the hscc-trace version, and whether the flows kernels were compiled ahead of time."""
    from hscc_trace.perf.jit import aot_status

    typer.echo(__version__)
    typer.echo(f"flows kernels: {aot_status()}")
