"""The first-run compile notice of the CLI (hscc_trace/cli/compiling.py)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from hscc_trace.cli.compiling import compile_notice
from hscc_trace.perf import firstuse


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):  # stamps in a folder of the test's own, every kernel compiled
    monkeypatch.setenv("HSCC_TRACE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(firstuse.MODE_ENV, "compile")


def _kernel(fn) -> firstuse.Kernel:
    # (cache=False: numba's files stay out of the source tree; the stamp stands for its cache)
    return firstuse.Kernel(fn, lambda a: 1, (1.0, 1.0), {"cache": False})


def _first_run_kernel(x):
    return x + 1


def _twice(x):
    return x * 2


def _less(x):
    return x - 1


def _logged(x):
    return x + 2


def test_a_compilation_is_announced_on_a_terminal_with_a_count_and_a_final_line() -> None:
    k = _kernel(_first_run_kernel)  # compiled on its first call, inside the block
    out = _Terminal()
    with compile_notice(out):
        assert k(41) == 42
    text = out.getvalue()
    assert "compiling test_compiling._first_run_kernel (first run only; 1 kernels" in text
    assert text.rstrip().endswith("(cached for later runs)\x1b[K") and text.count("\n") == 1


def test_nothing_is_written_when_nothing_compiles_or_stderr_is_not_a_terminal() -> None:
    k = _kernel(_twice)
    assert k(2) == 4  # compiled before the block
    quiet = _Terminal()
    with compile_notice(quiet):
        assert k(3) == 6
    assert quiet.getvalue() == ""
    log = io.StringIO()  # a file or pipe, not a terminal
    with compile_notice(log):
        assert _kernel(_less)(1) == 0
    assert log.getvalue() == ""


def test_a_kernel_a_compilation_stamped_is_loaded_unannounced_a_rents_stamp_is_announced() -> None:
    """Another process (a new Kernel) of a kernel stamped by a compilation finds it in numba's
    cache: nothing to say. A rent's stamp (``items seconds`` interpreted, not compiled) is no
    compilation: the kernel is compiled, and so announced."""
    _kernel(_twice)(1)  # compiled, stamped (empty)
    events: list[tuple[str, str]] = []
    firstuse.LISTENERS.append(lambda e, k, s: events.append((e, k.name)))
    try:
        quiet = _Terminal()
        with compile_notice(quiet):
            assert _kernel(_twice)(5) == 10
        assert quiet.getvalue() == ""
        k = _kernel(_less)
        k._stamp(firstuse.type_key((1,)), "1 0.5")  # as an interpreted run writes its rent
        assert k.stamp_path(firstuse.type_key((1,))).read_text() == "1 0.5"
        out = _Terminal()
        with compile_notice(out):
            assert _kernel(_less)(1) == 0
        assert "compiling test_compiling._less (first run only; 1 kernels" in out.getvalue()
    finally:
        firstuse.LISTENERS.clear()
    assert events == [
        ("loaded", "test_compiling._twice"),
        ("compiling", "test_compiling._less"),
        ("compiled", "test_compiling._less"),
    ]


def test_the_notice_writes_a_line_per_kernel_when_asked_on_any_stream() -> None:
    log = io.StringIO()  # `hscc-trace compile` in a CI log
    with compile_notice(log, always=True):
        assert _kernel(_logged)(1) == 3
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("hscc-trace: compiling test_compiling._logged (first run only; 1 kernels")
    assert lines[-1].startswith("hscc-trace: compiled 1 kernels in") and "\x1b" not in log.getvalue()


@pytest.mark.slow
@pytest.mark.xdist_group("long")
def test_compile_kernels_leaves_nothing_to_interpret_in_a_later_run(tmp_path: Path) -> None:
    """`hscc-trace compile` (api.compile_kernels): every kernel and replay loop compiled and
    stamped, so that a later process analyzing a real sample runs none of them interpreted.
    Both in fresh processes with an empty hscc-trace cache folder (and so an empty numba cache,
    unless NUMBA_CACHE_DIR is set): every kernel and replay loop is compiled anew, ≈ 4.5 min of
    one core (a long test: conftest.py starts it first, on a worker of its own)."""
    import json
    import os
    import subprocess
    import sys

    from conftest import REPO

    from hscc_trace.perf import firstuse

    env = dict(os.environ, HSCC_TRACE_CACHE_DIR=str(tmp_path))
    env.pop(firstuse.MODE_ENV, None)
    head = "import json; from hscc_trace import api; from hscc_trace.perf import firstuse\n"

    def run(code: str) -> list:
        out = subprocess.run([sys.executable, "-c", head + code], env=env, capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, out.stderr[-4000:]
        return json.loads(out.stdout.splitlines()[-1])

    summary, missed = run(
        "done = api.compile_kernels()\n"
        "missed = [k.name for k in firstuse.REGISTRY if not k._ready]\n"
        "print(json.dumps([done, missed]))"
    )
    sample, report = str(REPO / "samples/reno-bdp/capture.pcap"), str(tmp_path / "r.html")
    later = run(
        f"a = api.analyze({sample!r}).analysis; api.report(a, {report!r}); print(json.dumps(firstuse.summary()))"
    )
    assert summary and all(r["interpreted_calls"] == 0 for r in summary)
    loops = {r["kernel"] for r in summary if r["kernel"].startswith("replay loop of ")}
    assert {"replay loop of bbr", "replay loop of cubic_rfc", "replay loop of kyushu_cubic_linux"} <= loops
    # _unplace builds the packets table of a capture that cannot be read again (not a regular
    # file); a file on disk never needs it. _rehash grows the conversation table, past 2 048
    # conversations only
    assert set(missed) <= {"flows.arena._unplace", "flows.tracker._rehash"}, missed
    assert later and [r["kernel"] for r in later if r["interpreted_calls"]] == []


def test_a_long_interpreted_run_is_announced_on_a_terminal(monkeypatch) -> None:
    """A kernel not compiled yet that runs interpreted on work expected to take seconds says so
    (the first-use rule's other long path), naming the kernel and `hscc-trace compile`."""
    import numpy as np

    from hscc_trace.perf import firstuse

    def _slow_sum(a):
        s = 0.0
        for i in range(len(a)):
            s += a[i]
        return s

    k = firstuse.Kernel(_slow_sum, lambda a: len(a[0]), (1e9, 1.0), {"cache": False}, name="tests._slow_sum")
    out = _Terminal()
    with firstuse.mode("auto"), compile_notice(out):
        assert k(np.arange(3.0)) == 3.0  # 3 items × 1 s expected: announced, then run interpreted
        assert k(np.arange(1.0)) == 0.0  # 1 item × 1 s: under the notice's 2 s, nothing said
    text = out.getvalue()
    assert text.count("running tests._slow_sum as plain Python (≈ 3 s;") == 1 and "hscc-trace compile" in text
    assert k.stats["interpreted_calls"] == 2 and not firstuse.LISTENERS
