"""The report's section on bottleneck groups (docs/groups.md, docs/report.md): per group, its
flows' goodput, shares, friendliness and loss episodes in a table, and four charts on the group's
one time axis — the goodput stacked, each flow's share, Jain's index per window and the flows'
windows (bytes outstanding, in packets) with their loss episodes.

The charts are inline SVG: no script, no request, drawn at once (the report's Plotly figures
are the flows'). Input: each capture's groups (:func:`hscc_trace.analysis.groups.groups_of_capture`)
and its flows' series (``series_of``: the windows).
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from hscc_trace.analysis.groups import Group, groups_of_capture, series_of

e = html.escape

#: one colour per flow of a group, in flow order (colour-blind-safe Okabe–Ito order)
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000")
W, H, LEFT, RIGHT, TOP, BOTTOM = 880, 160, 62, 16, 22, 26


def _mbit(x: Any) -> str:
    return f"{x / 1e6:.2f} Mbit/s" if isinstance(x, (int, float)) else "–"


def _pct(x: Any) -> str:
    return f"{x * 100:.1f} %" if isinstance(x, (int, float)) else "–"


def _num(x: Any, d: int = 3) -> str:
    return f"{x:.{d}f}" if isinstance(x, (int, float)) else "–"


class _Chart:
    """One SVG panel: x in s on the group's axis [0, t1], y in [y0, y1]."""

    def __init__(self, title: str, t1: float, y0: float, y1: float, unit: str) -> None:
        self.t1, self.y0, self.y1 = max(t1, 1e-9), y0, y1 if y1 > y0 else y0 + 1
        self.parts = [
            f'<svg class="gchart" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" aria-label="{e(title)}">',
            f'<text x="{LEFT}" y="{TOP - 7}" font-size="12" font-weight="bold">{e(title)}</text>',
        ]
        pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
        self.parts.append(
            f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#ccc" stroke-width="1"/>'
        )
        for k in range(5):
            v = self.y0 + (self.y1 - self.y0) * k / 4
            y = self.y(v)
            self.parts.append(f'<text x="{LEFT - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{v:.3g}</text>')
        self.parts.append(
            f'<text x="4" y="{TOP + ph / 2:.0f}" font-size="10" transform="rotate(-90 10 {TOP + ph / 2:.0f})">'
            f"{e(unit)}</text>"
        )
        step = _nice(self.t1 / 8)
        t = 0.0
        while t <= self.t1 + 1e-9:
            x = self.x(t)
            self.parts.append(f'<line x1="{x:.1f}" y1="{TOP + ph}" x2="{x:.1f}" y2="{TOP + ph + 3}" stroke="#999"/>')
            self.parts.append(f'<text x="{x:.1f}" y="{H - 8}" font-size="10" text-anchor="middle">{t:g} s</text>')
            t += step

    def x(self, t: float) -> float:
        return LEFT + (W - LEFT - RIGHT) * t / self.t1

    def y(self, v: float) -> float:
        ph = H - TOP - BOTTOM
        v = min(max(v, self.y0), self.y1)
        return TOP + ph - ph * (v - self.y0) / (self.y1 - self.y0)

    def line(self, ts: Any, vs: Any, color: str, dash: str = "", width: float = 1.4) -> None:
        pts = " ".join(f"{self.x(t):.1f},{self.y(v):.1f}" for t, v in zip(ts, vs) if v is not None)
        if pts:
            d = f' stroke-dasharray="{dash}"' if dash else ""
            self.parts.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="{width}"{d}/>')

    def band(self, ts: Any, lo: Any, hi: Any, color: str) -> None:
        up = [f"{self.x(t):.1f},{self.y(v):.1f}" for t, v in zip(ts, hi)]
        down = [f"{self.x(t):.1f},{self.y(v):.1f}" for t, v in zip(reversed(ts), reversed(lo))]
        if up:
            self.parts.append(
                f'<polygon points="{" ".join(up + down)}" fill="{color}" fill-opacity="0.55" stroke="{color}"/>'
            )

    def tick(self, t: float, color: str, row: int) -> None:
        x = self.x(t)
        y = TOP + 2 + row * 6
        self.parts.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 5}" stroke="{color}" stroke-width="2"/>')

    def svg(self) -> str:
        return "".join(self.parts) + "</svg>"


