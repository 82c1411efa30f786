"""The library API: every operation of the CLI as a function, for notebooks and scripts.

>>> from hscc_trace import api
>>> cap = api.load("samples/reno-bdp/capture.pcap")           # model.Capture
>>> api.flows(cap)                                             # polars DataFrame, schema.FLOWS
>>> ev = api.events(cap, 1)                                    # model.FlowEvents (segments, acks, …)
>>> reps = api.replay(ev, ["reno", "cubic"])                   # {label: DataFrame}
>>> api.fit(ev, reps)                                          # schema.FIT_METRICS, ranked
>>> a = api.analyze(["samples/"], algorithms=["reno", "fusion"], jobs=2)   # model.Analysis
>>> api.fit_table(a); api.flow_table(a)                        # DataFrames over every capture
>>> api.report(a, "report.html"); api.results(a)               # HTML report, JSON results dict
>>> api.check(a, expect="reno", max_error=0.15)                # list of check.Verdict
>>> api.annotate("trace.pcap", "trace.pcapng", ["reno", "cubic"])  # pcapng with packet comments
>>> api.groups(a)                                              # {capture: [groups.Group]}: Jain, shares …
>>> api.compare("reno-only.pcap", "ctcp-vs-reno.pcap").stolen  # bandwidth stolen (Compound TCP)

Nothing here prints; errors are :class:`~hscc_trace.errors.InputError` /
:class:`~hscc_trace.errors.UsageError` with a one-line message. The stages themselves live in
:mod:`hscc_trace.capture`, :mod:`hscc_trace.events`, :mod:`hscc_trace.replay` and
:mod:`hscc_trace.reports`; this module only composes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hscc_trace.errors import InputError, UsageError
from hscc_trace.model import Analysis, Capture, FlowEvents

if TYPE_CHECKING:  # polars is imported where a table is made: `load` reads the capture while it loads
    import polars as pl

    from hscc_trace.replay.selection import Selection

PathLike = str | Path


# --- capture, flows, events ----------------------------------------------------------------------


def load(path: PathLike, bpf: str | None = None) -> Capture:
    """Read and decode a capture (pcap or pcapng, optionally gzip'ed); ``bpf`` filters records."""
    from hscc_trace import flows as capture

    return capture.load(str(path), bpf=bpf)


def _capture(obj: Capture | PathLike, bpf: str | None = None) -> Capture:
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
    paths: PathLike | Iterable[PathLike],
    algorithms: Sequence[str] | None = None,
    params: dict[str, dict[str, Any]] | None = None,
    *,
    bpf: str | None = None,
    flows: Sequence[int] | None = None,
    jobs: int = 1,
    strict: bool = True,
) -> Analysis:
    """Analyze captures (files, or directories searched for captures) end to end.

    Captures that cannot be read are listed in ``Analysis.errors``; with ``strict`` (the default)
    an :class:`InputError` is raised instead when *no* capture could be read.
    """
    run = analyze_run(paths, algorithms, params, bpf=bpf, flows=flows, jobs=jobs)
    if strict and run.failed and not run.analysis.captures:
        raise InputError("; ".join(run.failed.values()))
    return run.analysis


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
):
    """Like :func:`analyze` but returns the :class:`hscc_trace.analysis.pipeline.Run` (analysis, inputs in
    order, per-capture errors), as the CLI uses it. ``progress(done, total, text)`` is called
    after every task. ``stream``: a :class:`hscc_trace.analysis.stream.Stream` that takes every
    finished flow (see :func:`analyze_stream`)."""
    from hscc_trace.analysis import pipeline

    if isinstance(paths, (str, Path)):
        paths = [paths]
    from hscc_trace.replay import selection

    sel = selection.select(algorithms, params)
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
    )
    return pipeline.run(list(paths), opts, progress=progress, stream=stream)


