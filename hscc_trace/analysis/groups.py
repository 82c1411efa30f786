"""Bottleneck groups: flows that share a bottleneck, measured as the seed papers measure them.

Library API (stable: other code and the paper experiments call it; docs/groups.md)
-------------------------------------------------------------------------------------

* :func:`flow_series` ``(fr) -> FlowSeries | None`` — the compact per-flow input of every group
  metric, taken from a flow's event tables (no capture is read again): its cumulative delivered
  bytes per ACK, cumulative sent bytes per segment, RTT samples and loss episodes. None for a
  flow without data.
* :func:`find_groups` ``(series, rule=GroupRule()) -> list[list[FlowSeries]]`` — the grouping
  rule (default: the concurrent bulk flows of one capture seen from one vantage) or the user's
  own groups (``GroupRule(groups=((1, 2),))`` flow ids, or ``"port=5001"`` items).
* :func:`measure` ``(flows, opts=GroupOptions(), index=0) -> Group`` — every metric of one group.
* :func:`capture_groups` ``(cr, rule, opts) -> list[Group]`` — the groups of a
  :class:`~hscc_trace.model.CaptureResult` (a streamed run's summaries carry the series).
* :func:`analysis_groups` ``(analysis, rule, opts) -> dict[str, list[Group]]`` — capture path →
  its groups; :func:`attach` stores them on the captures for the JSON results and the report.
* :func:`compare` ``(baseline, test, regular="reno") -> Comparison`` — the *bandwidth stolen*
  from the test run's regular flows (Compound TCP paper, Definition 1) and every per-flow delta;
  ``baseline``/``test`` are lists of :class:`Group`, group dicts as in the JSON results, results
  documents or :class:`~hscc_trace.model.Analysis` objects.
* :func:`jain` ``(xs) -> float`` — Jain's fairness index.

``Group.as_dict()`` is the group's entry of the JSON results (``captures[].groups[]``,
docs/results.md); ``Comparison.as_dict()`` that of ``hscc-trace compare --json``.

Units: times ns on the capture's clock (``*_ns``) or s from the group's start (``t_s``); rates
bit/s of TCP payload; bytes of payload; RTTs s. The library never prints.

Definitions (each with its source; the whole story in docs/groups.md)
--------------------------------------------------------------------

* **goodput** of a flow in an interval: bytes newly acknowledged cumulatively by the ACKs inside it
  (the sender's ``snd_una`` advance, schema.ACKS ``acked_bytes``) · 8 / its length — what iperf
  and the papers' receivers count as a flow's throughput. **throughput**: payload bytes the sender
  put on the wire in the interval, retransmissions included (schema.SEGMENTS ``len``).
* **shares, Jain's index, friendliness, RTT-fairness** use the flows' goodput over the group's
  *measurement interval*: the time every flow of the group is transferring (the intersection of
  their data intervals; their union if that is shorter than one window), minus ``skip_s`` at its
  start.
* **Jain's fairness index** (R. Jain, D. Chiu, W. Hawe, "A Quantitative Measure of Fairness and
  Discrimination for Resource Allocation in Shared Computer Systems", DEC TR-301, 1984):
  J = (Σxᵢ)² / (n·Σxᵢ²), 1/n ≤ J ≤ 1, 1 when every flow gets the same.
* **friendliness ratio** of a flow to its reference co-flows (TCP-Fusion paper §IV, Figs. 5–6
  and Table 1 compare a variant's bandwidth with the coexisting Reno flow's): its goodput over the
  mean goodput of the reference flows other than itself (default reference: the flows labelled
  ``reno``, :func:`flow_algo`). 1 = as much as Reno; above 1 the flow takes more.
* **RTT-fairness** (HRF-TCP paper §2.1 Eq. (1): throughput₁/throughput₂ ∝ (RTT₂/RTT₁)^(1/(1−d));
  §5.2 plots Thr₁ − Thr₂; TCP-Fusion Fig. 9 the short-RTT flow's throughput over the long-RTT
  flow's): per pair of flows, the throughput ratio (shorter-RTT flow over longer), the RTT ratio
  (longer over shorter, mean RTT samples), the exponent log(throughput ratio)/log(RTT ratio)
  (= 1/(1−d): 2 for Reno by Eq. (1), 0 for an RTT-fair protocol) and the difference in bit/s.
* **convergence**: the time, from the moment the last flow of the group started, until every
  flow's goodput stays within ``tolerance`` (default 10 %) of the fair share (the window's total
  over n) in every later window; None when that never holds.
* **capacity**: the median total goodput of the group over the windows where the bottleneck
  shows itself — a loss episode of a group flow starts in it, or the flows' median RTT sample in
  it exceeds their base RTT by ``queue_factor`` (a standing queue) — and **utilization** the
  measurement interval's total goodput over that capacity. Both in goodput terms (payload bit/s):
  a 10 Mbit/s link carrying 1448-byte payloads in 1500-byte packets delivers 9.65 Mbit/s.
* **loss episodes side by side**: every congestion episode of the group's flows (schema.EPISODES),
  each marked *synchronized* when an episode of another flow of the group started within one RTT
  (that flow's mean RTT sample) of it.
* **bandwidth stolen** (K. Tan, J. Song, Q. Zhang, M. Sridharan, "A Compound TCP Approach for
  High-speed and Long Distance Networks", INFOCOM 2006, §IV.A Definition 1): with P the mean
  goodput of the regular (Reno) flows of a baseline run where they compete with regular flows
  only, and Q that of the regular flows of the test run where they compete with the high-speed
  flows, stolen = (P − Q) / P. The paper's P and Q are aggregates of m flows; with the same m in
  both runs the per-flow means give the same fraction, and they stay meaningful when m differs.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: A flow is *bulk* when it delivers at least this many payload bytes … (a choice, not a paper's:
#: iperf3's control connection and handshake-only flows carry a few hundred bytes, every sample's
#: transfer more than 1 MB)
DEFAULT_MIN_BYTES = 100_000
#: … over a data interval of at least this long [s]
DEFAULT_MIN_DURATION_S = 1.0
#: Two bulk flows are *concurrent* when their data intervals overlap by at least this fraction of
#: the shorter interval (a flow that starts when another ends shares no bottleneck time with it)
DEFAULT_MIN_OVERLAP = 0.5
#: Width of the shared time axis' windows [s] (the papers plot 1-s throughput samples)
DEFAULT_WINDOW_S = 1.0
#: Convergence tolerance: relative distance from the fair share (the issue's 10 %)
DEFAULT_TOLERANCE = 0.10
#: A window shows a standing queue when the flows' median RTT in it exceeds their base RTT by this
#: factor (20 % above the base RTT: more than the samples' jitter of < 1 ms on a 10-100 ms path)
DEFAULT_QUEUE_FACTOR = 1.2
#: The algorithm label whose flows are the reference co-flows and the "regular" flows by default
DEFAULT_REFERENCE = "reno"
#: A streamed run (hscc_trace.analysis.stream) keeps the group input of flows carrying at least
#: this many payload bytes: a group of smaller flows ("--group" naming them) is not measured there
SERIES_MIN_BYTES = 10_000
#: A flow's series longer than this many points are kept at 1-ms resolution (:func:`flow_series`):
#: the last event of each millisecond (the bytes outstanding: the largest), so that a long fast
#: flow costs ≈ 1000 points a second instead of one per packet; at 10 Mbit/s (≈ 860 ACKs/s) the
#: samples' flows stay exact. A window boundary then falls at most 1 ms from an ACK it counts:
#: ≤ 0.1 % of a 1-s window's bytes.
SERIES_POINTS = 20_000
SERIES_BIN_NS = 1_000_000
#: Pairs whose mean RTTs differ by less than this ratio get no RTT-fairness exponent (log ≈ 0)
MIN_RTT_RATIO = 1.05


@dataclass(frozen=True)
class FlowSeries:
    """What the group metrics need of one flow (:func:`flow_series`): compact numpy arrays."""

    flow_id: int
    label: str  # "flow 1 10.77.0.1:40001 → 10.77.0.2:5001" (data sender first)
    sport: int  # the data sender's port
    dport: int  # the data receiver's port
    algo: str | None  # the flow's algorithm label (flow_algo), None when not known
    algo_source: str  # "truth" (files beside the capture), "verdict" (identified) or "unknown"
    vantage: str
    mss: int
    ack_ns: np.ndarray  # int64: times of the ACKs that advanced the cumulative ACK
    delivered: np.ndarray  # int64: cumulative bytes acknowledged after each of them
    seg_ns: np.ndarray  # int64: times of the data segments (payload > 0)
    sent: np.ndarray  # int64: cumulative payload bytes sent after each (retransmissions included)
    rtt_ns: np.ndarray  # int64: times of the RTT samples
    rtt_s: np.ndarray  # float64: the samples [s]
    episodes: tuple[tuple[int, str], ...] = ()  # (start_ns, kind) of every congestion episode
    flight_ns: np.ndarray | None = None  # int64: times of every ACK (the report's windows)
    flight: np.ndarray | None = None  # int64: bytes outstanding after each (snd_max − ack)

    @property
    def start_ns(self) -> int:
        """Start of the data interval: the first data segment."""
        return int(self.seg_ns[0]) if self.seg_ns.size else int(self.ack_ns[0])

    @property
    def end_ns(self) -> int:
        """End of the data interval: the last ACK that advanced."""
        return int(self.ack_ns[-1]) if self.ack_ns.size else self.start_ns

    @property
    def total_bytes(self) -> int:
        return int(self.delivered[-1]) if self.delivered.size else 0

    @property
    def rtt_mean_s(self) -> float | None:
        return float(self.rtt_s.mean()) if self.rtt_s.size else None

    @property
    def rtt_min_s(self) -> float | None:
        return float(self.rtt_s.min()) if self.rtt_s.size else None

    def delivered_at(self, t_ns: np.ndarray) -> np.ndarray:
        """Cumulative bytes acknowledged by the ACKs before each time (a step function)."""
        return _cum_at(self.ack_ns, self.delivered, t_ns)

    def sent_at(self, t_ns: np.ndarray) -> np.ndarray:
        """Cumulative payload bytes sent before each time."""
        return _cum_at(self.seg_ns, self.sent, t_ns)


def _compact(ts: np.ndarray, *vals: np.ndarray, peak: bool = False) -> tuple[np.ndarray, ...]:
    """``ts`` (sorted) and its columns at most one point per :data:`SERIES_BIN_NS` once longer than
    :data:`SERIES_POINTS`: each millisecond's last event (with ``peak``, the columns' largest value in it)."""
    if ts.size <= SERIES_POINTS:
        return (ts, *vals)
    b = ts // SERIES_BIN_NS
    last = np.append(np.flatnonzero(np.diff(b)), ts.size - 1)
    if peak:
        first = np.append(0, last[:-1] + 1)
        return (ts[last], *(np.maximum.reduceat(v, first) for v in vals))
    return (ts[last], *(v[last] for v in vals))


def _cum_at(ts: np.ndarray, cum: np.ndarray, t_ns: np.ndarray) -> np.ndarray:
    i = np.searchsorted(ts, t_ns, side="left")  # events strictly before t
    out = np.zeros(len(t_ns), dtype=np.int64)
    ok = i > 0
    out[ok] = cum[i[ok] - 1]
    return out


def _endpoint(addr: Any, port: Any) -> str:
    a = str(addr)
    return f"[{a}]:{port}" if ":" in a else f"{a}:{port}"


def flow_algo(fr: Any) -> tuple[str | None, str]:
    """A flow's algorithm label and where it comes from: the sending kernel's own label when files
    beside the capture give it (``FlowResult.truth.algo``: the testbed's ``meta.json``), else the
    verdict's algorithm when it named one (identified, or behaves as), else None ("unknown")."""
    t = getattr(fr, "truth", None)
    if t is not None and getattr(t, "algo", None):
        return _bare(str(t.algo)), "truth"
    v = getattr(fr, "verdict", None)
    if v is not None and getattr(v, "cls", None) in ("identified", "behaves as") and getattr(v, "name", None):
        return _bare(str(v.name)), "verdict"
    return None, "unknown"


def _bare(name: str) -> str:
    """``reno`` of ``reno[flavor=rfc]``; ``ctcp`` of the testbed's ``bpf_ctcp``."""
    name = name.split("[")[0].strip().lower()
    return name.removeprefix("bpf_")


def flow_series(fr: Any) -> FlowSeries | None:
    """The :class:`FlowSeries` of a :class:`~hscc_trace.model.FlowResult` (from its event tables:
    schema.ACKS, SEGMENTS, EPISODES), or None when it has no data segments or no advancing ACK."""
    import polars as pl

    ev = fr.events
    if ev is None or ev.acks.height == 0 or ev.segments.height == 0:
        return None
    acks = ev.acks.select("ts_ns", "acked_bytes", "rtt_s", "outstanding")
    adv = acks.filter(pl.col("acked_bytes") > 0)
    if adv.height == 0:
        return None
    segs = ev.segments.select("ts_ns", "len").filter(pl.col("len") > 0)
    if segs.height == 0:
        return None
    rtt = acks.filter(pl.col("rtt_s").is_not_null() & pl.col("rtt_s").is_finite())
    f = fr.flow
    a, b = _endpoint(f.get("src"), f.get("sport")), _endpoint(f.get("dst"), f.get("dport"))
    sport, dport = int(f.get("sport") or 0), int(f.get("dport") or 0)
    if int(f.get("sender_dir") or 0) == 1:
        a, b, sport, dport = b, a, dport, sport
    algo, source = flow_algo(fr)
    ack_ns, delivered = _compact(
        adv["ts_ns"].to_numpy().astype(np.int64), np.cumsum(adv["acked_bytes"].to_numpy().astype(np.int64))
    )
    seg_ns, sent = _compact(
        segs["ts_ns"].to_numpy().astype(np.int64), np.cumsum(segs["len"].to_numpy().astype(np.int64))
    )
    rtt_ns, rtt_s = _compact(rtt["ts_ns"].to_numpy().astype(np.int64), rtt["rtt_s"].to_numpy().astype(np.float64))
    flight_ns, flight = _compact(
        acks["ts_ns"].to_numpy().astype(np.int64),
        acks["outstanding"].fill_null(0).to_numpy().astype(np.int64),
        peak=True,
    )
    eps: tuple[tuple[int, str], ...] = ()
    if ev.episodes is not None and ev.episodes.height:
        e = ev.episodes.select("start_ns", pl.col("kind").cast(pl.String))
        eps = tuple((int(s), str(k)) for s, k in e.iter_rows() if s is not None)
    return FlowSeries(
        flow_id=int(f["flow_id"]),
        label=f"flow {f['flow_id']} {a} → {b}",
        sport=sport,
        dport=dport,
        algo=algo,
        algo_source=source,
        vantage=str(ev.vantage or f.get("vantage") or "unknown"),
        mss=int(ev.mss or f.get("mss") or 0),
        ack_ns=ack_ns,
        delivered=delivered,
        seg_ns=seg_ns,
        sent=sent,
        rtt_ns=rtt_ns,
        rtt_s=rtt_s,
        episodes=eps,
        flight_ns=flight_ns,
        flight=flight,
    )


# --- the grouping rule ----------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupRule:
    """Which flows form groups (docs/groups.md, "Which flows share a bottleneck").

    Default: the *bulk* flows (``min_bytes`` delivered over at least ``min_duration_s``) of one
    capture seen from one vantage, grouped when their data intervals are *concurrent* (overlap by
    at least ``min_overlap`` of the shorter one; groups are the connected sets of that relation).
    ``groups``: the user's own groups instead — each a tuple of items, a flow id (int or digits)
    or ``port=N`` (every flow with N as either port); the bulk rule is then not applied.
    """

    min_bytes: int = DEFAULT_MIN_BYTES
    min_duration_s: float = DEFAULT_MIN_DURATION_S
    min_overlap: float = DEFAULT_MIN_OVERLAP
    groups: tuple[tuple[int | str, ...], ...] | None = None


def parse_group(text: str) -> tuple[int | str, ...]:
    """``"1,2"`` or ``"port=5001,port=5002"`` → the items of one user group (ValueError if bad)."""
    items: list[int | str] = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        if item.isdigit():
            items.append(int(item))
        elif item.startswith("port=") and item[5:].isdigit():
            items.append(item)
        else:
            raise ValueError(f"group item {item!r}: expected a flow id or port=N")
    if not items:
        raise ValueError(f"group {text!r}: no flow id or port=N")
    return tuple(items)


def _is_bulk(s: FlowSeries, rule: GroupRule) -> bool:
    return s.total_bytes >= rule.min_bytes and (s.end_ns - s.start_ns) / 1e9 >= rule.min_duration_s


def _overlap(a: FlowSeries, b: FlowSeries) -> float:
    inter = min(a.end_ns, b.end_ns) - max(a.start_ns, b.start_ns)
    shorter = min(a.end_ns - a.start_ns, b.end_ns - b.start_ns)
    return inter / shorter if shorter > 0 and inter > 0 else 0.0


def _matches(s: FlowSeries, item: int | str) -> bool:
    if isinstance(item, int):
        return s.flow_id == item
    port = int(str(item)[5:])
    return port in (s.sport, s.dport)


def find_groups(series: Sequence[FlowSeries], rule: GroupRule | None = None) -> list[list[FlowSeries]]:
    """The groups of one capture's flows (:class:`GroupRule`), each by flow id, in order of their
    first flow. A default group has at least two flows; a user group has the flows it names."""
    rule = rule or GroupRule()
    flows = sorted(series, key=lambda s: s.flow_id)
    if rule.groups is not None:
        out = []
        for items in rule.groups:
            g = [s for s in flows if any(_matches(s, it) for it in items)]
            if g:
                out.append(g)
        return out
    bulk = [s for s in flows if _is_bulk(s, rule)]
    parent = list(range(len(bulk)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    # a sweep in order of start: a flow is compared only with the flows still transferring when it starts
    by_start = sorted(range(len(bulk)), key=lambda i: bulk[i].start_ns)
    active: list[int] = []
    for i in by_start:
        active = [j for j in active if bulk[j].end_ns > bulk[i].start_ns]
        for j in active:
            if bulk[i].vantage == bulk[j].vantage and _overlap(bulk[i], bulk[j]) >= rule.min_overlap:
                parent[root(i)] = root(j)
        active.append(i)
    comps: dict[int, list[FlowSeries]] = {}
    for i, s in enumerate(bulk):
        comps.setdefault(root(i), []).append(s)
    return [g for g in sorted(comps.values(), key=lambda g: g[0].flow_id) if len(g) >= 2]


# --- the metrics ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupOptions:
    """How a group is measured (every field: unit, default, docs/groups.md).

    ``window_s`` [s] the shared axis' window (default 1 s); ``window_rtts``: instead, that many of
    the group's base RTT (its smallest RTT sample); ``skip_s`` [s] left out at the start of the
    measurement interval (slow start; default 0); ``tolerance`` (fraction) for convergence;
    ``queue_factor`` for the capacity's congested windows; ``reference``: the co-flows of the
    friendliness ratio — an algorithm label (default ``reno``) or flow ids."""

    window_s: float = DEFAULT_WINDOW_S
    window_rtts: float | None = None
    skip_s: float = 0.0
    tolerance: float = DEFAULT_TOLERANCE
    queue_factor: float = DEFAULT_QUEUE_FACTOR
    reference: str | tuple[int, ...] = DEFAULT_REFERENCE


def jain(xs: Iterable[float]) -> float | None:
    """Jain's fairness index (Σx)² / (n·Σx²) (Jain, Chiu, Hawe 1984); None for no flows or all zero."""
    x = np.asarray(list(xs), dtype=np.float64)
    if x.size == 0:
        return None
    sq = float((x * x).sum())
    return float(x.sum()) ** 2 / (x.size * sq) if sq > 0 else None


@dataclass
class FlowMetrics:
    """One flow of a group."""

    flow_id: int
    label: str
    algo: str | None
    algo_source: str
    start_ns: int
    end_ns: int
    bytes: int  # delivered over the measurement interval
    goodput_bps: float  # over the measurement interval
    throughput_bps: float  # sent (retransmissions included) over the measurement interval
    share: float | None  # of the group's goodput
    normalized: float | None  # goodput / fair share (n · share)
    friendliness: float | None  # goodput / the reference co-flows' mean goodput
    rtt_mean_s: float | None
    rtt_min_s: float | None
    episodes: int
    synchronized: int  # episodes with another flow's within one RTT

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Group:
    """Every metric of one bottleneck group (:func:`measure`). ``windows``: one row per window of
    the shared axis (``t_s`` its start from ``start_ns``, ``len_s``, ``jain``, ``total_bps``,
    ``congested``) with, per flow, ``goodput_bps`` and ``throughput_bps`` lists in flow order."""

    index: int
    flows: list[FlowMetrics]
    start_ns: int  # of the shared axis (the group's first data segment)
    end_ns: int
    interval_ns: tuple[int, int]  # the measurement interval
    window_s: float
    jain: float | None
    jain_windows: dict[str, float | None]  # min, median, mean over the windows of the interval
    reference: list[int]  # the friendliness reference flows
    rtt_fairness: list[dict[str, Any]]
    convergence_s: float | None
    converged: bool
    capacity_bps: float | None
    utilization: float | None
    total_goodput_bps: float
    episodes: list[dict[str, Any]]  # flow_id, start_ns, t_s, kind, synchronized
    sync_fraction: float | None
    windows: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    capture: str | None = None

    @property
    def flow_ids(self) -> list[int]:
        return [f.flow_id for f in self.flows]

    def flow(self, flow_id: int) -> FlowMetrics:
        return next(f for f in self.flows if f.flow_id == flow_id)

    def as_dict(self) -> dict[str, Any]:
        """The group's JSON entry (docs/results.md, ``captures[].groups[]``)."""
        return _clean(
            {
                "index": self.index,
                "flow_ids": self.flow_ids,
                "start_ns": self.start_ns,
                "end_ns": self.end_ns,
                "interval_ns": list(self.interval_ns),
                "window_s": self.window_s,
                "jain": self.jain,
                "jain_windows": self.jain_windows,
                "total_goodput_bps": self.total_goodput_bps,
                "capacity_bps": self.capacity_bps,
                "utilization": self.utilization,
                "convergence_s": self.convergence_s,
                "converged": self.converged,
                "reference": self.reference,
                "rtt_fairness": self.rtt_fairness,
                "sync_fraction": self.sync_fraction,
                "flows": [f.as_dict() for f in self.flows],
                "episodes": self.episodes,
                "windows": self.windows,
                "options": self.options,
            }
        )


def _reference(flows: Sequence[FlowSeries], ref: str | tuple[int, ...]) -> list[int]:
    if isinstance(ref, str):
        return [s.flow_id for s in flows if s.algo == _bare(ref)]
    return [s.flow_id for s in flows if s.flow_id in set(ref)]


def _ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 else None


def measure(flows: Sequence[FlowSeries], opts: GroupOptions | None = None, index: int = 0) -> Group:
    """Every metric of one group of flows (module docstring; docs/groups.md). ValueError when
    ``flows`` is empty."""
    opts = opts or GroupOptions()
    flows = sorted(flows, key=lambda s: s.flow_id)
    if not flows:
        raise ValueError("a group needs at least one flow")
    n = len(flows)
    start = min(s.start_ns for s in flows)
    end = max(s.end_ns for s in flows)
    rtts = [s.rtt_min_s for s in flows if s.rtt_min_s is not None]
    window_s = opts.window_s
    if opts.window_rtts is not None and rtts:
        window_s = opts.window_rtts * min(rtts)
    if not (window_s > 0):
        raise ValueError(f"window must be positive (got {window_s} s)")
    w_ns = max(int(round(window_s * 1e9)), 1)
    # the measurement interval: every flow transferring, less skip_s at its start
    lo, hi = max(s.start_ns for s in flows), min(s.end_ns for s in flows)
    if hi - lo < w_ns:
        lo, hi = start, end
    lo = min(lo + int(opts.skip_s * 1e9), hi)
    span_s = (hi - lo) / 1e9
    bounds = np.array([lo, hi + 1], dtype=np.int64)  # (the interval's last ACK included)
    got = np.array([np.diff(s.delivered_at(bounds))[0] for s in flows], dtype=np.float64)
    sent = np.array([np.diff(s.sent_at(bounds))[0] for s in flows], dtype=np.float64)
    good = got * 8 / span_s if span_s > 0 else np.zeros(n)
    thr = sent * 8 / span_s if span_s > 0 else np.zeros(n)
    total = float(good.sum())
    ref = _reference(flows, opts.reference)

    # the shared time axis: windows of w_ns from the group's start; the last one may be shorter
    edges = np.append(np.arange(start, end, w_ns, dtype=np.int64), end + 1)  # (the last ACK in the last)
    lens = np.diff(edges) / 1e9
    wg = np.array([np.diff(s.delivered_at(edges)) for s in flows], dtype=np.float64) * 8 / lens
    wt = np.array([np.diff(s.sent_at(edges)) for s in flows], dtype=np.float64) * 8 / lens
    wtot = wg.sum(axis=0)
    wj = [jain(wg[:, k]) for k in range(wg.shape[1])]
    inside = (edges[:-1] >= lo) & (edges[1:] <= hi + 1)
    full = lens >= 0.5 * window_s  # (a short last window says little about the rate)
    j_in = [x for x, ok, whole in zip(wj, inside, full) if ok and whole and x is not None]

    congested = _congested(flows, edges, len(lens), rtts, opts.queue_factor)
    cap_w = wtot[congested & full & inside] if inside.any() else wtot[congested & full]
    capacity = float(np.median(cap_w)) if cap_w.size else None
    utilization = total / capacity if capacity else None

    conv, converged = _convergence(wg, wtot, edges, full, max(s.start_ns for s in flows), opts.tolerance)

    eps, sync_n = _episodes_side_by_side(flows, start)

    metrics = []
    for i, s in enumerate(flows):
        others = [good[j] for j, t in enumerate(flows) if t.flow_id in ref and t.flow_id != s.flow_id]
        metrics.append(
            FlowMetrics(
                flow_id=s.flow_id,
                label=s.label,
                algo=s.algo,
                algo_source=s.algo_source,
                start_ns=s.start_ns,
                end_ns=s.end_ns,
                bytes=int(got[i]),
                goodput_bps=float(good[i]),
                throughput_bps=float(thr[i]),
                share=_ratio(float(good[i]), total),
                normalized=_ratio(float(good[i]) * n, total),
                friendliness=_ratio(float(good[i]), float(np.mean(others))) if others else None,
                rtt_mean_s=s.rtt_mean_s,
                rtt_min_s=s.rtt_min_s,
                episodes=len(s.episodes),
                synchronized=sync_n[s.flow_id],
            )
        )

    pairs = _rtt_pairs(metrics)

    return Group(
        index=index,
        flows=metrics,
        start_ns=int(start),
        end_ns=int(end),
        interval_ns=(int(lo), int(hi)),
        window_s=w_ns / 1e9,
        jain=jain(good) if n else None,
        jain_windows={
            "min": min(j_in) if j_in else None,
            "median": float(np.median(j_in)) if j_in else None,
            "mean": float(np.mean(j_in)) if j_in else None,
        },
        reference=ref,
        rtt_fairness=pairs,
        convergence_s=conv,
        converged=converged,
        capacity_bps=capacity,
        utilization=utilization,
        total_goodput_bps=total,
        episodes=eps,
        sync_fraction=(sum(1 for e in eps if e["synchronized"]) / len(eps)) if eps else None,
        windows={
            "t_s": [float(x) for x in (edges[:-1] - start) / 1e9],
            "len_s": [float(x) for x in lens],
            "jain": wj,
            "total_bps": [float(x) for x in wtot],
            "congested": [bool(x) for x in congested],
            "goodput_bps": [[float(x) for x in row] for row in wg],
            "throughput_bps": [[float(x) for x in row] for row in wt],
        },
        options={
            "window_s": w_ns / 1e9,
            "skip_s": opts.skip_s,
            "tolerance": opts.tolerance,
            "queue_factor": opts.queue_factor,
            "reference": opts.reference if isinstance(opts.reference, str) else list(opts.reference),
        },
    )


def _congested(
    flows: Sequence[FlowSeries], edges: np.ndarray, nw: int, rtts: list[float], queue_factor: float
) -> np.ndarray:
    """Per window (``nw`` of them, between ``edges``): congested — a loss episode starts in it,
    or a standing queue (the median RTT sample in it above ``queue_factor`` × the group's
    smallest RTT, ``rtts``' minimum)."""
    congested = np.zeros(nw, dtype=bool)
    for s in flows:
        if s.episodes:
            at = np.searchsorted(edges, np.array([t for t, _ in s.episodes], dtype=np.int64), side="right") - 1
            congested[at[(at >= 0) & (at < nw)]] = True
    all_t = np.concatenate([s.rtt_ns for s in flows]) if flows else np.zeros(0, dtype=np.int64)
    all_r = np.concatenate([s.rtt_s for s in flows]) if flows else np.zeros(0)
    if all_t.size and rtts:
        base = min(rtts)
        where = np.searchsorted(edges, all_t, side="right") - 1
        # (the samples by window, one median per run: a radix sort of small window numbers)
        order = np.argsort(where.astype(np.int16 if nw < 32_000 else np.int32), kind="stable")
        where, rs = where[order], all_r[order]
        cuts = np.flatnonzero(np.diff(where)) + 1
        for w_idx, chunk in zip(where[np.r_[0, cuts]], np.split(rs, cuts)):
            if 0 <= w_idx < nw and float(np.median(chunk)) > queue_factor * base:
                congested[w_idx] = True
    return congested


def _convergence(
    wg: np.ndarray, wtot: np.ndarray, edges: np.ndarray, full: np.ndarray, last_start: int, tolerance: float
) -> tuple[float | None, bool]:
    """(time from the last flow's start until every later full window has each flow within
    ``tolerance`` of the fair share, s; whether that happened). ``wg``: goodput per flow and
    window, ``wtot`` per window."""
    conv, converged = None, False
    n = wg.shape[0]
    if n >= 2:
        ok = np.array(
            [
                wtot[k] > 0 and bool(np.all(np.abs(wg[:, k] / (wtot[k] / n) - 1.0) <= tolerance))
                for k in range(wtot.shape[0])
            ]
        )
        cand = [k for k in range(wtot.shape[0]) if edges[k] >= last_start and full[k]]
        tail_ok = True
        first = None
        for k in reversed(cand):
            if ok[k] and tail_ok:
                first = k
            else:
                tail_ok = False
        if first is not None:
            conv, converged = float(edges[first] - last_start) / 1e9, True
    return conv, converged


def _episodes_side_by_side(flows: Sequence[FlowSeries], start: int) -> tuple[list[dict[str, Any]], dict[int, int]]:
    """Every flow's loss episodes in time order (``t_s`` from the group's ``start``), each marked
    ``synchronized`` when another flow's starts within one of its flow's mean RTTs; and per flow,
    how many of its episodes are."""
    eps: list[dict[str, Any]] = []
    for s in flows:
        for t, kind in s.episodes:
            eps.append({"flow_id": s.flow_id, "start_ns": t, "t_s": (t - start) / 1e9, "kind": kind})
    eps.sort(key=lambda e: e["start_ns"])
    rtt_of = {s.flow_id: (s.rtt_mean_s or 0.0) for s in flows}
    starts = [int(e["start_ns"]) for e in eps]  # (sorted: each episode looks at its neighbours only)
    for i, e in enumerate(eps):
        tol = rtt_of[e["flow_id"]] * 1e9
        lo_i = bisect.bisect_left(starts, starts[i] - tol)
        hi_i = bisect.bisect_right(starts, starts[i] + tol)
        e["synchronized"] = any(eps[j]["flow_id"] != e["flow_id"] for j in range(lo_i, hi_i))
    sync_n = {s.flow_id: 0 for s in flows}
    for e in eps:
        sync_n[e["flow_id"]] += bool(e["synchronized"])
    return eps, sync_n


def _rtt_pairs(metrics: list[FlowMetrics]) -> list[dict[str, Any]]:
    """RTT fairness of every pair of flows with RTTs: the shorter-RTT flow's goodput over the
    longer's, the RTT ratio, and the exponent log(throughput ratio) / log(RTT ratio) where the
    RTTs differ by :data:`MIN_RTT_RATIO` or more."""
    n = len(metrics)
    pairs = []
    for i in range(n):
        for j in range(i + 1, n):
            a, b = metrics[i], metrics[j]
            if a.rtt_mean_s is None or b.rtt_mean_s is None:
                continue
            short, long_ = (a, b) if a.rtt_mean_s <= b.rtt_mean_s else (b, a)
            r_short, r_long = float(short.rtt_mean_s or 0.0), float(long_.rtt_mean_s or 0.0)
            tr = _ratio(short.goodput_bps, long_.goodput_bps)
            rr = r_long / r_short if r_short > 0 else None
            expo = (
                math.log(tr) / math.log(rr)
                if tr is not None and tr > 0 and rr is not None and rr >= MIN_RTT_RATIO
                else None
            )
            pairs.append(
                {
                    "short_rtt_flow": short.flow_id,
                    "long_rtt_flow": long_.flow_id,
                    "throughput_ratio": tr,
                    "rtt_ratio": rr,
                    "exponent": expo,
                    "difference_bps": short.goodput_bps - long_.goodput_bps,
                }
            )

    return pairs


# --- captures and analyses ---------------------------------------------------------------------------


def series_of(cr: Any) -> list[FlowSeries]:
    """Every analyzed flow's :class:`FlowSeries` of a capture: from the summaries of a streamed run
    (``FlowSummary.series``, made as each flow finished), else from its flows' event tables."""
    if getattr(cr, "summaries", None) is not None:
        return [s.series for s in cr.summaries if getattr(s, "series", None) is not None]
    out = []
    for fr in cr.results:
        s = flow_series(fr)
        if s is not None:
            out.append(s)
    return out


def capture_groups(cr: Any, rule: GroupRule | None = None, opts: GroupOptions | None = None) -> list[Group]:
    """The groups of one capture (:class:`~hscc_trace.model.CaptureResult`), measured."""
    out = []
    for i, g in enumerate(find_groups(series_of(cr), rule)):
        grp = measure(g, opts, index=i)
        grp.capture = cr.meta.path
        out.append(grp)
    return out


def analysis_groups(
    analysis: Any, rule: GroupRule | None = None, opts: GroupOptions | None = None
) -> dict[str, list[Group]]:
    """Capture path → its groups, for every capture of an :class:`~hscc_trace.model.Analysis`."""
    return {cr.meta.path: capture_groups(cr, rule, opts) for cr in analysis.captures}


def attach(analysis: Any, rule: GroupRule | None = None, opts: GroupOptions | None = None) -> Any:
    """Measure every capture's groups and keep them on it (``CaptureResult.groups``: what the JSON
    results and the report show); returns ``analysis``."""
    for cr in analysis.captures:
        cr.groups = capture_groups(cr, rule, opts)
    return analysis


def groups_of_capture(cr: Any) -> list[Group]:
    """The groups kept on a capture by :func:`attach`, else measured with the defaults."""
    got = getattr(cr, "groups", None)
    return got if got is not None else capture_groups(cr)


# --- bandwidth stolen -----------------------------------------------------------------------------------


@dataclass
class Comparison:
    """:func:`compare`'s result: one entry per pair of groups (baseline group i, test group i)."""

    regular: str | tuple[int, ...]
    groups: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)

    @property
    def stolen(self) -> float | None:
        """The first group pair's bandwidth stolen (the usual case: one group each)."""
        return self.groups[0]["stolen"] if self.groups else None

    def as_dict(self) -> dict[str, Any]:
        return _clean(
            {
                "regular": self.regular if isinstance(self.regular, str) else list(self.regular),
                "groups": self.groups,
                "warnings": self.warnings,
            }
        )


def group_dicts(obj: Any) -> list[dict[str, Any]]:
    """Group dicts (``Group.as_dict()``) of: a list of :class:`Group` or of such dicts, one
    :class:`Group`, a results document (every capture's ``groups``, in order) or an
    :class:`~hscc_trace.model.Analysis` (measured with the defaults unless :func:`attach` ran)."""
    if isinstance(obj, Group):
        return [obj.as_dict()]
    if isinstance(obj, dict):
        if "captures" in obj:
            out = []
            for cap in obj.get("captures") or []:
                for g in cap.get("groups") or []:
                    out.append({**g, "capture": cap.get("path")})
            return out
        return [obj]
    if hasattr(obj, "captures"):
        return [{**g.as_dict(), "capture": cr.meta.path} for cr in obj.captures for g in groups_of_capture(cr)]
    out = []
    for g in obj:
        out.append(g.as_dict() if isinstance(g, Group) else dict(g))
    return out


def _regular_flows(g: dict[str, Any], regular: str | tuple[int, ...]) -> list[dict[str, Any]]:
    flows = g.get("flows") or []
    if isinstance(regular, str):
        return [f for f in flows if f.get("algo") == _bare(regular)]
    return [f for f in flows if f.get("flow_id") in set(regular)]


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def compare(baseline: Any, test: Any, regular: str | tuple[int, ...] = DEFAULT_REFERENCE) -> Comparison:
    """Bandwidth stolen from the test run's regular flows, and every per-flow delta.

    Groups are paired in order (the baseline's i-th with the test's i-th). Per pair: P = mean
    goodput of the baseline's regular flows (every baseline flow when none is labelled
    ``regular``: a baseline is regular flows only), Q = that of the test's regular flows,
    ``stolen`` = (P − Q)/P (Compound TCP paper, Definition 1; None when the test group has no
    regular flow or P = 0). Flows are paired in flow order for ``flows`` (goodput, share, and the
    test's minus the baseline's); ``jain``/``total``/``utilization`` are given for both runs.
    ``regular``: an algorithm label (default ``reno``) or flow ids.
    """
    base, cur = group_dicts(baseline), group_dicts(test)
    warnings: list[str] = []
    if not base:
        warnings.append("the baseline has no bottleneck group (two or more concurrent bulk flows, or --group)")
    if not cur:
        warnings.append("the test run has no bottleneck group (two or more concurrent bulk flows, or --group)")
    if len(base) != len(cur) and base and cur:
        warnings.append(f"the baseline has {len(base)} group(s), the test run {len(cur)}: compared pairwise in order")
    pairs = []
    for i, (b, t) in enumerate(zip(base, cur)):
        breg = _regular_flows(b, regular) if isinstance(regular, str) else _regular_flows(b, regular)
        if not breg:
            breg = list(b.get("flows") or [])
            if isinstance(regular, str):
                warnings.append(
                    f"group {i}: no baseline flow labelled {regular!r}: every baseline flow taken as regular"
                )
        treg = _regular_flows(t, regular)
        if not treg:
            warnings.append(f"group {i}: no test flow labelled {regular!r}: bandwidth stolen cannot be computed")
        p = _mean([float(f["goodput_bps"]) for f in breg if f.get("goodput_bps") is not None])
        q = _mean([float(f["goodput_bps"]) for f in treg if f.get("goodput_bps") is not None])
        stolen = (p - q) / p if p and q is not None else None
        flows = []
        for fb, ft in zip(b.get("flows") or [], t.get("flows") or []):
            gb, gt = fb.get("goodput_bps"), ft.get("goodput_bps")
            flows.append(
                {
                    "baseline_flow": fb.get("flow_id"),
                    "test_flow": ft.get("flow_id"),
                    "baseline_label": fb.get("label"),
                    "test_label": ft.get("label"),
                    "baseline_algo": fb.get("algo"),
                    "test_algo": ft.get("algo"),
                    "baseline_goodput_bps": gb,
                    "test_goodput_bps": gt,
                    "delta_bps": gt - gb if gb is not None and gt is not None else None,
                    "relative": (gt - gb) / gb if gb and gt is not None else None,
                    "baseline_share": fb.get("share"),
                    "test_share": ft.get("share"),
                }
            )
        pairs.append(
            {
                "index": i,
                "baseline_capture": b.get("capture"),
                "test_capture": t.get("capture"),
                "baseline_regular": [f.get("flow_id") for f in breg],
                "test_regular": [f.get("flow_id") for f in treg],
                "baseline_regular_bps": p,
                "test_regular_bps": q,
                "stolen": stolen,
                "baseline_jain": b.get("jain"),
                "test_jain": t.get("jain"),
                "baseline_total_bps": b.get("total_goodput_bps"),
                "test_total_bps": t.get("total_goodput_bps"),
                "baseline_utilization": b.get("utilization"),
                "test_utilization": t.get("utilization"),
                "flows": flows,
            }
        )
    return Comparison(regular=regular, groups=pairs, warnings=warnings)


def _clean(value: Any) -> Any:
    """A JSON-safe copy: non-finite floats → None, tuples → lists, numpy scalars → Python numbers
    (as :func:`hscc_trace.analysis.results.clean`, which the results import from here)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.generic):
        return _clean(value.item())
    return value
