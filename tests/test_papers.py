"""The papers' experiments (samples/testbed/experiments/, docs/papers.md).

The α sweep of the Kyushu-TCP paper runs builds of ``cc/kyushu_highspeed.c`` itself (bpf_ktcp_hs)
with eq. (1)'s α and the struct_ops name given by ``-D``: nothing else may differ.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CC = ROOT / "samples" / "testbed" / "cc"

_spec = importlib.util.spec_from_file_location("hscc_papers_bpfcc", ROOT / "samples" / "testbed" / "bpfcc.py")
bpfcc = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bpfcc
_spec.loader.exec_module(bpfcc)


def test_alpha_variants_are_bpf_ktcp_hs_but_alpha_and_name():
    base = bpfcc.SENDERS["bpf_ktcp_hs"]
    for name, s in bpfcc.VARIANTS.items():
        assert s.source == base.source == "kyushu_highspeed.c" and s.algo == base.algo
        assert set(s.defines) == {"KTCP_ALPHA_NUM", "KTCP_ALPHA_DEN", "KTCP_HS_NAME"}
        assert s.defines["KTCP_HS_NAME"] == name
        # the signal fields (truth_signals columns) are bpf_ktcp_hs's
        assert bpfcc.signal_fields(name) == bpfcc.signal_fields("bpf_ktcp_hs")


def test_alpha_and_name_are_build_choices_with_bpf_ktcp_hs_defaults():
    # kyushu.h: α = 9/10 unless the build says otherwise; kyushu_highspeed.c: the name likewise
    h = (CC / "kyushu.h").read_text()
    assert "#ifndef KTCP_ALPHA_NUM" in h and "#define KTCP_ALPHA_NUM 9" in h and "#define KTCP_ALPHA_DEN 10" in h
    assert "k->w2 = k->w1 * KTCP_ALPHA_NUM / KTCP_ALPHA_DEN;" in h
    c = (CC / "kyushu_highspeed.c").read_text()
    assert "#ifndef KTCP_HS_NAME\n#define KTCP_HS_NAME bpf_ktcp_hs\n" in c
    assert "struct tcp_congestion_ops KTCP_HS_NAME = {" in c and ".name = KTCP_HS_STR(KTCP_HS_NAME)," in c


def test_alpha_variants():
    # α = NUM/DEN: 0.80 and 0.95 beside bpf_ktcp_hs's 0.90 (Kyushu paper §5.1.1); struct_ops names
    # fit TCP_CA_NAME_MAX (16 bytes with the NUL)
    got = {n: int(s.defines["KTCP_ALPHA_NUM"]) / int(s.defines["KTCP_ALPHA_DEN"]) for n, s in bpfcc.VARIANTS.items()}
    assert got == {"bpf_ktcp_hs_a80": 0.8, "bpf_ktcp_hs_a95": 0.95}
    assert all(len(n) <= 15 for n in got)
    assert not set(bpfcc.VARIANTS) & set(bpfcc.SENDERS)


# --- the kept experiment capture, read again by hscc-trace --------------------------------------

EXP = ROOT / "samples" / "testbed" / "experiments"
KEPT = EXP / "kept"
PAGE = ROOT / "docs" / "papers.md"


def _tables():
    spec = importlib.util.spec_from_file_location("hscc_papers_tables", EXP / "tables.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_page_shows_the_results_files():
    # every table of docs/papers.md is the one tables.py prints from results/*.json now
    text = PAGE.read_text()
    assert text.count("<!-- table:") >= 7
    assert _tables().inject(text) == text, "run: python samples/testbed/experiments/tables.py --inject docs/papers.md"


def test_kept_fusion_run_read_again_gives_the_quoted_figures():
    """TCP-Fusion Fig. 5 at loss 1e-2: one bpf_fusion flow beside one Reno flow (the kept
    capture, 15 s at 50 Mbit/s, RTT 40 ms), read with hscc-trace's groups as fusion.py reads it
    (GroupOptions(skip_s=3)); its goodputs are the ones results/fusion-fig5-6.json holds and
    docs/papers.md quotes, and compare() against the Reno-only baseline's groups (kept as JSON)
    gives the bandwidth stolen the page quotes."""
    import json

    from hscc_trace import api
    from hscc_trace.analysis import groups as G

    (g,) = api.group_input(
        KEPT / "fusion-reno-l0.01" / "capture.pcap.gz", options=G.GroupOptions(skip_s=3.0), algorithms=["reno"]
    )
    by = {f["algo"]: f for f in g["flows"]}
    assert set(by) == {"fusion", "reno"} and {f["algo_source"] for f in g["flows"]} == {"truth"}
    (row,) = [
        r
        for r in json.loads((EXP / "results" / "fusion-fig5-6.json").read_text())["rows"]
        if r["loss"] == 0.01 and r["variant"] == "fusion"
    ]
    assert by["fusion"]["goodput_bps"] / 1e6 == pytest.approx(row["variant_mbit"], abs=1e-3)
    assert by["reno"]["goodput_bps"] / 1e6 == pytest.approx(row["reno_mbit"], abs=1e-3)
    share = by["reno"]["goodput_bps"] / (by["reno"]["goodput_bps"] + by["fusion"]["goodput_bps"])
    quoted = f"| 0.01 | fusion | {row['variant_mbit']:.1f} | {row['reno_mbit']:.1f} | {100 * share:.0f} % |"
    assert g["jain"] == pytest.approx(row["jain"], abs=1e-4)
    assert quoted in PAGE.read_text()
    # Definition 1 of the Compound TCP paper with m = l = 1: the Reno flow beside Fusion against
    # the mean Reno flow of two Reno flows (P, from the baseline's groups)
    base = json.loads((KEPT / "reno-reno-l0.01.groups.json").read_text())
    c = G.compare(base, [g], regular="reno")
    (pair,) = c.groups
    p = sum(f["goodput_bps"] for f in base[0]["flows"]) / 2
    assert pair["baseline_regular_bps"] == pytest.approx(p)
    assert pair["stolen"] == pytest.approx((p - by["reno"]["goodput_bps"]) / p)
    assert pair["stolen"] == pytest.approx(row["reno_stolen"], abs=1e-4)
    assert f"{quoted} {100 * pair['stolen']:.0f} % | {row['jain']:.2f} |" in PAGE.read_text()
