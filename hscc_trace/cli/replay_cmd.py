"""`hscc-trace algorithms` and `hscc-trace replay FILE --flow ID --algo a,b --param algo.name=value -o OUT`."""

from __future__ import annotations

import json
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
    from hscc_trace.replay import registry

    if markdown:
        typer.echo(registry.markdown())
        return
    if as_json:
        rows = [r for r in registry.table_rows() if name is None or r["algorithm"] == name]
        typer.echo(json.dumps(rows, indent=1, default=str))
        return
    reg = registry.discover()
    names = [name] if name else sorted(reg)
    for n in names:
        a = registry.get(n)
        kind = f"  (wrapper: compose as {n}+BASE, e.g. {n}+highspeed)" if a.wraps else ""
        typer.echo(f"{n} — {a.summary}{kind}")
        typer.echo(f"    implements: {a.citation}")
        for flavor, decl in registry.variants(a):
            if flavor is not None:
                mod = decl.module.__name__.rpartition(".")[2]
                typer.echo(f"    flavor {flavor}{' (default)' if flavor == a.default_flavor else ''} ({mod}):")
            for p, d in registry.param_rows(decl):
                if flavor is not None and flavor != a.default_flavor and p.name in ("flavor", "iw"):
                    continue  # (common parameters: listed once, under the default flavor)
                d = ("on" if d else "off") if isinstance(d, bool) else d
                choices = f" [{'|'.join(p.choices)}]" if p.choices else ""
                typer.echo(f"    {n}.{p.name}={d}{choices}  {p.unit or '-'}  — {p.doc} ({p.source})")
        if a.signals:
            typer.echo("    signals: " + ", ".join(f"{s.name} [{s.unit or '-'}]" for s in a.signals))
        typer.echo("")


@app.command()
def replay(
    file: str = typer.Argument(..., metavar="FILE", help="Capture file: pcap, pcapng, optionally .gz."),
    flow: int = typer.Option(..., "--flow", help="Flow id (see `hscc-trace flows FILE`)."),
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
    from hscc_trace.analysis.export import replays_long, write_table
    from hscc_trace.events import flow_events
    from hscc_trace.flows import load
    from hscc_trace.replay import engine, metrics, registry

    resolved = registry.resolve_many(algo.split(","), param)  # validate before the (slow) capture read
    from .compiling import compile_notice

    with compile_notice():
        cap = load(file, bpf=bpf)
        fe = flow_events(cap, flow)
        for w in [*cap.warnings, *fe.warnings]:
            print(f"hscc-trace: warning: {w}", file=sys.stderr)
        reps = engine.replay_flow(fe, resolved, compiled=not no_jit)
    write_table(replays_long(reps), out)
    fit = metrics.fit(fe, reps)
    print(
        f"fit on {cast(int, fit.get_column('rounds').max()) if fit.height else 0} cwnd-limited rounds "
        "(median abs. relative error of cwnd, or a rate-based algorithm's in-flight cap, vs peak flight; 1 = best):",
        file=sys.stderr,
    )
    for r in fit.iter_rows(named=True):
        mare = "n/a" if r["mare"] is None else f"{r['mare']:.3f}"
        rmse = "n/a" if r["rmse_pkts"] is None else f"{r['rmse_pkts']:.1f}"
        print(f"  {r['rank']:>2}. {r['algo']:<28} mare {mare:>6}  rmse {rmse:>7} pkts", file=sys.stderr)
