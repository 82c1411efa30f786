"""The census: one self-contained, offline HTML page over a whole corpus dataset.

Built from the Parquet dataset only (``hscc-trace census DATASET -o census.html``), so it can be
rebuilt without re-analysis. Like the per-run report (hscc_trace.reports.html) it inlines plotly.js'
basic bundle and a Content-Security-Policy that allows only the page's own scripts (by hash) and
forbids every request. Everything from a capture (file names, messages) is HTML-escaped.

Sections: verdict counts by algorithm (:func:`flow_verdict`), goodput and minimum-RTT distributions
per verdict, congestion episodes per minute, the worst fits, errors by reason, and for each
capture named the command that analyzes it in depth. Like the report, the page sets
``window.hsccStatus`` (``done``, ``error``, ``expected`` / ``rendered`` figures, ``ms``) once
every figure is drawn, for the browser test and the benchmark.
"""

from __future__ import annotations

import html
import json
import shlex
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hscc_trace.corpus import dataset as ds

WORST_FITS = 20  # rows in the worst-fits and the most-episodes tables
ERROR_ROWS = 200  # failed captures listed by name (all are counted by reason)
BINS = 30  # histogram bins (log10 scale) for goodput and RTT
#: the verdict of a flow no algorithm was fitted to
NOT_FITTED = "not fitted"


def flow_verdict() -> Any:
    """The per-flow verdict the census counts and groups by, as a polars expression over the
    ``flows`` table: the algorithm a flow's verdict identifies (``behaves as NAME`` for that class),
    else its class (``ambiguous``, ``unknown``, ``not enough data``: docs/verdicts.md) — never the
    lowest error alone."""
    import polars as pl

    return (
        pl.when(pl.col("verdict") == "identified")
        .then(pl.col("verdict_name"))
        .when(pl.col("verdict") == "behaves as")
        .then(pl.lit("behaves as ") + pl.col("verdict_name"))
        .otherwise(pl.col("verdict").fill_null(NOT_FITTED))
    )


def _esc(x: Any) -> str:
    return html.escape("" if x is None else str(x))


def _f(x: Any, fmt: str) -> str:
    return "–" if x is None else format(x, fmt)


