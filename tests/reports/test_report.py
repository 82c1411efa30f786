"""The HTML report and its figures, on synthetic Analysis objects that follow hscc_trace.schema.

Decimation is checked against small series worked out by hand; the report is checked by
decoding what it embeds (each flow's figures are gzip+base64 JSON) rather than by string
matching alone. The browser side is in test_report_browser.py.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import html as htmlmod
import json
import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import polars as pl
import pytest
from synthetic_analysis import make_analysis, make_flow

from hscc_trace import schema
from hscc_trace.errors import InputError, Warn
from hscc_trace.reports import ReportInfo, flow_figures, write_report
from hscc_trace.reports import decimate as dec

EVIL = "<script>alert(1)</script>"


# --- decimation, worked by hand -----------------------------------------------------------------


def test_m4_keeps_everything_when_small() -> None:
    x = np.arange(8.0)
    assert dec.m4_indices(x, x[::-1].copy(), buckets=2).tolist() == list(range(8))  # 8 ≤ 4·2


def test_m4_first_min_max_last_per_column() -> None:
    # 16 points, 2 columns over x = 0..15: column = floor(x·2/15) → x 0..7 in column 0, 8..15 in 1.
    # column 0, y = 5 1 9 3 3 3 3 4 → first i0, min i1 (1), max i2 (9), last i7
    # column 1, y = 2 2 8 8 0 7 7 6 → first i8, min i12 (0), max i10 (first of the two 8s), last i15
    x = np.arange(16.0)
    y = np.array([5, 1, 9, 3, 3, 3, 3, 4, 2, 2, 8, 8, 0, 7, 7, 6], dtype=float)
    assert dec.m4_indices(x, y, buckets=2).tolist() == [0, 1, 2, 7, 8, 10, 12, 15]


def test_m2_lowest_and_highest_per_column_for_markers() -> None:
    # the series of the M4 test above: column 0 → min i1 (1), max i2 (9); column 1 → max i10 (first
    # of the two 8s), min i12 (0); a NaN sample is dropped first (i5, inside column 0)
    x = np.arange(16.0)
    y = np.array([5, 1, 9, 3, 3, np.nan, 3, 4, 2, 2, 8, 8, 0, 7, 7, 6], dtype=float)
    xs, ys, red = dec.m2(x, y, buckets=2)
    assert xs.tolist() == [1, 2, 10, 12] and ys.tolist() == [1, 9, 8, 0]
    assert red.n_in == 15 and red.n_out == 4 and red.decimated
    xs, ys, red = dec.m2(x[:4], y[:4], buckets=2)  # 4 ≤ 2·2: all kept
    assert xs.tolist() == [0, 1, 2, 3] and not red.decimated


def test_m4_drops_nan_and_reports_reduction() -> None:
    x = np.arange(100.0)
    y = np.where(x % 2 == 0, x, np.nan)  # 50 real samples
    xs, ys, red = dec.m4(x, y, buckets=5)  # 50 > 20 → decimated
    assert not np.isnan(ys).any()
    assert red.n_in == 50 and red.n_out == len(xs) and red.decimated and red.buckets == 5
    assert ys.min() == 0 and ys.max() == 98 and xs[0] == 0 and xs[-1] == 98


def test_m4_preserves_every_column_extreme_on_random_data() -> None:
    rng = np.random.default_rng(7)
    x = np.sort(rng.uniform(0, 10, 50_000))
    y = np.cumsum(rng.normal(size=50_000))
    idx = dec.m4_indices(x, y, buckets=100)
    assert len(idx) <= 400
    cols = np.clip(((x - x[0]) * 100 / (x[-1] - x[0])).astype(int), 0, 99)
    kept = set(idx.tolist())
    for b in (0, 17, 99):
        members = np.flatnonzero(cols == b)
        assert members[0] in kept and members[-1] in kept
        assert y[members].max() == max(y[i] for i in members if i in kept)
        assert y[members].min() == min(y[i] for i in members if i in kept)


def test_select_leaves_out_exactly_the_nan_samples() -> None:
    # select skips the NaN test of series whose sum is not NaN: with NaNs, +inf and −inf (a NaN
    # sum without a NaN), none, all — the indices are those of m4/m2 on the samples that are not NaN
    rng = np.random.default_rng(3)
    for trial in range(120):
        n, b = int(rng.integers(0, 400)), int(rng.integers(1, 40))
        x = np.sort(rng.uniform(0, 10, n))
        y = np.cumsum(rng.normal(size=n))
        if n and trial % 4 == 1:
            y[rng.integers(0, n, max(n // 5, 1))] = np.nan
        if n > 2 and trial % 4 == 2:
            y[0], y[-1] = np.inf, -np.inf
        if trial % 8 == 3:
            y[:] = np.nan
        ok = np.flatnonzero(~np.isnan(y))
        for markers in (False, True):
            idx, red = dec.select(x, y, b, markers=markers)
            if markers:
                want_x = dec.m2(x, y, b)[0]
                assert np.array_equal(x[idx], want_x) and red.n_in == len(ok), (trial, markers)
            else:
                want = ok[dec.m4_indices(x[ok], y[ok], b)] if len(ok) else ok
                assert np.array_equal(idx, want) and red.n_in == len(ok), (trial, markers)
            assert idx.dtype == np.int64


@pytest.mark.parametrize("mode", ["compile", "interpret"])
def test_select_line_is_select_then_flat_interior(mode: str) -> None:
    # the one pass of a line (decimate.select_line: NaN left out, M4, flat runs thinned) gives the
    # points and the reduction of decimate.select followed by decimate.flat_interior — with NaNs,
    # infinities, plateaus (ties and flat runs), repeated times, nothing decimated or everything
    # NaN, and with the time axis' columns found beforehand (column_runs) or not
    from hscc_trace.perf import firstuse

    rng = np.random.default_rng(7)
    with firstuse.mode(mode):
        for trial in range(160):
            n, b = int(rng.integers(0, 900)), int(rng.integers(1, 60))
            x = np.sort(rng.uniform(0, rng.uniform(0.001, 100), n))
            if n and trial % 7 == 0:
                x[: n // 2] = x[0]
            y = rng.integers(0, 4, n).astype(float) if trial % 2 else np.cumsum(rng.normal(size=n))
            if n and trial % 4 == 1:
                y[rng.integers(0, n, max(n // 5, 1))] = np.nan
            if n > 2 and trial % 4 == 2:
                y[0], y[-1] = np.inf, -np.inf
            if trial % 16 == 3:
                y[:] = np.nan
            want, red = dec.select(x, y, b)
            if len(want):
                want = want[dec.flat_interior([y[want]])]
            for runs in (None, dec.column_runs(x, b)):
                got, got_red = dec.select_line(x, y, b, runs)
                assert np.array_equal(got, want) and got_red == red, (trial, n, b, runs is None)
                assert got.dtype == np.int64
        assert dec.column_runs(np.array([0.0, 0.1, 0.2, 0.9, 1.0]), 2).tolist() == [0, 3, 5]


@pytest.mark.parametrize("mode", ["compile", "interpret"])
def test_select_lines_is_select_line_of_each_series(mode: str) -> None:
    # several series on one time axis decimated by one compiled pass (decimate.select_lines, more
    # series than one batch holds): each one's points and reduction are select_line's, and its y
    # range is the lowest and highest finite value at those points (inf, -inf when there is none)
    from hscc_trace.perf import firstuse

    rng = np.random.default_rng(11)
    with firstuse.mode(mode):
        for trial in range(12):
            n, b = int(rng.integers(0, 700)), int(rng.integers(1, 40))
            x = np.sort(rng.uniform(0, 10, n))
            ys = []
            for j in range(int(rng.integers(1, dec.LINES_BATCH + 5))):
                y = rng.integers(0, 4, n).astype(float) if j % 2 else np.cumsum(rng.normal(size=n))
                if n and j % 3 == 1:
                    y[rng.integers(0, n, max(n // 5, 1))] = np.nan
                if n > 2 and j % 4 == 2:
                    y[0], y[-1] = np.inf, -np.inf
                if j % 5 == 4:
                    y[:] = np.nan
                ys.append(y if j % 2 else _read_only_copy(y))
            for runs in (None, dec.column_runs(x, b)):
                got = dec.select_lines(x, ys, b, runs)
                assert len(got) == len(ys)
                for y, (idx, red, lo, hi) in zip(ys, got):
                    want, want_red = dec.select_line(x, y, b, runs)
                    assert np.array_equal(idx, want) and red == want_red, (trial, n, b)
                    v = y[idx][np.isfinite(y[idx])]
                    assert (lo, hi) == ((float(v.min()), float(v.max())) if len(v) else (np.inf, -np.inf))


def _read_only_copy(y: np.ndarray) -> np.ndarray:
    y = y.copy()
    y.flags.writeable = False
    return y


def test_m4_compiled_pass_matches_the_numpy_twin() -> None:
    # random walks, integer plateaus (ties: the first lowest/highest wins), repeated times, few and
    # many columns: the one-pass kernel must pick exactly the indices of the vectorised reference
    rng = np.random.default_rng(11)
    for trial in range(200):
        n, b = int(rng.integers(5, 3000)), int(rng.integers(1, 200))
        x = np.sort(rng.uniform(0, rng.uniform(0.001, 100), n))
        if trial % 5 == 0:
            x[: n // 2] = x[0]
        y = rng.integers(0, 4, n).astype(float) if trial % 2 else np.cumsum(rng.normal(size=n))
        assert np.array_equal(dec.m4_indices(x, y, b), dec.m4_indices_numpy(x, y, b)), (trial, n, b)
    x = np.full(50, 3.0)  # zero time span: one column
    y = np.arange(50.0)[::-1]
    assert dec.m4_indices(x, y, 4).tolist() == [0, 49]  # first = max, last = min


def test_bars_become_filled_rectangles_with_a_minimum_height() -> None:
    from hscc_trace.reports.figures import to_rects

    # two bars: t=1 from 10 to 20 (tall enough), t=3 from 50 to 50.5 (grown to min_h 2 about its
    # middle 50.25: 49.25..51.25); width 0.4 → x from t-0.2 to t+0.2; four corners and a break each
    xs, ys, _ = dec.bars(np.array([1.0, 3.0]), np.array([10.0, 50.0]), np.array([20.0, 50.5]), buckets=10)
    tr = to_rects(
        {
            "type": "scatter",
            "x": xs,
            "y": ys,
            "name": "retransmission",
            "mode": "lines",
            "line": {"color": "#d62728", "width": 1.4},
            "connectgaps": False,
            "hoverinfo": "skip",
        },
        0.4,
        2.0,
    )
    assert tr["mode"] == "none" and tr["fill"] == "toself" and tr["fillcolor"] == "#d62728" and tr["meta"] == "data"
    assert "line" not in tr and tr["name"] == "retransmission"
    x, y = np.asarray(tr["x"]), np.asarray(tr["y"])
    assert np.allclose(x[[0, 1, 2, 3, 5, 6, 7, 8]], [0.8, 0.8, 1.2, 1.2, 2.8, 2.8, 3.2, 3.2])
    assert np.allclose(y[[0, 1, 2, 3, 5, 6, 7, 8]], [10, 20, 20, 10, 49.25, 51.25, 51.25, 49.25])
    assert np.isnan(x[4]) and np.isnan(y[9]) and len(x) == 10
    assert to_rects(None, 1.0, 1.0) is None


def test_bars_samples_and_shading_are_one_filled_path_per_series() -> None:
    fr = make_analysis(n_flows=1, n_acks=2000).captures[0].results[0]
    figs = flow_figures(fr)  # plotly graph_objects: validates mode "none", meta, hoveron
    for key, names in (("timeseq", {"data segment"}), ("rtt", {"RTT sample"})):
        by = {tr.name: tr for tr in figs[key].data}
        for n in names:
            assert by[n].fill == "toself" and by[n].mode == "none" and by[n].meta == "data", (key, n)
        # (the ACKs carrying new SACK info stay markers: drawn only when the SACK blocks are unknown)
        assert not [
            tr.name
            for tr in figs[key].data
            if tr.mode and "markers" in tr.mode and tr.name != "ACK carrying new SACK info"
        ]
    bands = [tr for f in figs.values() for tr in f.data if tr.fill == "toself" and tr.meta != "data"]
    assert bands and all(tr.mode == "none" for tr in bands)
    ts = [tr.name for tr in figs["timeseq"].data]
    assert ts.index("ACK") < ts.index("data segment")  # bars drawn on top of the ACK line


def test_bars_full_resolution_then_envelope() -> None:
    xs, ys, red = dec.bars(np.array([0.0, 1.0]), np.array([10.0, 20.0]), np.array([11.0, 21.0]), buckets=5)
    assert not red.decimated
    assert xs[:2].tolist() == [0.0, 0.0] and ys[:2].tolist() == [10.0, 11.0] and np.isnan(ys[2])
    # 6 bars into 2 columns: t 0,1,2 → column 0; t 3,4,5 → column 1 (t·2/5 floored, last clipped)
    t = np.arange(6.0)
    xs, ys, red = dec.bars(t, t * 10, t * 10 + 5, buckets=2)
    assert red.n_in == 6 and red.n_out == 2
    assert xs[0::3].tolist() == [1.0, 4.0]  # mean time of each column
    assert ys[0::3].tolist() == [0.0, 30.0] and ys[1::3].tolist() == [25.0, 55.0]  # lowest lo, highest hi


def test_merge_intervals_merges_overlaps_and_close_gaps() -> None:
    s, e = dec.merge_intervals(np.array([5.0, 0.0, 1.5, 10.0]), np.array([6.0, 1.0, 2.0, 10.0]), min_gap=0.6)
    # [0,1] and [1.5,2] are 0.5 apart (< 0.6) → [0,2]; [5,6] alone; [10,10] alone
    assert s.tolist() == [0.0, 5.0, 10.0] and e.tolist() == [2.0, 6.0, 10.0]


def test_drop_flat_and_runs() -> None:
    x = np.arange(6.0)
    y = np.array([1, 1, 1, 2, 2, 3], dtype=float)
    xs, ys = dec.drop_flat(x, y)
    assert xs.tolist() == [0, 2, 3, 4, 5] and ys.tolist() == [1, 1, 2, 2, 3]
    s, e, v = dec.runs(x, np.array(["a", "a", "b", "b", "b", "a"]))
    assert s.tolist() == [0, 2, 5] and e.tolist() == [2, 5, 5] and v.tolist() == ["a", "b", "a"]


# --- the report -----------------------------------------------------------------------------------


def _payloads(page: str) -> list[list[dict]]:
    """The embedded figures, one list per flow section (each figure is its own payload)."""
    blobs = re.findall(
        r'<script type="application/octet-stream" data-flow-payload data-section="([^"]+)" '
        r'data-div="([^"]+)" id="payload-\2">([^<]*)</script>',
        page,
    )
    out: dict[str, list[dict]] = {}
    for section, div, b in blobs:
        figs = json.loads(gzip.decompress(base64.b64decode(b)))
        assert [f["div"] for f in figs] == [div]
        out.setdefault(section, []).extend(figs)
    return list(out.values())


def _visible_html(page: str) -> str:
    """The page without its inlined scripts and compressed payloads (what the HTML parser sees as markup)."""
    return re.sub(r"<script\b[^>]*>.*?</script>", "", page, flags=re.S)


@pytest.fixture(scope="module")
def evil_analysis():
    a = make_analysis(n_flows=2, n_acks=6000, path=f"/tmp/{EVIL}.pcap", src=EVIL)
    c = a.captures[0]
    c.warnings.append(Warn(source=EVIL, message=f"odd packet {EVIL}", count=2))
    a.errors.append(f"{EVIL}.pcap: not a capture")
    # a user-named algorithm label and parameter value reach the page too
    fr = c.results[0]
    fr.replays[f"x{EVIL}"] = fr.replays["reno"]
    a.algorithms.append(f"x{EVIL}")
    a.params[f"x{EVIL}"] = {"note": EVIL}
    return a


@pytest.fixture(scope="module")
def evil_report(evil_analysis, tmp_path_factory) -> tuple[str, ReportInfo]:
    path = tmp_path_factory.mktemp("rep") / "report.html"
    info = write_report(evil_analysis, path)
    return path.read_text(encoding="utf-8"), info


def test_capture_strings_are_escaped_everywhere(evil_report) -> None:
    page, _ = evil_report
    assert EVIL not in page
    assert "<script>alert" not in page
    vis = _visible_html(page)
    assert htmlmod.escape(EVIL) in vis  # shown as text: file name, address, warning, label, parameter
    assert vis.count(htmlmod.escape(EVIL)) >= 5
    for figs in _payloads(page):
        text = json.dumps(figs)
        assert "<script" not in text  # names/titles in figures are escaped too (plotly renders some HTML)


def test_header_has_metadata_every_parameter_and_the_caveat(evil_analysis, evil_report) -> None:
    page, info = evil_report
    vis = _visible_html(page)
    assert "Open loop" in vis and "would have set" in vis and "not what the network would then have done" in vis
    m = evil_analysis.captures[0].meta
    assert "EN10MB" in vis and f"{m.packets_total:,}" in vis and f"{m.packets_tcp:,}" in vis and "non-ip: 3" in vis
    plain = vis.replace("<strong>", "").replace("</strong>", "")  # (values that differ from the default are bold)
    for algo, params in evil_analysis.params.items():
        for k, v in params.items():
            assert htmlmod.escape(f"{k} = {v:g}" if isinstance(v, float) else f"{k} = {v}") in plain, (algo, k)
    assert "Where the capture was taken" in vis and "sender (2 flows)" in vis
    assert vis.count("odd packet") == 1 and "not a capture" in vis


def test_report_without_plotly_package_and_flow_figures_names_the_extra(tmp_path: Path, monkeypatch) -> None:
    """The base install has no plotly Python package (the notebook extra): the report inlines the
    vendored plotly.js and is written all the same; flow_figures stops with one line naming the
    extra, not an ImportError."""
    import sys

    from hscc_trace.errors import UsageError
    from hscc_trace.reports import html as rhtml

    for name in [m for m in sys.modules if m == "plotly" or m.startswith("plotly.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "plotly", None)  # (import plotly… raises ImportError)
    monkeypatch.setattr(rhtml, "_PLOTLY_CACHE", {})
    a = make_analysis(n_flows=1, n_acks=500)
    info = write_report(a, tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert info.figures > 0 and page.count('id="plotlyjs"') == 1
    plotly_js = gzip.decompress(base64.b64decode(re.search(r'id="plotlyjs">([^<]*)<', page).group(1))).decode()
    assert plotly_js == rhtml._asset("plotly-basic.min.js") and "window.Plotly" in plotly_js
    with pytest.raises(UsageError) as err:
        flow_figures(a.captures[0].results[0])
    msg = str(err.value)
    assert "\n" not in msg and "flow_figures needs plotly" in msg and "pip install 'hscc-trace[notebook]'" in msg
    with pytest.raises(UsageError, match=r"traces other than bar, pie, scatter needs plotly"):
        rhtml._plotly_js(False)  # (a figure beyond the basic bundle would need the full one)


def test_offline_and_plotly_inlined_once(evil_report) -> None:
    page, info = evil_report
    assert page.count('id="plotlyjs"') == 1
    # template, plotly config, report config, plotly, loader + a payload per figure + a store per flow
    assert info.full_resolution_flows == info.flows == 2
    assert len(re.findall(r"<script\b", page)) == 4 + 1 + info.figures + info.flows
    vis = _visible_html(page)
    assert not re.search(r"\b(src|href)\s*=\s*\"(?!#)", vis)  # only in-page links
    assert "<link" not in vis and "@import" not in vis and "url(" not in vis
    csp = htmlmod.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1))
    assert (
        "default-src 'none'" in csp
        and "connect-src 'none'" in csp
        and "unsafe-inline' " not in csp.split("style-src")[0]
    )
    # the two scripts that may run are allowed by hash: the loader and the (compressed) plotly.js
    loader = re.search(r"<script>(.*?)</script>", page, flags=re.S).group(1)
    plotly_js = gzip.decompress(base64.b64decode(re.search(r'id="plotlyjs">([^<]*)<', page).group(1))).decode()
    for src in (loader, plotly_js):
        h = base64.b64encode(hashlib.sha256(src.encode()).digest()).decode()
        assert f"'sha256-{h}'" in csp
    assert "window.Plotly" in plotly_js


def test_flow_overview_links_to_each_flow_section(evil_report) -> None:
    page, info = evil_report
    vis = _visible_html(page)
    for fid in (0, 1):
        assert f'<a href="#flow-0-{fid}">{fid}</a>' in vis
        assert f'<section class="flow" id="flow-0-{fid}">' in vis
    # the verdict column: a name only with an identified verdict, coloured by its class
    assert "<th>verdict</th>" in vis
    assert re.search(r'<span class="verdict v-(identified|behaves|ambiguous|unknown|ned)">', vis)
    assert "cwnd 88% / rwnd 6% / app 4%" in vis or re.search(r"cwnd \d+% / rwnd \d+% / app \d+%", vis)


def test_metrics_table_per_flow(evil_report) -> None:
    vis = _visible_html(evil_report[0])
    assert vis.count("Fit of each algorithm to the actual sender") == 2
    assert "median abs. rel. error" in vis and "predicted goodput" in vis and "correlation" in vis
    # rows are highlighted by the verdict only: the named algorithm, or an ambiguous verdict's candidates
    assert '<tr class="best">' not in vis
    assert (
        ('<tr class="v-identified">' in vis)
        or ('<tr class="v-behaves">' in vis)
        or ('<tr class="v-ambiguous">' in vis)
        or ("v-unknown" in vis)
        or ("v-ned" in vis)
    )


def _blocks(fig: dict) -> dict[str, list[dict]]:
    """The traces of each panel (block) of an embedded figure, by block key, in display order."""
    return {b["key"]: [tr for tr in fig["data"] if tr["legend"] == b["legend"]] for b in fig["blocks"]}


def test_every_figure_is_embedded_with_consistent_traces(evil_analysis, evil_report) -> None:
    page, info = evil_report
    payloads = _payloads(page)
    assert len(payloads) == info.flows == 2
    figs = [f for p in payloads for f in p]
    assert len(figs) == info.figures == 4  # per flow: the main panels, and every algorithm's signals
    divs = re.findall(r'<div class="fig" id="(fig\d+)" data-panel="([^"]+)"', page)
    assert [f["div"] for f in figs] == [d for d, _ in divs]
    assert [p for _, p in divs] == ["main", "signals"] * 2
    main, sig = _blocks(payloads[0][0]), _blocks(payloads[0][1])
    # both figures of a flow start on the same time range: [0, the flow's duration]
    for flow in payloads:
        r = flow[0]["layout"]["xaxis"]["range"]
        assert r[0] == 0 and r[1] > 0 and flow[1]["layout"]["xaxis"]["range"] == r
    assert list(main) == ["window", "rtt", "goodput", "timeseq"]
    assert {"algo:fusion", "algo:ctcp", "algo:hrf", "algo:kyushu-highspeed", "algo:cubic", "algo:highspeed"} <= set(sig)
    for f in figs:
        assert f["data"], f["div"]
        assert "template" not in f["layout"]  # one shared template in the page, not one per figure
        lay = f["layout"]
        for tr in f["data"]:
            assert len(tr["x"]) == len(tr["y"])
        # one shared time axis: every row's x axis follows the first one
        xaxes = sorted((k for k in lay if re.fullmatch(r"xaxis\d*", k)), key=lambda k: int(k[5:] or 1))
        assert len(xaxes) >= 4 and all(lay[k]["matches"] == "x" for k in xaxes[1:])
        # rows stacked top to bottom without overlapping
        doms = [lay["yaxis" + k[5:]]["domain"] for k in xaxes]
        assert all(lo < hi for lo, hi in doms) and all(doms[i][0] > doms[i + 1][1] for i in range(len(doms) - 1))
        # congestion episodes are shaded on every row of every panel
        for b in f["blocks"]:
            for ya in b["yaxes"]:
                assert any(
                    tr["yaxis"] == ya and str(tr.get("legendgroup", "")).startswith("ep-") for tr in f["data"]
                ), (b["key"], ya)
    names = [tr["name"] for tr in main["window"]]
    for algo in evil_analysis.captures[0].results[0].replays:
        assert any(n.startswith(htmlmod.escape(algo) + " cwnd") for n in names), algo
    assert "actual: bytes in flight" in names
    v = evil_analysis.captures[0].results[0].verdict
    if v is not None and v.cls in ("identified", "behaves as"):  # the named algorithm is drawn as such
        assert f"{htmlmod.escape(v.name)} cwnd ({v.cls})" in names
    assert sum(n.endswith(("(identified)", "(behaves as)")) for n in names) <= 1


def test_signal_panels_render_thresholds_phases_and_stacks(evil_report) -> None:
    page, _ = evil_report
    blocks = _blocks(_payloads(page)[0][1])
    sig = {k[5:]: traces for k, traces in blocks.items()}
    titles = {b["key"]: b["title"] for b in _payloads(page)[0][1]["blocks"]}
    assert titles["algo:fusion"] == "fusion: the algorithm's own signals — shaded: phase"
    fusion = [tr["name"] for tr in sig["fusion"]]
    assert {
        "diff",
        "alpha (threshold)",
        "alpha3 (threshold)",
        "phase = increase",
        "phase = steady",
        "phase = decrease",
    } <= set(fusion)
    ctcp = sig["ctcp"]
    stacked = [tr["name"] for tr in ctcp if tr.get("stackgroup") == "win"]
    assert stacked == ["lwnd (loss-based part)", "dwnd (delay-based part, stacked on it)"]
    assert "gamma (threshold)" in [tr["name"] for tr in ctcp]
    hrf = [tr["name"] for tr in sig["hrf"]]
    assert "mode = CR" in hrf and "mode = CI" in hrf
    ky = [tr["name"] for tr in sig["kyushu-highspeed"]]
    assert "non_aggressive" in ky and "w2" in ky
    assert "w_max" in [tr["name"] for tr in sig["cubic"]]
    assert {"a_w", "b_w"} <= {tr["name"] for tr in sig["highspeed"]}
    # a_w and b_w have rows of their own below HighSpeed's window row
    hs = next(b for b in _payloads(page)[0][1]["blocks"] if b["key"] == "algo:highspeed")
    rows = {tr["name"]: tr["yaxis"] for tr in sig["highspeed"]}
    assert (
        rows["highspeed cwnd"] == hs["yaxes"][0] and rows["a_w"] in hs["yaxes"][1:] and rows["b_w"] in hs["yaxes"][1:]
    )


def test_a_new_algorithm_renders_from_its_signal_columns(tmp_path: Path) -> None:
    fr = make_flow(n_acks=3000)
    base = fr.replays["reno"]
    n = base.height
    fr.replays = {
        "brand-new": base.with_columns(
            pl.Series("lookahead_wnd", np.linspace(1, 50, n)),
            pl.Series("zeta_gain", np.linspace(0, 1, n)),
            pl.Series("probing", np.arange(n) % 500 < 100),
            pl.Series("stage", np.where(np.arange(n) < n // 2, "warm", "hot"), dtype=pl.String),
        )
    }
    figs = flow_figures(fr)
    assert set(figs) == {"window", "rtt", "goodput", "timeseq", "algo:brand-new"}
    names = [tr.name for tr in figs["algo:brand-new"].data]
    assert "lookahead_wnd" in names and "zeta_gain" in names
    assert "probing" in names and "stage = warm" in names and "stage = hot" in names
    assert all(isinstance(f, go.Figure) for f in figs.values())


def test_large_flow_is_decimated_not_truncated(tmp_path: Path) -> None:
    a = make_analysis(n_flows=1, n_acks=120_000, duration_s=30.0)
    info = write_report(a, tmp_path / "big.html", max_points=800)
    page = (tmp_path / "big.html").read_text()
    assert info.decimated and info.points_out < info.points_in / 20
    assert (
        "First view decimated:" in page
        and "first, lowest, highest and last sample of each of 200 equal time columns" in page
    )
    assert "Zoomed in, every figure re-draws from this flow" in page
    fr = a.captures[0].results[0]
    window = _blocks(_payloads(page)[0][0])["window"]
    actual = next(tr for tr in window if tr["name"] == "actual: bytes in flight")
    assert len(actual["x"]) <= 800
    flight = fr.events.acks["outstanding"].to_numpy() / fr.events.mss
    t0 = min(fr.flow["first_ns"], fr.events.segments["ts_ns"].min(), fr.events.acks["ts_ns"].min())
    t = (fr.events.acks["ts_ns"].to_numpy() - t0) / 1e9
    # nothing cut off: the whole time range, the highest and the lowest value are all still drawn
    assert max(actual["y"]) == pytest.approx(flight.max(), abs=0.01)
    assert min(actual["y"]) == pytest.approx(flight.min(), abs=0.01)
    assert actual["x"][0] == pytest.approx(t[0], abs=1e-6) and actual["x"][-1] == pytest.approx(t[-1], abs=1e-6)
    for f in _payloads(page)[0]:
        for tr in f["data"]:
            assert len(tr["x"]) <= 6 * 800  # bands: 6 points per merged interval, ≤ one per column


def test_many_flows_share_a_point_budget_and_extra_flows_are_listed(tmp_path: Path) -> None:
    a = make_analysis(n_flows=3, n_acks=3000)
    info = write_report(a, tmp_path / "r.html", max_flows=2, budget_points=100_000)
    page = (tmp_path / "r.html").read_text()
    assert info.flows == 2 and info.flows_omitted == 1
    assert "1 replayed flow(s) beyond the 2 with the most data" in page
    assert len(_payloads(page)) == 2
    assert 400 <= info.max_points < 4000  # shrunk to the budget, never below 400


def test_empty_analysis_and_flow_without_replays(tmp_path: Path) -> None:
    a = make_analysis(n_flows=1, n_acks=2000)
    a.captures[0].results[0].replays = {}
    a.captures[0].results[0].fit = schema.empty(schema.FIT_METRICS)
    info = write_report(a, tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert info.figures == 1 and "No fit metrics" in page  # the main panels; no signals without replays
    assert re.findall(r'data-panel="([^"]+)"', page) == ["main"]
    a.captures = []
    info = write_report(a, tmp_path / "e.html")
    page = (tmp_path / "e.html").read_text()
    assert info.figures == 0 and 'id="plotlyjs"></script>' in page and "No flow was replayed" in page


def test_unwritable_path_is_an_input_error(tmp_path: Path) -> None:
    a = make_analysis(n_flows=1, n_acks=1000)
    with pytest.raises(InputError, match="cannot write report"):
        write_report(a, tmp_path / "missing-dir" / "r.html")


def test_figure_json_writes_arrays_as_rounded_text() -> None:
    from hscc_trace.reports.html import figure_json

    fig = {
        "data": [
            {
                "type": "scatter",
                "name": "\u00000\u0000",
                "x": np.array([0.1234567, np.nan, 2.0]),
                "y": np.array([1.0, np.inf, 1234567.0]),
            },
            {"type": "scatter", "name": "b", "x": np.array([1.0, 2.0]), "y": np.array([0.000123456, 0.5])},
        ],
        "layout": {"title": {"text": "t"}},
    }
    out = json.loads(figure_json(fig))
    a, b = out["data"]
    assert a["name"] == "\u00000\u0000"  # a name that looks like an array placeholder stays text
    assert a["x"] == [0.123457, None, 2.0]  # times to 1 µs, NaN → null (a gap)
    assert a["y"] == [1, None, 1234567]  # 5 significant digits of 1.2e6 → integers; inf → null
    # 5 significant digits of the largest value: 0.5 → 5 decimals (4 after its first digit + 1), so 0.000123456 → 0.00012
    assert b["y"] == [0.00012, 0.5]
    assert out["layout"] == {"title": {"text": "t"}}


def test_stack_puts_rows_on_one_time_axis_with_a_legend_per_panel() -> None:
    from hscc_trace.reports import figures as F

    tr = lambda name: F.scatter(np.array([0.0, 1.0]), np.array([1.0, 2.0]), name)  # noqa: E731
    fig = F.stack(
        [
            F.Block("a", "A", [F.Row([tr("a1")], 200, ytitle="pk"), F.Row([tr("a2")], 100, title="row 2")]),
            F.Block("b", "B &lt;", [F.Row([tr(f"b{i}") for i in range(30)], 100)]),
        ]
    )
    lay = fig["layout"]
    assert [t["yaxis"] for t in fig["data"][:2]] == ["y", "y2"] and {t["yaxis"] for t in fig["data"][2:]} == {"y3"}
    assert [t["legend"] for t in fig["data"][:3]] == ["legend", "legend", "legend2"]
    assert lay["xaxis2"]["matches"] == "x" and lay["xaxis3"]["matches"] == "x" and "matches" not in lay["xaxis"]
    assert lay["xaxis3"]["title"]["text"] == "time since the flow's first packet (s)" and "title" not in lay["xaxis"]
    d1, d2, d3 = (lay[k]["domain"] for k in ("yaxis", "yaxis2", "yaxis3"))
    plot_px = lay["height"] - lay["margin"]["t"] - lay["margin"]["b"]
    assert d1[1] == pytest.approx(1 - F._BLOCK_TITLE_PX / plot_px, abs=1e-5)  # room for the title "A" above
    assert d1[0] > d2[1] and d2[0] > d3[1] and d3[0] == 0.0
    # the rows keep their pixel heights; block b's only row grew so its 30 legend entries fit
    assert (d1[1] - d1[0]) * plot_px == pytest.approx(200, abs=0.01)
    assert (d3[1] - d3[0]) * plot_px == pytest.approx(30 * F.LEGEND_ENTRY_PX + 8, abs=0.01)
    assert lay["legend2"]["y"] == pytest.approx(d3[1]) and lay["legend"]["y"] == pytest.approx(d1[1])
    assert [a["text"] for a in lay["annotations"]] == ["A", "row 2", "B &lt;"]
    assert fig["blocks"] == [
        {"key": "a", "title": "A", "legend": "legend", "yaxes": ["y", "y2"]},
        {"key": "b", "title": "B &lt;", "legend": "legend2", "yaxes": ["y3"]},
    ]


# --- SACK blocks in the event streams' sequence space ---------------------------------------------


def test_sack_blocks_relative_to_the_ack_and_across_wraparound() -> None:
    from hscc_trace.events.sack import sack_blocks

    fr = make_flow(n_acks=10)
    acks = fr.events.acks
    # ACK frame 4 (second ACK): relative ack 2897. Its raw ack is 4294967000 (296 below 2³²) and it
    # carries one block 1448…2896 bytes above it, both edges past the wrap:
    #   raw left  = (4294967000 + 1448) mod 2³² = 1152 → 2897 + signed32(1152 − 4294967000) = 2897 + 1448 = 4345
    #   raw right = (4294967000 + 2896) mod 2³² = 2600 → 2897 + signed32(2600 − 4294967000) = 2897 + 2896 = 5793
    # ACK frame 6 (third, relative ack 4345) carries a D-SACK block below its ack:
    #   raw ack 100, block [raw (100 − 500) mod 2³² = 4294966896, raw 100 − 52 = 48] (it straddles the wrap)
    #   → 4345 − 500 = 3845 … 4345 − 52 = 4293
    rows = {
        "frame": [4, 6, 7],
        "flow_id": [0, 0, 0],
        "dir": [1, 1, 0],
        "ack": [4294967000, 100, 0],
        "sack_n": [1, 1, 1],
        "sack_l0": [1152, 4294966896, 5],
        "sack_r0": [2600, 48, 9],
    }
    for i in range(4):
        for e in ("l", "r"):
            rows.setdefault(f"sack_{e}{i}", [None, None, None])
    pk = pl.DataFrame(rows, schema_overrides={f"sack_{e}{i}": pl.UInt32 for i in range(4) for e in ("l", "r")})
    assert acks["frame"].to_list()[1:3] == [4, 6] and acks["ack"].to_list()[1:3] == [2897, 4345]
    sb = sack_blocks(pk, fr.events)  # frame 7 is the sender's own packet (dir 0): ignored
    assert sb.columns == [c.name for c in schema.SACK_BLOCKS]
    assert sb.select("frame", "left", "right").rows() == [(4, 4345, 5793), (6, 3845, 4293)]
    fr.events.sack_blocks = sb
    names = [tr.name for tr in flow_figures(fr)["timeseq"].data]
    assert "SACK block" in names and "ACK carrying new SACK info" not in names


def test_flow_without_cwnd_limited_rounds_names_nothing(tmp_path: Path) -> None:
    a = make_analysis(n_flows=1, n_acks=2000)
    fr = a.captures[0].results[0]
    fr.fit = fr.fit.with_columns(
        pl.lit(None, dtype=pl.Float64).alias("mare"), pl.lit(0, dtype=pl.UInt32).alias("rounds")
    )
    # every round application-limited: no round shows the sender's window
    fr.events.rounds = fr.events.rounds.with_columns(pl.lit("app").cast(fr.events.rounds["limit"].dtype).alias("limit"))
    fr.verdict = None  # (judged from these events when the report is written)
    write_report(a, tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    vis = _visible_html(page)
    assert fr.verdict is not None and fr.verdict.cls == "not enough data"
    assert '<span class="verdict v-ned">not enough data</span>' in vis and "No fit metrics" in vis
    assert '<tr class="v-identified">' not in vis and '<tr class="v-behaves">' not in vis
    assert '<tr class="best">' not in vis
    names = [tr["name"] for tr in _payloads(page)[0][0]["data"]]
    assert not any(n.endswith(("(identified)", "(behaves as)")) for n in names)


def test_coverage_levels_grade_each_column_by_covered_share() -> None:
    # 10 columns of 1 s over [0, 10]: [0.5, 1] covers half of column 0, [2, 4] all of columns 2 and 3,
    # [9.9, 10] a tenth of column 9. Four grades (share rounded up to quarters): 0.5, 1, 1, 0.25.
    g = {
        lvl: (s.tolist(), e.tolist())
        for lvl, s, e in dec.coverage_levels(np.array([0.5, 2.0, 9.9]), np.array([1.0, 4.0, 10.0]), 0.0, 10.0, 10)
    }
    assert g == {0.25: ([9.0], [10.0]), 0.5: ([0.0], [1.0]), 1.0: ([2.0], [4.0])}
    # two grades: up to half → 0.5, more → 1
    g2 = {
        lvl: s.tolist()
        for lvl, s, _ in dec.coverage_levels(
            np.array([0.5, 2.0, 9.9]), np.array([1.0, 4.0, 10.0]), 0.0, 10.0, 10, levels=2
        )
    }
    assert g2 == {0.5: [0.0, 9.0], 1.0: [2.0]}


# --- zoom to the packet: the full-resolution store, keys, units --------------------------------------


@pytest.mark.parametrize("mode", ["compile", "interpret"])
def test_every_decimation_counts_in_python_ints_compiled_or_interpreted(mode: str) -> None:
    # a Reduction is what the report's "how was this decimated" note and the JSON read: the
    # same values of the same type whichever path of the first-use rule ran the kernel
    from hscc_trace.perf import firstuse
    from hscc_trace.reports import decimate as D

    x = np.arange(1000.0)
    y = np.sin(x)
    with firstuse.mode(mode):
        reds = [
            D.select_line(x, y, 50)[1],
            D.select_lines(x, [y, y], 50)[0][1],
            D.select(x, y, 50)[1],
            D.select(x, y, 50, markers=True)[1],
            D.m4(x, y, 50)[2],
            D.m2(x, y, 50)[2],
            D.bars(x, x, x + 1, 50)[2],
            D.select_shared(x, [y, y], 50)[1][0],
        ]
    for r in reds:
        assert [type(v) for v in (r.n_in, r.n_out, r.buckets)] == [int, int, int], r
    assert (reds[0].n_in, reds[0].n_out, reds[0].buckets) == (1000, 194, 50)


_STREAM = r'<script type="application/octet-stream"([^>]*)>([^<]*)</script>'
_STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


def test_report_streams_hold_the_same_content_with_zlib_ng_or_the_standard_zlib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the figures' payloads and the stores are written by zlib-ng when its wheel imports (other
    # bytes, no larger page), by the standard library's zlib at level 4 without it (the bytes the
    # report held before zlib-ng): the same content either way, gzip streams with no time stamp,
    # and the same bytes each time
    pytest.importorskip("zlib_ng")
    from hscc_trace.reports import deflate

    a = make_analysis(n_flows=2, n_acks=3000)
    assert deflate.backend() == "zlib-ng"
    ng = [(tmp_path / f"ng{i}.html") for i in (1, 2)]
    for p in ng:
        write_report(a, p)
    monkeypatch.setattr(deflate, "_ng", None)
    assert deflate.backend() == "zlib"
    write_report(a, tmp_path / "std.html")
    pages = [re.sub(_STAMP, "", p.read_text()) for p in (*ng, tmp_path / "std.html")]
    assert pages[0] == pages[1]
    s_ng, s_std = ([(attrs, base64.b64decode(b)) for attrs, b in re.findall(_STREAM, p)] for p in pages[::2])
    assert [attrs for attrs, _ in s_ng] == [attrs for attrs, _ in s_std]
    assert [gzip.decompress(b) for _, b in s_ng] == [gzip.decompress(b) for _, b in s_std]
    assert all(b[:4] == b"\x1f\x8b\x08\x00" and b[4:8] == bytes(4) for _, b in s_ng + s_std)
    for kind in ("data-flow-payload", "data-store"):
        ng_k, std_k = ([b for attrs, b in s if kind in attrs] for s in (s_ng, s_std))
        assert ng_k and ng_k != std_k, kind
        assert std_k == [gzip.compress(gzip.decompress(b), compresslevel=4, mtime=0) for b in std_k]
    # the rest of the page is the same, but for the stores' size it gives
    rest = [re.sub(r"[\d.]+ MB of this page", "", re.sub(_STREAM, r"\1", p)) for p in pages[::2]]
    assert rest[0] == rest[1]


@pytest.mark.parametrize("ng", [True, False])
def test_deflate_gives_a_gzip_stream_of_its_input(ng: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from hscc_trace.reports import deflate

    if not ng:
        monkeypatch.setattr(deflate, "_ng", None)
    elif deflate._ng is None:
        pytest.skip("zlib-ng is not installed")
    for data in (b"", b"x", np.arange(50_000).tobytes(), bytearray(b"[1,2,3]" * 9000)):
        for kind in ("figure", "store"):
            gz = deflate.gzip_bytes(memoryview(data), kind)
            assert gzip.decompress(gz) == data and gz == deflate.gzip_bytes(data, kind)


def test_store_round_trip_worked_by_hand() -> None:
    from hscc_trace.reports import store as S

    b = S.StoreBuilder()
    # times 0, 1.5 µs, 2 ms → µs integers 0, 2 (1.5 rounds half to even: 2), 2000 → steps 0, 2, 1998
    b.table("a", np.array([0.0, 1.5e-6, 0.002]), frame=np.array([3.0, 5.0, 9.0]))
    # 5 significant digits of the largest magnitude 123.456 → 2 decimals: 12346, 1, NaN → 100, 0 steps
    b.column("a", "w", np.array([123.456, 1.0, np.nan]))
    b.column("a", "w2", np.array([123.456, 1.0, np.nan]))  # the same content: stored once
    b.column("a", "big", np.array([0.0, 3e9, 0.0]), decimals=0)  # steps of ±3e9 do not fit 31 bits: float64
    b.column("a", "code", np.array([2.0, 0.0, 1.0]), decimals=0, delta=False)
    blob = b.gzipped()
    out = S.decode(blob)
    a = out["tables"]["a"]
    assert a["t"].tolist() == pytest.approx([0.0, 2e-6, 0.002])
    assert a["frame"].tolist() == [3.0, 5.0, 9.0]
    assert a["w"][:2].tolist() == pytest.approx([123.46, 1.0]) and np.isnan(a["w"][2])
    assert a["big"].tolist() == [0.0, 3e9, 0.0] and a["code"].tolist() == [2.0, 0.0, 1.0]
    assert out["columns"] == 5  # t, frame, w (= w2, stored once), big, code
    # column w: 2 decimals, delta-coded: 12346, 100 − 12346 = −12246, and 0 for the NaN (it repeats
    # the previous value; the bitmap marks it). Zigzag: 24692 and 24491 (both ≥ 2¹⁴: three bytes
    # each), 0 (one byte) → 7 bytes: 24692 = 0x74 + 0x40·128 + 1·128² → f4 c0 01; 24491 → ab bf 01
    w = b.encoded("a", "w")
    assert w[0] == {"w": 0, "d": 2, "z": 1, "l": 7} and w[1].hex() == "f4c001abbf0100"
    assert w[2] == bytes([0b100])  # bit 2: row 2 is null


def test_a_store_encoded_as_its_columns_are_given_is_the_same_store() -> None:
    # the report's worker encodes a flow's store columns while its figures are built: the same
    # bytes, and each column's values are let go once encoded (the store sealed)
    from concurrent.futures import ThreadPoolExecutor

    from hscc_trace.reports.figures import build_flow

    fr = make_analysis(n_flows=1, n_acks=3000).captures[0].results[0]
    plain = build_flow(fr, full_resolution=True).store
    with ThreadPoolExecutor(1) as pool:
        ahead = build_flow(fr, full_resolution=True, store_pool=pool).store
        assert ahead is not None and plain is not None
        assert pool.submit(ahead.gzipped).result() == plain.gzipped()
    assert ahead._given and all(g is None for g in ahead._given) and not ahead._raw


def test_a_store_encodes_each_column_once_when_its_caller_and_its_worker_both_encode() -> None:
    # the pool's worker encodes whole batches as columns are given; a caller that asks for the
    # columns meanwhile (encode_columns, encoded, the layout) waits for it instead of encoding
    # the same columns beside it: one encoding at a time, each column once, the same store
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from hscc_trace.reports import store as S

    rng = np.random.default_rng(11)
    cols = [rng.normal(0, 10, 200) for _ in range(3 * S.BATCH + 5)]
    plain = S.StoreBuilder()
    plain.table("a", np.arange(200.0))
    for i, v in enumerate(cols):
        plain.column("a", f"c{i}", v)
    with ThreadPoolExecutor(1) as pool:
        b = S.StoreBuilder(pool)
        inside, most, encoded = [0], [0], []
        lock = threading.Lock()
        encode_many = b._encode_many

        def slow(items: list) -> list[int]:  # a wide window for the two threads to meet in
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.02)
            try:
                encoded.extend(id(v) for v, _, _ in items)
                return encode_many(items)
            finally:
                with lock:
                    inside[0] -= 1

        b._encode_many = slow  # type: ignore[method-assign]
        b.table("a", np.arange(200.0))
        for i, v in enumerate(cols):
            b.column("a", f"c{i}", v)
            if i == S.BATCH:  # the worker has a batch in hand: the caller asks for every column
                assert b._ahead is not None and not b._ahead.done()
                b.encode_columns()
        b.seal()
        assert b.gzipped() == plain.gzipped()
    assert most[0] == 1 and len(encoded) == len(set(encoded)) == len(cols) + 1  # (+ the time column)


def _encode_reference(v: np.ndarray, d: int, delta: bool) -> tuple[dict, bytes, bytes]:
    """A store column in vectorised numpy, as the store wrote it before its compiled pass."""
    from hscc_trace.reports.store import varint

    nan = ~np.isfinite(v)
    scaled = np.where(nan, 0.0, v) * (10.0**d)
    if np.abs(scaled).max(initial=0.0) >= 2**62:
        return {"w": 8, "d": 0, "z": 0}, v.astype("<f8").tobytes(), b""
    q = np.rint(scaled).astype(np.int64)
    if nan.any() and delta:  # a null repeats the previous value
        idx = np.where(nan, 0, np.arange(len(q)))
        np.maximum.accumulate(idx, out=idx)
        q = q[idx]
        q[nan & (np.cumsum(~nan) == 0)] = 0
    steps = np.diff(q, prepend=np.int64(0)) if delta else q
    if int(np.abs(steps).max(initial=0)) >= 2**31:
        return {"w": 8, "d": 0, "z": 0}, v.astype("<f8").tobytes(), b""
    data = varint(steps)
    mask = np.packbits(nan, bitorder="little").tobytes() if nan.any() else b""
    return {"w": 0, "d": int(d), "z": int(delta), "l": len(data)}, data, mask


@pytest.mark.parametrize("mode", ["compile", "interpret"])
def test_store_columns_are_encoded_as_the_numpy_reference_encodes_them(mode: str) -> None:
    # the compiled single pass (store._encode_kernel, both paths of the first-use rule) writes the
    # bytes of the vectorised reference: nulls and infinities (leading, repeated, last), negative
    # decimals, steps beyond 31 bits and values beyond 2^62 (stored as float64), 0 and 1 rows
    from hscc_trace.perf import firstuse
    from hscc_trace.reports import store as S

    rng = np.random.default_rng(16)
    cases = [np.empty(0), np.array([np.nan]), np.array([2.5]), np.array([np.nan, np.inf, 1.25, np.nan, -np.inf, 7.0])]
    for n in (3, 50, 1000):
        walk = np.cumsum(rng.normal(0, 50, n)) * rng.choice([1e-6, 1.0, 1e4])
        holes = walk.copy()
        holes[rng.random(n) < 0.2] = np.nan
        holes[:2] = np.nan
        cases += [walk, holes, rng.integers(-5, 5, n).astype(np.float64), walk * 1e12, walk * 1e20]
    with firstuse.mode(mode):
        for v in cases:
            for d in (None, -3, 0, 2, 9):
                for delta in (True, False):
                    b = S.StoreBuilder()
                    dd = S.decimals_for(v) if d is None else d
                    spec, data, mask = b._cols[b._encode(v, dd, delta=delta)]
                    assert (spec, data, mask) == _encode_reference(v, dd, delta), (v[:5], d, delta)
        fin = np.abs(cases[3][np.isfinite(cases[3])])
        assert S.absmax(cases[3]) == fin.max() and S.absmax(np.array([np.nan])) == -1.0
        assert S.decimals_for(np.array([123.456, np.nan])) == 2 and S.decimals_for(np.array([-0.0, np.inf])) == 0


@pytest.mark.parametrize("mode", ["compile", "interpret"])
def test_store_columns_encoded_in_batches_are_those_encoded_one_by_one(mode: str) -> None:
    # the store encodes up to BATCH columns a compiled call, finding each column's decimals
    # (decimals_for: 5 significant digits of its largest finite magnitude) inside it: the same
    # columns as encoded alone at decimals_for's decimals, magnitudes at powers of ten and just
    # below, tiny and huge ones, only nulls, empty, read-only and batches that are not full
    from hscc_trace.perf import firstuse
    from hscc_trace.reports import store as S

    rng = np.random.default_rng(7)
    tops = [1e-300, 9.99999e-7, 1e-6, 0.999999, 1.0, 9.99995, 10.0, 99999.0, 1e5, 123.456, 1e12, 1e300]
    cases = [np.empty(0), np.array([np.nan, np.inf]), np.array([0.0, -0.0])]
    for top in tops:
        v = rng.uniform(-1, 1, 40) * top
        v[rng.integers(0, 40)] = -top
        cases.append(v)
    ro = rng.normal(0, 3, 100)
    ro.flags.writeable = False
    cases.append(ro)
    with firstuse.mode(mode):
        for n in (1, S.BATCH - 1, S.BATCH, len(cases)):
            batched = S.StoreBuilder()
            for i, v in enumerate(cases[:n]):
                batched._given.append((v, None if i % 3 else 2, bool(i % 2)))
            cols = batched._resolve()
            for i, v in enumerate(cases[:n]):
                alone = S.StoreBuilder()
                d = S.decimals_for(v) if i % 3 else 2
                assert batched._cols[cols[i]] == _encode_reference(v, d, bool(i % 2)), (i, v[:3])
                assert batched._cols[cols[i]] == alone._cols[alone._encode(v, d, delta=bool(i % 2))]


def test_varint_zigzag_worked_by_hand() -> None:
    from hscc_trace.reports.store import unvarint, varint

    # zigzag: 0→0, −1→1, 1→2, −2→3, 63→126, −64→127, 64→128 (two bytes: 0x80 0x01), 300→600 = 0b100_1011000
    # → 0x58|0x80 = 0xd8 then 600 >> 7 = 4 → 0x04
    q = np.array([0, -1, 1, -2, 63, -64, 64, 300])
    assert varint(q).hex() == "000102037e7f8001d804"
    rng = np.random.default_rng(5)
    r = rng.integers(-(2**31) + 1, 2**31 - 1, 5000)
    assert np.array_equal(unvarint(varint(r), len(r)), r)


def _store(page: str, section: str) -> dict:
    from hscc_trace.reports.store import decode

    m = re.search(
        r'<script type="application/octet-stream" data-store data-section="'
        + section
        + r'" id="store-[^"]+">([^<]*)</script>',
        page,
    )
    assert m, section
    return decode(base64.b64decode(m.group(1)))


def test_store_holds_every_event_and_every_drawn_series(tmp_path: Path) -> None:
    from hscc_trace.reports.figures import flow_t0

    a = make_analysis(n_flows=1, n_acks=3000)
    fr = a.captures[0].results[0]
    info = write_report(a, tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert info.full_resolution_flows == 1 and info.events == fr.events.acks.height + fr.events.segments.height
    st = _store(page, "flow-0-0")
    tabs = st["tables"]
    t0 = flow_t0(fr)
    acks, segs = fr.events.acks, fr.events.segments
    # every ACK: its time (to 1 µs), its frame, its bytes in flight exactly
    assert np.allclose(tabs["a"]["t"], (acks["ts_ns"].to_numpy() - t0) / 1e9, atol=0.6e-6)
    assert tabs["a"]["frame"].tolist() == acks["frame"].to_list()
    assert tabs["a"]["outstanding"].tolist() == acks["outstanding"].to_list()
    # every data segment: frame, seq, len, kind (the Enum's index)
    assert tabs["s"]["frame"].tolist() == segs["frame"].to_list()
    assert tabs["s"]["seq"].tolist() == segs["seq"].to_list() and tabs["s"]["len"].tolist() == segs["len"].to_list()
    kinds = [schema.SEGMENT_KINDS[int(k)] for k in tabs["s"]["kind"]]
    assert kinds == segs["kind"].cast(pl.String).to_list()
    # each algorithm's window at every ACK (5 significant digits), named for the packet list
    algos = {htmlmod.unescape(lab): (tb, col) for lab, tb, col in st["meta"]["algos"]}
    assert set(algos) == set(fr.replays)
    for lab, (tb, col) in algos.items():
        want = fr.replays[lab]["cwnd"].to_numpy()
        assert np.allclose(tabs[tb][col], want, rtol=1e-4, atol=1e-2), lab
    # every trace that re-draws from the store names columns that are there
    n_src = 0
    for figs in _payloads(page):
        for f in figs:
            for tr in f["data"]:
                src = tr.get("_src")
                if not src:
                    continue
                n_src += 1
                tab = tabs[src["tb"]]
                for col in [src.get("y"), src.get("lo"), *src.get("hi", []), *src.get("add", [])]:
                    assert col is None or col in tab, (tr["name"], col)
    assert n_src >= 20


def test_first_view_hover_names_each_points_frame(tmp_path: Path) -> None:
    from hscc_trace.reports.figures import flow_t0

    a = make_analysis(n_flows=1, n_acks=20_000)
    fr = a.captures[0].results[0]
    write_report(a, tmp_path / "r.html")
    main = _blocks(_payloads((tmp_path / "r.html").read_text())[0][0])
    actual = next(tr for tr in main["window"] if tr["name"] == "actual: bytes in flight")
    assert actual["_bytes"] == 1448 and "frame %{customdata[0]}" in actual["hovertemplate"]
    assert "bytes" in actual["hovertemplate"] and len(actual["customdata"]) == len(actual["x"]) < 20_000
    t = np.round((fr.events.acks["ts_ns"].to_numpy() - flow_t0(fr)) / 1e9, 6)
    fl = fr.events.acks["outstanding"].to_numpy() / 1448
    frames = fr.events.acks["frame"].to_list()
    time_of = dict(zip(frames, t.tolist()))  # frames are unique (times need not be, to the µs)
    flight_of = dict(zip(frames, fl.tolist()))
    # each drawn point (decimated: first/min/max/last per column) is the ACK its frame names
    assert [time_of[f] for f in actual["customdata"]] == actual["x"]
    assert np.allclose([flight_of[f] for f in actual["customdata"]], actual["y"], atol=0.01)
    ack = next(tr for tr in main["timeseq"] if tr["name"] == "ACK")
    assert [time_of[f] for f in ack["customdata"]] == ack["x"] and "frame %{customdata}" in ack["hovertemplate"]


def test_compound_windows_are_drawn_at_the_same_acks(tmp_path: Path) -> None:
    # The synthetic "ctcp" replay has lwnd + dwnd = win exactly at every ACK; the first view draws
    # all of them (and cwnd) at one set of ACKs, so the stack adds up to win at each point drawn.
    a = make_analysis(n_flows=1, n_acks=30_000)
    write_report(a, tmp_path / "r.html")
    sig = _blocks(_payloads((tmp_path / "r.html").read_text())[0][1])
    by = {tr["name"]: tr for tr in sig["algo:ctcp"]}
    loss, dwnd = by["lwnd (loss-based part)"], by["dwnd (delay-based part, stacked on it)"]
    win, cwnd = by["win"], by["ctcp cwnd"]
    assert loss["x"] == dwnd["x"] == win["x"] == cwnd["x"] and len(loss["x"]) < 30_000  # decimated, shared
    assert loss["stackgroup"] == dwnd["stackgroup"] == "win" and "stackgroup" not in win
    # (each series rounded to 5 significant digits of its largest value: win ≤ ~110 → 0.01)
    assert np.allclose(np.add(loss["y"], dwnd["y"]), win["y"], atol=0.02)
    assert loss["_src"]["g"] == dwnd["_src"]["g"] == win["_src"]["g"]  # zoomed in, decimated as one group


def test_axes_are_labelled_with_units_from_the_schema(tmp_path: Path) -> None:
    from hscc_trace.reports import figures as F

    assert F.unit("acks", "rtt_s") == "s" and F.shown("s") == ("ms", 1000.0)
    fr = make_flow(n_acks=2000)
    # a delay signal in seconds (Vegas' base_rtt, unit "s" in the replay registry) is drawn in ms
    fr.replays = {"vegas": fr.replays["reno"].with_columns(pl.lit(0.040).alias("base_rtt"))}
    ff = F.build_flow(fr)
    titles = {k: [r.ytitle for r in b.rows] for k, b in ff.blocks.items()}
    assert titles["window"] == ["window (packets)"] and titles["rtt"] == ["RTT (ms)"]
    assert titles["goodput"] == ["rate (Mbit/s)"] and titles["timeseq"] == ["relative sequence (bytes)"]
    vegas = ff.blocks["algo:vegas"]
    row = next(r for r in vegas.rows if "base_rtt" in r.title)
    assert row.title == "base_rtt (ms)" and row.ytitle == "ms"
    tr = next(t for t in row.traces if t.get("name") == "base_rtt")
    assert np.allclose(tr["y"], 40.0) and tr["hovertemplate"].startswith("%{y:.4g} ms")
    fig = F.stack(list(ff.blocks.values()))
    last = max((k for k in fig["layout"] if re.fullmatch(r"xaxis\d*", k)), key=lambda k: int(k[5:] or 1))
    assert fig["layout"][last]["title"]["text"] == "time since the flow's first packet (s)"


def test_flow_header_gives_wireshark_filters(evil_report) -> None:
    vis = _visible_html(evil_report[0])
    # flow 1 of the synthetic capture: EVIL:40001 → 10.0.0.2:5201 (the hostile address stays text)
    assert '<code class="wsf">tcp.stream eq 1</code>' in vis
    conv = f"(ip.addr eq {EVIL} and ip.addr eq 10.0.0.2) and (tcp.port eq 40001 and tcp.port eq 5201)"
    assert f'<code class="wsf">{htmlmod.escape(conv)}</code>' in vis


def test_full_resolution_can_be_left_out_and_has_an_event_budget(tmp_path: Path) -> None:
    a = make_analysis(n_flows=2, n_acks=1000)
    info = write_report(a, tmp_path / "none.html", full_resolution=False)
    page = (tmp_path / "none.html").read_text()
    assert info.full_resolution_flows == 0 and info.store_bytes == 0 and "data-store" not in page
    assert "--no-full-resolution" in page and "Packet list: not available" in page
    assert not any("_src" in tr for figs in _payloads(page) for f in figs for tr in f["data"])
    # each flow has 1000 ACKs + 1000 segments + its retransmissions (4 s period over 20 s: 4) = 2004
    n = [r.events.acks.height + r.events.segments.height for r in a.captures[0].results]
    assert n == [2004, 2004]
    info = write_report(a, tmp_path / "one.html", full_resolution_events=3000)
    page = (tmp_path / "one.html").read_text()
    assert info.full_resolution_flows == 1 and info.full_resolution_events == 2004
    assert len(re.findall(r"data-store ", page)) == 1 and "beyond the report's budget of 3,000 events" in page


def test_fit_rows_take_their_class_from_a_hook(tmp_path: Path) -> None:
    a = make_analysis(n_flows=1, n_acks=1000)
    write_report(a, tmp_path / "r.html", row_class=lambda fr, row: "verdict-odd" if row["algo"] == "cubic" else "")
    vis = _visible_html((tmp_path / "r.html").read_text())
    assert vis.count('<tr class="verdict-odd">') == 1 and '<tr class="best">' not in vis


def test_analyze_cli_report_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    from hscc_trace.cli import main

    cap = Path(__file__).resolve().parents[2] / "samples" / "reno-bdp" / "capture.pcap"

    def run(*args: str) -> tuple[int | None, str]:
        old = sys.argv
        sys.argv = ["hscc-trace", "analyze", str(cap), "--algo", "reno", "-q", *args]
        try:
            with pytest.raises(SystemExit) as exc:
                main()
        finally:
            sys.argv = old
        return exc.value.code, capsys.readouterr().err

    code, err = run("-o", str(tmp_path / "r.html"), "--max-points", "400", "--no-full-resolution")
    assert code in (0, None), err
    page = (tmp_path / "r.html").read_text()
    assert "data-store" not in page and "each of 100 equal time columns" in page  # 400 points: 100 columns
    code, err = run("-o", str(tmp_path / "f.html"))
    assert code in (0, None), err
    assert 'data-store data-section="flow-0-0"' in (tmp_path / "f.html").read_text()
    code, err = run("-o", str(tmp_path / "x.html"), "--max-points", "4")
    assert code == 2 and err.startswith("hscc-trace: error: --max-points must be at least 8") and err.count("\n") == 1


def test_array_json_writes_values_beyond_int64_as_numbers_without_a_warning():
    """A hostile capture's huge values (1e20 does not fit an int64 cast: numpy warned "invalid
    value encountered in cast" and wrote garbage) are written as rounded floats; whole numbers
    within 2^53 stay integers, NaN/inf stay null."""
    import json
    import warnings

    import numpy as np

    from hscc_trace.reports.html import _array_json

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        huge = _array_json(np.array([1.0, 2.4, np.nan, 1e20, -3e19, np.inf]), 0)
        small = _array_json(np.array([1.0, 2.4, np.nan]), 0)
    assert json.loads(huge) == [1.0, 2.0, None, 1e20, -3e19, None]
    assert small == "[1,2,null]"


def _reference_array_json(arr: np.ndarray, decimals: int, width: int = 0) -> str:
    """The figures' JSON numbers as json.dumps writes them (the reference for the compiled writer)."""
    import json

    arr = np.asarray(arr, dtype=np.float64)
    if width:
        return json.dumps(np.rint(arr).astype(np.int64).tolist())
    out = np.round(np.where(np.isfinite(arr), arr, np.nan), decimals).tolist()
    return json.dumps([None if x != x else int(x) if decimals == 0 and abs(x) < 2**53 else x for x in out])


