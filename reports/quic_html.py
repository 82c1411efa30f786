"""The self-contained HTML page of ``hscc-trace analyze FILE.qlog -o OUT.html``: per QUIC connection
the stack's logged congestion window drawn as the sender's own, the QUIC replays beside it
(:mod:`hscc_trace.qlog.replay`), the vantage and the open-loop caveat (docs/quic.md).

No script and no request, as the comparison page: the report's stylesheet inlined, inline SVG.
Input: per file ``(path, hscc_trace.qlog.summary(...) or None, error or None)`` and, per
connection, the replay tables ``{"reno[aioquic]": Replay.table, ...}`` (t_s, cwnd, logged_cwnd).
"""

from __future__ import annotations

import html
from importlib import resources
from pathlib import Path
from typing import Any

import polars as pl

from hscc_trace import __version__

e = html.escape

COLORS = ("#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
CAVEAT = (
    "The replays are open-loop: each is driven by the ACKs and losses the stack actually saw, "
    "which its own window shaped; a replay that departs from the logged window would have sent "
    "differently and seen other ACKs (docs/quic.md)."
)


def _points(t: pl.Series, y: pl.Series, t0: float, t1: float, ymax: float, n: int = 1500) -> str:
    ok = y.is_not_null() & t.is_not_null()
    ts, ys = t.filter(ok).to_list(), y.filter(ok).to_list()
    step = max(1, len(ts) // n)
    w, h = 760.0, 300.0
    span = (t1 - t0) or 1.0
    return " ".join(
        f"{40 + w * (a - t0) / span:.1f},{10 + h - h * b / (ymax or 1.0):.1f}" for a, b in zip(ts[::step], ys[::step])
    )


def _chart(tables: dict[str, pl.DataFrame]) -> str:
    """Window against time: the logged cwnd (black, the sender's own), each replay in colour."""
    first = next(iter(tables.values()))
    ts = [t for t in first["t_s"].to_list() if t is not None] or [0.0, 1.0]
    t0, t1 = float(min(ts)), float(max(ts))
    ys = [v for tb in tables.values() for c in ("cwnd", "logged_cwnd") for v in tb[c].to_list() if v is not None]
    ymax = float(max(ys, default=1.0)) * 1.05
    out = ['<svg class="quic" width="820" height="350" role="img" aria-label="congestion window against time">']
    out.append(f'<text x="40" y="345" font-size="11">time 0–{t1 - t0:.1f} s · window 0–{ymax / 1e3:.0f} kB</text>')
    out.append(
        f'<polyline class="logged" fill="none" stroke="#000" stroke-opacity="0.45" stroke-width="3.5" '
        f'points="{_points(first["t_s"], first["logged_cwnd"], t0, t1, ymax)}"><title>logged cwnd (the sender)</title></polyline>'
    )
    for (label, tb), color in zip(tables.items(), COLORS):
        out.append(
            f'<polyline class="replay" data-label="{e(label)}" fill="none" stroke="{color}" stroke-width="1" '
            f'points="{_points(tb["t_s"], tb["cwnd"], t0, t1, ymax)}"><title>{e(label)}</title></polyline>'
        )
    legend = " · ".join(f'<span style="color:{c}">{e(k)}</span>' for k, c in zip(tables, COLORS))
    return (
        "".join(out) + f"</svg><p class=\"note\">wide grey: the stack's logged cwnd (the sender's own) · {legend}</p>"
    )


def _pct(x: Any) -> str:
    return f"{100 * x:.2f} %" if isinstance(x, (int, float)) else "–"


def quic_html(files: list[tuple[str, dict[str, Any] | None, str | None]], series: dict[tuple[str, int], dict]) -> str:
    """The page's text; ``series[(path, connection)]`` holds that connection's replay tables."""
    css = resources.files("hscc_trace.reports").joinpath("report.css").read_text(encoding="utf-8")
    body = ["<h1>QUIC connections from qlog</h1>", f'<p class="note caveat">{e(CAVEAT)}</p>']
    for path, doc, err in files:
        body.append(f"<h2>{e(Path(path).name)}</h2>")
        if err:
            body.append(f'<p class="note error">error: {e(err)}</p>')
            continue
        for w in (doc or {}).get("warnings", []):
            body.append(f'<p class="note">warning: {e(w)}</p>')
        for i, c in enumerate((doc or {}).get("connections", [])):
            who = "the data sender" if c["logs_the_sender"] else "the data receiver"
            body.append(
                f'<section class="quic-connection"><h3>connection {i}</h3><p class="vantage">vantage: '
                f"{e(str(c['vantage']))} (the qlog is {who}'s; data sender: {e(str(c['data_sender']))}) · "
                f"{c['packets_sent']} packets sent, {c['ack_frames']} ACK frames, {c['rtt_samples']} RTT samples, "
                f"losses {c['losses']['stack']} (stack) / {c['losses']['ours']} (RFC 9002 §6.1)</p>"
            )
            if c.get("verdict"):
                body.append(f'<p class="verdict">verdict: {e(c["verdict"])}</p>')
            if c["replays"]:
                body.append(
                    "<table><thead><tr><th>replay</th><th>median</th><th>p90</th><th>exact</th></tr></thead><tbody>"
                )
                for r in c["replays"]:
                    body.append(
                        f"<tr><td>{e(r['algorithm'])}[{e(r['flavor'])}]</td><td>{_pct(r['median'])}</td>"
                        f"<td>{_pct(r['p90'])}</td><td>{_pct(r.get('exact'))}</td></tr>"
                    )
                body.append("</tbody></table>")
            tables = series.get((path, i)) or {}
            if tables:
                body.append(_chart(tables))
            else:
                body.append(f'<p class="note">no window drawn: the qlog is {who}\'s or logs no cwnd</p>')
            body.append("</section>")
    csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        f'<meta name="generator" content="hscc-trace {e(__version__)}">\n'
        f"<title>hscc-trace QUIC report</title>\n<style>{css}</style>\n</head>\n<body>\n<main>\n"
        + "\n".join(body)
        + f"\n<footer>Generated by hscc-trace {e(__version__)}; no script, no network request.</footer>\n"
        "</main>\n</body>\n</html>\n"
    )


def write_quic_report(
    files: list[tuple[str, dict[str, Any] | None, str | None]], series: dict[tuple[str, int], dict], path: str | Path
) -> Path:
    """Write the page to ``path`` (a temporary file renamed into place); InputError when it cannot."""
    from hscc_trace.atomic import write_texts

    path = Path(path)
    write_texts(path, [quic_html(files, series)], "report", parents=True)
    return path
