"""One connection, captured at both ends: the receiver-side capture must give what the sender
side gives, wherever the receiver can know it (docs/events.md "Vantage point").

samples/index.json pairs each ``*-receiver`` sample with the sender-side sample of the same run
(``same_run_as``); the kernel's own view (tcp_probe: snd_cwnd and snd_una per incoming ACK,
tcp_cong_state_set) is the same for both, on the capture clock.

Aligning the kernel's probes with the receiver-side ACKs: a probe fires when an ACK reaches the
sender, before it is processed, and shows the window after the previous ACK, the one whose
cumulative ACK equals the probe's snd_una. The receiver's ACKs leave one one-way delay
(``delay_one_way_s`` in meta.json: the path has no queue that way) before they arrive, so their
times are shifted by it and :func:`hscc_trace.replay.metrics.truth_alignment` pairs them as it
pairs sender-side ACKs (the last ACK before the probe whose value is the probe's snd_una).

Targets (issue #17): the linux-flavor replay of the sender's algorithm on the receiver-side
events reproduces the kernel's snd_cwnd outside recovery with median error ≤ 2 % and p90 ≤ 5 %
(what the sender side meets); as many congestion episodes as at the sender; rounds within one
(a round's end is decided on one ACK: the receiver knows the sender's snd_max at it only to
within the segments lost before it on the way to the receiver); flight within 2 MSS of the
sender-side value on ≥ 99 % of ACKs; the flow table's RTT min and median within 1 ms. Measured
(median / p90 error, receiver side): reno-bdp 0 / 0, reno-rtt60 0 / 0, cubic-rtt10 0 / 0.05
(sender side 0 / 0.05), cubic-50m 0 / 0.027; BBR fit MARE 0.041 at the receiver, 0.046 at the
sender (bbr-loss), 0.026 and 0.016 (bbr-4bdp). Two pairs do not meet the event-level bounds yet
(``EVENTS_DIFFER``), though their verdicts, RTTs and kernel windows do.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hscc_trace.analysis.verdict import RULES
from hscc_trace.events import flow_events
from hscc_trace.flows import load
from hscc_trace.flows.scan import flow_rows
from hscc_trace.replay import engine, metrics

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
PAIRS = [
    ("reno-bdp", "reno"),
    ("reno-rtt60", "reno"),
    ("cubic-rtt10", "cubic"),
    ("bbr-loss", "bbr"),
    ("cubic-50m", "cubic"),
    ("bbr-4bdp", "bbr"),
]


@cache
def sample(name: str):
    """(FlowEvents of the data flow, flow-table row, probes, CA states, meta) of one sample."""
    d = SAMPLES / name
    if not (d / "meta.json").exists():
        pytest.fail(f"sample {name} missing")
    meta = json.loads((d / "meta.json").read_text())
    path = d / meta["capture"].get("file", "capture.pcap")  # capture.pcap or capture.pcap.gz
    sport = meta["flows"][0]["sport"]
    cap = load(path)
    fid = int(cap.flows.filter(pl.col("sport") == sport).sort("payload_ab", descending=True)["flow_id"][0])
    row = next(r for r in flow_rows(str(path)).rows if r["flow_id"] == fid)
    probe = pl.read_parquet(d / "truth_probe.parquet")
    ca = pl.read_parquet(d / "truth_ca_state.parquet")
    if "sport" in probe.columns:
        probe = probe.filter(pl.col("sport") == sport)
        ca = ca.filter(pl.col("sport") == sport)
    return flow_events(cap, fid), row, probe, ca, meta


def test_the_pairs_are_one_run_each():
    idx = {s["name"]: s for s in json.loads((SAMPLES / "index.json").read_text())["samples"]}
    for name, cc in PAIRS:
        r = idx[f"{name}-receiver"]
        assert r["same_run_as"] == name and r["capture_point"] == "receiver" and r["cc"] == cc


def kernel_errors(name: str, algo: str) -> np.ndarray:
    """|replayed − kernel| / kernel per probe outside recovery, replay on the receiver side."""
    fe, _row, probe, ca, meta = sample(f"{name}-receiver")
    rep = next(iter(engine.replay_flow(fe, [algo], [f"{algo}.flavor=linux"]).values()))
    shift = int(meta["delay_one_way_s"] * 1e9)
    acks = fe.acks.with_columns(pl.col("ts_ns") + shift)  # when they reached the sender
    e = metrics.truth_errors(acks, rep, probe, ca)
    assert e.height >= 0.95 * probe.height, f"only {e.height}/{probe.height} probes aligned"
    out = e.filter("outside_recovery")
    assert out.height > 500
    return out["rel_err"].to_numpy()


@pytest.mark.parametrize("name,algo", [p for p in PAIRS if p[1] != "bbr"])
def test_receiver_side_replay_reproduces_the_kernel_window(name, algo):
    rel = kernel_errors(name, algo)
    assert np.median(rel) <= 0.02, f"median {np.median(rel):.4f}"
    assert np.percentile(rel, 90) <= 0.05, f"p90 {np.percentile(rel, 90):.4f}"


#: where the receiver-side events do not yet equal the sender side's (the verdicts, the flow table's
#: RTTs and the replay against the kernel do): measured when the pairs were added
EVENTS_DIFFER = {
    "cubic-50m": "at 50 Mbit/s (about 4 segments per TSval tick) the receiver's rounds run out of phase with the "
    "sender side's for most of the transfer: 257 rounds against 259, ends up to 25 segments apart, 43 of the 244 "
    "judged rounds end on the same segment; the nearest rounds' peak flights are 60 % equal, 94 % within a packet",
    "bbr-4bdp": "3 of the 80 judged rounds (STARTUP, the first 0.1 s) have a peak flight one packet above the "
    "sender side's: 96.2 % equal, the bound is 98 %",
}


@pytest.mark.parametrize(
    "name,cc",
    [
        pytest.param(n, c, marks=pytest.mark.xfail(strict=True, reason=EVENTS_DIFFER[n]))
        if n in EVENTS_DIFFER
        else (n, c)
        for n, c in PAIRS
    ],
)
def test_receiver_side_events_equal_the_sender_side(name, cc):
    s, _, _, _, _ = sample(name)
    r, _, _, _, _ = sample(f"{name}-receiver")
    assert r.vantage == "receiver" and s.vantage == "sender"
    # the same congestion episodes, of the same kinds
    assert r.episodes["kind"].to_list() == s.episodes["kind"].to_list()
    assert abs(r.rounds.height - s.rounds.height) <= 1
    # the rounds the fit uses (cwnd-limited, outside recovery), paired by target: the same peak
    # flight (measured: 100 %, 98.9 %, 98.7 %, 100 % of them; a round whose start ACK shares a
    # TSval with the one before may be off by one packet)
    rr = s.rounds.join(r.rounds, on="target_seq", suffix="_r").filter(
        (pl.col("limit") == "cwnd") & ~pl.col("in_recovery")
    )
    assert rr.height >= 0.9 * s.rounds.filter((pl.col("limit") == "cwnd") & ~pl.col("in_recovery")).height
    assert (rr["peak_flight_bytes"] == rr["peak_flight_bytes_r"]).mean() >= 0.98
    assert (rr["limit"] == rr["limit_r"]).mean() >= 0.98 or name == "bbr-loss"  # (pacing: see below)
    # ACK by ACK (the k-th ACK carrying a given cumulative ACK on each side)
    key = [pl.col("ack"), pl.int_range(pl.len()).over("ack").alias("k")]
    cols = ["outstanding", "pipe", "state", "cong_event"]
    j = s.acks.select(*key, *cols).join(r.acks.select(*key, *cols), on=["ack", "k"], suffix="_r")
    assert j.height >= 0.99 * s.acks.height
    mss = s.mss
    for c in ("outstanding", "pipe"):
        within = ((j[c] - j[f"{c}_r"]).abs() <= 2 * mss).mean()
        assert within >= 0.99, (c, within)
    # each episode begins on the same ACK, but where the receiver cannot know it: cubic-rtt10, two
    # ACKs less than a TSval tick apart (the receiver picks the first, one ACK early); bbr-loss,
    # the first retransmission was lost on the way (the receiver sees the second one, released 36
    # ACKs later). At most one such episode per pair.
    moved = (j["cong_event"].cast(pl.String).fill_null("") != j["cong_event_r"].cast(pl.String).fill_null("")).sum()
    assert moved <= 2, moved  # (one episode: its ACK on each side)
    assert (j["state"] == j["state_r"]).mean() >= 0.98


@pytest.mark.parametrize("name,cc", PAIRS)
def test_flow_table_rtt_is_the_senders_within_1_ms(name, cc):
    _, s, _, _, _ = sample(name)
    _, r, _, _, _ = sample(f"{name}-receiver")
    assert (s["vantage"], s["rtt_method"]) == ("sender", "data-ack")
    assert (r["vantage"], r["rtt_method"]) == ("receiver", "ts-echo")
    for k in ("rtt_min_s", "rtt_median_s"):
        assert abs(r[k] - s[k]) <= 0.001, (k, s[k], r[k])
    # the receiver's own data -> ACK time is what the table used to show as the RTT there
    assert r["rtt_min_s"] > 0.9 * s["rtt_min_s"]


def test_bbr_fit_at_the_receiver_is_as_good_as_at_the_sender():
    # the receiver cannot see pacing (the bottleneck re-spaces the packets), so it classifies
    # the paced, not ACK-clocked rounds the sender side calls "app" as cwnd-limited and fits more
    # rounds: MARE 0.041 over 55 rounds against 0.046 over 12 at the sender
    fits = {}
    for name in ("bbr-loss", "bbr-loss-receiver"):
        fe = sample(name)[0]
        fits[name] = metrics.fit(fe, engine.replay_flow(fe, ["bbr"])).row(0, named=True)
    assert fits["bbr-loss"]["mare"] <= 0.05
    assert fits["bbr-loss-receiver"]["mare"] <= 0.05
    assert fits["bbr-loss-receiver"]["rounds"] >= fits["bbr-loss"]["rounds"]


@cache
def verdict_of(name: str) -> dict:
    """The default `analyze` verdict (JSON results) of the sample's data flow."""
    from hscc_trace import api

    meta = json.loads((SAMPLES / name / "meta.json").read_text())
    sport = meta["flows"][0]["sport"]
    doc = api.results(api.analyze([str(SAMPLES / name / meta["capture"].get("file", "capture.pcap"))]).analysis)
    flows = [f for f in doc["captures"][0]["flows"] if sport in (f["sport"], f["dport"]) and f["events"]["segments"]]
    assert len(flows) == 1, name
    return flows[0]["verdict"]


@pytest.mark.parametrize("name,cc", PAIRS)
def test_receiver_side_verdict_is_the_sender_sides(name, cc):
    # one connection, one answer: the sender's algorithm named at both ends (timestamps place
    # each receiver-side ACK among the sender's segments, so both are judged ACK by ACK)
    s, r = verdict_of(name), verdict_of(f"{name}-receiver")
    assert (s["class"], s["name"]) == ("behaves as" if cc == "reno" else "identified", cc), s["reason"]
    assert (r["class"], r["name"]) == (s["class"], s["name"]), r["reason"]
    if name == "bbr-4bdp":
        # the receiver cannot see pacing and there is no loss episode: what shows a rate-based
        # sender there is BBR's gain cycle in the flight, the same at both ends
        # (docs/verdicts.md#rate-based)
        assert r["evidence"]["gain_cycles"] == s["evidence"]["gain_cycles"] >= RULES.gain_cycles
