"""Per-flow event streams from the data sender's point of view.

``flow_events(capture, flow_id)`` → :class:`hscc_trace.model.FlowEvents` with the tables
schema.SEGMENTS, ACKS, EPISODES and ROUNDS. ``events_from_packets(packets, flow)`` is the
lower-level entry that takes one flow's rows of schema.PACKETS and (optionally) its row of
schema.FLOWS. The rules are documented in docs/events.md and in the modules:

* :mod:`.prep` — sequence/timestamp unwrapping, handshake facts (vectorized);
* :mod:`.core` — the per-packet state machine (numba): segment kinds, ACK stream, SACK
  scoreboard, pipe, episodes, rounds;
* :mod:`.vantage` — sender / receiver / mid-path and the RTT correction;
* :mod:`.tables` — the polars tables and the per-round limit classification.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from hscc_trace.errors import InputError
from hscc_trace.model import Capture, FlowEvents

from .tables import build_events

__all__ = ["flow_events", "events_from_packets", "all_flow_events"]

# schema.PACKETS columns the event streams read
_USED = ("frame", "ts_ns", "dir", "flow_id", "seq", "ack", "flags", "win", "payload_len", "ip_ecn",
         "opt_mss", "opt_wscale", "opt_sack_perm", "opt_tsval", "opt_tsecr", "sack_n",
         *(f"sack_{e}{i}" for i in range(4) for e in ("l", "r")))


def events_from_packets(packets: pl.DataFrame, flow: dict[str, Any] | None = None,
                        flow_id: int | None = None) -> FlowEvents:
    """Event streams of one flow from its packets (schema.PACKETS rows) and optional flow row."""
    if flow_id is None:
        if flow is not None and flow.get("flow_id") is not None:
            flow_id = int(flow["flow_id"])
        elif "flow_id" in packets.columns and packets.height:
            flow_id = int(packets.get_column("flow_id")[0])
        else:
            flow_id = 0
    return build_events(packets, flow, flow_id)


def flow_events(capture: Capture, flow_id: int) -> FlowEvents:
    """Event streams of flow ``flow_id`` of a decoded capture."""
    flows = capture.flows
    row = None
    if flows is not None and flows.height and "flow_id" in flows.columns:
        hit = flows.filter(pl.col("flow_id") == flow_id)
        if hit.height:
            row = hit.row(0, named=True)
    pk = capture.packets.filter(pl.col("flow_id") == flow_id)
    if pk.height == 0:
        known = "" if flows is None or not flows.height else f" (flows: 0..{flows.height - 1})"
        raise InputError(f"no flow with id {flow_id} in {capture.meta.path}{known}")
    return build_events(pk, row, flow_id)


def all_flow_events(capture: Capture) -> dict[int, FlowEvents]:
    """Event streams of every flow (packets are partitioned once)."""
    rows = {}
    if capture.flows is not None and capture.flows.height:
        rows = {int(r["flow_id"]): r for r in capture.flows.iter_rows(named=True)}
    out: dict[int, FlowEvents] = {}
    if capture.packets.height == 0:
        return out
    used = [c for c in _USED if c in capture.packets.columns]
    for key, pk in capture.packets.select(used).partition_by("flow_id", as_dict=True, maintain_order=True).items():
        fid = int(key[0] if isinstance(key, tuple) else key)
        out[fid] = build_events(pk, rows.get(fid), fid)
    return out
