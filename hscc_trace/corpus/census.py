"""The census: one self-contained, offline HTML page over a whole corpus dataset.

Built from the Parquet dataset only (``hscc-trace census DATASET -o census.html``), so it can be
rebuilt without re-analysis. Like the per-run report (hscc_trace.reports.html) it inlines plotly.js'
basic bundle and a Content-Security-Policy that allows only the page's own scripts (by hash) and
forbids every request. Everything from a capture (file names, messages) is HTML-escaped.

Sections: best-fit counts by algorithm, goodput and minimum-RTT distributions per best-fit
algorithm (histograms), congestion episodes per minute of capture, the worst fits, errors by
reason, and the file names of captures worth analyzing in depth.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hscc_trace.corpus import dataset as ds

WORST_FITS = 20  # rows in the worst-fits table
BINS = 30  # histogram bins (log10 scale) for goodput and RTT


def _esc(x: Any) -> str:
    return html.escape("" if x is None else str(x))


def _f(x: Any, fmt: str) -> str:
    return "–" if x is None else format(x, fmt)


def _table(head: list[str], rows: Iterable[Sequence[Any]]) -> str:
    h = "".join(f"<th>{_esc(c)}</th>" for c in head)
    b = "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{b}</tbody></table>"


def _hist(flows, col: str, scale: float, title: str, unit: str) -> dict[str, Any]:
    import polars as pl

    traces = []
    if flows.height and col in flows.columns:
        df = flows.filter(pl.col(col).is_not_null() & (pl.col(col) > 0) & pl.col("best").is_not_null())
        if df.height:
            v = np.log10(df[col].to_numpy().astype(float) * scale)
            edges = np.linspace(v.min(), v.max() + 1e-9, BINS + 1)
            mids = (10 ** ((edges[:-1] + edges[1:]) / 2)).round(4).tolist()
            for algo in sorted(df["best"].unique().to_list()):
                a = np.log10(df.filter(pl.col("best") == algo)[col].to_numpy().astype(float) * scale)
                counts, _ = np.histogram(a, edges)
                traces.append({"type": "bar", "name": algo, "x": mids, "y": counts.tolist()})
    return {
        "data": traces,
        "layout": {
            "title": {"text": title},
            "barmode": "stack",
            "xaxis": {"type": "log", "title": {"text": unit}},
            "yaxis": {"title": {"text": "flows"}},
        },
    }


def build(dataset: str | Path) -> str:
    """The census page for ``dataset`` as an HTML string."""
    import polars as pl

    from hscc_trace.reports import html as rhtml

    caps, flows, errors, eps = (ds.read(dataset, t) for t in ("captures", "flows", "errors", "episodes"))
    figs: list[dict[str, Any]] = []
    sections: list[str] = []
    n_flows = flows.height
    fitted = flows.filter(pl.col("best").is_not_null()) if n_flows else flows
    sections.append(
        f"<p>{caps.height} capture(s) analyzed, {errors.height} error(s), {n_flows} flow(s), "
        f"{fitted.height} with a best fit.</p>"
    )
    counts = (
        fitted.group_by("best").len().sort(["len", "best"], descending=[True, False])
        if fitted.height
        else pl.DataFrame({"best": [], "len": []})
    )
    figs.append(
        {
            "data": [{"type": "bar", "x": counts["best"].to_list(), "y": counts["len"].to_list()}],
            "layout": {"title": {"text": "Best-fitting algorithm (flows)"}},
        }
    )
    sections.append(
        "<h2>Best fit by algorithm</h2><div class=fig id=fig0></div>" + _table(["algorithm", "flows"], counts.rows())
    )
    figs.append(_hist(flows, "goodput_bps", 1e-6, "Goodput per best-fit algorithm", "Mbit/s"))
    figs.append(_hist(flows, "rtt_min_s", 1e3, "Minimum RTT per best-fit algorithm", "ms"))
    sections.append("<h2>Goodput and RTT</h2><div class=fig id=fig1></div><div class=fig id=fig2></div>")
    if caps.height:
        dur = caps.with_columns(((pl.col("last_ns") - pl.col("first_ns")) / 6e10).alias("minutes"))
        n_eps = (
            eps.group_by("sha256").len()
            if eps.height
            else pl.DataFrame({"sha256": [], "len": []}, schema={"sha256": pl.String, "len": pl.UInt32})
        )
        per = dur.join(n_eps, on="sha256", how="left").with_columns(pl.col("len").fill_null(0))
        per = per.filter(pl.col("minutes") > 0).with_columns((pl.col("len") / pl.col("minutes")).alias("per_min"))
        vals = per["per_min"].to_numpy() if per.height else np.array([])
        c, e = np.histogram(vals, bins=BINS) if vals.size else (np.array([]), np.array([0.0]))
        figs.append(
            {
                "data": [{"type": "bar", "x": ((e[:-1] + e[1:]) / 2).round(3).tolist(), "y": c.tolist()}],
                "layout": {
                    "title": {"text": "Congestion episodes per minute (captures)"},
                    "xaxis": {"title": {"text": "episodes / min"}},
                },
            }
        )
        top = per.sort("per_min", descending=True).head(WORST_FITS)
        sections.append(
            "<h2>Episodes per minute</h2><div class=fig id=fig3></div>"
            + _table(
                ["capture", "episodes", "minutes", "episodes/min"],
                [
                    [r["capture"], r["len"], _f(r["minutes"], ".2f"), _f(r["per_min"], ".1f")]
                    for r in top.iter_rows(named=True)
                ],
            )
        )
    if fitted.height and "best_mare" in fitted.columns:
        worst = fitted.filter(pl.col("best_mare").is_not_null()).sort("best_mare", descending=True).head(WORST_FITS)
        sections.append(
            "<h2>Worst fits</h2><p>Best fit with the largest error: analyze these captures in "
            "depth with <code>hscc-trace analyze FILE -o report.html</code>.</p>"
            + _table(
                ["capture", "flow", "best", "mare"],
                [
                    [r["capture"], r["flow_id"], r["best"], _f(r["best_mare"], ".3f")]
                    for r in worst.iter_rows(named=True)
                ],
            )
        )
    if errors.height:
        by = errors.group_by("reason").len().sort("len", descending=True)
        sections.append(
            "<h2>Errors by reason</h2>"
            + _table(["reason", "captures"], by.rows())
            + _table(
                ["capture", "reason", "message"], errors.select("capture", "reason", "message").sort("capture").rows()
            )
        )
    else:
        sections.append("<h2>Errors by reason</h2><p>No errors.</p>")
    plotly = rhtml._asset("plotly-basic.min.js")
    data = (
        json.dumps(figs, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    )
    draw = (
        "const F=JSON.parse(document.getElementById('figs').textContent);"
        "F.forEach((f,i)=>{const el=document.getElementById('fig'+i);"
        "if(el)Plotly.newPlot(el,f.data,f.layout,{displaylogo:false,responsive:true});});"
    )
    csp = (
        f"default-src 'none'; script-src {rhtml._csp_hash(plotly)} {rhtml._csp_hash(draw)}; "
        "style-src 'unsafe-inline'; img-src data:; connect-src 'none'"
    )
    style = (
        "body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}.fig{height:380px}"
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset=utf-8>"
        f'<meta http-equiv="Content-Security-Policy" content="{csp}"><title>hscc-trace census</title>'
        f"<style>{style}</style></head><body><h1>hscc-trace census: {_esc(Path(dataset).name)}</h1>"
        + "".join(sections)
        + f'<script type="application/json" id=figs>{data}</script>'
        f"<script>{plotly}</script><script>{draw}</script></body></html>"
    )


def write(dataset: str | Path, out: str | Path) -> Path:
    """Write the census page; returns its path."""
    p = Path(out)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(build(dataset), encoding="utf-8")
    return p