def _nice(x: float) -> float:
    """1, 2 or 5 × a power of ten at or above ``x``."""
    if x <= 0:
        return 1.0
    p = 10 ** np.floor(np.log10(x))
    for m in (1, 2, 5, 10):
        if m * p >= x:
            return float(m * p)
    return float(10 * p)


def _steps(t: list[float], lens: list[float]) -> tuple[list[float], list[int]]:
    """Each window drawn flat from its start to its end: times and the window index at each."""
    xs: list[float] = []
    idx: list[int] = []
    for k, (a, n) in enumerate(zip(t, lens)):
        xs += [a, a + n]
        idx += [k, k]
    return xs, idx


def _flight(s: Any, start_ns: int, t1: float, mss: int, columns: int = 600) -> tuple[list[float], list[float]]:
    """A flow's bytes outstanding in packets, the largest value per column of the chart."""
    if s.flight_ns is None or not s.flight_ns.size:
        return [], []
    t = (s.flight_ns - start_ns) / 1e9
    col = np.clip((t / max(t1, 1e-9) * columns).astype(np.int64), 0, columns - 1)
    out = np.full(columns, -1.0)
    np.maximum.at(out, col, s.flight / max(mss, 1))
    keep = out >= 0
    xs = (np.arange(columns)[keep] + 0.5) / columns * t1
    return [float(x) for x in xs], [float(v) for v in out[keep]]


