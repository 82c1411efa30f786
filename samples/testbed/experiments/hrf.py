"""HRF-TCP paper (Ogura et al. 2012, §5.2.2 and §5.4): RTT-fairness on the testbed, scaled.

The paper (Linux 2.6.22 testbed with an emulator; ns-2): bottleneck 100 Mbit/s, access delays
giving RTTs 40 and 120 ms, drop-tail buffer 333 packets (the 40-ms flow's BDP), k and k' set for
a Reno flow of RTT 40 ms.
  §5.2 (Figs. 6-8)  two flows of the same protocol, RTT 40 and 120 ms: the throughput difference
                    Thr1 - Thr2 (Thr1 the 40-ms flow); HRF and CR near 0, Reno and CI favour the
                    short-RTT flow, W+CR+CR the long one.
  §5.4 (Figs. 10-11) a Reno flow of RTT 40 ms beside a Reno or an HRF flow of longer RTT, buffer
                    = BDP, random loss 1e-4: Reno/Reno is RTT-unfair, Reno/HRF stable.

Here: 50 Mbit/s, buffer 167 packets (the 40-ms flow's BDP at 50 Mbit/s), 20-s runs, goodput over
the last 15 s. The testbed has one propagation delay for all flows; run.py --extra-rtt holds the
second flow's ACKs 80 ms longer on the ACK path (linkemu --extra-ba), so the flows' base RTTs
are 40 and 120 ms while they share the one bottleneck queue. Protocols: the kernel's reno and
the BPF rows of hrf.c (bpf_hrf = W+CR+CI, bpf_hrf_cr, bpf_hrf_ci, bpf_hrf_wcrreno, bpf_hrf_wcrcr).
§5.2 without random loss; §5.4 with 1e-4 as the paper.

    sudo .venv/bin/python samples/testbed/experiments/hrf.py
    python samples/testbed/experiments/hrf.py --analyze-only
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

RATE, RTT, EXTRA, DUR, WARM = 50.0, 40.0, 80.0, 20.0, 5.0
BUF = round(common.bdp_pkts(RATE, RTT))
ROWS = {
    "reno": "reno",
    "cr": "bpf_hrf_cr",
    "ci": "bpf_hrf_ci",
    "w+cr+reno": "bpf_hrf_wcrreno",
    "w+cr+cr": "bpf_hrf_wcrcr",
    "hrf": "bpf_hrf",
}


def intra(row: str, seed: int) -> common.Run:
    cc = ROWS[row]
    return common.Run(
        f"intra-{row.replace('+', '')}", (cc, cc), RATE, RTT, BUF, 0.0, DUR, seed, (0.0, EXTRA), {"row": row}
    )


def inter(other: str, seed: int) -> common.Run:
    """Reno at 40 ms (flow 1) beside ``other`` at 120 ms (flow 2), loss 1e-4 (§5.4)."""
    return common.Run(
        f"inter-reno-{other}", ("reno", ROWS[other]), RATE, RTT, BUF, 1e-4, DUR, seed, (0.0, EXTRA), {"other": other}
    )


def runs(seed: int) -> list[common.Run]:
    return [intra(r, seed) for r in ROWS] + [inter("reno", seed), inter("hrf", seed)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/hscc_experiments/hrf")
    ap.add_argument("--analyze-only", action="store_true")
    ap.add_argument("--make-only", action="store_true", help="make the runs; read none")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    work = Path(a.work)
    rs = runs(a.seed)
    if not a.analyze_only:
        common.make(rs, work)
    if a.make_only:
        return
    m = {r.name: common.measure(r, work, WARM) for r in rs if (work / r.name / "meta.json").exists()}
    key = "goodput_mbit"
    rows = []
    for r in rs:
        x = m.get(r.name)
        if x is None:
            continue
        f1, f2 = x["flows"]
        t1, t2 = f1[key], f2[key]
        rows.append(
            {
                "experiment": "intra" if r.name.startswith("intra") else "inter",
                "flow1": f1["cc"],
                "flow2": f2["cc"],
                "rtt1_ms": f1["base_rtt_ms"],
                "rtt2_ms": f2["base_rtt_ms"],
                "thr1_mbit": round(t1, 3),
                "thr2_mbit": round(t2, 3),
                "thr1_minus_thr2_mbit": round(t1 - t2, 3),
                "ratio_thr1_thr2": round(t1 / t2, 3) if t2 else None,
                "rtt1_mean_ms": f1["rtt_mean_ms"],
                "rtt2_mean_ms": f2["rtt_mean_ms"],
                # hscc-trace's RTT-fairness: log(throughput ratio) / log(mean-RTT ratio) (groups.md)
                "exponent": round(x["group"]["rtt_fairness"][0]["exponent"], 3) if x["group"]["rtt_fairness"] else None,
                "jain": round(x["group"]["jain"], 4),
                "loss": r.loss,
                "run": r.name,
            }
        )
    setup = {"rate_mbit": RATE, "rtt_ms": [RTT, RTT + EXTRA], "buffer_pkts": BUF, "duration_s": DUR, "warmup_s": WARM}
    common.write_results("hrf-rtt", {"setup": setup, "rows": rows, "runs": list(m.values())})
    print(f"{len(m)} runs read from {work}")


if __name__ == "__main__":
    main()
