"""`hscc-trace algorithms` and `hscc-trace replay FILE --flow ID --algo a,b --param algo.name=value -o OUT`."""

from __future__ import annotations

import sys
from typing import cast

import typer

from .typer_app import app


@app.command()
def algorithms(
    name: str | None = typer.Argument(None, metavar="[NAME]", help="Show only this algorithm."),
    markdown: bool = typer.Option(False, "--markdown", help="Print the docs/algorithms.md tables instead."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per parameter (machine-readable)."),
) -> None:
    """List the replayable algorithms with their parameters (unit, default, source) and signals."""
    from hscc_trace import api

    typer.echo(api.describe_algorithms(name, "markdown" if markdown else "json" if as_json else "text"))


@app.command()
def replay(
    file: str = typer.Argument(..., metavar="FILE", help="Capture file: pcap, pcapng, or a qlog; optionally .gz."),
    flow: int = typer.Option(..., "--flow", help="Flow id, or a qlog's connection (see `hscc-trace flows FILE`)."),
    algo: str = typer.Option(
        "reno",
        "--algo",
        help="Comma-separated algorithms (see `hscc-trace algorithms`); wrappers compose as wrapper+base.",
    ),
    param: list[str] = typer.Option([], "--param", help="Parameter override algo.name=value (repeatable)."),
    out: str = typer.Option(
        "-",
        "-o",
        "--out",
        help="Output: .parquet, .csv or .json by extension; '-' = CSV on stdout. "
        "One row per ACK and algorithm: `algo`, then the ACK's `frame` and `ts_ns` (join the ACK events on `frame`).",
    ),
    bpf: str | None = typer.Option(None, "--filter", help="BPF filter applied before decoding, tcpdump syntax."),
    no_jit: bool = typer.Option(False, "--no-jit", help="Run the algorithms as plain Python (debugging; slow)."),
) -> None:
    """Replay algorithms over one flow's ACK stream (open loop: what each would have set given the
    actual sender's ACKs, RTTs and losses) and print their fit to the actual sender on stderr."""
    from hscc_trace import api

    from .compiling import compile_notice

    if api.is_qlog(file):
        _replay_qlog(file, flow, algo, param, out)
        return
    with compile_notice():
        res = api.replay_flow(file, flow, algo.split(","), param, bpf=bpf, compiled=not no_jit)
        for w in res.warnings:
            print(f"hscc-trace: warning: {w}", file=sys.stderr)
    api.export(res.table, out)
    fit = res.fit
    print(
        f"fit on {cast(int, fit.get_column('rounds').max()) if fit.height else 0} cwnd-limited rounds "
        "(median abs. relative error of cwnd, or a rate-based algorithm's in-flight cap, vs peak flight; 1 = best):",
        file=sys.stderr,
    )
    for r in fit.iter_rows(named=True):
        mare = "n/a" if r["mare"] is None else f"{r['mare']:.3f}"
        rmse = "n/a" if r["rmse_pkts"] is None else f"{r['rmse_pkts']:.1f}"
        print(f"  {r['rank']:>2}. {r['algo']:<28} mare {mare:>6}  rmse {rmse:>7} pkts", file=sys.stderr)


def _replay_qlog(file: str, connection: int, algo: str, param: list[str], out: str) -> None:
    """`replay FILE.qlog`: the QUIC replays against the stack's logged window (docs/quic.md)."""
    from hscc_trace import api

    res = api.qlog_replay(file, connection, [a for a in algo.split(",") if a], param)
    for w in res.warnings:
        print(f"hscc-trace: warning: {w}", file=sys.stderr)
    api.export(res.table, out)
    print("agreement with the stack's logged cwnd (relative error at each ACK; 1 = best):", file=sys.stderr)
    for r in res.fit.iter_rows(named=True):
        if r["median"] is None:
            print(f"  {r['rank']:>2}. {r['algo']:<16} no logged window to compare", file=sys.stderr)
            continue
        print(
            f"  {r['rank']:>2}. {r['algo']:<16} median {100 * r['median']:6.2f} %  p90 {100 * r['p90']:6.2f} %  "
            f"exact at {100 * r['exact']:5.1f} % of {r['acks']} ACKs",
            file=sys.stderr,
        )
