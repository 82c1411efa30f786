"""The batched path (``all_flow_events``) equals the one-flow path (``flow_events``) flow by flow.

``all_flow_events`` groups the packet table by flow once and runs every stage over batches of
flows (hscc_trace.events.tables.build_flow_events), two batches at a time in threads; each flow's
tables are slices of capture-wide ones. What can break there is bookkeeping: batch boundaries,
row offsets, per-flow parameters picked for the wrong flow, the order of the result. The
algorithms themselves are tested elsewhere (test_events_unit/synthetic/tshark/kernel).

The input merges several external captures into one table whose flows interleave in time (as on
a busy link), with batches forced down to a few hundred packets so that one capture spans many
batches and most batches hold several flows.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from conftest import EXTERNAL as EXT  # noqa: E402
from conftest import external
from polars.testing import assert_frame_equal

from hscc_trace import api
from hscc_trace.events import all_flow_events, flow_events, tables
from hscc_trace.model import Capture, CaptureMeta

# small captures with handshakes, mid-flow starts, SACK, timestamps, zero windows, several
# flows per file and a receiver-side vantage point between them
FILES = (
    "tcptrace__discard.solaris.pcap",
    "tcptrace__urgent.pcap",
    "zeek__206_example_b.pcap",
    "zeek__irc-dcc-send.pcapng",
    "tcptrace__hardware_dups.pcap",
    "nebby__test_00bf7f4_meganz.pcap",
    "mlab-etl__ndt-nnwk2_1611335823_00000000000C2DA9.pcap",
    "tcptrace__single_byte_rexmit.pcap",
)


def _merged(shuffle: bool) -> Capture:
    """One capture of all FILES: flows renumbered, rows interleaved by time, frames renumbered."""
    pks, fls = [], []
    base = 0
    for name in FILES:
        cap = api.load(EXT / name)
        pks.append(cap.packets.with_columns((pl.col("flow_id") + base).cast(pl.UInt32)))
        fls.append(cap.flows.with_columns((pl.col("flow_id") + base).cast(pl.UInt32)))
        base += cap.flows.height
    # each capture starts at t = 0 so that their flows overlap in time
    pk = pl.concat([p.with_columns(pl.col("ts_ns") - p.get_column("ts_ns").min()) for p in pks])
    pk = pk.sort("ts_ns", maintain_order=True).with_columns(
        pl.int_range(1, pl.len() + 1, dtype=pl.UInt64).alias("frame")
    )
    if shuffle:  # rows out of frame order: the grouping must restore it per flow
        pk = pk[np.random.default_rng(5).permutation(pk.height)]
    meta = CaptureMeta(
        path="merged",
        format="pcap",
        link_types=["EN10MB"],
        snaplen=None,
        packets_total=pk.height,
        packets_tcp=pk.height,
        first_ns=None,
        last_ns=None,
    )
    return Capture(meta=meta, packets=pk, flows=pl.concat(fls))


@pytest.fixture(scope="module")
def merged() -> Capture:
    external(*FILES)
    return _merged(shuffle=False)


def _same(a, b) -> None:
    assert (a.flow_id, a.sender_dir, a.mss, a.vantage, a.rtt_offset_s) == (
        b.flow_id,
        b.sender_dir,
        b.mss,
        b.vantage,
        b.rtt_offset_s,
    )
    assert a.warnings == b.warnings
    for kind in ("segments", "acks", "episodes", "rounds"):
        assert_frame_equal(getattr(a, kind), getattr(b, kind), check_exact=True)


@pytest.mark.parametrize("threads", [1, 2])
def test_batches_equal_one_flow_at_a_time(merged: Capture, monkeypatch: pytest.MonkeyPatch, threads: int) -> None:
    monkeypatch.setattr(tables, "CHUNK_ROWS", 300)
    monkeypatch.setattr(tables, "THREADS", threads)
    monkeypatch.setattr(tables, "THREADED_ROWS", 1 << 30)
    used = []
    real = tables._batch
    monkeypatch.setattr(tables, "_batch", lambda work, *job: used.append(id(work)) or real(work, *job))
    every = all_flow_events(merged)
    assert len(set(used)) == threads  # one set of working arrays per thread
    # every flow, in order of its first packet in the table
    assert len(every) == merged.flows.height
    order = merged.packets.with_row_index().group_by("flow_id").agg(pl.col("index").min()).sort("index")
    assert list(every) == order.get_column("flow_id").to_list()
    # at least one flow with enough packets to span several batches, several flows per batch
    sizes = merged.packets.group_by("flow_id").len().get_column("len")
    assert sizes.max() > 3 * 300 and (sizes < 300).sum() >= 3
    for fid, ev in every.items():
        _same(ev, flow_events(merged, fid))


def test_long_flows_run_in_one_thread(merged: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    # batches longer than THREADED_ROWS: one thread (one set of working arrays), same streams
    monkeypatch.setattr(tables, "CHUNK_ROWS", 300)
    monkeypatch.setattr(tables, "THREADED_ROWS", 1000)
    used = []
    real = tables._batch
    monkeypatch.setattr(tables, "_batch", lambda work, *job: used.append(id(work)) or real(work, *job))
    every = all_flow_events(merged)
    assert len(set(used)) == 1 and len(used) > 10
    for fid in list(every)[:4]:
        _same(every[fid], flow_events(merged, fid))


def test_table_out_of_frame_order_gives_the_same_streams(merged: Capture) -> None:
    shuffled = _merged(shuffle=True)
    a = all_flow_events(merged)
    b = all_flow_events(shuffled)
    assert set(a) == set(b)
    for fid in a:
        _same(a[fid], b[fid])


def test_flow_rows_are_matched_by_id_not_position(merged: Capture) -> None:
    # the flows table in reverse order and with an extra id without packets: same result
    flows = pl.concat(
        [merged.flows.reverse(), merged.flows.head(1).with_columns(pl.lit(10_000, pl.UInt32).alias("flow_id"))]
    )
    other = Capture(meta=merged.meta, packets=merged.packets, flows=flows)
    a = all_flow_events(merged)
    b = all_flow_events(other)
    assert list(a) == list(b)
    for fid in a:
        _same(a[fid], b[fid])