@pytest.mark.parametrize("mode", ["compile", "interpret"])
def test_array_json_writes_the_numbers_json_dumps_writes(mode: str) -> None:
    """The compiled number writer (one pass over rint(v·10^d)) gives the values of json.dumps of
    the rounded list: every magnitude, sign, decimals 0–9, NaN/inf as null, rows of customdata."""
    import json

    from hscc_trace.perf import firstuse
    from hscc_trace.reports.html import _array_json

    rng = np.random.default_rng(11)
    with firstuse.mode(mode):
        for _ in range(60):
            n = int(rng.integers(0, 200))
            a = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 9)
            a[rng.random(n) < 0.1] = np.nan
            a[rng.random(n) < 0.05] = -np.inf
            a[rng.random(n) < 0.1] = 0.0
            a[rng.random(n) < 0.1] = np.round(a[rng.random(n) < 0.1].sum())  # whole numbers
            for d in range(10):
                assert json.loads(_array_json(a, d)) == json.loads(_reference_array_json(a, d)), (a, d)
        cd = np.stack([np.arange(7.0) * 3, np.arange(7.0) * 1448], axis=1)
        assert _array_json(cd, 0, width=2) == "[[0,0],[3,1448],[6,2896],[9,4344],[12,5792],[15,7240],[18,8688]]"
        assert _array_json(np.array([1.5, -0.25, 1e-6, 123456.0]), 6) == "[1.5,-0.25,0.000001,123456]"


