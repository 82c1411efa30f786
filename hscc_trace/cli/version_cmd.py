"""`hscc-trace version`."""

import typer

from hscc_trace import __version__

from .typer_app import app


@app.command()
def version() -> None:
    """Print the hscc-trace version, and the numba version that compiles the kernels with the folder it caches them in."""
    import os

    from numba import __version__ as numba_version

    from hscc_trace.perf.cache import cache_root

    typer.echo(__version__)
    # (the CLI points numba at the hscc-trace cache folder unless NUMBA_CACHE_DIR is set: hscc_trace.perf.activate)
    typer.echo(
        f"kernels: numba {numba_version}, cached in {os.environ.get('NUMBA_CACHE_DIR') or cache_root() / 'numba'}"
    )
