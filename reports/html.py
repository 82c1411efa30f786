"""The self-contained, offline HTML report for one :class:`~hscc_trace.model.Analysis`.

One file, no network: plotly.js is inlined once (gzip-compressed, unpacked by the browser's
``DecompressionStream``), each figure is inlined as one compressed JSON payload, and a
Content-Security-Policy that allows only the page's own two scripts (by hash) and forbids every
request makes "no request leaves the page" a property of the file, not a promise.

Everything that comes from a capture (file names, addresses, warning text …) is HTML-escaped:
a capture is untrusted input.
"""

from __future__ import annotations

import base64
import datetime as _dt
import functools
import gzip
import hashlib
import html
import json
import math
import re
import secrets
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, cast

import numpy as np
import polars as pl

from hscc_trace import schema
from hscc_trace.analysis.stream import limit_shares, report_rank, summarize
from hscc_trace.errors import InputError, require_extra
from hscc_trace.model import Analysis, CaptureResult, FlowResult, FlowSummary
from hscc_trace.perf.jit import njit
from hscc_trace.perf.memory import trim

from . import figures as F
from . import meta
from .deflate import gzip_bytes
from .store import absmax_each

DEFAULT_MAX_POINTS = F.DEFAULT_MAX_POINTS
DEFAULT_MAX_FLOWS = 25  # flows that get a full section (largest first); all are in the overview
# points over all figures; per-series points shrink to fit. 1.7 M keeps the page without its
# full-resolution stores under 10 MB for 25 flows of fifteen algorithms (653 points a series, 163
# time columns): 9.52 MB on replica-5M, where 2 M (769 a series) gave 10.56 MB (docs/report.md)
DEFAULT_BUDGET_POINTS = 1_700_000
MIN_POINTS = 400  # never fewer points per series than this (100 time columns)
# Full resolution: the events of the drawn flows are held in the page (reports/store.py) up to this
# many events (ACKs + data segments) in all; flows beyond it (largest first) keep the decimated view only
DEFAULT_FULL_RESOLUTION_EVENTS = 10_000_000
# Zoomed in, a series with at most this many events in the visible window is drawn event by event
# (report.js); with more, it is re-decimated (first/min/max/last per column) from the full data
DEFAULT_DETAIL_POINTS = 5000
PACKET_LIST_ROWS = 500  # the packet list appears once the visible window holds at most this many events
# The size budget of a report written with the defaults (docs/report.md, checked by
# benchmarks/report_render.py): the page, plotly.js and the decimated first views (bounded by
# DEFAULT_BUDGET_POINTS, whatever the capture's size), plus the full-resolution store per million
# events (ACKs + data segments of the flows that hold them)
BUDGET_FIXED_BYTES = 12_000_000
BUDGET_BYTES_PER_MILLION_EVENTS = 12_000_000


def size_budget(full_resolution_events: int) -> int:
    """Bytes a report with the default settings may take, holding this many events at full resolution."""
    return BUDGET_FIXED_BYTES + BUDGET_BYTES_PER_MILLION_EVENTS * full_resolution_events // 1_000_000


CAVEAT = (
    "Open loop: the ACK stream in this capture was shaped by the actual sender. A replay says what "
    "each algorithm <em>would have set</em> as its congestion window given those same ACKs, RTT samples "
    "and losses — not what the network would then have done had that algorithm been sending. Windows "
    "are in MSS-sized packets."
)

_PLOTLY_CONFIG = {
    "displaylogo": False,
    "responsive": True,
    "typesetMath": False,
    "modeBarButtonsToRemove": ["select2d", "lasso2d"],
    "toImageButtonOptions": {"format": "png", "scale": 2},
}


@dataclass(frozen=True)
class ReportInfo:
    """What :func:`write_report` wrote."""

    path: Path
    size: int  # bytes
    flows: int  # flow sections drawn
    flows_omitted: int  # replayed flows beyond max_flows (listed in the overview only)
    figures: int
    traces: int  # data series drawn (bands excluded)
    decimated_traces: int  # series reduced by min/max decimation
    points_in: int  # samples before decimation
    points_out: int  # samples drawn
    max_points: int  # per-series point cap actually used
    warnings: list[str] = field(default_factory=list)
    events: int = 0  # ACKs + data segments of the drawn flows
    full_resolution_flows: int = 0  # drawn flows whose every event is in the page (zoom to the packet)
    full_resolution_events: int = 0  # their events
    store_bytes: int = 0  # bytes of the page that hold them (gzip + base64)

    @property
    def decimated(self) -> bool:
        return self.decimated_traces > 0


# ---------------------------------------------------------------------------------------------
# formatting

e = html.escape


def _num(v: Any, fmt: str = "{:.3g}", none: str = "–") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return none
    return fmt.format(v)


def _bps(v: Any) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    for unit, div in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if abs(v) >= div:
            return f"{v / div:.3g} {unit}"
    return f"{v:.3g} bit/s"


def _ms(v: Any) -> str:
    return "–" if v is None else f"{v * 1e3:.3g} ms"


def _dur(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v:.3f} s" if v < 100 else f"{v:.0f} s"


