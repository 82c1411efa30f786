"""TCP-Fusion paper (Kaneko et al. 2007, §III.A): Figs. 5-6 and Table 1 on the testbed, scaled.

The paper (Linux 2.6.15 testbed, iperf): 100 Mbit/s, RTT 40 ms, buffer 500 KB (= BDP).
  Figs. 5-6  one variant flow + one Reno flow, random loss 1e-6...1e-1: below 1e-5 Reno gets its
             fair share (50 Mbit/s); Fusion, ARENO and CTCP take about as much as Reno there and
             the residual capacity Reno leaves above it; HSTCP, BIC and CUBIC push Reno far below
             its fair share at small loss.
  Table 1    two variant flows together (row = the flow whose throughput is given, column = the
             flow beside it), e.g. Fusion 46.0 vs ARENO 44.0 Mbit/s; Reno 10.3 beside HSTCP.

Here: 50 Mbit/s, RTT 40 ms, buffer = BDP (167 packets of 1500 B), 15-s runs, goodput over the
last 12 s. Variants: bpf_fusion, bpf_ctcp, bpf_highspeed (samples/testbed/cc/) and the kernel's
cubic and reno (no ARENO or BIC sender exists here). Loss 1e-2 and 1e-3 for Figs. 5-6 and 0
for Table 1 (whose Reno column is also the loss-free point of Figs. 5-6): a 15-s run at 50 Mbit/s
sends about 60 000 segments, so 1e-5 and below would be less than one random loss.

    sudo .venv/bin/python samples/testbed/experiments/fusion.py                 # both
    sudo .venv/bin/python samples/testbed/experiments/fusion.py --part fig56    # or table1
    python samples/testbed/experiments/fusion.py --analyze-only
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

RATE, RTT, DUR, WARM = 50.0, 40.0, 15.0, 3.0
BUF = round(common.bdp_pkts(RATE, RTT))
LOSSES = (1e-2, 1e-3)
CC = {"reno": "reno", "fusion": "bpf_fusion", "ctcp": "bpf_ctcp", "hstcp": "bpf_highspeed", "cubic": "cubic"}
VARIANTS = ("fusion", "ctcp", "hstcp", "cubic")
ORDER = ("reno", "fusion", "ctcp", "hstcp", "cubic")


def pair(a: str, b: str, loss: float, seed: int) -> common.Run:
    """Flow 1 (sport 40001) runs ``a``, flow 2 (40002) ``b``."""
    return common.Run(f"{a}-{b}-l{loss:g}", (CC[a], CC[b]), RATE, RTT, BUF, loss, DUR, seed, tags={"pair": [a, b]})


def runs(part: str, seed: int) -> list[common.Run]:
    out = []
    if part in ("fig56", "all"):
        out += [pair(v, "reno", loss, seed) for loss in LOSSES for v in ("reno", *VARIANTS)]
    if part == "table1-reno":  # the Reno row alone (the pairs with Reno), made first when time is short
        out += [pair("reno", y, 0.0, seed) for y in ORDER]
    if part in ("table1", "all"):
        # every pair of different variants, and Reno with Reno (the paper's diagonal of a variant
        # with itself is left out for time)
        out += [
            pair(ORDER[i], ORDER[j], 0.0, seed)
            for i in range(len(ORDER))
            for j in range(i, len(ORDER))
            if i != j or i == 0
        ]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("fig56", "table1", "table1-reno", "all"), default="all")
    ap.add_argument("--work", default="/tmp/hscc_experiments/fusion")
    ap.add_argument("--analyze-only", action="store_true")
    ap.add_argument("--make-only", action="store_true", help="make the runs; read none")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    work = Path(a.work)
    rs = runs(a.part, a.seed)
    if not a.analyze_only:
        common.make(rs, work)
    if a.make_only:
        return
    allr = runs("all", a.seed)
    m = {r.name: common.measure(r, work, WARM) for r in allr if (work / r.name / "meta.json").exists()}
    setup = {"rate_mbit": RATE, "rtt_ms": RTT, "buffer_pkts": BUF, "duration_s": DUR, "warmup_s": WARM}
    key = "goodput_mbit"
    rows = []
    for loss in (*LOSSES, 0.0):
        for v in ("reno", *VARIANTS):
            r = m.get(pair(v, "reno", loss, a.seed).name)
            if r is None and loss == 0.0:
                r = m.get(pair("reno", v, loss, a.seed).name)  # Table 1 runs (reno, v): flows swapped
                if r is not None and v != "reno":
                    r = r | {"flows": r["flows"][::-1]}
            if r is None:
                continue
            f1, f2 = r["flows"]
            # Definition 1 of the Compound TCP paper with m = l = 1: the Reno flow beside the
            # variant against the mean flow of the Reno-Reno run at the same loss
            base = m.get(pair("reno", "reno", loss, a.seed).name)
            st = None
            if base is not None and v != "reno":
                (gp,) = common.stolen_hscc(work / base["run"], work / r["run"], WARM)["groups"]
                st = round(gp["stolen"], 4)
            rows.append(
                {
                    "loss": loss,
                    "variant": v,
                    "variant_mbit": round(f1[key], 3),
                    "reno_mbit": round(f2[key], 3),
                    "reno_stolen": st,
                    "jain": round(r["group"]["jain"], 4),
                    "run": r["run"],
                }
            )
    common.write_results("fusion-fig5-6", {"setup": setup, "rows": rows})
    table = {}
    for i, x in enumerate(ORDER):
        for y in ORDER[i:]:
            r = m.get(pair(x, y, 0.0, a.seed).name)
            if r is None:
                continue
            f1, f2 = r["flows"]
            table.setdefault(x, {})[y] = round(f1[key], 3)  # x's throughput beside y
            if x == y:
                table[x][x] = round((f1[key] + f2[key]) / 2, 3)  # the paper gives one figure: the mean
                table[x][x + "_flows"] = [round(f1[key], 3), round(f2[key], 3)]
            else:
                table.setdefault(y, {})[x] = round(f2[key], 3)
    common.write_results("fusion-table1", {"setup": setup | {"loss": 0.0}, "table": table, "order": list(ORDER)})
    common.write_results("fusion-runs", {"setup": setup, "runs": list(m.values())})
    print(f"{len(m)} runs read from {work}")


if __name__ == "__main__":
    main()