def group_block(g: Group, series: dict[int, Any], anchor: str) -> str:
    """One group: its summary line, flow table and charts."""
    n = len(g.flows)
    colors = {f.flow_id: PALETTE[i % len(PALETTE)] for i, f in enumerate(g.flows)}
    w = g.windows
    t1 = (g.end_ns - g.start_ns) / 1e9
    conv = f"converged after {g.convergence_s:.1f} s" if g.converged else "never within 10 % of the fair share"
    out = [
        f'<h3 id="{anchor}">Group {g.index}: flows {", ".join(str(i) for i in g.flow_ids)}</h3>',
        f'<p class="summary">Jain\'s index <strong>{_num(g.jain)}</strong> over the measurement interval '
        f"(per {g.window_s:g}-s window: min {_num(g.jain_windows.get('min'))}, median "
        f"{_num(g.jain_windows.get('median'))}) · total {_mbit(g.total_goodput_bps)} of an estimated "
        f"{_mbit(g.capacity_bps)} (utilization {_pct(g.utilization)}) · {conv} · "
        f"{_pct(g.sync_fraction)} of the loss episodes synchronized</p>",
    ]
    head = ["", "flow", "algorithm", "goodput", "share", "friendliness", "RTT mean / min", "loss episodes"]
    rows = []
    for f in g.flows:
        src = {"truth": "kernel's label", "verdict": "verdict", "unknown": ""}.get(f.algo_source, f.algo_source)
        rows.append(
            "<tr>"
            + f'<td><span style="color:{colors[f.flow_id]}">■</span></td>'
            + f"<td>{e(f.label)}</td>"
            + f'<td>{e(f.algo or "unknown")} <span class="muted">{e(src)}</span></td>'
            + f'<td class="num">{_mbit(f.goodput_bps)}</td><td class="num">{_pct(f.share)}</td>'
            + f'<td class="num">{_num(f.friendliness, 2) + "×" if f.friendliness is not None else "–"}</td>'
            + f'<td class="num">{_num((f.rtt_mean_s or 0) * 1e3, 1)} / {_num((f.rtt_min_s or 0) * 1e3, 1)} ms</td>'
            + f'<td class="num">{f.episodes} ({f.synchronized} synchronized)</td>'
            + "</tr>"
        )
    out.append(
        "<table><thead><tr>"
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )
    if g.rtt_fairness:
        pairs = [
            f"flows {p['short_rtt_flow']}/{p['long_rtt_flow']}: throughput ratio {_num(p['throughput_ratio'], 2)} "
            f"at RTT ratio {_num(p['rtt_ratio'], 2)}"
            + (f", exponent {_num(p['exponent'], 2)}" if p.get("exponent") is not None else "")
            for p in g.rtt_fairness
        ]
        out.append(f'<p class="muted">RTT-fairness (HRF-TCP Eq. 1): {e("; ".join(pairs))}.</p>')
    ts, idx = _steps(w["t_s"], w["len_s"])
    if ts:
        # goodput, stacked in flow order, with the capacity estimate dashed
        top = max([*w["total_bps"], g.capacity_bps or 0]) / 1e6 or 1
        c = _Chart("goodput per flow, stacked", t1, 0, top * 1.08, "Mbit/s")
        base = [0.0] * len(ts)
        for i, f in enumerate(g.flows):
            hi = [b + w["goodput_bps"][i][k] / 1e6 for b, k in zip(base, idx)]
            c.band(ts, base, hi, colors[f.flow_id])
            base = hi
        if g.capacity_bps:
            c.line([0, t1], [g.capacity_bps / 1e6] * 2, "#333", dash="5,3")
        charts = [c.svg()]
        # shares, overlaid, the fair share dashed
        c = _Chart("share of the group's goodput per window", t1, 0, 1, "share")
        for i, f in enumerate(g.flows):
            c.line(
                ts,
                [w["goodput_bps"][i][k] / w["total_bps"][k] if w["total_bps"][k] > 0 else None for k in idx],
                colors[f.flow_id],
            )
        c.line([0, t1], [1 / n] * 2, "#333", dash="5,3")
        charts.append(c.svg())
        # Jain's index per window
        c = _Chart("Jain's fairness index per window", t1, 1 / n if n else 0, 1, "Jain")
        c.line(ts, [w["jain"][k] for k in idx], "#1f3a93", width=1.8)
        charts.append(c.svg())
        # windows: bytes outstanding in packets, with the loss episodes as ticks along the top
        flights = {
            f.flow_id: _flight(series[f.flow_id], g.start_ns, t1, series[f.flow_id].mss)
            for f in g.flows
            if f.flow_id in series
        }
        peak = max((max(v) for _, v in flights.values() if v), default=1.0)
        c = _Chart("windows: packets in flight after each ACK (ticks: loss episodes)", t1, 0, peak * 1.12, "packets")
        for f in g.flows:
            xs, vs = flights.get(f.flow_id, ([], []))
            c.line(xs, vs, colors[f.flow_id], width=1.0)
        for ep in g.episodes:
            c.tick(ep["t_s"], colors[ep["flow_id"]], g.flow_ids.index(ep["flow_id"]))
        charts.append(c.svg())
        out.append('<div class="gcharts">' + "".join(charts) + "</div>")
    return "\n".join(out)


def groups_section(analysis: Any) -> str:
    """The report's ``Bottleneck groups`` section (empty when no capture has a group)."""
    blocks = []
    several = len(analysis.captures) > 1
    for ci, cr in enumerate(analysis.captures):
        gs = groups_of_capture(cr)
        if not gs:
            continue
        series = {s.flow_id: s for s in series_of(cr)}
        if several:
            blocks.append(f"<p><code>{e(cr.meta.path)}</code></p>")
        for g in gs:
            blocks.append(group_block(g, series, f"group-{ci}-{g.index}"))
    if not blocks:
        return ""
    return (
        '<h2 id="groups">Bottleneck groups</h2>'
        '<p class="muted">Flows that share a bottleneck: the concurrent bulk flows of a capture (or the '
        "groups given with <code>--group</code>), measured on one time axis as the seed papers measure them — "
        "goodput is the bytes cumulatively acknowledged per window; shares, Jain's index and friendliness "
        "(each flow's goodput over its Reno co-flows') over the time every flow transfers. Definitions and "
        "sources: docs/groups.md.</p>" + "\n".join(blocks)
    )
