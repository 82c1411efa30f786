"""`check` gates on bottleneck groups (hscc_trace.analysis.group_check): Jain, stolen, friendliness."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hscc_trace.analysis import check
from hscc_trace.analysis.group_check import check_groups, parse_bounds

REPO = Path(__file__).resolve().parents[2]


def _flow(fid, algo, bps, share, friend=None):
    return {
        "flow_id": fid,
        "label": f"flow {fid} 10.0.0.1:{40000 + fid} → 10.0.0.2:5001",
        "algo": algo,
        "goodput_bps": bps,
        "share": share,
        "friendliness": friend,
    }


def _doc(*groups_):
    return {"captures": [{"path": "x.pcap", "error": None, "groups": list(groups_)}]}


# reno 3 Mbit/s beside bbr 9 Mbit/s: Jain 12²/(2·(9 + 81)) = 144/180 = 0.8; bbr's friendliness 9/3 = 3
UNFAIR = {
    "index": 0,
    "flow_ids": [0, 1],
    "jain": 0.8,
    "reference": [0],
    "flows": [_flow(0, "reno", 3e6, 0.25), _flow(1, "bbr", 9e6, 0.75, 3.0)],
}
# a baseline of two reno flows at 5 and 4 Mbit/s: P = 4.5; against UNFAIR's reno (Q = 3):
# stolen = (4.5 − 3)/4.5 = 1/3
BASE = {
    "index": 0,
    "flow_ids": [0, 1],
    "jain": 0.99,
    "reference": [0, 1],
    "flows": [_flow(0, "reno", 5e6, 0.556, 1.25), _flow(1, "reno", 4e6, 0.444, 0.8)],
}


def test_gates_name_the_flows():
    vs = check_groups(_doc(UNFAIR), min_jain=0.9, max_stolen=0.1, baseline_groups=[BASE], friendliness=(0.5, 2))
    by = {v.test: v for v in vs}
    assert [v.status for v in vs] == [check.FAIL, check.FAIL, check.FAIL]
    j = by["min-jain 0.9"]
    assert "Jain's index 0.800 < 0.9" in j.message
    assert "flow 0 10.0.0.1:40000 → 10.0.0.2:5001 [reno] 3.00 Mbit/s, share 25.0 %" in j.message
    assert "[bbr] 9.00 Mbit/s" in j.message
    s = by["max-stolen 0.1"]
    assert s.metrics["stolen"] == pytest.approx(1 / 3)
    assert "bandwidth stolen 33.3 % > 10 %" in s.message and "[reno] 3.00 Mbit/s" in s.message
    f = by["friendliness 0.5..2"]
    assert f.flow_id == 1 and "friendliness 3.00 outside 0.5..2" in f.message and "reference flow 0" in f.message
    # loose bounds pass; JUnit: one testcase each, the failure message naming the flows
    ok = check_groups(_doc(UNFAIR), min_jain=0.8, max_stolen=0.34, baseline_groups=[BASE], friendliness=(0.5, 3))
    assert [v.status for v in ok] == [check.PASS] * 3
    root = ET.fromstring(check.junit_xml(vs))
    fails = [tc.find("failure").get("message") for tc in root.iter("testcase")]
    assert len(fails) == 3 and all("flow 0" in m or "flow 1" in m for m in fails)


def test_gates_skip_what_cannot_be_judged():
    nogroup = {"captures": [{"path": "y.pcap", "error": None, "groups": []}]}
    (v,) = check_groups(nogroup, min_jain=0.9)
    assert v.status == check.SKIP and "no bottleneck group" in v.message
    alone = {**UNFAIR, "flows": [{**f, "algo": "bbr", "friendliness": None} for f in UNFAIR["flows"]]}
    vs = check_groups(_doc(alone), max_stolen=0.1, baseline_groups=[BASE], friendliness=(0.5, 2))
    assert [v.status for v in vs] == [check.SKIP, check.SKIP]
    assert check_groups(_doc(UNFAIR)) == []
    assert parse_bounds("0.5:2") == (0.5, 2.0) and parse_bounds("0.8..1.25") == (0.8, 1.25)
    with pytest.raises(ValueError):
        parse_bounds("2:1")


def test_check_cli_min_jain_on_samples(tmp_path):
    # BBR takes 84 % of bbr-vs-reno's 20 Mbit/s (Jain 0.68); Reno and CUBIC share reno-vs-cubic-rtt20's
    # evenly (0.996): one failure, one pass, exit 1
    junit = tmp_path / "check.xml"
    cmd = [
        sys.executable,
        "-m",
        "hscc_trace",
        "check",
        str(REPO / "samples/bbr-vs-reno/capture.pcap.gz"),
        str(REPO / "samples/reno-vs-cubic-rtt20/capture.pcap"),
        "--algo",
        "reno,cubic,bbr",
        "--min-jain",
        "0.9",
        "--junit",
        str(junit),
    ]
    got = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert got.returncode == 1, got.stderr
    assert "1 passed, 1 failed" in got.stdout
    root = ET.fromstring(junit.read_text())
    (fail,) = [tc.find("failure") for tc in root.iter("testcase") if tc.find("failure") is not None]
    assert "Jain's index 0.68" in fail.get("message") and "[bbr]" in fail.get("message")
    # usage: --max-stolen without its baseline is exit 2 with one line
    bad = subprocess.run(cmd[:5] + ["--max-stolen", "0.1"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--stolen-baseline" in bad.stderr and bad.stderr.count("\n") == 1
