"""The Typer application object; command modules register on it."""

import typer

app = typer.Typer(
    name="hscc-trace",
    help="TCP trace analyzer and offline replayer for high-speed congestion control.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """hscc-trace: captures in; flow tables, event streams, replays, reports and CI verdicts out."""
