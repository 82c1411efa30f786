"""Acceptance against the Linux kernel's own view (samples/<name>/truth_*.parquet).

Bounds from issue #4:

* outstanding bytes match the kernel's ``snd_nxt − snd_una`` at the same ACK within 2 MSS for
  >= 95 % of ACKs. The ``tcp:tcp_probe`` tracepoint fires when an ACK arrives, *before* it is
  processed, so the kernel's value is compared with ours just before the same ACK:
  ``outstanding + acked_bytes`` (= snd_max − the previous snd_una). ACK and probe are paired by
  time (nearest, within 2 ms); for the receiver-side capture the ACK reaches the sender one
  one-way delay later (``delay_one_way_s`` in meta.json), so our times are shifted by it.
* congestion episodes (all kinds but ECN) match the kernel's transitions into Recovery or Loss
  (``tcp:tcp_cong_state_set``) with precision and recall >= 90 %, pooled over all samples: an
  episode and a transition match (one to one, in time order) when they are less than
  :data:`MATCH_TOL_NS` apart (after the same shift).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from hscc_trace.events import flow_events
from hscc_trace.flows import load

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
INDEX = SAMPLES / "index.json"
MATCH_TOL_NS = 10_000_000  # 10 ms
#: samples whose outstanding bytes miss the 2-MSS bound, with the share within it when measured. cubic-50m-receiver:
#: at the receiver, at 50 Mbit/s, about 4 segments leave the sender per TSval tick (1 ms), and the
#: receiver places each ACK among the sender's segments by the TSval it echoes: its flight is off by
#: up to 3-4 MSS either way (p5 / p95 −2 / +3 MSS), where the sender side is exact (99.98 %)
BELOW_BOUND = {"cubic-50m-receiver": 0.8856}

pytestmark = pytest.mark.skipif(not INDEX.exists(), reason="samples/index.json not found (no kernel samples)")


def _flows():
    idx = json.loads(INDEX.read_text())
    for s in idx["samples"]:
        d = SAMPLES / s["name"]
        if not (SAMPLES.parent / s["capture"]).exists() or not (d / "truth_probe.parquet").exists():
            continue
        meta = json.loads((d / "meta.json").read_text()) if (d / "meta.json").exists() else {}
        shift = int(meta.get("delay_one_way_s", 0) * 1e9) if s.get("capture_point") == "receiver" else 0
        for f in s.get("flows", []):
            if f.get("proto", "tcp") == "tcp":
                yield s["name"], d, SAMPLES.parent / s["capture"], int(f["sport"]), shift


@pytest.fixture(scope="module")
def results() -> list[dict]:
    out = []
    caps: dict[Path, object] = {}
    for name, d, capfile, sport, shift in _flows():
        cap = caps.get(d) or load(capfile)
        caps[d] = cap
        fl = cap.flows.filter((pl.col("sport") == sport) | (pl.col("dport") == sport))
        if fl.height == 0:
            continue
        fid = int(fl.sort("payload_ab", descending=True)["flow_id"][0])
        fe = flow_events(cap, fid)
        probe = pl.read_parquet(d / "truth_probe.parquet")
        ca = pl.read_parquet(d / "truth_ca_state.parquet")
        if "sport" in probe.columns:
            probe = probe.filter(pl.col("sport") == sport)
            ca = ca.filter(pl.col("sport") == sport)
        out.append({"name": name, "sport": sport, "shift": shift, "fe": fe, "probe": probe, "ca": ca})
    if not out:
        pytest.skip("no sample with kernel ground truth yet")
    return out


def test_outstanding_matches_kernel_within_2_mss(results):
    per = []
    n_tot = ok_tot = 0
    for r in results:
        fe = r["fe"]
        a = fe.acks.select(
            (pl.col("ts_ns") + r["shift"]).alias("ts_ns"),
            (pl.col("outstanding") + pl.col("acked_bytes")).alias("before"),
        ).sort("ts_ns")
        p = (
            r["probe"]
            .filter(pl.col("data_len") == 0)
            .select("ts_ns", (pl.col("snd_nxt") - pl.col("snd_una")).alias("kernel"))
            .sort("ts_ns")
        )
        j = a.join_asof(p, on="ts_ns", strategy="nearest", tolerance=2_000_000).drop_nulls()
        ok = int(((j["before"] - j["kernel"]).abs() <= 2 * fe.mss).sum())
        per.append((r["name"], r["sport"], ok, j.height))
        n_tot += j.height
        ok_tot += ok
        assert j.height >= 0.5 * fe.acks.height, f"{r['name']}: only {j.height} of {fe.acks.height} ACKs paired"
    bad = {p[0]: round(p[2] / p[3], 4) for p in per if p[2] < 0.95 * p[3]}
    # known shortfalls, each with its measured share (the test fails when one is fixed, so that it is
    # removed here, or when another sample falls below the bound)
    assert set(bad) == set(BELOW_BOUND), f"below 95 % within 2 MSS: {bad} (known: {BELOW_BOUND})"
    assert ok_tot / n_tot >= 0.95


def _transitions(ca: pl.DataFrame) -> list[int]:
    """Times of transitions *into* Recovery or Loss (from any other state, or Recovery → Loss)."""
    c = ca.sort("ts_ns").with_columns(prev=pl.col("state").shift(1))
    into = c.filter(
        pl.col("state").is_in(["recovery", "loss"]) & (pl.col("prev").is_null() | (pl.col("prev") != pl.col("state")))
    )
    return into["ts_ns"].to_list()


def _match(a: list[int], b: list[int], tol: int) -> int:
    """Greedy one-to-one matching of two sorted time lists within ``tol``."""
    i = j = m = 0
    while i < len(a) and j < len(b):
        if abs(a[i] - b[j]) <= tol:
            m += 1
            i += 1
            j += 1
        elif a[i] < b[j]:
            i += 1
        else:
            j += 1
    return m


def test_episodes_match_kernel_recovery_and_loss(results):
    n_ep = n_k = matched = 0
    detail = []
    for r in results:
        ep = r["fe"].episodes.filter(pl.col("kind") != "ecn")
        mine = sorted(t + r["shift"] for t in ep["start_ns"].to_list())
        kern = sorted(_transitions(r["ca"]))
        m = _match(mine, kern, MATCH_TOL_NS)
        n_ep += len(mine)
        n_k += len(kern)
        matched += m
        detail.append(f"{r['name']}:{r['sport']} ours {len(mine)} kernel {len(kern)} matched {m}")
    assert n_k >= 20, detail  # enough transitions for the bound to mean something
    precision = matched / n_ep
    recall = matched / n_k
    assert precision >= 0.9 and recall >= 0.9, f"P={precision:.3f} R={recall:.3f}: {detail}"
