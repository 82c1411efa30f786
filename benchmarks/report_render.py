#!/usr/bin/env python3
"""The HTML report of a large capture: its size against the documented budget, and how fast it
loads, draws its first flow and zooms in headless chromium (docs/performance.md, "Report").

    .venv/bin/python benchmarks/report_render.py [CAPTURE] [--runs 3] [--json OUT]

CAPTURE defaults to ``benchmarks/data/replica-2.3M.pcap``, built if missing with
``benchmarks/make_capture.py --name replica-2.3M --packets 2300000`` (2.3 million packets of the
M-Lab replicas: 64 connections, ~10 at a time). Steps:

1. ``api.analyze`` the capture with every default algorithm (timed, not part of the figures);
2. ``reports.write_report`` with the defaults (process CPU time), its size and what it holds
   (``ReportInfo``), and the budget ``reports.html.size_budget(events held at full resolution)``;
3. ``--runs`` times: a fresh headless chromium (the DevTools helper of
   tests/reports/test_report_browser.py, software rendering) loads the file; "first flow" is the time
   from navigation until the first flow's main figure (window, RTT, goodput, time/sequence) is
   drawn (``hsccStatus.firstFlowSinceNavigation``), "all main figures" until every flow's main
   figure is (``hsccStatus.sinceNavigation``); then the first flow is zoomed to 50 ms in its middle
   (every event drawn; the first zoom unpacks the flow's store) and to 80 % of its duration (the
   store's events re-decimated), each timed until every figure of the flow is re-drawn;
4. the load average (``os.getloadavg``) before and after: the machine may be shared.

Prints one line per run and a summary; ``--json`` writes everything.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "benchmarks" / "data"
sys.path.insert(0, str(REPO / "tests"))

ZOOM = """(async () => {
  const div = document.querySelector('section.flow div.fig[data-panel="main"]');
  const r0 = div.layout.xaxis.range, span = r0[1] - r0[0];
  const out = {};
  for (const [name, a, b] of [["zoom_50ms", r0[0] + span / 2, r0[0] + span / 2 + 0.05],
                              ["zoom_80pct", r0[0] + span * 0.1, r0[0] + span * 0.9]]) {
    const before = window.hsccStatus.zooms, t0 = performance.now();
    await Plotly.relayout(div, {'xaxis.range': [a, b]});
    while (window.hsccStatus.zooms === before && performance.now() - t0 < 60000) await new Promise(r => setTimeout(r, 5));
    out[name] = (performance.now() - t0) / 1000;
  }
  return out;
})()"""


def browse(path: Path) -> dict[str, Any]:
    import test_report_browser as T

    if not T.CHROMIUM:
        raise SystemExit("no chromium (apt-get install chromium)")
    b = T.Browser(T.CHROMIUM)
    requests: list[str] = []
    try:
        b.attach_page()
        b.handlers["Network.requestWillBeSent"] = lambda p: requests.append(p["request"]["url"])
        for dom in ("Page", "Runtime", "Network", "Performance"):
            b.send(f"{dom}.enable")
        b.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1400, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        )
        b.send("Page.navigate", {"url": path.resolve().as_uri()})
        first = b.wait_for("window.hsccStatus && window.hsccStatus.firstFlowSinceNavigation", 180)
        st = b.wait_for(
            "window.hsccStatus && (window.hsccStatus.done || window.hsccStatus.error) && window.hsccStatus", 180
        )
        thread = {m["name"]: m["value"] for m in b.send("Performance.getMetrics")["metrics"]}.get("ThreadTime", 0.0)
        zoom = b.evaluate(ZOOM, timeout=180)
        errors = [
            ev["params"]
            for ev in b.events
            if ev.get("method") == "Runtime.exceptionThrown"
            or (ev.get("method") == "Runtime.consoleAPICalled" and ev["params"].get("type") == "error")
        ]
        return {
            "first_flow_s": first / 1000,
            "all_main_s": st["sinceNavigation"] / 1000,
            "main_thread_s": thread,
            "error": st.get("error"),
            "console_errors": len(errors),
            "requests": [u for u in requests if not u.startswith("file:")],
            **zoom,
        }
    finally:
        b.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("capture", nargs="?", type=Path, default=DATA / "replica-2.3M.pcap")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    if not a.capture.exists() and a.capture.name == "replica-2.3M.pcap":
        subprocess.run(
            [
                sys.executable,
                str(REPO / "benchmarks" / "make_capture.py"),
                "--name",
                "replica-2.3M",
                "--packets",
                "2300000",
            ],
            check=True,
        )
    from hscc_trace import api, reports
    from hscc_trace.reports.html import size_budget

    load0 = os.getloadavg()
    t = time.monotonic()
    analysis = api.analyze([a.capture]).analysis
    t_analyze = time.monotonic() - t
    out = Path(tempfile.mkdtemp(prefix="hscc-report-bench-")) / "report.html"
    c = time.process_time()
    info = reports.write_report(analysis, out)
    t_write = time.process_time() - c
    budget = size_budget(info.full_resolution_events)
    pkts = analysis.captures[0].meta.packets_total
    print(
        f"{a.capture.name}: {pkts:,} packets; analyze {t_analyze:.1f} s; write_report {t_write:.1f} s CPU\n"
        f"report {info.size / 1e6:.2f} MB (budget {budget / 1e6:.2f} MB: {'within' if info.size <= budget else 'OVER'}); "
        f"{info.flows} flow sections, {info.figures} figures; {info.events:,} events drawn, "
        f"{info.full_resolution_events:,} at full resolution in {info.store_bytes / 1e6:.2f} MB "
        f"({info.store_bytes / max(info.full_resolution_events, 1):.2f} B/event); first views "
        f"{info.points_in:,} → {info.points_out:,} points"
    )
    runs = []
    for i in range(a.runs):
        r = browse(out)
        r["load"] = os.getloadavg()[0]
        runs.append(r)
        print(
            f"run {i + 1}: first flow {r['first_flow_s']:.2f} s, all main figures {r['all_main_s']:.2f} s "
            f"(main thread {r['main_thread_s']:.2f} s), zoom 50 ms {r['zoom_50ms']:.2f} s, zoom 80 % "
            f"{r['zoom_80pct']:.2f} s; errors {r['console_errors']}, requests {len(r['requests'])}; load {r['load']:.2f}"
        )
    med = {k: statistics.median(r[k] for r in runs) for k in ("first_flow_s", "all_main_s", "zoom_50ms", "zoom_80pct")}
    print("median: " + ", ".join(f"{k} {v:.2f} s" for k, v in med.items()) + f"; load before {load0[0]:.2f}")
    if a.json:
        a.json.write_text(
            json.dumps(
                {
                    "capture": str(a.capture.resolve().relative_to(REPO))
                    if a.capture.resolve().is_relative_to(REPO)
                    else a.capture.name,
                    "packets": pkts,
                    "analyze_s": t_analyze,
                    "write_cpu_s": t_write,
                    "size": info.size,
                    "budget": budget,
                    "info": {k: v for k, v in info.__dict__.items() if k != "path"},
                    "runs": runs,
                    "median": med,
                    "load_before": load0,
                },
                indent=1,
                default=str,
            )
        )
    out.unlink()


if __name__ == "__main__":
    main()
