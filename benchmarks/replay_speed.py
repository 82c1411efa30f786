#!/usr/bin/env python3
"""Replay engine speed: ACK events per second per algorithm (one core), and compile times.

The input is a real ACK stream (samples/reno-loss, a Linux Reno sender under 0.5 % loss: slow
start, avoidance, SACK recoveries) tiled to ``--events`` ACKs (times and sequence numbers shifted
so the stream stays monotone), prepared once (``engine.prepare``, not timed). For each algorithm:

* ``loop_Mev_s`` — events / CPU time inside the compiled per-ACK loop (best of ``--repeat``);
* ``run_Mev_s`` — the same through ``engine.run`` including building the output DataFrame;
* ``cold_s`` / ``warm_s`` (``--compile``): wall time of the first replay in a fresh process with an
  empty compile cache (numba compilation), then in a second process reusing that cache.

CPU time (``time.process_time``) rather than wall time is reported because the benchmark machine
is shared; numba code is single-threaded here, so the figures are per core.
Usage: replay_speed.py [--events 5000000] [--repeat 3] [--algos a,b] [--compile]
"""

from __future__ import annotations

import os

# the compiled loops are measured: no kernel runs interpreted under the first-use rule
os.environ.setdefault("HSCC_TRACE_FIRST_USE", "compile")

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ALGOS = "reno,newreno,westwood,vegas,highspeed,cubic,fusion,compound,hrf,kyushu+highspeed,kyushu+cubic"


def arg(name: str, default: str) -> str:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def big_stream(n_events: int):
    import numpy as np

    from hscc_trace import events
    from hscc_trace import flows as capture
    from hscc_trace.replay import engine
    from hscc_trace.replay import tp as T

    cap = capture.load(str(ROOT / "samples" / "reno-loss" / "capture.pcap"))
    fe = events.flow_events(cap, 0)
    base = engine.prepare(fe.acks, fe.mss, fe.segments)
    n0 = len(base)
    reps = max(1, -(-n_events // n0))
    ev = np.tile(base.ev, (reps, 1))[:n_events].copy()
    k = np.repeat(np.arange(reps), n0)[:n_events]
    ev[:, T.E_T] += k * (base.ev[-1, T.E_T] + 0.001)
    span = base.ev[-1, T.E_SND_MAX] + fe.mss
    for c in (T.E_ACK, T.E_SND_MAX, T.E_PREV_ACK):
        ev[:, c] += k * span
    ev[:, T.E_ROUND] += k * (base.ev[-1, T.E_ROUND] + 1)
    ts = (ev[:, T.E_T] * 1e9).astype(np.int64)
    return engine.Prepared(np.ascontiguousarray(ev), ts, base.mss, base.first_flight)


@contextmanager
def timed_loops() -> Iterator[list[float]]:
    """Patch ``engine.loop_function`` so that the CPU time (s) spent inside the compiled per-ACK
    loops accumulates in the yielded one-element list (reset it to 0.0 between measurements);
    the original is restored on exit. Shared with benchmarks/hscc_replay.py."""
    from hscc_trace.replay import engine

    inner = [0.0]
    real = engine.loop_function

    def timed_loop_function(*a, **kw):
        fn = real(*a, **kw)

        def timed(*args):
            s = time.process_time()
            fn(*args)
            inner[0] += time.process_time() - s

        return timed

    engine.loop_function = timed_loop_function
    try:
        yield inner
    finally:
        engine.loop_function = real


def speed(n_events: int, repeat: int, algos: list[str]) -> dict:
    from hscc_trace.replay import engine, registry

    prep = big_stream(n_events)
    small = engine.Prepared(prep.ev[:1000].copy(), prep.ts_ns[:1000].copy(), prep.mss, prep.first_flight)
    out = {}
    with timed_loops() as inner:
        for name in algos:
            r = registry.resolve(name)
            engine.run(r, small)  # compile or load from cache
            best_loop = best_run = float("inf")
            for _ in range(repeat):
                inner[0] = 0.0
                s = time.process_time()
                engine.run(r, prep)
                best_run = min(best_run, time.process_time() - s)
                best_loop = min(best_loop, inner[0])
            out[r.label] = {
                "loop_Mev_s": round(len(prep) / best_loop / 1e6, 2),
                "run_Mev_s": round(len(prep) / best_run / 1e6, 2),
            }
    return {"events": len(prep), "repeat": repeat, "algorithms": out}


def compile_times(algos: list[str]) -> dict:
    code = (
        "import sys,time; sys.path.insert(0,%r); from replay_synth import stream, MSS;"
        "from hscc_trace.replay import engine; df=stream([{}]*10); t=time.perf_counter();"
        "engine.replay(df, MSS, [%r]); print(time.perf_counter()-t)"
    )
    res = {}
    for name in algos:
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, HSCC_TRACE_CACHE_DIR=d)
            runs = []
            for _ in range(2):
                p = subprocess.run(
                    [sys.executable, "-c", code % (str(ROOT / "tests" / "replay"), name)],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=ROOT,
                )
                runs.append(round(float(p.stdout.strip().splitlines()[-1]), 3))
            res[name] = {"cold_s": runs[0], "warm_s": runs[1]}
    return res


def main() -> None:
    algos = arg("--algos", DEFAULT_ALGOS).split(",")
    doc = speed(int(float(arg("--events", "5000000"))), int(arg("--repeat", "3")), algos)
    if "--compile" in sys.argv:
        doc["compile"] = compile_times(algos)
    doc["load_avg"] = os.getloadavg()
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
