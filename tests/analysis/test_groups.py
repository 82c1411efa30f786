"""Bottleneck groups (hscc_trace.analysis.groups): hand-worked metrics on a tiny case, and the
group metrics of every real multi-flow sample against the sending kernel's own snd_una."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hscc_trace import api, schema
from hscc_trace.analysis import groups, results, truth
from hscc_trace.model import Analysis, CaptureResult, FlowResult

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
MULTI = (
    "reno-vs-cubic",
    "reno-vs-cubic-rtt20",
    "bbr-vs-cubic",
    "bbr-vs-reno",
    "cubic-vs-cubic",
    "groups/three-flows",  # reno, cubic, Compound TCP (samples/groups/README.md)
    "groups/four-flows-rtt",  # reno, cubic, bbr, TCP-Fusion at base RTTs 20 / 60 / 80 / 100 ms
)
S = 1_000_000_000  # ns per s
# the library's BPF senders (samples/testbed/bpfcc.py SENDERS, the HRF rows each)
BPF_VS_RENO = (
    "vegas", "westwood", "highspeed", "ctcp", "fusion", "hrf", "hrf_cr", "hrf_ci", "hrf_wcrreno", "hrf_wcrcr",
    "ktcp_hs", "ktcp_cubic",
)  # fmt: skip


# --- a tiny case worked by hand ------------------------------------------------------------------


def _series(fid, algo, per_ack, *, rtt=0.05, episodes=(), acks=None, sport=None):
    """A flow whose first data segment is at t = 0 and whose ACKs come every 0.1 s (t = 0.1 … 4.0 s),
    each acknowledging ``per_ack`` bytes (a list: one value per ACK, or one for all)."""
    t = np.arange(1, 41, dtype=np.int64) * (S // 10) if acks is None else np.asarray(acks, dtype=np.int64)
    b = np.full(t.size, per_ack, dtype=np.int64) if np.isscalar(per_ack) else np.asarray(per_ack, dtype=np.int64)
    return groups.FlowSeries(
        flow_id=fid,
        label=f"flow {fid}",
        sport=sport or 40000 + fid,
        dport=5000 + fid,
        algo=algo,
        algo_source="user",
        vantage="sender",
        mss=1250,
        ack_ns=t,
        delivered=np.cumsum(b),
        seg_ns=t - S // 10,  # (each segment sent 0.1 s before its ACK: the first at t = 0)
        sent=np.cumsum(b),
        rtt_ns=t,
        rtt_s=np.full(t.size, rtt),
        episodes=tuple(episodes),
    )


def test_jain_by_hand():
    # (Σx)² / (n·Σx²): [1, 1] → 4/(2·2) = 1; [3, 1] → 16/(2·10) = 0.8; [1, 0] → 1/(2·1) = 0.5 (= 1/n,
    # one flow takes everything); [2, 2, 2, 0] → 36/(4·12) = 0.75
    assert groups.jain([1, 1]) == 1.0
    assert groups.jain([3, 1]) == pytest.approx(0.8)
    assert groups.jain([1, 0]) == pytest.approx(0.5)
    assert groups.jain([2, 2, 2, 0]) == pytest.approx(0.75)
    assert groups.jain([]) is None and groups.jain([0, 0]) is None


def test_shares_friendliness_rtt_fairness_by_hand():
    # reno: 40 ACKs of 1250 B over [0, 4.0 s] = 50 000 B → 50 000·8/4 = 100 000 bit/s
    # cubic: 40 ACKs of 3750 B = 150 000 B → 300 000 bit/s
    reno = _series(0, "reno", 1250, rtt=0.05, episodes=[(15 * S // 10, "sack_recovery"), (3 * S, "rto")])
    cubic = _series(1, "cubic", 3750, rtt=0.10, episodes=[(152 * S // 100, "sack_recovery")])
    g = groups.measure([reno, cubic], groups.GroupOptions(queue_factor=100.0))
    a, b = g.flows
    assert (a.goodput_bps, b.goodput_bps) == (pytest.approx(100_000), pytest.approx(300_000))
    assert g.total_goodput_bps == pytest.approx(400_000)
    # shares 100/400 = 0.25 and 300/400 = 0.75; normalized = n · share = 0.5 and 1.5
    assert (a.share, b.share) == (pytest.approx(0.25), pytest.approx(0.75))
    assert (a.normalized, b.normalized) == (pytest.approx(0.5), pytest.approx(1.5))
    # Jain 400² / (2 · (100² + 300²)) = 160 000 / 200 000 = 0.8, the same in every window (both
    # flows are acknowledged at the same instants, 1 : 3)
    assert g.jain == pytest.approx(0.8)
    assert all(j == pytest.approx(0.8) for j in g.windows["jain"])
    assert g.jain_windows["min"] == pytest.approx(0.8)
    # friendliness to the reno flow: 300 000 / 100 000 = 3; the reno flow has no other reference
    assert g.reference == [0]
    assert b.friendliness == pytest.approx(3.0) and a.friendliness is None
    # RTT-fairness: the short-RTT flow (reno, 50 ms) over the long-RTT one (cubic, 100 ms):
    # throughput ratio 1/3, RTT ratio 2, exponent log(1/3)/log(2) = −1.585, difference −200 000 bit/s
    (p,) = g.rtt_fairness
    assert (p["short_rtt_flow"], p["long_rtt_flow"]) == (0, 1)
    assert p["throughput_ratio"] == pytest.approx(1 / 3) and p["rtt_ratio"] == pytest.approx(2.0)
    assert p["exponent"] == pytest.approx(math.log(1 / 3) / math.log(2))
    assert p["difference_bps"] == pytest.approx(-200_000)
    # windows [0,1) [1,2) [2,3) [3,4.0]: 9, 10, 10 and 11 ACKs; reno's goodput in [1,2) = 10·1250·8 = 100 000
    assert g.windows["t_s"] == [0.0, 1.0, 2.0, 3.0]
    assert g.windows["goodput_bps"][0][1] == pytest.approx(100_000)
    # loss episodes: reno at 1.5 s and cubic at 1.52 s are within one RTT of each other (reno's 50 ms,
    # cubic's 100 ms): both synchronized; reno's at 3.0 s has no partner → 2 of 3 synchronized
    assert [e["synchronized"] for e in g.episodes] == [True, True, False]
    assert g.sync_fraction == pytest.approx(2 / 3)
    assert (a.synchronized, b.synchronized) == (1, 1)
    # capacity: the congested windows are those where an episode starts (queue_factor 100 rules the
    # RTT out): [1,2) with 10 ACKs of 1250 + 3750 B = 400 000 bit/s and [3,4.0] with 11 ACKs =
    # 440 000 bit/s (its length 1 s + 1 ns); median 420 000; utilization 400 000/420 000 = 0.952
    assert g.capacity_bps == pytest.approx(420_000)
    assert g.utilization == pytest.approx(400_000 / 420_000)
    assert not g.converged and g.convergence_s is None


def test_convergence_by_hand():
    # flow 1 sends 3× flow 0's bytes for the first 2 s, then the same: windows [0,1) and [1,2) are
    # 0.25/0.75, [2,3) and [3,4] 0.5/0.5 → within 10 % of the fair share from t = 2 s to the end
    late = [3750 if k < 20 else 1250 for k in range(1, 41)]  # ACK k at 0.1·k s: k < 20 before 2.0 s
    g = groups.measure([_series(0, "reno", 1250), _series(1, "cubic", late)])
    assert g.converged and g.convergence_s == pytest.approx(2.0)
    # the tolerance is relative to the fair share: 0.75 share is 50 % above it
    tight = groups.measure([_series(0, "reno", 1250), _series(1, "cubic", 3750)], groups.GroupOptions(tolerance=0.49))
    assert not tight.converged
    loose = groups.measure([_series(0, "reno", 1250), _series(1, "cubic", 3750)], groups.GroupOptions(tolerance=0.5))
    assert loose.converged and loose.convergence_s == 0.0


def test_grouping_rule():
    a = _series(0, "reno", 1250 * 10)  # 500 kB over 4 s: bulk
    b = _series(1, "cubic", 1250 * 10)
    tiny = _series(2, None, 10)  # 400 B: not bulk
    later = _series(3, None, 12500, acks=np.arange(1, 41, dtype=np.int64) * (S // 10) + 10 * S)  # after the others
    assert [[s.flow_id for s in g] for g in groups.find_groups([a, b, tiny, later])] == [[0, 1]]
    # 50 % overlap of the shorter interval: a flow starting 2 s into a 4 s transfer still joins
    half = _series(4, None, 12500, acks=np.arange(1, 41, dtype=np.int64) * (S // 10) + 2 * S)
    assert [[s.flow_id for s in g] for g in groups.find_groups([a, half])] == [[0, 4]]
    assert groups.find_groups([a, half], groups.GroupRule(min_overlap=0.6)) == []
    # the user's own groups: flow ids, or port=N
    rule = groups.GroupRule(groups=(groups.parse_group("0,2"), groups.parse_group("port=40003")))
    assert [[s.flow_id for s in g] for g in groups.find_groups([a, b, tiny, later], rule)] == [[0, 2], [3]]
    with pytest.raises(ValueError, match="flow id or port=N"):
        groups.parse_group("0,x")


def test_stolen_by_hand():
    # baseline: two reno flows at 5.0 and 4.6 Mbit/s → P = 4.8; test: reno at 3.6 next to ctcp at 6.0
    # → Q = 3.6; stolen = (4.8 − 3.6)/4.8 = 0.25 (Compound TCP paper, Definition 1)
    base = {
        "jain": 0.998,
        "flows": [
            {"flow_id": 0, "algo": "reno", "goodput_bps": 5.0e6, "share": 0.5208},
            {"flow_id": 1, "algo": "reno", "goodput_bps": 4.6e6, "share": 0.4792},
        ],
    }
    test = {
        "jain": 0.9,
        "flows": [
            {"flow_id": 0, "algo": "reno", "goodput_bps": 3.6e6, "share": 0.375},
            {"flow_id": 1, "algo": "ctcp", "goodput_bps": 6.0e6, "share": 0.625},
        ],
    }
    c = groups.compare([base], [test])
    assert c.stolen == pytest.approx(0.25)
    g = c.groups[0]
    assert (g["baseline_regular_bps"], g["test_regular_bps"]) == (pytest.approx(4.8e6), pytest.approx(3.6e6))
    assert g["baseline_regular"] == [0, 1] and g["test_regular"] == [0]
    # per-flow deltas in flow order: 3.6 − 5.0 = −1.4 Mbit/s (−28 %), 6.0 − 4.6 = +1.4 (+30.4 %)
    assert [f["delta_bps"] for f in g["flows"]] == [pytest.approx(-1.4e6), pytest.approx(1.4e6)]
    assert g["flows"][0]["relative"] == pytest.approx(-0.28)
    # flow ids as the regular flows; no regular flow in the test: no stolen fraction, and a warning
    assert groups.compare([base], [test], regular=(0,)).stolen == pytest.approx((5.0 - 3.6) / 5.0)
    none = groups.compare([base], [{**test, "flows": [{**f, "algo": "ctcp"} for f in test["flows"]]}])
    assert none.stolen is None and any("cannot be computed" in w for w in none.warnings)


# --- the real multi-flow samples against the kernel's snd_una --------------------------------------------


def _capture_result(name: str) -> CaptureResult:
    """A sample's flows with their event tables and kernel truth, without replays (fast)."""
    folder = SAMPLES / name
    path = next(p for p in sorted(folder.iterdir()) if p.name.startswith("capture.pcap"))
    cap = api.load(path)
    rows = {int(r["flow_id"]): r for r in cap.flows.to_dicts()}
    frs = []
    for fid, ev in sorted(api.all_events(cap).items()):
        fr = FlowResult(flow=rows[fid], events=ev, replays={}, fit=schema.empty(schema.FIT_METRICS))
        fr.truth = truth.flow_truth(folder, rows[fid], ev)
        frs.append(fr)
    return CaptureResult(meta=cap.meta, flows=cap.flows, results=frs)


