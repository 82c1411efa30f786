"""Shared harness of the papers' experiments (samples/testbed/experiments/*.py).

Each experiment script lists its runs (congestion controls, rate, delay, buffer, loss, per-flow
extra RTT), makes every run that is not on disk yet with the testbed (``samples/testbed/run.py``,
one run at a time under ``flock /tmp/hscc-testbed.lock``, since the testbed's namespaces and
devices have fixed names), then reads every run and writes one small JSON of results under
``samples/testbed/experiments/results/``. The runs' captures (a few MB each) go to ``--work``
(default ``/tmp/hscc_experiments/<experiment>``), not into the repository; a run already there is
reused, so an interrupted experiment resumes where it stopped.

Per-flow throughput is read two ways from each run:

* **hscc-trace**: each flow's throughput from the capture alone, the figures docs/papers.md
  quotes (``flow_rates_trace``);
* **kernel truth**: the bytes the receiver acknowledged (``truth_probe.parquet``: the sender's
  ``snd_una`` at every ACK, per source port) — the cross-check (``flow_rates_truth``).

Both measure the same window: from ``warmup_s`` after the first data packet to the moment the
first flow stops writing (every flow runs for the whole window; all start together).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTBED = HERE.parent
ROOT = TESTBED.parent.parent
RESULTS = HERE / "results"
LOCK = "/tmp/hscc-testbed.lock"
MSS = 1448  # payload bytes per segment on the testbed (offloads off, timestamps on)
WIRE = 1500  # IP bytes per full-sized data packet (the emulator serializes IP length)


@dataclass(frozen=True)
class Run:
    """One testbed run: flows in order (sport 40001, 40002, ...), link, duration, seed."""

    name: str
    cc: tuple[str, ...]
    rate_mbit: float
    rtt_ms: float  # base RTT = 2 x one-way delay
    buffer_pkts: int
    loss: float = 0.0
    duration_s: float = 20.0
    seed: int = 1
    extra_rtt_ms: tuple[float, ...] = ()  # per flow, added on the ACK path (run.py --extra-rtt)
    tags: dict = field(default_factory=dict, compare=False, hash=False)

    def command(self, out: Path) -> list[str]:
        cmd = [
            sys.executable,
            str(TESTBED / "run.py"),
            "--name",
            self.name,
            "--cc",
            ",".join(self.cc),
            "--rate",
            f"{self.rate_mbit:g}mbit",
            "--delay",
            f"{self.rtt_ms / 2:g}ms",
            "--buffer-pkts",
            str(self.buffer_pkts),
            "--loss",
            f"{self.loss:g}",
            "--duration",
            f"{self.duration_s:g}",
            "--seed",
            str(self.seed),
            "--gzip",
            "--retry-late",
            "2",
            "--out",
            str(out),
        ]
        if any(self.extra_rtt_ms):
            cmd += ["--extra-rtt", ",".join(f"{x:g}ms" for x in self.extra_rtt_ms)]
        return cmd


def bdp_pkts(rate_mbit: float, rtt_ms: float) -> float:
    """Bandwidth-delay product in full-sized packets (1500 B on the wire)."""
    return rate_mbit * 1e6 * rtt_ms / 1e3 / 8 / WIRE


def make(runs: list[Run], work: Path, log=print) -> None:
    """Make every run not yet on disk (each under the testbed lock)."""
    work.mkdir(parents=True, exist_ok=True)
    todo = [r for r in runs if not (work / r.name / "meta.json").exists()]
    for i, r in enumerate(todo, 1):
        out = work / r.name
        cmd = ["flock", LOCK, *r.command(out)]
        t0 = time.monotonic()
        with open(work / f"{r.name}.log", "w") as f:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
        log(f"[{i}/{len(todo)}] {r.name}: rc {rc}, {time.monotonic() - t0:.0f} s")
        if rc != 0:
            (out / "meta.json").unlink(missing_ok=True)
            raise SystemExit(f"run {r.name} failed (log {work / (r.name + '.log')})")


def window(run_dir: Path, warmup_s: float) -> tuple[int, int]:
    """(t0, t1) in capture ns: warmup_s after the first data ACK to the first flow's last ACK."""
    import polars as pl

    p = pl.read_parquet(run_dir / "truth_probe.parquet", columns=["ts_ns", "sport"])
    g = p.group_by("sport").agg(pl.col("ts_ns").min().alias("a"), pl.col("ts_ns").max().alias("b"))
    t0 = int(g["a"].max()) + int(warmup_s * 1e9)
    t1 = int(g["b"].min())
    if t1 <= t0:
        raise SystemExit(f"{run_dir}: no common window after a {warmup_s} s warm-up")
    return t0, t1


