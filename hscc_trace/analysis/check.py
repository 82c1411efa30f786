"""Verdicts for `hscc-trace check`: expectations and baselines in, one verdict per flow out.

Everything here works on results documents (:mod:`hscc_trace.analysis.results`), so a fresh analysis and
a stored baseline are compared like for like.

Which flows are judged
    Every flow gets a verdict in the analysis (:mod:`hscc_trace.analysis.verdict`): identified,
    ambiguous, unknown or not enough data. An expectation passes when the verdict names the
    expected algorithm within the error bound (``max_error``; by default the verdict's own
    threshold); an ambiguous verdict that lists it passes only with ``allow_ambiguous`` and an
    unknown one only with ``allow_unknown``. A flow outside the conditions the verdict was
    validated on (its ``outside_range``: a rate, RTT, loss, vantage or ACK pattern beyond the
    tuning samples') is **skipped** as not verified unless ``allow_outside_range``. A flow
    with *not enough data* (too few cwnd-limited rounds: handshake only, a control connection, a receive-window- or
    application-limited transfer) is **skipped** with its reason, never passed and never
    failed; so is a capture in which every considered flow was skipped. ``--flow`` or an
    expectation's ``flows`` restricts the flows considered. A run in which nothing at all could
    be verified fails (exit 1), so a CI gate cannot go green by checking nothing.

Statuses: ``pass``, ``fail``, ``skip`` and ``error`` (the capture could not be read). The exit
code is 2 when any verdict is an error, else 1 when any failed or none passed, else 0 (see
:func:`exit_code`).

Outputs: JUnit XML (:func:`junit_xml`; one ``<testsuite>`` per capture, one ``<testcase>`` per
flow and expectation), GitHub Actions workflow commands (:func:`github_annotations`) and a
markdown job summary (:func:`markdown_summary`).
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Any

from hscc_trace.config import DEFAULT_MAX_ERROR, CheckConfig, Expectation, Tolerance

#: the verdict classes that name an algorithm (hscc_trace.analysis.verdict.NAMED; results are read
#: here without importing the analysis)
NAMED = ("identified", "behaves as")

PASS, FAIL, SKIP, ERROR = "pass", "fail", "skip", "error"
STATUSES = (PASS, FAIL, SKIP, ERROR)


@dataclass(frozen=True)
class Verdict:
    """The outcome of one test: one expectation (or baseline comparison) on one flow.

    ``flow_id`` is None for capture-level verdicts (unreadable capture, nothing judgeable,
    no baseline entry). ``metrics`` holds the numbers the message quotes.
    """

    capture: str  # capture path as given
    flow_id: int | None
    flow: str  # human label, e.g. "flow 1 10.0.0.1:40000 → 10.0.0.2:5201"
    test: str  # e.g. "expect reno", "baseline"
    status: str  # one of STATUSES
    message: str
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.flow}: {self.test}" if self.flow else self.test

    @classmethod
    def of_bound(
        cls,
        capture: str,
        flow_id: int | None,
        flow: str,
        test: str,
        ok: bool | None,
        message: str,
        metrics: dict[str, Any] | None = None,
    ) -> Verdict:
        """The verdict of a bound on one measured value: ``pass`` when ``ok``, ``fail`` when not,
        ``skip`` when None (the value could not be measured; ``message`` says why, and a skip
        carries no ``metrics``)."""
        if ok is None:
            return cls(capture, flow_id, flow, test, SKIP, message)
        return cls(capture, flow_id, flow, test, PASS if ok else FAIL, message, metrics or {})


# --- helpers on results documents ------------------------------------------------------------------


def _endpoint(addr: Any, port: Any) -> str:
    a = str(addr)
    return f"[{a}]:{port}" if ":" in a else f"{a}:{port}"


def flow_label(flow: dict[str, Any]) -> str:
    """``flow 1 10.0.0.1:40000 → 10.0.0.2:5201`` (data sender first)."""
    a = _endpoint(flow.get("src"), flow.get("sport"))
    b = _endpoint(flow.get("dst"), flow.get("dport"))
    if flow.get("sender_dir") == 1:
        a, b = b, a
    return f"flow {flow.get('flow_id')} {a} → {b}"


def fit_of(flow: dict[str, Any], algo: str) -> dict[str, Any] | None:
    """The flow's fit row for ``algo`` (None when it was not replayed)."""
    for row in flow.get("fit") or []:
        if row.get("algo") == algo:
            return row
    # labels with non-default parameters look like "reno[flavor=rfc]": accept the bare name
    matches = [r for r in flow.get("fit") or [] if str(r.get("algo", "")).split("[")[0] == algo]
    return matches[0] if len(matches) == 1 else None


