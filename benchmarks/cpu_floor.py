#!/usr/bin/env python3
"""Where `analyze`'s CPU goes, and the least wall time its compiled work allows on this machine.

Issue #16 asks for ``analyze`` (every default algorithm, report, JSON) within 2× ``tcptrace -lr``
on a multi-million-packet capture. This measures what part of ``analyze``'s CPU time is compiled
or C code — the numba kernels (reading, decoding, the flow table, the event streams,
the replay loops, the report's decimation), the BLAKE3 digest of the input, the report's gzip streams —
and what part is the Python and polars code around them ("glue"). Even with no glue at all and
both cores busy throughout, ``analyze`` cannot take less than ``compiled CPU / cores``: the
**floor**. Beside it, ``tcptrace -lr`` on the same file, run alternately with ``analyze``::

    .venv/bin/python benchmarks/cpu_floor.py                      # replica-5M, 3 pairs
    .venv/bin/python benchmarks/cpu_floor.py FILE --runs 5 --json out.json

How: ``analyze`` runs in a child process (``python benchmarks/cpu_floor.py --child …``) that
wraps, before the command starts, each compiled kernel's call (``hscc_trace.perf.firstuse.Kernel``:
the CPU time of the calling thread, ``time.thread_time``) — numba's loading of a kernel's cache,
in its first compiled call for new argument types, which the kernel decorator reports
(``firstuse.LISTENERS``), is counted apart: measured after the run by loading it again
(:func:`_split_loading`; a wrapped call's time is not counted again in the wrapped call that made it), ``results.digest_file`` (the input digest) and ``deflate.gzip_bytes``; every thread's CPU
time is read when it ends (``threading.Thread.run``), the process's from ``getrusage``. The
capture-reading thread's time outside kernels (file reads and the hand-over of record batches)
is counted as glue. The wrappers cost ≈ 1 µs a call (a few thousand calls a run). Nothing here is
a test: figures depend on the machine, which is why ``tcptrace`` is timed in the same run.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
DEFAULT_CAPTURE = BENCH / "data" / "replica-5M.pcap"
sys.path.insert(0, str(BENCH))

from run import CASES, measure  # noqa: E402  (the benchmark's own tcptrace -lr case and timing)

TCPTRACE_LR = next(c for c in CASES if c.key == "tcptrace_lr")


def _child(argv: list[str]) -> None:
    """Run ``hscc-trace ARGV`` in this process with the kernels wrapped; print one JSON line."""
    # the process settings of the command, first thing, as its entry point does (numba reads its
    # cache folder once, when it is imported)
    from hscc_trace import perf

    perf.activate()
    lock = threading.Lock()
    kern: collections.Counter[str] = collections.Counter()  # compiled CPU seconds per thing
    thread_cpu: collections.Counter[str] = collections.Counter()
    on_main: collections.Counter[str] = collections.Counter()  # kern's part in the calling thread
    local = threading.local()  # (.stack: the wrapped calls running in this thread)

    def timed(key_of, fn):
        """``fn`` with its calling thread's CPU time added to ``kern[key_of(args)]`` (``load:…``
        instead of ``kernel:…`` for a kernel's first compiled call), less the time of the wrapped
        calls it makes (each counted under its own key)."""

        def wrapper(*args, **kw):
            stack = local.__dict__.setdefault("stack", [])
            stack.append([0.0, False])  # (time of the wrapped calls made inside this one; a first call?)
            t = time.thread_time()
            try:
                return fn(*args, **kw)
            finally:
                dt = time.thread_time() - t
                inner, first = stack.pop()
                if stack:
                    stack[-1][0] += dt
                key = key_of(args)
                key = key.replace("kernel:", "load:", 1) if first else key
                with lock:
                    kern[key] += dt - inner
                    if threading.current_thread() is threading.main_thread():
                        on_main[key] += dt - inner

        return wrapper

    from hscc_trace.analysis import results
    from hscc_trace.perf import firstuse
    from hscc_trace.reports import deflate, html, store

    firstuse.Kernel.__call__ = timed(lambda a: "kernel:" + a[0].name, firstuse.Kernel.__call__)

    firsts: dict[str, tuple[Any, str]] = {}  # kernel name -> (kernel, "loaded" or "compiled")

    def first_call(event: str, kernel: Any, s: float) -> None:
        stack = local.__dict__.get("stack")
        if event in ("loaded", "compiled") and stack:  # (inside the kernel's wrapped call)
            stack[-1][1] = True
            firsts.setdefault(kernel.name, (kernel, event))

    firstuse.LISTENERS.append(first_call)
    results.digest_file = timed(lambda a: "digest", results.digest_file)
    gz = timed(lambda a: "gzip", deflate.gzip_bytes)
    deflate.gzip_bytes = html.gzip_bytes = store.gzip_bytes = gz

    run = threading.Thread.run

    def thread_run(self: threading.Thread) -> None:
        try:
            run(self)
        finally:
            with lock:
                thread_cpu[self.name.rstrip("0123456789").rstrip("_")] += time.thread_time()

    threading.Thread.run = thread_run  # type: ignore[method-assign]
    t0 = time.perf_counter()
    code = 0
    from hscc_trace import cli

    sys.argv = ["hscc-trace", *argv]
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    thread_cpu["MainThread"] += time.thread_time()
    _split_loading(firsts, kern, on_main)  # (after the process's CPU time is read)
    doc = {
        "exit": code,
        "wall_s": wall,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "threads": dict(thread_cpu),
        "compiled": dict(kern),
        "main_compiled_s": sum(v for k, v in on_main.items() if not k.startswith("load:")),
        "main_load_s": sum(v for k, v in on_main.items() if k.startswith("load:")),
        "main_compiled": dict(on_main),
    }
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()
    os._exit(0)  # (as the CLI: no exit-time collection)


def _split_loading(firsts: dict[str, tuple[Any, str]], *parts: collections.Counter[str]) -> None:
    """Leave under ``load:<kernel>`` only numba's loading of each kernel's cache, measured by
    loading it again: a second dispatcher given the argument types the run compiled
    (``numba.njit(signatures)`` loads them at once, from the same cache folder); the rest of the
    kernel's first call is its run, moved to ``kernel:<kernel>``. A first call that compiled (an
    empty cache) stays all loading, its run included: take the figures on a warm cache."""
    import numba

    from hscc_trace.perf.cache import numba_njit

    for name, (k, event) in firsts.items():
        if event != "loaded":
            continue
        sigs = list(k.signatures)
        t = time.thread_time()
        if k.options:
            numba_njit(k.py_func, k.callees, signature_or_function=sigs, **k.options)
        else:  # a replay loop: its generated module's numba.njit(cache=True)
            numba.njit(sigs, cache=True)(k.py_func)
        load = time.thread_time() - t
        for part in parts:
            if "load:" + name in part:
                first = part["load:" + name]
                part["load:" + name] = min(load, first)
                part["kernel:" + name] += first - min(load, first)


def _analyze_once(capture: Path, out: Path) -> dict:
    argv = ["analyze", str(capture), "-o", str(out / "report.html"), "--json", str(out / "results.json"), "-q"]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.run([sys.executable, __file__, "--child", *argv], capture_output=True, text=True, env=env)
    if p.returncode != 0 or not p.stdout.strip():
        raise SystemExit(f"cpu_floor: analyze failed (exit {p.returncode}): {p.stderr.strip()[-500:]}")
    doc = json.loads(p.stdout.strip().splitlines()[-1])
    if doc["exit"] != 0:
        raise SystemExit(f"cpu_floor: analyze exited {doc['exit']}: {p.stderr.strip()[-500:]}")
    return doc


def _tcptrace_once(capture: Path, scratch: Path) -> float:
    r = measure(TCPTRACE_LR.argv(capture, scratch), 600)
    if r["rc"] != 0 or r["timeout"]:
        raise SystemExit(f"cpu_floor: {TCPTRACE_LR.label} failed (exit {r['rc']}): {r['stderr_tail']}")
    return r["wall_s"]


def summarize(doc: dict, cores: int) -> dict:
    """The run's figures: compiled CPU (kernels, input digest, gzip), numba's cache loading, glue (the
    rest of the process's CPU), and the floor = compiled CPU / cores."""
    comp = doc["compiled"]
    work = sum(v for k, v in comp.items() if not k.startswith("load:"))
    load = sum(v for k, v in comp.items() if k.startswith("load:"))
    glue = doc["cpu_s"] - work - load
    return {
        "wall_s": doc["wall_s"],
        "cpu_s": doc["cpu_s"],
        "compiled_s": work,
        "load_s": load,
        "glue_s": glue,
        "main_thread_s": doc["threads"].get("MainThread", 0.0),
        "main_compiled_s": doc["main_compiled_s"],
        "main_glue_s": doc["threads"].get("MainThread", 0.0) - doc["main_compiled_s"] - doc["main_load_s"],
        "floor_s": work / cores,
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("capture", nargs="?", type=Path, default=DEFAULT_CAPTURE)
    ap.add_argument("--runs", type=int, default=3, help="pairs of runs (tcptrace, analyze), alternated")
    ap.add_argument("--json", type=Path, help="write every run's figures here")
    a = ap.parse_args()
    if not a.capture.exists():
        raise SystemExit(f"cpu_floor: {a.capture}: no such file (benchmarks/make_capture.py --preset 5M)")
    if shutil.which("tcptrace") is None:
        raise SystemExit("cpu_floor: tcptrace is not installed (benchmarks/setup.sh)")
    cores = len(os.sched_getaffinity(0))
    runs = []
    with tempfile.TemporaryDirectory(prefix="hscc-cpu-floor-") as d:
        for i in range(a.runs):
            tt = _tcptrace_once(a.capture, Path(d))
            doc = _analyze_once(a.capture, Path(d))
            s = summarize(doc, cores)
            s["tcptrace_lr_s"] = tt
            s["ratio"] = s["wall_s"] / tt  # (each pair's own: the machine's speed drifts between pairs)
            s["floor_ratio"] = s["floor_s"] / tt
            s["load_avg"] = os.getloadavg()[0]
            runs.append({"summary": s, "raw": doc})
            print(
                f"run {i + 1}: tcptrace -lr {tt:.2f} s, analyze {s['wall_s']:.2f} s "
                f"(CPU {s['cpu_s']:.2f} s: compiled {s['compiled_s']:.2f}, numba loading {s['load_s']:.2f}, "
                f"glue {s['glue_s']:.2f}; floor {s['floor_s']:.2f} s), load {s['load_avg']:.2f}",
                file=sys.stderr,
            )
    med = {k: statistics.median(r["summary"][k] for r in runs) for k in runs[0]["summary"]}
    by: collections.Counter[str] = collections.Counter()
    for r in runs:
        for k, v in r["raw"]["compiled"].items():
            by[k] += v / len(runs)
    threads: collections.Counter[str] = collections.Counter()
    for r in runs:
        for k, v in r["raw"]["threads"].items():
            threads[k] += v / len(runs)
    t = med["tcptrace_lr_s"]
    print(f"\n{a.capture.name}, {cores} cores, medians of {a.runs} alternated pairs (ratios: medians of each pair's)\n")
    print("| | seconds | / `tcptrace -lr` |")
    print("|---|---:|---:|")
    print(f"| `tcptrace -lr` wall | {t:.2f} | 1.00 |")
    print(f"| `analyze` wall | {med['wall_s']:.2f} | {med['ratio']:.2f} |")
    print(f"| `analyze` CPU, all threads | {med['cpu_s']:.2f} | |")
    print(f"| of which compiled or C (kernels, input digest, gzip) | {med['compiled_s']:.2f} | |")
    print(f"| of which numba loading cached kernels | {med['load_s']:.2f} | |")
    print(f"| of which Python and polars glue | {med['glue_s']:.2f} | |")
    print(f"| calling thread CPU | {med['main_thread_s']:.2f} | |")
    print(f"| of which compiled | {med['main_compiled_s']:.2f} | |")
    print(f"| of which glue | {med['main_glue_s']:.2f} | |")
    print(f"| **floor**: compiled CPU / {cores} cores | {med['floor_s']:.2f} | **{med['floor_ratio']:.2f}** |")
    print("\ncompiled CPU by part (mean s): " + ", ".join(f"{k} {v:.2f}" for k, v in by.most_common(12)))
    on_main: collections.Counter[str] = collections.Counter()
    for r in runs:
        for k, v in r["raw"]["main_compiled"].items():
            on_main[k] += v / len(runs)
    print(
        "compiled CPU in the calling thread by part (mean s): "
        + ", ".join(f"{k} {v:.2f}" for k, v in on_main.most_common(10))
    )
    print("thread CPU (mean s): " + ", ".join(f"{k} {v:.2f}" for k, v in threads.most_common()))
    if a.json:
        a.json.write_text(
            json.dumps({"capture": str(a.capture), "cores": cores, "runs": runs, "median": med}, indent=1)
        )


if __name__ == "__main__":
    main()
