"""`hscc-trace analyze`: captures in; HTML report, JSON results and a terminal summary out."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer

from hscc_trace.errors import UsageError

from .common import exit_code_of, one_line_errors, progress_bar
from .typer_app import app


@app.command()
def analyze(
    inputs: list[str] | None = typer.Argument(
        None, metavar="FILE_OR_DIR...", help="Capture files (pcap, pcapng, .gz) or directories searched for them."
    ),
    output: Path | None = typer.Option(None, "-o", "--output", help="Write the self-contained HTML report here."),
    max_points: int = typer.Option(
        2000,
        "--max-points",
        help="Report: points per series in a flow's first view (first/min/max/last of max-points/4 time columns beyond it).",
    ),
    full_resolution: bool = typer.Option(
        True,
        "--full-resolution/--no-full-resolution",
        help="Report: hold every event in the page, so that zooming in shows each packet "
        "(about 9 MB per million events, budget 12: docs/report.md); --no-full-resolution for very large captures.",
    ),
    json_out: Path | None = typer.Option(
        None, "--json", help="Write the versioned JSON results here (docs/results.md)."
    ),
    algo: str | None = typer.Option(
        None,
        "--algo",
        help="Comma-separated algorithms to replay (default: all registered; see `hscc-trace algorithms`).",
    ),
    param: list[str] | None = typer.Option(None, "--param", help="Algorithm parameter ALGO.NAME=VALUE (repeatable)."),
    bpf: str | None = typer.Option(None, "--filter", help="BPF filter applied when reading, e.g. 'tcp port 5201'."),
    flow: list[int] | None = typer.Option(None, "--flow", help="Only this flow id (repeatable; default: every flow)."),
    jobs: int | None = typer.Option(
        None,
        "--jobs",
        "-j",
        help="Parallel lanes (threads in this process; default 1, or `jobs` in the configuration).",
    ),
    export_dir: Path | None = typer.Option(
        None, "--export", help="Also write every flow's events, replays and fit as tables under this folder."
    ),
    export_format: str = typer.Option(
        "parquet", "--export-format", help="Format for --export: parquet, csv, json or ndjson."
    ),
    config_file: Path | None = typer.Option(
        None,
        "--config",
        help="Configuration file (default: hscc-trace.toml or \\[tool.hscc-trace] in pyproject.toml, searched upward).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar and no summary; errors only."),
    dataset: Path | None = typer.Option(
        None,
        "--dataset",
        help="Corpus mode: write a Parquet dataset here on Dask, captures in batches, resuming (docs/corpus.md).",
    ),
    workers: int | None = typer.Option(
        None,
        "--workers",
        help="With --dataset: worker processes of the local Dask cluster (default: CPU count); --jobs is then threads per worker.",
    ),
    scheduler: str | None = typer.Option(
        None, "--scheduler", help="With --dataset: address of a running Dask scheduler, e.g. tcp://HOST:8786."
    ),
    inputs_from: Path | None = typer.Option(
        None,
        "--inputs-from",
        help="With --dataset: read more inputs (paths, globs, URLs) from this file, one per line.",
    ),
    timeout_per_capture: float | None = typer.Option(
        None,
        "--timeout-per-capture",
        help="With --dataset: seconds after which a capture is recorded as a timeout error.",
    ),
    group: list[str] | None = typer.Option(
        None,
        "--group",
        help="A bottleneck group of your own: flow ids or port=N, comma-separated (repeatable; default: "
        "the concurrent bulk flows, docs/groups.md).",
    ),
    window: float | None = typer.Option(
        None, "--window", help="Bottleneck groups: window of the shared time axis in seconds (default 1)."
    ),
) -> None:
    """Analyze captures: flows, event streams, replays of every algorithm, fit, report and JSON.

    Exit code 0, or 2 when any input could not be read or any flow could not be analyzed (the
    others are still analyzed and reported), 70 when that was an internal error.
    """
    from .compiling import compile_notice

    if dataset is not None:
        if output is not None or json_out is not None or export_dir is not None or flow or bpf:
            raise UsageError("--dataset cannot be combined with -o, --json, --export, --flow or --filter")
        from hscc_trace import api

        from .corpus_cmd import run_dataset

        with one_line_errors(), compile_notice():
            s = api.settings(api.AnalyzeOptions(algo, param or None, jobs=jobs, config=config_file or True))
            code = run_dataset(
                api.DatasetOptions(
                    inputs or [],
                    dataset,
                    s.algorithms,
                    s.params,
                    workers=workers,
                    scheduler=scheduler,
                    inputs_from=inputs_from,
                    threads=jobs or 1,
                    timeout=timeout_per_capture,
                ),
                quiet=quiet,
            )
        raise typer.Exit(code)
    if max_points < 8:
        raise UsageError(f"--max-points must be at least 8, got {max_points}")
    if workers is not None or scheduler is not None or inputs_from is not None or timeout_per_capture is not None:
        raise UsageError("--workers, --scheduler, --inputs-from and --timeout-per-capture need --dataset")
    if not inputs:
        raise UsageError("Missing argument 'FILE_OR_DIR...' (with --dataset, --inputs-from may give them)")
    from hscc_trace import api

    if any(api.is_qlog(i) for i in inputs):
        if not all(api.is_qlog(i) for i in inputs) or export_dir is not None or flow or bpf:
            raise UsageError(
                "qlog files are analyzed alone, with -o and --json at most: --export, --flow and "
                "--filter do not take QUIC connections yet (docs/quic.md)"
            )
        with one_line_errors():
            qcode = _analyze_qlog(inputs, (output, json_out), algo, quiet)
        raise typer.Exit(qcode)
    options = api.AnalyzeOptions(
        algorithms=algo,
        params=tuple(param) if param else None,
        bpf=bpf,
        flows=tuple(flow) if flow else None,
        jobs=jobs,
        config=config_file or True,
        strict=False,
        stream=True,  # every flow's outputs are written as it finishes; only its summary stays in memory
        report_flows=None if output is not None else 0,
        report={"max_points": max_points, "full_resolution": full_resolution},
        entries=json_out is not None or not quiet,
        export=export_dir,
        export_format=export_format,
        bottleneck_groups=True,
        groups=tuple(group) if group else None,
        window=window,
        output=output,
        json_out=json_out,
        keep_results=not quiet,
    )
    t0 = time.perf_counter()
    with one_line_errors(), compile_notice():
        with progress_bar("analyzing", not quiet) as update:
            run = api.analyze(inputs, options, progress=update)
        try:
            _print(run, quiet, t0)
        finally:
            run.stream.close()
    raise typer.Exit(exit_code_of(run.errors, 0))


def _analyze_qlog(inputs: list[str], outs: tuple[Path | None, Path | None], algo: str | None, quiet: bool) -> int:
    """`analyze FILE.qlog…`: each file's QUIC summary (`hscc-trace qlog FILE --departures`), and with
    -o the HTML report (the logged window and the replays), with --json the results document
    with one ``quic`` entry per file (docs/results.md).
    Exit 0, or 2 when a file could not be read (the others are still analyzed)."""
    import sys

    from hscc_trace import api

    from .qlog_cmd import echo_summary

    algos = tuple(a.strip() for a in (algo or "reno,cubic").split(",") if a.strip())
    run = api.qlog_analyze(inputs, algos, *outs)
    for path, doc, err in run.files:
        if doc is None:
            print(f"hscc-trace: error: {err}", file=sys.stderr)
            continue
        for w in doc.pop("_warnings"):
            print(f"hscc-trace: warning: {w}", file=sys.stderr)
        if not quiet:
            typer.echo(path)
            echo_summary(doc)
    if not quiet:
        for w in run.written:
            typer.echo(str(w))
    return 2 if any(doc is None for _, doc, _ in run.files) else 0


def _print(run: Any, quiet: bool, t0: float) -> None:
    from hscc_trace import api

    """What `analyze` prints of a run: its errors on stderr; unless ``quiet``, the summary and the
    files written."""
    for msg in run.errors:
        typer.echo(f"hscc-trace: error: {msg}", err=True)
    if quiet or run.doc is None:
        return
    for line in api.summary_lines(run.doc):
        typer.echo(line)
    n_flows = sum(len(c["flows"]) for c in run.doc["captures"])
    typer.echo(
        f"{len(run.analysis.captures)} capture(s), {n_flows} flow(s), {len(run.errors)} error(s), "
        f"{len(run.analysis.algorithms)} algorithm(s) in {time.perf_counter() - t0:.1f} s"
    )
    for w in run.written:
        typer.echo(w)