def judgeable(flow: dict[str, Any], min_rounds: int, algo: str | None = None) -> tuple[bool, str]:
    """Whether a flow carries enough data to judge, and if not, why (one phrase with numbers)."""
    ev = flow.get("events") or {}
    segs = int(ev.get("segments") or 0)
    if segs == 0:
        return False, "no data segments (handshake or control only)"
    limited = int(ev.get("cwnd_limited_rounds") or 0)
    rounds = limited
    if algo is not None:
        row = fit_of(flow, algo)
        if row is not None and row.get("rounds") is not None:
            rounds = int(row["rounds"])
    if rounds < min_rounds:
        total = int(ev.get("rounds") or 0)
        return False, (
            f"{rounds} cwnd-limited round{'s' if rounds != 1 else ''} of {total} "
            f"(need >= {min_rounds}): too little data to judge"
        )
    return True, ""


def _fmt(x: Any, digits: int = 3) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float):
        return f"{x:.{digits}f}" if math.isfinite(x) else "n/a"
    return str(x)


def _select(flows: list[dict[str, Any]], only: Iterable[int] | None) -> list[dict[str, Any]]:
    if only is None:
        return flows
    want = set(only)
    return [f for f in flows if f.get("flow_id") in want]


# --- expectations -----------------------------------------------------------------------------------


def _matches(label: str | None, algo: str) -> bool:
    """Whether a verdict's name (a label, e.g. ``cubic[flavor=rfc]``) is the expected algorithm:
    the same label, or the same name when the expectation gives no parameters."""
    if label is None:
        return False
    return label == algo or ("[" not in algo and label.split("[")[0] == algo)