@pytest.fixture(scope="module")
def samples() -> dict[str, CaptureResult]:
    return {name: _capture_result(name) for name in MULTI}


def _truth_delivered(name: str, sport: int, t_ns: np.ndarray) -> np.ndarray:
    """The kernel's snd_una before the first ACK at or after each time (tcp_probe fires before the
    ACK is processed): the bytes delivered by every ACK before it."""
    tp = pl.read_parquet(SAMPLES / name / "truth_probe.parquet").filter(pl.col("sport") == sport).sort("ts_ns")
    ts, una = tp["ts_ns"].to_numpy(), tp["snd_una"].to_numpy()
    i = np.searchsorted(ts, t_ns, side="left")
    assert (i < len(ts)).all(), "a time beyond the last probe has no truth"
    return una[i] - 1  # (relative seq: the first payload byte is 1)


# each BPF sender of samples/testbed/cc against one Reno flow on one small path
# (samples/groups/README.md), and the kept TCP-Fusion + Reno run of the papers' experiments
VS_RENO = (
    *sorted(f"groups/vs-reno/{p.name}" for p in (SAMPLES / "groups" / "vs-reno").iterdir() if p.is_dir()),
    "testbed/experiments/kept/fusion-reno-l0.01",
)


@pytest.mark.parametrize("name", MULTI)
def test_group_metrics_match_kernel_truth(samples, name):
    _match_kernel_truth(samples[name], name)


