#!/usr/bin/env python3
"""Replay throughput: ACK events per second per algorithm on one core, and first-run (compile) time.

Builds every flow's event stream of FILE once (not timed here), prepares each flow's ACK matrix
(``replay.engine.prepare``, not timed), then for each algorithm of ``analyze``'s default set:

* ``first_run_s`` — the first ``engine.run`` on the smallest flow in this process: with an empty
  compile cache (``HSCC_TRACE_CACHE_DIR`` pointing at a new folder) that is the cold compile
  time; run again with the same folder, it is the cached-load time;
* ``loop_events_per_s`` — total ACK events / CPU time (``time.process_time``: the machine may be
  shared) inside the compiled per-ACK loop (the function
  ``replay.compile.loop_function`` returns), summed over all flows, best of ``--repeat`` passes;
* ``run_events_per_s`` — the same through ``engine.run`` including building the output
  DataFrame (what analyze pays).

numba code runs single-threaded here, so the figures are per core. Prints one JSON document.
Usage: hscc_replay.py FILE [--repeat 3] [--algos a,b]
"""

from __future__ import annotations

import os

# the compiled loops are measured: no kernel runs interpreted under the first-use rule
os.environ.setdefault("HSCC_TRACE_FIRST_USE", "compile")

import json
import sys
import time

from replay_speed import timed_loops  # benchmarks/ is sys.path[0] when run as a script


def main() -> None:
    path = sys.argv[1]
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
    t0 = time.perf_counter()
    from hscc_trace import api
    from hscc_trace.events import all_flow_events
    from hscc_trace.replay import compile as rcompile
    from hscc_trace.replay import engine

    algos = sys.argv[sys.argv.index("--algos") + 1].split(",") if "--algos" in sys.argv else api.default_algorithms()
    cap = api.load(path)
    evs = all_flow_events(cap)
    preps = []
    for fe in evs.values():
        if fe.acks.height and fe.mss:
            preps.append(engine.prepare(fe.acks, fe.mss, fe.segments))
    preps.sort(key=len)
    n_events = sum(len(p) for p in preps)
    t_setup = time.perf_counter() - t0

    out = {}
    with timed_loops() as inner:
        _measure(algos, preps, repeat, n_events, inner, out)
    print(
        json.dumps(
            dict(
                file=path,
                flows=len(preps),
                ack_events=n_events,
                setup_s=t_setup,
                cache_dir=str(rcompile.cache_dir()),
                repeat=repeat,
                algorithms=out,
            )
        )
    )


def _measure(algos, preps, repeat, n_events, inner, out) -> None:
    from hscc_trace.replay import engine, registry

    for name in algos:
        r = registry.resolve(name, {})
        s = time.perf_counter()
        engine.run(r, preps[0])
        first = time.perf_counter() - s
        best_loop, best_run = float("inf"), float("inf")
        for _ in range(repeat):
            inner[0] = 0.0
            s = time.process_time()
            for p in preps:
                engine.run(r, p)
            best_run = min(best_run, time.process_time() - s)
            best_loop = min(best_loop, inner[0])
        out[name] = dict(
            first_run_s=first,
            loop_s=best_loop,
            run_s=best_run,
            loop_events_per_s=n_events / best_loop if best_loop > 0 else None,
            run_events_per_s=n_events / best_run if best_run > 0 else None,
        )


if __name__ == "__main__":
    main()