def _expect_verdict(path: str, flow: dict[str, Any], exp: Expectation, min_rounds: int) -> Verdict:
    """One expectation on one flow, judged on the flow's verdict (results 1.3): pass when the
    verdict names the expected algorithm (and its error is within ``max_error``); an ambiguous
    verdict that lists it passes only with ``allow_ambiguous``, an unknown one only with
    ``allow_unknown`` (then ``max_error`` alone decides); ``not enough data`` is skipped.
    Results without verdicts (1.0–1.2) are judged by ``max_error`` (and ``rank_first``) alone."""
    label = flow_label(flow)
    algo = exp.expect or ""
    v = flow.get("verdict")
    cands = list(v.get("candidates") or []) if v is not None else []
    in_verdict = v is not None and v.get("class") in (*NAMED, "ambiguous") and any(_matches(c, algo) for c in cands)
    # The bound on the expected algorithm's error: --max-error when given. Without it, a verdict
    # that names or lists the algorithm has already held it to the threshold that applies to it,
    # so only an unknown verdict (--allow-unknown) or results without verdicts (< 1.3) are
    # bounded here, by DEFAULT_MAX_ERROR.
    own_bound = exp.max_error is None and in_verdict
    bound = exp.max_error if exp.max_error is not None else DEFAULT_MAX_ERROR
    limit = "within the verdict's threshold" if own_bound else f"mare <= {_fmt(bound)}"
    test = f"expect {algo} ({limit}" + (", rank 1)" if exp.rank_first else ")")
    if v is not None and v.get("class") == "not enough data":
        test = f"expect {algo}"
        return Verdict(path, flow.get("flow_id"), label, test, SKIP, f"not enough data: {v.get('reason')}")
    if v is not None and v.get("outside_range") and not exp.allow_outside_range:  # (results 1.4)
        return Verdict(
            path,
            flow.get("flow_id"),
            label,
            test,
            SKIP,
            "not verified: outside the range the verdict was validated on ("
            + "; ".join(v["outside_range"])
            + "; --allow-outside-range judges it)",
        )
    ok, why = judgeable(flow, min_rounds, algo)
    if not ok and (v is None or v.get("basis") != "rate"):
        return Verdict(path, flow.get("flow_id"), label, test, SKIP, why)
    row = fit_of(flow, algo)
    if row is None:
        return Verdict(
            path,
            flow.get("flow_id"),
            label,
            test,
            ERROR,
            f"{algo} was not replayed on this flow (algorithms: "
            f"{', '.join(r['algo'] for r in flow.get('fit') or []) or 'none'})",
        )
    mare, rank = row.get("mare"), row.get("rank")
    n_algos = len(flow.get("fit") or [])
    metrics = {
        "algo": algo,
        "mare": mare,
        "max_error": bound,
        "rank": rank,
        "algorithms": n_algos,
        "rounds": row.get("rounds"),
        "rmse_pkts": row.get("rmse_pkts"),
        "corr": row.get("corr"),
        "best": flow.get("best"),
        "verdict": v.get("class") if v else None,
        "named": v.get("name") if v else None,
    }
    name = row.get("algo") or algo  # the label, with non-default parameters, e.g. cubic[flavor=rfc]
    err = mare
    if in_verdict:  # the error the verdict measured (over every round for a rate-based verdict)
        i = next(k for k, c in enumerate(cands) if _matches(c, algo))
        errs = list(v.get("candidate_errors") or [])  # type: ignore[union-attr]
        err = errs[i] if i < len(errs) else mare
    problems: list[str] = []
    notes: list[str] = []
    if v is not None:
        cls = v.get("class")
        if cls in NAMED and not _matches(v.get("name"), algo):
            equiv = [e for e in v.get("equivalent") or [] if _matches(e, algo)]
            if equiv and exp.allow_ambiguous:
                notes.append(f"named {v.get('name')}, indistinguishable from {algo} on this flow (allowed)")
            elif equiv:
                problems.append(
                    f"named {v.get('name')}: {algo} cannot be told apart from it on this flow (--allow-ambiguous "
                    "accepts that)"
                )
            else:
                did = "was identified as" if cls == "identified" else "behaves as"
                problems.append(f"the sender {did} {v.get('name')}, not {algo}")
        elif cls == "ambiguous":
            listed = any(_matches(c, algo) for c in v.get("candidates") or [])
            if not listed:
                problems.append(
                    f"ambiguous between {', '.join(v.get('candidates') or [])}, which does not include {algo}"
                )
            elif exp.allow_ambiguous:
                notes.append(f"ambiguous between {', '.join(v.get('candidates') or [])} (allowed)")
            else:
                problems.append(
                    f"ambiguous between {', '.join(v.get('candidates') or [])}: {algo} is not shown to fit best "
                    "(--allow-ambiguous accepts that)"
                )
        elif cls == "unknown":
            if exp.allow_unknown:
                notes.append("verdict unknown (allowed: judged by max_error alone)")
            else:
                problems.append(f"verdict unknown — {v.get('reason')} (--allow-unknown judges by --max-error alone)")
    if own_bound:
        pass  # (within its threshold: the verdict named or listed it)
    elif err is None:
        problems.append(f"{name} mare undefined")
    elif err > bound:
        problems.append(f"{name} mare {_fmt(err)} > {_fmt(bound)}")
    if exp.rank_first and rank != 1 and not (v is not None and v.get("basis") == "rate"):
        problems.append(f"{name} ranks {_fmt(rank)}, not 1")
    detail = (f"rank {_fmt(rank)} of {n_algos}, " if n_algos > 1 else "") + (
        f"{_fmt(row.get('rounds'))} rounds, rmse {_fmt(row.get('rmse_pkts'), 2)} pkts, corr {_fmt(row.get('corr'))}"
    )
    best = flow.get("best")
    best_row = fit_of(flow, best) if best else None
    if best and best != row.get("algo") and best_row is not None:
        detail += f"; best: {best} mare {_fmt(best_row.get('mare'))}"
    if problems:
        return Verdict(path, flow.get("flow_id"), label, test, FAIL, f"{'; '.join(problems)} ({detail})", metrics)
    within = f"within its threshold {_fmt(v.get('threshold'))}" if own_bound and v is not None else f"<= {_fmt(bound)}"
    head = (
        f"{'identified as' if v.get('class') == 'identified' else 'behaves as'} {v.get('name')}, {name} mare "
        f"{_fmt(err)} {within}"
        if v is not None and v.get("class") in NAMED and _matches(v.get("name"), algo)
        else f"{name} mare {_fmt(err)} {within}"
    )
    return Verdict(
        path,
        flow.get("flow_id"),
        label,
        test,
        PASS,
        head + (f"; {'; '.join(notes)}" if notes else "") + f" ({detail})",
        metrics,
    )