def test_every_bpf_sender_has_a_run_against_reno():
    ccs = set()
    for name in VS_RENO:
        flows = json.loads((SAMPLES / name / "meta.json").read_text())["flows"]
        assert sorted(f["cc"] == "reno" for f in flows) == [False, True], name
        ccs |= {f["cc"] for f in flows if f["cc"] != "reno"}
    assert ccs == {"bpf_" + n for n in BPF_VS_RENO}


@pytest.mark.parametrize("name", VS_RENO)
def test_bpf_sender_vs_reno_matches_kernel_truth(name):
    _match_kernel_truth(_capture_result(name), name)


def _match_kernel_truth(cr: CaptureResult, name: str) -> None:
    """Per window each flow's goodput, and the shares and Jain's index of the group, within 2 % of
    the kernel's snd_una (tcp_probe)."""
    (g,) = groups.capture_groups(cr)
    assert len(g.flows) == len(json.loads((SAMPLES / name / "meta.json").read_text())["flows"])
    series = {s.flow_id: s for s in groups.series_of(cr)}
    # the windows the kernel's probes cover whole (tracing stops a little before the last ACKs)
    last = min(
        int(
            pl.read_parquet(SAMPLES / name / "truth_probe.parquet")
            .filter(pl.col("sport") == series[f.flow_id].sport)["ts_ns"]
            .max()
        )
        for f in g.flows
    )
    edges = np.array([g.start_ns + int(round(t * S)) for t in g.windows["t_s"]] + [g.end_ns + 1], dtype=np.int64)
    covered = [k for k in range(len(edges) - 1) if edges[k + 1] <= last and g.windows["len_s"][k] >= 0.5 * g.window_s]
    assert len(covered) >= 2
    edges = edges[: covered[-1] + 2]
    truth_rates = []
    for i, f in enumerate(g.flows):
        t = _truth_delivered(name, series[f.flow_id].sport, edges)
        rates = np.diff(t) * 8 / np.array(g.windows["len_s"][: len(edges) - 1])
        ours = np.array(g.windows["goodput_bps"][i])
        for k in covered:
            assert ours[k] == pytest.approx(rates[k], rel=0.02, abs=0.02 * max(rates[k], 1e5)), (name, f.flow_id, k)
        truth_rates.append(rates)
    # shares and Jain's index over the covered windows, from the truth and from the group
    ours_b = np.array([sum(g.windows["goodput_bps"][i][k] for k in covered) for i in range(len(g.flows))])
    kern_b = np.array([sum(r[k] for k in covered) for r in truth_rates])
    assert ours_b / ours_b.sum() == pytest.approx(kern_b / kern_b.sum(), rel=0.02)
    assert groups.jain(ours_b) == pytest.approx(groups.jain(kern_b), rel=0.02)
    for k in covered:
        assert g.windows["jain"][k] == pytest.approx(groups.jain([r[k] for r in truth_rates]), rel=0.02)
    # the measurement interval's goodput, up to where the probes end
    lo, hi = g.interval_ns
    hi = min(hi, last)
    for f in g.flows:
        s = series[f.flow_id]
        ours = float(np.diff(s.delivered_at(np.array([lo, hi])))[0])
        kern = float(np.diff(_truth_delivered(name, s.sport, np.array([lo, hi])))[0])
        assert ours == pytest.approx(kern, rel=0.02)


