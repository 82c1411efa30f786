"""`hscc-trace compare BASELINE TEST`: bandwidth stolen from the regular flows, and every per-flow delta."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from hscc_trace.errors import UsageError

from .common import one_line_errors
from .typer_app import app


def _mbit(x: Any) -> str:
    return f"{x / 1e6:.2f} Mbit/s" if isinstance(x, (int, float)) else "—"


def _pct(x: Any, signed: bool = False) -> str:
    if not isinstance(x, (int, float)):
        return "—"
    return f"{x * 100:+.1f} %" if signed else f"{x * 100:.1f} %"


def _num(x: Any) -> str:
    return f"{x:.3f}" if isinstance(x, (int, float)) else "—"


def comparison_lines(doc: dict[str, Any]) -> list[str]:
    """The terminal form of ``Comparison.as_dict()``."""
    out: list[str] = []
    reg = doc["regular"] if isinstance(doc["regular"], str) else "flows " + ", ".join(map(str, doc["regular"]))
    for g in doc["groups"]:
        out.append(
            f"group {g['index']}: baseline {g.get('baseline_capture') or '—'} · test {g.get('test_capture') or '—'}"
        )
        b_ids = ", ".join(map(str, g["baseline_regular"])) or "none"
        t_ids = ", ".join(map(str, g["test_regular"])) or "none"
        out.append(
            f"  regular ({reg}) flows: baseline {b_ids} at {_mbit(g['baseline_regular_bps'])} on average, "
            f"test {t_ids} at {_mbit(g['test_regular_bps'])}"
        )
        out.append(f"  bandwidth stolen: {_pct(g['stolen'])}  (P − Q)/P, Compound TCP's Definition 1")
        out.append(
            f"  Jain {_num(g['baseline_jain'])} → {_num(g['test_jain'])}, total {_mbit(g['baseline_total_bps'])} → "
            f"{_mbit(g['test_total_bps'])}, utilization {_pct(g['baseline_utilization'])} → {_pct(g['test_utilization'])}"
        )
        for f in g["flows"]:
            ba = f" [{f['baseline_algo']}]" if f.get("baseline_algo") else ""
            ta = f" [{f['test_algo']}]" if f.get("test_algo") else ""
            out.append(
                f"  flow {f['baseline_flow']}{ba} → flow {f['test_flow']}{ta}: {_mbit(f['baseline_goodput_bps'])} → "
                f"{_mbit(f['test_goodput_bps'])} ({_pct(f['relative'], signed=True)}), share "
                f"{_pct(f['baseline_share'])} → {_pct(f['test_share'])}"
            )
    return out


@app.command("compare")
def compare_cmd(
    baseline: str = typer.Argument(
        ..., metavar="BASELINE", help="Capture or results .json of the baseline run (regular flows only)."
    ),
    test: str = typer.Argument(..., metavar="TEST", help="Capture or results .json of the run to compare."),
    regular: str | None = typer.Option(
        None,
        "--regular",
        help="The regular flows: an algorithm label or flow ids, comma-separated "
        "(default: \\[groups] reference of the configuration, else reno).",
    ),
    group: list[str] | None = typer.Option(
        None, "--group", help="Bottleneck group of your own in both runs: flow ids or port=N (repeatable)."
    ),
    window: float | None = typer.Option(
        None, "--window", help="Window of the shared time axis in seconds (default 1)."
    ),
    algo: str | None = typer.Option(
        None, "--algo", help="Algorithms to replay on captures (default: every registered one)."
    ),
    bpf: str | None = typer.Option(None, "--filter", help="BPF filter applied when reading captures."),
    json_out: bool = typer.Option(False, "--json", help="Print the comparison as JSON instead."),
    output: Path | None = typer.Option(None, "-o", "--output", help="Also write a self-contained HTML page here."),
    config_file: Path | None = typer.Option(
        None, "--config", help="Configuration file (\\[groups] table; default: searched upward)."
    ),
) -> None:
    """Bandwidth stolen from the regular flows (Compound TCP paper, Definition 1) and every per-flow
    delta between a baseline run and a test run (docs/groups.md).

    Exit code 0, or 2 when an input cannot be read or either run has no bottleneck group.
    """

    with one_line_errors():
        from hscc_trace import api

        cfg = api.load_config(config_file)
        rule, opts = api.group_options(group, window, cfg.groups)
        reg: str | tuple[int, ...] | None
        if regular is None:
            reg = None
        elif regular.replace(",", "").replace(" ", "").isdigit():
            reg = tuple(int(x) for x in regular.split(",") if x.strip())
        elif regular.strip():
            reg = regular.strip()
        else:
            raise UsageError("--regular needs an algorithm label or flow ids")
        algorithms = api.settings(api.AnalyzeOptions(algo)).algorithms
        sides = []
        for what, src in (("baseline", baseline), ("test", test)):
            if src != "-" and not Path(src).exists():
                raise UsageError(f"{src}: no such file or directory")
            got = api.group_input(src, rule, opts, bpf=bpf, algorithms=algorithms)
            if not got:
                raise UsageError(
                    f"{src}: the {what} has no bottleneck group (two or more concurrent bulk flows; --group names one)"
                )
            sides.append(got)
        cmp = api.compare(sides[0], sides[1], regular=reg, config=cfg)
        doc = cmp.as_dict()
        for w in cmp.warnings:
            typer.echo(f"hscc-trace: warning: {w}", err=True)
        if json_out:
            typer.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        else:
            for line in comparison_lines(doc):
                typer.echo(line)
        if output is not None:
            api.write_comparison(doc, output)
            if not json_out:
                typer.echo(f"report: {output}")
    raise typer.Exit(0)