def check_expectations(doc: dict[str, Any], cfg: CheckConfig, flows: Iterable[int] | None = None) -> list[Verdict]:
    """Verdicts of every capture in ``doc`` against the expectations in ``cfg``.

    ``flows`` (``--flow``) restricts the flows considered in every capture; otherwise an
    expectation's own ``flows`` does; otherwise all flows are considered (and the ones without
    enough data skipped).
    """
    out: list[Verdict] = []
    only = list(flows) if flows is not None else None
    for cap in doc.get("captures", []):
        path = cap["path"]
        if cap.get("error"):
            out.append(Verdict(path, None, "", "read capture", ERROR, cap["error"]))
            continue
        exps = cfg.expectations_for(path)
        if not exps:
            out.append(
                Verdict(
                    path,
                    None,
                    "",
                    "expectations",
                    SKIP,
                    "no expectation matches this capture (give --expect or a [[check.expectations]] match)",
                )
            )
            continue
        for exp in exps:
            considered = _select(cap.get("flows", []), only if only is not None else exp.flows)
            verdicts = [_expect_verdict(path, f, exp, cfg.min_rounds) for f in considered]
            out.extend(verdicts)
            if not considered:  # (flows that were considered and skipped are listed, each with its reason)
                what = f"flow {', '.join(map(str, only or exp.flows or ()))}" if (only or exp.flows) else "no flow"
                msg = (
                    f"{what} not found in the capture ({len(cap.get('flows', []))} flows analyzed)"
                    if (only or exp.flows)
                    else "the capture has no TCP flow"
                )
                # a flow asked for by id and missing is a failure; a capture without TCP is skipped
                status = FAIL if (only or exp.flows) else SKIP
                out.append(Verdict(path, None, "", f"expect {exp.expect}", status, msg))
    return out


# --- baselines -------------------------------------------------------------------------------------


def match_capture(cap: dict[str, Any], baseline: dict[str, Any]) -> dict[str, Any] | None:
    """The baseline's entry for a capture: same content, else same path, else the only capture
    with the same file name.

    Content is the ``blake3`` digest both documents carry (schema 2.0 on). A baseline of schema
    1.x carries ``sha256`` instead: the capture's SHA-256 is then computed from its file (its
    own ``sha256`` when it has one), only when the baseline has an entry of the same size — the
    one case that pays for SHA-256 (0.35 s on a 540 MB file)."""
    entries = [c for c in baseline.get("captures", []) if not c.get("error")]
    if cap.get("blake3"):
        for c in entries:
            if c.get("blake3") == cap["blake3"]:
                return c
    older = [c for c in entries if c.get("sha256") and c.get("size_bytes") == cap.get("size_bytes")]
    if older:
        sha = cap.get("sha256")
        if sha is None and cap.get("size_bytes") is not None:
            from hscc_trace.analysis.results import sha256_file

            sha = sha256_file(cap["path"])
        for c in older:
            if sha is not None and c["sha256"] == sha:
                return c
    for c in entries:
        if PurePath(c.get("path", "")) == PurePath(cap.get("path", "")):
            return c
    same = [c for c in entries if c.get("name") == cap.get("name")]
    return same[0] if len(same) == 1 else None


def _regressions(cur: dict[str, Any], base: dict[str, Any], tol: Tolerance, algo: str) -> tuple[list[str], list[str]]:
    """(regressions, comparisons) for one algorithm's fit rows, as phrases with numbers."""
    bad, seen = [], []
    for key, worse_if in (("mare", "up"), ("rmse_pkts", "up"), ("corr", "down")):
        limit = getattr(tol, key)
        if limit is None:
            continue
        b, c = base.get(key), cur.get(key)
        if b is None:
            continue
        if c is None:
            bad.append(f"{algo} {key} undefined (baseline {_fmt(b)})")
            continue
        delta = c - b if worse_if == "up" else b - c
        phrase = f"{algo} {key} {_fmt(b)} → {_fmt(c)}"
        seen.append(phrase)
        if delta > limit + 1e-12:
            bad.append(f"{phrase} ({'+' if worse_if == 'up' else '-'}{_fmt(delta)} > tolerance {_fmt(limit)})")
    return bad, seen


