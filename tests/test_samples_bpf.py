"""The samples of the BPF congestion controls (samples/testbed/cc/, issue #18).

Each such sample's sender ran one of the testbed's BPF ``tcp_congestion_ops`` (meta.json →
flows[].bpf records which, built from what), and its ``truth_signals.parquet`` holds the program's
own state, dumped by the program itself. These tests check that the dump is complete and on the
capture's clock, that the samples were made from the sources in the repository, and that each
sample shows the behaviour its description (index.json → shows) claims — computed from the kernel's
truth and the dumped signals. No root, no analyzer (the generic checks of tests/test_samples.py
run on these samples too).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"

_spec = importlib.util.spec_from_file_location("hscc_samples_bpfcc", SAMPLES / "testbed" / "bpfcc.py")
bpfcc = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bpfcc
_spec.loader.exec_module(bpfcc)

INDEX = json.loads((SAMPLES / "index.json").read_text())["samples"]
BPF = sorted(e["name"] for e in INDEX if any(f["cc"] in bpfcc.SENDERS for f in e["flows"]))
EVENTS = set(bpfcc.EVENTS.values())


@functools.cache
def meta(name: str) -> dict:
    return json.loads((SAMPLES / name / "meta.json").read_text())


@functools.cache
def signals(name: str) -> pl.DataFrame:
    return pl.read_parquet(SAMPLES / name / "truth_signals.parquet")


@functools.cache
def probe(name: str) -> pl.DataFrame:
    return pl.read_parquet(SAMPLES / name / "truth_probe.parquet")


def test_every_sender_has_samples_on_two_paths():
    # issue #18: each algorithm under at least two paths
    per_cc: dict[str, set[str]] = {}
    for name in BPF:
        for fl in meta(name)["flows"]:
            per_cc.setdefault(fl["cc"], set()).add(name)
    # the open-set zoo (kernel_source set) has its own samples under samples/zoo/ (tests/test_zoo.py)
    assert set(per_cc) == {n for n, s in bpfcc.SENDERS.items() if not s.kernel_source}
    assert all(len(v) >= 2 for v in per_cc.values()), per_cc


@pytest.mark.parametrize("name", BPF)
def test_made_from_the_committed_sources(name):
    # the BPF program that ran is the one in samples/testbed/cc/ now (its file + the headers)
    for fl in meta(name)["flows"]:
        b = fl["bpf"]
        assert b["name"] == fl["cc"] and fl["algo"] == bpfcc.SENDERS[fl["cc"]].algo
        assert b["source"] == f"samples/testbed/cc/{bpfcc.SENDERS[fl['cc']].source}"
        assert b["sources_sha256"] == bpfcc.sources_sha256(fl["cc"]), f"{name}: remake it (make_bpf.sh)"
        assert fl["sender_stats"]["cc"] == fl["cc"]  # the kernel's own TCP_INFO: the socket ran it


@pytest.mark.parametrize("name", BPF)
def test_truth_signals_are_the_declared_fields(name):
    s = signals(name)
    (fl,) = meta(name)["flows"]
    fields = bpfcc.signal_fields(fl["cc"])
    assert s.columns == ["ts_ns", "sport", "event", *[c for c, _ in fields]]
    assert s["ts_ns"].is_sorted() and s.height > 0
    assert set(s["event"].unique()) <= EVENTS
    assert (s["sport"] == fl["sport"]).all()
    assert meta(name)["truth_signals"]["rows"] == s.height
    for c, q in fields:
        assert s.schema[c] == (pl.Float64 if q else pl.Int64), c
    # on the capture clock, within the transfer the probes cover (the sender closes only when all
    # its data is acknowledged: make_bpf.sh runs with --wait-acked)
    p = probe(name)
    assert meta(name)["sender_waits_for_acks_before_close"]
    # (a line may come from the handshake's ACK, one RTT before the first probe)
    assert s["ts_ns"].min() >= p["ts_ns"].min() - 200_000_000 and s["ts_ns"].max() <= p["ts_ns"].max() + 500_000_000


# senders whose per-ACK / per-round lines carry the window as it leaves the hook (the next
# tcp_probe, which fires before the next ACK is processed, must show it)
AFTER_GROWTH = {
    "bpf_vegas": "round",
    "bpf_highspeed": "ack",
    "bpf_fusion": "ack",
    "bpf_hrf": "ack",
    "bpf_hrf_cr": "ack",
    "bpf_hrf_ci": "ack",
    "bpf_hrf_wcrreno": "ack",
    "bpf_hrf_wcrcr": "ack",
    "bpf_ktcp_hs": "ack",
    "bpf_ktcp_cubic": "ack",
}


@pytest.mark.parametrize("name", [n for n in BPF if meta(n)["flows"][0]["cc"] in AFTER_GROWTH])
def test_signals_are_on_the_probe_clock(name):
    # a line emitted while the kernel processed ACK k shows the window the probe of ACK k + 1
    # reads: both come from the same tracefs instance (one clock) mapped with the same offset
    cc = meta(name)["flows"][0]["cc"]
    s = signals(name).filter(pl.col("event") == AFTER_GROWTH[cc])
    p = probe(name)
    i = np.searchsorted(p["ts_ns"].to_numpy(), s["ts_ns"].to_numpy(), side="right")
    ok = i < p.height
    nxt = p["snd_cwnd"].to_numpy()[i[ok]]
    agree = np.mean(nxt == s["snd_cwnd"].to_numpy()[ok])
    assert ok.sum() >= 2 and agree >= 0.9, f"{name}: {agree:.3f} of {ok.sum()} lines"


def losses(name: str) -> pl.DataFrame:
    return signals(name).filter(pl.col("event") == "loss")


# --- what each sample claims (index.json → shows) -----------------------------------------


def test_vegas_deepbuf_settles_alpha_to_beta_packets_above_the_bdp_without_loss():
    # BDP = 10 Mbit/s · 41.4 ms (base RTT with serialization) / (1500 B · 8) = 34.5 packets;
    # Vegas holds α = 2 .. β = 4 packets queued, diff = cwnd·(RTT − baseRTT)/baseRTT, moving cwnd
    # by ±1 per round: after the first 2 s the median diff is in [2, 4] and cwnd (bar the last
    # steps down from the slow-start exit) in [34 + 2, 34 + 2·4]; no loss after the slow-start exit
    # (which can come one doubling late and overflow the buffer: the round's minimum RTT is taken
    # from its first packets, before the queue of that round builds)
    s = signals("vegas-deepbuf")
    assert 2 in s["adjust"].to_list()  # left slow start on diff > γ = 1
    late = s.filter((pl.col("ts_ns") > s["ts_ns"].min() + 2_000_000_000) & (pl.col("cnt_rtt") > 2))
    assert late.height > 20 and 2 <= late["diff"].median() <= 4
    assert late["snd_cwnd"].is_between(34 + 2, 34 + 8).mean() > 0.9 and late["adjust"].is_in([-1, 0, 1]).all()
    ca = pl.read_parquet(SAMPLES / "vegas-deepbuf" / "truth_ca_state.parquet")
    assert ca.filter((pl.col("state") == "recovery") & (pl.col("ts_ns") > late["ts_ns"].min())).height == 0


def test_westwood_sets_cwnd_to_bandwidth_times_rttmin_after_recovery():
    for name in ("westwood-loss", "westwood-bdp"):
        s = signals(name).filter((pl.col("event") == "cwnd_event") & (pl.col("event_code") == 2))
        assert s.height >= 3, name
        # CA_EVENT_COMPLETE_CWR: cwnd = ssthresh = max(bw_est·rtt_min/MSS, 2), MSS 1448
        exp = np.maximum(s["bw_est"].to_numpy() * s["rtt_min_j"].to_numpy() // 1448, 2)
        assert (s["bw_rttmin"].to_numpy() == exp).all()
        assert (s["snd_cwnd"] == s["bw_rttmin"]).all() and (s["ssthresh"] == s["bw_rttmin"]).all()
        # and the kernel ran with it: the next probe shows that window
        p = probe(name)
        i = np.searchsorted(p["ts_ns"].to_numpy(), s["ts_ns"].to_numpy(), side="right")
        ok = i < p.height
        assert np.mean(p["snd_cwnd"].to_numpy()[i[ok]] == s["snd_cwnd"].to_numpy()[ok]) >= 0.9


def test_highspeed_decreases_by_the_row_of_the_window():
    # RFC 3649 Appendix B as tcp_highspeed.c: ssthresh = cwnd − ⌊cwnd·md/256⌋; above Low_Window 38
    # (row ≥ 1) md < 128, i.e. less than halving. E.g. cwnd 253 in row 3 (md 98):
    # 253 − ⌊253·98/256⌋ = 253 − 96 = 157.
    rows = pl.concat([losses("highspeed-bdp"), losses("highspeed-loss")])
    exp = rows["snd_cwnd"].to_numpy() - (rows["snd_cwnd"].to_numpy() * rows["md"].to_numpy() >> 8)
    assert (rows["ssthresh"].to_numpy() == np.maximum(exp, 2)).all()
    assert (rows["ai"] >= 1).sum() >= 2 and (rows.filter(pl.col("ai") >= 1)["md"] < 128).all()


def test_ctcp_delay_window_grows_and_retreats_at_gamma():
    s = signals("ctcp-bdp").filter(pl.col("event") == "round")
    assert (s["action"] == 1).sum() >= 5 and (s["action"] == 2).sum() >= 3
    assert s["dwnd"].max() > 20  # packets of delay window on the 167-packet BDP
    # a retreat happens exactly when diff ≥ γ (γ = 30 untuned here)
    r = s.filter(pl.col("action") == 2)
    assert (r["diff"] >= r["gamma"]).all()
    grow = s.filter(pl.col("action") == 1)
    assert (grow["diff"] < grow["gamma"]).all()


def test_ctcp_gamma_tuned_down_on_a_small_buffer():
    # γ ← ¾γ + ¼·¾·diff_reno at each loss, clamped to [5, 30]: with a 20-packet buffer the loss
    # component's backlog stays below 20, so γ falls from 30
    s = losses("ctcp-smallbuf")
    assert s.height >= 2 and s["gamma"].min() < 25
    assert s["gamma"].is_between(5, 30).all()


def test_fusion_shows_its_three_phases():
    s = signals("fusion-40m").filter(pl.col("event") == "ack")
    assert {1, 2, 3} <= set(s["phase"].to_list())  # increase, steady, decrease
    ca = s.filter(pl.col("phase").is_in([1, 2, 3]))
    # the phase follows diff against α and 3α (§II-B)
    inc, dec = ca.filter(pl.col("phase") == 1), ca.filter(pl.col("phase") == 3)
    assert (inc["diff"] < inc["alpha"]).all() and (dec["diff"] > 3 * dec["alpha"]).all()
    assert (ca["cwnd"] >= ca["reno_cwnd"]).all()  # never below the Reno window
    assert ca["w_inc"].max() > 2  # W_inc = B·1 ms/MSS at 40 Mbit/s ≈ 3.3


def test_hrf_switches_between_cr_and_ci():
    s = signals("hrf-rtt80-loss").filter(pl.col("event") == "ack")
    modes = set(s["mode"].to_list())
    assert {1, 2} <= modes  # CR (vacant link) and CI (queue)
    cr = s.filter(pl.col("mode") == 1)
    # CR at RTT ≈ 80 ms = 2·RTTref: (RTT/RTTref)² ≈ 4 packets per RTT
    assert cr["inc_per_rtt"].median() == pytest.approx(4.0, rel=0.1)


def test_kyushu_holds_the_window_at_w2():
    for name in ("ktcp-hs-bdp", "ktcp-cubic-bdp", "ktcp-cubic-loss-rtt20"):
        s = signals(name)
        start = s.filter(pl.col("phase") == 1)
        held = s.filter(pl.col("phase") == 2)
        assert start.height >= 1 and held.height >= 20, name
        # w2 = ⌊0.9·w1⌋ and the held window is w2; the period lasts Tc²·w2 sent segments at most
        assert (held["w2"] == held["w1"] * 9 // 10).all()
        assert (held["snd_cwnd"] == held["w2"]).all() and (held["w2"] > 38).all()
        assert (held["sent"] <= held["b_ktcp"]).all()
