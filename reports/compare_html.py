"""The self-contained HTML page of ``hscc-trace compare -o``: bandwidth stolen and per-flow deltas.

One small file, no script and no request: the report's stylesheet inlined, the comparison's tables
and, per group, a bar chart of every flow's goodput in the baseline and the test run (inline SVG).
Input: ``hscc_trace.analysis.groups.Comparison.as_dict()``.
"""

from __future__ import annotations

import html
from importlib import resources
from pathlib import Path
from typing import Any

from hscc_trace import __version__

e = html.escape


def _mbit(x: Any) -> str:
    return f"{x / 1e6:.2f} Mbit/s" if isinstance(x, (int, float)) else "–"


def _pct(x: Any, signed: bool = False) -> str:
    if not isinstance(x, (int, float)):
        return "–"
    return f"{x * 100:+.1f} %" if signed else f"{x * 100:.1f} %"


def _num(x: Any) -> str:
    return f"{x:.3f}" if isinstance(x, (int, float)) else "–"


def _bars(flows: list[dict[str, Any]]) -> str:
    """Horizontal bars: each flow's goodput in the baseline (grey) and the test run (blue)."""
    vals = [v for f in flows for v in (f.get("baseline_goodput_bps"), f.get("test_goodput_bps")) if v is not None]
    top = max(vals) if vals else 1.0
    row_h, bar_h, left, width = 44, 16, 190, 420
    h = row_h * len(flows) + 24
    out = [f'<svg class="bars" width="{left + width + 110}" height="{h}" role="img" aria-label="goodput per flow">']
    for i, f in enumerate(flows):
        y = 10 + i * row_h
        name = f"flow {f.get('baseline_flow')} → {f.get('test_flow')} ({f.get('test_algo') or '?'})"
        out.append(f'<text x="0" y="{y + bar_h}" font-size="12">{e(name)}</text>')
        for k, (key, color) in enumerate((("baseline_goodput_bps", "#9aa0a6"), ("test_goodput_bps", "#1f77b4"))):
            v = f.get(key)
            w = 0 if v is None or top <= 0 else width * v / top
            yy = y + k * (bar_h + 2)
            out.append(f'<rect x="{left}" y="{yy}" width="{w:.1f}" height="{bar_h}" fill="{color}"/>')
            out.append(f'<text x="{left + w + 4:.1f}" y="{yy + 12}" font-size="11">{e(_mbit(v))}</text>')
    out.append(f'<text x="{left}" y="{h - 2}" font-size="11" fill="#555">grey: baseline · blue: test run</text></svg>')
    return "".join(out)


def comparison_html(doc: dict[str, Any]) -> str:
    """The page's text."""
    css = resources.files("hscc_trace.reports").joinpath("report.css").read_text(encoding="utf-8")
    reg = doc["regular"] if isinstance(doc["regular"], str) else "flows " + ", ".join(map(str, doc["regular"]))
    body = [
        "<h1>Bandwidth stolen</h1>",
        '<p class="note">stolen = (P − Q) / P: P the mean goodput of the regular '
        f"(<code>{e(str(reg))}</code>) flows of the baseline run, Q that of the test run's regular flows "
        "(the Compound TCP paper's Definition 1; docs/groups.md). Goodput: bytes cumulatively "
        "acknowledged over each group's measurement interval.</p>",
    ]
    for w in doc.get("warnings") or []:
        body.append(f'<p class="note">warning: {e(w)}</p>')
    for g in doc["groups"]:
        body.append(f"<h2>group {g['index']}: stolen {e(_pct(g.get('stolen')))}</h2>")
        rows = [
            ("capture", g.get("baseline_capture") or "–", g.get("test_capture") or "–"),
            (
                "regular flows",
                ", ".join(map(str, g["baseline_regular"])) or "none",
                ", ".join(map(str, g["test_regular"])) or "none",
            ),
            ("their mean goodput", _mbit(g.get("baseline_regular_bps")), _mbit(g.get("test_regular_bps"))),
            ("Jain's index", _num(g.get("baseline_jain")), _num(g.get("test_jain"))),
            ("total goodput", _mbit(g.get("baseline_total_bps")), _mbit(g.get("test_total_bps"))),
            ("utilization", _pct(g.get("baseline_utilization")), _pct(g.get("test_utilization"))),
        ]
        body.append("<table><thead><tr><th></th><th>baseline</th><th>test</th></tr></thead><tbody>")
        body += [f"<tr><th>{e(a)}</th><td>{e(str(b))}</td><td>{e(str(c))}</td></tr>" for a, b, c in rows]
        body.append("</tbody></table>")
        body.append(
            "<table><thead><tr><th>baseline flow</th><th>test flow</th><th>baseline</th><th>test</th>"
            "<th>delta</th><th>share</th></tr></thead><tbody>"
        )
        for f in g["flows"]:
            body.append(
                f"<tr><td>{e(str(f.get('baseline_label') or f.get('baseline_flow')))} "
                f"({e(str(f.get('baseline_algo') or '?'))})</td>"
                f"<td>{e(str(f.get('test_label') or f.get('test_flow')))} ({e(str(f.get('test_algo') or '?'))})</td>"
                f"<td>{_mbit(f.get('baseline_goodput_bps'))}</td><td>{_mbit(f.get('test_goodput_bps'))}</td>"
                f"<td>{_pct(f.get('relative'), signed=True)}</td>"
                f"<td>{_pct(f.get('baseline_share'))} → {_pct(f.get('test_share'))}</td></tr>"
            )
        body.append("</tbody></table>")
        body.append(_bars(g["flows"]))
    csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        f'<meta name="generator" content="hscc-trace {e(__version__)}">\n'
        f"<title>hscc-trace compare</title>\n<style>{css}</style>\n</head>\n<body>\n<main>\n"
        + "\n".join(body)
        + f"\n<footer>Generated by hscc-trace {e(__version__)}; no script, no network request.</footer>\n"
        "</main>\n</body>\n</html>\n"
    )


def write_comparison(doc: dict[str, Any], path: str | Path) -> Path:
    """Write the page to ``path`` (a temporary file renamed into place); InputError when it cannot."""
    from hscc_trace.atomic import write_texts

    path = Path(path)
    write_texts(path, [comparison_html(doc)], "report", parents=False)
    return path
