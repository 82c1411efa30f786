"""Plain data containers passed between the stages of the pipeline.

capture ──► :class:`Capture` ──► events ──► :class:`FlowEvents` ──► replay ──► :class:`FlowResult`
──► :class:`Analysis` ──► report / JSON / check.

Every DataFrame here follows a table in :mod:`hscc_trace.schema`; these classes add no
behaviour, so that each stage can be developed and tested on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from hscc_trace.errors import Warn

if TYPE_CHECKING:  # (annotations only: importing the model does not load polars)
    import polars as pl


@dataclass
class CaptureMeta:
    """What the capture file says about itself (shown in report headers)."""

    path: str
    format: str  # "pcap", "pcap-ns", "pcapng" (+ ".gz" when compressed)
    link_types: list[str]  # libpcap DLT names seen, e.g. ["EN10MB"]
    snaplen: int | None
    packets_total: int  # records read from the file
    packets_tcp: int  # records decoded as TCP
    first_ns: int | None
    last_ns: int | None
    bpf: str | None = None
    # reason -> count for records that were not decoded as TCP (non-IP, non-TCP, malformed …)
    skipped: dict[str, int] = field(default_factory=dict)
    # decoder -> count ("fast", "scapy")
    decoded_by: dict[str, int] = field(default_factory=dict)

    @property
    def duration_s(self) -> float:
        if self.first_ns is None or self.last_ns is None:
            return 0.0
        return (self.last_ns - self.first_ns) / 1e9


@dataclass
class Capture:
    """A capture read and decoded: packets (schema.PACKETS, with flow_id/dir) and flows (schema.FLOWS).

    ``packets`` may be given as a :class:`Deferred`: the table is then built on first access
    (once, thread-safe) — :func:`hscc_trace.flows.load` does this, so that a caller that only
    needs the event streams never pays for the 39-column table. ``decoded`` (optional) is the
    decoder's own output behind ``packets`` (:class:`hscc_trace.capture.Decoded`): the event
    builder reads only the columns it needs from it, in flow order. Assigning ``packets``
    drops ``decoded`` (it would describe the old table).
    """

    meta: CaptureMeta
    packets: pl.DataFrame
    flows: pl.DataFrame
    warnings: list[Warn] = field(default_factory=list)
    decoded: Any = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:  # (pickle/copy: the table itself, not its builder)
        state = {k: v for k, v in self.__dict__.items() if k not in ("_packets", "decoded")}
        state["_packets"] = self.packets
        state["decoded"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


class Deferred:
    """A table built on first use by ``build()`` (a zero-argument callable), at most once."""

    def __init__(self, build: Callable[[], Any]) -> None:
        import threading

        self._build: Callable[[], Any] | None = build
        self._value: Any = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        with self._lock:
            if self._build is not None:
                self._value = self._build()
                self._build = None
            return self._value

    @property
    def built(self) -> bool:
        return self._build is None


class _PacketsSlot:
    """``Capture.packets``: a plain attribute, except that a :class:`Deferred` value is built on
    first read and that assigning a table drops ``Capture.decoded`` (see :class:`Capture`)."""

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            raise AttributeError("packets")  # (dataclass: the field has no default)
        v = obj.__dict__["_packets"]
        if isinstance(v, Deferred):
            v = v.get()
            obj.__dict__["_packets"] = v
        return v

    def __set__(self, obj: Any, value: Any) -> None:
        if "_packets" in obj.__dict__ and "decoded" in obj.__dict__:
            obj.__dict__["decoded"] = None
        obj.__dict__["_packets"] = value


# (after @dataclass: the field stays required)
Capture.packets = _PacketsSlot()  # type: ignore[assignment]


@dataclass
class FlowEvents:
    """One flow's event streams from the data sender's point of view (schema.SEGMENTS/ACKS/EPISODES/ROUNDS)."""

    flow_id: int
    sender_dir: int  # 0 = A→B carries the data, 1 = B→A
    mss: int  # bytes; windows in packets are bytes / mss
    vantage: str  # one of schema.VANTAGES
    segments: pl.DataFrame
    acks: pl.DataFrame
    episodes: pl.DataFrame
    rounds: pl.DataFrame
    # RTT correction applied for the vantage point (s); 0.0 at the sender
    rtt_offset_s: float = 0.0
    warnings: list[Warn] = field(default_factory=list)
    # the handshake's RTT as the data sender measured it (s; its first RTT sample, Linux
    # tcp_min_rtt when congestion control starts): the capture's handshake gaps, the sender-side
    # one replaced by rtt_offset_s (docs/events.md); None when the handshake was not captured
    handshake_rtt_s: float | None = None
    # schema.SACK_BLOCKS of the receiver's ACKs, when known (the report's time/sequence graph)
    sack_blocks: pl.DataFrame | None = None


@dataclass(frozen=True)
class ReleasedReplays:
    """A flow's replays, released to save memory and made again on demand: ``labels`` are the
    keys the replays had, ``replay()`` returns the same tables (a replay is deterministic)."""

    labels: tuple[str, ...]
    replay: Callable[[], dict[str, pl.DataFrame]] = field(repr=False, compare=False)


@dataclass(frozen=True)
class DrawnFlow:
    """A flow whose report section a streamed run drew as the flow finished
    (:mod:`hscc_trace.analysis.stream`): the section (``hscc_trace.reports.html.Section``, valid
    for the report options it was drawn with) and ``restore()``, which returns the flow whole
    (its events and replays, read and analyzed again from its capture) for a report written
    with other options."""

    section: Any
    restore: Callable[[], FlowResult] = field(repr=False, compare=False)


@dataclass
class KernelTruth:
    """What the sending kernel really did, from files beside the capture (hscc_trace.analysis.truth)."""

    source: str  # the folder the files were read from
    algo: str | None  # the algorithm the sender ran (meta.json), when known
    window: pl.DataFrame  # frame, ts_ns of the ACK whose processing left it; snd_cwnd (packets)
    signals: pl.DataFrame | None = None  # frame, ts_ns of the ACK that wrote it; the program's variables


@dataclass
class FlowResult:
    """Everything known about one flow after replay."""

    flow: dict[str, Any]  # the flow's row of schema.FLOWS
    events: FlowEvents
    replays: dict[str, pl.DataFrame]  # algorithm label -> schema.REPLAY_BASE + its signals
    fit: pl.DataFrame  # schema.FIT_METRICS rows for this flow, ranked
    warnings: list[Warn] = field(default_factory=list)
    # the flow's verdict (hscc_trace.analysis.verdict.Verdict): which algorithm, or why none
    verdict: Any = None
    # a streamed run (hscc_trace.analysis.stream): replays is empty and this makes them again
    released: ReleasedReplays | None = None
    # the sender's kernel truth when files beside the capture hold it (samples/), else None
    truth: KernelTruth | None = None
    # a streamed run drew the flow's report section as it finished: the events' tables are then
    # empty (zero rows), replays empty and released None; restore() gives the flow whole
    drawn: DrawnFlow | None = None

    def restored(self) -> FlowResult:
        """This flow whole, with its events and replays: itself, or read and analyzed again when
        a streamed run drew it as it finished (``drawn``), or with ``released`` replayed again."""
        fr = self.drawn.restore() if self.drawn is not None else self
        if fr.released is None or fr.replays:
            return fr
        from dataclasses import replace

        return replace(fr, replays=fr.released.replay(), released=None)


class VerdictBrief(NamedTuple):
    """The part of a flow's verdict (:class:`hscc_trace.analysis.verdict.Verdict`) the report's
    overview shows: class, the algorithm named, the error and its threshold, the candidates."""

    cls: str
    name: str | None
    error: float | None
    threshold: float | None
    candidates: tuple[str, ...]


@dataclass(slots=True)
class FlowSummary:
    """What a streamed run (:mod:`hscc_trace.analysis.stream`) keeps of every analyzed flow once
    its outputs are written: the facts of the report's overview and header, and where its JSON
    results entry is — under a kilobyte instead of the flow's tables (docs/performance.md)."""

    flow_id: int
    vantage: str  # the events' vantage (schema.VANTAGES)
    limits: dict[str, float]  # share of the flow's rounds limited by "cwnd", "rwnd", "app"
    warnings: tuple[Warn, ...]  # the FlowResult's warnings, then its events' warnings
    verdict: VerdictBrief | None = None
    entry: Any = None  # its JSON results entry (hscc_trace.analysis.results.Entry: .load(), .text())
    series: Any = None  # its hscc_trace.analysis.groups.FlowSeries (bottleneck groups), when it carries data


@dataclass
class CaptureResult:
    meta: CaptureMeta
    flows: pl.DataFrame
    results: list[FlowResult]
    warnings: list[Warn] = field(default_factory=list)
    # a streamed run: every analyzed flow, by flow order (``results`` then holds only the flows
    # kept whole — those the report draws); None: ``results`` holds every analyzed flow
    summaries: list[FlowSummary] | None = None
    # its bottleneck groups (hscc_trace.analysis.groups.Group) once measured by groups.attach
    groups: list[Any] | None = None


@dataclass
class Analysis:
    """One `analyze` run: every capture, the algorithms and the exact parameters used."""

    captures: list[CaptureResult]
    algorithms: list[str]
    params: dict[str, dict[str, Any]]  # algorithm label -> {param: value} actually used
    version: str
    created: str  # ISO 8601 UTC
    errors: list[str] = field(default_factory=list)  # one line per capture that could not be read