def check_baseline(
    doc: dict[str, Any],
    baseline: dict[str, Any],
    tol: Tolerance,
    *,
    algorithms: Iterable[str] | None = None,
    min_rounds: int = 4,
    flows: Iterable[int] | None = None,
) -> list[Verdict]:
    """Verdicts of every capture in ``doc`` against a stored results document.

    Per judgeable flow (matched by ``flow_id``), for each algorithm fitted in both runs (or only
    ``algorithms``), the fit may not be worse than the baseline by more than ``tol``; the flow's
    goodput may not drop by more than ``tol.goodput`` (relative) when that is set.
    """
    out: list[Verdict] = []
    only = list(flows) if flows is not None else None
    want = list(algorithms) if algorithms is not None else None
    for cap in doc.get("captures", []):
        path = cap["path"]
        if cap.get("error"):
            out.append(Verdict(path, None, "", "read capture", ERROR, cap["error"]))
            continue
        base_cap = match_capture(cap, baseline)
        if base_cap is None:
            out.append(
                Verdict(
                    path,
                    None,
                    "",
                    "baseline",
                    FAIL,
                    "no entry for this capture in the baseline (matched by content, path, then file name)",
                )
            )
            continue
        base_flows = {f.get("flow_id"): f for f in base_cap.get("flows", [])}
        judged = 0
        for flow in _select(cap.get("flows", []), only):
            label = flow_label(flow)
            ok, why = judgeable(flow, min_rounds)
            if not ok:
                out.append(Verdict(path, flow.get("flow_id"), label, "baseline", SKIP, why))
                continue
            base = base_flows.get(flow.get("flow_id"))
            if base is None:
                out.append(
                    Verdict(
                        path,
                        flow.get("flow_id"),
                        label,
                        "baseline",
                        FAIL,
                        f"flow {flow.get('flow_id')} is not in the baseline",
                    )
                )
                judged += 1
                continue
            judged += 1
            cur_fit = {r["algo"]: r for r in flow.get("fit") or []}
            base_fit = {r["algo"]: r for r in base.get("fit") or []}
            algos = [a for a in (want if want is not None else cur_fit) if a in cur_fit and a in base_fit]
            bad: list[str] = []
            seen: list[str] = []
            missing = [a for a in (want or []) if a not in cur_fit or a not in base_fit]
            for a in missing:
                bad.append(f"{a} not fitted in {'this run' if a not in cur_fit else 'the baseline'}")
            for a in algos:
                b, s = _regressions(cur_fit[a], base_fit[a], tol, a)
                bad += b
                seen += s
            if tol.goodput is not None and base.get("goodput_bps") and flow.get("goodput_bps") is not None:
                g0, g1 = float(base["goodput_bps"]), float(flow["goodput_bps"])
                drop = (g0 - g1) / g0 if g0 > 0 else 0.0
                phrase = f"goodput {g0 / 1e6:.2f} → {g1 / 1e6:.2f} Mbit/s"
                seen.append(phrase)
                if drop > tol.goodput + 1e-12:
                    bad.append(f"{phrase} (-{drop:.1%} > tolerance {tol.goodput:.1%})")
            metrics = {"compared": len(algos), "regressions": len(bad)}
            if bad:
                msg = f"{len(bad)} regression(s): " + "; ".join(bad)
                out.append(Verdict(path, flow.get("flow_id"), label, "baseline", FAIL, msg, metrics))
            elif not algos:
                out.append(
                    Verdict(
                        path,
                        flow.get("flow_id"),
                        label,
                        "baseline",
                        FAIL,
                        "no algorithm fitted in both this run and the baseline",
                        metrics,
                    )
                )
            else:
                out.append(
                    Verdict(
                        path,
                        flow.get("flow_id"),
                        label,
                        "baseline",
                        PASS,
                        f"{len(algos)} algorithm fit(s) within tolerance "
                        f"(mare +{_fmt(tol.mare)}, rmse +{_fmt(tol.rmse_pkts)}, corr -{_fmt(tol.corr)}): "
                        + "; ".join(seen[:3])
                        + (" …" if len(seen) > 3 else ""),
                        metrics,
                    )
                )
        if judged == 0:
            out.append(
                Verdict(
                    path,
                    None,
                    "",
                    "baseline",
                    FAIL,
                    f"nothing could be verified: no flow with >= {min_rounds} cwnd-limited rounds",
                )
            )
    return out


