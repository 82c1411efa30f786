"""`hscc-trace version`."""

import typer

from .typer_app import app


@app.command()
def version() -> None:
    """Print the hscc-trace version, and which implementation runs the flows kernels (the compiled extension, or numba's JIT and why)."""
    from hscc_trace import api

    typer.echo(api.version())
    typer.echo(f"flows kernels: {api.kernels_status()}")
