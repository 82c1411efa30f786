"""`hscc-trace check`: the CI gate — expectations or a baseline in, per-flow verdicts and an exit code out."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import typer

from hscc_trace import config
from hscc_trace.analysis import check
from hscc_trace.errors import InputError, InternalError, InternalMessage, UsageError

from .common import exit_code_of, one_line_errors, progress_bar
from .typer_app import app


@app.command("check")
def check_cmd(
    inputs: list[str] = typer.Argument(..., metavar="FILE_OR_DIR...", help="Capture files or directories."),
    expect: str | None = typer.Option(None, "--expect", help="Algorithm the sender should match (e.g. reno)."),
    max_error: float | None = typer.Option(
        None,
        "--max-error",
        help=f"Bound on the expected algorithm's mare (fraction; default {config.DEFAULT_MAX_ERROR}).",
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
        help=f"cwnd-limited rounds a flow needs to be judged (default {config.DEFAULT_MIN_ROUNDS}); fewer → skipped.",
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
    regular: str = typer.Option("reno", "--regular", help="The regular and reference flows' algorithm label."),
    group: list[str] | None = typer.Option(
        None, "--group", help="A bottleneck group of your own: flow ids or port=N (repeatable)."
    ),
) -> None:
    """Check captures against expectations: exit 0 when every verdict passes, 1 when any fails,
    2 for usage or input errors. Flows with too little data are skipped, never passed."""
    from .compiling import compile_notice

    with one_line_errors(), compile_notice():
        code = _check(
            inputs,
            expect,
            max_error,
            rank_first,
            baseline,
            tolerance,
            junit,
            min_rounds,
            flow,
            algo,
            param,
            bpf,
            jobs,
            json_out,
            config_file,
            quiet,
            strict,
            allow_ambiguous,
            allow_unknown,
            _group_gates(min_jain, max_stolen, stolen_baseline, friendliness, regular, group),
        )
    raise typer.Exit(code)


def _group_gates(
    min_jain: float | None,
    max_stolen: float | None,
    stolen_baseline: str | None,
    friendliness: str | None,
    regular: str,
    group: list[str] | None,
) -> dict | None:
    """The bottleneck-group gates asked for (hscc_trace.analysis.group_check), checked; None: none."""
    if min_jain is None and max_stolen is None and friendliness is None:
        if stolen_baseline is not None:
            raise UsageError("--stolen-baseline needs --max-stolen")
        return None
    if min_jain is not None and not 0 <= min_jain <= 1:
        raise UsageError(f"--min-jain must be within 0..1, got {min_jain}")
    if max_stolen is not None:
        if stolen_baseline is None:
            raise UsageError("--max-stolen needs --stolen-baseline (the run of regular flows only)")
        if not max_stolen >= 0:
            raise UsageError(f"--max-stolen must be >= 0, got {max_stolen}")
        if not Path(stolen_baseline).exists():
            raise UsageError(f"{stolen_baseline}: no such file or directory")
    bounds = None
    if friendliness is not None:
        from hscc_trace.analysis.group_check import parse_bounds

        try:
            bounds = parse_bounds(friendliness)
        except ValueError as exc:
            raise UsageError(f"--friendliness {exc}") from None
    return {
        "min_jain": min_jain,
        "max_stolen": max_stolen,
        "stolen_baseline": stolen_baseline,
        "friendliness": bounds,
        "regular": regular,
        "group": group,
    }


def _check(
    inputs: list[str],
    expect: str | None,
    max_error: float | None,
    rank_first: bool | None,
    baseline: Path | None,
    tolerance: str | None,
    junit: Path | None,
    min_rounds: int | None,
    flow: list[int] | None,
    algo: str | None,
    param: list[str] | None,
    bpf: str | None,
    jobs: int | None,
    json_out: Path | None,
    config_file: Path | None,
    quiet: bool,
    strict: bool | None = None,
    allow_ambiguous: bool | None = None,
    allow_unknown: bool | None = None,
    gates: dict | None = None,
) -> int:
    from hscc_trace import api
    from hscc_trace.analysis import results  # polars, numba, plotly: only when a command needs them

    t0 = time.perf_counter()
    cfg = config.with_overrides(config.load(config_file), bpf=bpf, jobs=jobs)
    c = cfg.check
    kw: dict = {}
    if expect is not None:
        kw["expect"] = expect
    if max_error is not None:
        if max_error < 0:
            raise UsageError(f"--max-error must be >= 0, got {max_error}")
        kw["max_error"] = max_error
    if rank_first is not None:
        kw["rank_first"] = rank_first
    if min_rounds is not None:
        if min_rounds < 1:
            raise UsageError(f"--min-rounds must be >= 1, got {min_rounds}")
        kw["min_rounds"] = min_rounds
    if baseline is not None:
        kw["baseline"] = str(baseline)
    if junit is not None:
        kw["junit"] = str(junit)
    if strict is not None:
        kw["strict"] = strict
    if allow_ambiguous is not None:
        kw["allow_ambiguous"] = allow_ambiguous
    if allow_unknown is not None:
        kw["allow_unknown"] = allow_unknown
    c = replace(c, **kw)
    # a folder of captures may carry its own expectations (an hscc-trace.toml inside it)
    own = Path(cfg.source).resolve() if cfg.source and os.path.isfile(cfg.source) else None
    folder_exps = tuple(
        e
        for d in inputs
        if os.path.isdir(d) and (Path(d) / config.CONFIG_NAME).resolve() != own  # (not twice)
        for e in config.folder_expectations(d)
    )
    if folder_exps:
        c = replace(c, expectations=(*folder_exps, *c.expectations))
    c = replace(c, tolerance=config.parse_tolerance(tolerance, c.tolerance))
    if gates is not None:
        from .analyze_cmd import group_options

        gates["rule"] = group_options(gates["group"], None, cfg.groups)
    if c.expect is None and not c.expectations and c.baseline is None and gates is None:
        raise UsageError(
            "check needs --expect ALGO, --baseline results.json, or [check] expectations in the configuration"
        )
    base_doc = results.read(c.baseline) if c.baseline is not None else None

    # Which algorithms to replay: the verdict names an algorithm only against every candidate
    # (the configured set, by default every algorithm analyze replays), plus the expected ones.
    expected = [c.expect] if c.expect else list(dict.fromkeys(e.expect for e in c.expectations if e.expect))
    if algo is not None:
        algos = config.parse_algorithms(algo)
    elif c.expect is not None or c.expectations or (gates is not None and base_doc is None):
        pool = list(cfg.algorithms) if cfg.algorithms is not None else api.default_algorithms()
        algos = tuple(dict.fromkeys([*pool, *expected]))
    elif base_doc is not None:
        # the baseline's labels ("reno[flavor=rfc]") name the algorithm before "["; the parameters
        # used now come from the configuration and --param
        known = set(api.algorithms()) | set(api.default_algorithms())
        stored = [str(a).split("[")[0] for a in base_doc.get("algorithms", [])]
        algos = tuple(dict.fromkeys([*expected, *(a for a in stored if a in known)]))
    else:
        algos = tuple(expected)
    if algos is not None:
        missing = [e for e in expected if e not in algos]
        if missing:
            raise UsageError(
                f"the algorithms replayed ({', '.join(algos)}; from --algo or the configuration) "
                f"must include the expected {', '.join(missing)}"
            )
    params = api.select_params(algos, cfg.params, config.parse_param_overrides(param))

    with progress_bar("checking", not quiet) as update:  # (streamed: flows' tables are not held, api.analyze_stream)
        run = api.analyze_stream(
            inputs, algos, params, bpf=cfg.filter, flows=flow, jobs=cfg.jobs, progress=update, report_flows=0
        )
    try:
        if gates is not None:  # (the groups' flows labelled as the gates' --group asks)
            from hscc_trace.analysis import groups

            groups.attach(run.analysis, *gates["rule"])
        doc = run.to_json()
    finally:
        run.stream.close()
    if json_out is not None:
        results.write(doc, json_out)

    verdicts: list[check.Verdict] = []
    if c.expect is not None or c.expectations:
        verdicts += check.check_expectations(doc, c, flow)
    if base_doc is not None:
        verdicts += check.check_baseline(
            doc, base_doc, c.tolerance, algorithms=expected or None, min_rounds=c.min_rounds, flows=flow
        )
    if gates is not None:
        from hscc_trace.analysis.group_check import check_groups

        base_groups = None
        if gates["max_stolen"] is not None:
            base_groups = api.group_input(gates["stolen_baseline"], *gates["rule"], bpf=cfg.filter, algorithms=algos)
        verdicts += check_groups(
            doc,
            min_jain=gates["min_jain"],
            max_stolen=gates["max_stolen"],
            baseline_groups=base_groups,
            friendliness=gates["friendliness"],
            regular=gates["regular"],
        )
    if not verdicts and run.failed:
        cls = InternalError if any(isinstance(m, InternalMessage) for m in run.failed.values()) else InputError
        raise cls("; ".join(run.failed.values()))
    # a capture only partly read is never judged silently: its warnings go to stderr, into every
    # verdict's message (terminal, JUnit, annotations, summary), JUnit <system-err> and GitHub
    # ::warning lines; with --strict it fails
    partial = check.partly_read(doc)
    for cap in doc["captures"]:
        for w in cap.get("warnings") or []:
            n = f" ({w['count']}×)" if w.get("count", 1) != 1 else ""
            typer.echo(f"hscc-trace: warning: {cap['path']}: {w['message']}{n}", err=True)
    verdicts = check.with_partial_reads(verdicts, partial, c.strict)

    for v in verdicts:
        if v.status == check.ERROR:
            typer.echo(f"hscc-trace: error: {v.message}", err=True)
    lines = check.terminal_lines(verdicts)
    for v, line in zip(verdicts, lines):
        if not quiet or v.status == check.FAIL:
            typer.echo(line)
    typer.echo(lines[-1] + f" in {time.perf_counter() - t0:.1f} s")

    if c.junit is not None:
        from hscc_trace.atomic import write_text

        write_text(c.junit, check.junit_xml(verdicts, time_s=time.perf_counter() - t0, warnings=partial), "JUnit XML")
    if check.in_github_actions():
        for line in check.github_annotations(verdicts, partial):
            typer.echo(line)
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            try:
                with open(summary, "a", encoding="utf-8") as f:
                    f.write(check.markdown_summary(verdicts, warnings=partial))
            except OSError as exc:
                typer.echo(f"hscc-trace: warning: cannot append to GITHUB_STEP_SUMMARY ({exc})", err=True)
    for msg in run.flow_failed:
        typer.echo(f"hscc-trace: error: {msg}", err=True)
    return exit_code_of([*run.failed.values(), *run.flow_failed], check.exit_code(verdicts))