# --- captures only partly read --------------------------------------------------------------------


def partly_read(doc: dict[str, Any]) -> dict[str, list[str]]:
    """``{capture path: [warning, …]}`` for every capture the reader did not read to its end
    (warnings with ``lost``: a corrupt record, a truncated or corrupt gzip stream, a cut-short
    last record). Each line says how much was not read."""
    out: dict[str, list[str]] = {}
    for cap in doc.get("captures", []):
        lines = [
            w["message"] + (f" ({w['count']}×)" if w.get("count", 1) != 1 else "")
            for w in cap.get("warnings") or []
            if w.get("lost") is not None
        ]
        if lines and not cap.get("error"):
            out[cap["path"]] = lines
    return out


def with_partial_reads(verdicts: list[Verdict], partial: dict[str, list[str]], strict: bool) -> list[Verdict]:
    """Verdicts that cannot hide a partly read capture: every verdict of such a capture says so
    in its message, and with ``strict`` the capture gets a failing "read capture" verdict."""
    if not partial:
        return list(verdicts)
    out = []
    for v in verdicts:
        lines = partial.get(v.capture)
        out.append(replace(v, message=f"{v.message} [capture only partly read: {'; '.join(lines)}]") if lines else v)
    if strict:
        for path, lines in partial.items():
            out.append(
                Verdict(
                    path, None, "", "read capture (--strict)", FAIL, f"capture only partly read: {'; '.join(lines)}"
                )
            )
    return out


# --- outcome ---------------------------------------------------------------------------------------


def counts(verdicts: Iterable[Verdict]) -> dict[str, int]:
    """``{"pass": n, "fail": n, "skip": n, "error": n}``."""
    c = dict.fromkeys(STATUSES, 0)
    for v in verdicts:
        c[v.status] += 1
    return c


def exit_code(verdicts: Iterable[Verdict]) -> int:
    """2 when any verdict is an input error, else 1 when any failed or when nothing at all could
    be verified (every verdict skipped: a gate must not go green by checking nothing), else 0."""
    c = counts(verdicts)
    if c[ERROR]:
        return 2
    return 1 if c[FAIL] or not c[PASS] else 0


def by_capture(verdicts: Iterable[Verdict]) -> dict[str, list[Verdict]]:
    """Verdicts grouped by capture path, in first-seen order."""
    out: dict[str, list[Verdict]] = {}
    for v in verdicts:
        out.setdefault(v.capture, []).append(v)
    return out


# --- JUnit XML -------------------------------------------------------------------------------------


def junit_xml(
    verdicts: list[Verdict],
    *,
    suite_name: str = "hscc-trace check",
    time_s: float | None = None,
    warnings: dict[str, list[str]] | None = None,
) -> str:
    """JUnit XML: ``<testsuites>`` with one ``<testsuite>`` per capture and one ``<testcase>`` per
    verdict; failures and errors carry the message with its numbers; skips say why. A capture's
    ``warnings`` (e.g. :func:`partly_read`) go to its suite's ``<system-err>``, one per line."""
    root = ET.Element("testsuites", name=suite_name)
    total = counts(verdicts)
    root.set("tests", str(len(verdicts)))
    root.set("failures", str(total[FAIL]))
    root.set("errors", str(total[ERROR]))
    root.set("skipped", str(total[SKIP]))
    if time_s is not None:
        root.set("time", f"{time_s:.3f}")
    for path, vs in by_capture(verdicts).items():
        c = counts(vs)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=path,
            tests=str(len(vs)),
            failures=str(c[FAIL]),
            errors=str(c[ERROR]),
            skipped=str(c[SKIP]),
        )
        for v in vs:
            case = ET.SubElement(suite, "testcase", classname=path, name=v.name)
            if v.status == FAIL:
                el = ET.SubElement(case, "failure", message=v.message, type="hscc-trace.check")
                el.text = v.message
            elif v.status == ERROR:
                el = ET.SubElement(case, "error", message=v.message, type="hscc-trace.input")
                el.text = v.message
            elif v.status == SKIP:
                ET.SubElement(case, "skipped", message=v.message)
            else:
                out = ET.SubElement(case, "system-out")
                out.text = v.message
        if warnings and warnings.get(path):
            err = ET.SubElement(suite, "system-err")
            err.text = "\n".join(f"warning: {w}" for w in warnings[path])
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# --- GitHub Actions ----------------------------------------------------------------------------------


