"""The sending kernel's truth beside a capture (hscc_trace.analysis.truth) and the report drawing
it with the replays (reports/figures.py).

ctcp-bdp is a BPF Compound TCP sender (samples/README.md): its folder holds ``truth_probe.parquet``
(tcp_probe's ``snd_cwnd`` per ACK the sender processed) and ``truth_signals.parquet`` (the
program's own ``dwnd``, ``cwnd_loss``, ``win``, ``diff``, ``gamma`` … per ACK or round, in packets).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hscc_trace import api
from hscc_trace.analysis import truth
from hscc_trace.reports.figures import build_flow, flow_t0

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
CTCP = SAMPLES / "ctcp-bdp" / "capture.pcap.gz"


@pytest.fixture(scope="module")
def ctcp():
    (fr,) = api.analyze(CTCP, api.AnalyzeOptions(["compound", "reno"])).analysis.captures[0].results
    return fr


def test_truth_is_attached_from_the_files_beside_the_capture(ctcp):
    kt = ctcp.truth
    assert kt is not None and kt.algo == "compound" and Path(kt.source) == CTCP.parent
    probes = pl.read_parquet(CTCP.parent / truth.PROBE).filter(pl.col("sport") == 40001)
    # most probes find their ACK (the capture was taken at the sender); each window row is one
    assert truth.MIN_MATCHED * probes.height <= kt.window.height <= probes.height
    assert kt.window["ts_ns"].is_sorted()
    # every row sits on one of the flow's ACKs, and the window is the kernel's: the replay of the
    # same algorithm at the same ACKs is within a few per cent of it (docs/replay.md's fidelity)
    acks = set(ctcp.events.acks["frame"].to_list())
    assert set(kt.window["frame"].to_list()) <= acks
    j = kt.window.join(ctcp.replays["compound"].select("frame", "cwnd"), on="frame")
    err = np.abs(j["cwnd"].to_numpy() / j["snd_cwnd"].to_numpy() - 1)
    assert np.median(err) < 0.02
    assert kt.signals is not None
    assert {"dwnd", "cwnd_loss", "win", "diff", "gamma"} <= set(kt.signals.columns)
    assert "event" not in kt.signals.columns and "sport" not in kt.signals.columns  # variables only
    assert set(kt.signals["frame"].to_list()) <= acks


def test_report_draws_the_kernel_window_and_signals_with_the_replay(ctcp):
    ff = build_flow(ctcp)
    window = [tr for row in ff.blocks["window"].rows for tr in row.traces]
    (kw,) = [tr for tr in window if tr["name"] == "kernel: snd_cwnd (tcp_probe)"]
    assert "magenta" in ff.blocks["window"].title
    # the drawn points are the kernel's values at those times (a reduction keeps real points)
    w = ctcp.truth.window
    drawn = dict(zip(np.round((w["ts_ns"].to_numpy() - flow_t0(ctcp)) / 1e9, 6), w["snd_cwnd"].to_numpy()))
    assert len(kw["y"]) > 10  # at the ACKs' times on the flow's time axis, each with its value
    assert all(drawn[round(float(x), 6)] == y for x, y in zip(kw["x"], kw["y"]))
    algo = ff.blocks["algo:compound"]
    names = {tr["name"] for row in algo.rows for tr in row.traces}
    stacked = "kernel: dwnd (stacked on its loss-based part)"
    assert {"kernel: snd_cwnd (tcp_probe)", stacked, "kernel: cwnd_loss", "kernel: diff"} <= names
    assert "compound cwnd" in names and "dwnd (delay-based part, stacked on it)" in names
    # the replay's dwnd is drawn stacked on cwnd_loss, so the kernel's is too: each marker is the
    # program's cwnd_loss + dwnd of one line (and its diff markers are its diff)
    ks = ctcp.truth.signals
    (kd,) = [tr for row in algo.rows for tr in row.traces if tr["name"] == stacked]
    assert kd["mode"] == "markers" and len(kd["y"]) > 10
    top = np.round((ks["cwnd_loss"] + ks["dwnd"]).to_numpy(), 6)
    assert set(np.round(kd["y"], 6)) <= set(top)
    assert not set(np.round(kd["y"], 6)) <= set(np.round(ks["dwnd"].to_numpy(), 6))
    (kf,) = [tr for row in algo.rows for tr in row.traces if tr["name"] == "kernel: diff"]
    assert set(np.round(kf["y"], 6)) <= set(np.round(ks["diff"].to_numpy(), 6))
    # another algorithm's panel has no kernel values: they belong to the algorithm the sender ran
    reno = {tr["name"] for row in ff.blocks["algo:reno"].rows for tr in row.traces}
    assert not any(n.startswith("kernel:") for n in reno)


def test_no_truth_without_the_files(tmp_path):
    shutil.copy(CTCP, tmp_path / "capture.pcap.gz")
    (fr,) = api.analyze(tmp_path / "capture.pcap.gz", api.AnalyzeOptions(["compound"])).analysis.captures[0].results
    assert fr.truth is None
    names = {tr["name"] for row in build_flow(fr).blocks["window"].rows for tr in row.traces}
    assert not any(n.startswith("kernel:") for n in names)
    assert truth.truth_dir("-") is None


def test_no_truth_when_the_probes_do_not_match_this_capture():
    """A receiver-side capture: the sender's probes are a one-way delay away from the ACKs seen
    there, beyond the alignment's clock search, so fewer than MIN_MATCHED match and nothing is
    drawn rather than a misaligned window."""
    (fr,) = (
        api.analyze(SAMPLES / "reno-bdp-receiver" / "capture.pcap", api.AnalyzeOptions(["reno"]))
        .analysis.captures[0]
        .results
    )
    assert truth.truth_dir(SAMPLES / "reno-bdp-receiver" / "capture.pcap") is not None
    assert fr.truth is None


def test_a_bad_truth_file_costs_the_overlay_not_the_flow(tmp_path):
    """Truth files are anyone's: a probe table whose ``sport`` is text (polars cannot compare it
    with the port) leaves the flow analyzed, with a warning naming the problem, and no truth."""
    shutil.copy(CTCP, tmp_path / "capture.pcap.gz")
    probe = pl.read_parquet(CTCP.parent / truth.PROBE)
    probe.with_columns(pl.col("sport").cast(pl.String)).write_parquet(tmp_path / truth.PROBE)
    (fr,) = api.analyze(tmp_path / "capture.pcap.gz", api.AnalyzeOptions(["compound"])).analysis.captures[0].results
    assert fr.truth is None and "compound" in fr.replays and fr.fit.height == 1
    (w,) = [w for w in fr.warnings if "kernel truth" in w.message]
    assert w.source == str(tmp_path) and "ComputeError" in w.message


def test_probe_rows_without_a_port_are_rows_of_no_flow(tmp_path):
    # a probe table with some null ports: those rows are ignored (as the filter by port did),
    # the flow's own rows still give its truth
    shutil.copy(CTCP, tmp_path / "capture.pcap.gz")
    probe = pl.read_parquet(CTCP.parent / truth.PROBE)
    nulls = probe.head(50).with_columns(pl.lit(None, dtype=probe.schema["sport"]).alias("sport"))
    pl.concat([nulls, probe]).write_parquet(tmp_path / truth.PROBE)
    (fr,) = api.analyze(tmp_path / "capture.pcap.gz", api.AnalyzeOptions(["compound"])).analysis.captures[0].results
    assert fr.truth is not None and not [w for w in fr.warnings if "kernel truth" in w.message]
    (ref,) = api.analyze(CTCP, api.AnalyzeOptions(["compound"])).analysis.captures[0].results
    assert fr.truth.window.equals(ref.truth.window)
