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
    # exactly as in make_all.sh (the receiver-side tcpdump runs too: it shifts timing)
    "reno-bdp": "--cc reno --rate 10mbit --delay 20ms --buffer-pkts 33 --loss 0 --duration 10 --capture both",
    "reno-loss": "--cc reno --rate 10mbit --delay 20ms --buffer-pkts 100 --loss 0.005 --duration 10 --seed 1",
    "cubic-loss": "--cc cubic --rate 10mbit --delay 20ms --buffer-pkts 100 --loss 0.005 --duration 10 --seed 2",
}
TOLERANCE = 0.10


def rel_diff(a: float, b: float) -> float:
    m = (a + b) / 2
    return abs(a - b) / m if m else 0.0


def figures(meta: dict, out: Path) -> dict[str, float]:
    import polars as pl

    fl = meta["flows"][0]
    ca = pl.read_parquet(out / "truth_ca_state.parquet")["state"].to_list()
    episodes = sum(1 for a, b in zip(["open"] + ca, ca) if b == "recovery" and a in ("open", "disorder"))
    return {
        "recovery_episodes": episodes,
        "throughput_bps": fl["capture_summary"]["throughput_bps"],
        "retransmitted_segments": fl["capture_summary"]["retransmitted_segments"],
        "kernel_total_retrans": fl["sender_stats"]["tcp_info_at_end_of_writing"]["total_retrans"],
    }


def table(results: list[dict]) -> str:
    rows = [
        "| sample | throughput per run (Mbit/s) | retransmitted segments per run | "
        "kernel total_retrans per run | recovery episodes per run | largest pairwise difference | "
        "within 10 % |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        rs = r.get("runs", [r["run1"], r["run2"]])
        tput = " / ".join(f"{x['throughput_bps'] / 1e6:.3f}" for x in rs)
        rtx = " / ".join(str(x["retransmitted_segments"]) for x in rs)
        krtx = " / ".join(str(x["kernel_total_retrans"]) for x in rs)
        eps = " / ".join(str(x.get("recovery_episodes", "?")) for x in rs)
        worst = ", ".join(f"{k} {v:.1%}" for k, v in r["rel_diff"].items())
        rows.append(
            f"| `{r['name']}` | {tput} | {rtx} | {krtx} | {eps} | {worst} | "
            f"{'yes' if r['within_10_percent'] else 'NO'} |"
        )
    return "\n".join(rows)


def update_readme(md: str) -> None:
    readme = HERE.parent / "README.md"
    text = readme.read_text()
    b, e = "<!-- BEGIN REPEAT -->", "<!-- END REPEAT -->"
    if b in text and e in text:
        head, rest = text.split(b, 1)
        readme.write_text(head + b + "\n" + md + "\n" + e + rest.split(e, 1)[1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="reno-bdp,reno-loss,cubic-loss")
    ap.add_argument("--out", default=str(HERE.parent / "repeatability.json"))
    ap.add_argument("--runs", type=int, default=2, help="runs per configuration (all pairs are compared)")
    ap.add_argument("--readme-only", action="store_true", help="only refresh samples/README.md from --out")
    a = ap.parse_args()
    if a.readme_only:
        rec = json.loads(Path(a.out).read_text())
        update_readme(table(rec["results"]))
        return 0 if all(r["within_10_percent"] for r in rec["results"]) else 1
    results, ok = [], True
    for name in a.only.split(","):
        runs = []
        for i in range(1, a.runs + 1):
            out = Path(f"/tmp/hscc_repeat/{name}-run{i}")
            cmd = [
                sys.executable,
                str(HERE / "run.py"),
                "--name",
                name,
                "--out",
                str(out),
                "--receiver-out",
                f"{out}-receiver",
                *shlex.split(CONFIGS[name]),
            ]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            runs.append(figures(json.loads((out / "meta.json").read_text()), out))
        # largest disagreement over all pairs of runs (= max vs min of each figure)
        diffs = {k: max(rel_diff(x[k], y[k]) for x in runs for y in runs) for k in runs[0]}
        agree = all(v <= TOLERANCE for v in diffs.values())
        ok &= agree
        results.append(
            {
                "name": name,
                "args": CONFIGS[name],
                "run1": runs[0],
                "run2": runs[1],
                "runs": runs,
                "rel_diff": diffs,
                "within_10_percent": agree,
            }
        )
    Path(a.out).write_text(json.dumps({"tolerance": TOLERANCE, "results": results}, indent=1) + "\n")
    md = table(results)
    print(md)
    if Path(a.out).resolve() == (HERE.parent / "repeatability.json").resolve():
        update_readme(md)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