def in_github_actions(env: dict[str, str] | None = None) -> bool:
    """True when running as a GitHub Actions step (``GITHUB_ACTIONS=true``)."""
    return (env if env is not None else os.environ).get("GITHUB_ACTIONS", "").lower() == "true"


def _gh_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(s: str) -> str:
    return _gh_data(s).replace(":", "%3A").replace(",", "%2C")


def github_annotations(verdicts: list[Verdict], warnings: dict[str, list[str]] | None = None) -> list[str]:
    """Workflow-command lines: ``::error`` per failure or input error, ``::warning`` per capture
    warning (e.g. :func:`partly_read`), ``::notice`` per capture with its tally (passes and skips
    included)."""
    lines = []
    for path, ws in (warnings or {}).items():
        for w in ws:
            lines.append(
                f"::warning file={_gh_prop(path)},title={_gh_prop('hscc-trace: capture only partly read')}::"
                + _gh_data(w)
            )
    for v in verdicts:
        if v.status in (FAIL, ERROR):
            title = f"hscc-trace check: {v.test}" if v.status == FAIL else "hscc-trace: capture not readable"
            where = f"{v.flow}: " if v.flow else ""
            lines.append(f"::error file={_gh_prop(v.capture)},title={_gh_prop(title)}::{_gh_data(where + v.message)}")
    for path, vs in by_capture(verdicts).items():
        c = counts(vs)
        lines.append(
            f"::notice file={_gh_prop(path)},title={_gh_prop('hscc-trace check')}::"
            + _gh_data(f"{c[PASS]} passed, {c[FAIL]} failed, {c[SKIP]} skipped, {c[ERROR]} errors")
        )
    return lines


_ICON = {PASS: "✅ pass", FAIL: "❌ fail", SKIP: "⏭️ skip", ERROR: "⚠️ error"}


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def markdown_summary(
    verdicts: list[Verdict], *, title: str = "hscc-trace check", warnings: dict[str, list[str]] | None = None
) -> str:
    """A markdown job summary: the tally, the captures' warnings (e.g. :func:`partly_read`) and
    one table row per verdict."""
    c = counts(verdicts)
    lines = [
        f"### {title}",
        "",
        f"**{c[PASS]} passed, {c[FAIL]} failed, {c[SKIP]} skipped, {c[ERROR]} errors** "
        f"— exit code {exit_code(verdicts)}",
        "",
    ]
    for path, ws in (warnings or {}).items():
        for w in ws:
            lines.append(f"- ⚠️ `{_md(path)}` only partly read: {_md(w)}")
    if warnings:
        lines.append("")
    lines += ["| capture | flow | test | result | details |", "|---|---|---|---|---|"]
    for v in verdicts:
        lines.append(
            f"| `{_md(v.capture)}` | {_md(v.flow or '—')} | {_md(v.test)} | {_ICON[v.status]} | {_md(v.message)} |"
        )
    return "\n".join(lines) + "\n"


def terminal_lines(verdicts: list[Verdict]) -> list[str]:
    """One plain line per verdict, ``PASS capture flow: test — message``, then the tally."""
    out = [
        f"{v.status.upper():5} {v.capture}" + (f" {v.flow}" if v.flow else "") + f" [{v.test}]: {v.message}"
        for v in verdicts
    ]
    c = counts(verdicts)
    tally = f"{c[PASS]} passed, {c[FAIL]} failed, {c[SKIP]} skipped, {c[ERROR]} errors"
    if not c[PASS] and not c[FAIL] and not c[ERROR]:
        tally += " — nothing could be verified: that is a failure"
    out.append(tally)
    return out
