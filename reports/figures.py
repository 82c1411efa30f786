"""Plotly figures for one flow: what the sender did, and what each algorithm would have done.

:func:`flow_figures` returns, in display order, one figure per panel, all on the same time axis
(seconds since the flow's first packet):

``window``   actual bytes in flight (packets) with every replayed cwnd (legend-toggleable);
``rtt``      RTT samples, running min RTT and RFC 6298 smoothed RTT (ms);
``goodput``  goodput (cumulatively ACKed bytes) and throughput (bytes sent, incl. retransmissions);
``timeseq``  a tcptrace-style time/sequence graph: data segments, retransmissions by kind, the
             ACK line, the receive-window line and SACK information;
``algo:<label>``  each algorithm's own signals, one figure per algorithm that has any.

Congestion episodes are shaded on every panel. Algorithm signals are rendered generically from
the columns of the replay DataFrame beyond schema.REPLAY_BASE, so a new algorithm renders without
a change here: numeric window-like signals (packets) share the window row, queue estimates and
their thresholds (diff, alpha, 3·alpha, gamma, …) share a second row with thresholds dashed,
booleans (e.g. Kyushu's non-aggressive period) and categorical signals (Fusion's phase, HRF's
mode) shade the time ranges where they hold, and any other number gets a row of its own. A
``dwnd`` signal is drawn stacked on the loss-based window (Compound TCP).

Panels are built as :class:`Block` s of :class:`Row` s holding plain-dict traces (plotly's
graph_objects cost far more than the data); :func:`stack` turns blocks into one figure dict with
one subplot per row on a shared time axis — the report stacks the four main panels into one
figure and every algorithm's signals into another.

Every series is decimated with :mod:`hscc_trace.reports.decimate` (first/min/max/last per time
column) when it has more than ``max_points`` points; the reductions are returned by
:func:`build_flow` for the report's decimation note.
"""

from __future__ import annotations

import functools
import html
import math
import re
from collections.abc import Iterable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import polars as pl

from hscc_trace import schema
from hscc_trace.errors import require_extra
from hscc_trace.model import FlowResult

from . import decimate as dec
from . import meta
from .store import StoreBuilder

DEFAULT_MAX_POINTS = 2000  # points per series; 4 per time column → 500 columns (≈ 2 px each on a wide screen)

ALGO_COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#393b79",
    "#637939",
    "#8c6d31",
    "#7b4173",
    "#3182bd",
    "#e6550d",
    "#31a354",
    "#756bb1",
)
ACTUAL_COLOR = "#111111"
#: the sending kernel's own values, when files beside the capture hold them (samples/: tcp_probe's
#: snd_cwnd, the BPF program's variables; hscc_trace.analysis.truth)
KERNEL_COLOR = "#c51b7d"
KERNEL_SYMBOLS = ("x", "diamond-open", "circle-open", "triangle-up-open", "square-open", "star-open")
EPISODE_COLORS = {
    "fast_retransmit": "rgba(214,39,40,0.16)",
    "sack_recovery": "rgba(214,39,40,0.16)",
    "rto": "rgba(140,0,0,0.30)",
    "ecn": "rgba(148,103,189,0.22)",
}
LIMIT_COLORS = {"rwnd": "rgba(31,119,180,0.10)", "app": "rgba(127,127,127,0.14)"}
SEGMENT_COLORS = {
    "new": "#1f3a93",
    "retransmission": "#d62728",
    "fast_retransmission": "#ff7f0e",
    "spurious_retransmission": "#e377c2",
    "out_of_order": "#17becf",
}
CATEGORY_COLORS = {  # known categorical signal values; anything else cycles through _CAT_PALETTE
    "increase": "rgba(44,160,44,0.13)",
    "steady": "rgba(127,127,127,0.10)",
    "decrease": "rgba(214,39,40,0.13)",
    "cr": "rgba(31,119,180,0.12)",
    "ci": "rgba(255,127,14,0.14)",
    "slow_start": "rgba(188,189,34,0.14)",
    "recovery": "rgba(214,39,40,0.10)",
    "loss": "rgba(140,0,0,0.18)",
}
_CAT_PALETTE = (
    "rgba(23,190,207,0.14)",
    "rgba(148,103,189,0.14)",
    "rgba(140,86,75,0.14)",
    "rgba(227,119,194,0.14)",
    "rgba(57,59,121,0.12)",
    "rgba(99,121,57,0.14)",
)
_BOOL_COLOR = "rgba(148,103,189,0.16)"
_QUIET = {"open", "none", "", "off", "false"}  # category values left unshaded

ROW_PX = {"window": 320, "rtt": 190, "goodput": 160, "timeseq": 320}  # plot height of each main panel (px)
ALGO_ROW_PX = (190, 100)  # an algorithm's window row, each further signal row (px)
LEGEND_ENTRY_PX = 21  # one legend entry at font size 11

TEMPLATE: dict[str, Any] = {
    "layout": {
        "font": {
            "family": "system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif",
            "size": 12,
            "color": "#222",
        },
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "margin": {"l": 70, "r": 20, "t": 36, "b": 40},
        "hovermode": "x unified",
        "hoverlabel": {"namelength": -1},
        "legend": {"orientation": "v", "x": 1.01, "y": 1, "xanchor": "left", "font": {"size": 11}},
        # ticklabeloverflow "allow": plotly's default ("hide past div") re-measures every tick label of
        # an axis after placing each one (quadratic; a third of the drawing time with many subplots)
        "xaxis": {
            "showgrid": True,
            "gridcolor": "#eee",
            "zeroline": False,
            "linecolor": "#999",
            "ticks": "outside",
            "showline": True,
            "ticklabeloverflow": "allow",
        },
        "yaxis": {
            "showgrid": True,
            "gridcolor": "#eee",
            "zeroline": False,
            "linecolor": "#999",
            "ticks": "outside",
            "showline": True,
            "ticklabeloverflow": "allow",
        },
    }
}

Trace = dict[str, Any]  # a plotly scatter trace as a plain dict; "x"/"y" are float64 numpy arrays


@dataclass
class TraceNote:
    """How one drawn series was reduced (for the decimation note)."""

    panel: str
    trace: str
    reduction: dec.Reduction


@dataclass
class Row:
    """One subplot: traces on their own y axis, on the flow's shared time axis."""

    traces: list[Trace]
    px: int  # plot height (px)
    title: str = ""  # small title above the row (already escaped)
    ytitle: str = ""


@dataclass
class Block:
    """One panel (window, RTT, goodput, time/sequence, or one algorithm's signals): a title, a
    legend of its own and one or more rows. Blocks are stacked into one figure per flow part."""

    key: str
    title: str  # already escaped
    rows: list[Row]


@dataclass
class FlowFigures:
    """The blocks of one flow (in display order) and how each series was reduced."""

    blocks: dict[str, Block]
    notes: list[TraceNote] = field(default_factory=list)
    duration: float | None = None  # s: the flow's time axis is [0, duration] in every figure
    store: StoreBuilder | None = None  # the full-resolution store (build_flow(full_resolution=True))

    @property
    def points_in(self) -> int:
        return sum(n.reduction.n_in for n in self.notes)

    @property
    def points_out(self) -> int:
        return sum(n.reduction.n_out for n in self.notes)

    @property
    def decimated(self) -> list[TraceNote]:
        return [n for n in self.notes if n.reduction.decimated]

    @property
    def main(self) -> list[Block]:
        return [b for k, b in self.blocks.items() if not k.startswith("algo:")]

    @property
    def signals(self) -> list[Block]:
        return [b for k, b in self.blocks.items() if k.startswith("algo:")]


def algo_colors(labels: Iterable[str]) -> dict[str, str]:
    """A stable colour per algorithm label (same colour on every panel)."""
    return {lab: ALGO_COLORS[i % len(ALGO_COLORS)] for i, lab in enumerate(labels)}


def _esc(text: object) -> str:
    """Escape text placed in figure titles and legends (plotly renders a subset of HTML there)."""
    return _esc_str(text) if type(text) is str else html.escape(str(text))


@functools.lru_cache(maxsize=4096)
def _esc_str(text: str) -> str:
    """:func:`_esc` of a string, found once (signal names and labels recur in every flow)."""
    return html.escape(text)


@functools.lru_cache(maxsize=4096)
def norm(name: str) -> str:
    """Signal name reduced for matching: lower case, ′ → prime, only [a-z0-9] ("W_max" → "wmax")."""
    return re.sub(r"[^a-z0-9]", "", name.lower().replace("′", "prime").replace("'", "prime"))


@functools.lru_cache(maxsize=4096)
def is_window_signal(name: str) -> bool:
    """Window-sized signals in packets that share the algorithm's cwnd row."""
    n = norm(name)
    return (
        n.endswith("wnd")
        or "cwnd" in n
        or n
        in {
            "win",
            "wmax",
            "wlastmax",
            "wreno",
            "wtcp",
            "westimate",
            "renoestimate",
            "target",
            "wcubic",
            "origin",
            "west",
            "wtarget",
            "bwrttmin",
        }
        or re.fullmatch(r"w\d+", n) is not None
    )


@functools.lru_cache(maxsize=4096)
def is_threshold_signal(name: str) -> bool:
    """Thresholds drawn dashed in the queue row (Fusion α and 3α, Compound γ, Vegas α/β)."""
    n = norm(name)
    return n.startswith(("alpha", "gamma")) or n in {"3alpha", "alpha3", "threealpha", "vegasalpha", "vegasbeta"}


@functools.lru_cache(maxsize=4096)
def is_queue_signal(name: str) -> bool:
    """Queue estimates in packets (Vegas-style diff) that are compared against thresholds."""
    n = norm(name)
    return n.startswith("diff") or n in {"queue", "backlog", "qlen"}


# ---------------------------------------------------------------------------------------------
# units: every axis is labelled with the unit hscc_trace.schema (or, for an algorithm's signals,
# the replay registry) gives for what it shows, converted where a reader expects another scale

DISPLAY_UNITS = {"s": ("ms", 1e3), "bit/s": ("Mbit/s", 1e-6)}  # delays, RTTs and durations in ms; rates in Mbit/s
TIME_TITLE = "time since the flow's first packet (s)"


@functools.lru_cache(maxsize=4096)
def unit(table: str, column: str) -> str:
    """The unit hscc_trace.schema declares for ``table.column`` (``acks.rtt_s`` → ``s``)."""
    for c in schema.TABLES[table]:
        if c.name == column:
            return c.unit
    raise KeyError(f"{table}.{column} is not in hscc_trace.schema")


def shown(u: str) -> tuple[str, float]:
    """The unit a value in ``u`` is drawn in, and the factor that converts it (s → ms: 1000)."""
    return DISPLAY_UNITS.get(u, (u, 1.0))


# ---------------------------------------------------------------------------------------------
# small helpers


def _t(ts_ns: pl.Series | np.ndarray, t0_ns: int) -> np.ndarray:
    """Seconds since the flow start (float64)."""
    arr = ts_ns.to_numpy() if isinstance(ts_ns, pl.Series) else np.asarray(ts_ns)
    return (arr.astype(np.int64) - np.int64(t0_ns)) / 1e9


def _f(s: pl.Series) -> np.ndarray:
    """A numeric column as float64 with nulls as NaN (zero-copy for a float64 column without nulls)."""
    if s.dtype == pl.Boolean:
        s = s.cast(pl.UInt8)
    # (not as a one-column frame for a column with nulls: less of this thread's CPU time, but
    # DataFrame.to_numpy runs in polars' thread pool, and with the machine loaded the calling
    # thread waited for it ≈ 50 ms a flow of replica-5M)
    return np.asarray(s.to_numpy(), dtype=np.float64)  # polars writes nulls of numeric columns as NaN


def _same(a: pl.Series, b: pl.Series) -> bool:
    """Whether two integer columns of the same length hold the same values (compared as Int64, a
    null equal to anything): their arrays compared as they are when neither has a null and both
    have one type (the replays' frame and time columns: no cast, no polars expression)."""
    if a.dtype == b.dtype and a.dtype.is_integer() and not a.null_count() and not b.null_count():
        return bool(np.array_equal(a.to_numpy(), b.to_numpy()))
    return bool((a.cast(pl.Int64) == b.cast(pl.Int64)).all())


