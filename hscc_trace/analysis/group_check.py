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

from hscc_trace.analysis.check import FAIL, PASS, SKIP, Verdict
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
            out.append(
                Verdict(
                    path,
                    None,
                    "",
                    ", ".join(tests),
                    SKIP,
                    f"{path}: no bottleneck group (two or more concurrent bulk flows; --group names one)",
                )
            )
            continue
        for i, g in enumerate(gs):
            label = group_label(g)
            flows = "; ".join(_flow_text(f) for f in g.get("flows") or [])
            if min_jain is not None:
                j = g.get("jain")
                test = f"min-jain {min_jain:g}"
                if j is None:
                    out.append(Verdict(path, None, label, test, SKIP, f"{label}: no Jain's index (no goodput)"))
                else:
                    ok = j >= min_jain
                    rel = ">=" if ok else "<"
                    out.append(
                        Verdict(
                            path,
                            None,
                            label,
                            test,
                            PASS if ok else FAIL,
                            f"{label}: Jain's index {j:.3f} {rel} {min_jain:g}: {flows}",
                            {"jain": j, "min_jain": min_jain},
                        )
                    )
            if max_stolen is not None:
                test = f"max-stolen {max_stolen:g}"
                base = baseline_groups or []
                if i >= len(base):
                    out.append(Verdict(path, None, label, test, SKIP, f"{label}: the baseline has no group {i}"))
                else:
                    c = compare([base[i]], [g], regular=regular).groups[0]
                    s = c["stolen"]
                    regs = [f for f in g.get("flows") or [] if f.get("flow_id") in c["test_regular"]]
                    reg_text = "; ".join(_flow_text(f) for f in regs) or "none"
                    if s is None:
                        out.append(
                            Verdict(path, None, label, test, SKIP, f"{label}: no regular ({regular}) flow to compare")
                        )
                    else:
                        ok = s <= max_stolen
                        out.append(
                            Verdict(
                                path,
                                None,
                                label,
                                test,
                                PASS if ok else FAIL,
                                f"{label}: bandwidth stolen {s * 100:.1f} % {'<=' if ok else '>'} "
                                f"{max_stolen * 100:g} % from the regular flows {reg_text} (baseline "
                                f"{_mbit(c['baseline_regular_bps'])} per regular flow)",
                                {"stolen": s, "max_stolen": max_stolen},
                            )
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
                    out.append(
                        Verdict(
                            path,
                            f.get("flow_id"),
                            f"{label}: flow {f.get('flow_id')}",
                            test,
                            PASS if ok else FAIL,
                            f"{_flow_text(f)}: friendliness {r:.2f} {'within' if ok else 'outside'} "
                            f"{lo:g}..{hi:g} of the reference {ref_text}",
                            {"friendliness": r},
                        )
                    )
                if not judged:
                    out.append(
                        Verdict(
                            path, None, label, test, SKIP, f"{label}: no flow beside a reference ({regular}) co-flow"
                        )
                    )
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
