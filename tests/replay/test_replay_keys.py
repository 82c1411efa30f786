"""Every replay row and export row carries the key of the ACK it answers: its frame number (as
Wireshark numbers it) and capture time, and joins to the ACK stream on the frame, not by position."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hscc_trace import schema
from hscc_trace.cli import main
from hscc_trace.replay import engine

REPO = Path(__file__).resolve().parents[2]
CAP = REPO / "samples" / "reno-bdp" / "capture.pcap"


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int | None, str]:
    old = sys.argv
    sys.argv = ["hscc-trace", *args]
    try:
        with pytest.raises(SystemExit) as exc:
            main()
    finally:
        sys.argv = old
    return exc.value.code, capsys.readouterr().err


def test_replay_base_starts_with_the_ack_key() -> None:
    assert [c.name for c in schema.REPLAY_BASE][:2] == ["frame", "ts_ns"]
    assert dict((c.name, c.dtype) for c in schema.REPLAY_BASE)["frame"] == pl.UInt64


def test_each_replay_row_carries_the_frame_of_its_ack() -> None:
    # Three ACKs whose frames are not their row numbers (7, 9, 20: segments and other flows'
    # packets sit between them in the capture). Row i of the replay answers ACK i, so the replay's
    # frames must be exactly [7, 9, 20] and its times those of the ACKs.
    from synthetic_analysis import make_flow

    acks = make_flow(n_acks=3).events.acks.with_columns(pl.Series("frame", [7, 9, 20], dtype=pl.UInt64))
    out = engine.replay(acks, 1448, ["reno"])["reno"]
    assert out["frame"].to_list() == [7, 9, 20]
    assert out["ts_ns"].to_list() == acks["ts_ns"].to_list()
    assert out.schema["frame"] == pl.UInt64
    # a prepared stream without frames (built by hand, as benchmarks/replay_speed.py does): null keys
    prep = engine.prepare(acks, 1448)
    bare = engine.Prepared(prep.ev, prep.ts_ns, prep.mss, prep.first_flight)
    assert engine.run("reno", bare)["frame"].null_count() == 3


@pytest.mark.skipif(not CAP.exists(), reason="sample missing")
def test_cli_replay_joins_the_ack_events_on_frame(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's check: `hscc-trace replay --flow 0 --algo reno -o r.parquet` and the ACK events of
    the same flow join on the frame number with no unmatched rows, on either side."""
    r, a = tmp_path / "r.parquet", tmp_path / "acks.parquet"
    code, err = _cli(["replay", str(CAP), "--flow", "0", "--algo", "reno", "-o", str(r)], capsys)
    assert code in (0, None), err
    code, err = _cli(["events", str(CAP), "--flow", "0", "--kind", "acks", "-o", str(a)], capsys)
    assert code in (0, None), err
    rep, acks = pl.read_parquet(r), pl.read_parquet(a)
    assert rep.columns[:3] == ["algo", "frame", "ts_ns"]
    assert rep["frame"].n_unique() == rep.height > 1000  # a key: one row per ACK
    assert rep.join(acks, on="frame", how="anti").height == 0  # every replay row finds its ACK
    assert acks.join(rep, on="frame", how="anti").height == 0  # every ACK has its replay row
    joined = rep.join(acks, on="frame", how="inner", suffix="_ack")
    assert joined.height == acks.height
    assert (joined["ts_ns"] == joined["ts_ns_ack"]).all()  # and the times agree
    # a shuffled replay still joins right: the key, not the position, pairs the rows
    shuffled = rep.sample(fraction=1.0, shuffle=True, seed=3)
    again = shuffled.join(acks, on="frame", how="inner", suffix="_ack").sort("frame")
    assert np.array_equal(again["ts_ns"].to_numpy(), again["ts_ns_ack"].to_numpy())


def test_exports_carry_the_key(tmp_path: Path) -> None:
    from synthetic_analysis import make_analysis

    from hscc_trace.analysis import export

    a = make_analysis(n_flows=1, n_acks=500)
    fr = a.captures[0].results[0]
    files = export.export_analysis(a, tmp_path, "csv", tables=("acks", "replay"))
    acks = pl.read_csv(next(f for f in files if f.name.endswith(".acks.csv")))
    rep = pl.read_csv(next(f for f in files if f.name.endswith(".replay.csv")))
    assert rep.columns[:3] == ["algo", "frame", "ts_ns"]
    assert rep.height == len(fr.replays) * acks.height
    for algo, part in rep.group_by("algo"):
        assert part.join(acks, on="frame", how="anti").height == 0, algo
        assert acks.join(part, on="frame", how="anti").height == 0, algo
