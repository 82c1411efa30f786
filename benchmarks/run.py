#!/usr/bin/env python3
"""hscc-trace against tshark, tcptrace, dpkt and scapy: same captures, same machine, one run.

For every capture (``--captures``, default the four made by make_capture.py) every case below is
run ``--runs`` times, the cases interleaved round by round (so a burst of load from elsewhere
hits every tool alike). Each run is one process, stdout to /dev/null, timed with a monotonic
clock (wall), with user+system CPU time and peak resident memory (``ru_maxrss``) from
``wait4(2)`` — the same numbers GNU ``time -v`` prints. Medians are reported; a case whose first
run takes longer than ``--max-repeat-s`` is not repeated (the table says how many runs it had).

Cases (``CASES``):

* ``hscc flows``     ``hscc-trace flows FILE`` (the flow table, printed as a table)
* ``hscc events``    capture → event streams of every flow (benchmarks/hscc_events.py)
* ``hscc analyze``   ``hscc-trace analyze FILE -o report.html --json results.json -q``: every
                     default algorithm replayed on every flow, fit, the HTML report and JSON
* ``tcptrace -l``    ``tcptrace -n -l FILE`` (-n: no DNS lookups; there is no network here)
* ``tcptrace -lr``   ``tcptrace -n -l -r FILE`` (with RTT statistics: issue #16 states its analyze target so)
* ``tshark conv``    ``tshark -n -r FILE -q -z conv,tcp``
* ``tshark analysis`` ``tshark -n -r FILE -T fields -e frame.number -e tcp.stream
                     -e tcp.analysis.ack_rtt -e tcp.analysis.bytes_in_flight``
* ``dpkt loop``      benchmarks/peers/dpkt_flows.py: every packet parsed to TCP fields, flow dict
* ``scapy loop``     benchmarks/peers/scapy_flows.py on the first ``--scapy-slice`` packets,
                     EXTRAPOLATED to the whole file (import time + loop time × total/slice);
                     its memory is the slice's

and one case over several captures at once (``MULTI_CASES``, selected with ``--cases`` like the
others):

* ``hscc_jobs``      ``hscc-trace analyze CAPTURES… -o report.html --json results.json -q
                     --jobs 1`` vs the same with ``--jobs 2``, for each group of ``JOBS_GROUPS``
                     (the nine samples; the replicas 0.1M + 1M + 5M with the samples), the two
                     interleaved, ``--runs`` times each after one untimed warm-up; reports both
                     medians and the speedup (jobs 1 wall / jobs 2 wall) as the target
                     "--jobs 2 faster than --jobs 1 on several captures" (issue #7). Peak memory
                     is the largest process of the tree (analyze runs as one process; --jobs adds threads)

Then: replay throughput (benchmarks/hscc_replay.py, cold compile cache and warm), the report's
size and render time in headless chromium (the browser helper of tests/reports/test_report_browser.py),
and the targets of issue #8 with pass/fail. Writes benchmarks/results/<date>.json and .md and,
with ``--docs``, renders the table of docs/performance.md (benchmarks/make_table.py).

Usage: python benchmarks/run.py [--runs 3] [--captures replica-0.1M,replica-1M,...] [--docs]

The big-flow captures (:data:`BIGFLOW_CAPTURES`, made beforehand by benchmarks/make_bigflow.py) are
selected by name, e.g. ``--captures bigflows4,cubic10M --cases hscc_analyze,tcptrace_lr``.
``--linear-flow cubic10M`` also times ``analyze`` on the first quarter, the first half and the whole
of that one-flow capture: the cost of a flow must grow linearly with its length (a step quadratic in
it, such as a loop over every round per congestion episode, shows there and on no many-flow capture).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
DATA = BENCH / "data"
RESULTS = BENCH / "results"
#: the last report of each capture, kept for the render step (git-ignored)
OUT = BENCH / "out"
PY = sys.executable
HSCC = str(Path(PY).with_name("hscc-trace")) if Path(PY).with_name("hscc-trace").exists() else "hscc-trace"

DEFAULT_CAPTURES = ["replica-0.1M", "replica-1M", "replica-5M", "replica-flows10k"]
#: Captures of real Linux senders made on the testbed by benchmarks/make_bigflow.py (root, network
#: namespaces; not made here): a few big flows and one high-speed flow (issue 39). Select them with
#: ``--captures bigflows4,cubic10M``.
BIGFLOW_CAPTURES = ["bigflows4", "cubic10M"]

# Targets of issue #8 (and #2, #4, #5): name -> limit
#: --jobs 2 must beat --jobs 1 by more than run-to-run noise (a few %) to count as faster
TARGET_JOBS_SPEEDUP = 1.05  # jobs 1 wall / jobs 2 wall ≥
TARGET_FLOWS_VS_TCPTRACE = 1.0  # hscc flows time / tcptrace -l time  ≤
TARGET_FLOWS_VS_TSHARK = 50.0  # tshark conv time / hscc flows time   ≥
TARGET_ANALYZE_VS_TCPTRACE = 2.0  # hscc analyze / tcptrace -l           ≤
TARGET_EVENTS_VS_TCPTRACE = 1.5  # hscc events / tcptrace -l            ≤
TARGET_REPLAY_EVENTS_PER_S = 20e6  # per algorithm per core              ≥
TARGET_REPORT_MB = 10.0
TARGET_REPORT_RENDER_S = 3.0
LINEAR_TOLERANCE = 1.25  # per-packet marginal cost may vary by this factor between size steps


@dataclass
class Case:
    key: str
    label: str
    argv: Callable[[Path, Path], list[str]]  # (capture, scratch dir) -> argv
    needs: str | None = None  # executable or python module that must exist
    kind: str = "peer"  # "hscc" or "peer"
    extrapolate: bool = False
    note: str = ""


def _have(need: str | None) -> bool:
    if need is None:
        return True
    if need.startswith("py:"):
        r = subprocess.run([PY, "-c", f"import {need[3:]}"], capture_output=True)
        return r.returncode == 0
    return shutil.which(need) is not None


CASES: list[Case] = [
    Case("hscc_flows", "hscc-trace flows", lambda f, d: [HSCC, "flows", str(f)], kind="hscc"),
    Case(
        "hscc_events",
        "hscc-trace events path (all flows)",
        lambda f, d: [PY, str(BENCH / "hscc_events.py"), str(f)],
        kind="hscc",
    ),
    Case(
        "hscc_analyze",
        "hscc-trace analyze (all algorithms + report)",
        lambda f, d: [HSCC, "analyze", str(f), "-o", str(d / "report.html"), "--json", str(d / "results.json"), "-q"],
        kind="hscc",
    ),
    Case("tcptrace", "tcptrace -l", lambda f, d: ["tcptrace", "-n", "-l", str(f)], needs="tcptrace"),
    # issue #16 states its analyze target against `tcptrace -lr` (long output plus RTT statistics)
    Case("tcptrace_lr", "tcptrace -lr", lambda f, d: ["tcptrace", "-n", "-l", "-r", str(f)], needs="tcptrace"),
    Case(
        "tshark_conv",
        "tshark -z conv,tcp",
        lambda f, d: ["tshark", "-n", "-r", str(f), "-q", "-z", "conv,tcp"],
        needs="tshark",
    ),
    Case(
        "tshark_analysis",
        "tshark tcp.analysis fields",
        lambda f, d: [
            "tshark",
            "-n",
            "-r",
            str(f),
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "tcp.stream",
            "-e",
            "tcp.analysis.ack_rtt",
            "-e",
            "tcp.analysis.bytes_in_flight",
        ],
        needs="tshark",
    ),
    Case("dpkt", "dpkt loop", lambda f, d: [PY, str(BENCH / "peers" / "dpkt_flows.py"), str(f)], needs="py:dpkt"),
    Case(
        "scapy",
        "scapy loop",
        lambda f, d: [PY, str(BENCH / "peers" / "scapy_flows.py"), str(f), "--limit", str(SCAPY_SLICE)],
        needs="py:scapy",
        extrapolate=True,
    ),
]
SCAPY_SLICE = 20_000

#: Cases over several captures at once (not per capture): key -> label.
MULTI_CASES = {"hscc_jobs": "hscc-trace analyze --jobs 1 vs --jobs 2 (several captures)"}
#: The groups of captures ``hscc_jobs`` analyzes in one run each: name -> paths (globs relative to
#: the repository; missing files are left out and the group is skipped when none is left).
JOBS_GROUPS = {
    "samples": ["samples/*/capture.pcap"],
    "replicas+samples": [
        "benchmarks/data/replica-0.1M.pcap",
        "benchmarks/data/replica-1M.pcap",
        "benchmarks/data/replica-5M.pcap",
        "samples/*/capture.pcap",
    ],
}


# --- measuring one process -------------------------------------------------------------------


def measure(
    argv: list[str], timeout_s: float, stdout: Any = subprocess.DEVNULL, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run ``argv`` once: wall time (s), CPU time user+sys (s), peak RSS (MiB), exit code, stderr tail."""
    err = tempfile.TemporaryFile()
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=stdout, stderr=err, env=env)
    killed = []

    def kill() -> None:
        killed.append(True)
        p.kill()

    timer = threading.Timer(timeout_s, kill)
    timer.start()
    try:
        _, status, ru = os.wait4(p.pid, 0)
    finally:
        timer.cancel()
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    err.seek(0)
    tail = err.read()[-600:].decode(errors="replace").strip()
    return dict(
        wall_s=wall,
        cpu_s=ru.ru_utime + ru.ru_stime,
        rss_mib=ru.ru_maxrss / 1024.0,
        rc=p.returncode,
        timeout=bool(killed),
        stderr_tail=tail,
    )


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in runs if r["rc"] == 0 and not r["timeout"]]
    use = ok or runs
    return dict(
        n=len(runs),
        n_ok=len(ok),
        timed_out=all(r["timeout"] for r in runs),
        wall_s=statistics.median(r["wall_s"] for r in use),
        cpu_s=statistics.median(r["cpu_s"] for r in use),
        rss_mib=max(r["rss_mib"] for r in use),
    )


