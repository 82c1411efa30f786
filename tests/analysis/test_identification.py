"""Identification: the default `analyze` on every real capture we have, verdict by verdict.

The samples (real Linux senders through the testbed, samples/index.json says which algorithm
each flow's sender ran) are split by path into a tuning set and a held-out set
(samples/splits.json, whose rule is checked here); neither may get a wrong name, and each must
get the right one on at least :data:`TARGET` of its data flows; "unknown", "not enough data" and
the nested-model answer (the simpler algorithm named, the sender's extension listed as reducing
to it) are honest answers, not wrong ones. The verdict's validated range
(:data:`hscc_trace.analysis.verdict.ENVELOPE`) must be the tuning flows' conditions. The M-Lab
ndt7 downloads among the external captures (all held out) are BBR senders (their PROVENANCE.md)
and must be named bbr; no external flow may be named with an error above the documented threshold.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import pytest
from conftest import EXTERNAL, REPO, external

from hscc_trace import api
from hscc_trace.analysis import verdict as V

#: the M-Lab ndt7 downloads: the server sets TCP_CONGESTION=bbr (external/PROVENANCE.md)
NDT7_BBR = (
    "mlab-etl__ndt-m6znc_1632401351_000000000005BA77.pcap",
    "mlab-etl__ndt-nnwk2_1611335823_00000000000C2DA9.pcap",
    "mlab-etl__ndt-nnwk2_1611335823_00000000000C2E15.pcap",
)
#: the share of each set's data flows named right (measured: tuning 30 of 34, held-out 29 of 31;
#: the rest are honest answers — docs/verdicts.md#measured)
TARGET = 0.85
#: the share of each set's data flows right, an honest answer counted as right where the data
#: cannot tell (issue 38's target; measured: 34 of 34 and 31 of 31)
TARGET_WHERE_TOLD = 0.98
SPLITS = json.loads((REPO / "samples" / "splits.json").read_text())["samples"]


def path_key(s: dict) -> str:
    """A sample's path (samples/splits.json's rule): link rate, base RTT, buffer, random loss,
    application rate, receive buffer, alone or competing."""
    return (
        f"{s['rate_bps'] / 1e6:g}mbit/{s['base_rtt_s'] * 1e3:g}ms/{s['buffer_pkts']}pkt/loss{s['loss']:g}/"
        f"app{(s.get('app_rate_bps') or 0) / 1e6:g}/rwnd{s.get('rwnd_rcvbuf_bytes') or 0}/"
        f"{'vs' if len(s['flows']) > 1 else 'alone'}"
    )


def _truth(sample: dict, flow: dict) -> str | None:
    """The algorithm the kernel ran for this flow (by the data sender's port), from index.json: the
    kernel's congestion control, or for a BPF sender of the testbed (``cc`` = ``bpf_*``) the
    replay algorithm it implements (``algo``, samples/testbed/bpfcc.py)."""
    ports = {flow["sport"], flow["dport"]}
    for f in sample.get("flows", []):
        if f.get("sport") in ports and f.get("dport") in ports:
            return str(f.get("algo") or f["cc"])
    return None


@pytest.fixture(scope="module")
def sample_verdicts() -> list[tuple[str, int, str, dict]]:
    """(sample, flow id, true algorithm, verdict object of the JSON results) for every data flow."""
    index = json.loads((REPO / "samples" / "index.json").read_text())
    out = []
    for s in index["samples"]:
        doc = api.results(api.analyze([str(REPO / s["capture"])]).analysis)
        for f in doc["captures"][0]["flows"]:
            if f["events"]["segments"] == 0:
                continue
            truth = _truth(s, f)
            assert truth is not None, f"{s['name']}: flow {f['flow_id']} not in samples/index.json"
            out.append((s["name"], f["flow_id"], truth, f["verdict"]))
    return out


def test_the_split_is_by_path_and_follows_its_rule() -> None:
    index = json.loads((REPO / "samples" / "index.json").read_text())
    by_name = {s["name"]: s for s in index["samples"]}
    assert set(SPLITS) == set(by_name)  # every sample is in exactly one set
    sets: dict[str, set[str]] = {}
    for name, entry in SPLITS.items():
        key = path_key(by_name[name])
        assert entry["path"] == key
        even = int(hashlib.sha256(key.encode()).hexdigest(), 16) % 2 == 0
        assert entry["set"] == ("tuning" if even else "held-out"), name
        sets.setdefault(key, set()).add(entry["set"])
    assert all(len(v) == 1 for v in sets.values())  # no path in both sets
    for s in index["samples"]:  # a receiver-side capture goes with its sender-side twin
        if s.get("same_run_as"):
            assert SPLITS[s["name"]]["set"] == SPLITS[s["same_run_as"]]["set"]
    assert Counter(e["set"] for e in SPLITS.values()) == {"tuning": 32, "held-out": 28}


def test_the_validated_range_is_the_tuning_flows_conditions(sample_verdicts) -> None:
    # ENVELOPE's bounds, from the tuning flows (docs/verdicts.md#range): goodput from the slowest
    # tuning flow's to the fastest tuning link; the smallest RTT sample within the tuning base
    # RTTs and 5 % above them; retransmissions and ACK bursts up to the tuning flows' largest
    env = V.ENVELOPE
    index = {s["name"]: s for s in json.loads((REPO / "samples" / "index.json").read_text())["samples"]}
    tuning = [(name, v["evidence"]) for name, _, _, v in sample_verdicts if SPLITS[name]["set"] == "tuning"]
    rates = [e["rate_bps"] for _, e in tuning]
    assert env.rate_bps[0] <= min(rates) < 1.01 * env.rate_bps[0]
    assert env.rate_bps[1] == max(index[n]["rate_bps"] for n, _ in tuning)
    bases = [index[n]["base_rtt_s"] for n, _ in tuning]
    rtts = [e["min_rtt_s"] for _, e in tuning]
    assert env.min_rtt_s == (min(bases), pytest.approx(1.05 * max(bases)))
    assert env.min_rtt_s[0] <= min(rtts) and max(rtts) <= env.min_rtt_s[1]
    worst = max(e["retrans_fraction"] for _, e in tuning)
    assert worst <= env.retrans_fraction < worst + 0.01
    bursts = [e["ack_burst_pkts"] for _, e in tuning if e["ack_burst_pkts"] is not None]
    assert max(bursts) == env.ack_burst_pkts
    assert set(env.vantages) == {e["vantage"] for _, e in tuning}
    # and no held-out sample lies outside it: they were made on the same testbed
    outside = [(n, v["outside_range"]) for n, _, _, v in sample_verdicts if v["outside_range"]]
    assert outside == []


def test_no_sample_flow_gets_a_wrong_name(sample_verdicts) -> None:
    # A name the sender's algorithm reduces to, with the sender's algorithm listed as equivalent,
    # is the nested-model answer of docs/verdicts.md, not a wrong one: a Kyushu-TCP sender whose
    # hold never engages replays exactly as its base. No sample needs it today: on
    # ktcp-cubic-loss the hold began 0.35 s before the end (kyushu+cubic closer in 3 of 3
    # differing rounds, one packet apart), and the verdict is ambiguous between the two.
    wrong = [
        f"{name} flow {fid}: {truth} sender named {v['name']} ({v['reason']})"
        for name, fid, truth, v in sample_verdicts
        if v["class"] in V.NAMED and v["name"] != truth and truth not in (v.get("equivalent") or ())
    ]
    assert len(sample_verdicts) >= 65  # every data flow of samples/index.json (2026-11-26)
    assert {SPLITS[n]["set"] for n, *_ in sample_verdicts} == {"tuning", "held-out"}
    assert wrong == []  # in either set


def test_a_name_never_carries_an_error_above_its_threshold(sample_verdicts) -> None:
    for name, fid, _, v in sample_verdicts:
        if v["class"] in V.NAMED:
            assert v["error"] is not None and v["error"] <= v["threshold"], (name, fid, v)


@pytest.mark.parametrize("which", ["tuning", "held-out"])
def test_the_right_name_on_most_flows_of_each_set(sample_verdicts, which) -> None:
    flows = [x for x in sample_verdicts if SPLITS[x[0]]["set"] == which]
    right = sum(1 for _, _, truth, v in flows if v["class"] in V.NAMED and v["name"] == truth)
    classes = Counter(v["class"] for *_, v in flows)
    not_right = [
        f"{name} flow {fid} ({truth}): {v['class']} — {v['reason'][:120]}"
        for name, fid, truth, v in flows
        if not (v["class"] in V.NAMED and v["name"] == truth)
    ]
    assert right / len(flows) >= TARGET, (
        f"{right} of {len(flows)} right ({dict(classes)}); not named right: {not_right}"
    )


def _right_where_told(truth: str, v: dict) -> bool:
    """Named right, or an honest answer where the data cannot tell the sender's algorithm: not
    enough data (its algorithm never limited the window long enough), the nested-model answer
    (the algorithm the sender's reduces to, the sender's listed as equivalent: its own mechanism
    was not active in enough rounds to be judged), or an ambiguous list that holds it (the data
    cannot rank the candidates). An unknown is not counted: the data could have told."""
    if v["class"] in V.NAMED:
        return v["name"] == truth or truth in (v.get("equivalent") or ())
    if v["class"] == V.NOT_ENOUGH_DATA:
        return True
    return v["class"] == V.AMBIGUOUS and truth in (v.get("candidates") or ())


@pytest.mark.parametrize("which", ["tuning", "held-out"])
def test_right_where_the_data_can_tell_on_each_set(sample_verdicts, which) -> None:
    flows = [x for x in sample_verdicts if SPLITS[x[0]]["set"] == which]
    missed = [
        f"{name} flow {fid} ({truth}): {v['class']} {v['name']} — {v['reason'][:120]}"
        for name, fid, truth, v in flows
        if not _right_where_told(truth, v)
    ]
    assert 1 - len(missed) / len(flows) >= TARGET_WHERE_TOLD, missed


@pytest.fixture(scope="module")
def external_verdicts() -> dict[str, list[dict]]:
    ext = external(*NDT7_BBR)
    out = {}
    for p in sorted(ext.iterdir()):
        if not p.is_file() or p.name == "PROVENANCE.md" or p.name.startswith("ODD__"):
            continue
        doc = api.results(api.analyze([str(p)]).analysis)
        out[p.name] = [f["verdict"] for f in doc["captures"][0]["flows"]]
    return out


def test_the_mlab_ndt7_downloads_are_never_named_other_than_bbr(external_verdicts) -> None:
    # BBR senders (held out, all three outside the validated range: 1.1 ms RTT, 160 Mbit/s, ACK
    # bursts of 126–463 packets): C2E15 paced (15 % of its segments ACK-released) and is named
    # bbr; C2DA9 is neither paced nor ACK-clocked (74 %), nothing shows a rate-based sender, so
    # BBR is not named; 5BA77 paced but decreased (β 0.78 over 97 episodes, 27 % of its segments
    # retransmitted): conflicting signs, no rate-based name (docs/verdicts.md#rate-based)
    named = {}
    for name in NDT7_BBR:
        vs = external_verdicts[name]
        assert len(vs) == 1 and (vs[0]["class"] not in V.NAMED or vs[0]["name"] == "bbr"), (name, vs[0]["reason"])
        assert vs[0]["outside_range"], name
        named[name] = vs[0]["name"]
    assert named["mlab-etl__ndt-nnwk2_1611335823_00000000000C2E15.pcap"] == "bbr"


def test_external_captures_are_never_named_beyond_the_threshold(external_verdicts) -> None:
    assert len(external_verdicts) >= 25 and EXTERNAL.is_dir()
    for name, verdicts in external_verdicts.items():
        for v in verdicts:
            if v["class"] in V.NAMED:
                assert v["error"] <= v["threshold"], (name, v)
            else:
                assert v["name"] is None


def test_a_cubic_sender_at_a_microsecond_round_trip_is_not_named_bbr() -> None:
    # Linux CUBIC over veth + tbf at 1.4 Gbit/s, captured at the sender (tests/events/data/README.md):
    # round trip 3.6 µs, 27 % of the segments within 200 µs of the latest ACK — the host's send
    # bursts, not pacing. With that read as pacing the verdict named it bbr (8.6 % over 856
    # rounds); the ACK-clock measure tells nothing where the round trip is shorter than its window
    # (docs/verdicts.md#rate-based)
    cap = REPO / "tests" / "events" / "data" / "cubic-usrtt-sender.pcap"
    (f,) = [f for f in api.results(api.analyze([str(cap)]).analysis)["captures"][0]["flows"] if f["events"]["segments"]]
    v = f["verdict"]
    ev = v["evidence"]
    # (the share is kept; "paced" is null: not measurable at this round trip)
    assert f["vantage"] == "sender" and ev["paced"] is None and ev["ack_clocked"] is not None
    assert ev["min_rtt_s"] < 200e-6
    assert v["class"] not in V.NAMED and "bbr" not in v["candidates"], v["reason"]
