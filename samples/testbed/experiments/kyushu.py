"""Kyushu-TCP paper (Yoshimizu et al. 2010, §5.1.1): the α sweep of Figs. 6-8 on the testbed, scaled.

The paper (ns-2): one HSTCP or HSTCP+KTCP flow beside 20 SACK flows, bottleneck 1 Gbit/s with
one-way delay d = 10-200 ms (access links 3 ms), buffers of 200 packets, 300-s runs, 10 seeds;
α = 0.80, 0.90, 0.95.
  Fig. 6  the HSTCP(+KTCP) flow's throughput and the 20 SACK flows' total, against d;
  Fig. 7  normalized throughput of the high-speed flow = its throughput / all flows' total
          (0.5 = fair between the one flow and the 20 together): α = 0.90 close to 0.5 over a wide
          range of d; HSTCP alone far above it (SACK starved at d 50-100 ms);
  Fig. 8  normalized throughput of the SACK flows = their total beside HSTCP(+KTCP) / their total
          beside one more SACK flow instead.

Here: 50 Mbit/s, base RTT 40 and 120 ms, buffer 25 packets (a fixed count, as the paper's), one
high-speed flow (flow 1: bpf_highspeed, or Kyushu-TCP over it: bpf_ktcp_hs_a80, bpf_ktcp_hs
(α = 0.90), bpf_ktcp_hs_a95) beside N = 4 Reno flows (the kernel's reno, with SACK as every Linux
flow), and the baseline of 5 Reno flows; 20-s runs, goodput over the last 15 s, one seed. The α
builds are kyushu_highspeed.c (bpfcc.py VARIANTS): bpf_ktcp_hs with α and the name from -D.

    sudo .venv/bin/python samples/testbed/experiments/kyushu.py
    python samples/testbed/experiments/kyushu.py --analyze-only
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

RATE, BUF, DUR, WARM, N = 50.0, 25, 20.0, 5.0, 4
RTTS = (40.0, 120.0)
HIGH = {
    "reno": "reno",
    "hstcp": "bpf_highspeed",
    "ktcp0.80": "bpf_ktcp_hs_a80",
    "ktcp0.90": "bpf_ktcp_hs",
    "ktcp0.95": "bpf_ktcp_hs_a95",
}


def run(kind: str, rtt: float, seed: int) -> common.Run:
    return common.Run(
        f"{kind}+{N}reno-rtt{rtt:g}", (HIGH[kind],) + ("reno",) * N, RATE, rtt, BUF, 0.0, DUR, seed, tags={"kind": kind}
    )


def runs(seed: int) -> list[common.Run]:
    return [run(k, rtt, seed) for rtt in RTTS for k in HIGH]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/hscc_experiments/kyushu")
    ap.add_argument("--analyze-only", action="store_true")
    ap.add_argument("--make-only", action="store_true", help="make the runs; read none")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rtt", type=float, default=0.0, help="make only the runs of this base RTT (ms)")
    a = ap.parse_args()
    work = Path(a.work)
    rs = runs(a.seed)
    if not a.analyze_only:
        common.make([r for r in rs if not a.rtt or r.rtt_ms == a.rtt], work)
    if a.make_only:
        return
    m = {r.name: common.measure(r, work, WARM) for r in rs if (work / r.name / "meta.json").exists()}
    key = "goodput_mbit"
    rows = []
    for rtt in RTTS:
        base = m.get(run("reno", rtt, a.seed).name)
        for k in HIGH:
            x = m.get(run(k, rtt, a.seed).name)
            if x is None:
                continue
            hi = x["flows"][0][key]
            sack = common.total(x, lambda f: f["sport"] > 40001, key)
            row = {
                "rtt_ms": rtt,
                "kind": k,
                "high_speed_mbit": round(hi, 3),
                "reno_total_mbit": round(sack, 3),
                "normalized_high_speed": round(hi / (hi + sack), 4),
            }
            if base is not None:
                b = common.total(base, lambda f: f["sport"] > 40001, key)
                row["normalized_reno"] = round(sack / b, 4)
            rows.append(row | {"run": x["run"]})
    setup = {
        "rate_mbit": RATE,
        "rtt_ms": list(RTTS),
        "buffer_pkts": BUF,
        "reno_flows": N,
        "duration_s": DUR,
        "warmup_s": WARM,
    }
    common.write_results("kyushu-alpha", {"setup": setup, "rows": rows, "runs": list(m.values())})
    print(f"{len(m)} runs read from {work}")


if __name__ == "__main__":
    main()
