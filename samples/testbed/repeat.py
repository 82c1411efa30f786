"""Repeatability check: run the testbed twice with identical settings and compare.

Root only (it runs samples/testbed/run.py). For each configuration it makes two runs into
/tmp/hscc_repeat/<name>-run<i>, then compares, between the two runs, the data throughput and
the retransmitted-segment count measured from each sender-side capture, and the kernel's
tcpi_total_retrans. The issue's criterion is agreement within 10 %
(|a − b| / mean(a, b) ≤ 0.10). Writes samples/repeatability.json and prints a markdown table;
exits 1 if any figure disagrees by more than 10 %.

    sudo .venv/bin/python samples/testbed/repeat.py [--only reno-bdp,cubic-loss]

tests/test_samples.py::test_repeatability_live runs this when HSCC_TESTBED=1 and root.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = {
    "reno-bdp": "--cc reno --rate 10mbit --delay 20ms --buffer-pkts 33 --loss 0 --duration 10",
    "reno-loss": "--cc reno --rate 10mbit --delay 20ms --buffer-pkts 100 --loss 0.005 --duration 10 --seed 1",
    "cubic-loss": "--cc cubic --rate 10mbit --delay 20ms --buffer-pkts 100 --loss 0.005 --duration 10 --seed 2",
}
TOLERANCE = 0.10


def rel_diff(a: float, b: float) -> float:
    m = (a + b) / 2
    return abs(a - b) / m if m else 0.0


def figures(meta: dict) -> dict[str, float]:
    fl = meta["flows"][0]
    return {
        "throughput_bps": fl["capture_summary"]["throughput_bps"],
        "retransmitted_segments": fl["capture_summary"]["retransmitted_segments"],
        "kernel_total_retrans": fl["sender_stats"]["tcp_info_at_end_of_writing"]["total_retrans"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="reno-bdp,reno-loss,cubic-loss")
    ap.add_argument("--out", default=str(HERE.parent / "repeatability.json"))
    a = ap.parse_args()
    results, ok = [], True
    for name in a.only.split(","):
        runs = []
        for i in (1, 2):
            out = Path(f"/tmp/hscc_repeat/{name}-run{i}")
            cmd = [sys.executable, str(HERE / "run.py"), "--name", name, "--out", str(out), *shlex.split(CONFIGS[name])]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            runs.append(figures(json.loads((out / "meta.json").read_text())))
        diffs = {k: rel_diff(runs[0][k], runs[1][k]) for k in runs[0]}
        agree = all(v <= TOLERANCE for v in diffs.values())
        ok &= agree
        results.append({"name": name, "args": CONFIGS[name], "run1": runs[0], "run2": runs[1],
                        "rel_diff": diffs, "within_10_percent": agree})
    Path(a.out).write_text(json.dumps({"tolerance": TOLERANCE, "results": results}, indent=1) + "\n")
    print("| sample | throughput run 1 / run 2 (Mbit/s) | retransmitted segments run 1 / run 2 | "
          "kernel total_retrans run 1 / run 2 | max rel. diff |")
    print("|---|---|---|---|---|")
    for r in results:
        r1, r2 = r["run1"], r["run2"]
        print(f"| {r['name']} | {r1['throughput_bps'] / 1e6:.3f} / {r2['throughput_bps'] / 1e6:.3f} | "
              f"{r1['retransmitted_segments']} / {r2['retransmitted_segments']} | "
              f"{r1['kernel_total_retrans']} / {r2['kernel_total_retrans']} | {max(r['rel_diff'].values()):.1%} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
