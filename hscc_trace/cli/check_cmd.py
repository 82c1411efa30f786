"""`hscc-trace check`: the CI gate — expectations or a baseline in, per-flow verdicts and an exit code out."""

from __future__ import annotations

import os
import time
from pathlib import Path

import typer

from hscc_trace.api import DEFAULT_MAX_ERROR, DEFAULT_MIN_ROUNDS  # (hscc_trace.api.__getattr__)

from .common import one_line_errors, progress_bar
from .typer_app import app


@app.command("check")
def check_cmd(
    inputs: list[str] = typer.Argument(..., metavar="FILE_OR_DIR...", help="Capture files or directories."),
    expect: str | None = typer.Option(None, "--expect", help="Algorithm the sender should match (e.g. reno)."),
    max_error: float | None = typer.Option(
        None,
        "--max-error",
        help=f"Bound on the expected algorithm's mare (fraction; default {DEFAULT_MAX_ERROR}).",
    ),
    rank_first: bool | None = typer.Option(
        None, "--rank-first/--no-rank-first", help="Also require the expected algorithm to fit best among all replayed."
    ),
    baseline: Path | None = typer.Option(
        None, "--baseline", help="A stored results.json: fail when metrics regressed beyond --tolerance."
    ),
    tolerance: str | None = typer.Option(
        None,
        "--tolerance",
        help="Allowed regression, e.g. mare=0.02,rmse_pkts=1,corr=0.05,goodput=0.1 (none disables one).",
    ),
    junit: Path | None = typer.Option(
        None, "--junit", help="Write JUnit XML here (one testsuite per capture, one testcase per flow)."
    ),
    min_rounds: int | None = typer.Option(
        None,
        "--min-rounds",
        help=f"cwnd-limited rounds a flow needs to be judged (default {DEFAULT_MIN_ROUNDS}); fewer → skipped.",
    ),
    flow: list[int] | None = typer.Option(
        None, "--flow", help="Only this flow id (repeatable; default: every flow with enough data)."
    ),
    algo: str | None = typer.Option(
        None,
        "--algo",
        help="Algorithms to replay (default: the expected one; all with --rank-first; the baseline's with --baseline).",
    ),
    param: list[str] | None = typer.Option(None, "--param", help="Algorithm parameter ALGO.NAME=VALUE (repeatable)."),
    bpf: str | None = typer.Option(None, "--filter", help="BPF filter applied when reading."),
    jobs: int | None = typer.Option(
        None,
        "--jobs",
        "-j",
        help="Parallel lanes (threads in this process; default 1, or `jobs` in the configuration).",
    ),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the results (usable later as --baseline)."),
    config_file: Path | None = typer.Option(
        None, "--config", help="Configuration file (\\[check] table: expect, max_error, …)."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print failures and the tally only."),
    allow_ambiguous: bool | None = typer.Option(
        None,
        "--allow-ambiguous/--no-allow-ambiguous",
        help="Pass a flow whose verdict is ambiguous but lists the expected algorithm (default: fail).",
    ),
    allow_unknown: bool | None = typer.Option(
        None,
        "--allow-unknown/--no-allow-unknown",
        help="Judge a flow whose verdict is unknown by --max-error alone (default: fail).",
    ),
    allow_outside_range: bool | None = typer.Option(
        None,
        "--allow-outside-range/--no-allow-outside-range",
        help="Judge a flow that lies outside the conditions the verdict was validated on "
        "(default: skipped as not verified; docs/verdicts.md).",
    ),
    strict: bool | None = typer.Option(
        None,
        "--strict/--no-strict",
        help="Fail a capture that was only partly read "
        "(corrupt record, truncated or corrupt gzip); default: warn (docs/ci.md).",
    ),
    min_jain: float | None = typer.Option(
        None, "--min-jain", help="Fail a bottleneck group whose Jain's fairness index is below this (docs/groups.md)."
    ),
    max_stolen: float | None = typer.Option(
        None,
        "--max-stolen",
        help="Fail a group whose regular flows lost more than this fraction against --stolen-baseline.",
    ),
    stolen_baseline: str | None = typer.Option(
        None,
        "--stolen-baseline",
        help="For --max-stolen: the baseline run of regular flows only (a capture or results .json).",
    ),
    friendliness: str | None = typer.Option(
        None, "--friendliness", help="LO:HI bounds on each flow's goodput over its reno co-flows' (e.g. 0.5:2)."
    ),
    regular: str | None = typer.Option(
        None,
        "--regular",
        help="The regular and reference flows' algorithm label (default: \\[groups] reference, else reno).",
    ),
    group: list[str] | None = typer.Option(
        None, "--group", help="A bottleneck group of your own: flow ids or port=N (repeatable)."
    ),
) -> None:
    """Check captures against expectations: exit 0 when every verdict passes, 1 when any fails,
    2 for usage or input errors. Flows with too little data are skipped, never passed."""
    from hscc_trace import api

    from .compiling import compile_notice

    options = api.CheckOptions(
        expect=expect,
        max_error=max_error,
        rank_first=rank_first,
        baseline=baseline,
        tolerance=tolerance,
        junit=junit,
        min_rounds=min_rounds,
        flows=tuple(flow) if flow else None,
        algorithms=algo,
        params=tuple(param) if param else None,
        bpf=bpf,
        jobs=jobs,
        json_out=json_out,
        config=config_file,
        strict=strict,
        allow_ambiguous=allow_ambiguous,
        allow_unknown=allow_unknown,
        allow_outside_range=allow_outside_range,
        min_jain=min_jain,
        max_stolen=max_stolen,
        stolen_baseline=stolen_baseline,
        friendliness=friendliness,
        regular=regular,
        groups=tuple(group) if group else None,
    )
    t0 = time.perf_counter()
    with one_line_errors(), compile_notice():
        with progress_bar("checking", not quiet) as update:
            result = api.check(inputs, options, progress=update)
        _print(result, quiet, t0)
    raise typer.Exit(result.exit_code)


def _print(result, quiet: bool, t0: float) -> None:
    """What `check` prints of a result: partial-read warnings and input errors on stderr, the
    verdicts and the tally on stdout, GitHub annotations and step summary in GitHub Actions."""
    for w in result.warnings:
        typer.echo(f"hscc-trace: warning: {w}", err=True)
    for msg in result.errors:
        typer.echo(f"hscc-trace: error: {msg}", err=True)
    for line in result.verdict_lines(failures_only=quiet):
        typer.echo(line)
    typer.echo(result.tally + f" in {time.perf_counter() - t0:.1f} s")
    if result.github:
        for line in result.github_annotations():
            typer.echo(line)
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            try:
                with open(summary, "a", encoding="utf-8") as f:
                    f.write(result.markdown_summary())
            except OSError as exc:
                typer.echo(f"hscc-trace: warning: cannot append to GITHUB_STEP_SUMMARY ({exc})", err=True)
    for msg in result.flow_errors:
        typer.echo(f"hscc-trace: error: {msg}", err=True)
