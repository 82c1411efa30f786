"""Corpus runs on a real Dask LocalCluster (2 worker processes, no mocks): the Parquet dataset
equals the serial analysis table for table, a crashing worker loses no other capture, and a
second run skips everything."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from hscc_trace import api
from hscc_trace.corpus import census, inputs, runner
from hscc_trace.corpus import dataset as ds

REPO = Path(__file__).resolve().parent.parent
EXTERNAL = REPO.parent / "shared" / "captures" / "external"
ALGOS = ["reno", "cubic"]


def _corpus(tmp: Path) -> list[str]:
    """Real captures: the samples (reno-bdp, cubic-loss, bbr), two small external ones, and one
    file that is not a capture at all."""
    files = [REPO / "samples" / n / "capture.pcap" for n in ("reno-bdp", "cubic-loss", "bbr")]
    files += [
        EXTERNAL / "ODD__ns3__ns3tcp-loss-NewReno4-response-vectors.pcap",
        EXTERNAL / "ODD__mlab-packet-headers__v6-cut-short.pcap",
    ]
    out = []
    for i, f in enumerate(files):
        assert f.exists(), f
        dst = tmp / "in" / f"{i}-{f.parent.name if f.name == 'capture.pcap' else f.stem}.pcap"
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dst)
        out.append(str(dst))
    bad = tmp / "in" / "9-not-a-capture.pcap"
    bad.write_bytes(b"this is not a pcap file\n" * 4)
    out.append(str(bad))
    return out


def _sorted(df: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    drop = [c for c in (*ds.TIMING_COLUMNS, "sha256") if c in df.columns]
    return df.drop(drop).sort(keys)


@pytest.mark.slow
def test_local_cluster_matches_serial_crash_and_resume(tmp_path, monkeypatch):
    items = _corpus(tmp_path)
    crash = tmp_path / "in" / "crash-me.pcap"
    shutil.copy(REPO / "samples" / "reno-loss" / "capture.pcap", crash)
    monkeypatch.setenv(runner.CRASH_ENV, crash.name)
    out = tmp_path / "ds"
    seen = []
    st = runner.run([*items, str(crash)], out, ALGOS, workers=2, progress=lambda s, x: seen.append(x))
    # 4 readable captures analyzed; the non-capture, the ns-3 capture (link type 0x4, not supported
    # by the reader) and the crashing one are error rows
    assert (st.ok, st.skipped, len(st.errors)) == (4, 0, 3)
    assert len(seen) == 7
    errs = ds.read(out, "errors").sort("capture")
    assert dict(zip(errs["capture"].map_elements(lambda p: Path(p).name, return_dtype=pl.String), errs["reason"])) == {
        "crash-me.pcap": "worker_died",
        "9-not-a-capture.pcap": "unreadable",
        "3-ODD__ns3__ns3tcp-loss-NewReno4-response-vectors.pcap": "unreadable",
    }

    # the serial run, capture by capture (the same algorithms), table for table
    good = [items[i] for i in (0, 1, 2, 4)]
    serial = [api.analyze(p, ALGOS) for p in good]
    flows_serial = pl.concat([api.flow_table(a) for a in serial], how="diagonal_relaxed")
    fits_serial = pl.concat([api.fit_table(a) for a in serial], how="diagonal_relaxed")
    flows = ds.read(out, "flows")
    fits = ds.read(out, "fits")
    assert flows.height == flows_serial.height > 0
    assert _sorted(flows, ["capture", "flow_id"]).equals(
        _sorted(flows_serial.select(flows.drop("sha256").columns), ["capture", "flow_id"])
    )
    assert _sorted(fits, ["capture", "flow_id", "algo"]).equals(
        _sorted(fits_serial.select(fits.drop("sha256").columns), ["capture", "flow_id", "algo"])
    )
    caps = ds.read(out, "captures")
    assert sorted(caps["capture"].to_list()) == sorted(good)
    assert caps["packets_total"].sum() == sum(a.captures[0].meta.packets_total for a in serial)
    n_eps = sum(fr.events.episodes.height for a in serial for fr in a.captures[0].results)
    assert ds.read(out, "episodes").height == n_eps > 0

    # readable by polars directly
    assert pl.scan_parquet(str(out / "flows" / "*.parquet")).select(pl.len()).collect().item() == flows.height

    # second run: everything (analyzed or recorded as an error) is skipped by content hash
    monkeypatch.delenv(runner.CRASH_ENV)
    st2 = runner.run([*items, str(crash)], out, ALGOS, workers=2)
    assert (st2.ok, st2.skipped, len(st2.errors)) == (0, 7, 0)

    page = census.build(out)
    assert "Content-Security-Policy" in page and "crash-me.pcap" in page and "worker_died" in page
    assert "http://" not in page.split("<script>")[0] and "https://" not in page.split("<script>")[0]


def test_inputs_list_globs_and_missing(tmp_path):
    a = tmp_path / "a.pcap"
    b = tmp_path / "sub" / "b.pcap.gz"
    b.parent.mkdir()
    a.write_bytes(b"x")
    b.write_bytes(b"y")
    (tmp_path / "notes.txt").write_text("z")
    lst = tmp_path / "list.txt"
    lst.write_text(f"# corpus\n{a}\n\n{tmp_path}/sub/*.gz\n")
    assert inputs.read_list(lst) == [str(a), f"{tmp_path}/sub/*.gz"]
    assert inputs.expand(inputs.read_list(lst)) == [str(a), str(b)]
    assert inputs.expand([str(tmp_path)]) == [str(a), str(b)]  # directory: captures only
    assert inputs.expand(["gs://bucket/x.pcap.gz"]) == ["gs://bucket/x.pcap.gz"]
    from hscc_trace.errors import InputError

    with pytest.raises(InputError):
        inputs.expand([str(tmp_path / "nothing*.pcap")])