def test_samples_read_as_the_papers_would(samples):
    gs = {name: groups.capture_groups(cr)[0] for name, cr in samples.items()}
    # every flow named from the kernel's own label beside the capture
    assert {f.algo for f in gs["bbr-vs-reno"].flows} == {"bbr", "reno"}
    # BBR takes most of a shallow buffer from Reno: friendliness far above 1, Jain low
    bbr = next(f for f in gs["bbr-vs-reno"].flows if f.algo == "bbr")
    assert bbr.friendliness > 3 and gs["bbr-vs-reno"].jain < 0.75
    # Reno and CUBIC share a 10 Mbit/s link almost evenly; the link is full (9.65 Mbit/s of payload)
    g = gs["reno-vs-cubic"]
    assert g.jain > 0.99
    assert g.capacity_bps == pytest.approx(10e6 * 1448 / 1500, rel=0.01)
    assert g.utilization > 0.95
    # the 20 Mbit/s path: its capacity is twice that
    assert gs["reno-vs-cubic-rtt20"].capacity_bps == pytest.approx(20e6 * 1448 / 1500, rel=0.01)
    # one testbed link: the flows see the same base RTT, so no RTT-fairness exponent
    equal = {n: g for n, g in gs.items() if n != "groups/four-flows-rtt"}
    assert all(p["exponent"] is None for g in equal.values() for p in g.rtt_fairness)
    # base RTTs 20 / 60 / 80 / 100 ms: every pair gets the exponent e of throughput ratio = RTT ratio^e
    # (HRF-TCP's measure: e = 1 is RTT-proportional, e = 0 RTT-fair); 4 flows give 6 pairs
    pairs = gs["groups/four-flows-rtt"].rtt_fairness
    assert len(pairs) == 6 and all(p["rtt_ratio"] > 1.05 for p in pairs)
    for p in pairs:
        assert p["throughput_ratio"] == pytest.approx(p["rtt_ratio"] ** p["exponent"], rel=1e-9)