def analyze_stream(
    paths: PathLike | Iterable[PathLike],
    algorithms: Sequence[str] | None = None,
    params: dict[str, dict[str, Any]] | None = None,
    *,
    bpf: str | None = None,
    flows: Sequence[int] | None = None,
    jobs: int = 1,
    progress: Any = None,
    report_flows: int | None = None,
    entries: bool = True,
    export: PathLike | None = None,
    export_format: str = "parquet",
    report: dict[str, Any] | None = None,
):
    """:func:`analyze_run` with memory that does not grow with the number of flows (what
    ``hscc-trace analyze`` runs): each flow's outputs are written as it finishes — its tables
    under ``export`` (as :func:`hscc_trace.analysis.export.export_analysis` names them), its JSON
    results entry to a spool (with ``entries``) — and only a summary of it is kept
    (``CaptureResult.summaries``), plus, whole, the ``report_flows`` flows a report draws (default
    the report's ``max_flows``, 25; 0 without a report) in ``CaptureResult.results``, their replays
    released and made again by the report (docs/performance.md). In a run of one capture (not a
    pipe) the flows the report draws are known from the flow table: each is drawn as it finishes,
    with the options in ``report`` (those :func:`report` will be given, but ``max_flows``:
    ``report_flows``), and only its drawn section is kept (``FlowResult.drawn``; a report
    written with other options reads and analyzes such a flow again). Then::

        results.write(run.to_json(lazy=True), "results.json")   # flows copied from the spool
        api.report(run.analysis, "report.html", **report)        # the same report as analyze's
        run.stream.finish_export([c.meta.path for c in run.analysis.captures])
        run.stream.close()                                       # the spool's temporary file

    For every table of every flow in memory, use :func:`analyze`."""
    from hscc_trace.analysis.stream import Stream

    if report_flows is None:
        from hscc_trace.reports.html import DEFAULT_MAX_FLOWS

        report_flows = DEFAULT_MAX_FLOWS
    drawer = None
    if report_flows:
        from hscc_trace.reports.html import Drawer

        drawer = Drawer(**{**(report or {}), "max_flows": report_flows})
    st = Stream(
        keep=report_flows,
        entries=entries,
        export=(export, export_format) if export is not None else None,
        drawer=drawer,
    )
    try:
        return analyze_run(paths, algorithms, params, bpf=bpf, flows=flows, jobs=jobs, progress=progress, stream=st)
    except BaseException:
        st.close()
        raise


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
            best = fr.fit.sort("rank").row(0, named=True) if fr.fit.height else None
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
    return df.with_columns([pl.col(k).cast(t) for k, t in table_schema.items()])


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
    streamed run (:func:`analyze_stream`) is made whole first (:meth:`FlowResult.restored`):
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
    analysis: Analysis | dict[str, Any],
    expect: str | None = None,
    *,
    max_error: float | None = None,
    rank_first: bool = False,
    min_rounds: int | None = None,
    flows: Sequence[int] | None = None,
    baseline: PathLike | dict[str, Any] | None = None,
    tolerance: Any = None,
) -> list:
    """Per-flow verdicts (:class:`hscc_trace.analysis.check.Verdict`) as `hscc-trace check` computes them."""
    from dataclasses import replace

    from hscc_trace import config as _config
    from hscc_trace.analysis import check as _check
    from hscc_trace.analysis import results as _results

    doc = analysis if isinstance(analysis, dict) else _results.to_dict(analysis)
    cfg = _config.CheckConfig()
    kw: dict[str, Any] = {"expect": expect, "rank_first": rank_first}
    if max_error is not None:
        kw["max_error"] = max_error
    if min_rounds is not None:
        kw["min_rounds"] = min_rounds
    cfg = replace(cfg, **kw)
    verdicts = []
    if expect is not None:
        verdicts += _check.check_expectations(doc, cfg, flows)
    if baseline is not None:
        base = baseline if isinstance(baseline, dict) else _results.read(baseline)
        tol = (
            tolerance if isinstance(tolerance, _config.Tolerance) else _config.parse_tolerance(tolerance, cfg.tolerance)
        )
        verdicts += _check.check_baseline(
            doc, base, tol, algorithms=[expect] if expect else None, min_rounds=cfg.min_rounds, flows=flows
        )
    if expect is None and baseline is None:
        raise UsageError("check needs an expected algorithm or a baseline")
    return verdicts


def annotate(
    capture: PathLike,
    out: PathLike | Any,
    algorithms: Sequence[str] | None = None,
    params: dict[str, dict[str, Any]] | None = None,
    *,
    bpf: str | None = None,
    flows: Sequence[int] | None = None,
    prefix: str | None = None,
    tolerance: float | None = None,
    agree_rounds: int | None = None,
):
    """Write ``capture`` to ``out`` (a path, ``.gz`` for gzip, or a binary stream) as pcapng with
    packet comments — each flow's verdict at its first packet, each congestion episode's start and
    end, where the replay of the named algorithm and the sender part ways — every packet unchanged
    (docs/annotate.md). Returns :class:`hscc_trace.analysis.annotate.Annotated`."""
    from hscc_trace.analysis import annotate as _annotate

    return _annotate.annotate(
        capture,
        out,
        algorithms,
        params,
        bpf=bpf,
        flows=flows,
        prefix=_annotate.PREFIX if prefix is None else prefix,
        tolerance=tolerance,
        agree_rounds=_annotate.AGREE_ROUNDS if agree_rounds is None else agree_rounds,
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
    registered one; ``rule``/``options`` as for :func:`groups`)."""
    from hscc_trace.analysis import groups as _groups
    from hscc_trace.analysis import results as _results

    if isinstance(obj, (str, Path)) and str(obj).lower().endswith(".json"):
        return _groups.group_dicts(_results.read(obj))
    if isinstance(obj, (str, Path)) or (isinstance(obj, (list, tuple)) and obj and isinstance(obj[0], (str, Path))):
        run = analyze_stream(obj, algorithms, bpf=bpf, report_flows=0, entries=False)
        try:
            if run.failed and not run.analysis.captures:
                raise InputError("; ".join(run.failed.values()))
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
    regular: Any = "reno",
    rule: Any = None,
    options: Any = None,
    algorithms: Sequence[str] | None = None,
    bpf: str | None = None,
) -> Any:
    """Bandwidth stolen (Compound TCP paper, Definition 1) from ``test``'s regular flows against
    ``baseline`` and every per-flow delta (:func:`hscc_trace.analysis.groups.compare`, a
    ``Comparison``: ``.stolen``, ``.groups``, ``.as_dict()``); either may be a capture path, a
    ``.json`` results file, a results document or an :class:`Analysis` (:func:`group_input`).
    ``regular``: an algorithm label or flow ids."""
    from hscc_trace.analysis import groups as _groups

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
    per kernel what happened in it (:func:`hscc_trace.perf.firstuse.summary`).
    """
    import json
    import tempfile

    from hscc_trace.capture.writer import write_commented
    from hscc_trace.flows.scan import flow_rows
    from hscc_trace.perf import firstuse, warmup

    step = on_step or (lambda text: None)
    before = firstuse.snapshot()
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
            a = analyze(path)
            step("report and results")
            report(a, Path(tmp) / "report.html")
            json.dumps(results(a), default=str)
            ev = next(iter(all_events(cap).values()), None)
            if ev is not None:
                for flavor in ("linux", "rfc"):  # (a flavor may be a module of its own: cubic_rfc)
                    step(f"replay every algorithm, {flavor} flavor")
                    names = _every_algorithm()
                    replay(ev, names, {n: {"flavor": flavor} for n in names})
    return firstuse.summary(since=before)


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
