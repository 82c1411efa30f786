"""``capture.load`` without a packets table: the events read the decoder's columns grouped by flow.

``load`` feeds every decoded batch to an arena (hscc_trace.flows.arena.Arena) that appends each
row's event columns to its flow's chain of blocks; ``Capture.packets`` is built only when read
(model.Deferred). What can break: the arena's bookkeeping (blocks, chains, growth, the sparse
SACK/option rows, the A/B direction fixed at the end), the table rebuilt from it (values and
nulls of all 39 columns), the fallback for records that need scapy, the Capture's lazy
attribute (assignment, pickling) and the process-level settings. The reference in each test is
the eager path of the same module (the table the loader built before, and the events computed
from that table).
"""

from __future__ import annotations

import gc
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from polars.testing import assert_frame_equal

import hscc_trace.flows.ingest as capture
from hscc_trace.capture import read_packets
from hscc_trace.events import all_flow_events, flow_event_batches, flow_events
from hscc_trace.flows import arena as source
from hscc_trace.flows.tracker import FlowTracker
from hscc_trace.model import Capture, Deferred

REPO = Path(__file__).resolve().parents[2]
from conftest import EXTERNAL as EXT  # noqa: E402
from conftest import external

SAMPLES = ("reno-vs-cubic", "reno-bdp-receiver", "cubic-loss", "rwnd-limited")
# several flows, SACK + D-SACK, zero windows, IPv6 + mid-flow start, pcapng
EXTERNAL = (
    "tcptrace__discard.solaris.pcap",
    "tcptrace__dsack.pcap",
    "tcptrace__zwnd.pcap",
    "ODD__mlab-packet-headers__v6-cut-short.pcap",
    "zeek__irc-dcc-send.pcapng",
)


def _paths() -> list[Path]:
    out = [REPO / "samples" / s / "capture.pcap" for s in SAMPLES]
    out.append(REPO / "samples" / "synthetic" / "ecn.pcap")  # (ECN codepoints: packed in the arena's flags)
    out += [EXT / n for n in EXTERNAL if (EXT / n).exists()]
    return out


def _eager(path: Path):
    """The packets table and flows as the loader builds them when it must build the table."""
    tr = FlowTracker()
    pk, _meta, _w, tracked = read_packets(str(path), tracker=tr)
    assert tracked
    return capture._with_dir(pk, tr.a_side()), tr.table()


