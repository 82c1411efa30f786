"""The option objects of :mod:`hscc_trace.api` and ``hscc-trace``: one frozen dataclass per
command, each field with its unit and default, and the result of a check. Import them from the
API (``api.AnalyzeOptions``, ``api.CheckOptions``, ``api.CheckResult``); they live here so that
importing the API stays cheap (making these classes costs about 20 ms of CPU, which the
``hscc-trace flows`` start-up does not pay)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PathLike = str | Path


@dataclass(frozen=True)
class AnalyzeOptions:
    """How :func:`analyze` runs — the options of ``hscc-trace analyze`` (docs/api.md). The
    defaults are the library's: every registered algorithm, no configuration file, every flow
    held in memory."""

    #: algorithms to replay, names or ``"reno,cubic"`` (None: the configured set, else every
    #: registered one, :func:`default_algorithms`)
    algorithms: str | Sequence[str] | None = None
    #: parameter overrides, ``{"cubic": {"beta": 0.7}}`` or ``["cubic.beta=0.7"]`` (over the configured ones)
    params: Sequence[str] | dict[str, dict[str, Any]] | None = None
    #: BPF filter applied when reading (tcpdump syntax, e.g. ``"tcp port 5201"``)
    bpf: str | None = None
    #: only these flow ids (None: every flow)
    flows: Sequence[int] | None = None
    #: parallel lanes, threads of this process, >= 1 (None: 1, or ``jobs`` in the configuration)
    jobs: int | None = None
    #: the configuration (docs/config.md): False none, True ``hscc-trace.toml`` /
    #: ``pyproject.toml`` searched upward from the working directory, or a file
    config: PathLike | bool = False
    #: raise :class:`~hscc_trace.errors.InputError` when *no* capture could be read (else the
    #: run's ``failed`` lists them all)
    strict: bool = True
    #: memory that does not grow with the flows: each flow's outputs are written as it finishes
    #: and only a summary of it is kept, plus, whole, the ``report_flows`` flows a report draws
    #: (``Run.stream`` must then be closed: ``run.stream.close()``)
    stream: bool = False
    #: with ``stream``: flows kept whole for the report (None: the report's ``max_flows``, 25; 0 without a report)
    report_flows: int | None = None
    #: options of :func:`report` (``max_points``, ``full_resolution`` …): the HTML report's, also
    #: used to draw a streamed run's flows as they finish
    report: dict[str, Any] | None = None
    #: with ``stream``: spool every flow's JSON results entry (for the results document)
    entries: bool = True
    #: with ``stream``: write every flow's events, replays and fit as tables under this folder
    export: PathLike | None = None
    #: format of ``export``: parquet, csv, json or ndjson
    export_format: str = "parquet"
    #: find the bottleneck groups (docs/groups.md) and keep them on the captures
    bottleneck_groups: bool = False
    #: with ``bottleneck_groups``: groups of one's own, flow ids or ``port=N`` per group
    groups: Sequence[str] | None = None
    #: with ``bottleneck_groups``: window of the shared time axis, seconds > 0 (None: 1 s or ``[groups]``)
    window: float | None = None
    #: write the self-contained HTML report here
    output: PathLike | None = None
    #: write the versioned JSON results here (docs/results.md)
    json_out: PathLike | None = None
    #: keep the results document on the run (``Run.doc``), as for a terminal summary
    keep_results: bool = False


@dataclass(frozen=True)
class CheckOptions:
    """What :func:`check` judges and how — the options of ``hscc-trace check``, one field per
    command-line option (docs/ci.md). A field left ``None`` takes its value from the
    configuration (``config``, else ``hscc-trace.toml`` / ``pyproject.toml`` searched upward from
    the working directory, ``[check]`` table), else the built-in default named here."""

    #: algorithm every judged flow should match (e.g. ``"reno"``); else ``[check] expect`` or
    #: ``[[check.expectations]]``
    expect: str | None = None
    #: bound on the expected algorithm's mare, a fraction >= 0 (default: the verdict's own
    #: threshold, :data:`hscc_trace.config.DEFAULT_MAX_ERROR` without a verdict)
    max_error: float | None = None
    #: also require the expected algorithm to fit best among all replayed (default False)
    rank_first: bool | None = None
    #: a stored results.json: fail when metrics regressed beyond ``tolerance``
    baseline: PathLike | None = None
    #: allowed regression, ``"mare=0.02,rmse_pkts=1,corr=0.05,goodput=0.1"`` (``none`` disables one)
    tolerance: str | None = None
    #: write JUnit XML here (one testsuite per capture, one testcase per flow)
    junit: PathLike | None = None
    #: cwnd-limited rounds a flow needs to be judged, >= 1 (default
    #: :data:`hscc_trace.config.DEFAULT_MIN_ROUNDS`); fewer: skipped
    min_rounds: int | None = None
    #: only these flow ids (default: every flow with enough data)
    flows: tuple[int, ...] | None = None
    #: algorithms to replay, names or ``"reno,cubic"`` (default: the configured set, else every
    #: algorithm analyze replays, plus the expected ones; with only a baseline: the baseline's)
    algorithms: str | Sequence[str] | None = None
    #: parameter overrides, ``["cubic.beta=0.7"]`` or ``{"cubic": {"beta": 0.7}}``, over the configured ones
    params: Sequence[str] | dict[str, dict[str, Any]] | None = None
    #: BPF filter applied when reading (tcpdump syntax)
    bpf: str | None = None
    #: parallel lanes, threads of this process, >= 1 (default 1, or ``jobs`` in the configuration)
    jobs: int | None = None
    #: also write the results document here (usable later as ``baseline``)
    json_out: PathLike | None = None
    #: configuration file (default: searched upward from the working directory)
    config: PathLike | None = None
    #: fail a capture that was only partly read (default False: a warning in every verdict)
    strict: bool | None = None
    #: pass a flow whose verdict is ambiguous but lists the expected algorithm (default False)
    allow_ambiguous: bool | None = None
    #: judge a flow whose verdict is unknown by ``max_error`` alone (default False)
    allow_unknown: bool | None = None
    #: judge a flow outside the conditions the verdict was validated on (default False: skipped)
    allow_outside_range: bool | None = None
    #: fail a bottleneck group whose Jain's fairness index is below this (0..1; docs/groups.md)
    min_jain: float | None = None
    #: fail a group whose regular flows lost more than this fraction (>= 0) against ``stolen_baseline``
    max_stolen: float | None = None
    #: for ``max_stolen``: the run of regular flows only (a capture or a results .json)
    stolen_baseline: PathLike | None = None
    #: bounds on each flow's goodput over its reno co-flows', ``"LO:HI"`` (e.g. ``"0.5:2"``)
    friendliness: str | None = None
    #: the regular and reference flows' algorithm label (group gates; None: ``[groups]
    #: reference`` of the configuration, else ``reno``)
    regular: str | None = None
    #: bottleneck groups of one's own: flow ids or ``port=N`` per group (default: ``[groups]``,
    #: else the concurrent bulk flows)
    groups: tuple[str, ...] | None = None


@dataclass(frozen=True)
class CheckResult:
    """What :func:`check` decided: the verdicts and everything ``hscc-trace check`` prints from them."""

    #: per-flow verdicts (:class:`hscc_trace.analysis.check.Verdict`), partial reads folded in
    verdicts: list[Any]
    #: the results document judged (schema: docs/results.md)
    doc: dict[str, Any]
    #: ``path: message (n×)`` per warning of a capture only partly read
    warnings: list[str]
    #: path → warnings of each capture only partly read
    partial: dict[str, list[str]]
    #: one-line errors of flows that could not be analyzed
    flow_errors: list[str]
    #: one terminal line per verdict, then the tally
    lines: list[str]
    #: the JUnit XML written to ``CheckOptions.junit`` (None: none asked for)
    junit: str | None
    #: 0 every verdict passed, 1 one failed or nothing was verified, 2 bad input, 70 a bug (docs/exit-codes.md)
    exit_code: int
    #: running in GitHub Actions (``GITHUB_ACTIONS=true``): annotations and a step summary are wanted
    github: bool = False

    @property
    def errors(self) -> list[str]:
        """The messages of the verdicts that are input errors."""
        from hscc_trace.analysis import check as _check

        return [v.message for v in self.verdicts if v.status == _check.ERROR]

    def verdict_lines(self, failures_only: bool = False) -> list[str]:
        """The terminal line of each verdict (only the failed ones with ``failures_only``), without the tally."""
        from hscc_trace.analysis import check as _check

        return [ln for v, ln in zip(self.verdicts, self.lines) if not failures_only or v.status == _check.FAIL]

    @property
    def tally(self) -> str:
        """``3 passed, 1 failed, …``: the last terminal line."""
        return self.lines[-1]

    def github_annotations(self) -> list[str]:
        """GitHub Actions ``::error``/``::warning`` lines for the verdicts and partial reads."""
        from hscc_trace.analysis import check as _check

        return _check.github_annotations(self.verdicts, self.partial)

    def markdown_summary(self) -> str:
        """The Markdown table for ``GITHUB_STEP_SUMMARY``."""
        from hscc_trace.analysis import check as _check

        return _check.markdown_summary(self.verdicts, warnings=self.partial)


@dataclass(frozen=True)
class AnnotateOptions:
    """How :func:`annotate` comments a capture — the options of ``hscc-trace annotate``
    (docs/annotate.md)."""

    #: algorithms to replay (None: every registered one)
    algorithms: Sequence[str] | None = None
    #: parameter overrides, ``{"cubic": {"beta": 0.7}}``
    params: dict[str, dict[str, Any]] | None = None
    #: BPF filter applied when reading (the output keeps only the packets it passes)
    bpf: str | None = None
    #: only these flow ids are analyzed and commented (None: every flow)
    flows: Sequence[int] | None = None
    #: the text every comment starts with (None: ``"hscc-trace: "``, :data:`hscc_trace.analysis.annotate.PREFIX`)
    prefix: str | None = None
    #: relative window error, a fraction > 0, above which the named algorithm's replay and the
    #: sender are said to part ways (None: the verdict's threshold of a fit, ``Rules.max_error``)
    tolerance: float | None = None
    #: rounds in a row, >= 1, within ``tolerance`` before they are said to agree again
    #: (None: 1, :data:`hscc_trace.analysis.annotate.AGREE_ROUNDS`)
    agree_rounds: int | None = None
