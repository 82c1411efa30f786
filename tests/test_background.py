"""The suite's background jobs (tests/background.py): started with the session, their tests run
last and fail with the job's error; nothing starts for --collect-only. Each case runs a small
pytest session of its own in a child process (pytester)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parent

CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from background import background_job, pytest_collection_finish, pytest_collection_modifyitems, pytest_sessionfinish
"""

MODULE = """
import time
from pathlib import Path

import pytest

import background

MARK = Path({mark!r})


def _job(workdir):
    MARK.write_text("started")
    r = background.run(["sh", "-c", "sleep 0.3; echo from-the-child"], timeout=30)
    if {fail!r}:
        raise ValueError("the job failed: " + r.stdout.strip())
    return r.stdout.strip(), workdir.is_dir()


@pytest.mark.background(job=_job)
def test_checks_the_job(background_job):
    assert background_job() == ("from-the-child", True)


def test_plain():
    time.sleep(0.1)
    assert MARK.read_text() == "started"  # the job started before any test ran
"""


def _session(pytester: pytest.Pytester, tmp_path: Path, fail: bool, *args: str) -> pytest.RunResult:
    pytester.makeini("[pytest]\nmarkers =\n    background(job): see tests/background.py\n")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_jobs=MODULE.format(mark=str(tmp_path / "mark"), fail=fail))
    return pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider", *args)


def test_a_background_test_runs_last_and_checks_its_jobs_result(pytester: pytest.Pytester, tmp_path: Path) -> None:
    r = _session(pytester, tmp_path, False)
    r.assert_outcomes(passed=2)
    ran = [ln.split("::")[1].split()[0] for ln in r.outlines if "::" in ln and " PASSED" in ln]
    assert ran == ["test_plain", "test_checks_the_job"]  # (declared first, run last)


def test_a_failing_job_fails_its_test_with_the_jobs_error(pytester: pytest.Pytester, tmp_path: Path) -> None:
    r = _session(pytester, tmp_path, True)
    r.assert_outcomes(passed=1, failed=1)
    r.stdout.fnmatch_lines(["*ValueError: the job failed: from-the-child*"])


def test_collect_only_starts_no_job(pytester: pytest.Pytester, tmp_path: Path) -> None:
    r = _session(pytester, tmp_path, False, "--collect-only")
    assert r.ret == 0
    assert not (tmp_path / "mark").exists()
