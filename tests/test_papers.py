"""The papers' experiments (samples/testbed/experiments/, docs/papers.md).

The α sweep of the Kyushu-TCP paper runs builds of ``cc/kyushu_alpha.c``: they must be
bpf_ktcp_hs in everything but α, so its hooks are kyushu_highspeed.c's, character for character,
and its congestion-event rule is kyushu.h's with only α renamed.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CC = ROOT / "samples" / "testbed" / "cc"

_spec = importlib.util.spec_from_file_location("hscc_papers_bpfcc", ROOT / "samples" / "testbed" / "bpfcc.py")
bpfcc = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bpfcc
_spec.loader.exec_module(bpfcc)


def _between(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i : text.index(end, i)]


def test_kyushu_alpha_hooks_are_kyushu_highspeeds():
    ref = (CC / "kyushu_highspeed.c").read_text()
    sweep = (CC / "kyushu_alpha.c").read_text()
    hooks = _between(ref, "struct ktcp_hs {", 'SEC(".struct_ops")')
    assert len(hooks) > 1500 and hooks in sweep


def test_kyushu_alpha_congestion_rule_is_kyushu_hs_but_alpha():
    ref = _between((CC / "kyushu.h").read_text(), "static __always_inline void ktcp_congestion(", "\n}\n")
    sweep = _between((CC / "kyushu_alpha.c").read_text(), "static __always_inline void ktcp_congestion_sweep(", "\n}\n")
    renamed = (
        ref.replace("ktcp_congestion(", "ktcp_congestion_sweep(")
        .replace("KTCP_ALPHA_NUM", "KTCP_SWEEP_NUM")
        .replace("KTCP_ALPHA_DEN", "KTCP_SWEEP_DEN")
    )
    assert sweep == renamed
    # the signal fields (truth_signals columns) are bpf_ktcp_hs's
    assert bpfcc.signal_fields("bpf_ktcp_hs_a80") == bpfcc.signal_fields("bpf_ktcp_hs")


def test_alpha_variants():
    # α = NUM/DEN: 0.80 and 0.95 beside bpf_ktcp_hs's 0.90 (Kyushu paper §5.1.1); struct_ops names
    # fit TCP_CA_NAME_MAX (16 bytes with the NUL)
    got = {n: int(s.defines["KTCP_SWEEP_NUM"]) / int(s.defines["KTCP_SWEEP_DEN"]) for n, s in bpfcc.VARIANTS.items()}
    assert got == {"bpf_ktcp_hs_a80": 0.8, "bpf_ktcp_hs_a95": 0.95}
    assert all(len(n) <= 15 and bpfcc.VARIANTS[n].defines["CC_VAR"] == n for n in got)
    assert not set(bpfcc.VARIANTS) & set(bpfcc.SENDERS)
