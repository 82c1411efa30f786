"""SACK blocks in the event streams' sequence space (hscc_trace.events.sack.sack_blocks).

What can break in the vectorized pass: the 32-bit arithmetic (an edge past the wrap of the raw
sequence space, a D-SACK block below the ACK, a block straddling the wrap), which packets count
(the receiver's packets of this flow that are in the ACK stream, never the sender's own SACKs or
another flow's), the join to the ACK stream (a packet matches every ACK row of its frame, in
whatever order that stream is), nulls (absent edges, a missing raw ACK) and the total order of the
rows. The expected values are worked by hand below; the real captures are compared with the
polars query this pass replaced (:func:`_query`, kept here as the reference).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from hscc_trace import schema
from hscc_trace.events.sack import sack_blocks, with_sack_blocks
from hscc_trace.model import FlowEvents

REPO = Path(__file__).resolve().parents[2]
from conftest import EXTERNAL  # noqa: E402

EDGES = [f"sack_{e}{i}" for i in range(4) for e in ("l", "r")]
W = 1 << 32


def _events(frames: list[int], ts: list[int], acks: list[int], *, flow_id: int = 0, sender_dir: int = 0) -> FlowEvents:
    """A flow whose ACK stream is these frames, times and relative ACKs (what sack_blocks reads)."""
    a = pl.DataFrame(
        {"frame": frames, "ts_ns": ts, "ack": acks}, schema={"frame": pl.UInt64, "ts_ns": pl.Int64, "ack": pl.Int64}
    )
    empty = pl.DataFrame()
    return FlowEvents(flow_id, sender_dir, 1448, "sender", empty, a, empty, empty)


def _packets(rows: list[dict]) -> pl.DataFrame:
    """schema.PACKETS' SACK columns of these rows (absent edges null)."""
    cols = {c: [r.get(c) for r in rows] for c in ("frame", "flow_id", "dir", "ack", "sack_n", *EDGES)}
    dtype = {c.name: c.dtype for c in schema.PACKETS}
    return pl.DataFrame(cols, schema={c: dtype[c] for c in cols})


def _rows(sb: pl.DataFrame) -> list[tuple]:
    assert sb.schema == pl.Schema({c.name: c.dtype for c in schema.SACK_BLOCKS})
    return sb.rows()


def test_edges_past_the_wrap_and_dsack_below_the_ack() -> None:
    ev = _events([10, 12, 14, 16], [1000, 2000, 3000, 4000], [5000, 6448, 7896, 7896])
    pk = _packets(
        [
            # raw ack 2³² − 100 (relative 5000); the block starts 1448 above it, past the wrap:
            #   left  = (2³² − 100 + 1448) mod 2³² = 1348  → 5000 + signed32(1348 − (2³² − 100)) = 5000 + 1448 = 6448
            #   right = 1348 + 1448 = 2796                  → 5000 + 2896 = 7896
            {"frame": 10, "flow_id": 0, "dir": 1, "ack": W - 100, "sack_n": 1, "sack_l0": 1348, "sack_r0": 2796},
            # raw ack 50 (relative 6448); a D-SACK block 1448…1000 bytes below it, straddling the wrap,
            # then an RFC 2018 block 500…900 above it:
            #   D-SACK left  = 2³² − 1398: signed32(2³² − 1398 − 50) = −1448 → 6448 − 1448 = 5000
            #   D-SACK right = 2³² − 950:  signed32(2³² − 950 − 50)  = −1000 → 6448 − 1000 = 5448
            #   block 1: 550 → 6448 + 500 = 6948; 950 → 6448 + 900 = 7348
            {
                "frame": 12,
                "flow_id": 0,
                "dir": 1,
                "ack": 50,
                "sack_n": 2,
                "sack_l0": W - 1398,
                "sack_r0": W - 950,
                "sack_l1": 550,
                "sack_r1": 950,
            },
            # raw ack 1498 (relative 7896): three blocks, the highest first (rows: by left edge)
            {"frame": 14, "flow_id": 0, "dir": 1, "ack": 1498, "sack_n": 3}
            | {"sack_l0": 3000, "sack_r0": 3100, "sack_l1": 2000, "sack_r1": 2100, "sack_l2": 1600, "sack_r2": 1700},
            # frame 16 carries no block (sack_n 0, edges null): no row
            {"frame": 16, "flow_id": 0, "dir": 1, "ack": 1498, "sack_n": 0},
        ]
    )
    assert _rows(sack_blocks(pk, ev)) == [
        (10, 1000, 6448, 7896),
        (12, 2000, 5000, 5448),
        (12, 2000, 6948, 7348),
        (14, 3000, 7896 + 102, 7896 + 202),
        (14, 3000, 7896 + 502, 7896 + 602),
        (14, 3000, 7896 + 1502, 7896 + 1602),
    ]


