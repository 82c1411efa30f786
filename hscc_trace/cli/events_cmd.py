"""`hscc-trace events FILE --flow ID --kind segments|acks|episodes|rounds -o OUT`."""

from __future__ import annotations

import sys
from enum import StrEnum

import typer

from .typer_app import app


class Kind(StrEnum):
    segments = "segments"
    acks = "acks"
    episodes = "episodes"
    rounds = "rounds"


@app.command()
def events(
    file: str = typer.Argument(..., metavar="FILE", help="Capture file: pcap, pcapng, or a qlog; optionally .gz."),
    flow: int = typer.Option(..., "--flow", help="Flow id (see `hscc-trace flows FILE`)."),
    kind: Kind = typer.Option(Kind.acks, "--kind", help="Which event stream to write (columns: docs/events.md)."),
    out: str = typer.Option(
        "-", "-o", "--out", help="Output: .parquet, .csv or .json by extension; '-' = CSV on stdout."
    ),
    bpf: str | None = typer.Option(None, "--filter", help="BPF filter applied before decoding, tcpdump syntax."),
) -> None:
    """Write one flow's event stream (segments, ACKs, congestion episodes or RTT rounds)."""
    from hscc_trace import api

    from .compiling import compile_notice

    if api.is_qlog(file):  # a QUIC connection: acks, segments (packets sent), episodes (losses)
        table, warnings = api.qlog_events(file, flow, kind.value)
    else:
        with compile_notice():
            table, warnings = api.event_table(file, flow, kind.value, bpf)
    for w in warnings:
        print(f"hscc-trace: warning: {w}", file=sys.stderr)
    api.export(table, out)
