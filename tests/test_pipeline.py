"""The parallel pipeline (hscc_trace.pipeline._run_parallel): same results as one process, whichever
lane does the work, and a worker that dies becomes a one-line error, not a hang or a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hscc_trace import api, pipeline, results

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
CAPTURES = [str(p) for p in (SAMPLES / "reno-loss" / "capture.pcap", SAMPLES / "cubic-loss" / "capture.pcap",
                             SAMPLES / "app-limited" / "capture.pcap") if p.exists()]
ALGOS = ["reno", "cubic"]
pytestmark = pytest.mark.skipif(len(CAPTURES) < 2, reason="samples missing")


def _doc(jobs: int) -> dict:
    run = api.analyze_run(CAPTURES, ALGOS, jobs=jobs)
    assert not run.errors
    return results.comparable(json.loads(json.dumps(run.to_json(), default=str)))


@pytest.fixture(scope="module")
def serial() -> dict:
    return _doc(1)


def test_workers_only_give_the_results_of_one_process(serial: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    # this process only waits: every capture and flow batch is done by the worker and sent back
    monkeypatch.setenv(pipeline.PARALLEL_MIN_BYTES_ENV, "0")
    monkeypatch.setattr(pipeline, "_PARENT_WORKS", False)
    assert _doc(2) == serial


def test_parent_and_workers_together_give_the_results_of_one_process(serial: dict,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(pipeline.PARALLEL_MIN_BYTES_ENV, "0")
    monkeypatch.setattr(pipeline, "BATCHES_PER_LANE", 1)
    assert _doc(3) == serial


def test_a_worker_that_dies_fails_its_task_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # a worker killed mid-task (as by the OOM killer): its capture is reported as failed with one
    # line, the run finishes
    monkeypatch.setenv(pipeline.PARALLEL_MIN_BYTES_ENV, "0")
    monkeypatch.setattr(pipeline, "_PARENT_WORKS", False)
    monkeypatch.setattr(pipeline, "_worker_main", _dying_worker)
    run = api.analyze_run(CAPTURES[:1], ALGOS, jobs=2)
    assert list(run.failed) == CAPTURES[:1]
    msg = run.failed[CAPTURES[0]]
    assert msg.startswith(CAPTURES[0] + ": worker failed") and "\n" not in msg


def _dying_worker(conn, algorithms, params) -> None:  # module level: the spawned worker imports it
    import os

    conn.send("ready")
    conn.recv()
    os._exit(9)


def test_flow_batches_balance_ack_counts() -> None:
    from types import SimpleNamespace

    sched = pipeline._Scheduler([], pipeline.Options((), {}, (), {}, jobs=2), 1, None, None)  # type: ignore[arg-type]
    sizes = [100, 90, 10, 10, 10, 5, 5, 1, 1]
    todo = [(i, {}, SimpleNamespace(acks=SimpleNamespace(height=h))) for i, h in enumerate(sizes)]
    batches = sched._batches("f", todo, origin=0)
    assert len(batches) == pipeline.BATCHES_PER_LANE * 2  # 2 lanes: this process + 1 worker
    assert sorted(i for b in batches for i in b.idx) == list(range(len(sizes)))  # every flow once
    # largest first onto the lightest: 100 and 90 alone, the rest spread below them
    assert {b.idx for b in batches if b.weight > 50} == {(0,), (1,)}
    assert all(b.origin == 0 for b in batches)
