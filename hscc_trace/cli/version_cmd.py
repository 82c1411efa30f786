"""`hscc-trace version`."""

import typer

from .typer_app import app


@app.command()
def version() -> None:
    """Print the hscc-trace version, and the numba version that compiles the kernels with the folder it caches them in."""
    from hscc_trace import api

    typer.echo(api.version())
    typer.echo(f"kernels: {api.kernels_status()}")