def test_only_this_flows_receiver_packets_in_the_ack_stream() -> None:
    ev = _events([3, 5], [30, 50], [100, 200], flow_id=7, sender_dir=1)  # the receiver sends dir 0
    block = {"ack": 1000, "sack_n": 1, "sack_l0": 1010, "sack_r0": 1020}
    pk = _packets(
        [
            {"frame": 3, "flow_id": 7, "dir": 0, **block},  # kept: 100 + 10, 100 + 20
            {"frame": 4, "flow_id": 7, "dir": 0, **block},  # not in the ACK stream
            {"frame": 5, "flow_id": 7, "dir": 1, **block},  # the sender's own packet
            {"frame": 5, "flow_id": 8, "dir": 0, **block},  # another flow's
            {"frame": None, "flow_id": 7, "dir": 0, **block},  # no frame: joins nothing
        ]
    )
    assert _rows(sack_blocks(pk, ev)) == [(3, 30, 110, 120)]


def test_flows_without_sack_blocks_have_an_empty_table() -> None:
    ev = _events([1, 2], [10, 20], [0, 1448])
    empty = sack_blocks(_packets([{"frame": 1, "flow_id": 0, "dir": 1, "ack": 1, "sack_n": 0}]), ev)
    assert _rows(empty) == []
    assert _rows(sack_blocks(_packets([]), ev)) == []
    assert _rows(sack_blocks(_packets([{"frame": 1, "flow_id": 0, "dir": 1, "ack": 1, "sack_n": 1}]), ev)) == []
    no_acks = _events([], [], [])
    pk = _packets([{"frame": 1, "flow_id": 0, "dir": 1, "ack": 1, "sack_n": 1, "sack_l0": 2, "sack_r0": 3}])
    assert _rows(sack_blocks(pk, no_acks)) == []


def test_rows_are_ordered_by_time_frame_left_right_and_joined_like_a_join() -> None:
    # the ACK stream out of frame order, and frame 9 twice in it (each ACK row gets the blocks)
    ev = _events([9, 2, 9], [90, 20, 95], [1000, 500, 2000])
    pk = _packets(
        [
            # frame 9 (raw ack 100): blocks with the same left edge, listed right edge first
            {"frame": 9, "flow_id": 0, "dir": 1, "ack": 100, "sack_n": 2, "sack_l0": 150, "sack_r0": 300}
            | {"sack_l1": 150, "sack_r1": 200},
            # frame 2 (raw ack 7): blocks 3 and 0 only (1 and 2 null), the later one below
            {"frame": 2, "flow_id": 0, "dir": 1, "ack": 7, "sack_n": 4, "sack_l3": 17, "sack_r3": 27}
            | {"sack_l0": 57, "sack_r0": 67},
            # a right edge without its left: no block
            {"frame": 2, "flow_id": 0, "dir": 1, "ack": 7, "sack_n": 1, "sack_r0": 8},
        ]
    )
    assert _rows(sack_blocks(pk, ev)) == [
        (2, 20, 510, 520),
        (2, 20, 550, 560),
        (9, 90, 1050, 1100),
        (9, 90, 1050, 1200),
        (9, 95, 2050, 2100),
        (9, 95, 2050, 2200),
    ]


def test_a_missing_raw_ack_gives_null_edges_first() -> None:
    ev = _events([1, 2], [10, 10], [100, 200])
    pk = _packets(
        [
            {"frame": 1, "flow_id": 0, "dir": 1, "ack": 0, "sack_n": 1, "sack_l0": 5, "sack_r0": 6},
            {"frame": 2, "flow_id": 0, "dir": 1, "ack": None, "sack_n": 1, "sack_l0": 5, "sack_r0": 6},
        ]
    )
    sb = sack_blocks(pk, ev)
    assert _rows(sb) == [(1, 10, 105, 106), (2, 10, None, None)]
    assert_frame_equal(sb, _query(pk, ev))


def _query(packets: pl.DataFrame, events: FlowEvents) -> pl.DataFrame:
    """The polars query sack_blocks was before its vectorized pass (the reference)."""

    def signed32(expr: pl.Expr) -> pl.Expr:
        m = expr % (1 << 32)
        return pl.when(m >= (1 << 31)).then(m - (1 << 32)).otherwise(m)

    rx = (
        packets.lazy()
        .filter(
            (pl.col("flow_id") == events.flow_id) & (pl.col("dir") == 1 - events.sender_dir) & (pl.col("sack_n") > 0)
        )
        .select(
            "frame",
            pl.col("ack").cast(pl.Int64).alias("ack_raw"),
            *(pl.col(f"sack_{e}{i}").cast(pl.Int64) for i in range(4) for e in ("l", "r")),
        )
        .join(events.acks.lazy().select("frame", "ts_ns", pl.col("ack").alias("ack_rel")), on="frame", how="inner")
    )
    parts = []
    for i in range(4):
        left, right = pl.col(f"sack_l{i}"), pl.col(f"sack_r{i}")
        parts.append(
            rx.filter(left.is_not_null() & right.is_not_null()).select(
                "frame",
                "ts_ns",
                (pl.col("ack_rel") + signed32(left - pl.col("ack_raw"))).alias("left"),
                (pl.col("ack_rel") + signed32(right - pl.col("ack_raw"))).alias("right"),
            )
        )
    out = pl.concat(parts).sort("ts_ns", "frame", "left", "right").collect()
    return schema.conform(out, schema.SACK_BLOCKS)


