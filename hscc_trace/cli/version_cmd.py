"""`hscc-trace version`."""

import typer

from hscc_trace import __version__

from .typer_app import app


@app.command()
def version() -> None:
    """Print the hscc-trace version, and which implementation runs the flows kernels (the compiled extension, or numba's JIT and why)."""
    from hscc_trace.perf.jit import kernels_status

    typer.echo(__version__)
    typer.echo(f"flows kernels: {kernels_status()}")
