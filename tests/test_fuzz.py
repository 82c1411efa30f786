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


def _fuzz(workdir: Path) -> tuple[int, dict[str, bytes], str] | None:
    """The harness for ``HSCC_TRACE_FUZZ_SECONDS`` (default 60): its exit status, the inputs it
    saved as crashes, timeouts or out-of-memory (by name; the job's folder goes with the session),
    and its stderr (None without atheris)."""
    import background

    try:
        import atheris  # noqa: F401
    except ImportError:
        return None
    seconds = int(os.environ.get("HSCC_TRACE_FUZZ_SECONDS", "60"))
    env = {k: v for k, v in os.environ.items() if k != "HSCC_TRACE_DEBUG"}
    r = background.run(
        [
            sys.executable,
            str(HARNESS),
            str(workdir / "corpus"),
            f"-max_total_time={seconds}",
            "-timeout=60",
            "-rss_limit_mb=3072",
            f"-artifact_prefix={workdir}/",
            "-print_final_stats=1",
        ],
        env=env,
        timeout=seconds + 600,
        cwd=workdir,
    )
    found = sorted(p for p in workdir.iterdir() if p.name.startswith(("crash-", "timeout-", "oom-")))
    return r.returncode, {p.name: p.read_bytes() for p in found}, r.stderr


@pytest.mark.slow
@pytest.mark.background(job=_fuzz)
def test_fuzz_for_a_bounded_time(background_job, tmp_path):
    """(Run beside the other tests: tests/background.py; what it finds is kept in ``tmp_path``.)"""
    if not _atheris():
        pytest.skip("atheris is not installed")
    returncode, found, stderr = background_job()
    for name, data in found.items():
        (tmp_path / name).write_bytes(data)
    tail = "\n".join(stderr.splitlines()[-40:])
    assert returncode == 0 and not found, f"fuzzer found {sorted(found)} in {tmp_path} (exit {returncode}):\n{tail}"
    runs = [ln for ln in stderr.splitlines() if ln.startswith("stat::number_of_executed_units:")]
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
    inputs = sorted(harness.seeds.REGRESSION.glob("*"))
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