# --- pieces -----------------------------------------------------------------------------------


def _lines(argv: list[str]) -> list[str]:
    """The output lines of a command (stdout, else stderr), or one line saying it is unavailable."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        return (r.stdout or r.stderr).strip().splitlines() or [""]
    except Exception as exc:  # noqa: BLE001 - a missing tool is reported, not fatal
        return [f"unavailable ({type(exc).__name__})"]


def _first_line(argv: list[str]) -> str:
    return _lines(argv)[0]


def compile_bytecode(log) -> str:
    """Write the package's bytecode (``__pycache__/*.pyc``) before anything is timed.

    ``pip install .`` byte-compiles every module; this checkout is an editable install, whose
    modules Python compiles from source on every run unless it may write ``.pyc`` files — and
    with ``PYTHONDONTWRITEBYTECODE=1`` in the environment it never does (≈ 0.1 s of CPU for
    ``hscc-trace flows`` alone, more for ``analyze``). ``compileall`` writes them explicitly
    (Python still reads them under that variable), so every case times what an installed
    package runs. Returns what was done, for the results."""
    folders = [str(REPO / d) for d in ("hscc_trace", "replay", "reports")]
    r = subprocess.run([PY, "-m", "compileall", "-q", *folders], capture_output=True, text=True)
    what = "package byte-compiled before timing (python -m compileall)" + ("" if r.returncode == 0 else " — failed")
    log(what)
    return what


def machine_info() -> dict[str, Any]:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = next(
        int(ln.split()[1]) for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal")
    )
    pyver = subprocess.run(
        [
            PY,
            "-c",
            "import sys, polars, numba, numpy, scapy; "
            "print(sys.version.split()[0], polars.__version__, numba.__version__, "
            "numpy.__version__, scapy.__version__)",
        ],
        capture_output=True,
        text=True,
    ).stdout.split()
    dpkt_v = subprocess.run(
        [PY, "-c", "import dpkt; print(dpkt.__version__)"], capture_output=True, text=True
    ).stdout.strip()
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    version = _lines([HSCC, "version"])
    return dict(
        nproc=os.cpu_count(),
        cpu_model=cpu,
        mem_gib=round(mem_kb / 1024 / 1024, 1),
        kernel=platform.release(),
        os=_first_line(["sh", "-c", ". /etc/os-release; echo $PRETTY_NAME"]),
        python=pyver[0] if pyver else None,
        polars=pyver[1] if len(pyver) > 1 else None,
        numba=pyver[2] if len(pyver) > 2 else None,
        numpy=pyver[3] if len(pyver) > 3 else None,
        scapy=pyver[4] if len(pyver) > 4 else None,
        dpkt=dpkt_v or None,
        hscc_trace=version[0] + (f" (git {commit})" if commit else ""),
        tshark=_first_line(["tshark", "--version"]),
        tcptrace=_first_line(["tcptrace", "-v"]),
        loadavg_start=Path("/proc/loadavg").read_text().split()[:3],
    )


def run_captures(
    captures: list[str], runs: int, max_repeat_s: float, timeout_s: float, cases: list[Case], log: Callable[[str], None]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in captures:
        pcap = DATA / f"{name}.pcap"
        manifest = json.loads(pcap.with_suffix(".json").read_text())
        with open(pcap, "rb") as fh:  # warm the page cache once, for every tool alike
            while fh.read(1 << 24):
                pass
        scratch = Path(tempfile.mkdtemp(prefix=f"hscc-bench-{name}-"))
        per: dict[str, list[dict[str, Any]]] = {c.key: [] for c in cases}
        extra: dict[str, Any] = {}
        for r in range(runs):
            for c in cases:
                if r > 0 and per[c.key] and per[c.key][0]["wall_s"] > max_repeat_s:
                    continue
                stdout: Any = subprocess.DEVNULL
                if c.key in ("scapy", "dpkt", "hscc_events"):
                    stdout = subprocess.PIPE
                if stdout is subprocess.PIPE:
                    tmp = tempfile.TemporaryFile()
                    res = measure(c.argv(pcap, scratch), timeout_s, stdout=tmp)
                    tmp.seek(0)
                    txt = tmp.read().decode(errors="replace").strip()
                    try:
                        extra.setdefault(c.key, []).append(json.loads(txt.splitlines()[-1]))
                    except (ValueError, IndexError):
                        res["stdout_tail"] = txt[-300:]
                else:
                    res = measure(c.argv(pcap, scratch), timeout_s)
                per[c.key].append(res)
                log(
                    f"  {name} run {r + 1} {c.label}: {res['wall_s']:.2f} s wall, {res['cpu_s']:.2f} s cpu, "
                    f"{res['rss_mib']:.0f} MiB, rc {res['rc']}"
                )
        rows = {}
        for c in cases:
            if not per[c.key]:
                continue
            s = summarize(per[c.key])
            s.update(label=c.label, kind=c.kind, runs=per[c.key], command=" ".join(c.argv(pcap, Path("OUT"))))
            if c.extrapolate and extra.get(c.key):
                e = extra[c.key][0]
                factor = manifest["packets"] / max(e["packets"], 1)
                loops = statistics.median(x["loop_s"] for x in extra[c.key])
                s["measured_wall_s"], s["measured_cpu_s"] = s["wall_s"], s["cpu_s"]
                s["wall_s"] = s["wall_s"] + loops * (factor - 1)
                s["cpu_s"] = s["cpu_s"] + loops * (factor - 1)
                s["extrapolated"] = dict(slice_packets=e["packets"], factor=factor, loop_s=loops)
                s["note"] = (
                    f"EXTRAPOLATED from the first {e['packets']:,} packets (×{factor:.1f}); memory is the slice's"
                )
            if c.key in extra:
                s["output"] = extra[c.key][-1]
            rows[c.key] = s
        report = scratch / "report.html"
        if report.exists():
            extra_report = dict(report_bytes=report.stat().st_size, **report_parts(report))
            OUT.mkdir(parents=True, exist_ok=True)  # (not DATA: that folder holds the inputs only)
            keep = OUT / f"{name}.report.html"
            shutil.copyfile(report, keep)
            extra_report["report_path"] = str(keep)
            rows.setdefault("_report", {}).update(extra_report)
        shutil.rmtree(scratch, ignore_errors=True)
        base = rows.get("hscc_flows", {}).get("wall_s")
        base_a = rows.get("hscc_analyze", {}).get("wall_s")
        for k, s in rows.items():
            if k.startswith("_"):
                continue
            s["x_hscc_flows"] = s["wall_s"] / base if base else None
            s["x_hscc_analyze"] = s["wall_s"] / base_a if base_a else None
            s["pkts_per_s"] = manifest["packets"] / s["wall_s"] if s["wall_s"] else None
        out[name] = dict(
            packets=manifest["packets"],
            flows=manifest["flows"],
            bytes=manifest["bytes"],
            sha256=manifest["sha256"],
            cases=rows,
        )
    return out


def _pcap_prefix(src: Path, dst: Path, packets: int) -> bool:
    """Copy the first ``packets`` records of the classic pcap ``src`` to ``dst``, streaming; False
    (nothing written) for any other format."""
    with open(src, "rb") as fi:
        head = fi.read(24)
        if len(head) < 24 or head[:4] not in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
            return False
        with open(dst, "wb") as fo:
            fo.write(head)
            for _ in range(packets):
                rec = fi.read(16)
                if len(rec) < 16:
                    break
                fo.write(rec + fi.read(int.from_bytes(rec[8:12], "little")))
    return True


def flow_linearity(name: str, timeout_s: float, log: Callable[[str], None]) -> dict[str, Any] | None:
    """``analyze`` (CPU s, peak RSS MiB) on the first quarter, the first half and all packets of the
    one-flow capture ``name``, each measured once in this run."""
    pcap = DATA / f"{name}.pcap"
    n = json.loads(pcap.with_suffix(".json").read_text())["packets"]
    scratch = Path(tempfile.mkdtemp(prefix=f"hscc-bench-linear-{name}-"))
    analyze = next(c for c in CASES if c.key == "hscc_analyze")
    points = []
    try:
        for k in (n // 4, n // 2, n):
            f = pcap if k == n else scratch / f"first-{k}.pcap"
            if f != pcap and not _pcap_prefix(pcap, f, k):
                log(f"{name}: not a classic pcap, no prefixes: linearity not measured")
                return None
            r = measure(analyze.argv(f, scratch), timeout_s)
            log(f"  {name} first {k:,} packets: analyze {r['cpu_s']:.1f} s cpu, {r['rss_mib']:.0f} MiB, rc {r['rc']}")
            points.append(dict(packets=k, cpu_s=r["cpu_s"], rss_mib=r["rss_mib"], rc=r["rc"]))
            if f != pcap:
                f.unlink()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return dict(capture=name, points=points)


def jobs_bench(runs: int, timeout_s: float, warm: bool, log: Callable[[str], None]) -> dict[str, Any]:
    """``hscc_jobs``: each group of :data:`JOBS_GROUPS` analyzed in one process tree with --jobs 1
    and --jobs 2, interleaved (the order alternates between rounds so that neither always runs
    second), after one untimed --jobs 2 run (compile caches, page cache)."""
    import glob

    out: dict[str, Any] = {}
    for name, pats in JOBS_GROUPS.items():
        files = [f for pat in pats for f in sorted(glob.glob(str(REPO / pat)))]
        files = list(dict.fromkeys(files))
        if not files:
            log(f"  jobs {name}: no captures, skipped")
            continue
        scratch = Path(tempfile.mkdtemp(prefix=f"hscc-bench-jobs-{name}-"))

        def argv(j: int, files: list[str] = files, scratch: Path = scratch) -> list[str]:
            return [
                HSCC,
                "analyze",
                *files,
                "-o",
                str(scratch / f"r{j}.html"),
                "--json",
                str(scratch / f"r{j}.json"),
                "-q",
                "--jobs",
                str(j),
            ]

        if warm:
            measure(argv(2), timeout_s)
        per: dict[int, list[dict[str, Any]]] = {1: [], 2: []}
        for r in range(runs):
            for j in (1, 2) if r % 2 == 0 else (2, 1):
                res = measure(argv(j), timeout_s)
                per[j].append(res)
                log(
                    f"  jobs {name} run {r + 1} --jobs {j}: {res['wall_s']:.2f} s wall, {res['cpu_s']:.2f} s cpu, "
                    f"{res['rss_mib']:.0f} MiB, rc {res['rc']}"
                )
        same = None
        try:  # the two runs' results must agree (apart from timestamps and paths of the outputs)
            sys.path.insert(0, str(REPO))
            from hscc_trace.analysis import results as _results

            docs = [_results.comparable(json.loads((scratch / f"r{j}.json").read_text())) for j in (1, 2)]
            same = docs[0] == docs[1]
        except (OSError, ValueError, ImportError) as exc:
            log(f"  jobs {name}: results not compared ({exc})")
        shutil.rmtree(scratch, ignore_errors=True)
        s1, s2 = summarize(per[1]), summarize(per[2])
        out[name] = dict(
            captures=[str(Path(f).relative_to(REPO)) if f.startswith(str(REPO)) else f for f in files],
            bytes=sum(os.path.getsize(f) for f in files),
            jobs1=s1,
            jobs2=s2,
            speedup=s1["wall_s"] / s2["wall_s"] if s2["wall_s"] else None,
            same_results=same,
            command=" ".join(argv(2)[:1] + ["analyze", "CAPTURES…"] + argv(2)[2 + len(files) :]).replace(
                str(scratch), "OUT"
            ),
        )
    return out


def report_parts(report: Path) -> dict[str, int]:
    """What a report holds at full resolution, read from its page: the events (the header's note)
    and the bytes of the stores (the ``data-store`` scripts), for the size budget."""
    import re

    page = report.read_text(encoding="utf-8")
    m = re.search(r"hold every event \(([\d,]+) of ([\d,]+) ACKs and data segments", page)
    stores = re.findall(r"<script type=\"application/octet-stream\" data-store [^>]*>([^<]*)</script>", page)
    return dict(
        events_full=int(m.group(1).replace(",", "")) if m else 0,
        events=int(m.group(2).replace(",", "")) if m else 0,
        store_bytes=sum(len(x) for x in stores),
    )


def render_time(report: Path, log: Callable[[str], None]) -> dict[str, Any] | None:
    """Open the report in headless chromium with the helper of tests/reports/test_report_browser.py."""
    helper = REPO / "tests" / "test_report_browser.py"
    if not helper.exists():
        log("  report render: tests/reports/test_report_browser.py not found, skipped")
        return None
    code = (
        f"import json, sys; sys.path.insert(0, {str(helper.parent)!r}); import test_report_browser as t;\n"
        f"r = t.open_report(__import__('pathlib').Path({str(report)!r}), timeout=120.0) if t.CHROMIUM else None;\n"
        "print(json.dumps(None if r is None else {'wall_s': r['wall_s'], 'status': r['status'], "
        "'figures': r['figures'], 'errors': r['errors'][:5], 'requests': r['requests'][:5]}, default=str))"
    )
    res = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    try:
        return json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        log(f"  report render failed: {res.stderr[-400:]}")
        return dict(error=res.stderr[-400:])


def replay_bench(capture: str, repeat: int, log: Callable[[str], None]) -> dict[str, Any] | None:
    pcap = DATA / f"{capture}.pcap"
    cache = Path(tempfile.mkdtemp(prefix="hscc-bench-cache-"))
    env = dict(os.environ, HSCC_TRACE_CACHE_DIR=str(cache))
    out: dict[str, Any] = {}
    for phase in ("cold", "warm"):
        tmp = tempfile.TemporaryFile()
        res = measure(
            [PY, str(BENCH / "hscc_replay.py"), str(pcap), "--repeat", str(repeat)], 3600, stdout=tmp, env=env
        )
        tmp.seek(0)
        try:
            out[phase] = json.loads(tmp.read().decode().strip().splitlines()[-1])
            out[phase]["process"] = {k: res[k] for k in ("wall_s", "cpu_s", "rss_mib", "rc")}
        except (ValueError, IndexError):
            log(f"  replay {phase} failed: {res['stderr_tail']}")
            out[phase] = dict(error=res["stderr_tail"])
        log(f"  replay {phase}: {res['wall_s']:.1f} s")
    shutil.rmtree(cache, ignore_errors=True)
    other = BENCH / "replay_speed.py"
    if other.exists():  # engineer C's replay throughput script, when present: recorded as it prints
        argv = [PY, str(other), "--events", "2000000", "--repeat", str(repeat)]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=1800, cwd=REPO)
        try:
            out["replay_speed_py"] = dict(json.loads(r.stdout), command="replay_speed.py " + " ".join(argv[2:]))
        except ValueError:
            out["replay_speed_py"] = dict(rc=r.returncode, stdout=r.stdout[-2000:], stderr=r.stderr[-500:])
        log(f"  replay_speed.py: rc {r.returncode}")
    return out


def warm_up(capture: str, cold: bool, log: Callable[[str], None]) -> dict[str, Any]:
    """Compile caches: with ``cold``, one analyze with EMPTY caches (the cold first-run cost,
    recorded); then one with the default caches, every kernel compiled (``HSCC_TRACE_FIRST_USE=
    compile``: under the first-use rule a small capture would leave the kernels interpreted, and
    the timed runs on the large ones would compile), so that the timed runs measure steady-state
    work, not compilation after a source change."""
    pcap = DATA / f"{capture}.pcap"
    out: dict[str, Any] = dict(capture=capture)
    tmp = Path(tempfile.mkdtemp(prefix="hscc-bench-cold-"))
    env = dict(os.environ, HSCC_TRACE_CACHE_DIR=str(tmp / "hscc"), NUMBA_CACHE_DIR=str(tmp / "numba"))
    argv = [HSCC, "analyze", str(pcap), "-o", str(tmp / "r.html"), "--json", str(tmp / "r.json"), "-q"]
    warm = dict(os.environ, HSCC_TRACE_FIRST_USE="compile")
    for phase, e in ((("cold", env),) if cold else ()) + (("warm", warm),):
        r = measure(argv, 3600, env=e)
        out[phase] = {k: r[k] for k in ("wall_s", "cpu_s", "rss_mib", "rc")}
        log(f"  analyze {capture}, {phase} caches: {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s cpu, rc {r['rc']}")
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def targets(res: dict[str, Any]) -> list[dict[str, Any]]:
    """Evaluate the issue's targets on the largest bulk capture (and memory/linearity on every size)."""
    caps = res["captures"]
    out: list[dict[str, Any]] = []

    def add(name: str, value: float | None, op: str, limit: float, detail: str) -> None:
        ok = (
            None
            if value is None
            else (value <= limit if op == "<=" else value > limit if op == ">" else value >= limit)
        )
        out.append(dict(target=name, value=value, op=op, limit=limit, passed=ok, detail=detail))

    bulk = [c for c in caps if "flows10k" not in c]
    if bulk:
        big = max(bulk, key=lambda c: caps[c]["packets"])
        cs = caps[big]["cases"]

        def t(k: str) -> float | None:
            return cs.get(k, {}).get("wall_s")

        def ratio(a: str, b: str) -> float | None:
            return t(a) / t(b) if t(a) and t(b) else None

        def cpu(a: str, b: str) -> str:
            x, y = cs.get(a, {}).get("cpu_s"), cs.get(b, {}).get("cpu_s")
            lb = (
                "; a run hit the time limit: lower bound" if any(cs.get(k, {}).get("timed_out") for k in (a, b)) else ""
            )
            return (f"; CPU-time ratio {x / y:.2f}" if x and y else "") + lb

        add(
            "flows ≤ 1.0× tcptrace -l",
            ratio("hscc_flows", "tcptrace"),
            "<=",
            TARGET_FLOWS_VS_TCPTRACE,
            f"{big}: hscc-trace flows / tcptrace -l wall time" + cpu("hscc_flows", "tcptrace"),
        )
        add(
            "flows ≥ 50× faster than tshark conv",
            ratio("tshark_conv", "hscc_flows"),
            ">=",
            TARGET_FLOWS_VS_TSHARK,
            f"{big}: tshark -z conv,tcp / hscc-trace flows wall time" + cpu("tshark_conv", "hscc_flows"),
        )
        add(
            "analyze (all algorithms + report) ≤ 2.0× tcptrace -l",
            ratio("hscc_analyze", "tcptrace"),
            "<=",
            TARGET_ANALYZE_VS_TCPTRACE,
            f"{big}: hscc-trace analyze / tcptrace -l wall time" + cpu("hscc_analyze", "tcptrace"),
        )
        if t("tcptrace_lr"):
            add(
                "analyze (all algorithms + report) ≤ 2.0× tcptrace -lr",
                ratio("hscc_analyze", "tcptrace_lr"),
                "<=",
                TARGET_ANALYZE_VS_TCPTRACE,
                f"{big}: hscc-trace analyze / tcptrace -lr wall time" + cpu("hscc_analyze", "tcptrace_lr"),
            )
        add(
            "events path ≤ 1.5× tcptrace -l",
            ratio("hscc_events", "tcptrace"),
            "<=",
            TARGET_EVENTS_VS_TCPTRACE,
            f"{big}: capture → events of every flow / tcptrace -l wall time" + cpu("hscc_events", "tcptrace"),
        )
        size_mib = caps[big]["bytes"] / 2**20
        for k in ("hscc_flows", "hscc_events", "hscc_analyze"):
            if k in cs:
                add(
                    f"peak memory of {cs[k]['label']} ≤ capture size",
                    cs[k]["rss_mib"] / size_mib,
                    "<=",
                    1.0,
                    f"{big}: {cs[k]['rss_mib']:.0f} MiB peak RSS / {size_mib:.0f} MiB file",
                )
        rep = cs.get("_report")
        if rep:
            from hscc_trace.reports.html import size_budget  # the documented budget (docs/report.md)

            light = (rep["report_bytes"] - rep.get("store_bytes", 0)) / 1e6
            add(
                "report without its full-resolution events < 10 MB",
                light,
                "<=",
                TARGET_REPORT_MB,
                f"{big}: report.html size in MB less the stores ({rep.get('store_bytes', 0) / 1e6:.2f} MB)",
            )
            budget = size_budget(rep.get("events_full", 0)) / 1e6
            add(
                "report within its size budget (docs/report.md)",
                rep["report_bytes"] / 1e6,
                "<=",
                budget,
                f"{big}: report.html size in MB; budget for {rep.get('events_full', 0):,} events at full resolution",
            )
            r = rep.get("render") or {}
            if r.get("wall_s") is not None:
                add(
                    "report renders < 3 s",
                    r["wall_s"],
                    "<=",
                    TARGET_REPORT_RENDER_S,
                    f"{big}: navigation → every flow's main figure drawn, headless chromium",
                )
            first = (r.get("status") or {}).get("firstFlowSinceNavigation")
            if first is not None:
                add(
                    "report draws its first flow < 3 s",
                    first / 1000,
                    "<=",
                    TARGET_REPORT_RENDER_S,
                    f"{big}: navigation → the first flow's main figure drawn, headless chromium",
                )
        # linearity: marginal per-packet CPU time between consecutive sizes (CPU, not wall: the
        # machine's load may differ between sizes; fixed start-up costs make it sublinear)
        sizes = sorted(bulk, key=lambda c: caps[c]["packets"])
        for k in ("hscc_flows", "hscc_events", "hscc_analyze"):
            pts = [
                (caps[c]["packets"], caps[c]["cases"][k]["cpu_s"], caps[c]["cases"][k]["rss_mib"])
                for c in sizes
                if k in caps[c]["cases"]
            ]
            if len(pts) >= 3:
                m1 = (pts[-2][1] - pts[-3][1]) / (pts[-2][0] - pts[-3][0])
                m2 = (pts[-1][1] - pts[-2][1]) / (pts[-1][0] - pts[-2][0])
                r1 = (pts[-2][2] - pts[-3][2]) / (pts[-2][0] - pts[-3][0]) * 2**20
                r2 = (pts[-1][2] - pts[-2][2]) / (pts[-1][0] - pts[-2][0]) * 2**20
                add(
                    f"{k.replace('_', ' ')}: time linear in packets",
                    m2 / m1 if m1 > 0 else None,
                    "<=",
                    LINEAR_TOLERANCE,
                    f"marginal CPU µs/packet {pts[-3][0]:,}→{pts[-2][0]:,}: {m1 * 1e6:.2f}, "
                    f"{pts[-2][0]:,}→{pts[-1][0]:,}: {m2 * 1e6:.2f} (ratio); marginal memory "
                    f"{r1:.0f} then {r2:.0f} bytes/packet",
                )
    lin = res.get("flow_linearity")
    if lin and len(lin["points"]) == 3 and all(p["rc"] == 0 for p in lin["points"]):
        (n1, c1), (n2, c2), (n3, c3) = ((p["packets"], p["cpu_s"]) for p in lin["points"])
        m1, m2 = (c2 - c1) / (n2 - n1), (c3 - c2) / (n3 - n2)
        add(
            f"one flow ({lin['capture']}): analyze time linear in packets",
            m2 / m1 if m1 > 0 else None,
            "<=",
            LINEAR_TOLERANCE,
            f"marginal CPU µs/packet {n1:,}→{n2:,}: {m1 * 1e6:.2f}, {n2:,}→{n3:,}: {m2 * 1e6:.2f} (ratio)",
        )
    for name, g in (res.get("jobs") or {}).items():
        add(
            f"--jobs 2 faster than --jobs 1 on several captures ({name})",
            g.get("speedup"),
            ">=",
            TARGET_JOBS_SPEEDUP,
            f"{len(g['captures'])} captures, {g['bytes'] / 2**20:.1f} MiB: analyze --jobs 1 / --jobs 2 wall time "
            f"(median of {g['jobs1']['n']} and {g['jobs2']['n']})"
            + (
                f"; CPU time {g['jobs1']['cpu_s']:.1f} vs {g['jobs2']['cpu_s']:.1f} s"
                if g.get("jobs1", {}).get("cpu_s") is not None and g.get("jobs2", {}).get("cpu_s") is not None
                else ""
            ),
        )
    rp = res.get("replay") or {}
    warm = rp.get("warm", {}).get("algorithms") or {}
    rs = (rp.get("replay_speed_py") or {}).get("algorithms") or {}
    if rs:  # the replay owner's benchmark: one long real ACK stream, CPU time
        worst = min(rs.items(), key=lambda kv: kv[1]["loop_Mev_s"])
        add(
            "replay ≥ 20 M ACK events/s per algorithm per core (slowest algorithm)",
            worst[1]["loop_Mev_s"] * 1e6,
            ">=",
            TARGET_REPLAY_EVENTS_PER_S,
            f"slowest: {worst[0]}, compiled per-ACK loop, benchmarks/replay_speed.py "
            f"({rp['replay_speed_py'].get('events', 0):,} events of samples/reno-loss tiled), CPU time",
        )
    if warm:
        worst = min(warm.items(), key=lambda kv: kv[1]["loop_events_per_s"] or 0)
        add(
            "replay ≥ 20 M ACK events/s per algorithm per core, on the replica's flows (slowest algorithm)",
            worst[1]["loop_events_per_s"],
            ">=",
            TARGET_REPLAY_EVENTS_PER_S,
            f"slowest: {worst[0]}, compiled per-ACK loop over every flow of {rp.get('capture')}, "
            f"{rp['warm'].get('ack_events'):,} ACK events, CPU time",
        )
    return out


# --- output -----------------------------------------------------------------------------------


def _f(x: float | None, fmt: str = "{:.2f}") -> str:
    return "—" if x is None else fmt.format(x)


def markdown(res: dict[str, Any]) -> str:
    m = res["machine"]
    L: list[str] = []
    L.append(
        f"Measured {res['date']} (UTC) on {m['nproc']} × {m['cpu_model']}, {m['mem_gib']} GiB, "
        f"Linux {m['kernel']}, load average at start {' '.join(m['loadavg_start'])}, "
        f"at end {' '.join(res.get('loadavg_end', ['?']))}. "
        f"Median of {res['params']['runs']} runs (interleaved); fewer where a run took more than "
        f"{res['params']['max_repeat_s']:.0f} s (column *runs*)."
        + (f" The {res['bytecode']}." if res.get("bytecode") else "")
    )
    L.append("")
    L.append("### Targets")
    L.append("")
    L.append("| target | measured | limit | result | how |")
    L.append("|---|---:|---:|---|---|")
    for t in res["targets"]:
        v = t["value"]
        vs = "—" if v is None else (f"{v / 1e6:.1f} M/s" if t["limit"] >= 1e6 else f"{v:.2f}")
        lim = f"{t['limit'] / 1e6:.0f} M/s" if t["limit"] >= 1e6 else f"{t['op']} {t['limit']:g}"
        verdict = "n/a" if t["passed"] is None else ("**pass**" if t["passed"] else "**FAIL**")
        L.append(f"| {t['target']} | {vs} | {lim} | {verdict} | {t['detail']} |")
    for name, c in res["captures"].items():
        L.append("")
        L.append(f"### {name}: {c['packets']:,} packets, {c['flows']:,} flows, {c['bytes'] / 2**20:.1f} MiB")
        L.append("")
        if c.get("measured"):
            L.append(f"_Measured {c['measured']}._")
            L.append("")
        L.append(
            "| tool | wall s (median) | CPU s | peak RSS MiB | packets/s | time ÷ hscc flows | time ÷ hscc analyze | runs |"
        )
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|")
        for k, s in c["cases"].items():
            if k.startswith("_"):
                continue
            label = s["label"] + (" *(extrapolated)*" if s.get("extrapolated") else "")
            fail = "" if s["n_ok"] == s["n"] else f" ⚠ {s['n'] - s['n_ok']} failed"
            if s.get("timed_out"):
                fail = " ⚠ stopped at the time limit"
                label += " — **did not finish**"
            L.append(
                f"| {label} | {'> ' if s.get('timed_out') else ''}{_f(s['wall_s'])} | {_f(s['cpu_s'])} | {_f(s['rss_mib'], '{:.0f}')} | "
                f"{_f(s['pkts_per_s'], '{:,.0f}')} | {_f(s['x_hscc_flows'])} | {_f(s['x_hscc_analyze'])} | "
                f"{s['n']}{fail} |"
            )
        notes = [f"{s['label']}: {s['note']}" for s in c["cases"].values() if isinstance(s, dict) and s.get("note")]
        rep = c["cases"].get("_report")
        if rep:
            r = rep.get("render") or {}
            notes.append(
                f"report.html: {rep['report_bytes'] / 1e6:.2f} MB"
                + (
                    f" ({rep['store_bytes'] / 1e6:.2f} MB of it the full-resolution events)"
                    if rep.get("store_bytes")
                    else ""
                )
                + (
                    f", rendered in {r['wall_s']:.2f} s in headless chromium "
                    f"({(r.get('figures') or {}).get('drawn', '?')} figures drawn)"
                    if r.get("wall_s")
                    else ""
                )
            )
        for n in notes:
            L.append(f"\n- {n}")
    # scaling
    L.append("")
    L.append("### Scaling (time per packet and peak memory by capture size)")
    L.append("")
    caps = res["captures"]
    keys = [
        k
        for k in ("hscc_flows", "hscc_events", "hscc_analyze", "tcptrace", "tshark_conv", "tshark_analysis", "dpkt")
        if any(k in c["cases"] for c in caps.values())
    ]
    L.append(
        "| capture | packets | flows | "
        + " | ".join(
            f"{next(c['cases'][k]['label'] for c in caps.values() if k in c['cases'])} µs/pkt, MiB" for k in keys
        )
        + " |"
    )
    L.append("|---|---:|---:|" + "---:|" * len(keys))
    for name, c in caps.items():
        cells = []
        for k in keys:
            s = c["cases"].get(k)
            cells.append("—" if not s else f"{s['wall_s'] / c['packets'] * 1e6:.2f}, {s['rss_mib']:.0f}")
        L.append(f"| {name} | {c['packets']:,} | {c['flows']:,} | " + " | ".join(cells) + " |")
    wu = res.get("warmup")
    if wu:
        L.append("")
        L.append(f"### First run vs cached (hscc-trace analyze on {wu['capture']})")
        L.append("")
        L.append("| compile caches | wall s | CPU s | peak RSS MiB |")
        L.append("|---|---:|---:|---:|")
        for ph, what in (
            ("cold", "empty (numba + replay caches in a new folder): cold first run"),
            (
                "warm",
                "default caches, first run of this benchmark (compiles what changed since "
                "the caches were filled); the timed runs come after it",
            ),
        ):
            w = wu.get(ph)
            if not w:
                continue
            L.append(f"| {what} | {w['wall_s']:.2f} | {w['cpu_s']:.2f} | {w['rss_mib']:.0f} |")
    jobs = res.get("jobs") or {}
    if jobs:
        L.append("")
        L.append("### --jobs 2 vs --jobs 1 (several captures in one analyze run)")
        L.append("")
        L.append(
            "| captures | files | MiB | --jobs 1 wall s | cpu s | MiB | --jobs 2 wall s | cpu s | MiB | speedup | "
            "same results |"
        )
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for name, g in jobs.items():
            a, b = g["jobs1"], g["jobs2"]
            L.append(
                f"| {name} | {len(g['captures'])} | {g['bytes'] / 2**20:.1f} | {a['wall_s']:.2f} | {a['cpu_s']:.2f} | "
                f"{a['rss_mib']:.0f} | {b['wall_s']:.2f} | {b['cpu_s']:.2f} | {b['rss_mib']:.0f} | "
                f"{_f(g['speedup'])}× | {'yes' if g['same_results'] else 'NO' if g['same_results'] is False else '—'} |"
            )
    rp = res.get("replay") or {}
    warm = (rp.get("warm") or {}).get("algorithms") or {}
    cold = (rp.get("cold") or {}).get("algorithms") or {}
    if warm:
        L.append("")
        L.append(
            f"### Replay throughput ({rp['warm']['ack_events']:,} ACK events, {rp['warm']['flows']} flows of "
            f"{rp['capture']}; one core; best of {rp['warm']['repeat']} passes)"
        )
        L.append("")
        L.append(
            "Cold first run: the first replay in a process with an empty compile cache (numba compiles "
            "the generated loop; algorithms that share a generated loop, e.g. the HRF comparison rows, "
            "show ~0 after the first of them). Cached: the same in a second process."
        )
        L.append("")
        L.append(
            "| algorithm | compiled loop, M ACK/s | engine.run incl. output frame, M ACK/s | "
            "first run, cold cache s | first run, cached s | ≥ 20 M/s |"
        )
        L.append("|---|---:|---:|---:|---:|---|")
        for a, w in warm.items():
            c0 = cold.get(a, {})
            L.append(
                f"| {a} | {_f(w['loop_events_per_s'] / 1e6 if w['loop_events_per_s'] else None, '{:.1f}')} | "
                f"{_f(w['run_events_per_s'] / 1e6 if w['run_events_per_s'] else None, '{:.1f}')} | "
                f"{_f(c0.get('first_run_s'))} | {_f(w['first_run_s'])} | "
                f"{'pass' if (w['loop_events_per_s'] or 0) >= TARGET_REPLAY_EVENTS_PER_S else 'FAIL'} |"
            )
    rs = (rp.get("replay_speed_py") or {}).get("algorithms") or {}
    if rs:
        L.append("")
        cmd = rp["replay_speed_py"].get("command", "replay_speed.py")
        cmd = "replay_speed.py" + cmd.split("replay_speed.py", 1)[1] if "replay_speed.py" in cmd else cmd
        L.append(
            f"`python benchmarks/{cmd}` (the replay owner's "
            f"benchmark: one long real ACK stream, {rp['replay_speed_py'].get('events', 0):,} events, CPU time):"
        )
        L.append("")
        L.append("| algorithm | compiled loop, M ACK/s | engine.run incl. output frame, M ACK/s | ≥ 20 M/s |")
        L.append("|---|---:|---:|---|")
        for a, w in rs.items():
            L.append(
                f"| {a} | {w['loop_Mev_s']:.1f} | {w['run_Mev_s']:.1f} | "
                f"{'pass' if w['loop_Mev_s'] * 1e6 >= TARGET_REPLAY_EVENTS_PER_S else 'FAIL'} |"
            )
    L.append("")
    L.append(
        "Tool versions: "
        + "; ".join(
            f"{k} {m[k]}"
            for k in ("hscc_trace", "tshark", "tcptrace", "python", "polars", "numba", "numpy", "dpkt", "scapy")
        )
    )
    return "\n".join(L) + "\n"


def update_docs() -> None:
    """Render the table of docs/performance.md from the latest results (benchmarks/make_table.py)."""
    sys.path.insert(0, str(BENCH))
    import make_table

    make_table.update_doc()


def main(argv: list[str] | None = None) -> int:
    global SCAPY_SLICE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--captures", default=",".join(DEFAULT_CAPTURES), help="names under benchmarks/data (no .pcap)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-repeat-s", type=float, default=45.0, help="do not repeat a case whose first run took longer")
    ap.add_argument("--timeout-s", type=float, default=900.0, help="per run; a run stopped there is reported as such")
    ap.add_argument(
        "--cases",
        help="comma-separated case keys (default: all available): " + ",".join([*(c.key for c in CASES), *MULTI_CASES]),
    )
    ap.add_argument("--scapy-slice", type=int, default=SCAPY_SLICE)
    ap.add_argument("--replay-capture", default="replica-1M", help="capture for the replay throughput ('' = skip)")
    ap.add_argument("--replay-repeat", type=int, default=3)
    ap.add_argument("--linear-flow", default="", help="one-flow capture to time analyze on its prefixes ('' = skip)")
    ap.add_argument("--no-warmup", action="store_true", help="skip the compile-cache warm-up run")
    ap.add_argument("--cold", action="store_true", help="also time analyze with empty compile caches")
    ap.add_argument(
        "--include",
        type=Path,
        action="append",
        default=[],
        help="results JSON of an earlier run whose captures (not measured now) join the tables",
    )
    ap.add_argument("--no-render", action="store_true", help="skip the headless-chromium render timing")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--stamp", help="results file name (default: UTC date-time)")
    ap.add_argument("--docs", action="store_true", help="also render the table of docs/performance.md (make_table.py)")
    ap.add_argument(
        "--rerender",
        type=Path,
        help="recompute targets and tables of an existing results JSON "
        "(no measurement), rewrite its .md (and docs with --docs)",
    )
    a = ap.parse_args(argv)
    SCAPY_SLICE = a.scapy_slice
    if a.rerender:
        res = json.loads(a.rerender.read_text())
        res["targets"] = targets(res)
        md = markdown(res)
        a.rerender.write_text(json.dumps(res, indent=1, default=str) + "\n")
        a.rerender.with_suffix(".md").write_text(md)
        if a.docs:
            update_docs()
        print(md)
        return 0

    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)

    captures = [c for c in a.captures.split(",") if c]
    from make_capture import DEFAULT_SOURCES, PRESETS, make  # noqa: E402 - same folder

    for c in captures:
        if not (DATA / f"{c}.pcap").exists():
            if c in BIGFLOW_CAPTURES:
                log(f"{c}: make it first: flock /tmp/hscc-testbed.lock python benchmarks/make_bigflow.py --shape {c}")
                return 2
            p = c.removeprefix("replica-")
            if p not in PRESETS:
                log(f"{c}: no such capture and no preset to make it")
                return 2
            log(f"making {c} …")
            pr = PRESETS[p]
            make(c, pr["packets"], pr["stagger"], pr["prefix"], pr["copies"], DEFAULT_SOURCES)
    wanted = set(a.cases.split(",")) if a.cases else None
    cases = []
    skipped = {}
    for c in CASES:
        if wanted is not None and c.key not in wanted:
            continue
        if not _have(c.needs):
            skipped[c.key] = f"{c.needs} not installed (benchmarks/setup.sh installs it)"
            log(f"skipping {c.label}: {skipped[c.key]}")
            continue
        cases.append(c)
    now = dt.datetime.now(dt.UTC)
    stamp = a.stamp or now.strftime("%Y-%m-%dT%H%MZ")
    res: dict[str, Any] = dict(
        date=now.strftime("%Y-%m-%d %H:%M"),
        machine=machine_info(),
        params=dict(runs=a.runs, max_repeat_s=a.max_repeat_s, scapy_slice=a.scapy_slice, captures=captures),
        skipped=skipped,
    )
    log(f"machine: {res['machine']}")
    res["bytecode"] = compile_bytecode(log)
    if any(c.key == "hscc_analyze" for c in cases) and not a.no_warmup:
        res["warmup"] = warm_up("replica-0.1M", a.cold, log)
    # only cases over several captures selected: no per-capture measurement
    res["captures"] = (
        run_captures(captures, a.runs, a.max_repeat_s, a.timeout_s, cases, log) if cases or wanted is None else {}
    )
    if wanted is None or "hscc_jobs" in wanted:
        res["jobs"] = jobs_bench(a.runs, a.timeout_s, not a.no_warmup, log)
    bulk = [c for c in res["captures"] if "flows10k" not in c]
    if bulk:
        big = max(bulk, key=lambda c: res["captures"][c]["packets"])
        rep = res["captures"][big]["cases"].get("_report")
        if rep and not a.no_render:
            rep["render"] = render_time(Path(rep["report_path"]), log)
    if a.linear_flow:
        res["flow_linearity"] = flow_linearity(a.linear_flow, a.timeout_s, log)
    if a.replay_capture:
        res["replay"] = replay_bench(a.replay_capture, a.replay_repeat, log) or {}
        res["replay"]["capture"] = a.replay_capture
    res["loadavg_end"] = Path("/proc/loadavg").read_text().split()[:3]
    for f in a.include:
        old = json.loads(f.read_text())
        for name, c in old["captures"].items():
            if name not in res["captures"]:
                c["measured"] = (
                    f"{old['date']} UTC in a separate run ({f.name}), load average "
                    f"{' '.join(old['machine']['loadavg_start'])} → {' '.join(old.get('loadavg_end', ['?']))}"
                )
                res["captures"][name] = c
    res["targets"] = targets(res)
    md = markdown(res)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / f"{stamp}.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    (a.out / f"{stamp}.md").write_text(md)
    if a.docs:
        update_docs()
    print(md)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(BENCH))
    sys.exit(main())
