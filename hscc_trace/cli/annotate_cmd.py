"""`hscc-trace annotate CAPTURE -o OUT.pcapng`: the capture as pcapng with packet comments."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from hscc_trace.errors import UsageError

from .common import exit_code_of, one_line_errors
from .typer_app import app


@app.command()
def annotate(
    file: str = typer.Argument(
        ..., metavar="CAPTURE", help="Capture file: pcap, pcapng, optionally .gz; '-' = standard input."
    ),
    out: str = typer.Option(
        ...,
        "-o",
        "--output",
        help="Write the pcapng here ('.gz': gzip-compressed; '-': standard output). Written atomically.",
    ),
    algo: str | None = typer.Option(
        None,
        "--algo",
        help="Comma-separated algorithms to replay (default: all registered; see `hscc-trace algorithms`).",
    ),
    param: list[str] | None = typer.Option(None, "--param", help="Algorithm parameter ALGO.NAME=VALUE (repeatable)."),
    bpf: str | None = typer.Option(
        None, "--filter", help="BPF filter: analyze only these packets (every packet is still written)."
    ),
    flow: list[int] | None = typer.Option(None, "--flow", help="Only this flow id (repeatable; default: every flow)."),
    prefix: str = typer.Option(
        "hscc-trace: ",
        "--prefix",
        help='What every comment starts with, for display filters: frame.comment contains "hscc-trace".',
    ),
    tolerance: float | None = typer.Option(
        None,
        "--tolerance",
        help="Relative difference of replayed and actual window beyond which they part ways "
        "(default: the verdict's threshold, 0.15; 0.25 for a rate-based algorithm).",
    ),
    agree_rounds: int | None = typer.Option(
        None,
        "--agree-rounds",
        help="Rounds in a row within the tolerance that count as agreeing, before a departure "
        "and for a rejoin (default 1: docs/annotate.md).",
    ),
    config_file: Path | None = typer.Option(
        None,
        "--config",
        help="Configuration file (default: hscc-trace.toml or \\[tool.hscc-trace] in pyproject.toml, searched upward).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary line; warnings and errors only."),
) -> None:
    """Write the capture as pcapng with packet comments that Wireshark shows and filters
    (frame.comment): each flow's verdict at its first packet, each congestion episode's start and
    end, and where the replay of the named algorithm and the sender part ways. Every packet's
    bytes, timestamp and lengths are unchanged (docs/annotate.md).

    Exit code 0, or 2 for bad input or when a flow could not be analyzed (the file is still
    written, with the other flows' comments), 70 when that was an internal error.
    """
    from hscc_trace import api

    from .compiling import compile_notice

    to_stdout = out == "-"
    if to_stdout and sys.stdout.isatty():
        raise UsageError("-o -: will not write a binary capture to a terminal (redirect it, or name a file)")
    with one_line_errors(), compile_notice():
        cfg = api.settings(api.AnalyzeOptions(algo, param or None, bpf=bpf, config=config_file or True))
        target = sys.stdout.buffer if to_stdout else out
        res = api.annotate(
            file,
            target,
            api.AnnotateOptions(
                cfg.algorithms,
                cfg.params,
                bpf=cfg.bpf,
                flows=flow,
                prefix=prefix,
                tolerance=tolerance,
                agree_rounds=agree_rounds,
            ),
        )
        if to_stdout:
            sys.stdout.buffer.flush()
    for w in res.warnings:
        typer.echo(f"hscc-trace: warning: {w}", err=True)
    for msg in res.errors:
        typer.echo(f"hscc-trace: error: {msg}", err=True)
    if not quiet:
        w = res.written
        verdicts = "; ".join(f"flow {k}: {v}" for k, v in sorted(res.verdicts.items()))
        typer.echo(
            f"{'standard output' if to_stdout else out}: {w.records} packets, {w.comments} comments on "
            f"{w.commented} frames ({res.flows} flow(s) analyzed{': ' + verdicts if verdicts else ''})",
            err=to_stdout,
        )
    raise typer.Exit(exit_code_of(res.errors, 0))
