"""Tests whose work is a long child process, run beside the rest of the suite.

Two tests spend most of the suite's time in child processes that need nothing from the tests
before them: ``hscc-trace compile`` in an empty cache (≈ 4.5 min: every kernel and replay loop
compiled, then a later process checked) and the bounded fuzzing run (60 s). Each takes one
core, while the suite's own process mostly takes the other one only (the whole suite took
14 min 38 s with them in line on a 2-core machine, 4 min 20 s of it theirs).

So such a test names its work as a *job*: ``@pytest.mark.background(job=job)`` (a keyword: a
mark given one callable positionally would decorate it), where ``job(workdir)`` runs the child
processes (with :func:`run`) and returns what the test checks. The hooks below (conftest.py
imports them) start every selected test's job in a thread as the session starts, and move those
tests to the end of the run. At its turn the test takes the job's result (``background_job()``,
a fixture: it waits if the job is still running, and raises the job's exception in the test)
and makes its assertions on it, as it would have on the child processes it ran itself.

A test run on its own (``pytest tests/test_fuzz.py -k bounded``) works the same way: its job
starts when collection ends and the test waits for it. Nothing is started for ``--collect-only``
or for deselected tests; child processes still running when the session ends (``-x``, Ctrl-C)
are killed, and every job's folder is removed.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Job = Callable[[Path], Any]

_lock = threading.Lock()
_children: list[subprocess.Popen[str]] = []
_stopping = threading.Event()


class _Running:
    """One test's job in its thread, with its result or its exception."""

    def __init__(self, job: Job) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="hscc-test-bg-"))
        self.value: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(job,), name=f"bg-{job.__name__}", daemon=True)
        self.thread.start()

    def _run(self, job: Job) -> None:
        try:
            self.value = job(self.workdir)
        except BaseException as exc:  # noqa: BLE001 - raised in the test, at its turn
            self.error = exc


_jobs: dict[str, _Running] = {}


def start(nodeid: str, job: Job) -> None:
    """Start ``job`` for the test ``nodeid`` (once)."""
    if nodeid not in _jobs:
        _jobs[nodeid] = _Running(job)


def result(nodeid: str) -> Any:
    """The job's return value, once it has finished; its exception is raised here."""
    r = _jobs.get(nodeid)
    if r is None:
        raise RuntimeError(f"no background job was started for {nodeid}")
    r.thread.join()
    if r.error is not None:
        raise r.error
    return r.value


def run(argv: list[str], *, timeout: float, **kw: Any) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)`` for a job:
    the child is killed when the session ends first."""
    with _lock:
        if _stopping.is_set():
            raise RuntimeError("the test session is ending")
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
        _children.append(p)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise
    finally:
        with _lock:
            _children.remove(p)
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def stop() -> None:
    """End of the session: kill what still runs, wait for the threads, remove the folders."""
    with _lock:
        _stopping.set()
        for p in _children:
            p.kill()
    for r in _jobs.values():
        r.thread.join(timeout=60)
        shutil.rmtree(r.workdir, ignore_errors=True)
    _jobs.clear()


# ---- the hooks and the fixture (conftest.py imports them) -------------------------------------


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests of ``@pytest.mark.background(job=…)`` go last: their jobs run from the start."""
    later = [it for it in items if it.get_closest_marker("background")]
    if later:
        items[:] = [it for it in items if not it.get_closest_marker("background")] + later


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly:
        return
    for it in session.items:
        m = it.get_closest_marker("background")
        if m is not None:
            start(it.nodeid, m.kwargs["job"])


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    stop()


@pytest.fixture
def background_job(request: pytest.FixtureRequest) -> Callable[[], Any]:
    """Called in the test: what its background job returned (waits for it; raises the job's
    exception there, so that the test fails with it rather than errors in its set-up)."""
    nodeid = request.node.nodeid
    return lambda: result(nodeid)
