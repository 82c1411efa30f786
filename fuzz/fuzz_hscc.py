"""Coverage-guided fuzzing of hscc-trace with atheris (libFuzzer for Python).

One input is the bytes of a capture file. Each execution runs it through every stage a user's
capture goes through:

1. the reader and both decoders, the flow table and the wscale/option handling
   (``hscc_trace.flows.load``: pcap/pcapng/gzip reader, compiled fast decoder, scapy fallback);
2. the ``hscc-trace flows`` fast path (``flows.scan.flow_rows``: a second, streaming flow
   kernel);
3. events of up to three flows (``api.events``), and for each the replay of reno, cubic and
   fusion with the fit (``api.replay``, ``api.fit``);
4. for one input in 32 (chosen by the input's bytes, so a run is reproducible): the whole
   ``analyze`` pipeline, the JSON results (validated against their schema) and the HTML report.

Any exception other than the project's own input errors (:class:`hscc_trace.errors.HsccError`
but not :class:`~hscc_trace.errors.InternalError`) is a crash, and so is an internal error that
the pipeline turned into a message (``InternalMessage``) and a ``RuntimeWarning`` (numpy's
division by zero, invalid value or overflow: a NaN or a wrapped number on its way into the
outputs; the run is made to raise it). libFuzzer then stops, exits with a
non-zero code and writes the input as ``crash-<sha1>`` (see ``-artifact_prefix``).

Run (docs/robustness.md)::

    python fuzz/fuzz_hscc.py fuzz/corpus -max_total_time=3600 -rss_limit_mb=4096 -timeout=60

The seed corpus is built on first use by :mod:`fuzz.seeds` (``fuzz/corpus``, not in git): the
regression inputs of ``tests/fuzz_corpus``, the first records of every sample and the small
external captures. A crash found becomes a regression input under ``tests/fuzz_corpus``.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import warnings
from pathlib import Path

import atheris

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import seeds  # noqa: E402  (fuzz/seeds.py)

from hscc_trace import api
from hscc_trace.analysis import (
    pipeline,
    results,  # noqa: E402
)
from hscc_trace.errors import HsccError, InternalError, InternalMessage  # noqa: E402
from hscc_trace.flows.scan import flow_rows
from hscc_trace.perf import firstuse

#: algorithms replayed on every flow: a loss-based, a cubic and a delay/loss hybrid
ALGOS = ("reno", "cubic", "fusion")
#: flows taken through events and replay per input
MAX_FLOWS = 3
#: 1 in REPORT_EVERY inputs also runs analyze, the JSON results and the HTML report (slow: plotly)
REPORT_EVERY = 32

_WORK = Path(tempfile.mkdtemp(prefix="hscc-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))


class Crash(AssertionError):
    """An internal error the pipeline reported as a message instead of raising it."""


def _expected(exc: BaseException) -> bool:
    """Whether ``exc`` is an answer hscc-trace gives for bad input (not a bug)."""
    return isinstance(exc, HsccError) and not isinstance(exc, InternalError)


def run_one(data: bytes, path: Path) -> None:
    """Every stage on one input; raises on a bug (a ``RuntimeWarning`` included), returns quietly
    on an input error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        _stages(data, path)


def _stages(data: bytes, path: Path) -> None:
    path.write_bytes(data)
    p = str(path)
    try:
        cap = api.load(p)
    except Exception as exc:  # noqa: BLE001
        if _expected(exc):
            return
        raise
    try:
        flow_rows(p)
    except Exception as exc:  # noqa: BLE001
        if not _expected(exc):
            raise
    ids = cap.flows["flow_id"].to_list()[:MAX_FLOWS] if cap.flows.height else []
    for fid in ids:
        try:
            ev = api.events(cap, int(fid))
        except Exception as exc:  # noqa: BLE001
            if _expected(exc):
                continue
            raise
        if ev.acks.height and ev.segments.height:
            reps = api.replay(ev, list(ALGOS))
            api.fit(ev, reps)
    if int.from_bytes(hashlib.sha1(data).digest()[:4], "little") % REPORT_EVERY == 0:
        run = api.analyze([p], api.AnalyzeOptions(list(ALGOS), strict=False))
        bad = [m for m in [*run.failed.values(), *run.flow_failed] if isinstance(m, InternalMessage)]
        if bad:
            raise Crash(bad[0])
        doc = run.to_json()
        results.validate(doc)
        results.dumps(doc)
        if run.analysis.captures:
            api.report(run.analysis, _WORK / "report.html")


def instrument_project() -> int:
    """Add atheris' coverage instrumentation to every Python function of hscc-trace loaded so
    far, except the ones numba compiles (their bytecode must stay as written: numba cannot type
    atheris' probes), and return how many were instrumented.

    ``atheris.instrument_imports`` cannot be used: it instruments every function of a module,
    the numba kernels included. So the harness first runs one input through every stage (which
    imports everything and creates every dispatcher), then instruments what is not compiled.
    Coverage is therefore Python-level: the compiled kernels run, but their branches are not
    seen by the fuzzer — except those of the kernels under the first-use rule, which run as
    their plain-Python twins here (instrumented: separate function objects)."""
    import gc
    import types

    from numba.extending import is_jitted

    from hscc_trace.perf.firstuse import Kernel

    compiled = {id(o.py_func) for o in gc.get_objects() if isinstance(o, Kernel) or is_jitted(o)}
    n = 0
    for obj in gc.get_objects():
        if (
            isinstance(obj, types.FunctionType)
            and id(obj) not in compiled
            and (getattr(obj, "__module__", None) or "").startswith("hscc_trace")
        ):
            try:
                atheris.instrument_func(obj)
                n += 1
            except Exception:  # noqa: BLE001 - a function atheris cannot patch stays as it is
                pass
    return n


def TestOneInput(data: bytes) -> None:  # noqa: N802 - atheris' name
    run_one(data, _WORK / "input.pcap")


def main() -> None:
    os.environ.pop(pipeline.DEBUG_ENV, None)
    # the kernels under the first-use rule run as plain Python, as they do for a user's small
    # capture (hscc_trace/perf/firstuse.py): their interpreted twins are instrumented too, so
    # the fuzzer sees their branches
    os.environ[firstuse.MODE_ENV] = "interpret"
    argv = list(sys.argv)
    corpus = [a for a in argv[1:] if not a.startswith("-")]
    if corpus and not Path(corpus[0]).is_file():  # a folder: the corpus (a file: run that input once)
        seeds.build(Path(corpus[0]))
    # import every stage and compile/load the numba kernels before fuzzing (libFuzzer's
    # -timeout counts per input): one sample prefix through everything, the report included
    warm = seeds.head_of_pcap((seeds.REPO / "samples" / "reno-loss" / "capture.pcap").read_bytes())
    run_one(warm, _WORK / "warm.pcap")
    api.report(api.analyze([str(_WORK / "warm.pcap")], api.AnalyzeOptions(list(ALGOS))).analysis, _WORK / "warm.html")
    print(f"INFO: instrumented {instrument_project()} hscc-trace functions", file=sys.stderr)
    if not any(a.startswith("-max_len") for a in argv):
        argv.append(f"-max_len={seeds.MAX_SEED}")
    atheris.Setup(argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