def _table(head: list[str], rows: Iterable[Sequence[Any]], raw: Sequence[int] = ()) -> str:
    """A table; cells are escaped except the columns in ``raw`` (already HTML)."""
    h = "".join(f"<th>{_esc(c)}</th>" for c in head)
    b = "".join(
        "<tr>" + "".join(f"<td>{c if i in raw else _esc(c)}</td>" for i, c in enumerate(r)) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{h}</tr></thead><tbody>{b}</tbody></table>"


def _utc(ns: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ns / 1e9, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def _cmd(capture: str, flow: int | None = None) -> str:
    """The command that analyzes one capture (one flow) in depth, as escaped HTML."""
    f = f" --flow {int(flow)}" if flow is not None else ""
    return f"<code>hscc-trace analyze {_esc(shlex.quote(capture))}{f} -o report.html</code>"


def _hist(flows: Any, col: str, scale: float, title: str, unit: str) -> dict[str, Any]:
    """Stacked histogram of ``col`` · ``scale`` (log-spaced bins) per verdict."""
    import polars as pl

    traces = []
    df = flows.filter(pl.col(col).is_not_null() & (pl.col(col) > 0)) if flows.height else flows
    if df.height:
        v = np.log10(df[col].to_numpy().astype(float) * scale)
        edges = np.linspace(v.min(), v.max() + 1e-9, BINS + 1)
        mids = (10 ** ((edges[:-1] + edges[1:]) / 2)).round(4).tolist()
        for label in sorted(df["verdict"].unique().to_list()):
            a = np.log10(df.filter(pl.col("verdict") == label)[col].to_numpy().astype(float) * scale)
            counts, _ = np.histogram(a, edges)
            traces.append({"type": "bar", "name": label, "x": mids, "y": counts.tolist()})
    return {
        "data": traces,
        "layout": {
            "title": {"text": title},
            "barmode": "stack",
            "xaxis": {"type": "log", "title": {"text": unit}},
            "yaxis": {"title": {"text": "flows"}},
            "margin": {"t": 40},
        },
    }


def build(dataset: str | Path) -> str:
    """The census page for ``dataset`` as an HTML string."""
    import polars as pl

    caps, flows, errors, eps = (ds.read(dataset, t) for t in ("captures", "flows", "errors", "episodes"))
    named = flows.filter(pl.col("verdict").is_in(["identified", "behaves as"])).height
    flows = flows.with_columns(flow_verdict().alias("verdict"))
    figs: list[dict[str, Any]] = []

    def fig(spec: dict[str, Any]) -> str:
        figs.append(spec)
        return f"<div class=fig id=fig{len(figs) - 1}></div>"

    sections = [_summary(caps, errors, flows, named), _verdict_counts(flows, fig), _distributions(flows, fig)]
    if caps.height:
        sections.append(_episodes_per_minute(caps, eps, fig))
    grp = ds.read(dataset, "groups")
    if grp.height:
        sections.append(_bottleneck_groups(grp, fig))
    sections += [_worst_fits(flows), _errors_by_reason(errors)]
    return _page(dataset, sections, figs)


def _summary(caps: Any, errors: Any, flows: Any, named: int) -> str:
    """The opening line: captures, failures, flows, how many named, packets and time span."""
    span = ""
    if caps.height:
        first, last = caps["first_ns"].min(), caps["last_ns"].max()
        if first is not None and last is not None:
            span = f", captured from {_utc(first)} to {_utc(last)}"
    return (
        f"<p>{caps.height} capture(s) analyzed, {errors.height} capture(s) failed; {flows.height} flow(s), "
        f"{named} named by their verdict; {int(caps['packets_total'].sum() or 0)} packets{_esc(span)}.</p>"
    )


def _verdict_counts(flows: Any, fig: Callable[[dict[str, Any]], str]) -> str:
    """Flows by verdict: a bar chart and a table (share, captures, median goodput and RTT)."""
    import polars as pl

    per = (
        flows.group_by("verdict")
        .agg(
            pl.len().alias("flows"),
            pl.col("blake3").n_unique().alias("captures"),
            pl.col("goodput_bps").median().alias("goodput"),
            pl.col("rtt_min_s").median().alias("rtt"),
        )
        .sort(["flows", "verdict"], descending=[True, False])
    )
    total = max(flows.height, 1)
    return (
        "<h2>Verdicts by algorithm</h2><p>Flows by verdict: the algorithm a flow's verdict identifies, "
        "else the verdict's class — ambiguous (several fit), unknown (nothing fits), not enough data "
        "(docs/verdicts.md). The lowest error alone names nothing.</p>"
        + fig(
            {
                "data": [{"type": "bar", "x": per["verdict"].to_list(), "y": per["flows"].to_list()}],
                "layout": {"title": {"text": "Flows by verdict"}, "margin": {"t": 40}},
            }
        )
        + _table(
            ["verdict", "flows", "share", "captures", "median goodput (Mbit/s)", "median min RTT (ms)"],
            [
                [
                    r["verdict"],
                    r["flows"],
                    f"{100 * r['flows'] / total:.1f} %",
                    r["captures"],
                    _f(None if r["goodput"] is None else r["goodput"] / 1e6, ".2f"),
                    _f(None if r["rtt"] is None else r["rtt"] * 1e3, ".1f"),
                ]
                for r in per.iter_rows(named=True)
            ],
        )
    )


def _distributions(flows: Any, fig: Callable[[dict[str, Any]], str]) -> str:
    """Goodput and minimum-RTT histograms by verdict."""
    return (
        "<h2>Goodput and RTT by verdict</h2>"
        + fig(_hist(flows, "goodput_bps", 1e-6, "Goodput per flow, by verdict", "Mbit/s"))
        + fig(_hist(flows, "rtt_min_s", 1e3, "Minimum RTT per flow, by verdict", "ms"))
    )


def _episodes_per_minute(caps: Any, eps: Any, fig: Callable[[dict[str, Any]], str]) -> str:
    """Congestion episodes per minute of capture: a histogram and the captures with the most."""
    import polars as pl

    n_eps = eps.group_by("blake3").len() if eps.height else pl.DataFrame(schema={"blake3": pl.String, "len": pl.UInt32})
    per_cap = (
        caps.with_columns(((pl.col("last_ns") - pl.col("first_ns")) / 6e10).alias("minutes"))
        .join(n_eps, on="blake3", how="left")
        .with_columns(pl.col("len").fill_null(0))
        .filter(pl.col("minutes") > 0)
        .with_columns((pl.col("len") / pl.col("minutes")).alias("per_min"))
    )
    vals = per_cap["per_min"].to_numpy() if per_cap.height else np.array([])
    c, e = np.histogram(vals, bins=BINS) if vals.size else (np.array([]), np.array([0.0]))
    top = per_cap.sort(["per_min", "capture"], descending=[True, False]).head(WORST_FITS)
    return (
        "<h2>Congestion episodes per minute</h2><p>Episodes (fast retransmit, SACK recovery, RTO, "
        f"ECN) per minute of capture, over the {per_cap.height} capture(s) that last longer than "
        "an instant; the captures with the most:</p>"
        + fig(
            {
                "data": [{"type": "bar", "x": ((e[:-1] + e[1:]) / 2).round(3).tolist(), "y": c.tolist()}],
                "layout": {
                    "title": {"text": "Congestion episodes per minute (captures)"},
                    "xaxis": {"title": {"text": "episodes / min"}},
                    "yaxis": {"title": {"text": "captures"}},
                    "margin": {"t": 40},
                },
            }
        )
        + _table(
            ["capture", "episodes", "minutes", "episodes/min", "analyze in depth"],
            [
                [r["capture"], r["len"], _f(r["minutes"], ".2f"), _f(r["per_min"], ".1f"), _cmd(r["capture"])]
                for r in top.iter_rows(named=True)
            ],
            raw=(4,),
        )
    )


def _bottleneck_groups(grp: Any, fig: Callable[[dict[str, Any]], str]) -> str:
    """Bottleneck groups: Jain's index histogram and the least fair groups."""
    import polars as pl

    per_group = (
        grp.group_by("blake3", "capture", "group")
        .agg(
            pl.col("jain").first(),
            pl.col("utilization").first(),
            pl.len().alias("flows"),
            (
                pl.col("flow_id").cast(pl.String)
                + " "
                + pl.col("algo").fill_null("?")
                + " "
                + (pl.col("share") * 100).round(1).cast(pl.String)
                + " %"
            )
            .str.join(", ")
            .alias("shares"),
        )
        .sort(["jain", "capture", "group"], nulls_last=True)
    )
    jv = per_group["jain"].drop_nulls().to_numpy()
    c, e = np.histogram(jv, bins=BINS, range=(0.0, 1.0)) if jv.size else (np.array([]), np.array([0.0]))
    return (
        f"<h2>Bottleneck groups</h2><p>{per_group.height} group(s) of flows sharing a bottleneck "
        f"(docs/groups.md) in {per_group['blake3'].n_unique()} capture(s); median Jain's index "
        f"{_f(float(np.median(jv)) if jv.size else None, '.3f')}. The least fair:</p>"
        + fig(
            {
                "data": [{"type": "bar", "x": ((e[:-1] + e[1:]) / 2).round(3).tolist(), "y": c.tolist()}],
                "layout": {
                    "title": {"text": "Jain's fairness index per bottleneck group"},
                    "xaxis": {"title": {"text": "Jain's index"}},
                    "yaxis": {"title": {"text": "groups"}},
                    "margin": {"t": 40},
                },
            }
        )
        + _table(
            ["capture", "group", "Jain", "utilization", "flow algorithm share", "analyze in depth"],
            [
                [
                    r["capture"],
                    r["group"],
                    _f(r["jain"], ".3f"),
                    _f(None if r["utilization"] is None else 100 * r["utilization"], ".1f"),
                    r["shares"],
                    _cmd(r["capture"]),
                ]
                for r in per_group.head(WORST_FITS).iter_rows(named=True)
            ],
            raw=(5,),
        )
    )


def _worst_fits(flows: Any) -> str:
    """The flows whose best fit has the largest error."""
    import polars as pl

    worst = (
        flows.filter(pl.col("best_mare").is_not_null())
        .sort(["best_mare", "capture", "flow_id"], descending=[True, False, False])
        .head(WORST_FITS)
    )
    return (
        "<h2>Worst fits</h2><p>Flows whose best fit has the largest error (mare: median relative "
        "error of the replayed window).</p>"
        + (
            _table(
                ["capture", "flow", "best", "mare", "analyze in depth"],
                [
                    [r["capture"], r["flow_id"], r["best"], _f(r["best_mare"], ".3f"), _cmd(r["capture"], r["flow_id"])]
                    for r in worst.iter_rows(named=True)
                ],
                raw=(4,),
            )
            if worst.height
            else "<p>No fitted flow.</p>"
        )
    )


def _errors_by_reason(errors: Any) -> str:
    """The failed captures by reason, and the first of them."""
    if errors.height:
        by = errors.group_by("reason").len().sort(["len", "reason"], descending=[True, False])
        listed = errors.select("capture", "reason", "message").sort("reason", "capture").head(ERROR_ROWS)
        more = errors.height - listed.height
        return (
            "<h2>Errors by reason</h2>"
            + _table(["reason", "captures"], by.rows())
            + _table(["capture", "reason", "message"], listed.rows())
            + (f"<p>… and {more} more (all in the dataset's <code>errors</code> table).</p>" if more else "")
        )
    return "<h2>Errors by reason</h2><p>No errors.</p>"


def _page(dataset: str | Path, sections: list[str], figs: list[dict[str, Any]]) -> str:
    """The whole page: the sections, the figures' specs and the script that draws them."""
    from hscc_trace.reports import html as rhtml

    plotly = rhtml._asset("plotly-basic.min.js")
    data = (
        json.dumps(figs, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    )
    draw = (
        "(function(){const t0=performance.now();"
        "const S=window.hsccStatus={expected:0,rendered:0,done:false,error:null,ms:null,sinceNavigation:null};"
        "try{const F=JSON.parse(document.getElementById('figs').textContent);S.expected=F.length;"
        "Promise.all(F.map((f,i)=>Plotly.newPlot(document.getElementById('fig'+i),f.data,f.layout,"
        "{displaylogo:false,responsive:true}).then(()=>{S.rendered++;})))"
        ".then(()=>{S.ms=performance.now()-t0;S.sinceNavigation=performance.now();S.done=true;},"
        "(e)=>{S.error=String(e);console.error(e);});}"
        "catch(e){S.error=String(e);console.error(e);}})();"
    )
    csp = (
        f"default-src 'none'; script-src {rhtml._csp_hash(plotly)} {rhtml._csp_hash(draw)}; "
        "style-src 'unsafe-inline'; img-src data:; connect-src 'none'"
    )
    style = (
        "body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px;text-align:left}.fig{height:380px}"
        "code{font-size:12px}"
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