def test_report_figures_carry_the_same_numbers_as_with_json_dumps(tmp_path: Path, monkeypatch) -> None:
    """Every figure of a report decodes to the same data and layout whether its arrays were written
    by the compiled writer or by json.dumps (the format before it): the drawn values are equal."""
    from hscc_trace.reports import html as H

    a = make_analysis(n_flows=2, n_acks=20_000)
    write_report(a, tmp_path / "fast.html")
    monkeypatch.setattr(H, "_array_json", _reference_array_json)
    write_report(a, tmp_path / "ref.html")
    fast, ref = _payloads((tmp_path / "fast.html").read_text()), _payloads((tmp_path / "ref.html").read_text())
    assert fast == ref and sum(len(tr["x"]) for figs in fast for f in figs for tr in f["data"] if "x" in tr) > 10_000


def test_enum_signal_runs_are_those_of_its_labels() -> None:
    """Runs of an enumerated signal, taken from its codes, are the runs of its labels (null: "")."""
    from hscc_trace.reports import figures as F

    rng = np.random.default_rng(3)
    cats = ["x", "y", "z"]
    for _ in range(200):
        n = int(rng.integers(1, 60))
        vals = [None if rng.random() < 0.2 else cats[rng.integers(0, 3)] for _ in range(n)]
        s = pl.Series(vals, dtype=pl.Enum(cats))
        t = np.cumsum(rng.random(n))
        got, want = F._flag_runs(t, s, None), F._flag_runs(t, s.cast(pl.String), None)
        assert np.array_equal(got.start, want.start) and np.array_equal(got.end, want.end)
        assert got.values.tolist() == want.values.tolist() and not got.boolean