CAPTURES = [REPO / "samples" / s / "capture.pcap" for s in ("cubic-loss", "reno-vs-cubic", "reno-bdp-receiver")] + [
    EXTERNAL / n for n in ("tcptrace__dsack.pcap", "tcptrace__discard.solaris.pcap", "zeek__irc-dcc-send.pcapng")
]


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.parent.name if p.name == "capture.pcap" else p.name)
def test_every_flow_of_real_captures_as_the_query_did(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} not present")
    from hscc_trace.events import all_flow_events
    from hscc_trace.flows.ingest import load

    cap = load(str(path))
    evs = all_flow_events(cap)
    blocks = 0
    for ev in with_sack_blocks(cap, list(evs.values())):
        assert ev is not None and ev.sack_blocks is not None
        assert_frame_equal(ev.sack_blocks, _query(cap.packets, ev))
        blocks += ev.sack_blocks.height
    if path.name == "tcptrace__dsack.pcap" or path.parent.name == "cubic-loss":
        assert blocks > 0  # (not vacuous)


# ---- the compiled pass over a batch's SACK entries from load's arena (SackGroups.blocks) --------


def _arrays(rows: list[dict]) -> object:
    """The arena's SACK entries (hscc_trace.flows.arena.SackRows) of these rows, flow 0 only; an
    absent edge is 0 there (a block is present when its index is below sack_n)."""
    import numpy as np

    from hscc_trace.flows.arena import SackRows

    def col(name: str, dtype: type) -> np.ndarray:
        return np.array([r.get(name) or 0 for r in rows], dtype)

    n = len(rows)
    perm = np.arange(n, dtype=np.int32)[::-1].copy()  # (entry i's edges at row n - 1 - i)
    edges = tuple(np.array([r.get(e) or 0 for r in rows[::-1]], np.uint32) for e in EDGES)
    return SackRows(
        flows=np.array([0], np.int64),
        lo=np.array([0], np.int64),
        hi=np.array([n], np.int64),
        frame=col("frame", np.uint32),
        dir=col("dir", np.uint8),
        ack=col("ack", np.uint32),
        sack_n=col("sack_n", np.uint8),
        perm=perm,
        edges=edges,
    )


def _groups(rows: list[dict]) -> object:
    from hscc_trace.events.sack import SackGroups

    return SackGroups(pl.DataFrame(), rows_of=lambda ids: _packets(rows), arrays_of=lambda ids: _arrays(rows)).only([0])


BATCH_ROWS = [
    {"frame": 10, "flow_id": 0, "dir": 1, "ack": W - 100, "sack_n": 1, "sack_l0": 1348, "sack_r0": 2796},
    {"frame": 11, "flow_id": 0, "dir": 0, "ack": 7, "sack_n": 1, "sack_l0": 1, "sack_r0": 2},  # the sender's own
    {"frame": 12, "flow_id": 0, "dir": 1, "ack": 50, "sack_n": 2}
    | {"sack_l0": W - 1398, "sack_r0": W - 950, "sack_l1": 550, "sack_r1": 950},
    {"frame": 13, "flow_id": 0, "dir": 1, "ack": 9, "sack_n": 1, "sack_l0": 10, "sack_r0": 20},  # not in the ACKs
    {"frame": 14, "flow_id": 0, "dir": 1, "ack": 1498, "sack_n": 4}
    | {"sack_l0": 3000, "sack_r0": 3100, "sack_l1": 2000, "sack_r1": 2100, "sack_l2": 1600, "sack_r2": 1700}
    | {"sack_l3": 1600, "sack_r3": 1650},
]


@pytest.mark.parametrize(
    ("frames", "ts", "compiled"),
    [
        ([10, 12, 14, 16], [1000, 2000, 3000, 4000], True),
        ([10, 12, 14, 16], [1000, 2000, 2000, 4000], True),  # the same time: by frame
        ([10, 12, 14, 16], [1000, 3000, 2000, 4000], False),  # time goes back: sorted as sack_blocks does
        ([10, 14, 12, 16], [1000, 2000, 3000, 4000], False),  # the ACK stream out of frame order
        ([10, 12, 12, 14], [1000, 2000, 2500, 3000], False),  # a frame twice in it
    ],
)
def test_the_compiled_pass_over_arena_entries_equals_sack_blocks(
    frames: list[int], ts: list[int], compiled: bool
) -> None:
    from hscc_trace.events import sack

    ev = _events(frames, ts, [5000, 6448, 7896, 7896])
    g = _groups(BATCH_ROWS)
    assert (sack._blocks_of(_arrays(BATCH_ROWS), 0, ev) is not None) == compiled
    want = sack_blocks(_packets(BATCH_ROWS), ev)
    assert want.height >= 6  # (not vacuous: the wrap, the D-SACK block, four blocks sorted)
    assert_frame_equal(g.blocks(ev), want)
    assert_frame_equal(g.blocks(_events([], [], [])), sack_blocks(_packets(BATCH_ROWS), _events([], [], [])))