def flow_rates_truth(run_dir: Path, t0: int, t1: int) -> dict[int, float]:
    """{sport: goodput in Mbit/s} over [t0, t1] from the kernel's snd_una (bytes acknowledged)."""
    import polars as pl

    p = pl.read_parquet(run_dir / "truth_probe.parquet", columns=["ts_ns", "sport", "snd_una"]).sort("ts_ns")
    out = {}
    for (sport,), g in p.group_by("sport"):
        # snd_una is a step function of time: its value at t is the last probe at or before t
        a = g.filter(pl.col("ts_ns") <= t0)["snd_una"]
        b = g.filter(pl.col("ts_ns") <= t1)["snd_una"]
        una0 = int(a[-1]) if len(a) else 0
        out[int(sport)] = (int(b[-1]) - una0) * 8 / ((t1 - t0) / 1e9) / 1e6
    return dict(sorted(out.items()))


def flow_rates_trace(run_dir: Path, t0: int, t1: int) -> dict[int, float]:
    """{sport: goodput in Mbit/s} over [t0, t1] from the capture with hscc-trace (the analyzer's
    own events: the highest cumulative ACK the sender received by each instant, per flow)."""
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from hscc_trace import api

    cap = api.load(run_dir / "capture.pcap.gz")
    out = {}
    sport = {r["flow_id"]: r["sport"] for r in cap.flows.iter_rows(named=True)}
    for fid, ev in api.all_events(cap).items():
        acks = ev.acks
        t = acks["ts_ns"].to_numpy()
        a = np.maximum.accumulate(acks["ack"].to_numpy())
        i0, i1 = np.searchsorted(t, t0, "right") - 1, np.searchsorted(t, t1, "right") - 1
        una0 = int(a[i0]) if i0 >= 0 else 0
        out[int(sport[fid])] = (int(a[i1]) - una0) * 8 / ((t1 - t0) / 1e9) / 1e6
    return dict(sorted(out.items()))


def run_meta(run_dir: Path) -> dict:
    return json.loads((run_dir / "meta.json").read_text())


def emulator_ok(meta: dict) -> dict:
    late = meta["emulator"]["a_to_b"]["release_late_us"]
    return {"late_p50_us": late["p50"], "late_p99_us": late["p99"], "ok": late["p50"] < 200 and late["p99"] < 1000}


def measure(run: Run, work: Path, warmup_s: float) -> dict:
    """Per-flow goodput (Mbit/s) of one run, hscc-trace's and the kernel's, and the run's facts."""
    d = work / run.name
    meta = run_meta(d)
    t0, t1 = window(d, warmup_s)
    truth = flow_rates_truth(d, t0, t1)
    flows = []
    for i, fl in enumerate(meta["flows"]):
        flows.append(
            {
                "sport": fl["sport"],
                "cc": fl["cc"],
                "base_rtt_ms": round(1e3 * fl.get("base_rtt_s", meta["base_rtt_s"]), 3),
                "goodput_mbit_truth": round(truth[fl["sport"]], 3),
                "retrans_kernel": fl["sender_stats"].get("total_retrans"),
            }
        )
        del i
    e = meta["emulator"]["a_to_b"]
    return {
        "run": run.name,
        "cc": list(run.cc),
        "rate_mbit": run.rate_mbit,
        "rtt_ms": run.rtt_ms,
        "buffer_pkts": run.buffer_pkts,
        "loss": run.loss,
        "duration_s": run.duration_s,
        "seed": run.seed,
        "extra_rtt_ms": list(run.extra_rtt_ms),
        "window_s": round((t1 - t0) / 1e9, 3),
        "warmup_s": warmup_s,
        "flows": flows,
        "link_drops": {"queue": e["drop_queue"], "random": e["drop_loss"]},
        "emulator": emulator_ok(meta),
        "command": meta["command"],
        "tags": run.tags,
    }


def total(m: dict, pred=lambda f: True, key: str = "goodput_mbit_truth") -> float:
    return sum(f[key] for f in m["flows"] if pred(f))


def cli(description: str) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="", help="where the runs go (default /tmp/hscc_experiments/<experiment>)")
    ap.add_argument("--analyze-only", action="store_true", help="read the runs on disk; make none")
    ap.add_argument("--seed", type=int, default=1, help="the loss PRNG seed of every run")
    return ap.parse_args()


def work_dir(a: argparse.Namespace, experiment: str) -> Path:
    return Path(a.work or f"/tmp/hscc_experiments/{experiment}")


def need_root(a: argparse.Namespace) -> None:
    if not a.analyze_only and os.geteuid() != 0:
        raise SystemExit("the testbed needs root (run with sudo, or --analyze-only)")


def write_results(experiment: str, doc: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"{experiment}.json"
    out.write_text(json.dumps(doc, indent=1) + "\n")
    return out


def as_dict(run: Run) -> dict:
    return asdict(run)
