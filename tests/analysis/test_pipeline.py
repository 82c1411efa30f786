"""The parallel pipeline (hscc_trace.analysis.pipeline._run_parallel): ``--jobs N`` gives the results of one
lane whichever thread does the work; a failing flow is a one-line error either way."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from hscc_trace import api
from hscc_trace.analysis import pipeline, results

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
CAPTURES = [
    str(p)
    for p in (
        SAMPLES / "reno-loss" / "capture.pcap",
        SAMPLES / "cubic-loss" / "capture.pcap",
        SAMPLES / "app-limited" / "capture.pcap",
        SAMPLES / "reno-vs-cubic" / "capture.pcap",
    )
    if p.exists()
]
ALGOS = ["reno", "cubic"]
pytestmark = pytest.mark.skipif(len(CAPTURES) < 2, reason="samples missing")


def _doc(jobs: int, captures: list[str] = CAPTURES) -> dict:
    run = api.analyze(captures, api.AnalyzeOptions(ALGOS, jobs=jobs, strict=False))
    assert not run.errors
    return results.comparable(json.loads(json.dumps(run.to_json(), default=str)))


@pytest.fixture(scope="module")
def serial() -> dict:
    return _doc(1)


def test_serial_results_are_not_empty(serial: dict) -> None:
    # the parity tests below compare real work: every capture has flows with fitted algorithms
    assert [c["path"] for c in serial["captures"]] == CAPTURES
    fitted = [f for c in serial["captures"] for f in c["flows"] if f["fit"]]
    assert len(fitted) >= 2 and all({r["algo"] for r in f["fit"]} == set(ALGOS) for f in fitted)
    assert all(c["blake3"] and len(c["blake3"]) == 64 and "sha256" not in c for c in serial["captures"])


def test_helper_threads_alone_give_the_results_of_one_lane(serial: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    # this thread only reads captures: every flow is replayed by the helper thread, and every
    # file hashed there (blake3 is part of the compared document)
    monkeypatch.setattr(pipeline, "_CALLER_REPLAYS", False)
    ran_in: set[str] = set()
    real = pipeline._flow_task

    def spy(*args):  # type: ignore[no-untyped-def]
        ran_in.add(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(pipeline, "_flow_task", spy)
    assert _doc(2) == serial
    assert ran_in and all(name.startswith("hscc-lane-") for name in ran_in)


def test_three_lanes_give_the_results_of_one_lane(serial: dict) -> None:
    assert _doc(3) == serial


def test_captures_are_read_largest_first_and_results_keep_input_order(
    serial: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[str] = []
    real = pipeline._prepare_task

    def spy(path, *args):  # type: ignore[no-untyped-def]
        read.append(path)
        return real(path, *args)

    monkeypatch.setattr(pipeline, "_prepare_task", spy)
    assert _doc(2) == serial
    sizes = [Path(p).stat().st_size for p in read]
    assert sorted(read) == sorted(CAPTURES) and sizes == sorted(sizes, reverse=True)


def test_a_failing_flow_is_one_line_and_the_others_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # a replay that raises (a bug, or memory) on one flow: with one lane and with two, that flow
    # becomes the same one-line error and every other flow keeps its results
    real = pipeline.analyze_flow

    def flaky(flow, ev, algorithms, params):  # type: ignore[no-untyped-def]
        if ev.flow_id == 0:
            raise ValueError("boom\nsecond line")
        return real(flow, ev, algorithms, params)

    monkeypatch.setattr(pipeline, "analyze_flow", flaky)
    monkeypatch.delenv(pipeline.DEBUG_ENV, raising=False)
    runs = {jobs: api.analyze(CAPTURES[:2], api.AnalyzeOptions(ALGOS, jobs=jobs, strict=False)) for jobs in (1, 2)}
    for run in runs.values():
        assert len(run.flow_failed) == 2  # flow 0 of each of the two captures
        assert all("ValueError: boom" in m and "\n" not in m for m in run.flow_failed)
        assert not run.failed
    assert runs[1].flow_failed == runs[2].flow_failed
    docs = [results.comparable(json.loads(json.dumps(r.to_json(), default=str))) for r in runs.values()]
    assert docs[0] == docs[1]


def test_with_debug_a_failing_flow_raises_from_a_helper_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    # HSCC_TRACE_DEBUG=1: the exception of a flow replayed by a helper thread reaches the caller
    # (for its traceback), and the run does not hang on the other lanes
    def broken(flow, ev, algorithms, params):  # type: ignore[no-untyped-def]
        raise KeyError("no such column")

    monkeypatch.setattr(pipeline, "analyze_flow", broken)
    monkeypatch.setattr(pipeline, "_CALLER_REPLAYS", False)
    monkeypatch.setenv(pipeline.DEBUG_ENV, "1")
    before = threading.active_count()
    with pytest.raises(KeyError, match="no such column"):
        api.analyze(CAPTURES[:1], api.AnalyzeOptions(ALGOS, jobs=2, strict=False))
    assert threading.active_count() == before  # helper threads joined


def test_lanes_run_largest_first_and_hand_back_every_outcome() -> None:
    lanes = pipeline._Lanes(1)
    gate = threading.Event()
    order: list[str] = []
    try:
        lanes.submit(0.0, lambda: gate.wait(5), "gate")  # holds the helper while the tasks below are queued
        for weight, tag in ((1.0, "small"), (5.0, "large"), (3.0, "medium")):
            lanes.submit(weight, lambda t=tag: order.append(t) or t, tag)
        lanes.submit(2.0, lambda: 1 / 0, "fails")
        gate.set()
        got: dict[str, tuple[bool, object]] = {}
        while lanes.busy:
            got.update(lanes.drain(block=True, work=False))
        got.update(lanes.drain())
    finally:
        lanes.close()
    assert order == ["large", "medium", "small"]
    assert set(got) == {"gate", "small", "large", "medium", "fails"}
    assert got["large"] == (True, "large")
    ok, exc = got["fails"]
    assert not ok and isinstance(exc, ZeroDivisionError)


def test_the_calling_thread_works_through_the_queue_too() -> None:
    lanes = pipeline._Lanes(1)
    gate, started = threading.Event(), threading.Event()
    try:
        lanes.submit(0.0, lambda: started.set() or gate.wait(5), "gate")
        assert started.wait(5)  # the helper is blocked: only this thread can progress
        lanes.submit(1.0, lambda: threading.current_thread().name, "where")
        first = lanes.drain(block=True)  # runs "where" here instead of waiting
        gate.set()
    finally:
        lanes.close()
    assert first == [("where", (True, threading.current_thread().name))]


def test_one_lane_hashes_the_files_beside_the_analysis() -> None:
    # the JSON results' BLAKE3 comes from the run (a thread hashed it while the flows were
    # analyzed), not from a second read when the document is written
    run = api.analyze(CAPTURES[:2], api.AnalyzeOptions(ALGOS, jobs=1, strict=False))
    assert run.digests == {p: results.digest_file(p) for p in CAPTURES[:2]}
    assert [c["blake3"] for c in run.to_json()["captures"]] == [run.digests[p] for p in CAPTURES[:2]]


def test_a_flows_evidence_made_during_the_replays_fails_where_it_failed_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # analyze_flow makes the flow's evidence while the replay loops run; an error there is left
    # to the fit and the verdict, which make it again: the flow fails as without the head start
    # (the fit's error first), and it is made only once when it succeeds
    from hscc_trace.analysis import evidence, verdict
    from hscc_trace.replay import metrics

    pc = pipeline.prepare_capture(CAPTURES[0], None, (0,))
    row, ev = pc.events[0]
    assert ev is not None
    real = evidence.observe
    calls: list[int] = []

    def counted(e):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(e)

    monkeypatch.setattr(evidence, "observe", counted)
    monkeypatch.setattr(verdict, "observe", counted)
    want = pipeline.analyze_flow(row, ev, tuple(ALGOS), {})
    assert len(calls) == 1 and want.verdict.evidence == real(ev)

    def broken(e):  # type: ignore[no-untyped-def]
        raise RuntimeError("evidence")

    monkeypatch.setattr(evidence, "observe", broken)
    monkeypatch.setattr(verdict, "observe", broken)
    with pytest.raises(RuntimeError, match="evidence"):
        pipeline.analyze_flow(row, ev, tuple(ALGOS), {})

    def fit_fails(e, r):  # type: ignore[no-untyped-def]
        raise ValueError("fit")

    monkeypatch.setattr(metrics, "fit", fit_fails)
    with pytest.raises(ValueError, match="fit"):
        pipeline.analyze_flow(row, ev, tuple(ALGOS), {})


# --- one lane: the next batch of event tables built ahead (pipeline._Ahead) -------------------------


def _small_batches(monkeypatch: pytest.MonkeyPatch, built_in: list[str], slow: float = 0.0) -> None:
    """Every flow a batch of its own (so that there is a next batch to build ahead); each build's
    thread is noted in ``built_in`` (and takes ``slow`` seconds more)."""
    import time

    import hscc_trace.events as events

    real = events.flow_event_batches

    def one_flow_each(cap, ids=None, **kw):  # type: ignore[no-untyped-def]
        it = real(cap, ids, **{**kw, "rows": 1, "flows": 1})
        while True:
            built_in.append(threading.current_thread().name)
            time.sleep(slow)
            batch = next(it, None)
            if batch is None:
                return
            yield batch

    monkeypatch.setattr(events, "flow_event_batches", one_flow_each)
    monkeypatch.setattr(pipeline, "_CPUS", 2)  # (a machine of one core builds nothing ahead)


def _ahead_alive() -> bool:
    return any(t.name == "hscc-batches" for t in threading.enumerate())


def test_batches_built_ahead_give_the_results_and_flow_order_of_batches_built_in_turn(
    serial: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    order: dict[bool, list[tuple[str, int]]] = {}
    real = pipeline._flow_task
    for ahead in (False, True):
        built_in: list[str] = []
        _small_batches(monkeypatch, built_in)
        monkeypatch.setattr(pipeline, "BATCHES_AHEAD", ahead)
        seen: list[tuple[str, int]] = []

        def spy(path, row, *args, seen=seen):  # type: ignore[no-untyped-def]
            seen.append((path, int(row["flow_id"])))
            return real(path, row, *args)

        monkeypatch.setattr(pipeline, "_flow_task", spy)
        assert _doc(1) == serial
        order[ahead] = seen
        assert ("hscc-batches" in built_in) is ahead  # (off: every batch built by this thread)
        assert not _ahead_alive()
    assert order[True] == order[False] and len(order[True]) >= 4


def test_no_batch_is_built_ahead_on_one_core_or_with_interpreted_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    from hscc_trace.perf import firstuse

    monkeypatch.setattr(pipeline, "_CPUS", 2)
    assert pipeline._builds_ahead()
    with firstuse.mode("interpret"):
        assert not pipeline._builds_ahead()
    monkeypatch.setattr(pipeline, "_CPUS", 1)
    assert not pipeline._builds_ahead()


def test_no_batch_is_built_ahead_after_a_batch_of_more_events_than_the_limit(
    serial: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    built_in: list[str] = []
    _small_batches(monkeypatch, built_in)
    monkeypatch.setattr(pipeline, "AHEAD_BATCH_EVENTS", 0)
    assert _doc(1) == serial
    assert set(built_in) == {threading.current_thread().name}


def test_a_batch_built_ahead_that_fails_fails_its_capture_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    # the second batch of a capture of two flows raises while it is built ahead: the capture is
    # an error after its first flow, exactly as when that batch is built in turn
    import hscc_trace.events as events

    two = [str(SAMPLES / "reno-vs-cubic" / "capture.pcap"), CAPTURES[0]]  # (the first: two flows)

    monkeypatch.delenv(pipeline.DEBUG_ENV, raising=False)
    real = events.flow_event_batches

    def second_fails(cap, ids=None, **kw):  # type: ignore[no-untyped-def]
        for k, batch in enumerate(real(cap, ids, rows=1, flows=1)):
            if k == 1 and cap.meta.path == two[0]:
                raise ValueError("boom")
            yield batch

    monkeypatch.setattr(events, "flow_event_batches", second_fails)
    monkeypatch.setattr(pipeline, "_CPUS", 2)
    got = {}
    for ahead in (False, True):
        monkeypatch.setattr(pipeline, "BATCHES_AHEAD", ahead)
        ticks: list[tuple[int, int, str]] = []
        run = api.analyze(
            two,
            api.AnalyzeOptions(ALGOS, jobs=1, strict=False),
            progress=lambda d, t, s, ticks=ticks: ticks.append((d, t, s)),
        )
        assert list(run.failed) == [two[0]] and "ValueError: boom" in run.failed[two[0]]
        assert [c.meta.path for c in run.analysis.captures] == [two[1]]
        assert not _ahead_alive()
        got[ahead] = (ticks, run.errors, results.comparable(json.loads(json.dumps(run.to_json(), default=str))))
    assert got[True] == got[False]


def test_ctrl_c_while_a_batch_is_built_ahead_stops_the_run_and_its_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    built_in: list[str] = []
    _small_batches(monkeypatch, built_in, slow=0.3)

    def interrupted(*args):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "_flow_task", interrupted)
    with pytest.raises(KeyboardInterrupt):
        api.analyze(CAPTURES[:1], api.AnalyzeOptions(ALGOS, jobs=1, strict=False))
    assert "hscc-batches" in built_in  # (the next batch was being built when the first flow stopped)
    assert not _ahead_alive()