def _when(ns: int | None) -> str:
    if ns is None:
        return "–"
    return _dt.datetime.fromtimestamp(ns / 1e9, tz=_dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def _count(n: int) -> str:
    return f"{n:,}"


def _short(n: int) -> str:
    for unit, div in (("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.3g} {unit}"
    return str(n)


def _endpoint(addr: Any, port: Any, v6: bool) -> str:
    a = str(addr)
    return f"[{a}]:{port}" if v6 or ":" in a else f"{a}:{port}"


def _table(
    head: list[str], rows: Iterable[list[str]], *, num: AbstractSet[int] = frozenset(), cls: list[str] | None = None
) -> str:
    """An HTML table; cells are already-escaped HTML."""
    out = ['<div class="scroll"><table><thead><tr>']
    out += [f"<th{' class=num' if i in num else ''}>{h}</th>" for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for r, row in enumerate(rows):
        c = f' class="{e(cls[r])}"' if cls and cls[r] else ""
        out.append(
            f"<tr{c}>" + "".join(f"<td{' class=num' if i in num else ''}>{v}</td>" for i, v in enumerate(row)) + "</tr>"
        )
    out.append("</tbody></table></div>")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# payload encoding


def _decimals_of(m: float, sig: int = 5) -> int:
    """Decimals (0–9) that keep ``sig`` significant digits of the largest finite magnitude ``m``
    (≤ 0: no finite value, or only zeros)."""
    if m <= 0:
        return 0
    return int(min(max(sig - 1 - math.floor(math.log10(m)), 0), 9))


def _array_json(arr: np.ndarray, decimals: int, width: int = 0) -> str:
    """A numeric array as JSON text: rounded to ``decimals`` (0–9), ints when no decimals are
    needed, NaN/inf as null (a line gap). Text (not typed arrays) because it gzips far better and
    the loader reads it. ``width`` > 0: rows of that many values (``[[a,b],[c,d]]``, customdata).

    Written by one compiled pass (:func:`_text_kernel`) from the integers ``rint(v · 10^d)``: the
    decimal ``k / 10^d`` it writes is the float64 that ``np.round(v, d)`` gives (both are the
    correctly rounded quotient), so the values are those of ``json.dumps`` of the rounded list,
    at a twentieth of its cost. Values whose scaled integer reaches 2^53 (a hostile capture's
    1e20: an int64 cast would not even hold it) go through ``json.dumps`` as rounded floats."""
    return _arrays_json([(arr, decimals, width)])[0]


def _arrays_json(arrays: list[tuple[np.ndarray, int | None, int]]) -> list[str]:
    """Several arrays ``(values, decimals, width)`` as :func:`_array_json` writes each (decimals
    None: :func:`_decimals_of` of the array's largest finite magnitude), written by one call of the compiled pass for all of them (a figure's
    hundreds of short series: the per-array numpy steps and calls cost more than the text)."""
    if not arrays:
        return []
    flat = [np.asarray(a, dtype=np.float64).reshape(-1) for a, _, _ in arrays]
    bounds = np.zeros(len(flat) + 1, dtype=np.int64)
    np.cumsum([len(a) for a in flat], out=bounds[1:])
    v = np.concatenate(flat) if len(flat) > 1 else np.ascontiguousarray(flat[0])
    decimals = np.array([0 if d is None else d for _, d, _ in arrays], dtype=np.int64)
    auto = [j for j, (_, d, _) in enumerate(arrays) if d is None]
    if auto:
        top = absmax_each(v, bounds)
        for j in auto:
            decimals[j] = _decimals_of(float(top[j]))
    widths = np.array([w for _, _, w in arrays], dtype=np.int64)
    n = np.diff(bounds)
    out = np.empty(int((22 * n + 2 * (n // np.maximum(widths, 1)) + 2).sum()), dtype=np.uint8)
    ends = np.empty(len(flat), dtype=np.int64)
    scales = np.array([10.0 ** int(d) for d in decimals])
    _text_kernel(v, bounds, scales, decimals, widths, out, ends)
    texts = []
    at = 0
    for j, end in enumerate(ends.tolist()):
        if end < 0:  # (numbers only: safe)
            a, d = np.asarray(arrays[j][0], dtype=np.float64), int(decimals[j])  # (2-D: rows of lists)
            texts.append(json.dumps(np.round(np.where(np.isfinite(a), a, np.nan), d).tolist()).replace("NaN", "null"))
            continue
        texts.append(out[at:end].tobytes().decode("ascii"))
        at = end
    return texts


@njit(work=lambda a: len(a[0]), cost=(1.65, 1.82e-05), cache=True, nogil=True)
def _text_kernel(
    v: np.ndarray,
    bounds: np.ndarray,
    scales: np.ndarray,
    decimals: np.ndarray,
    widths: np.ndarray,
    out: np.ndarray,
    ends: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """Array ``j``, ``v[bounds[j]:bounds[j+1]]``, as JSON numbers into ``out`` (ASCII), one array
    after the other, ``ends[j]`` the end of its text: each finite value the integer
    ``q = rint(v · scales[j])`` written as ``q / 10^decimals[j]``, the shortest decimal (no
    trailing zeros after the point, no point for a whole number), ``null`` for the others; rows of
    ``widths[j]`` values in brackets when > 0. An array with a scaled value of 2^53 or more is not
    written (``ends[j]`` −1)."""
    digits = np.empty(20, dtype=np.uint8)
    k = 0
    for j in range(len(bounds) - 1):
        a = bounds[j]
        b = bounds[j + 1]
        sc = scales[j]
        d = decimals[j]
        width = widths[j]
        big = False
        for i in range(a, b):
            x = v[i]
            if np.isfinite(x) and abs(x * sc) >= 9007199254740992.0:  # 2**53
                big = True
                break
        if big:
            ends[j] = -1
            continue
        p10 = np.int64(1)
        for _ in range(d):
            p10 *= 10
        out[k] = 91  # [
        k += 1
        n = b - a
        for i in range(n):
            if i > 0:
                if width > 0 and i % width == 0:
                    out[k] = 93  # ]
                    out[k + 1] = 44  # ,
                    out[k + 2] = 91  # [
                    k += 3
                else:
                    out[k] = 44
                    k += 1
            elif width > 0:
                out[k] = 91
                k += 1
            x = v[a + i]
            if not np.isfinite(x):
                out[k] = 110  # null
                out[k + 1] = 117
                out[k + 2] = 108
                out[k + 3] = 108
                k += 4
                continue
            q = np.int64(np.rint(x * sc))
            if q < 0:
                out[k] = 45  # -
                k += 1
                q = -q
            ip = q // p10
            fp = q - ip * p10
            m = 0
            while True:
                digits[m] = 48 + ip % 10
                m += 1
                ip //= 10
                if ip == 0:
                    break
            while m > 0:
                m -= 1
                out[k] = digits[m]
                k += 1
            if fp > 0:
                out[k] = 46  # .
                k += 1
                e = d
                while fp % 10 == 0:  # trailing zeros dropped
                    fp //= 10
                    e -= 1
                for jj in range(e - 1, -1, -1):
                    digits[jj] = 48 + fp % 10
                    fp //= 10
                for jj in range(e):
                    out[k] = digits[jj]
                    k += 1
        if width > 0 and n > 0:
            out[k] = 93
            k += 1
        out[k] = 93  # ]
        k += 1
        ends[j] = k


def _array_list(arr: np.ndarray, decimals: int) -> list[Any]:
    """Rounded list (ints when no decimals are needed, NaN as None): what the payload decodes to."""
    return json.loads(_array_json(arr, decimals))


def figure_json(fig: dict[str, Any]) -> str:
    """A figure dict (from :func:`figures.stack`) as compact JSON; x and y numpy arrays are written
    straight to text (times to 1 µs, other values to 5 significant digits)."""
    nonce = secrets.token_hex(8)  # array placeholders no label text can imitate
    arrays: list[str | tuple[np.ndarray, int | None, int]] = []
    data = []
    for tr in fig["data"]:
        tr = dict(tr)
        for key in ("x", "y", "customdata"):
            v = tr.get(key)
            if isinstance(v, np.ndarray):
                if v.ndim == 2:  # customdata [frame, bytes]: integers
                    arrays.append((np.nan_to_num(v), 0, v.shape[1]) if v.size else json.dumps(v.tolist()))
                else:  # (decimals None: 5 significant digits)
                    arrays.append((v, 6 if key == "x" else 0 if key == "customdata" else None, 0))
                tr[key] = f"\0{nonce}:{len(arrays) - 1}\0"
        data.append(tr)
    todo = [j for j, a in enumerate(arrays) if not isinstance(a, str)]
    texts = [a if isinstance(a, str) else "" for a in arrays]
    for j, written in zip(todo, _arrays_json([cast(tuple, arrays[j]) for j in todo])):
        texts[j] = written
    text = json.dumps({**fig, "data": data}, separators=(",", ":"), allow_nan=False)
    return re.sub(r'"\\u0000' + nonce + r':(\d+)\\u0000"', lambda m: texts[int(m.group(1))], text)


def _gz(text: str) -> bytes:
    """A figure's payload compressed (zlib-ng's level 7 with Z_FILTERED, or zlib's level 4 without
    the wheel: :mod:`.deflate`)."""
    return gzip_bytes(text.encode("utf-8"), "figure")


def _gz64(text: str, level: int) -> str:
    # plotly.js, once per process: zlib's level 6 (0.40 MB, 0.05 s); zlib-ng's level 6 is 1.5 %
    # larger, its level 9 as large for as much CPU, Z_FILTERED 6 % larger (JavaScript, not numbers)
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=level, mtime=0)).decode("ascii")


def _json_script(obj: Any) -> str:
    """JSON safe inside a <script> element (no '</script>' or '<!--' can form)."""
    return (
        json.dumps(obj, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    )


_PLOTLY_CACHE: dict[str, tuple[str, str, str]] = {}
BASIC_TRACE_TYPES = frozenset({"scatter", "bar", "pie"})  # what plotly.js' "basic" bundle draws


def _plotly_js(basic: bool) -> tuple[str, str, str]:
    """(gzip+base64 of plotly.js, its CSP sha256 source, version), computed once per process.

    The report draws only scatter traces, so it inlines plotly.js' basic bundle (1.2 MB instead
    of 4.8 MB: it parses four times faster); the full bundle from the plotly package is used when
    a figure needs another trace type.
    """
    key = "basic" if basic else "full"
    if key not in _PLOTLY_CACHE:
        if basic:
            js = _asset("plotly-basic.min.js")
        else:  # the plotly package (the notebook extra) only when a figure needs the full bundle
            require_extra(
                "notebook", ("plotly",), f"a figure with traces other than {', '.join(sorted(BASIC_TRACE_TYPES))}"
            )
            from plotly.offline import get_plotlyjs

            js = get_plotlyjs()
        m = re.search(r"plotly\.js(?: \([a-z -]+\))? v([\d.]+)", js[:3000])
        _PLOTLY_CACHE[key] = (_gz64(js, 6), _csp_hash(js), m.group(1) if m else "?")
    return _PLOTLY_CACHE[key]


def _csp_hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii") + "'"


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# page sections


def _limit_share(fr: FlowResult) -> dict[str, float]:
    return limit_shares(fr.events.rounds)


def _summaries(c: CaptureResult) -> list[FlowSummary]:
    """Every analyzed flow of a capture, as the overview and the header use it: a streamed run's
    summaries (its results then hold only the flows drawn), else made from the results."""
    return c.summaries if c.summaries is not None else [summarize(fr) for fr in c.results]


def _labels(fr: FlowResult) -> list[str]:
    """The flow's replay labels, also when its replays were released or it was drawn as it
    finished (a streamed run)."""
    if fr.drawn is not None:
        return list(fr.drawn.section.labels)
    return list(fr.released.labels) if fr.released is not None and not fr.replays else list(fr.replays)


def _limits_text(share: dict[str, float]) -> str:
    if not share:
        return "–"
    names = {"cwnd": "cwnd", "rwnd": "rwnd", "app": "app"}
    return " / ".join(f"{names.get(k, e(k))} {share.get(k, 0) * 100:.0f}%" for k in ("cwnd", "rwnd", "app"))


def _by_rank(fit: pl.DataFrame, *, nulls_last: bool) -> list[dict[str, Any]]:
    """The fit's rows (dicts) ordered by rank as polars' ``sort("rank")`` orders them (ranks are
    unique; the order of rows without one is kept). In Python: a polars sort releases the
    interpreter lock, and in a streamed run's calling thread each release may cost up to the
    switch interval (5 ms) to take it back."""

    def key(r: dict[str, Any]) -> tuple[int, int]:
        rank = r["rank"]
        return (int(nulls_last), 0) if rank is None else (int(not nulls_last), rank)

    return sorted(fit.to_dicts(), key=key)


def _best(fr: FlowResult) -> dict[str, Any] | None:
    """The rank-1 fit row, if the fit had rounds to work with (else None)."""
    if fr.fit is None or not fr.fit.height:
        return None
    row = _by_rank(fr.fit, nulls_last=True)[0]
    if row.get("mare") is None or not row.get("rounds"):
        return None
    return row


def _header(a: Analysis, n_figures: int, info_note: str, overview: str, summaries: list[list[FlowSummary]]) -> str:
    out = [
        f'<h1>hscc-trace report</h1><p class="muted">hscc-trace {e(a.version)} · created {e(a.created)} · '
        f"{len(a.captures)} capture(s) · {sum(len(s) for s in summaries)} flow(s) replayed · "
        f"{n_figures} figures</p>",
        f'<div class="caveat"><strong>How to read a replay.</strong> {CAVEAT}</div>',
    ]
    # captures
    rows = []
    for c in a.captures:
        m = c.meta
        skipped = ", ".join(f"{e(k)}: {_count(v)}" for k, v in sorted(m.skipped.items())) or "none"
        dec = ", ".join(f"{e(k)}: {_count(v)}" for k, v in sorted(m.decoded_by.items())) or "–"
        rows.append(
            [
                f"<code>{e(m.path)}</code>",
                e(m.format),
                e(", ".join(m.link_types) or "–"),
                _count(m.packets_total),
                _count(m.packets_tcp),
                skipped,
                dec,
                _dur(m.duration_s),
                e(_when(m.first_ns)),
                e(str(m.snaplen) if m.snaplen else "–"),
                f"<code>{e(m.bpf)}</code>" if m.bpf else "–",
                _count(c.flows.height if c.flows is not None else 0),
            ]
        )
    out.append('<h2 id="captures">Captures</h2>')
    out.append(
        _table(
            [
                "file",
                "format",
                "link type",
                "packets",
                "TCP packets",
                "not decoded (by reason)",
                "decoded by",
                "duration",
                "first packet",
                "snaplen",
                "BPF filter",
                "flows",
            ],
            rows,
            num={3, 4, 7, 11},
        )
    )
    # vantage
    vant: dict[str, int] = {}
    for flows in summaries:
        for s in flows:
            vant[s.vantage] = vant.get(s.vantage, 0) + 1
    if vant:
        where = ", ".join(f"{e(k)} ({n} flow{'s' if n != 1 else ''})" for k, n in sorted(vant.items()))
        out.append(
            f"<p><strong>Where the capture was taken</strong> (relative to each flow's data sender): {where}. "
            "At the receiver or mid-path, bytes in flight and RTTs are seen late or partially; RTT samples are "
            "corrected where the flow section says so.</p>"
        )
    out.append(overview)
    from .groups_html import groups_section

    out.append(groups_section(a))  # (the flows that share a bottleneck: docs/groups.md)
    # algorithms and parameters, folded away: the report opens on the groups, flows and verdicts
    labels = list(dict.fromkeys([*a.algorithms, *a.params]))
    out.append(
        '<details id="algorithms" class="params-fold"><summary><strong>Algorithms and parameters</strong> '
        f'<span class="muted">({len(labels)} replayed: {e(", ".join(labels))})</span></summary>'
    )
    out.append(
        '<p class="muted">Every parameter each replay used; <strong>bold</strong> values differ from the '
        "algorithm's documented default (hover a parameter for its meaning and source).</p>"
    )
    colors = F.algo_colors(a.algorithms)
    rows = []
    for algo in labels:
        params = a.params.get(algo, {})
        info = meta.params(algo)
        chips = []
        for k, v in params.items():
            pi = info.get(str(k))
            unit = f" {pi.unit}" if pi and pi.unit and pi.unit not in ("", "-") else ""
            changed = pi is not None and _param(pi.default) != _param(v)
            tip = f"{pi.doc} — default {_param(pi.default)}{unit} ({pi.source})" if pi else ""
            val = f"<strong>{e(_param(v))}</strong>" if changed else e(_param(v))
            chips.append(f'<code title="{e(tip)}">{e(str(k))} = {val}{e(unit)}</code>')
        ptxt = " · ".join(chips) or '<span class="muted">no parameters</span>'
        summ = meta.summary(algo)
        color = colors.get(algo, "#444")
        rows.append(
            [
                f'<span style="color:{color}">■</span> <strong>{e(algo)}</strong>',
                (f'<div class="muted">{e(summ)}</div>' if summ else "") + ptxt,
            ]
        )
    out.append(
        '<div class="params">' + _table(["algorithm", "what it is · every parameter used"], rows) + "</div></details>"
    )
    # warnings
    warns = [e(x) for x in a.errors]
    for c, flows in zip(a.captures, summaries):
        warns += [e(str(w)) for w in c.warnings]
        for s in flows:
            warns += [e(str(w)) for w in s.warnings]
    if warns:
        shown = warns[:200]
        more = f"<li>… and {len(warns) - len(shown)} more</li>" if len(warns) > len(shown) else ""
        out.append(
            '<h2 id="warnings">Warnings</h2><div class="warn"><ul>'
            + "".join(f"<li>{w}</li>" for w in shown)
            + more
            + "</ul></div>"
        )
    if info_note:
        out.append(info_note)
    return "\n".join(out)


def _param(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _verdict(fr: FlowResult | None) -> Any:
    """The flow's verdict (:mod:`hscc_trace.analysis.verdict`); judged here when the analysis
    carries none (an analysis built by hand)."""
    if fr is None:
        return None
    if fr.verdict is None:
        from hscc_trace.analysis.verdict import judge

        fr.verdict = judge(fr.events, fr.replays)
    return fr.verdict


#: CSS class of each verdict class (colour follows the verdict, never the rank alone)
VERDICT_CSS = {
    "identified": "v-identified",
    "behaves as": "v-behaves",
    "ambiguous": "v-ambiguous",
    "unknown": "v-unknown",
    "not enough data": "v-ned",
}


def _pct(x: Any) -> str:
    return _num(x * 100 if x is not None else None, "{:.1f}%")


def _verdict_cell(v: Any) -> str:
    """Overview cell: the verdict in a word or two, coloured by its class, with the error."""
    if v is None:
        return '<span class="muted">not replayed</span>'
    css = VERDICT_CSS.get(v.cls, "")
    if v.cls == "identified":
        return f'<span class="verdict {css}">{e(v.name)}</span> <span class="muted">(error {_pct(v.error)})</span>'
    if v.cls == "behaves as":
        return f'<span class="verdict {css}">behaves as {e(v.name)}</span> <span class="muted">(error {_pct(v.error)})</span>'
    if v.cls == "ambiguous":
        return f'<span class="verdict {css}">ambiguous</span>: {e(", ".join(v.candidates))}'
    if v.cls == "unknown":
        return f'<span class="verdict {css}">unknown</span> <span class="muted">(best {_pct(v.error)} &gt; {_pct(v.threshold)})</span>'
    return f'<span class="verdict {css}">not enough data</span>'


def _verdict_block(v: Any) -> str:
    """A flow's verdict: class and name, the reason in plain words, the threshold and the margin,
    and the evidence it rests on (β per loss episode, ACK clocking, growth, delay response)."""
    if v is None:
        return ""
    from hscc_trace.analysis.evidence import describe

    css = VERDICT_CSS.get(v.cls, "")
    head = (
        f"identified: {v.name}" if v.cls == "identified" else f"behaves as {v.name}" if v.cls == "behaves as" else v.cls
    )
    facts = []
    if v.error is not None:
        facts.append(f"error {_pct(v.error)} (threshold {_pct(v.threshold)})")
    if v.closer_rounds is not None and v.differing_rounds:
        facts.append(
            f"margin: closer to the sender than {e(v.runner_up)} in {v.closer_rounds} of {v.differing_rounds} "
            "rounds where they differ"
        )
    elif v.runner_up is not None and v.cls in ("identified", "behaves as"):
        facts.append(f"next: {e(v.runner_up)} {_pct(v.runner_up_error)}")
    if v.equivalent:
        facts.append(f"indistinguishable here: {e(', '.join(v.equivalent))}")
    facts.append(
        f"{v.rounds} round(s) judged ({'every round not limited by the receive window' if v.basis == 'rate' else 'cwnd-limited rounds'})"
    )
    ev = v.evidence
    beta = ""
    if ev.beta:
        shown = ", ".join(f"{b:.2f}" for b in ev.beta[:40]) + (" …" if len(ev.beta) > 40 else "")
        beta = (
            f'<div class="muted">β per loss episode (flight after recovery / flight at its onset): {shown} '
            "— Reno halves (0.5), CUBIC keeps 0.7, BBR does not decrease (≈ 1)</div>"
        )
    return (
        f'<div class="verdict-box {css}"><p><span class="verdict {css}">{e(head)}</span> — {e(v.reason)}</p>'
        f'<p class="muted">{" · ".join(facts)}</p>'
        f'<p class="muted">evidence: {e(describe(ev.as_dict()))}</p>{beta}{_outside(v)}</div>'
    )


def _outside(v: Any) -> str:
    """Where the flow lies outside the conditions the verdict was validated on (empty: within)."""
    if not v.outside_range:
        return ""
    return (
        f'<p class="muted"><strong>outside the validated range</strong> ({e(v.validated_range)}): '
        f"{e('; '.join(v.outside_range))}</p>"
    )


def verdict_row_class(fr: FlowResult, row: dict[str, Any]) -> str:
    """CSS class of a row of a flow's fit table, following the verdict: the named algorithm
    (``v-identified``, ``v-behaves``), each candidate of an ambiguous verdict (``v-ambiguous``); nothing is
    highlighted when the verdict is unknown or not enough data, whatever the rank."""
    v = _verdict(fr)
    if v is None:
        return ""
    algo = row.get("algo")
    if v.cls in ("identified", "behaves as") and (algo == v.name or algo in v.equivalent):
        return VERDICT_CSS[v.cls]
    if v.cls == "ambiguous" and algo in v.candidates:
        return "v-ambiguous"
    return ""


def _flow_anchor(ci: int, flow_id: Any) -> str:
    return f"flow-{ci}-{int(flow_id)}"


def _overview(a: Analysis, drawn: set[tuple[int, int]], summaries: list[list[FlowSummary]]) -> str:
    out = ['<h2 id="flows">Flows</h2>']
    for ci, c in enumerate(a.captures):
        res = {s.flow_id: s for s in summaries[ci]}
        if len(a.captures) > 1:
            out.append(f"<h3>{e(c.meta.path)}</h3>")
        rows, cls = [], []
        flows = c.flows if c.flows is not None else pl.DataFrame()
        for f in flows.iter_rows(named=True):
            fid = int(f["flow_id"])
            fr = res.get(fid)
            v6 = f.get("ip_version") == 6
            a_ep, b_ep = _endpoint(f["src"], f["sport"], v6), _endpoint(f["dst"], f["dport"], v6)
            snd, rcv = (a_ep, b_ep) if not f.get("sender_dir") else (b_ep, a_ep)
            link = f'<a href="#{_flow_anchor(ci, fid)}">{fid}</a>' if (ci, fid) in drawn else str(fid)
            best_txt = _verdict_cell(fr.verdict if fr is not None else None)
            pkts = int((f.get("pkts_ab") or 0) + (f.get("pkts_ba") or 0))
            rows.append(
                [
                    link,
                    f"{e(snd)} → {e(rcv)}",
                    _dur(f.get("duration_s")),
                    _count(pkts),
                    _bps(f.get("goodput_bps")),
                    f"{_ms(f.get('rtt_min_s'))} / {_ms(f.get('rtt_median_s'))}",
                    _retrans_text(f),
                    _limits_text(fr.limits) if fr else "–",
                    best_txt,
                    e(str(f.get("vantage") or "–")),
                ]
            )
            cls.append("")
        if not rows:
            out.append('<p class="muted">No TCP flows in this capture.</p>')
            continue
        out.append(
            _table(
                [
                    "flow",
                    "data sender → receiver",
                    "duration",
                    "packets",
                    "goodput",
                    "RTT min / median",
                    "retrans. (+out-of-order)",
                    "rounds limited by (cwnd / rwnd / app)",
                    "verdict",
                    "vantage",
                ],
                rows,
                num={2, 3, 4, 6},
                cls=cls,
            )
        )
    return "\n".join(out)


def _metrics_table(
    fr: FlowResult,
    colors: dict[str, str],
    row_class: Callable[[FlowResult, dict[str, Any]], str] | None = None,
) -> str:
    if fr.fit is None or not fr.fit.height or _best(fr) is None:
        return (
            '<p class="muted">No fit metrics: the flow had no cwnd-limited rounds to compare against '
            "(or no algorithm was replayed).</p>"
        )
    rows, cls = [], []
    for r in _by_rank(fr.fit, nulls_last=False):
        algo = r["algo"]
        pred, act = r.get("goodput_pred_bps"), r.get("goodput_actual_bps")
        ratio = _num(pred / act, "{:.2f}×") if pred is not None and act else "–"
        rows.append(
            [
                f'<span style="color:{colors.get(algo, "#444")}">■</span> {e(algo)}',
                _num(r.get("rank"), "{}"),
                _num(r.get("rounds"), "{}"),
                _num(r["mare"] * 100 if r.get("mare") is not None else None, "{:.1f}%"),
                _num(r.get("rmse_pkts"), "{:.2f}"),
                _num(r.get("corr"), "{:.3f}"),
                _bps(pred),
                _bps(act),
                ratio,
            ]
        )
        cls.append((row_class or default_row_class)(fr, r))
    return "<h3>Fit of each algorithm to the actual sender (cwnd-limited rounds only)</h3>" + _table(
        [
            "algorithm",
            "rank",
            "rounds",
            "median abs. rel. error",
            "RMSE (packets)",
            "correlation",
            "predicted goodput",
            "actual goodput",
            "predicted / actual",
        ],
        rows,
        num={1, 2, 3, 4, 5, 6, 7, 8},
        cls=cls,
    )


def _retrans_text(f: dict) -> str:
    """Overview cell: ``retrans`` and, when non-zero, ``(+N)`` out-of-order segments (schema.FLOWS; at a sender-side capture
    Wireshark's out-of-order segments are retransmissions too, see docs/flows.md)."""
    txt = _count(int(f.get("retrans") or 0))
    ooo = int(f.get("out_of_order") or 0)
    return f"{txt} (+{_count(ooo)})" if ooo else txt


def _flow_summary(fr: FlowResult) -> str:
    f, ev = fr.flow, fr.events
    parts = [
        f"data sender: {'A→B' if not ev.sender_dir else 'B→A'}",
        f"MSS {ev.mss} bytes",
        f"vantage: {e(str(ev.vantage))}",
    ]
    if ev.rtt_offset_s:
        parts.append(f"RTT corrected by {ev.rtt_offset_s * 1e3:.3f} ms for the vantage")
    parts.append(f"goodput {_bps(f.get('goodput_bps'))}")
    parts.append(
        f"RTT min/median/max {_ms(f.get('rtt_min_s'))} / {_ms(f.get('rtt_median_s'))} / {_ms(f.get('rtt_max_s'))}"
    )
    if ev.episodes is not None and ev.episodes.height:
        parts.append(f"{ev.episodes.height} congestion episode(s): " + _episode_counts(ev.episodes.get_column("kind")))
    else:
        parts.append("no congestion episodes")
    ooo = int(f.get("out_of_order") or 0)
    parts.append(
        f"{_count(int(f.get('retrans') or 0))} retransmitted segment(s)"
        + (f" (+{_count(ooo)} Wireshark calls out-of-order)" if ooo else "")
    )
    parts.append(f"rounds limited by {_limits_text(_limit_share(fr))}")
    v = _verdict(fr)
    if v is not None:
        parts.append(f"verdict: {_verdict_cell(v)}")
    flags = [k for k in ("handshake", "sack_ok", "ts_ok") if f.get(k)]
    if flags:
        parts.append(
            "seen: " + ", ".join({"handshake": "handshake", "sack_ok": "SACK", "ts_ok": "timestamps"}[k] for k in flags)
        )
    return '<p class="summary">' + " · ".join(parts) + "</p>"


def _episode_counts(kind: pl.Series) -> str:
    """``fast retransmit 3, rto 1``: episodes per kind, kinds in name order. Counted from the
    Enum's codes when the column is the schema's (no string per row, no polars expression)."""
    dt = kind.dtype
    if isinstance(dt, pl.Enum) and not kind.null_count():
        cats = dt.categories.to_list()
        counts = np.bincount(kind.to_physical().to_numpy().astype(np.int64), minlength=len(cats)).tolist()
        pairs = sorted((c, n) for c, n in zip(cats, counts) if n)
    else:
        pairs = list(kind.cast(pl.String).value_counts().sort("kind").iter_rows())  # (a stable order)
    return ", ".join(f"{e(str(k)).replace('_', ' ')} {n}" for k, n in pairs)


_PANEL_NAMES = {"window": "window", "rtt": "RTT", "goodput": "goodput", "timeseq": "time/sequence"}


def _signal_docs(label: str, fr: FlowResult) -> str:
    """What each plotted signal of ``label`` means (from the replay registry), under its figure."""
    df = fr.replays.get(label)
    if df is None:
        return ""
    return _signal_docs_of(label, tuple(df.columns))


@functools.lru_cache(maxsize=256)
def _signal_docs_of(label: str, columns: tuple[str, ...]) -> str:
    """:func:`_signal_docs` of a replay with these columns: the same for every flow of a run (the
    registry's answers for a label are found once a process, :func:`meta.signals`)."""
    infos = meta.signals(label)
    base = {c.name for c in schema.REPLAY_BASE}
    items = []
    for col in columns:
        if col in base:
            continue
        si = infos.get(col)
        unit = ""
        if si and si.unit:
            drawn_in = F.shown(si.unit)[0]
            unit = f" ({e(si.unit)}" + (f"; drawn in {e(drawn_in)}" if drawn_in != si.unit else "") + ")"
        items.append(
            f"<li><code>{e(col)}</code>{unit}: {e(si.doc) if si else '<span class=muted>undocumented</span>'}</li>"
        )
    if not items:
        return ""
    summ = meta.summary(label)
    head = f'<p class="muted">{e(summ)}</p>' if summ else ""
    return (
        f'<details class="signals"><summary>What the signals of {e(label)} mean</summary>{head}<ul>'
        + "".join(items)
        + "</ul></details>"
    )


# ---------------------------------------------------------------------------------------------
# public


def _points_per_series(n_flows: int, n_algos: int, max_points: int, budget: int) -> int:
    est_series = max(n_flows, 1) * (14 + 6 * max(n_algos, 1))
    cap = budget // est_series
    return int(max(min(max_points, cap), min(MIN_POINTS, max_points)))


def _wireshark_filters(fr: FlowResult, bpf: str | None) -> str:
    """The flow's header line: Wireshark display filters that select it (its ``tcp.stream`` and
    Wireshark's own conversation filter on the 4-tuple), and how to find one packet."""
    f = fr.flow
    v6 = f.get("ip_version") == 6 or ":" in str(f.get("src"))
    ip = "ipv6" if v6 else "ip"
    conv = (
        f"({ip}.addr eq {f.get('src')} and {ip}.addr eq {f.get('dst')}) and "
        f"(tcp.port eq {f.get('sport')} and tcp.port eq {f.get('dport')})"
    )
    stream = f"tcp.stream eq {int(f['flow_id'])}"
    caveat = (
        " (the stream number counts the connections this report's <code>--filter</code> let through; "
        "the conversation filter holds in the whole file)"
        if bpf
        else ""
    )
    return (
        '<p class="wireshark">In Wireshark: display filter <code class="wsf">'
        + e(stream)
        + '</code> or <code class="wsf">'
        + e(conv)
        + "</code>"
        + caveat
        + "; hovering a point gives its frame number (<code>frame.number == N</code>, Go to Packet: Ctrl+G).</p>"
    )


def _packet_list(anchor: str, full: bool) -> str:
    """The packet list under the main figure; report.js fills it from the flow's store as the user zooms."""
    if not full:
        return (
            f'<div class="packets" id="packets-{anchor}" data-section="{anchor}"><p class="muted">Packet list: '
            "not available — this flow's events at full resolution were left out of the report "
            "(<code>--no-full-resolution</code>, or the report's event budget).</p></div>"
        )
    return (
        f'<div class="packets" id="packets-{anchor}" data-section="{anchor}" data-rows="{PACKET_LIST_ROWS}">'
        f'<p class="muted">Packet list: zoom in until the visible window holds at most {PACKET_LIST_ROWS} events '
        "(ACKs and data segments) to list them here, frame by frame.</p></div>"
    )


def _events(fr: FlowResult) -> int:
    if fr.drawn is not None:
        return int(fr.drawn.section.events)
    return int(fr.events.acks.height + fr.events.segments.height)


def _payload_gz(div: str, fig: dict[str, Any]) -> bytes:
    """A figure's payload, ``[{"div": …, "data": …, "layout": …}]``, gzip-compressed (the page
    holds it in base64)."""
    return _gz('[{"div":"' + div + '",' + figure_json(fig)[1:] + "]")


def _store_gz(store: Any) -> bytes:
    return bytes(store.gzipped())


def default_row_class(fr: FlowResult, row: dict[str, Any]) -> str:
    """CSS class of a row of a flow's fit table: the verdict's (:func:`verdict_row_class`) — the
    lowest error alone is never highlighted."""
    return verdict_row_class(fr, row)


@dataclass
class Section:
    """One drawn flow's section of the page (:func:`_section`): its HTML, its figures' payloads and
    its store, compressed (or being compressed in a worker thread), and what the header counts.

    ``key`` is everything the section depends on besides the flow itself (:class:`SectionKey`):
    a section built as its flow finished (a streamed run, :class:`Drawer`) is used by
    :func:`write_report` only when its key is the report's own. The figures' ids depend on the
    sections before it: ``parts`` holds an int ``k`` where the id of the section's ``k``-th figure
    goes, and the payloads were written for the first figure being ``fig{base + 1}`` (rewritten
    when the section lands elsewhere, :meth:`payloads`)."""

    key: SectionKey
    labels: tuple[str, ...]
    events: int  # ACKs + data segments
    parts: list[str | int]
    base: int
    figures: list[Future[bytes]]  # gzip of each figure's payload (fig{base + 1 + k})
    store: Future[bytes] | None
    encoded: Future[Any] | None  # the store's columns encoded (their values let go): before ``store``
    traces: int
    decimated: int
    points_in: int
    points_out: int
    trace_types: set[str]

    def html(self, base: int) -> str:
        return "".join(p if isinstance(p, str) else f"fig{base + 1 + p}" for p in self.parts)

    def payloads(self, base: int) -> list[str]:
        """Each figure's payload (gzip + base64) for the first figure being ``fig{base + 1}``."""
        out = []
        for k, fut in enumerate(self.figures):
            gz = fut.result()
            if base != self.base:  # (the same bytes as written there at once: gzip is deterministic)
                old, new = f'[{{"div":"fig{self.base + 1 + k}",', f'[{{"div":"fig{base + 1 + k}",'
                text = gzip.decompress(gz).decode("utf-8")
                assert text.startswith(old)
                gz = _gz(new + text[len(old) :])
            out.append(base64.b64encode(gz).decode("ascii"))
        return out


@dataclass(frozen=True)
class SectionKey:
    """What a flow's section depends on besides the flow (:class:`Section`'s ``key``)."""

    ci: int  # the capture's index in the analysis
    fid: int  # the flow's id
    per_series: int  # points per series at the drawn resolution
    full: bool  # the flow's full-resolution events are in the report
    colors: tuple[tuple[str, str], ...]  # (algorithm, colour) pairs
    detail_points: int
    row_class: Callable[[FlowResult, dict[str, Any]], str]
    capture: str | None  # the capture's path, shown when the report has several
    bpf: str | None


def _section(fr: FlowResult, key: SectionKey, base: int, packer: ThreadPoolExecutor, wait: Section | None) -> Section:
    """Build one drawn flow's section (figures, store, HTML) for ``key``,
    its first figure ``fig{base + 1}``. The figures' JSON and compression and the store's encoding
    run in ``packer`` (one worker thread: the number formatting, zlib and the store's kernels
    release the GIL) while the caller goes on; ``wait``: the previous section, whose store is
    encoded before this one's is queued (at most one flow's store columns wait there)."""
    ci, fid, per_series, full, detail_points = key.ci, key.fid, key.per_series, key.full, key.detail_points
    row_class, capture, bpf = key.row_class, key.capture, key.bpf
    colors = dict(key.colors)
    anchor = _flow_anchor(ci, fid)
    ff = F.build_flow(fr, max_points=per_series, colors=colors, full_resolution=full, store_pool=packer)
    n_events = _events(fr)
    # two figures per flow, rows on one shared time axis: the four main panels, and the
    # signals of every algorithm (lowest error first); subplots draw far faster than figures
    divs: list[str | int] = []
    nav_main: list[str | int] = []
    nav_sig: list[str | int] = []
    figs: list[dict[str, Any]] = []
    trace_types: set[str] = set()
    for part, blocks in (("main", ff.main), ("signals", ff.signals)):
        if not blocks:
            continue
        k = len(figs)
        fig = F.stack(blocks, (0.0, ff.duration) if ff.duration else None)
        h = int(fig["layout"]["height"])
        for b in blocks:
            name = _PANEL_NAMES.get(b.key, b.key[5:] if b.key.startswith("algo:") else b.key)
            nav = nav_sig if part == "signals" else nav_main
            if nav:
                nav.append(" · ")
            nav += ['<a href="#', k, f'">{e(name)}</a>']
        # content-visibility (report.css) skips style, layout and paint of figures off screen;
        # their exact height is known, so the page never jumps when they come into view
        divs += [
            f'<div class="figwrap" style="contain-intrinsic-size:auto {h}px"><div class="fig" id="',
            k,
            f'" data-panel="{part}" style="min-height:{h}px"></div></div>',
        ]
        if part == "main":
            divs.append(_packet_list(anchor, full and ff.store is not None))
        if part == "signals":
            divs += [_signal_docs(b.key[5:], fr) for b in blocks]
        trace_types.update(str(tr.get("type", "scatter")) for tr in fig["data"])
        figs.append(fig)
    store = encoded = None
    if full and ff.store is not None:
        # its columns were encoded in the worker as they were given; the rest (and its
        # compression) is queued first, so that its columns go first
        if wait is not None and wait.store is not None:
            wait.store.result()
        encoded = packer.submit(ff.store.encode_columns)
        store = packer.submit(_store_gz, ff.store)
    # one payload per figure (the signals, most of the data, are unpacked only when drawn),
    # written and compressed in the worker while this thread goes on
    figures = [packer.submit(_payload_gz, f"fig{base + 1 + k}", fig) for k, fig in enumerate(figs)]
    del figs
    f = fr.flow
    v6 = f.get("ip_version") == 6
    a_ep, b_ep = _endpoint(f.get("src"), f.get("sport"), v6), _endpoint(f.get("dst"), f.get("dport"), v6)
    snd, rcv = (a_ep, b_ep) if not fr.events.sender_dir else (b_ep, a_ep)
    dec_note = ""
    zoom = (
        f"Zoomed in, every figure re-draws from this flow's {_count(n_events)} events held in the page: "
        f"each event of a window holding at most {detail_points:,} of a series' events (a dot per event "
        "once few enough to see), the same first/min/max/last reduction of the window's events beyond."
        if full
        else "This flow's events at full resolution were left out of the page (<code>--no-full-resolution</code> "
        "or the report's event budget): zooming shows the same reduced points."
    )
    if ff.decimated:
        dec_note = (
            f'<p class="note">First view decimated: {len(ff.decimated)} of {len(ff.notes)} series reduced from '
            f"{_short(ff.points_in)} to {_short(ff.points_out)} points — each keeps the first, lowest, "
            f"highest and last sample of each of {per_series // 4} equal time columns (segment marks: "
            "one bar per column spanning the lowest to the highest byte); no sample range is cut "
            f"off, so peaks, drops and gaps are all visible. {zoom}</p>"
        )
    elif not full:
        dec_note = f'<p class="note">{zoom}</p>'
    cap = f'<p class="muted">capture <code>{e(capture)}</code></p>' if capture is not None else ""
    parts: list[str | int] = [
        f'<section class="flow" id="{anchor}"><h2>Flow {fid}: {e(snd)} → {e(rcv)}</h2>{cap}'
        f"{_wireshark_filters(fr, bpf)}"
        f"{_flow_summary(fr)}{_verdict_block(_verdict(fr))}{dec_note}{_metrics_table(fr, colors, row_class)}"
        '<p class="muted">Every panel of this flow shares one time axis (seconds since the flow\'s first '
        "packet): zoom or pan one and the others follow; double-click resets. Click legend entries to "
        "hide or show series. Windows are in packets (MSS-sized), RTTs and delays in ms; the hover "
        "gives each point's frame number (and a window in bytes).</p>"
        '<p class="figs-nav">Panels: ',
        *nav_main,
        "<br>Signals of each algorithm (lowest error first): ",
        *(nav_sig or ["–"]),
        "</p>",
        *divs,
        "</section>",
    ]
    merged: list[str | int] = []
    for p_ in parts:  # adjacent texts joined
        if isinstance(p_, str) and merged and isinstance(merged[-1], str):
            merged[-1] += p_
        else:
            merged.append(p_)
    return Section(
        key=key,
        labels=tuple(_labels(fr)),
        events=n_events,
        parts=merged,
        base=base,
        figures=figures,
        store=store,
        encoded=encoded,
        traces=len(ff.notes),
        decimated=len(ff.decimated),
        points_in=ff.points_in,
        points_out=ff.points_out,
        trace_types=trace_types,
    )


def _plan(
    items: list[tuple[int, int, int]],
    *,
    max_flows: int,
    max_points: int,
    budget_points: int,
    full_resolution: bool,
    full_resolution_events: int,
) -> tuple[list[int], int, set[int]]:
    """Which flows a report draws, with how many points per series, and which of them hold their
    events at full resolution. ``items``: ``(report_rank, events, replays)`` of every flow, in
    analysis order; returns (drawn flows' positions in that order, points per series, positions
    of the full-resolution ones)."""
    size_order = sorted(range(len(items)), key=lambda i: items[i][0])  # (stable: ties in analysis order)
    drawn = sorted(size_order[:max_flows]) if len(items) > max_flows else list(range(len(items)))
    full: set[int] = set()
    if full_resolution:  # largest first, within the budget
        left = full_resolution_events
        member = set(drawn)
        for i in size_order:
            if i in member and items[i][1] <= left:
                full.add(i)
                left -= items[i][1]
    n_algos = max((items[i][2] for i in drawn), default=1)
    return drawn, _points_per_series(len(drawn), n_algos, max_points, budget_points), full


class Drawer:
    """Draws the flows of a streamed run's report as they finish (:mod:`hscc_trace.analysis.stream`,
    a run of one capture): what :func:`write_report` would draw with these options (its keyword
    arguments) is planned from the flow table (:meth:`plan`), each planned flow's section is built
    from the replays it already has (:meth:`draw`), its figures' JSON and compression and its store
    in a worker thread, and only the compressed section is kept. ``write_report`` checks each
    section's key against its own plan and makes again any that does not match."""

    def __init__(
        self,
        *,
        max_points: int = DEFAULT_MAX_POINTS,
        max_flows: int = DEFAULT_MAX_FLOWS,
        budget_points: int = DEFAULT_BUDGET_POINTS,
        full_resolution: bool = True,
        full_resolution_events: int = DEFAULT_FULL_RESOLUTION_EVENTS,
        detail_points: int = DEFAULT_DETAIL_POINTS,
        row_class: Callable[[FlowResult, dict[str, Any]], str] = default_row_class,
    ) -> None:
        self.options: dict[str, Any] = dict(
            max_points=max_points,
            max_flows=max_flows,
            budget_points=budget_points,
            full_resolution=full_resolution,
            full_resolution_events=full_resolution_events,
        )
        self.detail_points = detail_points
        self.row_class = row_class
        self._keys: dict[int, SectionKey] = {}  # planned flow (index) -> its section's key
        self._order: list[int] = []  # the planned flows, in analysis order
        self._ranked: list[int] = []  # the planned flows, largest first (write_report's budget order)
        self._open: set[int] = set()  # planned flows whose full resolution is not known yet
        self._events: dict[int, int] = {}  # analyzed planned flow -> its events
        self._figures: dict[int, int] = {}  # drawn flow -> its figures
        self._last: Section | None = None
        self._packer: ThreadPoolExecutor | None = None

    def plan(
        self,
        flows: pl.DataFrame,
        ids: list[int],
        labels: Iterable[str],
        bpf: str | None,
        drawable: Iterable[int] | None = None,
    ) -> dict[int, bool]:
        """The flows ``ids`` (their index: their place in ``ids``) of a capture's flow table that
        the report will draw, if each is analyzed (then ``write_report`` draws the same: its order
        is the flows' payload, :func:`report_rank`): index -> whether its section is known now
        (True) or only at the end (False: its full resolution depends on other flows' events).
        ``drawable``: the flows of ``ids`` that have packets, the only ones analyzed (None: all);
        a flow without is left out of the plan as ``write_report`` never sees it (counted, it
        changed the points per series of a capture of at most ``max_flows`` such flows, and every
        section drawn was made again at the end).

        Points per series are planned as for replayed flows (every algorithm); full resolution
        is certain for a flow when the packets of it and of every larger planned flow fit in the
        budget (a flow has at most one event, ACK or data segment, per packet)."""
        labels = list(labels)
        self._keys, self._order, self._figures, self._last = {}, [], {}, None
        self._ranked, self._open, self._events = [], set(), {}
        if not ids or not flows.height:
            return {}
        rows = {
            int(r["flow_id"]): r
            for r in flows.select("flow_id", "payload_ab", "payload_ba", "pkts_ab", "pkts_ba").to_dicts()
        }
        has = None if drawable is None else {int(f) for f in drawable}
        at = [i for i, f in enumerate(ids) if has is None or int(f) in has]  # (analysis order)
        items = [
            (report_rank(rows[f]), int(rows[f]["pkts_ab"] or 0) + int(rows[f]["pkts_ba"] or 0), len(labels))
            for f in (ids[i] for i in at)
        ]
        drawn, per_series, _ = _plan(items, **self.options)
        colors = F.algo_colors(dict.fromkeys(labels))
        out: dict[int, bool] = {}
        left = self.options["full_resolution_events"]
        for j in sorted(drawn, key=lambda j: items[j][0]):  # largest first (ties in analysis order)
            left -= items[j][1]
            i = at[j]
            out[i] = left >= 0 or not self.options["full_resolution"]
            self._ranked.append(i)
            if not out[i]:
                self._open.add(i)
            self._keys[i] = SectionKey(
                0,
                int(ids[i]),
                per_series=per_series,
                full=bool(self.options["full_resolution"]),
                colors=tuple(colors.items()),
                detail_points=self.detail_points,
                row_class=self.row_class,
                capture=None,
                bpf=bpf,
            )
        self._order = sorted(at[j] for j in drawn)
        return out

    def settle(self, index: int, events: int) -> bool:
        """Planned flow ``index`` is analyzed, with ``events`` events: whether its section is known
        now. A flow :meth:`plan` left open (its packets did not fit in the budget) is known as
        soon as every larger planned flow is analyzed: ``write_report`` spends the budget on the
        drawn flows largest first, each one whose events fit taking its events from it — so the
        largest flow, or a capture's only one, is settled by its own events and drawn at once,
        not kept and replayed again at the end."""
        self._events[index] = events
        if index not in self._open:
            return index in self._keys
        left = self.options["full_resolution_events"]
        for j in self._ranked:
            if j not in self._events:
                return False
            fits = self._events[j] <= left
            if fits:
                left -= self._events[j]
            if j == index:
                break
        self._open.discard(index)
        self._keys[index] = replace(self._keys[index], full=fits)
        return True

    def draw(self, index: int, fr: FlowResult) -> Section:
        """The section of planned flow ``index`` (:meth:`plan` said True), from its replays."""
        if self._packer is None:
            self._packer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hscc-draw")
        base = sum(self._figures.get(j, 2) for j in self._order if j < index)  # (2: a flow's usual figures)
        if self._last is not None:  # (at most one section's figures wait in the worker)
            for fut in self._last.figures:
                fut.result()
        sec = _section(fr, self._keys[index], base, self._packer, None)
        # the store's columns are encoded before the run goes on (the worker encodes them while
        # the figures are built): left to the worker, a store's working set (its full-resolution
        # columns) met the next flow's replays: +80 MB of peak RSS on replica-5M, +30 MB with the
        # columns encoded as they are given. The store's compression (of its encoded bytes, ≈ 4 MB
        # a flow here) and the figures' JSON and compression (decimated: a few MB) overlap the
        # next flow's analysis (waiting for the compressed store too cost the run ≈ 1 s of
        # replica-5M's, for the same peak RSS)
        if sec.encoded is not None:
            sec.encoded.result()
        # the C heaps give back what the draw freed (hscc_trace.perf.memory.trim): its arrays, freed,
        # stayed resident beside the next flows' (replica-5M, alternated at load 6-8: peak RSS
        # 723-738 MB without, 699-701 MB with, for ≈ 1-1.5 s more system time in page faults;
        # trimming after the flows of ≥ 65 536 events only: 718-730 MB; main's 707-719 MB)
        trim()
        self._figures[index] = len(sec.figures)
        self._last = sec
        return sec

    def close(self) -> None:
        """The worker ends once what it was given is done (at most the last section's compression):
        the sections drawn belong to their flows (``FlowResult.drawn``), whole for any report."""
        if self._packer is not None:
            self._packer.shutdown(wait=True)
            self._packer = None


def _notes(r: ReportInfo, max_flows: int, full_resolution: bool, full_resolution_events: int) -> list[str]:
    """The report's notes under its header, from what its sections hold (``r``, its size not yet
    known): decimation, full resolution, flows without a section."""
    info = []
    if r.decimated_traces:
        info.append(
            f'<p class="note"><strong>Decimation.</strong> {r.decimated_traces} of {r.traces} series had more '
            f"than {r.max_points:,} points and were reduced for the first view, shape-preserving, from "
            f"{_short(r.points_in)} to {_short(r.points_out)} points in total (first/min/max/last per time column, "
            "never truncated). Each flow section says which.</p>"
        )
    if r.flows:
        left_out = r.flows - r.full_resolution_flows
        info.append(
            f'<p class="note"><strong>Full resolution.</strong> {r.full_resolution_flows} of {r.flows} flow '
            f"section(s) hold every event ({_count(r.full_resolution_events)} of {_count(r.events)} ACKs and data "
            f"segments, {r.store_bytes / 1e6:.2f} MB of this page): zoom in and the figures show each event, and "
            "the packet list under the figures follows the zoom."
            + (
                f" {left_out} flow(s) show their reduced first view only "
                + (
                    "(<code>--no-full-resolution</code>)."
                    if not full_resolution
                    else f"(beyond the report's budget of {_count(full_resolution_events)} events)."
                )
                if left_out
                else ""
            )
            + "</p>"
        )
    if r.flows_omitted:
        info.append(
            f'<p class="note">{r.flows_omitted} replayed flow(s) beyond the {max_flows} with the most data are '
            "listed in the flow table without a section (select them with <code>--flow</code>).</p>"
        )
    return info


def _toc(drawn_results: list[tuple[int, FlowResult]]) -> str:
    """Links to the flow sections, where there are several."""
    if len(drawn_results) <= 1:
        return ""
    return (
        '<ul class="toc">'
        + "".join(
            f'<li><a href="#{_flow_anchor(ci, int(fr.flow["flow_id"]))}">flow {int(fr.flow["flow_id"])}</a></li>'
            for ci, fr in drawn_results
        )
        + "</ul>"
    )


def _fields(
    analysis: Analysis,
    body: str,
    n_fig: int,
    basic: bool | None,
    page_config: dict[str, int],
    payloads: str,
    stores: str,
) -> dict[str, str]:
    """The page template's fields: ``basic`` says whether every trace is of a basic type (the
    smaller plotly bundle), None when there are no figures (no plotly at all)."""
    js = _asset("report.js")
    plotly_gz, plotly_hash, plotly_version = _plotly_js(basic) if basic is not None else ("", "", "")
    csp = (
        "default-src 'none'; "
        + f"script-src {_csp_hash(js)} {plotly_hash}; ".replace("  ", " ")
        + "style-src 'unsafe-inline'; img-src data: blob:; font-src 'none'; connect-src 'none'; "
        "base-uri 'none'; form-action 'none'"
    )
    first_path = analysis.captures[0].meta.path if analysis.captures else "no capture"
    return {
        "CSP": e(csp),
        "VERSION": e(analysis.version),
        "TITLE": e(
            f"hscc-trace report: {Path(first_path).name}"
            + (f" (+{len(analysis.captures) - 1})" if len(analysis.captures) > 1 else "")
        ),
        "CSS": _asset("report.css"),
        "N_FIGURES": str(n_fig),
        "BODY": body,
        "CREATED": e(analysis.created),
        "PLOTLY_VERSION": e(plotly_version),
        "TEMPLATE_JSON": _json_script(F.TEMPLATE),
        "CONFIG_JSON": _json_script(_PLOTLY_CONFIG),
        "REPORT_JSON": _json_script(page_config),
        "PAYLOADS": payloads,
        "PLOTLYJS_GZ": plotly_gz,
        "JS": js,
        "STORES": stores,
    }


def write_report(
    analysis: Analysis,
    path: str | Path,
    *,
    max_points: int = DEFAULT_MAX_POINTS,
    max_flows: int = DEFAULT_MAX_FLOWS,
    budget_points: int = DEFAULT_BUDGET_POINTS,
    full_resolution: bool = True,
    full_resolution_events: int = DEFAULT_FULL_RESOLUTION_EVENTS,
    detail_points: int = DEFAULT_DETAIL_POINTS,
    row_class: Callable[[FlowResult, dict[str, Any]], str] = default_row_class,
) -> ReportInfo:
    """Write the self-contained HTML report for ``analysis`` to ``path``.

    ``max_points`` caps the points of each series in a flow's first view (first/min/max/last of
    ``max_points/4`` time columns beyond it); with many flows the cap shrinks so that all figures
    together hold about ``budget_points`` points (never below 400 per series). The ``max_flows``
    flows with the most data get a full section; every flow is in the overview.

    With ``full_resolution`` every event of the drawn flows is also held in the page (compactly,
    :mod:`.store`), up to ``full_resolution_events`` events in all (flows in order of size):
    zoomed in, the figures re-draw from it — every event of a window that holds at most
    ``detail_points`` of a series' events, the same decimation of the window's events beyond —
    and the packet list under the figures follows the zoom. ``row_class(flow_result, fit_row)``
    gives the CSS class of each row of a flow's fit table (default: following the verdict).

    Raises InputError when the file cannot be written or an option is out of range.
    """
    if max_points < 8:
        raise InputError(f"max_points must be at least 8, got {max_points}")
    if detail_points < 8:
        raise InputError(f"detail_points must be at least 8, got {detail_points}")
    path = Path(path)
    results: list[tuple[int, FlowResult]] = [(ci, fr) for ci, c in enumerate(analysis.captures) for fr in c.results]
    for _, fr in results:  # every flow's verdict (judged now when the analysis carries none)
        _verdict(fr)
    # every analyzed flow (a streamed run's results hold only the flows it kept for this report:
    # the max_flows with the most payload, hscc_trace.analysis.stream)
    summaries = [_summaries(c) for c in analysis.captures]
    n_flows = sum(len(x) for x in summaries)
    drawn_at, per_series, full_at = _plan(
        [(report_rank(fr.flow), _events(fr), len(_labels(fr))) for _, fr in results],
        max_flows=max_flows,
        max_points=max_points,
        budget_points=budget_points,
        full_resolution=full_resolution,
        full_resolution_events=full_resolution_events,
    )
    drawn_results = [results[i] for i in drawn_at]
    full_ids = {id(results[i][1]) for i in full_at}
    colors = F.algo_colors(dict.fromkeys([*analysis.algorithms, *(k for _, fr in results for k in _labels(fr))]))
    several = len(analysis.captures) > 1

    sections: list[str] = []
    built: list[tuple[str, Section]] = []
    packer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hscc-report")
    n_fig = n_traces = n_dec = p_in = p_out = 0
    n_events = full_events = store_bytes = 0
    drawn: set[tuple[int, int]] = set()
    trace_types: set[str] = set()
    try:
        for ci, kept in drawn_results:
            fid = int(kept.flow["flow_id"])
            anchor = _flow_anchor(ci, fid)
            drawn.add((ci, fid))
            full = id(kept) in full_ids
            meta_ = analysis.captures[ci].meta
            key = SectionKey(
                ci,
                fid,
                per_series=per_series,
                full=full,
                colors=tuple(colors.items()),
                detail_points=detail_points,
                row_class=row_class,
                capture=meta_.path if several else None,
                bpf=meta_.bpf,
            )
            sec = kept.drawn.section if kept.drawn is not None else None
            # (drawn as it finished with other options: made again here — and that section stays
            # whole, its compression not cancelled: a report with its options may come next)
            if sec is None or sec.key != key:
                fr = kept.restored()  # (a streamed run's flow is replayed, or read, again here, one at a time)
                sec = _section(fr, key, n_fig, packer, built[-1][1] if built else None)
                if fr is not kept:  # its replays go
                    del fr
                    trim()
            n_traces += sec.traces
            n_dec += sec.decimated
            p_in += sec.points_in
            p_out += sec.points_out
            n_events += sec.events
            trace_types |= sec.trace_types
            if sec.store is not None:
                full_events += sec.events
            sections.append(sec.html(n_fig))
            built.append((anchor, sec))
            n_fig += len(sec.figures)

        store_scripts, payload_scripts = [], []
        n = 0
        for anchor, sec in built:
            for blob in sec.payloads(n):
                n += 1
                payload_scripts.append(
                    f'<script type="application/octet-stream" data-flow-payload data-section="{anchor}" '
                    f'data-div="fig{n}" id="payload-fig{n}">{blob}</script>'
                )
        for anchor, sec in built:
            if sec.store is None:
                continue
            sblob = base64.b64encode(sec.store.result()).decode("ascii")
            store_bytes += len(sblob)
            store_scripts.append(
                f'<script type="application/octet-stream" data-store data-section="{anchor}" '
                f'id="store-{anchor}">{sblob}</script>'
            )
    finally:
        packer.shutdown(cancel_futures=True)
    held = ReportInfo(
        path=path,
        size=0,  # (known once written)
        flows=len(drawn_results),
        flows_omitted=n_flows - len(drawn_results),
        figures=n_fig,
        traces=n_traces,
        decimated_traces=n_dec,
        points_in=p_in,
        points_out=p_out,
        max_points=per_series,
        events=n_events,
        full_resolution_flows=len([1 for _, fr in drawn_results if id(fr) in full_ids]),
        full_resolution_events=full_events,
        store_bytes=store_bytes,
    )
    info = _notes(held, max_flows, full_resolution, full_resolution_events)
    toc = _toc(drawn_results)
    body = "\n".join(
        [
            '<div id="render-error" class="error" hidden></div>',
            _header(analysis, n_fig, "".join(info), _overview(analysis, drawn, summaries), summaries),
            toc,
            *sections,
        ]
    )
    if not drawn_results:
        body += '<p class="muted">No flow was replayed, so there are no figures.</p>'

    page_config = {"detailPoints": int(detail_points), "listRows": PACKET_LIST_ROWS, "columns": max(per_series // 4, 1)}
    basic = (trace_types <= BASIC_TRACE_TYPES) if drawn_results else None
    fields = _fields(analysis, body, n_fig, basic, page_config, "\n".join(payload_scripts), "\n".join(store_scripts))
    del payload_scripts, store_scripts  # (in fields now: one copy of the page's text)
    from hscc_trace.atomic import write_texts

    template = re.split(r"\{\{([A-Z_]+)\}\}", _asset("template.html"))  # (a field's name at each odd place)
    page = [fields[t] if k % 2 else t for k, t in enumerate(template)]  # (written without joining: memory)
    write_texts(path, page, "report", parents=False)  # temporary file + rename: never a truncated report
    return replace(held, size=path.stat().st_size)
