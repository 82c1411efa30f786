#!/usr/bin/env python3
"""Measure what the first-use rule (hscc_trace/perf/firstuse.py) needs: per kernel, the seconds
numba takes to compile it and the seconds per item its Python function takes interpreted (CPU
seconds of the calling thread, ``time.thread_time``, as the rule counts them: other processes'
load does not inflate them).

Two child processes run the same work — ``analyze`` of the given captures with every default
algorithm, the HTML report and the JSON results, then per capture what ``hscc-trace flows``
prints (without and with a BPF filter), its packets table and the event streams built from it —
each with an empty hscc-trace cache folder:

1. ``HSCC_TRACE_FIRST_USE=interpret``: every kernel interpreted; per kernel the items it was
   given and the seconds it took → seconds per item;
2. ``HSCC_TRACE_FIRST_USE=compile``: every kernel compiled on its first call; the first call's
   seconds (compilation plus one compiled run, which is milliseconds) → compile seconds.

Replay loops are one entry ("replay loop"): the median over the algorithms, since a new
algorithm file gets the same rule. Prints a table and the ``cost=(compile_s, interp_s)`` to declare
in each kernel's ``@njit`` (the replay loops': ``LOOP_COST`` in replay/compile.py).

    python benchmarks/first_use.py samples/reno-bdp/capture.pcap samples/cubic-loss/capture.pcap
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, tempfile
from hscc_trace import api
from hscc_trace.perf import firstuse
paths = sys.argv[1:]
a = api.analyze(paths).analysis
d = tempfile.mkdtemp()
api.report(a, d + "/r.html")
json.dumps(api.results(a))
from hscc_trace.model import Capture
from hscc_trace.flows.scan import flow_rows
for p in paths:  # `flows` (its own scan, and through the BPF interpreter)
    flow_rows(p)
    flow_rows(p, bpf="tcp and greater 100")
for p in paths:  # the packets table and the events built from it (the library's other path)
    cap = api.load(p)
    api.all_events(Capture(cap.meta, cap.packets, cap.flows))
print("FIRSTUSE" + json.dumps(firstuse.summary()))
"""


def child(mode: str, captures: list[str]) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="hscc-first-use-") as cache:
        env = dict(os.environ, HSCC_TRACE_FIRST_USE=mode, HSCC_TRACE_CACHE_DIR=cache, NUMBA_CACHE_DIR=cache + "/numba")
        env.pop("HSCC_TRACE_NO_JIT", None)
        env.pop("NUMBA_DISABLE_JIT", None)
        out = subprocess.run(
            [sys.executable, "-c", CHILD, *captures], env=env, capture_output=True, text=True, check=True
        ).stdout
    line = next(x for x in out.splitlines() if x.startswith("FIRSTUSE"))
    return json.loads(line.removeprefix("FIRSTUSE"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("captures", nargs="+")
    args = ap.parse_args(argv)
    interp = {r["kernel"]: r for r in child("interpret", args.captures)}
    comp = {r["kernel"]: r for r in child("compile", args.captures)}
    rows = []
    for name in sorted(set(interp) | set(comp)):
        i, c = interp.get(name, {}), comp.get(name, {})
        items, secs = i.get("interpreted_items", 0), i.get("interpreted_s", 0.0)
        rows.append((name, items, secs / items if items else float("nan"), c.get("first_compiled_s", float("nan"))))
    loops = [r for r in rows if r[0].startswith("replay loop of ")]
    print(f"{'kernel':40} {'items':>9} {'interp µs/item':>15} {'compile s':>10} {'break-even items':>17}")
    for name, items, per, comp_s in rows:
        be = comp_s / per if per == per and per > 0 else float("nan")
        print(f"{name:40} {items:9d} {per * 1e6:15.2f} {comp_s:10.2f} {be:17,.0f}")
    print(f"total interpreted s: {sum(r['interpreted_s'] for r in interp.values()):.2f}")
    print(f"total compile s: {sum(r['first_compiled_s'] for r in comp.values()):.2f}")
    costs = {n: (round(c, 2), float(f"{p:.3g}")) for n, _, p, c in rows if not n.startswith("replay loop of ")}
    if loops:
        costs["replay loop"] = (
            round(statistics.median(r[3] for r in loops), 2),
            float(f"{statistics.median(r[2] for r in loops):.3g}"),
        )
    print("cost per kernel = " + json.dumps(costs, indent=4))
    return 0


if __name__ == "__main__":
    sys.exit(main())