def scatter(x: np.ndarray, y: np.ndarray, name: str, **kw: Any) -> Trace:
    """A plotly scatter trace as a plain dict (no graph_objects validation: the report builds
    thousands of traces, and plotly's Python objects cost far more than the data)."""
    return {"type": "scatter", "x": x, "y": y, "name": name, **kw}


class _Picks:
    """The points a flow's line series are drawn at (:func:`decimate.select_line`), each time axis'
    columns found once (:func:`decimate.column_runs`), and a series drawn by several panels (the
    bytes in flight in every algorithm's panel) decimated once when asked (``once``). Keyed by the
    arrays' identity: the arrays are held here, so an id is not reused while the flow is drawn."""

    def __init__(self) -> None:
        self._runs: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._done: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray, np.ndarray, dec.Reduction]] = {}

    def line(self, x: np.ndarray, y: np.ndarray, buckets: int, once: bool = False) -> tuple[np.ndarray, dec.Reduction]:
        key = (id(x), id(y), buckets)
        hit = self._done.get(key) if once else None
        if hit is not None and hit[0] is x and hit[1] is y:
            return hit[2], hit[3]
        runs = self.runs(x, buckets) if len(y) > 4 * buckets else None
        idx, red = dec.select_line(x, y, buckets, runs)
        if once:
            self._done[key] = (x, y, idx, red)
        return idx, red

    def runs(self, x: np.ndarray, buckets: int) -> np.ndarray:
        """:func:`decimate.column_runs` of the time axis ``x``, found once."""
        rk = (id(x), buckets)
        got = self._runs.get(rk)
        if got is None or got[0] is not x:
            got = self._runs[rk] = (x, dec.column_runs(x, buckets))
        return got[1]


