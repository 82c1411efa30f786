"""`hscc-trace version`."""

import typer

from hscc_trace import __version__

from .app import app


@app.command()
def version() -> None:
    """Print the hscc-trace version."""
    typer.echo(__version__)
