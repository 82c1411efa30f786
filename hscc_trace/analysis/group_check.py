"""`hscc-trace check` gates on bottleneck groups (docs/groups.md, docs/ci.md): Jain's index, the
bandwidth stolen from the regular flows against a baseline run, and friendliness bounds.

Like :mod:`hscc_trace.analysis.check`, everything works on results documents (``captures[].groups``,
schema 1.4) and gives :class:`~hscc_trace.analysis.check.Verdict` objects, so the terminal lines,
JUnit XML, annotations and exit code are those of every other verdict. Each message names the
flows it is about, with their labels, algorithms and goodput.

* ``min_jain``: per group, pass when its Jain's index over the measurement interval is at least
  the bound (``test`` = ``min-jain 0.9``).
* ``max_stolen`` with ``baseline_groups`` (the group dicts of a baseline run of regular flows only:
  ``hscc_trace.api.group_input``): per group, the bandwidth stolen from its regular flows
  (:func:`hscc_trace.analysis.groups.compare`, the Compound TCP paper's Definition 1) at most the
  bound; groups are paired with the baseline's in order.
* ``friendliness`` ``(lo, hi)``: per flow with a friendliness ratio (a flow beside a reference
  co-flow), pass when ``lo <= ratio <= hi``.

A capture without a group, or a group gate that cannot be evaluated (no Jain's index, no regular
flow, no baseline group), is a ``skip`` with the reason — never a pass.
"""

from __future__ import annotations

from typing import Any

from hscc_trace.analysis.check import Verdict
from hscc_trace.analysis.groups import compare


def _mbit(x: Any) -> str:
    return f"{x / 1e6:.2f} Mbit/s" if isinstance(x, (int, float)) else "–"


def _flow_text(f: dict[str, Any]) -> str:
    algo = f" [{f['algo']}]" if f.get("algo") else ""
    share = f", share {f['share'] * 100:.1f} %" if isinstance(f.get("share"), (int, float)) else ""
    return f"{f.get('label') or 'flow ' + str(f.get('flow_id'))}{algo} {_mbit(f.get('goodput_bps'))}{share}"


def group_label(g: dict[str, Any]) -> str:
    """``group 0 (flows 0, 1)``."""
    return f"group {g.get('index')} (flows {', '.join(str(i) for i in g.get('flow_ids') or [])})"


def check_groups(
    doc: dict[str, Any],
    *,
    min_jain: float | None = None,
    max_stolen: float | None = None,
    baseline_groups: list[dict[str, Any]] | None = None,
    friendliness: tuple[float, float] | None = None,
    regular: str | tuple[int, ...] = "reno",
) -> list[Verdict]:
    """The group gates' verdicts for every readable capture of ``doc`` (module docstring)."""
    out: list[Verdict] = []
    tests = []
    if min_jain is not None:
        tests.append(f"min-jain {min_jain:g}")
    if max_stolen is not None:
        tests.append(f"max-stolen {max_stolen:g}")
    if friendliness is not None:
        tests.append(f"friendliness {friendliness[0]:g}..{friendliness[1]:g}")
    if not tests:
        return out
    for cap in doc.get("captures") or []:
        if cap.get("error"):
            continue  # (check's expectations already report an unreadable capture)
        path = cap["path"]
        gs = cap.get("groups") or []
        if not gs:
            why = f"{path}: no bottleneck group (two or more concurrent bulk flows; --group names one)"
            out.append(Verdict.of_bound(path, None, "", ", ".join(tests), None, why))
            continue
        for i, g in enumerate(gs):
            label = group_label(g)
            flows = "; ".join(_flow_text(f) for f in g.get("flows") or [])
            if min_jain is not None:
                j = g.get("jain")
                ok = None if j is None else j >= min_jain
                msg = (
                    f"{label}: no Jain's index (no goodput)"
                    if j is None
                    else f"{label}: Jain's index {j:.3f} {'>=' if ok else '<'} {min_jain:g}: {flows}"
                )
                metrics = {"jain": j, "min_jain": min_jain}
                out.append(Verdict.of_bound(path, None, label, f"min-jain {min_jain:g}", ok, msg, metrics))
            if max_stolen is not None:
                test = f"max-stolen {max_stolen:g}"
                base = baseline_groups or []
                if i >= len(base):
                    out.append(
                        Verdict.of_bound(path, None, label, test, None, f"{label}: the baseline has no group {i}")
                    )
                else:
                    c = compare([base[i]], [g], regular=regular).groups[0]
                    s = c["stolen"]
                    regs = [f for f in g.get("flows") or [] if f.get("flow_id") in c["test_regular"]]
                    reg_text = "; ".join(_flow_text(f) for f in regs) or "none"
                    ok = None if s is None else s <= max_stolen
                    msg = (
                        f"{label}: no regular ({regular}) flow to compare"
                        if s is None
                        else f"{label}: bandwidth stolen {s * 100:.1f} % {'<=' if ok else '>'} "
                        f"{max_stolen * 100:g} % from the regular flows {reg_text} (baseline "
                        f"{_mbit(c['baseline_regular_bps'])} per regular flow)"
                    )
                    out.append(
                        Verdict.of_bound(path, None, label, test, ok, msg, {"stolen": s, "max_stolen": max_stolen})
                    )
            if friendliness is not None:
                lo, hi = friendliness
                test = f"friendliness {lo:g}..{hi:g}"
                ref = [f for f in g.get("flows") or [] if f.get("flow_id") in set(g.get("reference") or [])]
                ref_text = "; ".join(_flow_text(f) for f in ref) or "none"
                judged = False
                for f in g.get("flows") or []:
                    r = f.get("friendliness")
                    if r is None:
                        continue
                    judged = True
                    ok = lo <= r <= hi
                    msg = (
                        f"{_flow_text(f)}: friendliness {r:.2f} {'within' if ok else 'outside'} "
                        f"{lo:g}..{hi:g} of the reference {ref_text}"
                    )
                    fl = f"{label}: flow {f.get('flow_id')}"
                    out.append(Verdict.of_bound(path, f.get("flow_id"), fl, test, ok, msg, {"friendliness": r}))
                if not judged:
                    why = f"{label}: no flow beside a reference ({regular}) co-flow"
                    out.append(Verdict.of_bound(path, None, label, test, None, why))
    return out


def parse_bounds(text: str) -> tuple[float, float]:
    """``"0.5:2"`` → (0.5, 2.0); ValueError when not two numbers lo <= hi."""
    parts = text.replace("..", ":").split(":")
    if len(parts) != 2:
        raise ValueError(f"{text!r}: expected LO:HI, e.g. 0.5:2")
    lo, hi = float(parts[0]), float(parts[1])
    if not (0 <= lo <= hi):
        raise ValueError(f"{text!r}: expected 0 <= LO <= HI")
    return lo, hi
