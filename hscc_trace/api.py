"""The library API: every operation of the CLI as a function, for notebooks and scripts.

>>> from hscc_trace import api
>>> cap = api.load("samples/reno-bdp/capture.pcap")           # model.Capture
>>> api.flows(cap)                                             # polars DataFrame, schema.FLOWS
>>> ev = api.events(cap, 1)                                    # model.FlowEvents (segments, acks, …)
>>> reps = api.replay(ev, ["reno", "cubic"])                   # {label: DataFrame}
>>> api.fit(ev, reps)                                          # schema.FIT_METRICS, ranked
>>> run = api.analyze(["samples/"], api.AnalyzeOptions(["reno", "fusion"], jobs=2))  # pipeline.Run
>>> a = run.analysis                                           # model.Analysis
>>> api.fit_table(a); api.flow_table(a)                        # DataFrames over every capture
>>> api.report(a, "report.html"); api.results(a)               # HTML report, JSON results dict
>>> api.check(a, api.CheckOptions(expect="reno", max_error=0.15)).verdicts  # check.Verdict per flow
>>> api.annotate("trace.pcap", "trace.pcapng", api.AnnotateOptions(["reno", "cubic"]))  # pcapng, comments
>>> api.groups(a)                                              # {capture: [groups.Group]}: Jain, shares …
>>> api.compare("reno-only.pcap", "ctcp-vs-reno.pcap").stolen  # bandwidth stolen (Compound TCP)

Nothing here prints; errors are :class:`~hscc_trace.errors.InputError` /
:class:`~hscc_trace.errors.UsageError` with a one-line message. The stages themselves live in
:mod:`hscc_trace.capture`, :mod:`hscc_trace.events`, :mod:`hscc_trace.replay` and
:mod:`hscc_trace.reports`; this module only composes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from hscc_trace.errors import InputError, UsageError

if TYPE_CHECKING:  # polars is imported where a table is made: `load` reads the capture while it loads
    import polars as pl

    from hscc_trace.analysis.options import AnalyzeOptions as AnalyzeOptions
    from hscc_trace.analysis.options import AnnotateOptions as AnnotateOptions
    from hscc_trace.analysis.options import CheckOptions as CheckOptions
    from hscc_trace.analysis.options import CheckResult as CheckResult
    from hscc_trace.analysis.pipeline import Run
    from hscc_trace.model import Analysis, Capture, FlowEvents
    from hscc_trace.replay.selection import Selection

PathLike = str | Path

#: re-exported from :mod:`hscc_trace.config` on first use (``hscc-trace check --help`` shows them)
_FROM_CONFIG = ("DEFAULT_MAX_ERROR", "DEFAULT_MIN_ROUNDS")


def __getattr__(name: str) -> Any:
    # the option classes, the model and the configuration are imported when first needed: `hscc-trace flows` imports
    # this module on its way to the flow table and needs neither
    if name in _FROM_CONFIG:
        from hscc_trace import config

        return getattr(config, name)
    if name in ("AnalyzeOptions", "AnnotateOptions", "CheckOptions", "CheckResult"):
        from hscc_trace.analysis import options

        return getattr(options, name)
    if name in ("Analysis", "Capture", "FlowEvents"):
        from hscc_trace import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- capture, flows, events ----------------------------------------------------------------------


def load(path: PathLike, bpf: str | None = None) -> Capture:
    """Read and decode a capture (pcap or pcapng, optionally gzip'ed); ``bpf`` filters records."""
    from hscc_trace import flows as capture

    return capture.load(str(path), bpf=bpf)


def _capture(obj: Capture | PathLike, bpf: str | None = None) -> Capture:
    from hscc_trace.model import Capture

    return obj if isinstance(obj, Capture) else load(obj, bpf=bpf)


def flows(capture: Capture | PathLike, bpf: str | None = None) -> pl.DataFrame:
    """The flow (conversation) table of a capture: one row per TCP connection, schema.FLOWS."""
    return _capture(capture, bpf).flows


def events(capture: Capture | PathLike, flow_id: int, bpf: str | None = None) -> FlowEvents:
    """One flow's event streams (segments, ACKs, episodes, rounds) from the data sender's side."""
    from hscc_trace import events as _events

    cap = _capture(capture, bpf)
    ids = cap.flows["flow_id"].to_list() if cap.flows.height else []
    if int(flow_id) not in ids:
        have = (
            "no TCP flow"
            if not ids
            else f"only flow {ids[0]}"
            if len(ids) == 1
            else f"{len(ids)} flows, {ids[0]}–{ids[-1]}"
        )
        raise InputError(f"{cap.meta.path}: no flow {flow_id} (the capture has {have})")
    return _events.flow_events(cap, int(flow_id))


def all_events(capture: Capture | PathLike, bpf: str | None = None) -> dict[int, FlowEvents]:
    """Event streams of every flow of a capture, ``{flow_id: FlowEvents}``."""
    from hscc_trace import events as _events

    return _events.all_flow_events(_capture(capture, bpf))


# --- algorithms, replay, fit --------------------------------------------------------------------


def algorithms() -> list[str]:
    """Names of every registered algorithm (wrappers such as ``kyushu`` included), sorted."""
    from hscc_trace.replay import selection

    return selection.algorithms()


def default_algorithms() -> list[str]:
    """What `analyze` replays when no algorithm is named (:func:`hscc_trace.replay.selection.default_algorithms`)."""
    from hscc_trace.replay import selection

    return selection.default_algorithms()


def select(names: Iterable[str] | None = None, params: dict[str, dict[str, Any]] | None = None) -> Selection:
    """Validate algorithm names and parameter overrides (:func:`hscc_trace.replay.selection.select`)."""
    from hscc_trace.replay import selection

    return selection.select(names, params)


def select_params(
    names: Sequence[str] | None, configured: dict[str, dict[str, Any]], given: dict[str, dict[str, Any]] | None = None
) -> dict[str, dict[str, Any]]:
    """Parameter overrides for a run of ``names`` (:func:`hscc_trace.replay.selection.select_params`).

    Without configured tables the registry has nothing to decide (it only drops the tables of
    registered algorithms the run does not replay): the overrides given are the answer, and the
    algorithm modules — and numba, which their hooks import — are not imported here (≈ 0.35 s
    of single-core start-up that ``analyze`` then spends while its reader thread runs)."""
    if not configured:
        from hscc_trace import config

        return config.merge_params({}, given or {})
    from hscc_trace.replay import selection

    return selection.select_params(names, configured, given)


def replay(
    ev: FlowEvents, algorithms: Sequence[str] | None = None, params: dict[str, dict[str, Any]] | None = None
) -> dict[str, pl.DataFrame]:
    """Replay algorithms on one flow's events: ``{label: DataFrame}`` (schema.REPLAY_BASE + signals).

    Open-loop: each table says what the algorithm *would have set* given the trace's ACKs, RTTs
    and losses, not what the network would then have done (docs/replay.md).
    """
    from hscc_trace.replay import engine, selection

    return engine.replay_flow(ev, selection.resolved(algorithms, params))


def empty_fit() -> pl.DataFrame:
    """An empty schema.FIT_METRICS table (a flow with nothing to fit)."""
    from hscc_trace import schema

    return schema.empty(schema.FIT_METRICS)


def fit(ev: FlowEvents, replays: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Fit of every replay to the actual sender on cwnd-limited rounds: schema.FIT_METRICS, rank 1 first."""
    from hscc_trace.replay import metrics

    if not replays:
        return empty_fit()
    return metrics.fit(ev, replays)


# --- whole runs ------------------------------------------------------------------------------------


def analyze(
    paths: PathLike | Iterable[PathLike], options: AnalyzeOptions | None = None, *, progress: Any = None
) -> Run:
    """Analyze captures (files, or directories searched for captures) end to end: one
    :class:`hscc_trace.analysis.pipeline.Run` — ``.analysis`` (:class:`~hscc_trace.model.Analysis`),
    the inputs in order, ``.failed`` (unreadable captures), ``.flow_failed``, ``.errors`` — and,
    as ``options`` ask, the report, the JSON results and the exported tables written
    (``.written``, one line per file; ``.doc``, the results document). ``progress(done, total,
    text)`` is called after every task. Prints nothing."""
    return _analyze(paths, options, progress)


def _analyze(
    paths: PathLike | Iterable[PathLike], options: AnalyzeOptions | None, progress: Any, replay_labelled: bool = True
) -> Run:
    """:func:`analyze`; without ``replay_labelled`` a flow whose kernel truth names its algorithm
    is not replayed (:class:`hscc_trace.analysis.pipeline.Options`)."""
    import contextlib

    from hscc_trace.analysis.options import AnalyzeOptions

    o = options or AnalyzeOptions()
    algos, params, bpf, jobs, groups_cfg = _analyze_settings(o)
    rule = group_options(o.groups, o.window, groups_cfg) if o.bottleneck_groups else None
    if o.export is not None and o.export_format.lower().lstrip(".") not in ("parquet", "csv", "json", "ndjson"):
        raise UsageError(f"--export-format {o.export_format!r}: use parquet, csv, json or ndjson")
    if o.export is not None and not o.stream:
        raise UsageError("export writes each flow's tables as it finishes: it needs stream=True")
    stream = _stream(o) if o.stream else None
    try:
        run = _run(paths, select(algos, params), bpf, o.flows, jobs, progress, stream, replay_labelled)
    except BaseException:
        if stream is not None:
            stream.close()
        raise
    try:
        if o.strict and run.failed and not run.analysis.captures:
            raise InputError("; ".join(run.failed.values()))
        if rule is not None:
            from hscc_trace.analysis import groups as _groups

            _groups.attach(run.analysis, *rule)
        paths_read = [c.meta.path for c in run.analysis.captures]
        try:
            _outputs(run, o, jobs)
        except BaseException:  # the exported tables get their final folders even when the report
            if o.export is not None:  # or the JSON failed; that first error is the one reported
                with contextlib.suppress(Exception):
                    run.stream.finish_export(paths_read)
            raise
        if o.export is not None:
            files = run.stream.finish_export(paths_read)
            run.written.append(f"exported {len(files)} table(s) under {o.export}")
    except BaseException:
        if stream is not None:
            stream.close()
        raise
    return run


def _analyze_settings(o: AnalyzeOptions) -> tuple[Any, Any, str | None, int, Any]:
    """Algorithms, parameters, filter, lanes and ``[groups]`` of a run: ``o`` over the configuration."""
    from hscc_trace import config as _config

    text = o.algorithms if isinstance(o.algorithms, str) or o.algorithms is None else ",".join(o.algorithms)
    if o.config is False:
        if o.jobs is not None and o.jobs < 1:
            raise UsageError(f"jobs must be >= 1, got {o.jobs}")
        algos = _config.parse_algorithms(text) if isinstance(o.algorithms, str) else o.algorithms
        params = _param_overrides(o.params) if o.params is not None else None
        return algos, params, o.bpf, o.jobs or 1, _config.GroupsConfig()
    cfg = _config.with_overrides(
        _config.load(None if o.config is True else o.config), algorithms=text, bpf=o.bpf, jobs=o.jobs
    )
    params = select_params(cfg.algorithms, cfg.params, _param_overrides(o.params))
    return cfg.algorithms, params, cfg.filter, cfg.jobs, cfg.groups


def _stream(o: AnalyzeOptions) -> Any:
    """The :class:`hscc_trace.analysis.stream.Stream` that takes every finished flow of a streamed run."""
    from hscc_trace.analysis.stream import Stream

    report_flows = o.report_flows
    if report_flows is None:
        from hscc_trace.reports.html import DEFAULT_MAX_FLOWS

        report_flows = (o.report or {}).get("max_flows", DEFAULT_MAX_FLOWS)
    drawer = None
    if report_flows:
        from hscc_trace.reports.html import Drawer

        drawer = Drawer(**{**(o.report or {}), "max_flows": report_flows})
    return Stream(
        keep=report_flows,
        entries=o.entries,
        export=(o.export, o.export_format) if o.export is not None else None,
        drawer=drawer,
    )


def _run(
    paths: PathLike | Iterable[PathLike],
    sel: Selection,
    bpf: str | None,
    flows: Sequence[int] | None,
    jobs: int,
    progress: Any,
    stream: Any,
    replay_labelled: bool = True,
) -> Run:
    """``sel``: the algorithms and their parameters (:func:`select`)."""
    from hscc_trace.analysis import pipeline

    if jobs < 1:
        raise UsageError(f"jobs must be >= 1, got {jobs}")
    opts = pipeline.Options(
        algorithms=sel.names,
        params=sel.overrides,
        labels=sel.labels,
        values=sel.values,
        bpf=bpf,
        flows=tuple(int(f) for f in flows) if flows is not None else None,
        jobs=jobs,
        replay_labelled=replay_labelled,
    )
    return pipeline.run(_paths(paths), opts, progress=progress, stream=stream)


def _outputs(run: Run, o: AnalyzeOptions, jobs: int) -> None:
    """Write the report and the JSON results (the report in a second thread with ``jobs`` > 1: both
    only read the analysis, and the report's compression and the file hashing run without the
    GIL); ``run.written`` gains a line per file, ``run.doc`` the results document when one was made."""
    from hscc_trace.analysis import results as _results

    out, opts = o.output, dict(o.report or {})
    with _alongside(
        jobs > 1 and out is not None and bool(run.analysis.captures),
        lambda: report(run.analysis, out, **opts) if out is not None else None,
    ) as report_done:
        if o.json_out is not None or o.keep_results:
            run.doc = run.to_json(lazy=True)  # (a streamed run's flows are read back from its spool)
        if o.json_out is not None and run.doc is not None:
            _results.write(run.doc, o.json_out)
    if report_done:
        run.written.append(f"report: {out}")
    elif out is not None and run.analysis.captures:
        report(run.analysis, out, **opts)
        run.written.append(f"report: {out}")
    if o.json_out is not None:
        run.written.append(f"results: {o.json_out}")


@contextmanager
def _alongside(enabled: bool, fn: Any) -> Iterator[bool]:
    """With ``enabled``, run ``fn`` in a thread while the body runs; its exception is re-raised
    after the body. Yields whether ``fn`` runs (False: the caller runs it itself)."""
    import threading

    if not enabled:
        yield False
        return
    failure: list[BaseException] = []

    def target() -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread
            failure.append(exc)

    t = threading.Thread(target=target, name="hscc-report", daemon=True)
    t.start()
    try:
        yield True
    finally:
        t.join()
    if failure:
        raise failure[0]


def analyze_run(
    paths: PathLike | Iterable[PathLike],
    algorithms: Sequence[str] | None = None,
    params: dict[str, dict[str, Any]] | None = None,
    *,
    bpf: str | None = None,
    flows: Sequence[int] | None = None,
    jobs: int = 1,
    progress: Any = None,
    stream: Any = None,
) -> Run:
    """Deprecated: ``analyze(paths, AnalyzeOptions(algorithms, params, bpf=…, strict=False))``.
    Kept for callers that pass their own :class:`hscc_trace.analysis.stream.Stream` as
    ``stream`` (the corpus runner, tests of the stream)."""
    return _run(paths, select(algorithms, params), bpf, flows, jobs, progress, stream)


# --- tables over a whole analysis ---------------------------------------------------------------


def flow_table(analysis: Analysis) -> pl.DataFrame:
    """Every analyzed flow of every capture: ``capture`` + schema.FLOWS + ``best`` + ``best_mare``
    (the lowest error, null when nothing was fitted) + the verdict (schema.VERDICT)."""
    import polars as pl

    from hscc_trace import schema
    from hscc_trace.analysis.verdict import judge

    frames = []
    for cr in analysis.captures:
        for fr in cr.results:
            row = {c.name: fr.flow.get(c.name) for c in schema.FLOWS}
            best = _first_by_rank(fr.fit)
            if best is not None and best.get("mare") is None:
                best = None  # (no fit had a round to work with: no algorithm fits best)
            v = fr.verdict if fr.verdict is not None else judge(fr.events, fr.replays)
            frames.append(
                {
                    "capture": cr.meta.path,
                    **row,
                    "best": best["algo"] if best else None,
                    "best_mare": best["mare"] if best else None,
                    "verdict": v.cls,
                    "verdict_name": v.name,
                    "verdict_candidates": ", ".join(v.candidates) if v.cls == "ambiguous" else None,
                    "verdict_error": v.error,
                }
            )
    table_schema = {
        "capture": pl.String,
        **schema.polars_schema(schema.FLOWS),
        "best": pl.String,
        "best_mare": pl.Float64,
        **schema.polars_schema(schema.VERDICT),
    }
    if not frames:
        return pl.DataFrame(schema=table_schema)
    df = pl.DataFrame(frames, infer_schema_length=None)
    # (column by column, eagerly: a with_columns of casts plans a query, ≈ 0.2 ms a table)
    cols = [df.get_column(k) for k in table_schema]
    return pl.DataFrame([c if c.dtype == t else c.cast(t) for c, t in zip(cols, table_schema.values())])


def _first_by_rank(fit: pl.DataFrame) -> dict[str, Any] | None:
    """The row of ``fit`` that ``fit.sort("rank")`` puts first (None for no row), found without
    a sort where the ranks are unique and none is null (a fit's are): each eager polars sort
    plans a query (≈ 0.1 ms), once per flow. Uniqueness by numpy: ``Series.n_unique`` took
    ≈ 0.5 ms of a corpus worker's CPU per flow (≈ 10 µs in a loop of its own)."""
    import numpy as np

    if fit.height == 0:
        return None
    rank = fit.get_column("rank")
    if rank.null_count() == 0:
        r = rank.to_numpy()
        if np.unique(r).size == r.size:
            return fit.row(int(r.argmin()), named=True)
    return fit.sort("rank").row(0, named=True)


def fit_table(analysis: Analysis) -> pl.DataFrame:
    """Fit metrics of every flow of every capture: ``capture`` + schema.FIT_METRICS."""
    import polars as pl

    from hscc_trace import schema

    frames = [
        fr.fit.with_columns(pl.lit(cr.meta.path).alias("capture"))
        for cr in analysis.captures
        for fr in cr.results
        if fr.fit.height
    ]
    if not frames:
        return pl.DataFrame(schema={"capture": pl.String, **schema.polars_schema(schema.FIT_METRICS)})
    df = pl.concat([schema.conform(f, schema.FIT_METRICS, extra=True) for f in frames], how="diagonal_relaxed")
    return df.select(["capture", *[c.name for c in schema.FIT_METRICS]])


def flow_result(analysis: Analysis, flow_id: int, capture: int | str = 0):
    """One :class:`~hscc_trace.model.FlowResult` by flow id (and capture index or path)."""
    caps = analysis.captures
    if isinstance(capture, int):
        if not 0 <= capture < len(caps):
            raise InputError(f"no capture {capture} (the analysis has {len(caps)})")
        cr = caps[capture]
    else:
        match = [c for c in caps if c.meta.path == str(capture)]
        if not match:
            raise InputError(f"no capture {capture!r} in the analysis")
        cr = match[0]
    for fr in cr.results:
        if int(fr.flow["flow_id"]) == int(flow_id):
            return fr
    raise InputError(f"{cr.meta.path}: flow {flow_id} was not analyzed")


def results(analysis: Analysis, *, failed: dict[str, str] | None = None) -> dict[str, Any]:
    """The versioned JSON results document (see docs/results.md) as a dict."""
    from hscc_trace.analysis import results as _results

    return _results.to_dict(analysis, failed=failed)


def report(analysis: Analysis, path: PathLike, **options: Any) -> Path:
    """Write the self-contained HTML report; returns its path. ``options`` go to
    :func:`hscc_trace.reports.write_report` (``max_points``, ``full_resolution`` …)."""
    from hscc_trace import reports

    out = Path(path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        reports.write_report(analysis, out, **options)
    except OSError as exc:
        raise InputError(f"{out}: cannot write the report ({exc.strerror or exc})") from None
    return out


def figures(analysis: Analysis, flow_id: int, capture: int | str = 0) -> Any:
    """The report's Plotly figures for one flow (for notebooks: ``fig.show()``). A kept flow of a
    streamed run (``AnalyzeOptions(stream=True)``) is made whole first (:meth:`FlowResult.restored`):
    replayed again when its replays were released, read and analyzed again from its capture
    when it was drawn as it finished (slower; the capture must still be there). Needs plotly's
    Python package, the ``notebook`` extra (else :class:`~hscc_trace.errors.UsageError`)."""
    from hscc_trace import reports

    return reports.flow_figures(flow_result(analysis, flow_id, capture).restored())


def export(obj: Any, path: PathLike, **kw: Any) -> Path | None:
    """Write events, a replay or any table to parquet/csv/json by extension (:mod:`hscc_trace.analysis.export`);
    ``-`` writes CSV to standard output (returns None)."""
    from hscc_trace.analysis import export as _export

    return _export.write(obj, path, **kw)


def check(
    captures: PathLike | Iterable[PathLike] | Analysis | dict[str, Any],
    options: CheckOptions | None = None,
    *,
    progress: Any = None,
) -> CheckResult:
    """Judge captures as ``hscc-trace check`` does: expectations, a baseline and bottleneck-group
    gates (``options``, :class:`CheckOptions`); the captures (files or directories; a directory
    may carry its own ``hscc-trace.toml`` expectations) are analyzed streamed, replaying what the
    verdicts need. ``captures`` may also be an :class:`Analysis` or a results document, judged as
    it is. Writes ``options.junit`` and ``options.json_out`` when asked; prints nothing.
    ``progress(done, total, text)`` is called after every task. Raises
    :class:`~hscc_trace.errors.UsageError` for contradictory options and
    :class:`~hscc_trace.errors.InputError` when no capture could be read."""
    import time
    from dataclasses import replace

    from hscc_trace.analysis import results as _results

    t0 = time.perf_counter()
    from hscc_trace.analysis.options import CheckOptions
    from hscc_trace.model import Analysis

    o = options or CheckOptions()
    gates = _group_gates(o)
    cfg, c = _check_config(o, captures)
    if not isinstance(captures, (Analysis, dict)) and all(is_qlog(p) for p in _paths(captures) or [""]):
        return _check_qlog([str(p) for p in _paths(captures)], o, c, t0)
    if gates is not None:
        # the regular and reference flows: --regular, else [groups] reference, else reno
        gates["regular"] = o.regular or cfg.groups.reference or _default_reference()
        gates["rule"] = group_options(o.groups, None, replace(cfg.groups, reference=gates["regular"]))
        gates["bpf"] = cfg.filter
    if c.expect is None and not c.expectations and c.baseline is None and gates is None:
        raise UsageError(
            "check needs --expect ALGO, --baseline results.json, or [check] expectations in the configuration"
        )
    base_doc = _results.read(c.baseline) if c.baseline is not None else None
    expected = [c.expect] if c.expect else list(dict.fromkeys(e.expect for e in c.expectations if e.expect))
    failed: dict[str, str] = {}
    flow_failed: list[str] = []
    algos: tuple[str, ...] | None = None
    if isinstance(captures, (Analysis, dict)):
        if isinstance(captures, Analysis) and gates is not None:
            from hscc_trace.analysis import groups as _groups

            _groups.attach(captures, *gates["rule"])
        doc = captures if isinstance(captures, dict) else _results.to_dict(captures)
    else:
        algos = _check_algorithms(o, cfg, c, expected, base_doc, gates)
        doc, failed, flow_failed = _check_run(captures, o, cfg, algos, gates, progress)
    if o.json_out is not None:
        _results.write(doc, o.json_out)
    verdicts = _judge(doc, o, c, expected, base_doc, gates, algos)
    return _check_result(doc, verdicts, c, failed, flow_failed, t0)


def _check_qlog(paths: list[str], o: CheckOptions, c: Any, t0: float) -> CheckResult:
    """`check FILE.qlog… --expect reno|cubic` (docs/quic.md): per QUIC connection whose qlog is the
    data sender's, pass when the best-fitting QUIC replay against the logged cwnd is the expected
    algorithm's and its median relative error is within ``max_error``; a receiver's trace is skipped."""
    from hscc_trace.analysis import check as _check
    from hscc_trace.config import DEFAULT_MAX_ERROR
    from hscc_trace.errors import HsccError

    if c.expect is None or c.baseline is not None or o.min_jain is not None or o.max_stolen is not None:
        raise UsageError("check of a qlog takes --expect reno|cubic (no baseline or group gates yet: docs/quic.md)")
    bound = c.max_error if c.max_error is not None else DEFAULT_MAX_ERROR
    test = f"expect {c.expect}"
    verdicts: list[Any] = []
    done: list[tuple[str, dict[str, Any] | None, str | None]] = []
    for path in paths:
        try:
            doc = qlog_summary(path, tuple(dict.fromkeys(("reno", "cubic", c.expect))), ("rfc", "aioquic"))
        except HsccError as exc:
            verdicts.append(_check.Verdict(path, None, "", test, _check.ERROR, str(exc)))
            done.append((path, None, str(exc)))
            continue
        done.append((path, doc, None))
        for i, conn in enumerate(doc["connections"]):
            label = f"connection {i} ({conn['vantage']})"
            mine = [r for r in conn["replays"] if r["algorithm"] == c.expect and r["median"] is not None]
            if not mine:
                why = "the data receiver's" if not conn["logs_the_sender"] else "without a logged cwnd"
                verdicts.append(
                    _check.Verdict(path, i, label, test, _check.SKIP, f"the qlog is {why}: nothing to judge")
                )
                continue
            r = min(mine, key=lambda r: (r["median"], r["p90"]))
            ok = (conn.get("best") or "").split("[")[0] == c.expect and r["median"] <= bound
            msg = (
                f"{c.expect}[{r['flavor']}] median {100 * r['median']:.2f} % (bound {100 * bound:.1f} %), "
                f"p90 {100 * r['p90']:.2f} %; best fit {conn.get('best')}"
            )
            metrics = {"median": r["median"], "p90": r["p90"], "best": conn.get("best")}
            verdicts.append(_check.Verdict.of_bound(path, i, label, test, ok, msg, metrics))
    rdoc = qlog_results(done, ["reno", "cubic"])
    if o.json_out is not None:
        write_results(rdoc, o.json_out)
    # a qlog only partly read is never judged silently: its warnings go into each verdict (strict: fail)
    partial = {q["path"]: q["warnings"] for q in rdoc["quic"] if q["warnings"]}
    res = _check_result(rdoc, _check.with_partial_reads(verdicts, partial, c.strict), c, {}, [], t0)
    res.warnings.extend(w for ws in partial.values() for w in ws)
    return res


def _group_gates(o: CheckOptions) -> dict[str, Any] | None:
    """The bottleneck-group gates asked for (hscc_trace.analysis.group_check), checked; None: none."""
    if o.min_jain is None and o.max_stolen is None and o.friendliness is None:
        if o.stolen_baseline is not None:
            raise UsageError("--stolen-baseline needs --max-stolen")
        return None
    if o.min_jain is not None and not 0 <= o.min_jain <= 1:
        raise UsageError(f"--min-jain must be within 0..1, got {o.min_jain}")
    if o.max_stolen is not None:
        if o.stolen_baseline is None:
            raise UsageError("--max-stolen needs --stolen-baseline (the run of regular flows only)")
        if not o.max_stolen >= 0:
            raise UsageError(f"--max-stolen must be >= 0, got {o.max_stolen}")
        if not Path(o.stolen_baseline).exists():
            raise UsageError(f"{o.stolen_baseline}: no such file or directory")
    bounds = None
    if o.friendliness is not None:
        from hscc_trace.analysis.group_check import parse_bounds

        try:
            bounds = parse_bounds(o.friendliness)
        except ValueError as exc:
            raise UsageError(f"--friendliness {exc}") from None
    return {"friendliness": bounds}


def _check_config(o: CheckOptions, captures: Any) -> tuple[Any, Any]:
    """The configuration with ``o`` applied, and its ``[check]`` table with the options and the
    expectations of the folders checked (a folder may carry its own hscc-trace.toml)."""
    import os
    from dataclasses import replace

    from hscc_trace import config as _config

    cfg = _config.with_overrides(_config.load(o.config), bpf=o.bpf, jobs=o.jobs)
    from hscc_trace.model import Analysis

    kw: dict[str, Any] = {}
    if o.expect is not None:
        kw["expect"] = o.expect
    if o.max_error is not None:
        if o.max_error < 0:
            raise UsageError(f"--max-error must be >= 0, got {o.max_error}")
        kw["max_error"] = o.max_error
    if o.min_rounds is not None and o.min_rounds < 1:
        raise UsageError(f"--min-rounds must be >= 1, got {o.min_rounds}")
    for name in ("rank_first", "min_rounds", "strict", "allow_ambiguous", "allow_unknown", "allow_outside_range"):
        if getattr(o, name) is not None:
            kw[name] = getattr(o, name)
    for name in ("baseline", "junit"):
        if getattr(o, name) is not None:
            kw[name] = str(getattr(o, name))
    c = replace(cfg.check, **kw)
    own = Path(cfg.source).resolve() if cfg.source and os.path.isfile(cfg.source) else None
    dirs = [] if isinstance(captures, (Analysis, dict)) else _paths(captures)
    folder_exps = tuple(
        e
        for d in dirs
        if os.path.isdir(d) and (Path(d) / _config.CONFIG_NAME).resolve() != own  # (not twice)
        for e in _config.folder_expectations(d)
    )
    if folder_exps:
        c = replace(c, expectations=(*folder_exps, *c.expectations))
    return cfg, replace(c, tolerance=_config.parse_tolerance(o.tolerance, c.tolerance))


def _paths(paths: PathLike | Iterable[PathLike]) -> list[PathLike]:
    return [paths] if isinstance(paths, (str, Path)) else list(paths)


def _check_algorithms(
    o: CheckOptions, cfg: Any, c: Any, expected: list[str], base_doc: dict[str, Any] | None, gates: Any
) -> tuple[str, ...] | None:
    """Which algorithms to replay: the verdict names an algorithm only against every candidate
    (the configured set, by default every algorithm analyze replays), plus the expected ones."""
    from hscc_trace import config as _config

    algos: tuple[str, ...] | None
    if o.algorithms is not None:
        algos = _config.parse_algorithms(o.algorithms) if isinstance(o.algorithms, str) else tuple(o.algorithms)
    elif c.expect is not None or c.expectations or (gates is not None and base_doc is None):
        pool = list(cfg.algorithms) if cfg.algorithms is not None else default_algorithms()
        algos = tuple(dict.fromkeys([*pool, *expected]))
    elif base_doc is not None:
        # the baseline's labels ("reno[flavor=rfc]") name the algorithm before "["; the parameters
        # used now come from the configuration and the overrides
        known = set(algorithms()) | set(default_algorithms())
        stored = [str(a).split("[")[0] for a in base_doc.get("algorithms", [])]
        algos = tuple(dict.fromkeys([*expected, *(a for a in stored if a in known)]))
    else:
        algos = tuple(expected)
    missing = [e for e in expected if algos is not None and e not in algos]
    if missing and algos is not None:
        raise UsageError(
            f"the algorithms replayed ({', '.join(algos)}; from --algo or the configuration) "
            f"must include the expected {', '.join(missing)}"
        )
    return algos


def _param_overrides(given: Sequence[str] | dict[str, dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    from hscc_trace import config as _config

    if isinstance(given, dict):
        return given
    return _config.parse_param_overrides(list(given) if given else None)


def _check_run(
    captures: Any, o: CheckOptions, cfg: Any, algos: tuple[str, ...] | None, gates: Any, progress: Any
) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """Analyze the captures streamed (flows' tables are not held): the results document, the
    unreadable captures and the flows that could not be analyzed."""
    from hscc_trace.analysis.options import AnalyzeOptions

    params = select_params(algos, cfg.params, _param_overrides(o.params))
    run = analyze(
        captures,
        AnalyzeOptions(
            algos, params, bpf=cfg.filter, flows=o.flows, jobs=cfg.jobs, strict=False, stream=True, report_flows=0
        ),
        progress=progress,
    )
    try:
        if gates is not None:  # (the groups' flows labelled as the gates' groups ask)
            from hscc_trace.analysis import groups as _groups

            _groups.attach(run.analysis, *gates["rule"])
        doc = run.to_json()
    finally:
        run.stream.close()
    return doc, run.failed, run.flow_failed


def _judge(
    doc: dict[str, Any],
    o: CheckOptions,
    c: Any,
    expected: list[str],
    base_doc: dict[str, Any] | None,
    gates: Any,
    algos: tuple[str, ...] | None,
) -> list[Any]:
    """Every verdict: expectations, then the baseline, then the group gates."""
    from hscc_trace.analysis import check as _check

    verdicts: list[Any] = []
    if c.expect is not None or c.expectations:
        verdicts += _check.check_expectations(doc, c, o.flows)
    if base_doc is not None:
        verdicts += _check.check_baseline(
            doc, base_doc, c.tolerance, algorithms=expected or None, min_rounds=c.min_rounds, flows=o.flows
        )
    if gates is not None:
        from hscc_trace.analysis.group_check import check_groups

        base_groups = None
        if o.max_stolen is not None:
            base_groups = group_input(o.stolen_baseline, *gates["rule"], bpf=gates["bpf"], algorithms=algos)
        verdicts += check_groups(
            doc,
            min_jain=o.min_jain,
            max_stolen=o.max_stolen,
            baseline_groups=base_groups,
            friendliness=gates["friendliness"],
            regular=gates["regular"],
        )
    return verdicts


def _check_result(
    doc: dict[str, Any], verdicts: list[Any], c: Any, failed: dict[str, str], flow_failed: list[str], t0: float
) -> CheckResult:
    """The verdicts with partial reads folded in, their lines and JUnit XML (written), the exit code.

    A capture only partly read is never judged silently: its warnings go into every verdict's
    message (terminal, JUnit, annotations, summary) and JUnit ``<system-err>``; with ``strict`` it fails."""
    import time

    from hscc_trace.analysis import check as _check
    from hscc_trace.errors import InternalError, InternalMessage, exit_code_of

    if not verdicts and failed:
        cls = InternalError if any(isinstance(m, InternalMessage) for m in failed.values()) else InputError
        raise cls("; ".join(failed.values()))
    partial = _check.partly_read(doc)
    warnings = [
        f"{cap['path']}: {w['message']}" + (f" ({w['count']}×)" if w.get("count", 1) != 1 else "")
        for cap in doc["captures"]
        for w in cap.get("warnings") or []
    ]
    verdicts = _check.with_partial_reads(verdicts, partial, c.strict)
    junit = None
    if c.junit is not None:
        from hscc_trace.atomic import write_text

        junit = _check.junit_xml(verdicts, time_s=time.perf_counter() - t0, warnings=partial)
        write_text(c.junit, junit, "JUnit XML")
    from hscc_trace.analysis.options import CheckResult

    return CheckResult(
        verdicts=verdicts,
        doc=doc,
        warnings=warnings,
        partial=partial,
        flow_errors=list(flow_failed),
        lines=_check.terminal_lines(verdicts),
        junit=junit,
        exit_code=exit_code_of([*failed.values(), *flow_failed], _check.exit_code(verdicts)),
        github=_check.in_github_actions(),
    )


def annotate(capture: PathLike, out: PathLike | Any, options: AnnotateOptions | None = None) -> Any:
    """Write ``capture`` to ``out`` (a path, ``.gz`` for gzip, or a binary stream) as pcapng with
    packet comments — each flow's verdict at its first packet, each congestion episode's start and
    end, where the replay of the named algorithm and the sender part ways — every packet unchanged
    (docs/annotate.md; ``options``: :class:`AnnotateOptions`). Returns
    :class:`hscc_trace.analysis.annotate.Annotated`."""
    from hscc_trace.analysis import annotate as _annotate
    from hscc_trace.analysis.options import AnnotateOptions

    o = options or AnnotateOptions()
    return _annotate.annotate(
        capture,
        out,
        o.algorithms,
        o.params,
        bpf=o.bpf,
        flows=o.flows,
        prefix=_annotate.PREFIX if o.prefix is None else o.prefix,
        tolerance=o.tolerance,
        agree_rounds=_annotate.AGREE_ROUNDS if o.agree_rounds is None else o.agree_rounds,
    )


# --- bottleneck groups ------------------------------------------------------------------------------


def groups(analysis: Analysis, rule: Any = None, options: Any = None) -> dict[str, list]:
    """Capture path → its bottleneck groups (:class:`hscc_trace.analysis.groups.Group`): the
    flows sharing a bottleneck with their shares, Jain's index, friendliness … (docs/groups.md).
    ``rule``: a :class:`~hscc_trace.analysis.groups.GroupRule`; ``options``: a
    :class:`~hscc_trace.analysis.groups.GroupOptions`. The groups are kept on the captures, for
    :func:`results` and :func:`report`."""
    from hscc_trace.analysis import groups as _groups

    _groups.attach(analysis, rule, options)
    return {cr.meta.path: list(cr.groups or []) for cr in analysis.captures}


def group_options(group: Sequence[str] | None, window: float | None, cfg: Any = None) -> tuple[Any, Any]:
    """Bottleneck groups of one's own (``group``: flow ids or ``port=N`` per group) and the window
    of the shared time axis (``window``, seconds > 0) over the ``[groups]`` table (``cfg``: a
    :class:`hscc_trace.config.GroupsConfig`) as the (GroupRule, GroupOptions) of
    :mod:`hscc_trace.analysis.groups`."""
    from dataclasses import replace

    from hscc_trace import config as _config
    from hscc_trace.analysis import groups as _groups

    cfg = cfg or _config.GroupsConfig()
    given = list(group) if group else list(cfg.groups)
    try:
        specs = tuple(_groups.parse_group(g) for g in given) if given else None
    except ValueError as exc:
        raise UsageError(f"--group: {exc}") from None
    if window is not None and not window > 0:
        raise UsageError(f"--window must be positive, got {window}")
    rule = _groups.GroupRule(groups=specs)
    rule = replace(
        rule,
        **{k: getattr(cfg, k) for k in ("min_bytes", "min_duration_s", "min_overlap") if getattr(cfg, k) is not None},
    )
    opts = _groups.GroupOptions()
    if window is not None or cfg.window_s is not None:
        opts = replace(opts, window_s=window if window is not None else cfg.window_s)
    if cfg.reference is not None:
        opts = replace(opts, reference=cfg.reference)
    return rule, opts


def _default_reference() -> str:
    from hscc_trace.analysis import groups as _groups

    return _groups.DEFAULT_REFERENCE


def group_input(
    obj: Any,
    rule: Any = None,
    options: Any = None,
    *,
    bpf: str | None = None,
    algorithms: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """The group dicts (``Group.as_dict()``) of a results document (a dict, or a ``.json`` file
    written by ``analyze --json``), an :class:`Analysis`, or captures (paths: analyzed here,
    streamed — memory does not grow with the flows —, with ``algorithms``, default every
    registered one; ``rule``/``options`` as for :func:`groups`). Of captures, only the flows
    whose kernel truth (files beside the capture) does not name their algorithm are replayed:
    the replays serve only the verdict that labels a flow, and truth labels it first
    (:func:`hscc_trace.analysis.groups.flow_algo`)."""
    from hscc_trace.analysis import groups as _groups
    from hscc_trace.analysis import results as _results
    from hscc_trace.model import Analysis

    if isinstance(obj, (str, Path)) and str(obj).lower().endswith(".json"):
        return _groups.group_dicts(_results.read(obj))
    if isinstance(obj, (str, Path)) or (isinstance(obj, (list, tuple)) and obj and isinstance(obj[0], (str, Path))):
        from hscc_trace.analysis.options import AnalyzeOptions

        o = AnalyzeOptions(algorithms, bpf=bpf, stream=True, report_flows=0, entries=False)
        run = _analyze(obj, o, None, replay_labelled=False)
        try:
            _groups.attach(run.analysis, rule, options)
            return _groups.group_dicts(run.analysis)
        finally:
            run.stream.close()
    if isinstance(obj, Analysis):
        _groups.attach(obj, rule, options)
    return _groups.group_dicts(obj)


def compare(
    baseline: Any,
    test: Any,
    *,
    regular: Any = None,
    rule: Any = None,
    options: Any = None,
    algorithms: Sequence[str] | None = None,
    bpf: str | None = None,
    config: Any = None,
) -> Any:
    """Bandwidth stolen (Compound TCP paper, Definition 1) from ``test``'s regular flows against
    ``baseline`` and every per-flow delta (:func:`hscc_trace.analysis.groups.compare`, a
    ``Comparison``: ``.stolen``, ``.groups``, ``.as_dict()``); either may be a capture path, a
    ``.json`` results file, a results document or an :class:`Analysis` (:func:`group_input`).
    ``regular``: an algorithm label or flow ids (None: ``[groups] reference`` of ``config``, else
    ``reno``). ``config``: a :class:`hscc_trace.config.Config` or a configuration file whose
    ``[groups]`` table gives the rule and options not passed (None: none, the built-in defaults);
    the reference of the friendliness ratios is the regular label."""
    from dataclasses import replace

    from hscc_trace import config as _config
    from hscc_trace.analysis import groups as _groups

    cfg = config if isinstance(config, _config.Config) else _config.load(config, search=False)
    if regular is None:
        regular = cfg.groups.reference or _default_reference()
    if rule is None or options is None:
        label = regular if isinstance(regular, str) else cfg.groups.reference
        r, opts = group_options(None, None, replace(cfg.groups, reference=label))
        rule = r if rule is None else rule
        options = opts if options is None else options
    kw: dict[str, Any] = {"bpf": bpf, "algorithms": algorithms}
    return _groups.compare(
        group_input(baseline, rule, options, **kw), group_input(test, rule, options, **kw), regular=regular
    )


# --- compiling ahead ------------------------------------------------------------------------------


def compile_kernels(captures: Iterable[PathLike] = (), *, on_step: Any = None) -> list[dict[str, Any]]:
    """Compile every kernel and replay loop into the cache now (``hscc-trace compile``).

    Runs the whole path — ``flows`` (also as pcapng and through a BPF filter), ``analyze`` with every registered algorithm, the HTML report,
    the JSON results and the packets table — over a generated capture
    (:mod:`hscc_trace.perf.warmup`) and over ``captures`` if given, with every kernel forced to
    compile (:mod:`hscc_trace.perf.firstuse`); later runs load the machine code from the cache
    and never run a kernel interpreted. ``on_step(text)`` is called before each step. Returns
    per kernel what happened in this process (:func:`hscc_trace.perf.firstuse.summary`); removes
    the stamps of kernels that are no more (:func:`hscc_trace.perf.firstuse.prune`).
    """
    import contextlib
    import json
    import tempfile

    from hscc_trace.capture.writer import write_commented
    from hscc_trace.flows.scan import flow_rows
    from hscc_trace.model import Capture
    from hscc_trace.perf import firstuse, warmup

    step = on_step or (lambda text: None)
    with tempfile.TemporaryDirectory(prefix="hscc-trace-compile-") as tmp, firstuse.mode("compile"):
        paths: list[PathLike] = [warmup.write_capture(Path(tmp) / "warmup.pcap"), *captures]
        step("`hscc-trace flows` of a generated capture, as pcap and pcapng, with and without a filter")
        with open(Path(tmp) / "warmup.pcapng", "wb") as ng:
            write_commented(str(paths[0]), ng, {})
        for scanned in (paths[0], ng.name):
            flow_rows(scanned)
            flow_rows(scanned, bpf="tcp")
        for path in paths:
            step(f"{path if path != paths[0] else 'a generated capture'}: flows")
            cap = load(path)
            flows(cap)
            step("events from the packets table")
            all_events(Capture(cap.meta, cap.packets, cap.flows))
            step("analyze with the default algorithms")
            a = analyze(path).analysis
            step("report and results")
            report(a, Path(tmp) / "report.html")
            json.dumps(results(a), default=str)
            ev = next(iter(all_events(cap).values()), None)
            if ev is not None:
                for flavor in ("linux", "rfc"):  # (a flavor may be a module of its own: cubic_rfc)
                    step(f"replay every algorithm, {flavor} flavor")
                    names = _every_algorithm()
                    replay(ev, names, {n: {"flavor": flavor} for n in names})
    # every kernel is declared now: this install's stamps of none go (another install's stay)
    kernels, mine = {k.name for k in firstuse.REGISTRY}, firstuse.install_hash()
    with contextlib.suppress(OSError):
        firstuse.prune(cache_folder() / "compiled", lambda name, i, _: name in kernels or i != mine)
    return firstuse.summary()


def _every_algorithm() -> list[str]:
    """The defaults (wrappers composed) and every other registered algorithm that is not a wrapper."""
    names = default_algorithms()
    for n in algorithms():
        if n not in names:
            try:
                select([n])
            except InputError:  # a wrapper alone (kyushu): composed in the defaults
                continue
            names.append(n)
    return names


# --- QUIC from qlog (docs/quic.md) ------------------------------------------------------------------


def qlog_summary(
    path: PathLike,
    algorithms: Sequence[str] = ("reno", "cubic"),
    flavors: Sequence[str] = ("rfc", "aioquic"),
    losses: str = "stack",
    departures: bool = False,
) -> dict[str, Any]:
    """Every QUIC connection of a qlog file: what was read, the importer's checks against the
    stack's logged values, and each QUIC replay's agreement with the logged window
    (:func:`hscc_trace.qlog.summary`; its ``_warnings`` key holds the :class:`~hscc_trace.errors.Warn` records)."""
    from hscc_trace.qlog import summary

    return summary(str(path), tuple(algorithms), tuple(flavors), losses, departures)


class QlogRun(NamedTuple):
    """What ``hscc-trace analyze FILE.qlog…`` prints and writes (:func:`qlog_analyze`)."""

    files: list[tuple[str, dict[str, Any] | None, str | None]]  # (path, qlog_summary or None, error or None)
    written: list[Path]  # the report and the results written, in that order


def qlog_analyze(
    paths: Sequence[PathLike],
    algorithms: Sequence[str] = ("reno", "cubic"),
    report_path: PathLike | None = None,
    json_out: PathLike | None = None,
) -> QlogRun:
    """``analyze`` over qlog files: each file's :func:`qlog_summary` (rfc and aioquic flavors, with
    the departures; a file that cannot be read is kept with its one-line error), then the HTML
    report (:func:`qlog_report`) and the results document (:func:`qlog_results`) when asked."""
    from hscc_trace.errors import HsccError

    files: list[tuple[str, dict[str, Any] | None, str | None]] = []
    for p in paths:
        try:
            files.append((str(p), qlog_summary(p, algorithms, ("rfc", "aioquic"), "stack", departures=True), None))
        except HsccError as exc:
            files.append((str(p), None, str(exc)))
    written = []
    if report_path is not None:
        written.append(qlog_report(files, report_path, algorithms))
    if json_out is not None:
        written.append(write_results(qlog_results(files, algorithms), json_out))
    return QlogRun(files, written)


def qlog_results(
    summaries: Sequence[tuple[str, dict[str, Any] | None, str | None]], algorithms: Sequence[str]
) -> dict[str, Any]:
    """The versioned results document (docs/results.md, ``quic`` since 2.1) of a run over qlog
    files: ``summaries`` holds ``(path, qlog_summary(path) or None, error or None)`` per file."""
    from hscc_trace import __version__
    from hscc_trace.analysis import results

    entries = [results.quic_entry(p, s, e) for p, s, e in summaries]
    doc = results.quic_document(entries, algorithms, __version__)
    results.validate(doc)
    return doc


#: `events FILE.qlog --kind K`: the capture's event kinds and the connection's tables they name
QLOG_EVENT_KINDS = {"acks": "acks", "segments": "sent", "episodes": "lost"}


def qlog_flow_rows(path: PathLike) -> tuple[list[dict[str, Any]], list[Any]]:
    """The QUIC connections of a qlog file as ``hscc-trace flows`` lists them
    (:func:`hscc_trace.qlog.flow_rows`: schema.QUIC_CONNECTIONS, RTT min/median/max), with the warnings."""
    from hscc_trace.qlog import flow_rows

    return flow_rows(str(path))


def qlog_events(path: PathLike, connection: int, kind: str = "acks") -> tuple[pl.DataFrame, list[Any]]:
    """One connection's event stream as ``hscc-trace events FILE.qlog`` writes it: ``acks`` (the ACK
    frames with RFC 9002 §5 RTT samples), ``segments`` (the packets sent), ``episodes`` (the stack's losses)."""
    if kind not in QLOG_EVENT_KINDS:
        raise UsageError(f"a qlog has no {kind!r} stream: --kind {' | '.join(QLOG_EVENT_KINDS)} (docs/quic.md)")
    return qlog_table(path, QLOG_EVENT_KINDS[kind], connection)


def qlog_replay(path: PathLike, connection: int, algorithms: Sequence[str], params: Sequence[str] = ()) -> FlowReplay:
    """``hscc-trace replay FILE.qlog``: the QUIC replays (:mod:`hscc_trace.qlog.replay`) of
    ``algorithms`` (``reno``, ``cubic``; ``ALGO.flavor=aioquic`` in ``params`` picks the flavor, other
    ``ALGO.NAME=VALUE`` override a parameter) over one connection, in long format with an ``algo``
    column, and each one's agreement with the logged window as the fit (rank 1 best)."""
    import json

    import polars as pl

    from hscc_trace.qlog import connections
    from hscc_trace.qlog.replay import agreement
    from hscc_trace.qlog.replay import replay as qreplay

    over: dict[str, dict[str, Any]] = {}
    for p in params:
        key, eq, val = p.partition("=")
        algo, dot, name = key.partition(".")
        if not (eq and dot and name):
            raise UsageError(f"--param {p!r}: expected ALGO.NAME=VALUE")
        try:
            v: Any = json.loads(val.lower() if val.lower() in ("true", "false") else val)
        except json.JSONDecodeError:
            v = val
        over.setdefault(algo, {})[name] = v
    conns, warns = connections(str(path))
    if not 0 <= connection < len(conns):
        raise InputError(f"{path}: no connection {connection} (the qlog has {len(conns)})")
    c = conns[connection]
    tables, fits = [], []
    for a in algorithms:
        o = dict(over.get(a, {}))
        flavor = str(o.pop("flavor", "rfc"))
        rep = qreplay(c, a, flavor, "stack", **o)
        label = f"{a}[{flavor}]"
        tables.append(rep.table.select(pl.lit(label).alias("algo"), pl.all()))
        fits.append({"algo": label, **agreement(rep)})
    fit = pl.DataFrame(fits).sort("median", nulls_last=True).with_row_index("rank", offset=1)
    return FlowReplay(pl.concat(tables, how="diagonal_relaxed"), fit, warns)


def qlog_report(
    summaries: Sequence[tuple[str, dict[str, Any] | None, str | None]], path: PathLike, algorithms: Sequence[str]
) -> Path:
    """Write the HTML report of a run over qlog files (``summaries`` as :func:`qlog_results`):
    per connection the logged window as the sender's own and each replay of ``algorithms``
    (rfc and aioquic flavors) beside it (:mod:`hscc_trace.reports.quic_html`)."""
    from hscc_trace.qlog import connections
    from hscc_trace.qlog.replay import replay as qreplay
    from hscc_trace.reports.quic_html import write_quic_report

    series: dict[tuple[str, int], dict[str, Any]] = {}
    for p, doc, _err in summaries:
        if doc is None or not any(c.get("replays") for c in doc["connections"]):
            continue
        conns, _ = connections(str(p))
        for i, (c, d) in enumerate(zip(conns, doc["connections"], strict=True)):
            if d.get("replays"):
                series[(p, i)] = {
                    f"{a}[{f}]": qreplay(c, a, f, "stack").table for a in algorithms for f in ("aioquic", "rfc")
                }
    return write_quic_report(list(summaries), series, path)


def write_results(doc: dict[str, Any], path: PathLike) -> Path:
    """Write a results document (:func:`results`, :func:`qlog_results`) as JSON, atomically."""
    from hscc_trace.analysis import results as _results

    return _results.write(doc, path)


def qlog_table(
    path: PathLike, kind: str, connection: int = 0, algorithm: str = "reno", flavor: str = "rfc", losses: str = "stack"
) -> tuple[pl.DataFrame, list[Any]]:
    """One table of one connection of a qlog file: ``sent``, ``acks``, ``lost``, ``detected``,
    ``metrics`` (:class:`hscc_trace.qlog.Connection`), or ``replay`` (``algorithm`` / ``flavor``
    against the logged cwnd, :func:`hscc_trace.qlog.replay.replay`); with the warnings."""
    from hscc_trace.qlog import connections
    from hscc_trace.qlog.replay import replay as qreplay

    conns, warns = connections(str(path))
    if not 0 <= connection < len(conns):
        raise InputError(f"{path}: no connection {connection} (the qlog has {len(conns)})")
    c = conns[connection]
    if kind == "replay":
        return qreplay(c, algorithm, flavor, losses).table, warns
    if kind not in ("sent", "acks", "lost", "detected", "metrics"):
        raise UsageError(f"unknown qlog table {kind!r}")
    return getattr(c, kind), warns


# --- what the commands need besides the above ------------------------------------------------------


class Settings(NamedTuple):
    """What a run uses once the options are applied over the configuration (:func:`settings`)."""

    algorithms: tuple[str, ...] | None  # None: every registered algorithm
    params: dict[str, dict[str, Any]] | None  # parameter overrides
    bpf: str | None  # BPF filter
    jobs: int  # parallel lanes
    groups: Any  # the [groups] table, a hscc_trace.config.GroupsConfig


def load_config(path: PathLike | None = None) -> Any:
    """The configuration (:class:`hscc_trace.config.Config`, docs/config.md): ``path``, else
    ``hscc-trace.toml`` or ``pyproject.toml``'s ``[tool.hscc-trace]`` searched upward from the
    working directory, else the defaults."""
    from hscc_trace import config as _config

    return _config.load(path)


def settings(options: AnalyzeOptions) -> Settings:
    """The algorithms, parameters, filter, lanes and ``[groups]`` table a run of ``options``
    uses: its fields over the configuration (``options.config``), as :func:`analyze` applies them."""
    return Settings(*_analyze_settings(options))


def is_qlog(path: PathLike) -> bool:
    """Whether ``path`` names a QUIC qlog file (``.qlog``, ``.sqlog``, optionally ``.gz``; docs/quic.md)."""
    from hscc_trace.qlog.reader import is_qlog_name

    return is_qlog_name(path)


def summary_lines(doc: dict[str, Any]) -> list[str]:
    """The terminal summary of a results document (what ``hscc-trace analyze`` prints): per
    capture its flows with goodput, RTT, verdict and evidence, its bottleneck groups and warnings."""
    from hscc_trace.analysis.summary import summary_lines as _lines

    return _lines(doc)


def write_text(path: PathLike, text: str, what: str = "the output") -> Path:
    """Write ``text`` to ``path`` as UTF-8, atomically (a temporary file renamed into place);
    :class:`~hscc_trace.errors.InputError` when it cannot be written."""
    from hscc_trace.atomic import write_text as _write_text

    return _write_text(path, text, what)


def write_comparison(doc: dict[str, Any], path: PathLike) -> Path:
    """Write the self-contained HTML page of a comparison (``compare(...).as_dict()``)."""
    from hscc_trace.reports.compare_html import write_comparison as _write

    return _write(doc, path)


def event_table(path: PathLike, flow_id: int, kind: str = "acks", bpf: str | None = None) -> tuple[pl.DataFrame, list]:
    """One flow's event table (``segments``, ``acks``, ``episodes`` or ``rounds``; docs/events.md)
    as ``hscc-trace events`` writes it, with the warnings of reading the capture and its flow."""
    from hscc_trace import events as _events
    from hscc_trace import flows as _flows

    cap = _flows.load(str(path), bpf=bpf)
    fe = _events.flow_events(cap, int(flow_id))
    return getattr(fe, kind), [*cap.warnings, *fe.warnings]


class FlowReplay(NamedTuple):
    """What ``hscc-trace replay`` writes and prints (:func:`replay_flow`)."""

    table: pl.DataFrame  # every replay in long format: ``algo`` + schema.REPLAY_BASE + signals
    fit: pl.DataFrame  # schema.FIT_METRICS, rank 1 first
    warnings: list  # of reading the capture and its flow


def replay_flow(
    path: PathLike,
    flow_id: int,
    algorithms: Sequence[str],
    params: Sequence[str] = (),
    *,
    bpf: str | None = None,
    compiled: bool = True,
) -> FlowReplay:
    """Replay ``algorithms`` (names, wrappers as ``wrapper+base``) with ``params``
    (``ALGO.NAME=VALUE``, validated before the capture is read) over one flow of a capture;
    ``compiled=False`` runs the hooks as plain Python (debugging; slow)."""
    from hscc_trace import events as _events
    from hscc_trace import flows as _flows
    from hscc_trace.analysis.export import replays_long
    from hscc_trace.replay import engine, metrics, registry

    resolved = registry.resolve_many(list(algorithms), list(params))
    cap = _flows.load(str(path), bpf=bpf)
    fe = _events.flow_events(cap, int(flow_id))
    reps = engine.replay_flow(fe, resolved, compiled=compiled)
    return FlowReplay(replays_long(reps), metrics.fit(fe, reps), [*cap.warnings, *fe.warnings])


def describe_algorithms(name: str | None = None, form: str = "text") -> str:
    """The replayable algorithms with their parameters (unit, default, source) and signals, as
    ``hscc-trace algorithms`` prints them: ``form`` ``text``, ``markdown`` (docs/algorithms.md's
    tables) or ``json`` (one object per parameter); ``name``: only that algorithm."""
    import json

    from hscc_trace.replay import registry

    if form == "markdown":
        return registry.markdown()
    if form == "json":
        rows = [r for r in registry.table_rows() if name is None or r["algorithm"] == name]
        return json.dumps(rows, indent=1, default=str)
    out: list[str] = []
    reg = registry.discover()
    for n in [name] if name else sorted(reg):
        a = registry.get(n)
        kind = f"  (wrapper: compose as {n}+BASE, e.g. {n}+highspeed)" if a.wraps else ""
        out += [f"{n} — {a.summary}{kind}", f"    implements: {a.citation}"]
        for flavor, decl in registry.variants(a):
            if flavor is not None:
                mod = decl.module.__name__.rpartition(".")[2]
                out.append(f"    flavor {flavor}{' (default)' if flavor == a.default_flavor else ''} ({mod}):")
            for p, d in registry.param_rows(decl):
                if flavor is not None and flavor != a.default_flavor and p.name in ("flavor", "iw"):
                    continue  # (common parameters: listed once, under the default flavor)
                d = ("on" if d else "off") if isinstance(d, bool) else d
                choices = f" [{'|'.join(p.choices)}]" if p.choices else ""
                out.append(f"    {n}.{p.name}={d}{choices}  {p.unit or '-'}  — {p.doc} ({p.source})")
        if a.signals:
            out.append("    signals: " + ", ".join(f"{s.name} [{s.unit or '-'}]" for s in a.signals))
        out.append("")
    return "\n".join(out)


def flow_rows(path: PathLike, bpf: str | None = None) -> Any:
    """The flow table's rows without polars (``hscc-trace flows``; :func:`hscc_trace.flows.scan.flow_rows`:
    ``.rows``, ``.warnings``, ``.format``, ``.packets_total`` …), read with 4 kB pages: the scan's
    few large arrays are written a little at a time, and a huge page is 2 MB to clear (docs/flows.md)."""
    from hscc_trace.flows.scan import flow_rows as _rows

    return _rows(path, bpf=bpf)


def kernels_status() -> str:
    """Which numba compiles the kernels, and the folder it caches them in."""
    import os

    from numba import __version__ as numba_version

    from hscc_trace.perf.cache import cache_root

    # (the CLI points numba at the hscc-trace cache folder unless NUMBA_CACHE_DIR is set: hscc_trace.perf.activate)
    return f"numba {numba_version}, cached in {os.environ.get('NUMBA_CACHE_DIR') or cache_root() / 'numba'}"


def cache_folder() -> Path:
    """The folder of the compiled-kernel cache (``HSCC_TRACE_CACHE_DIR``, else the user's cache folder)."""
    from hscc_trace.perf.cache import cache_root

    return cache_root()


def version() -> str:
    """The installed hscc-trace version."""
    from hscc_trace import __version__

    return __version__


def activate() -> None:
    """The process settings of one run of the ``hscc-trace`` command (:func:`hscc_trace.perf.activate`;
    never done by importing the library): for a program that acts as the command."""
    from hscc_trace import perf

    perf.activate()


@contextmanager
def watching_compilation(on_start: Any, on_end: Any, on_interpreted: Any) -> Iterator[None]:
    """While the block runs, report the kernels numba compiles, as the one kernel decorator sees
    them (:data:`hscc_trace.perf.firstuse.LISTENERS`): ``on_start(kernel_name)`` before a kernel
    is compiled for new argument types (not when a stamp says numba's cache holds it),
    ``on_end()`` after, and ``on_interpreted(kernel_name, expect_s)`` when a kernel not compiled
    yet runs as plain Python under the first-use rule on work expected to take ``expect_s``
    seconds. For a progress display, as ``hscc-trace`` shows on a terminal."""
    from hscc_trace.perf import firstuse

    def listener(event: str, kernel: Any, s: float) -> None:
        if event == "compiling":
            on_start(kernel.name)
        elif event == "compiled":
            on_end()
        elif event == "interpreted":
            on_interpreted(kernel.name, s)

    firstuse.LISTENERS.append(listener)
    try:
        yield
    finally:
        firstuse.LISTENERS.remove(listener)


# --- corpus mode ----------------------------------------------------------------------------------
# hscc_trace.corpus is the layer above this one (it drives api.analyze on Dask workers), so these
# entry points resolve it when called, through _corpus(), and never import it: the import graph
# stays one way (docs/design.md, tests/test_layout.py).


@dataclass(frozen=True)
class DatasetOptions:
    """The options of a corpus run, ``analyze --dataset`` (docs/corpus.md)."""

    #: captures, directories or URLs (FILE_OR_DIR...)
    inputs: list[str]
    #: the dataset folder (``--dataset``)
    dataset: Path
    #: algorithms and parameter overrides, as the configuration resolved them (:func:`settings`)
    algorithms: Any
    params: Any
    #: local Dask workers, >= 1 (None: one per core); ``scheduler``: an existing Dask scheduler's address
    workers: int | None = None
    scheduler: str | None = None
    #: a file listing more inputs, one per line (``--inputs-from``)
    inputs_from: Path | None = None
    #: threads per worker (``--jobs``), >= 1
    threads: int = 1
    #: seconds a capture may take before it is recorded as an error (None: no limit)
    timeout: float | None = None


def _corpus(module: str, extra: bool = True) -> Any:
    """``hscc_trace.corpus.<module>``, resolved at call time (the corpus layer sits above the
    API); with ``extra``, the corpus extra (Dask) is checked first."""
    import importlib

    if extra:
        importlib.import_module("hscc_trace.corpus").require()
    return importlib.import_module(f"hscc_trace.corpus.{module}")


def corpus_inputs(o: DatasetOptions) -> list[str]:
    """The captures a corpus run reads: ``o.inputs`` and the ``inputs_from`` list, directories
    expanded, protocols checked. UsageError on an empty list or a bad option."""
    cin = _corpus("inputs")
    items = list(o.inputs) + (cin.read_list(o.inputs_from) if o.inputs_from is not None else [])
    if not items:
        raise UsageError("no input given (FILE_OR_DIR... or --inputs-from)")
    if o.workers is not None and o.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {o.workers}")
    if o.timeout is not None and o.timeout <= 0:
        raise UsageError(f"--timeout-per-capture must be > 0, got {o.timeout}")
    items = cin.expand(items)
    cin.check_protocols(items)
    return list(items)


def corpus_run(o: DatasetOptions, items: Sequence[str], progress: Any = None) -> Any:
    """Analyze ``items`` (:func:`corpus_inputs`) into the dataset on Dask; returns the run's
    state (``corpus.runner.CorpusRun``: total, ok, skipped, errors). ``progress(state, summary)``
    is called as captures finish."""
    return _corpus("runner").run(
        items,
        o.dataset,
        o.algorithms,
        o.params,
        workers=o.workers,
        scheduler=o.scheduler,
        threads_per_worker=o.threads,
        timeout_per_capture=o.timeout,
        progress=progress,
    )


def census(dataset: PathLike, output: PathLike) -> None:
    """Write the census of a corpus dataset (self-contained HTML) to ``output``. InputError when
    ``dataset`` is not one."""
    dataset = Path(dataset)
    if not (dataset / "captures").is_dir() and not (dataset / "errors").is_dir():
        raise InputError(f"{dataset}: not a corpus dataset (no captures/ or errors/ folder)")
    _corpus("census", extra=False).write(dataset, Path(output))
