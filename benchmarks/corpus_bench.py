#!/usr/bin/env python3
"""Corpus scale (issue #21): captures per second on Dask with 1 and 2 workers, against a
``tcptrace`` loop over the same files; peak memory per worker as the corpus grows; the census's
build and render time.

The corpus is made by benchmarks/make_corpus.py (``--captures`` copies of the samples with
rewritten addresses and timestamps; reused when already built the same way). Then, ``--runs``
times, interleaved so that load from elsewhere hits every case alike:

* ``hscc w1``        ``hscc-trace analyze CORPUS --dataset D --workers 1 -q`` (all captures)
* ``hscc w2``        the same with ``--workers 2``
* ``hscc w2 half``   ``--workers 2`` on the first half of the files (``--inputs-from``): the
                     memory comparison (a corpus half as large)
* ``tcptrace loop``  ``tcptrace -n -lr FILE > /dev/null`` for every file, one after another
                     (-n: no DNS lookups; there is no network here)
* ``tcptrace ×2``    the same loop split over 2 concurrent processes (the same 2 cores)

Each hscc run starts from an empty dataset and includes starting the cluster (the worker
processes import hscc-trace and load the compiled kernels: a few seconds). Measured: wall time
(monotonic clock) → captures/s; CPU (user+system of the whole process tree, from ``wait4``),
and the workers' CPU per capture in the steady part of the run (between the first and the last
part written, read from ``/proc`` every 0.2 s: issue #39's figure, beside the ``tcptrace``
loop's CPU per capture);
the *steady* rate = (captures after the first part) / (last − first part completed), from the
mtimes of the ``captures/*.parquet`` part files (each written when its task's captures are
complete), which leaves out the cluster's start-up; and peak memory per process: ``VmHWM`` (the kernel's resident high-water mark)
of every worker process and of the client, read from ``/proc`` every 0.2 s while the run lasts.
A compile-cache warm-up run comes first (untimed): one capture of each sample, with every kernel
compiled (``HSCC_TRACE_FIRST_USE=compile``), so that no timed case pays the first-use rule's
interpreted runs.

Then the census of the last ``hscc w2`` dataset: ``hscc-trace census D -o census.html`` (wall
time, page size) and its render in headless chromium (the helper of
tests/reports/test_report_browser.py: time from navigation to the last figure drawn, console errors,
requests).

Targets (issue #21): captures/s with 2 workers ≥ 1.8 × with 1 worker; peak memory per worker
with the whole corpus within 10 % of that with half of it; census rendered in < 3 s, no console
error, no request. Writes benchmarks/results/<UTC date-time>-corpus.json and .md, and with
``--docs`` renders the table of docs/performance.md (benchmarks/make_table.py).

With ``--baseline EXE`` (another install's ``hscc-trace``, e.g. of main), the cases
``hscc w1 baseline`` and ``hscc w2 baseline`` run that executable right after ``hscc w1`` and
``hscc w2``, on the same files, with compile caches of their own (``--baseline-cache``, default
``WORK/baseline-cache``; numba's in its ``numba/``): a before/after of one run, under the same
load.

Usage: python benchmarks/corpus_bench.py [--captures 2000] [--runs 1] [--docs] [--baseline EXE]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
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
REPO = BENCH.parent
RESULTS = BENCH / "results"
PY = sys.executable
HSCC = str(Path(PY).with_name("hscc-trace")) if Path(PY).with_name("hscc-trace").exists() else "hscc-trace"

TARGET_SPEEDUP = 1.8  # captures/s with 2 workers / with 1 worker ≥
TARGET_MEM_GROWTH = 1.10  # peak worker memory, whole corpus / half corpus ≤
TARGET_RENDER_S = 3.0  # census: navigation to last figure drawn <
#: the cases in the order they run (and are tabled); the baseline ones only with --baseline
CASES = ("hscc w1", "hscc w1 baseline", "hscc w2", "hscc w2 baseline", "hscc w2 half", "tcptrace loop", "tcptrace ×2")
BASELINE_CASES = ("hscc w1 baseline", "hscc w2 baseline")


def _status(pid: int) -> dict[str, str]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                out[k] = v.strip()
    except OSError:
        pass
    return out


def _children(pid: int) -> list[int]:
    """Children of every thread of ``pid`` (a worker is started by the client's event-loop thread)."""
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process so far (its own, not its children's)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


class TreeMemory:
    """Polls the process tree under ``root``: the highest VmHWM of every process seen, and its
    CPU time at the last look."""

    def __init__(self, root: int, every_s: float = 0.2) -> None:
        self.root, self.every = root, every_s
        self.peak: dict[int, int] = {}  # pid -> kB
        self.kind: dict[int, str] = {}
        self.cpu: dict[int, float] = {}
        self.samples: list[tuple[float, float]] = []  # (wall clock, CPU s of the workers so far)
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            todo, seen = [self.root], []
            while todo:
                p = todo.pop()
                seen.append(p)
                todo += _children(p)
            for p in seen:
                hwm = _status(p).get("VmHWM", "0 kB").split()[0]
                if p not in self.kind:
                    cmd = _cmdline(p)
                    self.kind[p] = (
                        "client"
                        if p == self.root
                        else "worker"
                        if "spawn_main" in cmd and "resource_tracker" not in cmd
                        else "other"
                    )
                self.peak[p] = max(self.peak.get(p, 0), int(hwm or 0))
                self.cpu[p] = max(self.cpu.get(p, 0.0), _cpu_s(p))
            self.samples.append((time.time(), sum(v for p, v in self.cpu.items() if self.kind.get(p) == "worker")))
            self._stop.wait(self.every)

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._t.join()
        workers = sorted((v for p, v in self.peak.items() if self.kind.get(p) == "worker"), reverse=True)
        return {
            "workers_mib": [round(v / 1024, 1) for v in workers],
            "client_mib": round(self.peak.get(self.root, 0) / 1024, 1),
            "workers_cpu_s": round(sum(v for p, v in self.cpu.items() if self.kind.get(p) == "worker"), 2),
            "client_cpu_s": round(self.cpu.get(self.root, 0.0), 2),
        }


def run_hscc(
    files_list: Path, n: int, workers: int, ds: Path, env: dict[str, str] | None = None, exe: str = HSCC
) -> dict[str, Any]:
    """One ``analyze --dataset`` run over the files listed in ``files_list`` (``exe``: the
    ``hscc-trace`` executable)."""
    if ds.exists():
        shutil.rmtree(ds)
    argv = [exe, "analyze", "--inputs-from", str(files_list), "--dataset", str(ds), "--workers", str(workers), "-q"]
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    mem = TreeMemory(proc.pid)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    m = mem.stop()
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    # a part (a task's captures) is complete when its captures file is written: (mtime, captures)
    import polars as pl

    parts = sorted(
        (p.stat().st_mtime, pl.read_parquet(p, columns=["blake3"]).height) for p in (ds / "captures").glob("*.parquet")
    )
    analyzed = sum(n for _, n in parts)
    errors = len(list((ds / "errors").glob("*.parquet")))
    span = parts[-1][0] - parts[0][0] if len(parts) > 1 else 0.0
    steady = (analyzed - parts[0][1]) / span if span > 0 else None
    # the workers' CPU between the first and the last part completed, per capture after the
    # first part: no cluster start-up in it (the CPU read every 0.2 s, interpolated)
    steady_cpu = None
    if span > 0 and len(mem.samples) > 1:
        import numpy as np

        t, c = np.array([x[0] for x in mem.samples]), np.array([x[1] for x in mem.samples])
        used = float(np.interp(parts[-1][0], t, c) - np.interp(parts[0][0], t, c))
        steady_cpu = round(1000 * used / (analyzed - parts[0][1]), 1)
    return {
        "argv": argv,
        "exit": os.waitstatus_to_exitcode(status),
        "stderr": err[-500:],
        "captures": n,
        "analyzed": analyzed,
        "errors": errors,
        "wall_s": round(wall, 3),
        "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
        "rate": round(n / wall, 2),
        "steady_rate": None if steady is None else round(steady, 2),
        "steady_worker_cpu_ms": steady_cpu,
        **m,
    }


def run_tcptrace(files: list[Path], procs: int) -> dict[str, Any]:
    """``tcptrace -n -lr`` over every file, ``procs`` processes at a time."""
    chunks = [files[i::procs] for i in range(procs)]
    cpu = [0.0] * procs
    fails = [0] * procs

    def loop(i: int) -> None:
        for f in chunks[i]:
            p = subprocess.Popen(
                ["tcptrace", "-n", "-lr", str(f)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            _, st, ru = os.wait4(p.pid, 0)
            cpu[i] += ru.ru_utime + ru.ru_stime
            fails[i] += os.waitstatus_to_exitcode(st) != 0

    t0 = time.monotonic()
    ts = [threading.Thread(target=loop, args=(i,)) for i in range(procs)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.monotonic() - t0
    return {
        "argv": ["tcptrace", "-n", "-lr", "FILE"],
        "procs": procs,
        "captures": len(files),
        "failed": sum(fails),
        "wall_s": round(wall, 3),
        "cpu_s": round(sum(cpu), 3),
        "rate": round(len(files) / wall, 2),
    }


#: the headless-chromium helper of the report tests, which the census render borrows
BROWSER_HELPER = REPO / "tests" / "reports" / "test_report_browser.py"
RENDER_TIMEOUT_S = 120.0  # the page's own wait; the helper process gets RENDER_TIMEOUT_S + 60


def census(ds: Path, out: Path) -> dict[str, Any]:
    """Build the census page and draw it in headless chromium. ``render`` is what the helper saw
    (``wall_s``, ``status``, ``figures``, ``errors``, ``requests``) or ``{"error": reason}``: no
    helper, no chromium, a timeout, a crash — never silently empty."""
    t0 = time.monotonic()
    r = subprocess.run([HSCC, "census", str(ds), "-o", str(out)], capture_output=True, text=True)
    build = time.monotonic() - t0
    res: dict[str, Any] = {"exit": r.returncode, "build_s": round(build, 3), "bytes": out.stat().st_size}
    res["render"] = render(out)
    return res


def render(page: Path) -> dict[str, Any]:
    """:func:`census`'s ``render`` of ``page``."""
    if not BROWSER_HELPER.is_file():
        return {"error": f"no browser helper at {BROWSER_HELPER}"}
    code = (
        "import json, sys\n"
        f"sys.path[:0] = [{str(BROWSER_HELPER.parent)!r}, {str(REPO / 'tests')!r}]  # (it imports tests/conftest)\n"
        "import test_report_browser as t\n"
        "if not t.CHROMIUM: print(json.dumps({'error': 'no chromium found'})); sys.exit()\n"
        f"r = t.open_report(__import__('pathlib').Path({str(page)!r}), timeout={RENDER_TIMEOUT_S})\n"
        "print(json.dumps({'wall_s': r['wall_s'], 'status': r['status'], "
        "'figures': r['figures'], 'errors': r['errors'][:5], 'requests': r['requests'] + r['blocked']}, default=str))"
    )
    try:
        p = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=RENDER_TIMEOUT_S + 60, cwd=REPO)
    except subprocess.TimeoutExpired:
        return {"error": f"the browser helper did not finish in {RENDER_TIMEOUT_S + 60:.0f} s"}
    try:
        got = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        last = (p.stderr.strip().splitlines() or [f"exit {p.returncode}, no output"])[-1]
        return {"error": f"the browser helper failed: {last}"}
    return got if isinstance(got, dict) else {"error": f"the browser helper printed {got!r}"}


def machine() -> dict[str, Any]:
    def first(argv: list[str]) -> str:
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            return (r.stdout or r.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "not available"

    import distributed

    cpu = "unknown"
    try:
        cpu = next(
            ln.split(":", 1)[1].strip()
            for ln in open("/proc/cpuinfo").read().splitlines()
            if ln.startswith("model name")
        )
    except (OSError, StopIteration):
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "hscc": first([HSCC, "version"]),
        "distributed": distributed.__version__,
        "tcptrace": first(["tcptrace", "-v"]),
        "python": sys.version.split()[0],
    }


def _med(xs: list[float | None]) -> float | None:
    v = [x for x in xs if x is not None]
    return round(statistics.median(v), 3) if v else None


def _no_render(rnd: dict[str, Any]) -> str:
    """Why a census render has no figure: the helper's reason, else the status it reached."""
    if rnd.get("error"):
        return f"not drawn: {rnd['error']}"
    return f"not drawn: status {rnd.get('status')}" if rnd else "not drawn: no render recorded"


def summarize(res: dict[str, Any]) -> dict[str, Any]:
    cases = res["cases"]
    s: dict[str, Any] = {}
    for name, runs in cases.items():
        s[name] = {k: _med([r.get(k) for r in runs]) for k in ("wall_s", "cpu_s", "rate", "steady_rate", "load_before")}
        if runs and "workers_mib" in runs[0]:
            s[name]["worker_peak_mib"] = max(max(r["workers_mib"] or [0]) for r in runs)
            s[name]["client_peak_mib"] = max(r["client_mib"] for r in runs)
            for k in ("workers_cpu_s", "client_cpu_s", "steady_worker_cpu_ms"):
                s[name][k] = _med([r.get(k) for r in runs])
    w1, w2, half = s["hscc w1"], s["hscc w2"], s["hscc w2 half"]
    rnd = res.get("census", {}).get("render") or {}
    targets = [
        {
            "name": "captures/s, 2 workers vs 1 (whole run)",
            "value": round(w2["rate"] / w1["rate"], 2),
            "target": f"≥ {TARGET_SPEEDUP}×",
            "pass": w2["rate"] / w1["rate"] >= TARGET_SPEEDUP,
        },
        {
            "name": "captures/s, 2 workers vs 1 (steady)",
            "value": None
            if not (w2["steady_rate"] and w1["steady_rate"])
            else round(w2["steady_rate"] / w1["steady_rate"], 2),
            "target": f"≥ {TARGET_SPEEDUP}×",
            "pass": bool(w2["steady_rate"] and w1["steady_rate"])
            and w2["steady_rate"] / w1["steady_rate"] >= TARGET_SPEEDUP,
        },
        {
            "name": f"peak memory per worker, {res['captures']} vs {res['half']} captures",
            "value": round(w2["worker_peak_mib"] / half["worker_peak_mib"], 3),
            "target": f"≤ {TARGET_MEM_GROWTH}",
            "pass": w2["worker_peak_mib"] / half["worker_peak_mib"] <= TARGET_MEM_GROWTH,
        },
        {
            "name": "census render (navigation to last figure)",
            "value": round(rnd["wall_s"], 2) if rnd.get("wall_s") is not None else _no_render(rnd),
            "target": f"< {TARGET_RENDER_S} s",
            "pass": rnd.get("wall_s") is not None and rnd["wall_s"] < TARGET_RENDER_S,
        },
        {
            "name": "census: console errors / requests",
            "value": f"{len(rnd.get('errors', []) or [])} / {len(rnd.get('requests', []) or [])}"
            if rnd.get("wall_s") is not None
            else _no_render(rnd),
            "target": "0 / 0",
            "pass": rnd.get("wall_s") is not None and not rnd.get("errors") and not rnd.get("requests"),
        },
    ]
    return {"cases": s, "targets": targets}


def _f2(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def markdown(res: dict[str, Any]) -> str:
    s = res["summary"]
    c = s["cases"]
    la = res["load"]
    L = [
        f"Run of {res['stamp']} (`benchmarks/results/{res['stamp']}-corpus.json`): {res['captures']} captures "
        f"({res['corpus_mib']:.0f} MiB) made by `benchmarks/make_corpus.py` from the {res['sources']} samples, "
        f"{res['runs']} run(s) of each case, every default algorithm replayed. Machine: {res['machine']['cpu']}, "
        f"{res['machine']['cores']} cores; load average (1 min) {la['before']:.2f} before, {la['after']:.2f} after, "
        f"largest seen between cases {la['max']:.2f}.",
        "",
        "| case | load before | wall | captures/s | steady captures/s | CPU | peak memory per worker | client |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in [n for n in CASES if n in c]:
        x = c[name]
        mem = f"{x['worker_peak_mib']:.0f} MiB" if "worker_peak_mib" in x else ""
        cl = f"{x['client_peak_mib']:.0f} MiB" if "client_peak_mib" in x else ""
        st = "" if x.get("steady_rate") is None else f"{x['steady_rate']:.1f}"
        ld = "" if x.get("load_before") is None else f"{x['load_before']:.1f}"
        L.append(
            f"| {name} | {ld} | {x['wall_s']:.1f} s | {x['rate']:.1f} | {st} | {x['cpu_s']:.1f} s | {mem} | {cl} |"
        )
    per = []
    for name in [n for n in ("hscc w1", "hscc w2", *BASELINE_CASES) if n in c]:
        x = c[name]
        if x.get("workers_cpu_s") is not None:
            n = res["captures"]
            per.append(
                f"{name}: workers {1000 * x['workers_cpu_s'] / n:.1f} ms + client (scheduler, nannies) "
                f"{1000 * (x.get('client_cpu_s') or 0) / n:.1f} ms"
            )
    if per:
        L += ["", "CPU per capture, start-up included: " + "; ".join(per) + "."]
    steady = [
        f"{name} {c[name]['steady_worker_cpu_ms']:.1f} ms"
        for name in ("hscc w1", "hscc w2", "hscc w2 half", *BASELINE_CASES)
        if name in c and c[name].get("steady_worker_cpu_ms") is not None
    ]
    tt = c["tcptrace loop"]
    if steady:
        loop = 1000 * tt["cpu_s"] / res["captures"]

        def ratio(name: str) -> str:
            v = c.get(name, {}).get("steady_worker_cpu_ms")
            return "–" if v is None else f"{v / loop:.1f}×"

        ratios = f"hscc w2 / loop: {ratio('hscc w2')}"
        if any(name in c for name in BASELINE_CASES):  # (then every case's, the baseline's beside it)
            ratios = ", ".join(
                f"{name} / loop: {ratio(name)}"
                for name in ("hscc w1", *BASELINE_CASES[:1], "hscc w2", *BASELINE_CASES[1:])
            )
        L += [
            "",
            "Worker CPU per capture, steady (first to last part written, no start-up): "
            + "; ".join(steady)
            + f"; tcptrace -lr loop {loop:.1f} ms per capture ({ratios}, target ≤ 3×).",
        ]
    L += ["", "| target | measured | target | |", "|---|---:|---:|---|"]
    for t in s["targets"]:
        L.append(f"| {t['name']} | {t['value']} | {t['target']} | {'pass' if t['pass'] else '**FAIL**'} |")
    cen = res.get("census", {})
    rnd = cen.get("render") or {}
    L += [
        "",
        f"Census of the {res['captures']}-capture dataset: built in {cen.get('build_s')} s, "
        f"{(cen.get('bytes') or 0) / 1e6:.2f} MB, "
        + (
            f"rendered in headless chromium in {_f2(rnd.get('wall_s'))} s "
            f"({(rnd.get('figures') or {}).get('drawn')} figures drawn)."
            if rnd.get("wall_s") is not None
            else f"{_no_render(rnd)}."
        ),
    ]
    return "\n".join(L) + "\n"


def update_docs() -> None:
    """Render the table of docs/performance.md from the latest results (benchmarks/make_table.py)."""
    sys.path.insert(0, str(BENCH))
    import make_table

    make_table.update_doc()


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(BENCH))
    import make_corpus

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--captures", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--corpus", type=Path, default=make_corpus.DEFAULT_OUT)
    ap.add_argument("--work", type=Path, default=BENCH / "out" / "corpus", help="datasets and census go here")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--stamp", help="results file name (default: UTC date-time)")
    ap.add_argument("--docs", action="store_true", help="also render the table of docs/performance.md (make_table.py)")
    ap.add_argument("--baseline", help="another hscc-trace executable: cases 'hscc w1/w2 baseline' beside this one's")
    ap.add_argument("--baseline-cache", type=Path, help="the baseline's cache folder (default WORK/baseline-cache)")
    a = ap.parse_args(argv)
    # (caches of its own: a kernel's compile stamp of one version removes the other's)
    cache = a.baseline_cache or a.work / "baseline-cache"
    baseline_env = {"HSCC_TRACE_CACHE_DIR": str(cache), "NUMBA_CACHE_DIR": str(cache / "numba")}

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    stamp = a.stamp or dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H%MZ")
    loads = [os.getloadavg()[0]]
    log(f"load average {loads[0]:.2f}; making the corpus ({a.captures} captures) …")
    man = make_corpus.make(a.captures, a.corpus)
    files = [a.corpus / f for f in man["files"]]
    half = len(files) // 2
    a.work.mkdir(parents=True, exist_ok=True)
    lists = {}
    for name, fs in (("all", files), ("half", files[:half])):
        lists[name] = a.work / f"inputs-{name}.txt"
        lists[name].write_text("".join(f"{f}\n" for f in fs))
    # untimed: fills the compile caches for the argument types these captures give every kernel
    # (one file of each sample the corpus is made of), with every kernel compiled rather than
    # interpreted: under the first-use rule a kernel not yet stamped runs interpreted until its
    # break-even, and that rent, paid in the first timed case, made "hscc w1" up to 30 % slower
    # (2026-11-27: 146.9 s against 113.4 s after a change of sources)
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "list.txt"
        kinds = list(dict.fromkeys(f.name.split("-", 1)[-1] for f in files))
        first = [next(f for f in files if f.name.split("-", 1)[-1] == k) for k in kinds]
        warm.write_text("".join(f"{f}\n" for f in first))
        run_hscc(warm, len(first), 1, Path(tmp) / "ds", env=dict(os.environ, HSCC_TRACE_FIRST_USE="compile"))
        if a.baseline:
            base_env = dict(os.environ, HSCC_TRACE_FIRST_USE="compile", **baseline_env)
            run_hscc(warm, len(first), 1, Path(tmp) / "ds-b", env=base_env, exe=a.baseline)
    cases: dict[str, list[dict[str, Any]]] = {k: [] for k in CASES if a.baseline or k not in BASELINE_CASES}
    for r in range(a.runs):
        for name in cases:
            loads.append(os.getloadavg()[0])
            log(f"run {r + 1}/{a.runs}: {name} (load {loads[-1]:.2f}) …")
            load0 = loads[-1]
            if name == "hscc w1":
                x = run_hscc(lists["all"], len(files), 1, a.work / "ds-w1")
            elif name == "hscc w2":
                x = run_hscc(lists["all"], len(files), 2, a.work / "ds-w2")
            elif name in BASELINE_CASES:
                w = 1 if name == "hscc w1 baseline" else 2
                env = dict(os.environ, **baseline_env)
                x = run_hscc(lists["all"], len(files), w, a.work / f"ds-b{w}", env=env, exe=a.baseline)
            elif name == "hscc w2 half":
                x = run_hscc(lists["half"], half, 2, a.work / "ds-half")
            elif name == "tcptrace loop":
                x = run_tcptrace(files, 1)
            else:
                x = run_tcptrace(files, 2)
            log(
                f"   {x['wall_s']:.1f} s, {x['rate']:.1f} captures/s"
                + (f", workers {x['workers_mib']} MiB" if "workers_mib" in x else "")
            )
            x["load_before"] = round(load0, 2)
            cases[name].append(x)
    loads.append(os.getloadavg()[0])
    log("census …")
    cen = census(a.work / "ds-w2", a.work / "census.html")
    loads.append(os.getloadavg()[0])
    res: dict[str, Any] = {
        "stamp": stamp,
        "captures": len(files),
        "half": half,
        "runs": a.runs,
        "sources": len(man["sources"]),
        "corpus_mib": man["bytes"] / 2**20,
        "machine": machine(),
        "load": {"before": loads[0], "after": loads[-1], "max": max(loads), "samples": loads},
        "cases": cases,
        "census": cen,
    }
    res["summary"] = summarize(res)
    md = markdown(res)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / f"{stamp}-corpus.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    (a.out / f"{stamp}-corpus.md").write_text(md)
    if a.docs:
        update_docs()
    sys.stdout.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