class _Panel:
    """Collects traces for one block while recording reductions.

    ``frame`` (the frame number of each sample) becomes each drawn point's ``customdata``, so the
    hover names the packet; with ``mss`` the hover also gives the window in bytes (customdata
    ``[frame, bytes]``). ``src`` says where report.js finds the same series at full resolution in
    the flow's store (:mod:`.store`); it is kept only when the report writes a store.
    """

    def __init__(
        self, key: str, notes: list[TraceNote], buckets: int, keep_src: bool = False, picks: _Picks | None = None
    ) -> None:
        self.key = key
        self.notes = notes
        self.buckets = buckets
        self.keep_src = keep_src
        self.picks = picks if picks is not None else _Picks()
        #: the y range of the traces :meth:`lines` made (id → (trace, lowest, highest finite value)):
        #: what :func:`_extent` would find in their points
        self.ext: dict[int, tuple[Trace, float, float]] = {}

    def line(
        self,
        x: np.ndarray,
        y: np.ndarray,
        name: str,
        *,
        shape: str = "hv",
        mode: str = "lines",
        frame: np.ndarray | None = None,
        mss: float | None = None,
        src: dict[str, Any] | None = None,
        once: bool = False,
        **kw: Any,
    ) -> Trace | None:
        # Markers are one SVG element each: the lowest and highest of each of half as many columns.
        markers = mode != "lines"
        if markers:
            idx, red = dec.select(x, y, max(self.buckets // 2, 1), markers=True)
        else:  # (the points kept, flat runs thinned: decimate.select then decimate.flat_interior)
            idx, red = self.picks.line(x, y, self.buckets, once)
        self.notes.append(TraceNote(self.key, name, red))
        if red.n_out == 0:
            return None
        xs = np.asarray(x, dtype=np.float64)[idx]
        ys = np.asarray(y, dtype=np.float64)[idx]
        if not markers:
            kw["line"] = {**kw.get("line", {}), "shape": shape}
        _hover(kw, None if frame is None else np.asarray(frame)[idx], ys, mss)
        tr = scatter(xs, ys, name, mode=mode, **kw)
        if src is not None and self.keep_src:
            tr["_src"] = {"k": "line", **src, **({"b": mss} if mss else {})}
        return tr

    def lines(
        self,
        x: np.ndarray,
        series: list[tuple[np.ndarray, str, dict[str, Any], dict[str, Any] | None]],
        *,
        frame: np.ndarray | None,
        mss: float | None = None,
    ) -> list[Trace | None]:
        """:meth:`line` (``shape="hv"``, ``mode="lines"``) of several series on one time axis ``x``,
        each ``(y, name, kw, src)``, decimated by one compiled pass (:func:`decimate.select_lines`)
        that also finds each one's y range (kept in :attr:`ext` for :func:`_extent`)."""
        if not series:
            return []
        runs = self.picks.runs(x, self.buckets) if len(x) > 4 * self.buckets else None
        picks = dec.select_lines(x, [y for y, _, _, _ in series], self.buckets, runs)
        xf = np.asarray(x, dtype=np.float64)
        ff = None if frame is None else np.asarray(frame)
        out: list[Trace | None] = []
        for (y, name, kw, src), (idx, red, lo, hi) in zip(series, picks):
            self.notes.append(TraceNote(self.key, name, red))
            if red.n_out == 0:
                out.append(None)
                continue
            ys = np.asarray(y, dtype=np.float64)[idx]
            kw["line"] = {**kw.get("line", {}), "shape": "hv"}
            _hover(kw, None if ff is None else ff[idx], ys, mss)
            tr = scatter(xf[idx], ys, name, mode="lines", **kw)
            if src is not None and self.keep_src:
                tr["_src"] = {"k": "line", **src, **({"b": mss} if mss else {})}
            self.ext[id(tr)] = (tr, lo, hi)
            out.append(tr)
        return out

    def lines_shared(
        self,
        x: np.ndarray,
        series: list[tuple[np.ndarray, str, dict[str, Any]]],
        *,
        frame: np.ndarray | None,
        mss: float | None,
        group: str,
        src: list[dict[str, Any] | None],
    ) -> list[Trace]:
        """Several series on the same rows, drawn at one shared set of points (see
        :func:`decimate.select_shared`): each is exact at every point drawn, so a stacked area adds
        up there (Compound TCP's loss-based window + dwnd = win). Each ``series`` is (y, name, kw)."""
        idx, reds = dec.select_shared(x, [y for y, _, _ in series], self.buckets)
        for (_, name, _), red in zip(series, reds):
            self.notes.append(TraceNote(self.key, name, red))
        if len(idx) == 0:
            return []
        ys_all = [np.asarray(y, dtype=np.float64)[idx] for y, _, _ in series]
        keep = dec.flat_interior(ys_all)
        idx = idx[keep]
        xs = np.asarray(x, dtype=np.float64)[idx]
        out = []
        for (y, name, kw), sr in zip(series, src):
            kw = dict(kw)
            ys = np.asarray(y, dtype=np.float64)[idx]
            kw["line"] = {**kw.get("line", {}), "shape": "hv"}
            _hover(kw, None if frame is None else np.asarray(frame)[idx], ys, mss)
            tr = scatter(xs, ys, name, mode="lines", **kw)
            if sr is not None and self.keep_src:
                tr["_src"] = {"k": "line", **sr, "g": group, **({"b": mss} if mss else {})}
            out.append(tr)
        return out

    def bars(
        self,
        t: np.ndarray,
        lo: np.ndarray,
        hi: np.ndarray,
        name: str,
        color: str,
        *,
        src: dict[str, Any] | None = None,
        **kw: Any,
    ) -> Trace | None:
        xs, ys, red = dec.bars(t, lo, hi, self.buckets)
        self.notes.append(TraceNote(self.key, name, red))
        if len(xs) == 0:
            return None
        tr = scatter(
            xs, ys, name, mode="lines", line={"color": color, "width": 1.4}, connectgaps=False, hoverinfo="skip", **kw
        )
        if src is not None and self.keep_src:
            tr["_src"] = {"k": "bar", **src}
        return tr


def _hover(kw: dict[str, Any], frames: np.ndarray | None, ys: np.ndarray, mss: float | None) -> None:
    """Add the frame number (and, for a window in packets, the window in bytes) to a trace's hover.

    ``customdata`` holds the frame of each point; for a window, report.js turns it into
    ``[frame, round(y · mss)]`` pairs before drawing (``_bytes``: the MSS), so that the page does not
    carry the bytes, which follow from the packets."""
    if frames is None:
        return
    tmpl = kw.get("hovertemplate", "%{y}")
    kw["customdata"] = np.asarray(frames, dtype=np.float64)
    if mss:
        kw["_bytes"] = float(mss)
        kw["hovertemplate"] = tmpl + " (%{customdata[1]:,} bytes) · frame %{customdata[0]}"
    else:
        kw["hovertemplate"] = tmpl + " · frame %{customdata}"


def to_rects(tr: Trace | None, width: float, min_h: float) -> Trace | None:
    """Turn a bar trace (``(t, lo), (t, hi), gap`` triples, see decimate.bars) into filled
    rectangles ``width`` seconds wide centred on t, at least ``min_h`` high (centred on the bar).

    plotly.js draws every gap-separated piece of a line, and every marker, as its own SVG path,
    styled one by one; a filled ``toself`` trace with ``mode: "none"`` is one path however many
    rectangles it holds (25 flows × ~1000 bars and marks were ~2 s of the report's drawing).
    ``meta: "data"`` tells the report's y-axis fitting that this fill is data, not shading.
    """
    if tr is None:
        return None
    x, y = np.asarray(tr["x"], dtype=np.float64), np.asarray(tr["y"], dtype=np.float64)
    t, lo, hi = x[0::3], y[0::3], y[1::3]
    grow = np.maximum(min_h - (hi - lo), 0.0) / 2
    lo, hi = lo - grow, hi + grow
    k = len(t)
    xs, ys = np.empty(k * 5), np.empty(k * 5)
    s, e = t - width / 2, t + width / 2
    xs[0::5], xs[1::5], xs[2::5], xs[3::5], xs[4::5] = s, s, e, e, np.nan  # plotly closes each polygon
    ys[0::5], ys[1::5], ys[2::5], ys[3::5], ys[4::5] = lo, hi, hi, lo, np.nan
    color = tr.get("line", {}).get("color", "#444")
    out = {k2: v for k2, v in tr.items() if k2 not in ("line", "connectgaps", "mode", "x", "y", "hoverinfo")}
    return {
        **out,
        "x": xs,
        "y": ys,
        "mode": "none",
        "fill": "toself",
        "fillcolor": color,
        "meta": "data",
        "hoveron": "fills",
        "hoverinfo": "name",
    }


def _poly_x(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    xs = np.empty(len(s) * 5)
    # four corners and a break: plotly.js closes each sub-polygon of a "toself" fill itself
    xs[0::5], xs[1::5], xs[2::5], xs[3::5], xs[4::5] = s, s, e, e, np.nan
    return xs


def _poly_y(k: int, y0: float, y1: float) -> np.ndarray:
    ys = np.empty(k * 5)
    ys[0::5], ys[1::5], ys[2::5], ys[3::5], ys[4::5] = y0, y1, y1, y0, np.nan
    return ys


@functools.lru_cache(maxsize=4096)
def _scale_alpha(color: str, k: float) -> str:
    m = re.fullmatch(r"rgba\((\d+),\s*(\d+),\s*(\d+),\s*([\d.]+)\)", color)
    if not m:
        return color
    return f"rgba({m.group(1)},{m.group(2)},{m.group(3)},{float(m.group(4)) * k:.3f})"


def _band(
    start: np.ndarray,
    end: np.ndarray,
    y0: float,
    y1: float,
    name: str,
    color: str,
    *,
    min_gap: float,
    legendgroup: str,
    showlegend: bool,
    t_end: float | None = None,
    src: str | None = None,
    shapes: list[tuple[float | None, np.ndarray, int]] | None = None,
    **kw: Any,
) -> list[Trace]:
    """Shaded time ranges as filled polygon traces (one per shade; cheap even for thousands of ranges).

    Up to one range per two time columns: each range is drawn exactly (at least half a column wide,
    so an instant stays visible). Denser than that: each column is shaded by the share of its time
    the ranges cover (two grades, see decimate.coverage_levels) — never a solid block for a column
    that was covered 5 %. ``src`` names the store table holding the exact ranges: zoomed in,
    report.js draws each range exactly (on the first trace; further grades are emptied).
    ``shapes``: :func:`_band_shapes` of the ranges, when already known.
    """
    shapes = _band_shapes(start, end, min_gap, t_end) if shapes is None else shapes
    # mode "none": the fill alone is one SVG path; a line (even of width 0) is one path per range
    common = dict(mode="none", fill="toself", hoverinfo="skip", legendgroup=legendgroup, **kw)
    out = []
    for i, (g, xs, k) in enumerate(shapes):
        ys = _poly_y(k, y0, y1)
        if g is None:
            out.append(scatter(xs, ys, name, fillcolor=color, showlegend=showlegend, **common))
        else:
            out.append(
                scatter(xs, ys, name, fillcolor=_scale_alpha(color, g), showlegend=showlegend and i == 0, **common)
            )
    if src is not None:
        for i, tr in enumerate(out):
            tr["_src"] = {"k": "band", "tb": src, "main": i == 0, "fc": color, "y0": y0, "y1": y1}
    return out


def _band_shapes(
    start: np.ndarray, end: np.ndarray, min_gap: float, t_end: float | None
) -> list[tuple[float | None, np.ndarray, int]]:
    """What :func:`_band` draws of ranges, whatever their height: per filled trace its grade
    (None: the ranges drawn exactly), its polygons' x and their number."""
    s, e = dec.merge_intervals(start, end, 0.0)
    if len(s) == 0:
        return []
    columns = int(round((t_end or float(e.max())) / min_gap)) if min_gap > 0 else 0
    if len(s) <= max(columns // 2, 1) or columns <= 0:
        e = np.maximum(e, s + min_gap * 0.5)
        return [(None, _poly_x(s, e), len(s))]
    grades = dec.coverage_levels(s, e, 0.0, columns * min_gap, columns, levels=2)
    return [(g, _poly_x(gs, ge), len(gs)) for g, gs, ge in sorted(grades, key=lambda x: -x[0])]


def _extent(
    traces: Iterable[Trace | None], known: dict[int, tuple[Trace, float, float]] | None = None
) -> tuple[float, float]:
    """y range covered by the (non-band) traces, for sizing bands; (0, 1) when empty. ``known``:
    the lowest and highest finite value of some of them, found as they were decimated
    (:attr:`_Panel.ext`)."""
    lo, hi = math.inf, -math.inf
    for tr in traces:
        if tr is None or tr.get("y") is None or tr.get("visible") == "legendonly":
            continue
        got = known.get(id(tr)) if known else None
        if got is not None and got[0] is tr:
            if got[1] <= got[2]:  # (a finite value)
                lo, hi = min(lo, got[1]), max(hi, got[2])
            continue
        y = np.asarray(tr["y"], dtype=np.float64)
        finite = np.isfinite(y)
        if not finite.all():
            y = y[finite]
        if len(y):
            lo, hi = min(lo, float(y.min())), max(hi, float(y.max()))
    if not math.isfinite(lo):
        return 0.0, 1.0
    lo = min(lo, 0.0)
    if hi <= lo:
        hi = lo + 1.0
    return lo, hi + 0.04 * (hi - lo)


# ---------------------------------------------------------------------------------------------
# flow-level context shared by the panels


@dataclass
class _Ctx:
    fr: FlowResult
    t0: int
    mss: int
    duration: float
    buckets: int
    min_gap: float  # one time column (s)
    colors: dict[str, str]
    best: str | None
    notes: list[TraceNote]
    episodes: tuple[np.ndarray, np.ndarray, np.ndarray]  # start s, end s, kind
    store: StoreBuilder | None = None  # the flow's full-resolution store (None: not written)
    _n_bands: int = 0
    _replay_tables: dict[str, str] = field(default_factory=dict)
    _rows_are_acks: dict[str, bool] = field(default_factory=dict)
    _keys_seen: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray, bool]] = field(default_factory=dict)
    _cwnd: dict[str, np.ndarray] = field(default_factory=dict)  # (:meth:`cwnd`)
    _sids: dict[tuple[str, str], str] = field(default_factory=dict)
    _algo_ids: dict[str, int] = field(default_factory=dict)
    _n_sids: dict[str, int] = field(default_factory=dict)
    picks: _Picks = field(default_factory=_Picks)
    _band_tables: dict[tuple[int, int], tuple[str, np.ndarray, np.ndarray]] = field(default_factory=dict)
    _values: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    _ranks: dict[str, int] | None = None  # (:func:`_ranks`, found once)
    _types: dict[str, dict[str, pl.DataType]] = field(default_factory=dict)  # (:func:`_signal_types`)
    _physical: dict[tuple[str, str], pl.Series] = field(default_factory=dict)  # (:func:`_enum_physicals`)

    def sid(self, label: str, signal: str) -> str:
        """The store's name of an algorithm's series: ``r<i>.<j>`` (labels and signal names come
        from users and replay tables, so they never become store keys)."""
        key = (label, signal)
        got = self._sids.get(key)
        if got is None:
            algo = self._algo_ids.setdefault(label, len(self._algo_ids))
            n = self._n_sids[label] = self._n_sids.get(label, -1) + 1  # (the label's series so far)
            got = self._sids[key] = f"r{algo}.{n}"
        return got

    def panel(self, key: str) -> _Panel:
        return _Panel(key, self.notes, self.buckets, keep_src=self.store is not None, picks=self.picks)

    # -- the full-resolution store: tables of the flow's events, columns as drawn ----------------

    @functools.cached_property
    def ack_t(self) -> np.ndarray:
        """Each ACK's time (s since the flow's first packet), computed once per flow."""
        return _t(self.fr.events.acks["ts_ns"], self.t0)

    @functools.cached_property
    def ack_frame(self) -> np.ndarray:
        """Each ACK's frame number (float64), converted once per flow."""
        return _f(self.fr.events.acks["frame"])

    @functools.cached_property
    def outstanding(self) -> np.ndarray:
        """Each ACK's bytes in flight (float64), converted once per flow."""
        return _f(self.fr.events.acks["outstanding"])

    @functools.cached_property
    def flight(self) -> np.ndarray:
        """Each ACK's bytes in flight in packets (MSS-sized): drawn in the window panel and in
        every algorithm's, decimated once (``once``)."""
        return self.outstanding / self.mss

    def values(self, label: str, df: pl.DataFrame, name: str) -> np.ndarray:
        """A replay's numeric column as float64 (nulls NaN, :func:`_f`), converted once per panel.
        (Each column by itself: a polars expression, such as one select filling the nulls of
        every float column, releases the interpreter lock, and in the run's calling thread each
        release may cost up to the switch interval, 5 ms, to take it back from another thread.)"""
        got = self._values.get(label)
        if got is None:
            got = self._values[label] = {}
        v = got.get(name)
        if v is None:
            v = got[name] = _f(df.get_column(name))
        return v

    def done_with(self, label: str) -> None:
        """A replay's converted columns go (its panel is drawn)."""
        self._values.pop(label, None)

    def replay_frame(self, label: str, df: pl.DataFrame) -> np.ndarray | None:
        """A replay's frame numbers (float64): the ACKs' when its rows are the ACKs."""
        if "frame" not in df.columns:
            return None
        return self.ack_frame if self.rows_are_acks(label, df) else _f(df["frame"])

    def acks_table(self) -> str | None:
        """Table ``a``: one row per ACK (time, frame)."""
        if self.store is None:
            return None
        if "a" in self.store.tables:
            return "a"
        return self.store.table("a", self.ack_t, self.ack_frame)

    def rows_are_acks(self, label: str, df: pl.DataFrame) -> bool:
        """Whether a replay's rows are the flow's ACKs (the engine's output: one row per ACK,
        joined on ``frame``). The engine gives every replay of a flow the same ``frame`` and
        ``ts_ns`` columns (one frame of them per flow): columns whose values are the very memory
        of columns compared before have the same answer (:meth:`_keys_answer`)."""
        got = self._rows_are_acks.get(label)
        if got is None:
            acks = self.fr.events.acks
            got = self._rows_are_acks[label] = (
                df.height == acks.height
                and "frame" in df.columns
                and df["frame"].null_count() == 0
                and self._keys_answer(df.get_column("frame"), df.get_column("ts_ns"))
            )
        return got

    def _keys_answer(self, frame: pl.Series, ts: pl.Series) -> bool:
        """Whether a replay's ``frame`` and ``ts_ns`` are the ACKs' (:func:`_same`), found once
        per pair of value buffers: columns without nulls are numpy views of their memory, held
        here (so that an address is not reused while the flow is drawn), and two columns of one
        type and length at the same address hold the same values."""
        acks = self.fr.events.acks
        if frame.null_count() or ts.null_count():
            return _same(frame, acks.get_column("frame")) and _same(ts, acks.get_column("ts_ns"))
        fa, ta = frame.to_numpy(), ts.to_numpy()
        key = (fa.ctypes.data, ta.ctypes.data, fa.dtype.str, ta.dtype.str, len(fa), len(ta))
        hit = self._keys_seen.get(key)
        if hit is None:
            same = _same(frame, acks.get_column("frame")) and _same(ts, acks.get_column("ts_ns"))
            hit = self._keys_seen[key] = (fa, ta, same)
        return hit[2]

    def cwnd(self, label: str, df: pl.DataFrame) -> np.ndarray:
        """A replay's ``cwnd`` (float64, :func:`_f`), converted once per flow: drawn in the window
        panel, in the algorithm's panel and stored for the packet list. (Kept only when it is a
        view of the table's memory — no nulls —, so that keeping it costs no memory.)"""
        got = self._cwnd.get(label)
        if got is None:
            s = df.get_column("cwnd")
            got = _f(s)
            if not got.flags.writeable:  # (polars' zero-copy view: one chunk, no nulls)
                self._cwnd[label] = got
        return got

    def replay_t(self, label: str, df: pl.DataFrame) -> np.ndarray:
        """A replay's times (s): the ACKs' when its rows are the ACKs."""
        return self.ack_t if self.rows_are_acks(label, df) else _t(df["ts_ns"], self.t0)

    def col(
        self, table: str | None, name: str, values: np.ndarray, decimals: int | None = None
    ) -> dict[str, Any] | None:
        """Put a drawn series into the store; the trace's ``src`` (None without a store)."""
        if self.store is None or table is None:
            return None
        self.store.column(table, name, values, decimals=decimals)
        return {"tb": table, "y": name}

    def seg_table(self) -> str | None:
        """Table ``s``: one row per data segment (time, frame; seq, len, kind code)."""
        if self.store is None:
            return None
        if "s" not in self.store.tables:
            segs = self.fr.events.segments
            self.store.table("s", _t(segs["ts_ns"], self.t0), _f(segs["frame"]))
            self.store.column("s", "seq", _f(segs["seq"]), decimals=0)
            self.store.column("s", "len", _f(segs["len"]), decimals=0)
            self.store.column("s", "kind", _f(segs["kind"].to_physical()), decimals=0, delta=False)
        return "s"

    def sack_table(self) -> str | None:
        """Table ``k``: one row per SACK block (time and frame of its ACK; left, right edge)."""
        sack = self.fr.events.sack_blocks
        if self.store is None or sack is None or not sack.height:
            return None
        if "k" not in self.store.tables:
            self.store.table("k", _t(sack["ts_ns"], self.t0), _f(sack["frame"]))
            self.store.column("k", "left", _f(sack["left"]), decimals=0)
            self.store.column("k", "right", _f(sack["right"]), decimals=0)
        return "k"

    def col_bytes(self, table: str | None, name: str, nbytes: np.ndarray) -> dict[str, Any] | None:
        """A series drawn in packets, stored as exact bytes (the hover gives both)."""
        src = self.col(table, name, nbytes, decimals=0)
        return None if src is None else {**src, "f": 1.0 / self.mss}

    def band_table(self, start: np.ndarray, end: np.ndarray, again: bool = False) -> str | None:
        """A store table of exact time ranges (start as the table's time, ``e`` the end).
        ``again``: these arrays (held by the caller) may be given again; a table made of them
        before is then named anew without sorting and comparing the ranges again."""
        if self.store is None or len(start) == 0:
            return None
        name = f"b{self._n_bands}"
        self._n_bands += 1
        key = (id(start), id(end))
        hit = self._band_tables.get(key) if again else None
        if hit is not None and hit[1] is start and hit[2] is end:  # (the arrays are held there)
            self.store.alias(name, hit[0])
            return name
        order = dec.stable_order(start)
        st, en = np.asarray(start, dtype=np.float64), np.asarray(end, dtype=np.float64)
        self.store.table(name, st if order is None else st[order])
        self.store.column(name, "e", en if order is None else en[order], decimals=6)
        if again:
            self._band_tables[key] = (name, start, end)
        return name

    def replay_table(self, label: str, df: pl.DataFrame) -> str | None:
        """The store table of a replay: the ACK table when its rows are the ACKs (the engine's
        output: one row per ACK, joined on ``frame``), else a table of its own."""
        if self.store is None:
            return None
        if label in self._replay_tables:
            return self._replay_tables[label]
        if self.rows_are_acks(label, df):
            name = self.acks_table()
        else:
            name = f"p{len(self._replay_tables)}"
            frame = _f(df["frame"]) if "frame" in df.columns else None
            self.store.table(name, _t(df["ts_ns"], self.t0), frame)
        self._replay_tables[label] = name or ""
        return name

    @functools.cached_property
    def episode_kinds(self) -> list[tuple[str, np.ndarray, np.ndarray, list[tuple[float | None, np.ndarray, int]]]]:
        """Per kind of congestion episode the flow has: its episodes' start and end (s) and their
        shading's shapes (:func:`_band_shapes`), found once: every row of every panel shades them."""
        s, e, kind = self.episodes
        out = []
        for k in schema.EPISODE_KINDS:
            m = kind == k
            if m.any():
                sk, ek = s[m], e[m]
                out.append((k, sk, ek, _band_shapes(sk, ek, self.min_gap, self.duration)))
        return out

    def episode_bands(self, y0: float, y1: float, *, legend: bool = True, **kw: Any) -> list[Trace]:
        out = []
        for k, sk, ek, shapes in self.episode_kinds:
            label = {
                "fast_retransmit": "episode: fast retransmit",
                "sack_recovery": "episode: SACK recovery",
                "rto": "episode: RTO",
                "ecn": "episode: ECN",
            }[k]
            out += _band(
                sk,
                ek,
                y0,
                y1,
                label,
                EPISODE_COLORS[k],
                min_gap=self.min_gap,
                legendgroup=f"ep-{k}",
                showlegend=legend,
                t_end=self.duration,
                src=self.band_table(sk, ek, again=True),
                shapes=shapes,
                **kw,
            )
        return out


def flow_t0(fr: FlowResult) -> int:
    """The flow's first packet (ns): time 0 of every figure of the flow and of its store."""
    ev = fr.events
    firsts = [int(fr.flow["first_ns"])] if fr.flow.get("first_ns") is not None else []
    for df in (ev.segments, ev.acks):
        if df.height:
            firsts.append(cast(int, df["ts_ns"].min()))
    return min(firsts) if firsts else 0


def _context(fr: FlowResult, max_points: int, colors: dict[str, str] | None, store: StoreBuilder | None = None) -> _Ctx:
    ev = fr.events
    t0 = flow_t0(fr)
    lasts = [int(fr.flow["last_ns"])] if fr.flow.get("last_ns") is not None else []
    for df in (ev.segments, ev.acks):
        if df.height:
            lasts.append(cast(int, df["ts_ns"].max()))
    duration = max((max(lasts) - t0) / 1e9, 1e-6) if lasts else 1e-6
    buckets = max(max_points // 4, 1)
    if ev.episodes.height:
        start, end = ev.episodes.get_column("start_ns"), ev.episodes.get_column("end_ns")
        # (an open episode ends where it starts; no polars expression where none is needed: each
        # releases the interpreter lock, see _Ctx.values)
        kind = ev.episodes.get_column("kind")
        dt = kind.dtype
        if isinstance(dt, pl.Enum) and tuple(dt.categories.to_list()) == schema.EPISODE_KINDS:
            kinds = np.array([schema.EPISODE_KINDS[k] if k >= 0 else "fast_retransmit" for k in _codes(kind).tolist()])
        else:
            kinds = kind.cast(pl.String).fill_null("fast_retransmit").to_numpy()
        eps = (_t(start, t0), _t(end.fill_null(start) if end.null_count() else end, t0), kinds)
    else:
        eps = (np.empty(0), np.empty(0), np.empty(0, dtype=object))
    # the algorithm the verdict names (drawn thicker); none when the verdict names nothing — the
    # lowest error alone is never dressed up (hscc_trace.analysis.verdict)
    v = fr.verdict
    best = v.name if v is not None and getattr(v, "cls", None) in ("identified", "behaves as") else None
    return _Ctx(
        fr=fr,
        t0=t0,
        mss=max(int(ev.mss or fr.flow.get("mss") or 1), 1),
        duration=duration,
        buckets=buckets,
        min_gap=duration / buckets,
        colors=colors or algo_colors(fr.replays),
        best=best,
        notes=[],
        episodes=eps,
        store=store,
    )


# ---------------------------------------------------------------------------------------------
# panels


MAX_SHOWN = 6  # replayed cwnds drawn at first in the window panel; the rest start hidden in the legend


def _ranks(c: _Ctx) -> dict[str, int]:
    """Fit rank per algorithm label (legend order: best first)."""
    if c._ranks is None:
        fit = c.fr.fit
        if fit is None or not fit.height or not {"rank", "algo"} <= set(fit.columns):
            c._ranks = {}
        else:  # (the columns as lists: a polars select would release the interpreter lock)
            algos, ranks = fit.get_column("algo").to_list(), fit.get_column("rank").to_list()
            c._ranks = {str(a): int(r) for a, r in zip(algos, ranks) if r is not None}
    return c._ranks


def _initially_shown(c: _Ctx) -> set[str]:
    """The best-fitting MAX_SHOWN algorithms (all when there are few; replay order without a fit)."""
    labels = list(c.fr.replays)
    if len(labels) <= MAX_SHOWN:
        return set(labels)
    fit = c.fr.fit
    if fit is not None and fit.height and {"rank", "algo"} <= set(fit.columns):
        # (polars' sort order: nulls first; ranks are unique, so the order is the sort's)
        pairs = zip(fit.get_column("rank").to_list(), fit.get_column("algo").to_list())
        by_rank = [a for r, a in sorted(pairs, key=lambda p: (p[0] is not None, p[0] or 0))]
        ranked = [a for a in by_rank if a in c.fr.replays]
        labels = ranked + [lab for lab in labels if lab not in ranked]
    return set(labels[:MAX_SHOWN])


def _window_panel(c: _Ctx) -> Block:
    p = c.panel("window")
    acks = c.fr.events.acks
    actual: list[Trace | None] = []
    replays: list[Trace | None] = []
    pk = unit("replay", "cwnd")  # windows in packets (MSS-sized); the hover adds bytes
    mss = float(c.mss)
    if acks.height:
        t = c.ack_t
        fa = c.ack_frame
        ta = c.acks_table()
        actual.append(
            p.line(
                t,
                c.flight,
                "actual: bytes in flight",
                line=dict(color=ACTUAL_COLOR, width=2.2),
                legendrank=1,
                hovertemplate=f"%{{y:.1f}} {pk}",
                frame=fa,
                mss=mss,
                src=c.col_bytes(ta, "outstanding", c.outstanding),
                once=True,
            )
        )
        if "pipe" in acks.columns and acks["pipe"].null_count() < acks.height:
            pipe = _f(acks["pipe"]) / c.mss
            actual.append(
                p.line(
                    t,
                    pipe,
                    "actual: SACK-aware pipe",
                    line=dict(color="#555", width=1, dash="dot"),
                    visible="legendonly",
                    legendrank=2,
                    hovertemplate=f"%{{y:.1f}} {pk}",
                    frame=fa,
                    mss=mss,
                    src=c.col_bytes(ta, "pipe", _f(acks["pipe"])),
                )
            )
        rwnd = _f(acks["rwnd_bytes"]) / c.mss
        actual.append(
            p.line(
                t,
                rwnd,
                "receive window",
                line=dict(color="#b8860b", width=1.2, dash="dash"),
                visible="legendonly",
                legendrank=3,
                hovertemplate=f"%{{y:.1f}} {pk}",
                frame=fa,
                mss=mss,
                src=c.col_bytes(ta, "rwnd", _f(acks["rwnd_bytes"])),
            )
        )
    rounds = c.fr.events.rounds
    lim = _kind_codes(rounds.get_column("limit"), schema.LIMITS) if rounds.height else np.empty(0, dtype=np.int64)
    if rounds.height:
        cw = lim == schema.LIMITS.index("cwnd")  # (numpy masks: a polars filter releases the lock)
        if cw.any():
            tr_ = None
            peak = _f(rounds.get_column("peak_flight_bytes"))[cw] / c.mss
            end_cw = _t(rounds.get_column("end_ns"), c.t0)[cw]
            if c.store is not None:
                tr_ = c.store.table("r", end_cw)
            actual.append(
                p.line(
                    end_cw,
                    peak,
                    "actual: peak flight of fitted rounds",
                    mode="markers",
                    marker=dict(color=ACTUAL_COLOR, size=5, symbol="circle-open"),
                    visible="legendonly",
                    legendrank=4,
                    hovertemplate=f"%{{y:.1f}} {pk}",
                    src=c.col(tr_, "peak", peak),
                )
            )
    shown_ = _initially_shown(c)
    rank = _ranks(c)
    # every replay's cwnd; those on one time axis with one frame column (the ACKs': the engine's
    # replays) decimated together (_Panel.lines), in the replays' order
    group: list[tuple[np.ndarray, str, dict[str, Any], dict[str, Any] | None]] = []
    axis: tuple[np.ndarray | None, np.ndarray | None] = (None, None)
    for i, (label, df) in enumerate(c.fr.replays.items()):
        if not df.height:
            continue
        best = label == c.best
        cwnd = c.cwnd(label, df)
        t_, f_ = c.replay_t(label, df), c.replay_frame(label, df)
        if group and (t_ is not axis[0] or f_ is not axis[1]):
            replays += p.lines(cast(np.ndarray, axis[0]), group, frame=axis[1], mss=mss)
            group = []
        axis = (t_, f_)
        kw = {
            "line": {"color": c.colors.get(label, "#444"), "width": 2.6 if best else 1.4},
            "visible": True if label in shown_ else "legendonly",
            "legendgroup": f"algo-{_esc(label)}",
            "legendrank": 100 + rank.get(label, 100 + i),
            "hovertemplate": f"%{{y:.1f}} {pk}",
        }
        name = f"{_esc(label)} cwnd" + (f" ({c.fr.verdict.cls})" if best else "")
        group.append((cwnd, name, kw, c.col(c.replay_table(label, df), c.sid(label, "cwnd"), cwnd)))
    if group:
        replays += p.lines(cast(np.ndarray, axis[0]), group, frame=axis[1], mss=mss)
    kernel = [_kernel_window(c, p)]
    y0, y1 = _extent([*actual, *replays, *kernel], p.ext)
    bands = c.episode_bands(y0, y1, legendrank=1000)
    if rounds.height:
        rs, re_ = _t(rounds["start_ns"], c.t0), _t(rounds["end_ns"], c.t0)
        for k, color in LIMIT_COLORS.items():
            m = lim == schema.LIMITS.index(k)
            if m.any():
                name = "receive-window-limited rounds" if k == "rwnd" else "application-limited rounds"
                bands += _band(
                    rs[m],
                    re_[m],
                    y0,
                    y1,
                    name,
                    color,
                    min_gap=c.min_gap,
                    legendgroup=f"limit-{k}",
                    showlegend=True,
                    legendrank=1001,
                    t_end=c.duration,
                    src=c.band_table(rs[m], re_[m]),
                )
    # drawn bottom to top: shading, replays, then the actual sender on top of everything
    data = [
        *bands,
        *(tr for tr in replays if tr is not None),
        *(tr for tr in kernel if tr is not None),
        *(tr for tr in actual if tr is not None),
    ]
    hidden = len([lab for lab in c.fr.replays if lab not in shown_])
    more = f" — the {len(shown_)} best-fitting shown; {hidden} more in the legend (click to show)" if hidden else ""
    truth = " and the window the sending kernel really used (magenta, tcp_probe)" if kernel[0] is not None else ""
    return Block(
        "window",
        "Window: what the sender had in flight (black)" + truth + " and what each algorithm would have set" + more,
        [Row(data, ROW_PX["window"], ytitle=f"window ({pk})")],
    )


def _kernel_window(c: _Ctx, p: _Panel) -> Trace | None:
    """The sending kernel's ``snd_cwnd`` after each ACK (tcp_probe), when the flow has truth."""
    kt = c.fr.truth
    if kt is None or not kt.window.height:
        return None
    w = kt.window
    t, frame, y = _t(w["ts_ns"], c.t0), _f(w["frame"]), _f(w["snd_cwnd"])
    tb = c.store.table("kw", t, frame) if c.store is not None else None
    return p.line(
        t,
        y,
        "kernel: snd_cwnd (tcp_probe)",
        line=dict(color=KERNEL_COLOR, width=1.6),
        legendrank=5,
        hovertemplate=f"%{{y:.0f}} {unit('replay', 'cwnd')}",
        frame=frame,
        mss=float(c.mss),
        src=c.col(tb, "cwnd", y, decimals=0),
    )


def _kernel_signals(
    c: _Ctx, p: _Panel, label: str, names: list[str], units: dict[str, str], stack_on: str | None = None
) -> list[Trace | None]:
    """Markers of the sending kernel's own values of ``label``'s signals ``names`` (those its
    truth has under the same name: the BPF senders of samples/ write them in the replay's units),
    at the ACK whose processing wrote each; ``units`` gives each signal's unit as the row shows it.
    ``stack_on``: the row draws the replay's ``dwnd`` stacked on this loss-based window (Compound
    TCP), so the kernel's ``dwnd`` is drawn stacked on the kernel's own, where the two can be
    compared."""
    kt = c.fr.truth
    if kt is None or kt.signals is None or kt.algo != label or not kt.signals.height:
        return []
    ks = kt.signals
    have = [s for s in names if s in ks.columns and ks.schema[s].is_numeric()]
    if not have:
        return []
    t, frame = _t(ks["ts_ns"], c.t0), _f(ks["frame"])
    tb = c.store.table("ks", t, frame) if c.store is not None else None
    out: list[Trace | None] = []
    for i, s in enumerate(have):
        u, k = shown(units[s]) if units.get(s) else ("", 1.0)
        y = _f(ks[s]) * k
        name = f"kernel: {_esc(s)}"
        if s == "dwnd" and stack_on is not None:
            if stack_on in ks.columns:
                y = y + _f(ks[stack_on]) * k
            elif "win" in ks.columns:  # the replay's loss-based part is win − dwnd: the top is win
                y = _f(ks["win"]) * k
            else:
                continue
            name = "kernel: dwnd (stacked on its loss-based part)"
        out.append(
            p.line(
                t,
                y,
                name,
                mode="markers",
                marker=dict(color=KERNEL_COLOR, size=6, symbol=KERNEL_SYMBOLS[i % len(KERNEL_SYMBOLS)]),
                hovertemplate="%{y:.4g}" + (f" {_esc(u)}" if u else ""),
                frame=frame,
                src=c.col(tb, c.sid("\0kernel", s), y),
            )
        )
    return out


def _rtt_panel(c: _Ctx) -> Block:
    p = c.panel("rtt")
    acks = c.fr.events.acks
    traces: list[Trace | None] = []
    ms, k = shown(unit("acks", "rtt_s"))  # RTTs in ms
    if acks.height:
        rtt = _f(acks["rtt_s"]) * k  # NaN where the ACK formed no sample
        has = np.isfinite(rtt)
        if has.any():
            t = c.ack_t
            fa = c.ack_frame
            ta = c.acks_table()
            # the samples of each time column as one bar from the lowest to the highest (drawn as
            # filled rectangles below: one SVG path, where markers were one element per sample);
            # zoomed in to a few thousand samples, report.js draws each sample as a marker
            bar_src = None
            if c.col(ta, "rtt", rtt, decimals=3) is not None:
                bar_src = {"tb": ta, "lo": "rtt", "hi": ["rtt"], "mark": 1, "px": 3, "ht": f"%{{y:.3f}} {ms}"}
            traces.append(p.bars(t[has], rtt[has], rtt[has], "RTT sample", "rgba(76,120,168,0.55)", src=bar_src))
            minrtt = np.full(len(rtt), np.nan)
            minrtt[has] = np.fmin.accumulate(rtt[has])
            traces.append(
                p.line(
                    t,
                    minrtt,
                    "min RTT",
                    line=dict(color="#2ca02c", width=2),
                    hovertemplate=f"%{{y:.3f}} {ms}",
                    frame=fa,
                    src=c.col(ta, "minrtt", minrtt, decimals=3),
                )
            )
            srtt = np.full(len(rtt), np.nan)  # RFC 6298 SRTT over the samples, α = 1/8
            srtt[has] = pl.Series(rtt[has]).ewm_mean(alpha=1 / 8, adjust=False).to_numpy()
            traces.append(
                p.line(
                    t,
                    srtt,
                    "smoothed RTT (RFC 6298)",
                    shape="linear",
                    line=dict(color="#d62728", width=1.6),
                    hovertemplate=f"%{{y:.3f}} {ms}",
                    frame=fa,
                    src=c.col(ta, "srtt", srtt, decimals=3),
                )
            )
    y0, y1 = _extent(traces)
    if traces:
        traces[0] = to_rects(traces[0], 0.6 * c.min_gap, (y1 - y0) * 3 / ROW_PX["rtt"])
    data = [*c.episode_bands(y0, y1, legend=False), *(tr for tr in traces if tr is not None)]
    title = "RTT samples (lowest to highest per time column), min RTT and smoothed RTT"
    off = getattr(c.fr.events, "rtt_offset_s", 0.0) or 0.0
    if off:
        title += f" (corrected for the capture vantage by {off * 1e3:.3f} ms)"
    return Block("rtt", title, [Row(data, ROW_PX["rtt"], ytitle=f"RTT ({ms})")])


def _binned_rate(t: np.ndarray, nbytes: np.ndarray, width: float, t_end: float) -> tuple[np.ndarray, np.ndarray]:
    """Mbit/s per bin of ``width`` seconds, bins starting at 0 (x = bin start, drawn as steps)."""
    nb = max(int(math.ceil(t_end / width)), 1)
    idx = np.clip((t / width).astype(np.int64), 0, nb - 1)
    sums = np.bincount(idx, weights=nbytes, minlength=nb)
    return np.arange(nb) * width, sums * 8 / width / 1e6


def _goodput_panel(c: _Ctx) -> Block:
    p = c.panel("goodput")
    ev = c.fr.events
    rtt_med = c.fr.flow.get("rtt_median_s") or 0.0
    width = max(c.duration / min(c.buckets, 1000), float(rtt_med or 0.0), 1e-6)
    traces: list[Trace | None] = []
    if ev.acks.height:
        x, y = _binned_rate(c.ack_t, np.maximum(_f(ev.acks["acked_bytes"]), 0.0), width, c.duration)  # (null: NaN)
        traces.append(
            p.line(
                x, y, "goodput (newly ACKed)", line=dict(color=ACTUAL_COLOR, width=1.8), hovertemplate="%{y:.3f} Mbit/s"
            )
        )
    if ev.segments.height:
        t = _t(ev.segments["ts_ns"], c.t0)
        ln = _f(ev.segments["len"])
        x, y = _binned_rate(t, ln, width, c.duration)
        traces.append(
            p.line(
                x,
                y,
                "throughput (sent, incl. retransmissions)",
                line=dict(color="#4c78a8", width=1.2),
                hovertemplate="%{y:.3f} Mbit/s",
            )
        )
        kind = _kind_codes(ev.segments["kind"], schema.SEGMENT_KINDS)
        rtx = (kind != schema.SEGMENT_KINDS.index("new")) & (kind != schema.SEGMENT_KINDS.index("out_of_order"))
        if rtx.any():
            x, y = _binned_rate(t[rtx], ln[rtx], width, c.duration)
            traces.append(
                p.line(x, y, "retransmitted", line=dict(color="#d62728", width=1.2), hovertemplate="%{y:.3f} Mbit/s")
            )
    y0, y1 = _extent(traces)
    data = [*c.episode_bands(y0, y1, legend=False), *(tr for tr in traces if tr is not None)]
    return Block(
        "goodput",
        f"Goodput and throughput (bins of {width * 1e3:.3g} ms)",
        [Row(data, ROW_PX["goodput"], ytitle=f"rate ({shown(unit('flows', 'goodput_bps'))[0]})")],
    )


def _timeseq_panel(c: _Ctx) -> Block:
    p = c.panel("timeseq")
    ev = c.fr.events
    traces: list[Trace | None] = []
    bars: list[int] = []  # indices of bar traces (drawn as rectangles once the y extent is known)
    by = unit("segments", "seq")  # relative sequence numbers in bytes
    segs = ev.segments
    if segs.height:
        t = _t(segs["ts_ns"], c.t0)
        lo = _f(segs["seq"])
        ln = _f(segs["len"])
        hi = lo + ln
        kind = _kind_codes(segs["kind"], schema.SEGMENT_KINDS)
        ts_ = c.seg_table()
        for code, k in enumerate(schema.SEGMENT_KINDS):
            m = kind == code
            if m.any():
                name = "data segment" if k == "new" else k.replace("_", " ")
                bars.append(len(traces))
                src = None
                if ts_ is not None:
                    src = {"tb": ts_, "lo": "seq", "hi": ["seq", "len"], "w": ["kind", code], "ht": "seq %{y:,.0f}"}
                traces.append(p.bars(t[m], lo[m], hi[m], name, SEGMENT_COLORS[k], src=src))
    acks = ev.acks
    if acks.height:
        t = c.ack_t
        fa = c.ack_frame
        ta = c.acks_table()
        a = _f(acks["ack"])
        rw = _f(acks["rwnd_bytes"])
        traces.append(
            p.line(
                t,
                a,
                "ACK",
                line=dict(color="#2ca02c", width=1.4),
                hovertemplate="ack %{y:,.0f}",
                frame=fa,
                src=c.col(ta, "ack", a, decimals=0),
            )
        )
        edge_src = None
        if c.col(ta, "rwnd", rw, decimals=0) is not None:
            edge_src = {"tb": ta, "y": "ack", "add": ["rwnd"]}
        traces.append(
            p.line(
                t,
                a + rw,
                "receive window (ACK + rwnd)",
                line=dict(color="#b8860b", width=1.2),
                hovertemplate="rwnd edge %{y:,.0f}",
                frame=fa,
                src=edge_src,
            )
        )
    sack = getattr(ev, "sack_blocks", None)
    if isinstance(sack, pl.DataFrame) and sack.height and {"ts_ns", "left", "right"} <= set(sack.columns):
        bars.append(len(traces))
        tk = c.sack_table()
        src = None if tk is None else {"tb": tk, "lo": "left", "hi": ["right"], "ht": "SACK %{y:,.0f}"}
        traces.append(
            p.bars(_t(sack["ts_ns"], c.t0), _f(sack["left"]), _f(sack["right"]), "SACK block", "#9467bd", src=src)
        )
    elif acks.height and "sacked_bytes" in acks.columns:
        sk = _f(acks["sacked_bytes"]) > 0
        if sk.any():
            # The event stream carries how much each ACK newly SACKed, not the block edges: mark the
            # ACKs that brought SACK information at the cumulative ACK they carried.
            mark = np.where(sk, _f(acks["ack"]), np.nan)
            traces.append(
                p.line(
                    c.ack_t,
                    mark,
                    "ACK carrying new SACK info",
                    mode="markers",
                    marker=dict(color="#9467bd", size=5, symbol="triangle-up"),
                    hovertemplate="SACK at ack %{y:,.0f}",
                    frame=c.ack_frame,
                    src=c.col(c.acks_table(), "sackmark", mark, decimals=0),
                )
            )
    y0, y1 = _extent(traces)
    # each bar (a segment, or the lowest to highest byte of a time column) a rectangle 0.6 column
    # wide and at least 3 px high at first, so a one-segment retransmission stays visible
    # (5 px for retransmissions and SACK blocks, the size of the marks they replace), drawn on top of
    # the ACK and receive-window lines as in tcptrace
    for i in bars:
        tr = traces[i]
        if tr is None:
            continue
        px = 3 if tr["name"] == "data segment" else 5
        if "_src" in tr:
            tr["_src"]["px"] = px
        traces[i] = to_rects(tr, 0.6 * c.min_gap, (y1 - y0) * px / ROW_PX["timeseq"])
    lines = [tr for i, tr in enumerate(traces) if i not in bars and tr is not None]
    # data segments, then SACK blocks, then retransmissions by kind on top (the marks to find)
    order = sorted(
        bars,
        key=lambda i: (
            (traces[i] or {}).get("name") != "data segment" and 1 + ((traces[i] or {}).get("name") != "SACK block")
        ),
    )
    data: list[dict[str, Any]] = [*c.episode_bands(y0, y1, legend=False), *lines]
    data += [tr for tr in (traces[i] for i in order) if tr is not None]
    return Block(
        "timeseq",
        "Time/sequence graph (tcptrace style)",
        [Row(data, ROW_PX["timeseq"], ytitle=f"relative sequence ({by})")],
    )


def _signal_kind(dt: pl.DataType, info: meta.SignalInfo | None) -> str:
    """bool | category | number | other (``dt``: the column's type), from the registry's
    declaration where there is one."""
    if dt == pl.Boolean:
        return "bool"
    if dt == pl.String or isinstance(dt, (pl.Enum, pl.Categorical)):
        return "category"
    if dt.is_numeric():
        if info is not None and info.kind == "bool":
            return "bool"
        if info is not None and info.kind == "enum":
            return "category"
        return "number"
    return "other"


@dataclass
class _FlagRuns:
    """Runs of a boolean or categorical signal: start/end times (s) and the value of each run."""

    start: np.ndarray
    end: np.ndarray
    values: np.ndarray  # bool (boolean signals) or str (categorical)
    boolean: bool


def _flag_runs(
    t: np.ndarray,
    s: pl.Series,
    info: meta.SignalInfo | None,
    dt: pl.DataType | None = None,
    physical: pl.Series | None = None,
) -> _FlagRuns:
    """Runs of equal values of a bool/enum/category signal, computed on the raw column (numeric
    codes or polars strings) and only then labelled: a million-row signal has a few hundred runs,
    so casting every row to a string label first would cost far more than the runs themselves.
    ``dt``: the column's type, when known (an Enum's is made anew on each ``s.dtype``). Nulls are
    filled in numpy, not by polars expressions (see :meth:`_Ctx.values`). ``physical``: an Enum
    column's codes (``s.to_physical()``), when already known (:func:`_replay_flag_runs`)."""
    dt = s.dtype if dt is None else dt
    if dt == pl.Boolean:
        vals = s.to_numpy() if not s.null_count() else _f(s) == 1  # null → False
        st, en, v = dec.runs(t, vals)
        return _FlagRuns(st, en, v.astype(bool), True)
    if dt.is_numeric() and info is not None and info.kind == "bool":
        vals = _f(s)
        st, en, v = dec.runs(t, (vals != 0) & ~np.isnan(vals))  # null → False
        return _FlagRuns(st, en, v.astype(bool), True)
    if dt.is_numeric():  # an enum's index (labels declared by the registry) or a plain number
        st, en, v = dec.runs(t, _f(s))
        labels = list(info.labels) if info is not None and info.kind == "enum" else []
        names = [
            (
                ""
                if math.isnan(x)
                else labels[int(x)]
                if labels and x == int(x) and 0 <= int(x) < len(labels)
                else str(int(x))
                if x == int(x)
                else str(x)
            )
            for x in v.tolist()
        ]
        return _FlagRuns(st, en, np.array(names, dtype=object), False)
    if isinstance(dt, pl.Enum):  # (every enumerated signal of the replays): runs of its codes
        cats = dt.categories.to_list()
        st, en, v = dec.runs(t, _enum_codes(s, cats, physical))
        names = [cats[i] if i < len(cats) else "" for i in v.tolist()]  # null → ""
        return _FlagRuns(st, en, np.array(names, dtype=object), False)
    starts = np.flatnonzero(np.diff(s.rle_id().to_numpy(), prepend=-1))
    st = t[starts]
    en = np.concatenate((t[starts[1:]], t[-1:]))
    v = s.gather(starts).cast(pl.String).fill_null("").to_numpy()
    return _FlagRuns(st, en, v, False)


_BASE_NAMES = frozenset(col.name for col in schema.REPLAY_BASE)


def _signal_types(c: _Ctx, label: str, df: pl.DataFrame) -> dict[str, pl.DataType]:
    """The type of each of a replay's signals (its columns beyond schema.REPLAY_BASE), found once a
    flow. (Each column's alone: polars makes each Enum type anew, the base's state among them.)"""
    got = c._types.get(label)
    if got is None:
        got = c._types[label] = {s: df.get_column(s).dtype for s in df.columns if s not in _BASE_NAMES}
    return got


def _enum_physicals(c: _Ctx, labels: list[str]) -> None:
    """The codes (``to_physical``) of every enumerated signal of the flow's replays ``labels``, by
    one polars select per row count (each is an expression, and each polars call releases the
    interpreter lock, see :meth:`_Ctx.values`): :func:`_flag_runs` finds them in ``c._physical``."""
    by_height: dict[int, list[tuple[tuple[str, str], pl.Series]]] = {}
    for label in labels:
        df = c.fr.replays[label]
        if not df.height:
            continue
        for s, dt in _signal_types(c, label, df).items():
            if isinstance(dt, pl.Enum):
                by_height.setdefault(df.height, []).append(((label, s), df.get_column(s)))
    for cols in by_height.values():
        frame = pl.DataFrame([col.alias(f"c{i}") for i, (_, col) in enumerate(cols)])
        phys = frame.select(pl.all().to_physical())
        for i, (key, _) in enumerate(cols):
            c._physical[key] = phys.get_column(f"c{i}")


def _replay_flag_runs(
    c: _Ctx,
    label: str,
    t: np.ndarray,
    df: pl.DataFrame,
    flags: list[str],
    infos: dict[str, meta.SignalInfo],
    types: dict[str, pl.DataType],
) -> dict[str, _FlagRuns]:
    """:func:`_flag_runs` of each of a replay's flag signals ``flags`` (its enumerated ones' codes
    from :func:`_enum_physicals`, when found there)."""
    return {
        s: _flag_runs(t, df.get_column(s), infos.get(s), types[s], c._physical.pop((label, s), None)) for s in flags
    }


def _enum_codes(s: pl.Series, cats: list[str], physical: pl.Series | None = None) -> np.ndarray:
    """An Enum column's codes (its categories ``cats``; null → ``len(cats)``) as int64; ``physical``:
    ``s.to_physical()`` when already known. (Not through its Arrow form, cheaper by itself:
    importing pyarrow and a first conversion cost ≈ 30 MB of resident memory, and the analysis
    never imports it.)"""
    codes = (s.to_physical() if physical is None else physical).to_numpy()
    if s.null_count():  # (codes with nulls come as float, nulls NaN)
        return np.where(np.isnan(codes), len(cats), codes).astype(np.int64)
    return codes.astype(np.int64)


_THRESHOLD_DASH = ("dash", "dot", "dashdot", "longdash", "longdashdot")


def _unit_title(name: str, unit: str) -> str:
    return f"{_esc(name)} ({_esc(unit)})" if unit else _esc(name)


@dataclass(frozen=True)
class _AlgoPlan:
    """The layout of an algorithm's panel, which depends on its label and its signals' names and
    kinds of type only (:func:`_algo_plan`): the same for every flow of a run."""

    infos: dict[str, meta.SignalInfo]
    sunit: dict[str, str]  # the registry's unit of each signal ("" when none)
    flags: list[str]  # signals shaded (categorical first, then boolean)
    rows: list[tuple[str, list[str], str, str]]  # (kind, signals, title, unit) of each row


_PLANS: dict[tuple[Any, ...], _AlgoPlan] = {}


def _algo_plan(label: str, sig: list[str], types: dict[str, pl.DataType]) -> _AlgoPlan:
    """:func:`_plan_of` these signals, found once a process (keyed by the label, the signals'
    names and their types' classes: all that :func:`_signal_kind` reads of them). The plan's
    ``infos`` (:func:`meta.signals`, made from the registry's resolved label, which
    :mod:`.meta` keeps once a process) is shared by every flow and lane: read-only."""
    key = (label, tuple(sig), tuple(type(types[s]) for s in sig))
    got = _PLANS.get(key)
    if got is None:
        if len(_PLANS) >= 256:
            _PLANS.clear()
        got = _PLANS[key] = _plan_of(label, sig, types)
    return got


def _plan_of(label: str, sig: list[str], types: dict[str, pl.DataType]) -> _AlgoPlan:
    infos = meta.signals(label)
    kinds = {s: _signal_kind(types[s], infos.get(s)) for s in sig}
    sunit = {s: (infos[s].unit if s in infos else "") for s in sig}  # the registry's unit of each signal
    num = [s for s in sig if kinds[s] == "number"]
    window = [s for s in num if is_window_signal(s)]
    queue = [s for s in num if s not in window and (is_queue_signal(s) or is_threshold_signal(s))]
    others = [s for s in num if s not in window and s not in queue]
    # categorical signals (phase, mode, region) first: the first flag shades the full row height,
    # further ones a strip each along the top, so overlapping shadings stay readable
    flags = [s for s in sig if kinds[s] == "category"] + [s for s in sig if kinds[s] == "bool"]
    pk = unit("replay", "cwnd")
    rows: list[tuple[str, list[str], str, str]] = [("window", window, f"window ({pk})", pk)]
    if queue:
        rows.append(("queue", queue, f"queue estimate vs thresholds ({pk})", pk))
    groups: dict[str, list[str]] = {}  # other numeric signals: one row per unit (unknown unit: own row)
    for s in others:
        groups.setdefault(sunit[s] or f"\0{s}", []).append(s)
    for u, names in groups.items():
        shown_u = "" if u.startswith("\0") else shown(u)[0]
        title = ", ".join(_esc(n) for n in names) + (f" ({_esc(shown_u)})" if shown_u else "")
        rows.append(("other", names, title, shown_u))
    return _AlgoPlan(infos, sunit, flags, rows)


def _algo_panel(c: _Ctx, label: str, df: pl.DataFrame) -> Block | None:
    sig = [s for s in df.columns if s not in _BASE_NAMES]
    if not sig or not df.height:
        return None
    # (the signals' types only: polars makes each Enum type anew, the base's state among them)
    types = _signal_types(c, label, df)
    plan = _algo_plan(label, sig, types)
    infos, sunit, flags, rows = plan.infos, plan.sunit, plan.flags, plan.rows
    pk = unit("replay", "cwnd")
    p = c.panel(f"algo:{label}")
    t = c.replay_t(label, df)
    fr_ = c.replay_frame(label, df)
    tb = c.replay_table(label, df)
    color = c.colors.get(label, "#444")
    palette = [col for col in ALGO_COLORS if col != color]
    a = _AlgoRow(c, p, label, df, t, fr_, tb, color, palette, float(c.mss), pk)
    flag_runs = _replay_flag_runs(c, label, t, df, flags, infos, types)
    shades: dict[str, list[_FlagShade]] = {}  # (_flag_bands: found once for the panel's rows)
    n_color = 0
    out_rows: list[Row] = []
    for r, (kind, names, _title, row_unit) in enumerate(rows, start=1):
        if kind == "window":
            traces = _window_row(a, names)
        else:
            traces, n_color = _signal_row(a, names, sunit, n_color)
        y0, y1 = _extent(traces, p.ext)
        bands = c.episode_bands(y0, y1, legend=r == 1)
        if kind != "other":  # phases/modes shade the window and threshold rows (episodes shade all)
            for k_, s in enumerate(flags):
                lo, hi = (y0, y1) if k_ == 0 else (y1 - 0.08 * k_ * (y1 - y0), y1 - 0.08 * (k_ - 1) * (y1 - y0))
                bands += _flag_bands(c, flag_runs[s], s, lo, hi, legend=r == 1, strong=k_ > 0, memo=shades)
        out_rows.append(
            Row(
                [*bands, *(tr for tr in traces if tr is not None)],
                ALGO_ROW_PX[0] if r == 1 else ALGO_ROW_PX[1],
                title=_title,
                ytitle=_esc(row_unit) if row_unit else "(no unit)",
            )
        )
    flag_note = f" — shaded: {', '.join(_esc(f) for f in flags)}" if flags else ""
    kt = c.fr.truth
    if kt is not None and kt.algo == label:
        flag_note += " — magenta: what the sending kernel itself had (its snd_cwnd and the program's variables)"
    c.done_with(label)
    return Block(f"algo:{label}", f"{_esc(label)}: the algorithm's own signals{flag_note}", out_rows)


@dataclass(frozen=True)
class _AlgoRow:
    """What every row of an algorithm's panel draws with (:func:`_algo_panel`): the context, the
    panel, the replay (``df``, its label, times ``t``, frames ``fr_``, table ``tb``), its colour
    and the palette of its other series, the MSS (bytes) and the window unit ``pk``."""

    c: _Ctx
    p: Any
    label: str
    df: pl.DataFrame
    t: np.ndarray
    fr_: Any
    tb: Any
    color: str
    palette: list[str]
    mss: float
    pk: str


def _window_row(a: _AlgoRow, names: list[str]) -> list[Trace | None]:
    """The window row: cwnd (or Compound's stacked parts), ssthresh, the row's other window
    signals, the kernel's own window and signals where known, and the actual flight."""
    c, p, label, df, t, fr_, tb, color, palette, mss, pk = (
        a.c,
        a.p,
        a.label,
        a.df,
        a.t,
        a.fr_,
        a.tb,
        a.color,
        a.palette,
        a.mss,
        a.pk,
    )
    traces: list[Trace | None] = []
    acks = c.fr.events.acks
    cwnd = c.cwnd(label, df)
    cwnd_src = c.col(tb, c.sid(label, "cwnd"), cwnd)
    stacked = _stack_parts(df, names)
    drawn: set[str] = set()
    if stacked is not None:
        # Compound TCP: the loss-based window and dwnd stacked, the total (win, when the
        # replay has it) and cwnd on top, all drawn at the same ACKs so that each is exact at
        # every point and the stack adds up there (decimate.select_shared; report.js zooms
        # them as one group)
        loss_name, loss = stacked
        dwnd = c.values(label, df, "dwnd")
        parts: list[tuple[np.ndarray, str, dict[str, Any]]] = [
            (
                loss,
                f"{_esc(loss_name)} (loss-based part)",
                dict(stackgroup="win", line={"color": color, "width": 0.8}, hovertemplate=f"%{{y:.1f}} {pk}"),
            ),
            (
                dwnd,
                "dwnd (delay-based part, stacked on it)",
                dict(stackgroup="win", line={"color": "#ff9896", "width": 0.8}, hovertemplate=f"%{{y:.1f}} {pk}"),
            ),
            (
                cwnd,
                f"{_esc(label)} cwnd",
                dict(line=dict(color=color, width=2.2), hovertemplate=f"%{{y:.1f}} {pk}"),
            ),
        ]
        srcs = [c.col(tb, c.sid(label, loss_name), loss), c.col(tb, c.sid(label, "dwnd"), dwnd), cwnd_src]
        drawn = {"dwnd", loss_name}
        if "win" in df.columns and loss_name != "win − dwnd":
            drawn.add("win")
            win = c.values(label, df, "win")
            parts.append(
                (
                    win,
                    "win",
                    dict(line=dict(color="#444", width=1.2, dash="dash"), hovertemplate=f"%{{y:.1f}} {pk}"),
                )
            )
            srcs.append(c.col(tb, c.sid(label, "win"), win))
        traces += p.lines_shared(t, parts, frame=fr_, mss=mss, group=f"stack:{label}", src=srcs)
    # the row's series on the replay's time axis, decimated together (_Panel.lines)
    row: list[tuple[np.ndarray, str, dict[str, Any], dict[str, Any] | None]] = []
    if stacked is None:
        row.append(
            (
                cwnd,
                f"{_esc(label)} cwnd",
                {"line": {"color": color, "width": 2.2}, "hovertemplate": f"%{{y:.1f}} {pk}"},
                cwnd_src,
            )
        )
    ss = _f(df.get_column("ssthresh"))  # (drawn once: not kept; a copy when polars lent its own)
    ss = ss if ss.flags.writeable else ss.copy()
    top = float(cwnd.max()) if df.height else 1.0  # (np.nanmax's answer without NaN, and faster)
    top = float(np.nanmax(cwnd)) if math.isnan(top) else top
    cap = 10 * max(top, 1.0)
    ss[ss > cap] = np.nan  # "infinite" ssthresh before the first loss
    row.append(
        (
            ss,
            "ssthresh",
            {
                "line": {"color": color, "width": 1, "dash": "dot"},
                "visible": "legendonly",
                "hovertemplate": f"%{{y:.1f}} {pk}",
            },
            c.col(tb, c.sid(label, "ssthresh"), ss),
        )
    )
    for i, s in enumerate(n for n in names if n not in drawn):
        y = c.values(label, df, s)
        row.append(
            (
                y,
                _esc(s),
                {
                    "line": {"color": palette[i % len(palette)], "width": 1.4, "dash": "dash"},
                    "hovertemplate": f"%{{y:.2f}} {pk}",
                },
                c.col(tb, c.sid(label, s), y),
            )
        )
    traces += p.lines(t, row, frame=fr_, mss=mss)
    traces.append(_kernel_window(c, p) if c.fr.truth is not None and c.fr.truth.algo == label else None)
    stack_on = stacked[0] if stacked is not None else None
    traces += _kernel_signals(c, p, label, names, {s: pk for s in names}, stack_on)
    if acks.height:
        ta = c.acks_table()
        traces.append(
            p.line(
                c.ack_t,
                c.flight,
                "actual: bytes in flight",
                line=dict(color=ACTUAL_COLOR, width=1),
                opacity=0.55,
                hovertemplate=f"%{{y:.1f}} {pk}",
                frame=c.ack_frame,
                mss=mss,
                src=c.col_bytes(ta, "outstanding", c.outstanding),
                once=True,
            )
        )
    return traces


def _signal_row(a: _AlgoRow, names: list[str], sunit: dict[str, str], n_color: int) -> tuple[list[Trace | None], int]:
    """A row of the algorithm's other signals (thresholds dashed), in their shown units, with the
    kernel's own where known; returns the traces and the colours used so far."""
    c, p, label, df, t, fr_, tb, palette = a.c, a.p, a.label, a.df, a.t, a.fr_, a.tb, a.palette
    traces: list[Trace | None] = []
    n_thr = 0
    series: list[tuple[np.ndarray, str, dict[str, Any], dict[str, Any] | None]] = []
    for s in names:
        thr = is_threshold_signal(s)
        style = (
            dict(color="#333", width=1.3, dash=_THRESHOLD_DASH[n_thr % len(_THRESHOLD_DASH)])
            if thr
            else dict(color=palette[(n_color + 3) % len(palette)], width=1.5)
        )
        n_thr += thr
        n_color += not thr
        u, k = shown(sunit[s]) if sunit[s] else ("", 1.0)  # delays and durations in ms
        y = c.values(label, df, s)
        y = y * k if k != 1.0 else y  # (the same values: no copy)
        series.append(
            (
                y,
                _esc(s) + (" (threshold)" if thr else ""),
                {"line": style, "hovertemplate": "%{y:.4g}" + (f" {_esc(u)}" if u else "")},
                c.col(tb, c.sid(label, s), y),
            )
        )
    traces += p.lines(t, series, frame=fr_)
    traces += _kernel_signals(c, p, label, names, sunit)
    return traces, n_color


def _stack_parts(df: pl.DataFrame, names: list[str]) -> tuple[str, np.ndarray] | None:
    """Compound TCP: (name, loss-based window) to stack ``dwnd`` on, when the replay has a ``dwnd``."""
    if "dwnd" not in df.columns:
        return None
    for cand in names:
        if cand != "dwnd" and norm(cand) in {"lwnd", "cwndloss", "losscwnd", "cwndreno", "losswnd"}:
            return cand, _f(df[cand])
    if "win" in df.columns:
        return "win − dwnd", _f(df["win"]) - _f(df["dwnd"])
    return "cwnd − dwnd", _f(df["cwnd"]) - _f(df["dwnd"])


@dataclass
class _FlagShade:
    """What :func:`_flag_bands` draws of one value of a flag signal, whatever the row's height:
    its ranges, their shapes (:func:`_band_shapes`), its name, legend group and colour."""

    start: np.ndarray
    end: np.ndarray
    shapes: list[tuple[float | None, np.ndarray, int]]
    name: str
    group: str
    color: str


def _flag_shades(c: _Ctx, runs: _FlagRuns, name: str, strong: bool) -> list[_FlagShade]:
    """The shades of a boolean (where True) or categorical signal (one colour per value)."""
    st, en, v = runs.start, runs.end, runs.values
    if runs.boolean:
        s_, e_ = st[v], en[v]
        return [
            _FlagShade(
                s_,
                e_,
                _band_shapes(s_, e_, c.min_gap, c.duration),
                _esc(name),
                f"flag-{_esc(name)}",
                _scale_alpha(_BOOL_COLOR, 3.0 if strong else 1.0),
            )
        ]
    out = []
    cats = [x for x in dict.fromkeys(v.tolist()) if str(x).lower() not in _QUIET]
    known = {CATEGORY_COLORS[str(x).lower()] for x in cats if str(x).lower() in CATEGORY_COLORS}
    free = iter([col for col in _CAT_PALETTE if col not in known] or list(_CAT_PALETTE))
    for cat in sorted(cats, key=str):
        m = v == cat
        color = CATEGORY_COLORS.get(str(cat).lower()) or next(free, _CAT_PALETTE[0])
        color = _scale_alpha(color, 3.0) if strong else color
        s_, e_ = st[m], en[m]
        out.append(
            _FlagShade(
                s_,
                e_,
                _band_shapes(s_, e_, c.min_gap, c.duration),
                f"{_esc(name)} = {_esc(cat)}",
                f"flag-{_esc(name)}-{_esc(cat)}",
                color,
            )
        )
    return out


def _flag_bands(
    c: _Ctx,
    runs: _FlagRuns,
    name: str,
    y0: float,
    y1: float,
    *,
    legend: bool,
    strong: bool = False,
    memo: dict[str, list[_FlagShade]] | None = None,
) -> list[Trace]:
    """Shading for a boolean (where True) or categorical signal (one colour per value). ``memo``:
    the shades of the panel's flags found so far (its window and queue rows shade the same ones:
    their ranges, shapes and store tables found once)."""
    shades = memo.get(name) if memo is not None else None
    if shades is None:
        shades = _flag_shades(c, runs, name, strong)
        if memo is not None:
            memo[name] = shades
    out = []
    for sh in shades:
        out += _band(
            sh.start,
            sh.end,
            y0,
            y1,
            sh.name,
            sh.color,
            min_gap=c.min_gap,
            legendgroup=sh.group,
            showlegend=legend,
            t_end=c.duration,
            src=c.band_table(sh.start, sh.end, again=memo is not None),
            shapes=sh.shapes,
        )
    return out


# ---------------------------------------------------------------------------------------------
# public


def build_flow(
    fr: FlowResult,
    *,
    max_points: int = DEFAULT_MAX_POINTS,
    colors: dict[str, str] | None = None,
    full_resolution: bool = False,
    store_pool: Executor | None = None,
) -> FlowFigures:
    """Every panel (block) of one flow plus how each series was reduced.

    With ``full_resolution`` the flow's events are also collected into a :class:`StoreBuilder`
    (``FlowFigures.store``): every drawn series at full resolution and the columns of the packet
    list, and each trace carries ``_src``, where report.js finds its series in the store;
    ``store_pool`` (one worker thread) encodes the store's columns while the figures are built."""
    c = _context(fr, max_points, colors, StoreBuilder(store_pool) if full_resolution else None)
    blocks = {b.key: b for b in (_window_panel(c), _rtt_panel(c), _goodput_panel(c), _timeseq_panel(c))}
    rank = _ranks(c)  # signal panels of the best-fitting algorithms first
    order = sorted(fr.replays, key=lambda lab: (rank.get(lab, 10**6), list(fr.replays).index(lab)))
    _enum_physicals(c, order)
    for label in order:
        b = _algo_panel(c, label, fr.replays[label])
        if b is not None:
            blocks[b.key] = b
    if c.store is not None:
        _packet_list_columns(c, order)
        c.store.seal()
    return FlowFigures(blocks=blocks, notes=c.notes, duration=c.duration, store=c.store)


# What the packet list shows about each event, as small codes (labels: the schema's enumerations).
ACK_INFO_BITS = {
    "ece": 5,
    "spurious_undo": 6,
    "dsack": 7,
    "round_end": 8,
    "sack": 9,
}  # bits 0-1 state, 2-4 cong_event + 1
SEG_INFO_BITS = {"syn_fin": 4, "rexmit": 5}  # bits 0-1 probe, 2-3 IP ECN field


def _codes(s: pl.Series) -> np.ndarray:
    """An Enum column's index (null → −1), as int64 (:func:`_enum_codes`)."""
    dt = s.dtype
    assert isinstance(dt, pl.Enum)
    cats = dt.categories.to_list()
    codes = _enum_codes(s, cats)
    if s.null_count():
        codes[codes == len(cats)] = -1
    return codes


def _int0(s: pl.Series) -> np.ndarray:
    """A boolean or small integer column as int64, null → 0 (in numpy: a polars ``fill_null``
    releases the interpreter lock, see :meth:`_Ctx.values`)."""
    if not s.null_count():
        return s.to_numpy().astype(np.int64)
    v = _f(s)
    return np.where(np.isnan(v), 0.0, v).astype(np.int64)


def _kind_codes(s: pl.Series, kinds: tuple[str, ...]) -> np.ndarray:
    """Each value's place in ``kinds`` (−1: null or none of them): an Enum of exactly these
    categories (the schema's) gives its codes, without a string per row."""
    dt = s.dtype
    if isinstance(dt, pl.Enum) and tuple(dt.categories.to_list()) == kinds:
        return _codes(s)
    v = s.cast(pl.String).to_numpy()
    out = np.full(len(v), -1, dtype=np.int64)
    for i, k in enumerate(kinds):
        out[v == k] = i
    return out


def _packet_list_columns(c: _Ctx, algos: list[str]) -> None:
    """The columns the packet list under the figures reads (report.js), and what they mean."""
    st = c.store
    assert st is not None
    ev = c.fr.events
    acks, segs = ev.acks, ev.segments
    meta_: dict[str, Any] = {
        "mss": c.mss,
        "enums": {
            "state": list(schema.CONG_STATES),
            "cong": list(schema.EPISODE_KINDS),
            "kind": list(schema.SEGMENT_KINDS),
            "probe": list(schema.PROBE_KINDS),
        },
        "ackBits": ACK_INFO_BITS,
        "segBits": SEG_INFO_BITS,
        "algos": [],
    }
    if acks.height:
        ta = c.acks_table()
        assert ta is not None

        def flag(name: str) -> np.ndarray:
            return _int0(acks[name])

        info = (
            np.maximum(_codes(acks["state"]), 0)
            | ((_codes(acks["cong_event"]) + 1) << 2)
            | (flag("ece") << ACK_INFO_BITS["ece"])
            | (flag("spurious_undo") << ACK_INFO_BITS["spurious_undo"])
            | ((_f(acks["dsack_bytes"]) > 0).astype(np.int64) << ACK_INFO_BITS["dsack"])  # (null: NaN, not > 0)
            | (flag("round_end") << ACK_INFO_BITS["round_end"])
            | ((_f(acks["sacked_bytes"]) > 0).astype(np.int64) << ACK_INFO_BITS["sack"])
        )
        st.column(ta, "info", info.astype(np.float64), decimals=0, delta=False)
        st.column(ta, "dupack", _f(acks["dupack"]), decimals=0, delta=False)
        st.column(ta, "ack", _f(acks["ack"]), decimals=0)
        st.column(ta, "rwnd", _f(acks["rwnd_bytes"]), decimals=0)
        st.column(ta, "outstanding", c.outstanding, decimals=0)
        if not st.has(ta, "rtt"):
            st.column(ta, "rtt", _f(acks["rtt_s"]) * shown(unit("acks", "rtt_s"))[1], decimals=3)
        for label in algos:
            df = c.fr.replays[label]
            tb = c.replay_table(label, df)
            if tb and df.height:
                name = c.sid(label, "cwnd")
                st.column(tb, name, c.cwnd(label, df))
                meta_["algos"].append([_esc(label), tb, name])  # (escaped: the page decodes names to text)
    if segs.height:
        ts_ = c.seg_table()
        assert ts_ is not None
        synfin = (_f(segs["end_seq"]) - _f(segs["seq"]) - _f(segs["len"])) > 0
        info = (
            np.maximum(_codes(segs["probe"]), 0)
            | (_int0(segs["ip_ecn"]) << 2)
            | (synfin.astype(np.int64) << SEG_INFO_BITS["syn_fin"])
            | (_int0(segs["rexmit"]) << SEG_INFO_BITS["rexmit"])
        )
        st.column(ts_, "info", info.astype(np.float64), decimals=0, delta=False)
    c.sack_table()
    st.meta.update(meta_)


# gaps between rows (px): x tick labels of the row above, a row title, a block title
_TICKS_PX, _ROW_TITLE_PX, _BLOCK_TITLE_PX, _BOTTOM_PX = 24, 18, 30, 46


def stack(blocks: list[Block], x_range: tuple[float, float] | None = None) -> dict[str, Any]:
    """Stack blocks into one figure dict (``data``, ``layout``): one row per subplot, all rows on
    one shared time axis (x axes matched: zoom one, all follow), a legend per block next to it.

    Rows are cheaper to draw as subplots of one figure than as separate figures (one layout, one
    pass of plotly.js). A block's first row grows until the block's legend fits beside it.
    """
    data: list[Trace] = []
    layout: dict[str, Any] = {"annotations": [], "showlegend": True}
    index: list[dict[str, Any]] = []  # which block is which legend and which axes (for tests and tools)
    y = 0  # px from the top of the plot area
    spans: list[tuple[int, int]] = []  # (top px, bottom px) per row
    n = 0
    for bi, blk in enumerate(blocks):
        lg = "legend" if bi == 0 else f"legend{bi + 1}"
        entries = sum(1 for r in blk.rows for tr in r.traces if tr.get("showlegend", True) is not False)
        y += (_TICKS_PX + 8 if bi else 0) + _BLOCK_TITLE_PX + (_ROW_TITLE_PX if blk.rows[0].title else 0)
        block_top = y
        index.append({"key": blk.key, "title": blk.title, "legend": lg, "yaxes": []})
        block_px = sum(r.px for r in blk.rows) + sum(_TICKS_PX + _ROW_TITLE_PX for _ in blk.rows[1:])
        need = entries * LEGEND_ENTRY_PX + 8 - block_px
        for ri, row in enumerate(blk.rows):
            n += 1
            if ri:
                y += _TICKS_PX + _ROW_TITLE_PX
            px = row.px + (max(need, 0) if ri == 0 else 0)
            spans.append((y, y + px))
            xa, ya = ("x", "y") if n == 1 else (f"x{n}", f"y{n}")
            index[-1]["yaxes"].append(ya)
            for tr in row.traces:
                tr["xaxis"], tr["yaxis"], tr["legend"] = xa, ya, lg
                data.append(tr)
            layout["xaxis" if n == 1 else f"xaxis{n}"] = {"anchor": ya, **({} if n == 1 else {"matches": "x"})}
            layout["yaxis" if n == 1 else f"yaxis{n}"] = {
                "anchor": xa,
                "title": {"text": row.ytitle} if row.ytitle else None,
            }
            if row.title:
                layout["annotations"].append({"text": row.title, "_top": y, "yshift": 2, "font": {"size": 11}})
            if ri == 0:
                layout["annotations"].append(
                    {
                        "text": blk.title,
                        "_top": y,
                        "yshift": 4 + (_ROW_TITLE_PX if row.title else 0),
                        "font": {"size": 14},
                    }
                )
            y += px
        layout[lg] = {
            "x": 1.01,
            "xanchor": "left",
            "yanchor": "top",
            "_top": block_top,
            "orientation": "v",
            "font": {"size": 11},
            "tracegroupgap": 4,
        }
    plot_px = max(y, 1)
    top_margin = 8
    layout["height"] = plot_px + top_margin + _BOTTOM_PX
    layout["margin"] = {"l": 70, "r": 20, "t": top_margin, "b": _BOTTOM_PX}
    frac = lambda px: round(1.0 - px / plot_px, 6)  # noqa: E731 - px from the top → paper fraction
    for i, (top, bottom) in enumerate(spans, start=1):
        ax = layout["yaxis" if i == 1 else f"yaxis{i}"]
        ax["domain"] = [max(frac(bottom), 0.0), min(frac(top), 1.0)]
        if ax.get("title") is None:
            ax.pop("title", None)
    last = "xaxis" if len(spans) == 1 else f"xaxis{len(spans)}"
    if spans:
        layout[last]["title"] = {"text": TIME_TITLE}
        if x_range is not None:  # the same initial time range in every figure of the flow
            layout["xaxis"]["range"] = [float(x_range[0]), float(x_range[1])]
    for k, v in list(layout.items()):
        if k.startswith("legend") and isinstance(v, dict):
            v["y"] = frac(v.pop("_top"))
    for ann in layout["annotations"]:
        ann.update(
            xref="paper",
            yref="paper",
            x=0.0,
            xanchor="left",
            y=frac(ann.pop("_top")),
            yanchor="bottom",
            showarrow=False,
            align="left",
        )
    return {"data": data, "layout": layout, "blocks": index}


def flow_figures(flow_result: FlowResult, *, max_points: int = DEFAULT_MAX_POINTS) -> dict[str, Any]:
    """Plotly figures for one flow, keyed ``window``, ``rtt``, ``goodput``, ``timeseq``, ``algo:<label>``.

    For notebooks: ``flow_figures(res)["window"].show()``. Series longer than ``max_points`` are
    decimated (first/min/max/last per time column), never truncated. (The HTML report stacks the
    same panels into two figures per flow: the four main panels, and every algorithm's signals.)
    """
    require_extra("notebook", ("plotly",), "flow_figures")  # (plotly's Python package: only for notebooks)
    import plotly.graph_objects as go  # (the report itself never builds plotly objects)

    ff = build_flow(flow_result, max_points=max_points)
    out = {}
    for key, blk in ff.blocks.items():
        fig = stack([blk], (0.0, ff.duration) if ff.duration else None)
        fig.pop("blocks")
        for tr in fig["data"]:
            b = tr.pop("_bytes", None)
            if b:  # (the page builds these pairs in the browser, see _hover)
                tr["customdata"] = np.column_stack((tr["customdata"], np.rint(np.asarray(tr["y"]) * b)))
        fig["layout"]["template"] = TEMPLATE
        out[key] = go.Figure(fig)
    return out
