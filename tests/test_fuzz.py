"""The fuzzing harness (fuzz/fuzz_hscc.py) runs for a bounded time and finds nothing.

Coverage-guided (atheris, libFuzzer's engine) over the reader, both decoders, the flow tables,
events, replay, fit, the JSON results and the HTML report; it fails on any exception that is
not the project's own input error (docs/robustness.md). ``HSCC_TRACE_FUZZ_SECONDS`` sets the
time (default 60 s). Every regression input under tests/fuzz_corpus is also run once here
without atheris, so those inputs stay covered where atheris cannot be installed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
HARNESS = REPO / "fuzz" / "fuzz_hscc.py"


def _atheris() -> bool:
    try:
        import atheris  # noqa: F401
    except ImportError:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("atheris is not installed (pip install -e '.[test]'); CI must run the fuzzer")
        return False
    return True


@pytest.mark.slow
@pytest.mark.xdist_group("long")
def test_fuzz_for_a_bounded_time(tmp_path: Path) -> None:
    """The harness for ``HSCC_TRACE_FUZZ_SECONDS`` (default 60) in a child process: exit 0, no
    input saved as a crash, timeout or out-of-memory (kept in ``tmp_path``), and inputs run (a
    long test: conftest.py starts it first, on a worker of its own)."""
    import subprocess

    if not _atheris():
        pytest.skip("atheris is not installed")
    seconds = int(os.environ.get("HSCC_TRACE_FUZZ_SECONDS", "60"))
    env = {k: v for k, v in os.environ.items() if k != "HSCC_TRACE_DEBUG"}
    r = subprocess.run(
        [
            sys.executable,
            str(HARNESS),
            str(tmp_path / "corpus"),
            f"-max_total_time={seconds}",
            "-timeout=60",
            "-rss_limit_mb=3072",
            f"-artifact_prefix={tmp_path}/",
            "-print_final_stats=1",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=seconds + 600,
        cwd=tmp_path,
    )
    found = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("crash-", "timeout-", "oom-")))
    tail = "\n".join(r.stderr.splitlines()[-40:])
    assert r.returncode == 0 and not found, f"fuzzer found {found} in {tmp_path} (exit {r.returncode}):\n{tail}"
    runs = [ln for ln in r.stderr.splitlines() if ln.startswith("stat::number_of_executed_units:")]
    assert runs and int(runs[0].split(":")[-1]) > 0, tail  # it ran inputs, not only the start-up


def _harness():
    """fuzz/fuzz_hscc.py as a module, without atheris' engine (run_one does not need it)."""
    import importlib

    sys.path.insert(0, str(REPO / "fuzz"))
    fake = None
    try:
        import seeds  # noqa: F401  (fuzz/seeds.py, imported by the harness)

        try:
            import atheris  # noqa: F401
        except ImportError:  # run_one does not need atheris, but the module imports it
            fake = sys.modules["atheris"] = type(sys)("atheris")
        return importlib.import_module("fuzz_hscc")
    finally:
        sys.path.remove(str(REPO / "fuzz"))
        if fake is not None:
            del sys.modules["atheris"]


def test_regression_inputs_through_every_stage(tmp_path):
    # the harness's run_one without atheris' engine: every stage on every regression input
    harness = _harness()
    inputs = sorted(f for f in harness.seeds.REGRESSION.glob("*") if f.suffix != ".md")
    assert len(inputs) >= 4
    for f in inputs:
        harness.run_one(f.read_bytes(), tmp_path / "in.pcap")


def test_a_runtime_warning_is_a_finding(tmp_path, monkeypatch):
    # numpy's "invalid value" / "divide by zero" warnings mean a NaN or an infinity on its way
    # into the outputs: the harness raises them (libFuzzer then keeps the input as a crash)
    import warnings

    import numpy as np

    harness = _harness()

    def fit(ev, reps):
        return np.float64(0.0) / np.float64(0.0)  # RuntimeWarning: invalid value

    monkeypatch.setattr(harness.api, "fit", fit)
    data = (REPO / "samples" / "reno-bdp" / "capture.pcap").read_bytes()
    before = list(warnings.filters)
    with pytest.raises(RuntimeWarning):
        harness.run_one(harness.seeds.head_of_pcap(data), tmp_path / "in.pcap")
    assert warnings.filters == before  # the filter is the harness's own, undone when run_one ends
