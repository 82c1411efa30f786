"""Plain data containers passed between the stages of the pipeline.

capture ──► :class:`Capture` ──► events ──► :class:`FlowEvents` ──► replay ──► :class:`FlowResult`
──► :class:`Analysis` ──► report / JSON / check.

Every DataFrame here follows a table in :mod:`hscc_trace.schema`; these classes add no
behaviour, so that each stage can be developed and tested on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from hscc_trace.errors import Warn


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
    """A capture read and decoded: packets (schema.PACKETS, with flow_id/dir) and flows (schema.FLOWS)."""

    meta: CaptureMeta
    packets: pl.DataFrame
    flows: pl.DataFrame
    warnings: list[Warn] = field(default_factory=list)


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
    # schema.SACK_BLOCKS of the receiver's ACKs, when known (the report's time/sequence graph)
    sack_blocks: pl.DataFrame | None = None


@dataclass
class FlowResult:
    """Everything known about one flow after replay."""

    flow: dict[str, Any]  # the flow's row of schema.FLOWS
    events: FlowEvents
    replays: dict[str, pl.DataFrame]  # algorithm label -> schema.REPLAY_BASE + its signals
    fit: pl.DataFrame  # schema.FIT_METRICS rows for this flow, ranked
    warnings: list[Warn] = field(default_factory=list)


@dataclass
class CaptureResult:
    meta: CaptureMeta
    flows: pl.DataFrame
    results: list[FlowResult]
    warnings: list[Warn] = field(default_factory=list)


@dataclass
class Analysis:
    """One `analyze` run: every capture, the algorithms and the exact parameters used."""

    captures: list[CaptureResult]
    algorithms: list[str]
    params: dict[str, dict[str, Any]]  # algorithm label -> {param: value} actually used
    version: str
    created: str  # ISO 8601 UTC
    errors: list[str] = field(default_factory=list)  # one line per capture that could not be read
