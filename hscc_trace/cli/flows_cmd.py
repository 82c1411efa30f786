"""`hscc-trace flows FILE`: the TCP connection table (schema.FLOWS) as a table or a JSON array."""

from __future__ import annotations

import typer

from .flows_table import COLUMNS, RICH_MAX_ROWS, cells, render_plain, render_table, run
from .typer_app import app

__all__ = ["COLUMNS", "RICH_MAX_ROWS", "cells", "flows", "render_plain", "render_table", "run"]


@app.command()
def flows(
    file: str = typer.Argument(..., metavar="FILE", help="Capture file: pcap, pcapng, optionally .gz."),
    bpf: str | None = typer.Option(
        None, "--filter", help="BPF filter applied before decoding, tcpdump syntax (e.g. 'tcp port 5201')."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the flow table as a JSON array (fields: docs/flows.md)."),
) -> None:
    """List the TCP connections in a capture (Wireshark's conversation table and more)."""
    run(file, bpf, as_json)
