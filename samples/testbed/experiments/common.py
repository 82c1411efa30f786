"""Shared harness of the papers' experiments (samples/testbed/experiments/*.py).

Each experiment script lists its runs (congestion controls, rate, delay, buffer, loss, per-flow
extra RTT), makes every run that is not on disk yet with the testbed (``samples/testbed/run.py``,
one run at a time under ``flock /tmp/hscc-testbed.lock``, since the testbed's namespaces and
devices have fixed names), then reads every run and writes one small JSON of results under
``samples/testbed/experiments/results/``. The runs' captures (a few MB each) go to ``--work``
(default ``/tmp/hscc_experiments/<experiment>``), not into the repository; a run already there is
reused, so an interrupted experiment resumes where it stopped.

Per-flow throughput is read two ways from each run:

* **hscc-trace**: the capture read by hscc-trace's bottleneck groups (``api.group_input``,
  docs/groups.md): each flow's goodput over the group's measurement interval, shares, Jain's
  index, utilization, and ``groups.compare`` for the bandwidth stolen — the figures
  docs/papers.md quotes (``groups_of``, cached beside the run as ``hscc_groups_skip<N>.json``);
* **kernel truth**: the bytes the receiver acknowledged (``truth_probe.parquet``: the sender's
  ``snd_una`` at every ACK, per source port) — the cross-check (``flow_rates_truth``).

Both skip the first ``warmup_s`` of the time all flows transfer (slow start) and end when the
first flow ends (all flows start together and write for the same time); the two intervals differ
by the few milliseconds between a flow's last ACK in the capture and in the kernel's probes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
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
        # checked again under the lock: another invocation may have made the run meanwhile
        cmd = ["flock", LOCK, "sh", "-c", 'test -e "$0/meta.json" || exec "$@"', str(out), *r.command(out)]
        t0 = time.monotonic()
        for attempt in range(2):  # once more after a failure (seen: a receiver not listening yet on a loaded host)
            with open(work / f"{r.name}.log", "a" if attempt else "w") as f:
                rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
            if rc == 0:
                break
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


def cwnd_mean_truth(run_dir: Path, t0: int, t1: int) -> dict[int, float]:
    """{sport: the kernel's snd_cwnd (packets) averaged over the probes in [t0, t1]}."""
    import polars as pl

    p = pl.read_parquet(run_dir / "truth_probe.parquet", columns=["ts_ns", "sport", "snd_cwnd"])
    p = p.filter((pl.col("ts_ns") >= t0) & (pl.col("ts_ns") <= t1))
    return {int(r[0]): float(r[1]) for r in p.group_by("sport").agg(pl.col("snd_cwnd").mean()).rows()}


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


GROUP_KEYS = (
    "jain",
    "jain_windows",
    "total_goodput_bps",
    "capacity_bps",
    "utilization",
    "sync_fraction",
    "interval_ns",
    "rtt_fairness",
)


def groups_of(run_dir: Path, warmup_s: float) -> list[dict]:
    """hscc-trace's bottleneck groups of the run's capture (``Group.as_dict()``, docs/groups.md),
    with ``GroupOptions(skip_s=warmup_s)``; cached as ``hscc_groups_skip<N>.json`` in the run."""
    cache = run_dir / f"hscc_groups_skip{warmup_s:g}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    sys.path.insert(0, str(ROOT))
    from hscc_trace import api
    from hscc_trace.analysis import groups as G

    # the group metrics need only the flows' events; one cheap replay is the pipeline's minimum
    d = api.group_input(run_dir / "capture.pcap.gz", options=G.GroupOptions(skip_s=warmup_s), algorithms=["reno"])
    cache.write_text(json.dumps(d))
    return d


def group_sport(flow: dict) -> int:
    """The data sender's port of a group flow (its label: 'flow 0 10.77.0.1:40006 → ...')."""
    return int(flow["label"].split(" → ")[0].rsplit(":", 1)[1])


def stolen_hscc(base_run: Path, test_run: Path, warmup_s: float) -> dict:
    """hscc-trace's bandwidth stolen (groups.compare, the Compound TCP paper's Definition 1)."""
    sys.path.insert(0, str(ROOT))
    from hscc_trace.analysis import groups as G

    c = G.compare(groups_of(base_run, warmup_s), groups_of(test_run, warmup_s), regular="reno").as_dict()
    return c


def run_meta(run_dir: Path) -> dict:
    return json.loads((run_dir / "meta.json").read_text())


def emulator_ok(meta: dict) -> dict:
    late = meta["emulator"]["a_to_b"]["release_late_us"]
    return {"late_p50_us": late["p50"], "late_p99_us": late["p99"], "ok": late["p50"] < 200 and late["p99"] < 1000}


def measure(run: Run, work: Path, warmup_s: float, use_groups: bool = True) -> dict:
    """Per-flow goodput (Mbit/s) of one run, hscc-trace's and the kernel's, and the run's facts."""
    d = work / run.name
    meta = run_meta(d)
    t0, t1 = window(d, warmup_s)
    truth = flow_rates_truth(d, t0, t1)
    cwnd = cwnd_mean_truth(d, t0, t1)
    gs = groups_of(d, warmup_s) if use_groups else []
    if use_groups and len(gs) != 1:
        raise SystemExit(f"{d}: hscc-trace found {len(gs)} bottleneck groups, not 1")
    hs = {group_sport(f): f for f in gs[0]["flows"]} if gs else {}
    flows = []
    for fl in meta["flows"]:
        g = hs.get(fl["sport"])
        flows.append(
            {
                "sport": fl["sport"],
                "cc": fl["cc"],
                "base_rtt_ms": round(1e3 * fl.get("base_rtt_s", meta["base_rtt_s"]), 3),
                "goodput_mbit": round(g["goodput_bps"] / 1e6, 3) if g else None,
                "share": round(g["share"], 4) if g else None,
                "rtt_mean_ms": round(g["rtt_mean_s"] * 1e3, 2) if g and g.get("rtt_mean_s") else None,
                "goodput_mbit_truth": round(truth[fl["sport"]], 3),
                "cwnd_mean_pkts_truth": round(cwnd.get(fl["sport"], 0.0), 1),
                "retrans_kernel": fl["sender_stats"].get("tcp_info_final", {}).get("total_retrans"),
            }
        )
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
        # the flows' goodput over the link's payload capacity (rate x 1448/1500)
        "utilization_link": round(sum(f["goodput_mbit"] or 0 for f in flows) / (run.rate_mbit * MSS / WIRE), 4),
        "group": {k: gs[0][k] for k in GROUP_KEYS} | {"flow_ids": gs[0]["flow_ids"]} if gs else None,
        "hscc_vs_truth_max_rel": max(
            (
                abs(f["goodput_mbit"] - f["goodput_mbit_truth"]) / f["goodput_mbit_truth"]
                for f in flows
                if f["goodput_mbit"] is not None
            ),
            default=None,
        ),
        "link_drops": {"queue": e["drop_queue"], "random": e["drop_loss"]},
        "emulator": emulator_ok(meta),
        "command": meta["command"],
        "tags": run.tags,
    }


def total(m: dict, pred=lambda f: True, key: str = "goodput_mbit") -> float:
    return sum(f[key] for f in m["flows"] if pred(f))


def write_results(experiment: str, doc: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"{experiment}.json"
    out.write_text(json.dumps(doc, indent=1) + "\n")
    return out
