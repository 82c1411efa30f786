#!/usr/bin/env python3
"""Peak memory and time of ``hscc-trace analyze`` against the number of flows and the capture's size.

Issue #20: memory must not grow with the number of flows beyond a documented per-flow cost;
issue #16: peak RSS within the capture file's size on a multi-million-packet capture. One
command measures both, as users run it (every default algorithm, the HTML report and the JSON
results)::

    .venv/bin/python benchmarks/analyze_memory.py                 # 10 000 and 50 000 connections
    .venv/bin/python benchmarks/analyze_memory.py --large         # + replica-5M: analyze and events path
    .venv/bin/python benchmarks/analyze_memory.py --json benchmarks/results/<stamp>-memory.json

Cases (each one process, stdout to /dev/null; wall time, CPU time and peak RSS from ``wait4(2)``,
what GNU ``time -v`` reports as "Maximum resident set size"):

* ``analyze``: ``hscc-trace analyze FILE -o report.html --json results.json -q``;
* with ``--large``, on replica-5M: ``events-all`` — ``python benchmarks/hscc_events.py FILE``,
  capture → event streams of every flow, all held at once (``api.all_events``; the "events path"
  of benchmarks/run.py); ``events-stream`` — the same with ``--stream``, the events as
  ``analyze`` builds them (a batch at a time, the load arena given back as it goes); and
  ``events-cmd`` — ``hscc-trace events FILE --flow 3 -o events.parquet``.

Captures (built with ``benchmarks/make_capture.py`` when missing, under ``benchmarks/data/``):
``replica-flows10k-p50`` and ``replica-flows50k-p50`` — 10 000 and 50 000 copies of the first 50
packets of the M-Lab sources (handshake, slow start, the first round trips), a copy started
every 10 ms (0.5 M and 2.5 M packets); ``replica-5M`` (``--preset 5M``, 140 connections).

Reported: peak RSS and wall time per capture; the **per-flow cost** = (peak at 50 000 − peak
at 10 000) / 40 000 flows, beside the figure documented in docs/performance.md
(:data:`DOCUMENTED_KB_PER_FLOW`, which includes the flow's 50 packets); the same slope of wall
time (ms per flow); peak RSS / file size for ``--large``. The load average is recorded before and
after each run: the machine is shared, and the figures mean little without it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import make_capture  # noqa: E402
from run import HSCC, PY, measure  # noqa: E402

DATA = BENCH / "data"
RESULTS = BENCH / "results"

#: KB of peak memory per flow of ~50 packets (packets included) that docs/performance.md
#: documents; the benchmark prints the measured slope beside it
DOCUMENTED_KB_PER_FLOW = 8.0
#: issue #20: a capture of 50 000 connections analyzes under this peak (MiB)
TARGET_50K_MIB = 1536.0
#: issue #16: peak RSS / capture file size for analyze and the events path
TARGET_FILE_RATIO = 1.0

FLOW_CAPTURES = {  # name -> copies (each the first 50 packets of a source connection)
    "replica-flows10k-p50": 10_000,
    "replica-flows50k-p50": 50_000,
}


def loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def build(name: str) -> Path:
    """The capture ``name`` under benchmarks/data (made if missing; deterministic)."""
    if name in FLOW_CAPTURES:
        m = make_capture.make(name, None, 0.01, 50, FLOW_CAPTURES[name], make_capture.resolve_sources(None), DATA)
    else:
        p = make_capture.PRESETS[name.removeprefix("replica-")]
        m = make_capture.make(
            name, p["packets"], p["stagger"], p["prefix"], p["copies"], make_capture.resolve_sources(None), DATA
        )
    return Path(m["file"])


def analyze_argv(capture: Path, scratch: Path) -> list[str]:
    return [HSCC, "analyze", str(capture), "-o", str(scratch / "report.html"), "--json", str(scratch / "r.json"), "-q"]


def events_argv(capture: Path, scratch: Path) -> list[str]:
    return [PY, str(BENCH / "hscc_events.py"), str(capture)]


def events_stream_argv(capture: Path, scratch: Path) -> list[str]:
    return [PY, str(BENCH / "hscc_events.py"), str(capture), "--stream"]


def events_cmd_argv(capture: Path, scratch: Path) -> list[str]:
    return [HSCC, "events", str(capture), "--flow", "3", "-o", str(scratch / "events.parquet")]


def run_case(argv: list[str], runs: int, timeout_s: float) -> dict[str, Any]:
    out = []
    for _ in range(runs):
        before = loadavg()
        r = measure(argv, timeout_s)
        r["load_before"], r["load_after"] = before, loadavg()
        out.append(r)
        if r["rc"] != 0:
            break
    ok = [r for r in out if r["rc"] == 0]
    use = ok or out
    return dict(
        runs=out,
        rc=out[-1]["rc"],
        wall_s=statistics.median(r["wall_s"] for r in use),
        cpu_s=statistics.median(r["cpu_s"] for r in use),
        rss_mib=max(r["rss_mib"] for r in use),
        load=[min(r["load_before"][0] for r in out), max(r["load_after"][0] for r in out)],
    )


def slopes(res: dict[str, Any]) -> dict[str, float] | None:
    """Per-flow cost between the two flow captures: KB of peak RSS and ms of wall time per flow."""
    a, b = (res["cases"].get(f"analyze {n}") for n in FLOW_CAPTURES)
    if not a or not b or a["rc"] or b["rc"]:
        return None
    n = FLOW_CAPTURES["replica-flows50k-p50"] - FLOW_CAPTURES["replica-flows10k-p50"]
    return dict(
        kb_per_flow=(b["rss_mib"] - a["rss_mib"]) * 1024 / n,
        ms_per_flow=(b["wall_s"] - a["wall_s"]) * 1000 / n,
        cpu_ms_per_flow=(b["cpu_s"] - a["cpu_s"]) * 1000 / n,
    )


def markdown(res: dict[str, Any]) -> str:
    lines = [
        f"Run of {res['stamp']} (`{res['command']}`), load average (1 min) {res['load_start'][0]:.2f} at the start.",
        "",
        "| case | file | peak RSS | RSS / file | wall | CPU | load during | exit |",
        "|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    for key, c in res["cases"].items():
        size = res["sizes"][key.split(" ", 1)[1]]
        lines.append(
            f"| {key} | {size / 2**20:.0f} MiB | {c['rss_mib']:.0f} MiB | {c['rss_mib'] * 2**20 / size:.2f} | "
            f"{c['wall_s']:.1f} s | {c['cpu_s']:.1f} s | {c['load'][0]:.1f}–{c['load'][1]:.1f} | {c['rc']} |"
        )
    s = res.get("slope")
    if s:
        lines += [
            "",
            f"Per flow (50 000 − 10 000 connections): **{s['kb_per_flow']:.1f} KB** of peak memory "
            f"(documented: ≤ {DOCUMENTED_KB_PER_FLOW:g} KB, packets included: "
            f"{'within' if s['kb_per_flow'] <= DOCUMENTED_KB_PER_FLOW else '**above**'}), "
            f"{s['ms_per_flow']:.2f} ms wall, {s['cpu_ms_per_flow']:.2f} ms CPU.",
        ]
    big = res["cases"].get("analyze replica-flows50k-p50")
    if big:
        lines.append(
            f"50 000 connections: peak {big['rss_mib']:.0f} MiB (target < {TARGET_50K_MIB:.0f} MiB: "
            f"{'pass' if big['rc'] == 0 and big['rss_mib'] < TARGET_50K_MIB else '**FAIL**'})."
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--large", action="store_true", help="also replica-5M: analyze and the events path")
    ap.add_argument("--no-flows", action="store_true", help="skip the 10k/50k-connection captures")
    ap.add_argument("--runs", type=int, default=1, help="runs per case (median time, largest peak)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds before a run is killed")
    ap.add_argument("--json", type=Path, help="write every run here (default: benchmarks/results/<stamp>-memory.json)")
    a = ap.parse_args(argv)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H%MZ")
    res: dict[str, Any] = dict(
        stamp=stamp,
        command="python benchmarks/analyze_memory.py" + " ".join(["", *(argv if argv is not None else sys.argv[1:])]),
        load_start=loadavg(),
        cases={},
        sizes={},
    )
    names = ([] if a.no_flows else list(FLOW_CAPTURES)) + (["replica-5M"] if a.large else [])
    with tempfile.TemporaryDirectory(prefix="hscc-mem-") as tmp:
        scratch = Path(tmp)
        # one untimed run first: compiled loops come from the cache in the timed runs
        warm = build(names[0]) if names else None
        if warm is not None:
            measure(analyze_argv(warm, scratch), a.timeout)
        for name in names:
            cap = build(name)
            res["sizes"][name] = cap.stat().st_size
            cases = [("analyze", analyze_argv)]
            if name == "replica-5M":
                cases += [
                    ("events-all", events_argv),
                    ("events-stream", events_stream_argv),
                    ("events-cmd", events_cmd_argv),
                ]
            for label, mk in cases:
                key = f"{label} {name}"
                print(f"{key} …", file=sys.stderr, flush=True)
                res["cases"][key] = c = run_case(mk(cap, scratch), a.runs, a.timeout)
                print(
                    f"  peak {c['rss_mib']:.0f} MiB, wall {c['wall_s']:.1f} s, exit {c['rc']}, load {c['load']}",
                    file=sys.stderr,
                    flush=True,
                )
    res["slope"] = slopes(res)
    res["documented_kb_per_flow"] = DOCUMENTED_KB_PER_FLOW
    res["load_end"] = loadavg()
    md = markdown(res)
    out = a.json or RESULTS / f"{stamp}-memory.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2) + "\n")
    out.with_suffix(".md").write_text(md)
    sys.stdout.write(md)
    print(f"results: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
