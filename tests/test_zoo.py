"""The open set: flows of congestion controls the library does not replay must never get a name.

samples/zoo/ holds real Linux flows of BIC, H-TCP, Scalable, Veno, YeAH, Illinois, LP, NV, CDG and
DCTCP — each the kernel's own module (net/ipv4/tcp_*.c) ported to BPF (samples/testbed/cc/zoo/,
docs/zoo.md) — across three paths, with kernel truth. None of these algorithms is a library
algorithm, so the default ``analyze`` may answer ``unknown``, ``not enough data``,
``ambiguous`` or ``behaves as`` X, never ``identified``.

A ``behaves as`` verdict is accepted only where the named replay equals the sender's window
(median error at most ``SAME_WINDOW``): the algorithm's window genuinely was the library
algorithm's on that flow (docs/zoo.md counts those flows).

samples/field/ holds Linux Reno, CUBIC and BBR under the emulator's field conditions; here
only their conditions are checked against the emulator's own counts (the verdicts on them are
issue 38's, see docs/zoo.md).
"""

from __future__ import annotations

import functools
import json

import polars as pl
import pytest
from conftest import REPO

from hscc_trace import api
from hscc_trace.analysis import verdict as V

ZOO = REPO / "samples" / "zoo"
FIELD = REPO / "samples" / "field"
ZOO_INDEX = json.loads((ZOO / "index.json").read_text())["samples"]
FIELD_INDEX = json.loads((FIELD / "index.json").read_text())["samples"] if (FIELD / "index.json").exists() else []

#: the library's algorithms (a zoo flow must not be identified as any of them)
ALGORITHMS = set(api.algorithms())

#: a behaves-as verdict on a sender outside the library is accepted only where the named replay
#: equals the sender's window (median error at most this, a fraction): the flow behaved as that
#: algorithm (LP's delay test never fires again after its first cut, docs/zoo.md; CDG and DCTCP under
#: 0.5 % random loss react to the losses as Reno does)
SAME_WINDOW = 0.005


@functools.cache
def _verdicts() -> dict[str, list[dict]]:
    """{sample: [verdict of each data flow]}: one default analyze over every zoo capture."""
    caps = [str(REPO / s["capture"]) for s in ZOO_INDEX]
    doc = api.results(api.analyze(caps, api.AnalyzeOptions(jobs=2)).analysis)
    out: dict[str, list[dict]] = {}
    for s, c in zip(ZOO_INDEX, doc["captures"], strict=True):
        assert c["path"].endswith(s["capture"]), (c["path"], s["capture"])
        out[s["name"]] = [f["verdict"] for f in c["flows"] if f["events"]["segments"] > 0]
    return out


def test_the_zoo_covers_ten_algorithms_on_three_paths() -> None:
    per_alg: dict[str, set[tuple]] = {}
    for s in ZOO_INDEX:
        (fl,) = s["flows"]
        assert fl["cc"].startswith("zoo_") and fl["zoo"].startswith("net/ipv4/tcp_"), s["name"]
        assert fl["cc"].removeprefix("zoo_") not in ALGORITHMS  # the open set: none is in the library
        per_alg.setdefault(fl["cc"], set()).add((s["rate_bps"], s["base_rtt_s"], s["loss"]))
    assert len(per_alg) >= 10, sorted(per_alg)
    assert all(len(p) >= 2 for p in per_alg.values()), per_alg


@pytest.mark.parametrize("name", [s["name"] for s in ZOO_INDEX])
def test_the_zoo_sender_ran_the_committed_program(name: str) -> None:
    meta = json.loads((ZOO / name / "meta.json").read_text())
    (fl,) = meta["flows"]
    assert fl["sender_stats"]["cc"] == fl["cc"]  # the kernel's TCP_INFO: the socket ran the BPF program
    assert fl["bpf"]["source"] == f"samples/testbed/cc/zoo/{fl['cc'].removeprefix('zoo_')}.c"
    assert fl["retrans_seq_matched"].split("/")[0] == fl["retrans_seq_matched"].split("/")[1]
    assert meta["trace"]["stats"]["overrun"] == 0 and meta["trace"]["stats"]["dropped_events"] == 0
    if fl["cc"] == "zoo_dctcp":
        # behind the ECN-marking CoDel queue, ECN negotiated (the program never fell back to Reno), and
        # the receiver ran DCTCP too (its ECE echo); without random loss the queue grows past CoDel's
        # target and the marks show as CWR episodes in the truth (under 0.5 % loss the window stays
        # too small for a standing queue: no mark, and DCTCP reacts to the losses as Reno would)
        assert meta["field"]["aqm"] == "codel" and meta["field"]["ecn"]
        assert fl["receiver_stats"]["cc"] == "zoo_dctcp"
        assert (pl.read_parquet(ZOO / name / "truth_signals.parquet")["fallback"] == 0).all()
        if meta["loss"] == 0:
            assert meta["emulator"]["a_to_b"]["ecn_marked"] > 0
            assert (pl.read_parquet(ZOO / name / "truth_ca_state.parquet")["state"] == "cwr").sum() > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", [s["name"] for s in ZOO_INDEX])
def test_no_zoo_flow_is_identified_as_a_library_algorithm(name: str) -> None:
    verdicts = _verdicts()[name]
    assert verdicts, f"{name}: no data flow analyzed"
    for v in verdicts:
        assert v["class"] in V.CLASSES, v
        assert v["class"] != V.IDENTIFIED, f"{name}: identified as {v['name']} ({v['reason']})"
        if v["class"] == V.BEHAVES_AS:  # only where the sender's window was the named one's
            assert v["error"] <= SAME_WINDOW, f"{name}: behaves as {v['name']} ({v['reason']})"


@pytest.mark.parametrize("name", [s["name"] for s in FIELD_INDEX])
def test_each_field_condition_acted_on_the_flow(name: str) -> None:
    # the emulator's counters (meta.json -> emulator.a_to_b) show the condition did what it says
    meta = json.loads((FIELD / name / "meta.json").read_text())
    f, emu = meta["field"], meta["emulator"]["a_to_b"]
    if f["aqm"] == "codel":
        # ECN on at the sender: CoDel marks instead of dropping, and the sender's socket negotiated ECN
        assert f["ecn"] and emu["ecn_marked"] > 0 and emu["drop_aqm"] <= emu["ecn_marked"]
        assert emu["codel_target_ns"] == 5_000_000 and emu["codel_interval_ns"] == 100_000_000
        # the sender reacted to the echoed marks: the kernel entered CWR (not recovery) for them
        states = pl.read_parquet(FIELD / name / "truth_ca_state.parquet")["state"]
        assert (states == "cwr").sum() > 0
    if f["ack_aggregation_s"]:
        assert meta["emulator"]["b_to_a"]["agg_ns"] == round(f["ack_aggregation_s"] * 1e9)
    if f["jitter_s"]:
        assert emu["jitter_ns"] == round(f["jitter_s"] * 1e9)
    if f["policer_rate_bps"]:
        assert emu["drop_police"] > 0 and emu["policer_rate_bps"] == f["policer_rate_bps"]
    assert meta["trace"]["stats"]["overrun"] == 0