def test_results_json_groups_and_compare_cli(samples, tmp_path):
    from typer.testing import CliRunner

    from hscc_trace.cli import app

    docs, analyses = {}, {}
    for name in ("reno-vs-cubic", "bbr-vs-cubic"):
        a = Analysis(captures=[samples[name]], algorithms=[], params={}, version="test", created=results.utc_now())
        analyses[name] = a
        doc = api.results(a)
        results.validate(doc)  # the groups section follows the schema
        (grp,) = doc["captures"][0]["groups"]
        assert grp["flow_ids"] == [0, 1] and grp["jain"] > 0.9
        docs[name] = tmp_path / f"{name}.json"
        results.write(doc, docs[name])
    # CUBIC's loss to BBR against CUBIC's goodput beside Reno on the same 10 Mbit/s, 40 ms path
    # (buffers 33 and 67 packets): stolen = (P − Q)/P with P, Q the CUBIC flows' goodput
    got = CliRunner().invoke(
        app, ["compare", str(docs["reno-vs-cubic"]), str(docs["bbr-vs-cubic"]), "--regular", "cubic", "--json"]
    )
    assert got.exit_code == 0, got.output
    out = json.loads(got.stdout)
    g = out["groups"][0]
    base = json.loads(docs["reno-vs-cubic"].read_text())["captures"][0]["groups"][0]
    test = json.loads(docs["bbr-vs-cubic"].read_text())["captures"][0]["groups"][0]
    p = next(f["goodput_bps"] for f in base["flows"] if f["algo"] == "cubic")
    q = next(f["goodput_bps"] for f in test["flows"] if f["algo"] == "cubic")
    assert g["stolen"] == pytest.approx((p - q) / p)
    assert 0.2 < g["stolen"] < 0.3  # 4.88 → 3.62 Mbit/s
    # the library call on the analyses themselves gives the same
    c = api.compare(analyses["reno-vs-cubic"], analyses["bbr-vs-cubic"], regular="cubic")
    assert c.stolen == pytest.approx(g["stolen"])
    assert list(api.groups(analyses["bbr-vs-cubic"]).values())[0][0].jain == pytest.approx(test["jain"])
    page = tmp_path / "compare.html"
    text = CliRunner().invoke(
        app, ["compare", str(docs["reno-vs-cubic"]), str(docs["bbr-vs-cubic"]), "--regular", "cubic", "-o", str(page)]
    )
    assert text.exit_code == 0 and "bandwidth stolen: 2" in text.stdout
    html = page.read_text()  # self-contained: no script, no request; the stolen fraction in its heading
    assert f"stolen {g['stolen'] * 100:.1f} %" in html
    assert "<script" not in html and "://" not in html
    # an input without a group: one line, exit 2
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "hscc_trace", "compare", str(tmp_path / "missing.json"), str(docs["bbr-vs-cubic"])]
    bad = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "missing.json" in bad.stderr, bad.stderr


