"""The terminal summary of a results document: what ``hscc-trace analyze`` prints (docs/results.md)."""

from __future__ import annotations

from typing import Any

from hscc_trace.analysis.check import flow_label
from hscc_trace.analysis.evidence import describe


def _mbit(x: Any) -> str:
    return f"{x / 1e6:.2f} Mbit/s" if isinstance(x, (int, float)) else "—"


def _ms(x: Any) -> str:
    return f"{x * 1e3:.1f} ms" if isinstance(x, (int, float)) else "—"


def summary_lines(doc: dict[str, Any]) -> list[str]:
    """The terminal summary: per capture, its flows with goodput, RTT and the best-fitting algorithm."""
    out: list[str] = []
    for cap in doc["captures"]:
        if cap.get("error"):
            continue
        meta = cap["meta"]
        out.append(
            f"{cap['path']}: {meta['packets_total']} packets, {meta['duration_s']:.2f} s, "
            f"{len(cap['flows'])} flow(s) analyzed of {cap['flows_total']}"
        )
        for f in cap["flows"]:
            out.append(
                f"  {flow_label(f)}  {_mbit(f.get('goodput_bps'))}, rtt min {_ms(f.get('rtt_min_s'))}, "
                f"{f.get('retrans') or 0} retrans"
            )
            out += [f"      {line}" for line in verdict_lines(f)]
        for g in cap.get("groups") or []:
            out += group_lines(g)
        for w in cap["warnings"]:
            out.append(f"  warning: {w['message']}" + (f" ({w['count']}×)" if w["count"] != 1 else ""))
    return out


def _pct(x: Any) -> str:
    return f"{x * 100:.1f} %" if isinstance(x, (int, float)) else "—"


def _num(x: Any, digits: int = 3) -> str:
    return f"{x:.{digits}f}" if isinstance(x, (int, float)) else "—"


def group_lines(g: dict[str, Any]) -> list[str]:
    """One bottleneck group of the results document (docs/groups.md): Jain's index, capacity and
    utilization, then each flow's goodput, share and friendliness ratio."""
    ids = ", ".join(str(i) for i in g["flow_ids"])
    conv = f"converged after {g['convergence_s']:.1f} s" if g.get("converged") else "not within 10 % of fair share"
    out = [
        f"  group {g['index']} (flows {ids}): Jain {_num(g.get('jain'))} "
        f"(per {g['window_s']:g} s window: median {_num((g.get('jain_windows') or {}).get('median'))}), "
        f"total {_mbit(g.get('total_goodput_bps'))} of ≈ {_mbit(g.get('capacity_bps'))} "
        f"(utilization {_pct(g.get('utilization'))}), {conv}"
    ]
    for f in g["flows"]:
        fr = f.get("friendliness")
        friend = f", {_num(fr, 2)}× the reference" if fr is not None else ""
        algo = f" [{f['algo']}]" if f.get("algo") else ""
        out.append(
            f"    flow {f['flow_id']}{algo}: {_mbit(f.get('goodput_bps'))}, share {_pct(f.get('share'))}{friend}"
        )
    return out


def verdict_lines(flow: dict[str, Any]) -> list[str]:
    """The verdict of one flow of the results document, in plain words: its class (and name),
    the reason, and the evidence behind it."""
    v = flow.get("verdict")
    if not v:
        return []
    named = v["class"] in ("identified", "behaves as")
    head = f"{v['class']}{':' if v['class'] == 'identified' else ''} {v['name']}" if named else v["class"]
    reason = v["reason"]
    for lead in (f"{v['name']}: ", f"behaves as {v['name']}: "):
        if named and reason.startswith(lead):
            reason = reason[len(lead) :]
    lines = [f"{head} — {reason}"]
    lines.append(f"evidence: {describe(v['evidence'])}")
    if v.get("outside_range"):  # (results 1.4)
        lines.append(f"outside the validated range ({v.get('validated_range', '')}): " + "; ".join(v["outside_range"]))
    return lines