def _same_events(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for k in a:
        x, y = a[k], b[k]
        for name in ("segments", "acks", "episodes", "rounds"):
            assert_frame_equal(getattr(x, name), getattr(y, name))
        assert (x.sender_dir, x.mss, x.vantage, x.rtt_offset_s, [str(w) for w in x.warnings]) == (
            y.sender_dir,
            y.mss,
            y.vantage,
            y.rtt_offset_s,
            [str(w) for w in y.warnings],
        )


@pytest.mark.parametrize("reread", [True, False], ids=["read-again", "from-arena"])
@pytest.mark.parametrize("path", _paths(), ids=lambda p: p.parent.name if p.name == "capture.pcap" else p.name)
def test_packets_built_on_first_access_equal_the_eager_table(
    path: Path, reread: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a regular file is read again for its table; anything else (a pipe) keeps the columns
    if not reread:
        monkeypatch.setattr(capture, "_file_id", lambda _p: None)
    cap = capture.load(path)
    assert cap.decoded.arena.keep is not reread
    assert cap.decoded is not None
    assert isinstance(cap.__dict__["_packets"], Deferred)  # not built by load
    packets, flows = _eager(path)
    assert_frame_equal(cap.flows, flows)
    assert_frame_equal(cap.packets, packets)
    assert cap.meta.packets_tcp == packets.height
    assert (cap.meta.first_ns, cap.meta.last_ns) == (packets["ts_ns"].min(), packets["ts_ns"].max())


@pytest.mark.parametrize("path", _paths(), ids=lambda p: p.parent.name if p.name == "capture.pcap" else p.name)
def test_events_from_the_arena_equal_events_from_the_packets_table(path: Path) -> None:
    cap = capture.load(path)
    from_table = Capture(meta=cap.meta, packets=cap.packets, flows=cap.flows)  # no decoded columns
    assert from_table.decoded is None
    _same_events(all_flow_events(cap), all_flow_events(from_table))
    for fid in cap.flows["flow_id"].to_list()[:3]:
        _same_events({fid: flow_events(cap, fid)}, {fid: flow_events(from_table, fid)})


@pytest.mark.parametrize("path", _paths(), ids=lambda p: p.parent.name if p.name == "capture.pcap" else p.name)
def test_sack_packets_from_the_arena_equal_the_packet_tables_sack_rows(path: Path) -> None:
    """What the report's SACK blocks read, taken from the arena, equals those rows and columns of
    the packet table (frame order, nulls for blocks a packet did not carry) — and the pipeline's
    SACK blocks per flow are the same either way, without building the packet table."""
    import polars as pl

    from hscc_trace.analysis import pipeline
    from hscc_trace.events.sack import COLUMNS, sack_blocks

    cap = capture.load(path)
    got = cap.decoded.sack_packets()
    assert isinstance(cap.__dict__["_packets"], Deferred)  # the packet table was not built
    want = cap.packets.filter(pl.col("sack_n") > 0).select([c for c in cap.packets.columns if c in COLUMNS])
    assert_frame_equal(got, want)
    if path.name in ("tcptrace__dsack.pcap", "capture.pcap") and path.parent.name != "rwnd-limited":
        assert got.height > 0  # (495 on cubic-loss, 179 on dsack: not vacuous)
    prepared = pipeline.prepare_capture(str(path), None, None)
    from_table = Capture(meta=cap.meta, packets=cap.packets, flows=cap.flows)
    evs = all_flow_events(from_table)
    for _row, ev in prepared.events:
        assert_frame_equal(ev.sack_blocks, sack_blocks(cap.packets, evs[ev.flow_id]))


def test_tiny_blocks_and_a_one_row_reservation_grow_the_arena(monkeypatch: pytest.MonkeyPatch) -> None:
    # blocks of 3 rows: every flow is a long chain and blocks of different flows alternate; an
    # arena of 2 blocks doubles many times while reading (copying the blocks used so far); 256
    # flow slots are outgrown by none of these files, so also start with 1
    path = external("tcptrace__discard.solaris.pcap") / "tcptrace__discard.solaris.pcap"
    ref = capture.load(path)
    ref_events, ref_packets = all_flow_events(ref), ref.packets
    monkeypatch.setattr(source, "BLOCK", 3)
    monkeypatch.setattr(capture, "_rows_hint", lambda _p: 1)
    orig_init = source.Arena.__init__

    def small(self, rows_hint=1, keep=True):
        orig_init(self, rows_hint, keep)
        for name in ("head", "tail", "fill", "count"):
            setattr(self, name, getattr(self, name)[:1].copy())
        self.first = self.first[:1].copy()
        self.nxt, self.owner = self.nxt[:2].copy(), self.owner[:2].copy()  # room for 2 blocks
        self.cols = {k: v[: 2 * self.block].copy() for k, v in self.cols.items()}

    monkeypatch.setattr(source.Arena, "__init__", small)
    monkeypatch.setattr(capture, "_file_id", lambda _p: None)  # the table from the arena
    cap = capture.load(path)
    assert cap.flows.height > 1 and len(cap.decoded.arena.nxt) >= 64  # grew (doubling from 2 blocks)
    _same_events(all_flow_events(cap), ref_events)
    assert_frame_equal(cap.packets, ref_packets)


def test_narrow_arena_columns_widen_when_a_value_does_not_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    # the arena keeps frame numbers in 32 bits and payload lengths in 16 while they fit; here one
    # byte each, so frame numbers past 255 and payloads past 255 bytes widen them while reading
    path = REPO / "samples" / "cubic-loss" / "capture.pcap"
    ref = capture.load(path)
    ref_events, ref_packets = all_flow_events(ref), ref.packets
    assert ref_packets.height > 255 and ref_packets["payload_len"].max() > 255  # (not vacuous)
    narrow = tuple((name, np.uint8 if name in source._WIDE else dt) for name, dt in source._ARENA)
    monkeypatch.setattr(source, "_ARENA", narrow)
    monkeypatch.setattr(capture, "_file_id", lambda _p: None)  # the table from the arena
    cap = capture.load(path)
    cols = cap.decoded.arena.cols
    assert (cols["frame"].dtype, cols["payload_len"].dtype) == (np.uint64, np.uint32)
    _same_events(all_flow_events(cap), ref_events)
    assert_frame_equal(cap.packets, ref_packets)


def test_a_long_flows_pages_go_back_with_its_own_events(monkeypatch: pytest.MonkeyPatch) -> None:
    # two connections side by side: their blocks alternate in the arena, but past RUN_ROWS rows
    # each takes runs of blocks whose pages hold its rows alone, so releasing one flow's rows
    # gives those pages back while the other flow is still to be built
    from hscc_trace.perf import memory

    monkeypatch.setattr(memory, "dontneed", lambda a, n: True)  # (count, do not drop: the test reads on)
    cap = capture.load(REPO / "samples" / "reno-vs-cubic" / "capture.pcap")
    arena = cap.decoded.arena
    rows = arena.flow_rows(0, 1)
    other = arena.flow_rows(1, 2)
    assert rows.size > 4 * source.RUN_ROWS and other.size > 4 * source.RUN_ROWS
    row_bytes = sum(np.dtype(dt).itemsize for _n, dt in source._ARENA)
    # all but its first RUN_ROWS rows (single blocks) and its last run's partial pages
    assert arena.release(rows) >= (rows.size - 2 * source.RUN_ROWS) * row_bytes
    assert arena.release(other) >= (other.size - 2 * source.RUN_ROWS) * row_bytes
    memory.wait_background()  # (the memory thread's calls made while dontneed is still the stand-in)


def test_released_batches_come_fewest_packets_first() -> None:
    path = external("tcptrace__discard.solaris.pcap") / "tcptrace__discard.solaris.pcap"
    every = all_flow_events(capture.load(path))
    cap = capture.load(path)
    n = np.diff(cap.decoded.src.bounds)
    got = [fid for batch in flow_event_batches(cap, rows=1, flows=2, release=True) for fid, _ev in batch]
    assert got == sorted(range(n.size), key=lambda f: (n[f], f)) and got != sorted(got)  # (not the id order)
    kept = [fid for batch in flow_event_batches(capture.load(path), rows=1, flows=2) for fid, _ev in batch]
    assert kept == sorted(kept) == sorted(every)  # (without release: by flow id)


def test_records_for_scapy_make_load_build_the_table_eagerly() -> None:
    path = (
        external("tcptrace__ppp_encap.pcap") / "tcptrace__ppp_encap.pcap"
    )  # PPP: decoded by scapy, merged in frame order
    cap = capture.load(path)
    assert cap.decoded is None and not isinstance(cap.__dict__["_packets"], Deferred)
    assert cap.meta.decoded_by.get("scapy", 0) > 0
    assert all_flow_events(cap)


def test_assigning_packets_drops_the_decoded_columns_and_pickling_keeps_the_table() -> None:
    cap = capture.load(REPO / "samples" / "reno-bdp" / "capture.pcap")
    again = pickle.loads(pickle.dumps(cap))
    assert again.decoded is None  # the table travels, not the arena
    assert_frame_equal(again.packets, cap.packets)
    other = capture.load(REPO / "samples" / "cubic-loss" / "capture.pcap")
    cap.packets = other.packets
    assert cap.decoded is None  # the arena would describe the old table
    _same_events(all_flow_events(cap), all_flow_events(other))


def test_a_file_changed_after_loading_is_not_read_for_its_packets(tmp_path: Path) -> None:
    import shutil

    from hscc_trace.errors import InputError

    p = tmp_path / "c.pcap"
    shutil.copy(REPO / "samples" / "reno-bdp" / "capture.pcap", p)
    cap = capture.load(p)
    all_flow_events(cap)  # the events need only what load kept
    shutil.copy(REPO / "samples" / "cubic-loss" / "capture.pcap", p)
    with pytest.raises(InputError, match="changed after it was loaded"):
        _ = cap.packets


def test_deferred_builds_once() -> None:
    calls = []
    d = Deferred(lambda: calls.append(1) or "table")
    assert not d.built
    assert (d.get(), d.get(), d.built, len(calls)) == ("table", "table", True, 1)


@pytest.mark.parametrize("enabled", [True, False])
def test_load_leaves_the_garbage_collector_as_it_found_it(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        capture.load(REPO / "samples" / "reno-bdp" / "capture.pcap")
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


_IMPORT_PROBE = """
import atexit, gc, sys, threading
calls = []
atexit.register = lambda *a, **k: calls.append(a)  # any handler registered from here on
before = (gc.get_threshold(), gc.isenabled(), threading.active_count())
import hscc_trace, hscc_trace.api, hscc_trace.flows, hscc_trace.events, hscc_trace.replay.engine
import hscc_trace.reports, hscc_trace.analysis.pipeline, hscc_trace.cli
after = (gc.get_threshold(), gc.isenabled(), threading.active_count())
print(len([c for c in calls if (getattr(c[0], '__module__', None) or '').startswith('hscc_trace')]), before == after)
"""


def test_importing_the_library_changes_nothing_in_the_process() -> None:
    """No exit handler, garbage-collector setting or thread comes from ``import hscc_trace``
    (and its main modules)."""
    out = subprocess.run([sys.executable, "-c", _IMPORT_PROBE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "True"]