def test_groups_table_in_the_configuration():
    from hscc_trace import config
    from hscc_trace.api import group_options
    from hscc_trace.errors import UsageError

    cfg = config.parse(
        {"groups": {"window_s": 0.5, "min_bytes": 2000, "reference": "cubic", "groups": ["0,2", "port=5001"]}}
    )
    rule, opts = group_options(None, None, cfg.groups)
    assert rule.groups == ((0, 2), ("port=5001",)) and rule.min_bytes == 2000
    assert opts.window_s == 0.5 and opts.reference == "cubic"
    # the command line wins over the file
    rule, opts = group_options(["1,3"], 2.0, cfg.groups)
    assert rule.groups == ((1, 3),) and opts.window_s == 2.0
    with pytest.raises(UsageError, match="window"):
        config.parse({"groups": {"windw": 1}})
    with pytest.raises(UsageError, match="positive"):
        config.parse({"groups": {"window_s": 0}})


def test_corpus_groups_table_and_census(tmp_path):
    pytest.importorskip("distributed")  # (the corpus extra)
    from hscc_trace.corpus import census, runner
    from hscc_trace.corpus import dataset as ds

    path = str(SAMPLES / "reno-vs-cubic-rtt20" / "capture.pcap")
    assert runner.analyze_capture(path, str(tmp_path / "ds"), ["reno", "cubic"], None)["status"] == "ok"
    rows = ds.read(tmp_path / "ds", "groups").sort("flow_id")
    # one group of two flows: Reno 46.9 %, CUBIC 53.1 %, Jain 0.996, the 20 Mbit/s link full
    assert rows["flow_id"].to_list() == [0, 1] and rows["flows"].to_list() == [2, 2]
    assert rows["algo"].to_list() == ["reno", "cubic"]
    assert rows["share"].sum() == pytest.approx(1.0)
    assert rows["jain"][0] > 0.99 and rows["utilization"][0] > 0.95
    page = census.build(tmp_path / "ds")
    assert "Bottleneck groups" in page and "0 reno 46.9 %, 1 cubic 53.1 %" in page


def test_long_series_kept_at_one_ms(monkeypatch):
    # events at 0.1, 0.5, 0.9 ms (1, 5, 2 bytes) and 1.2, 1.7 ms (7, 3 bytes): once longer than
    # SERIES_POINTS, each millisecond keeps its last event — cumulative 1+5+2 = 8 at 0.9 ms and
    # 8+7+3 = 18 at 1.7 ms — and, for the bytes outstanding, its largest value (5 and 7)
    monkeypatch.setattr(groups, "SERIES_POINTS", 2)
    ts = np.array([100_000, 500_000, 900_000, 1_200_000, 1_700_000], dtype=np.int64)
    v = np.array([1, 5, 2, 7, 3], dtype=np.int64)
    t, cum = groups._compact(ts, np.cumsum(v))
    assert t.tolist() == [900_000, 1_700_000] and cum.tolist() == [8, 18]
    t, peak = groups._compact(ts, v, peak=True)
    assert t.tolist() == [900_000, 1_700_000] and peak.tolist() == [5, 7]
    monkeypatch.setattr(groups, "SERIES_POINTS", 5)  # at or below the limit: every event
    assert groups._compact(ts, v)[1].tolist() == v.tolist()


def test_groups_reference_of_the_configuration_in_compare_and_check(samples, tmp_path):
    # reno-vs-cubic: reno 4.76, cubic 4.89 Mbit/s. With the default reference (reno) only the CUBIC
    # flow has a friendliness ratio (4.89/4.76 ≈ 1.03: the reno flow has no other reno beside it);
    # `[groups] reference = "cubic"` turns it round: only the reno flow's (≈ 0.97) is judged, and
    # compare takes the CUBIC flows as the regular ones.
    from hscc_trace.analysis.options import CheckOptions

    toml = tmp_path / "hscc-trace.toml"
    toml.write_text('[groups]\nreference = "cubic"\n')
    plain = tmp_path / "plain.toml"
    plain.write_text("[groups]\nwindow_s = 1.0\n")

    def run(cfg):
        an = Analysis([samples["reno-vs-cubic"]], [], {}, "t", "t")
        return api.check(an, CheckOptions(friendliness="0.5:2", config=cfg))

    def judged(res):
        return sorted(v.message.split("]")[0].rsplit("[", 1)[1] for v in res.verdicts if v.status != "skip")

    assert judged(run(plain)) == ["cubic"]
    assert judged(run(toml)) == ["reno"]
    # the stolen gate's regular flows too: the run against itself steals 0 % from its reno flow,
    # or with the file from its cubic one
    base = tmp_path / "base.json"
    results.write(results.to_dict(Analysis([samples["reno-vs-cubic"]], [], {}, "t", "t")), base)
    for cfg, want in ((plain, "[reno]"), (toml, "[cubic]")):
        an = Analysis([samples["reno-vs-cubic"]], [], {}, "t", "t")
        (v,) = api.check(an, CheckOptions(max_stolen=0.1, stolen_baseline=base, config=cfg)).verdicts
        assert v.status == "pass" and "stolen 0.0 %" in v.message and want in v.message.split("regular flows")[1]
    an = Analysis([samples["reno-vs-cubic"]], [], {}, "t", "t")
    algo = {f["flow_id"]: f["algo"] for f in api.group_input(an)[0]["flows"]}
    for cfg, want in ((None, "reno"), (toml, "cubic")):
        doc = api.compare(an, an, config=cfg).as_dict()
        assert doc["regular"] == want
        (g,) = doc["groups"]
        assert [algo[i] for i in g["test_regular"]] == [want] and g["stolen"] == pytest.approx(0.0)


def test_group_input_replays_only_the_flows_truth_does_not_label(tmp_path):
    # vs-reno/ctcp: two flows, each named by the testbed's meta.json (reno, compound) and aligned
    # with its tcp_probe truth: a flow's label comes from truth, so the groups' run replays
    # neither. The same capture copied away from its truth files: both flows replayed (their
    # labels come from the verdict). The groups are those of the run that replays every flow.
    from shutil import copy

    from hscc_trace.analysis.options import AnalyzeOptions

    src = SAMPLES / "groups" / "vs-reno" / "ctcp" / "capture.pcap.gz"
    bare = tmp_path / "capture.pcap.gz"
    copy(src, bare)

    def flows(path, replay_labelled):
        run = api._analyze(str(path), AnalyzeOptions(["reno"]), None, replay_labelled)
        return run.analysis, run.analysis.captures[0].results

    labelled, frs = flows(src, False)
    assert [(fr.truth.algo, len(fr.replays)) for fr in frs] == [("reno", 0), ("compound", 0)]
    every, _ = flows(src, True)
    assert groups.group_dicts(labelled) == groups.group_dicts(every)
    _, frs = flows(bare, False)
    assert [(fr.truth, list(fr.replays)) for fr in frs] == [(None, ["reno"]), (None, ["reno"])]
