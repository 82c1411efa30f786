"""A streamed run (hscc_trace.analysis.stream, what ``hscc-trace analyze`` runs) writes the outputs
of an unstreamed one byte for byte — JSON results, HTML report, exported tables — while it keeps
only a summary of each flow and, whole, the flows the report draws (issue #20: memory must not
grow with the number of flows)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

from hscc_trace import api
from hscc_trace.analysis import export, pipeline, results
from hscc_trace.analysis.stream import Stream, report_rank
from hscc_trace.events import all_flow_events, flow_event_batches

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
# two captures of two flows each, and two of one: six flows, the report keeps two of them below
CAPTURES = [str(SAMPLES / n / "capture.pcap") for n in ("reno-vs-cubic", "reno-loss", "bbr-vs-cubic", "cubic-loss")]
ALGOS = ["reno", "cubic", "bbr"]
KEEP = 2
pytestmark = pytest.mark.skipif(not all(Path(p).exists() for p in CAPTURES), reason="samples missing")

_STAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def _outputs(run: pipeline.Run, tmp: Path, streamed: bool) -> dict[str, bytes]:
    """Every output of a run, as ``hscc-trace analyze -o R --json J --export D`` writes them."""
    out: dict[str, bytes] = {}
    results.write(run.to_json(lazy=streamed), tmp / "r.json")
    api.report(run.analysis, tmp / "r.html", max_flows=KEEP)
    if streamed:
        files = run.stream.finish_export([c.meta.path for c in run.analysis.captures])
    else:
        files = export.export_analysis(run.analysis, tmp / "exp", "csv")
    out["files"] = "\n".join(str(f.relative_to(tmp)) for f in files).encode()
    for f in [tmp / "r.json", tmp / "r.html", *files]:
        out[str(f.relative_to(tmp))] = _STAMP.sub(b"<created>", f.read_bytes())
    return out


def _streamed(paths: list[str], tmp: Path, jobs: int = 1) -> pipeline.Run:
    return api.analyze(
        paths,
        api.AnalyzeOptions(
            ALGOS, jobs=jobs, report_flows=KEEP, export=tmp / "exp", export_format="csv", stream=True, strict=False
        ),
    )


@pytest.fixture(scope="module")
def unstreamed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("full")
    return _outputs(api.analyze(CAPTURES, api.AnalyzeOptions(ALGOS, strict=False)), tmp, False)


@pytest.mark.parametrize("jobs", [1, 2])
def test_streamed_outputs_equal_the_unstreamed_ones(unstreamed: dict[str, bytes], tmp_path: Path, jobs: int) -> None:
    run = _streamed(CAPTURES, tmp_path, jobs)
    try:
        caps = run.analysis.captures
        assert sum(len(c.summaries or []) for c in caps) == 6  # every flow summarized …
        kept = [fr for c in caps for fr in c.results]
        assert len(kept) == KEEP  # … and only the report's flows kept whole, replays released
        assert all(not fr.replays and fr.released is not None for fr in kept)
        got = _outputs(run, tmp_path, True)
    finally:
        run.stream.close()
    assert got.keys() == unstreamed.keys()
    for name in got:
        assert got[name] == unstreamed[name], name


def test_the_kept_flows_are_the_ones_the_report_draws() -> None:
    st = Stream(keep=KEEP, entries=False)
    run = api.analyze_run(CAPTURES, ALGOS, stream=st)
    full = api.analyze(CAPTURES, api.AnalyzeOptions(ALGOS)).analysis
    everyone = [(ci, i, fr) for ci, c in enumerate(full.captures) for i, fr in enumerate(c.results)]
    best = sorted(everyone, key=lambda t: (report_rank(t[2].flow), t[0], t[1]))[:KEEP]
    want = {(full.captures[ci].meta.path, int(fr.flow["flow_id"])) for ci, _i, fr in best}
    got = {(c.meta.path, int(fr.flow["flow_id"])) for c in run.analysis.captures for fr in c.results}
    assert got == want
    for c in run.analysis.captures:  # a kept flow's replays come back as they were
        for fr in c.results:
            assert fr.released is not None
            again = fr.released.replay()
            ref = api.flow_result(full, int(fr.flow["flow_id"]), c.meta.path)
            assert list(again) == list(ref.replays)
            for k in again:
                assert_frame_equal(again[k], ref.replays[k])
    st.close()


def test_a_capture_that_fails_keeps_the_others_and_their_export_names(tmp_path: Path) -> None:
    # three captures named capture.pcap: the middle one is not a capture. The exports are named by
    # the readable ones' order (000-, 001-), as export_analysis names them after the run
    bad = tmp_path / "bad" / "capture.pcap"
    bad.parent.mkdir()
    bad.write_bytes(b"not a capture at all" * 10)
    paths = [CAPTURES[1], str(bad), CAPTURES[3]]
    full = api.analyze(paths, api.AnalyzeOptions(ALGOS, strict=False))
    want = [f.relative_to(tmp_path / "a") for f in export.export_analysis(full.analysis, tmp_path / "a", "csv")]
    run = api.analyze(
        paths,
        api.AnalyzeOptions(
            ALGOS, report_flows=0, export=tmp_path / "b", export_format="csv", stream=True, strict=False
        ),
    )
    try:
        files = run.stream.finish_export([c.meta.path for c in run.analysis.captures])
        assert [f.relative_to(tmp_path / "b") for f in files] == want
        assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["000-capture.pcap", "001-capture.pcap"]
        assert run.failed == full.failed and str(bad) in run.failed
        assert results.comparable(run.to_json()) == results.comparable(full.to_json())
    finally:
        run.stream.close()


def test_the_exports_get_their_final_names_when_the_report_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as above, and the report cannot be written: the command fails, and the tables exported as
    # flows finished (under names planned for three readable captures) are still moved to the
    # names of the two that were read
    bad = tmp_path / "bad" / "capture.pcap"
    bad.parent.mkdir()
    bad.write_bytes(b"not a capture at all" * 10)
    paths = [CAPTURES[1], str(bad), CAPTURES[3]]

    def no_report(*args, **kw):  # type: ignore[no-untyped-def]
        raise OSError("disk full")

    monkeypatch.setattr(api, "report", no_report)
    options = api.AnalyzeOptions(
        ALGOS,
        report_flows=1,
        export=tmp_path / "b",
        export_format="csv",
        stream=True,
        strict=False,
        output=tmp_path / "r.html",
    )
    with pytest.raises(OSError, match="disk full"):
        api.analyze(paths, options)  # (the stream is closed on the way out)
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["000-capture.pcap", "001-capture.pcap"]


def test_events_failing_after_some_flows_fail_the_capture_and_remove_its_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the events of a capture's second batch fail: the capture is an error (as when every event
    # stream was built at once), its flows already exported are removed, the other capture stays
    import hscc_trace.events as events

    real = events.flow_event_batches

    def second_fails(cap, ids=None, **kw):  # type: ignore[no-untyped-def]
        for k, batch in enumerate(real(cap, ids, rows=1, flows=1)):
            if k == 1 and cap.meta.path == CAPTURES[0]:
                raise ValueError("boom")
            yield batch

    monkeypatch.setattr(events, "flow_event_batches", second_fails)
    monkeypatch.delenv(pipeline.DEBUG_ENV, raising=False)
    for jobs in (1, 2):
        out = tmp_path / f"j{jobs}"
        ticks: list[tuple[int, int, str]] = []
        run = api.analyze(
            CAPTURES[:2],
            api.AnalyzeOptions(
                ALGOS, jobs=jobs, report_flows=1, export=out, export_format="csv", stream=True, strict=False
            ),
            progress=lambda d, t, desc, ticks=ticks: ticks.append((d, t, desc)),
        )
        try:
            # the progress ends full: the failed capture's flows never built leave the total
            assert ticks[-1][0] == ticks[-1][1] and any(desc.endswith(": error") for _d, _t, desc in ticks)
            assert all(d <= t for d, t, _desc in ticks)
            assert list(run.failed) == [CAPTURES[0]] and "ValueError: boom" in run.failed[CAPTURES[0]]
            assert [c.meta.path for c in run.analysis.captures] == [CAPTURES[1]]
            files = run.stream.finish_export([CAPTURES[1]])
            assert sorted(f for f in out.rglob("*") if f.is_file()) == sorted(files)
            assert {f.parent.name for f in files} == {"capture.pcap"}
        finally:
            run.stream.close()


def test_flow_event_batches_give_every_flows_events(tmp_path: Path) -> None:
    for path in CAPTURES[:1] + CAPTURES[2:3]:
        cap = api.load(path)
        every = all_flow_events(cap)
        got = dict(pair for batch in flow_event_batches(cap, rows=1, flows=1) for pair in batch)
        assert sorted(got) == sorted(every)
        for fid, ev in every.items():
            for t in ("segments", "acks", "episodes", "rounds"):
                assert_frame_equal(getattr(got[fid], t), getattr(ev, t))


def test_lazy_documents_write_the_same_text() -> None:
    st = Stream(keep=0, entries=True)
    run = api.analyze_run(CAPTURES[:2], ALGOS, stream=st)
    full = api.analyze(CAPTURES[:2], api.AnalyzeOptions(ALGOS, strict=False))
    try:
        lazy = run.to_json(lazy=True)
        assert len(lazy["captures"][0]["flows"]) == 2
        same = results.comparable(full.to_json())
        assert results.comparable(run.to_json()) == same  # (entries read back as dicts)
        assert [dict(f) for f in lazy["captures"][0]["flows"]] == same["captures"][0]["flows"]
        a, b = results.dumps(lazy), results.dumps(full.to_json())
        assert _STAMP.sub(b"", a.encode()) == _STAMP.sub(b"", b.encode())
        empty = {**lazy, "captures": [{**lazy["captures"][0], "flows": type(lazy["captures"][0]["flows"])([])}]}
        assert '"flows": []' in results.dumps(empty)
    finally:
        st.close()


def test_a_kept_flow_is_packed_and_unpacked_exactly() -> None:
    # the report's flows are held compressed while the run goes on: every table comes back equal
    # (dtypes, Enums, nulls), the replays are made again from the unpacked events
    from hscc_trace.analysis.stream import _Packed

    full = api.analyze(CAPTURES[:1], api.AnalyzeOptions(ALGOS)).analysis
    fr = full.captures[0].results[0]
    packed = _Packed.of(fr)
    assert sum(len(b or b"") for b in packed.tables.values()) < sum(
        getattr(fr.events, t).estimated_size() for t in ("segments", "acks", "episodes", "rounds")
    )
    back = packed.unpack(lambda ev: api.replay(ev, ALGOS))
    for t in ("segments", "acks", "episodes", "rounds", "sack_blocks"):
        assert_frame_equal(getattr(back.events, t), getattr(fr.events, t))
    assert back.events.vantage == fr.events.vantage and back.events.mss == fr.events.mss
    assert back.replays == {} and back.released is not None and back.released.labels == tuple(fr.replays)
    again = back.released.replay()
    for k in fr.replays:
        assert_frame_equal(again[k], fr.replays[k])
    assert_frame_equal(back.fit, fr.fit) and back.verdict == fr.verdict


def test_released_batches_equal_and_the_arena_refuses_to_be_read_again() -> None:
    # analyze gives the load arena's pages back batch by batch: the tables are the same, and the
    # capture then refuses to build events or its packet table (its rows read as zeros)
    path = CAPTURES[0]
    every = all_flow_events(api.load(path))
    cap = api.load(path)
    sack_rows = int(cap.decoded.arena.at[0])
    got = dict(pair for batch in flow_event_batches(cap, rows=1, flows=1, release=True) for pair in batch)
    assert cap.decoded.arena.released
    # the first release also dropped the SACK and option stores: the flows built after it (all
    # but the first) still equal the unreleased ones, so the events never read them
    assert sack_rows > 0 and len(got) > 1
    assert cap.decoded.arena.sk_edge.size == cap.decoded.arena.op_g.size == 0
    for fid, ev in every.items():
        for t in ("segments", "acks", "episodes", "rounds"):
            assert_frame_equal(getattr(got[fid], t), getattr(ev, t))
    with pytest.raises(ValueError, match="released"):
        all_flow_events(cap)
    with pytest.raises(ValueError, match="released"):
        cap.decoded.sack_packets()


def test_a_page_is_given_back_when_its_last_row_is_released(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from hscc_trace.flows import arena
    from hscc_trace.perf import memory

    calls: list[tuple[int, int]] = []
    memory.wait_background()  # (the pages earlier tests' arenas give back in the memory thread: not ours)
    monkeypatch.setattr(memory, "dontneed", lambda a, n: calls.append((a, n)) or True)
    page = arena._Pages.PAGE
    raw = np.zeros(23 * page, np.uint8)
    at = (-raw.ctypes.data) % page  # two columns of 10 pages each, page-aligned (one layout)
    cols = [raw[at : at + 10 * page].view(np.uint64), raw[at + 11 * page : at + 21 * page].view(np.int64)]
    per = page // 8  # rows per page
    live = np.arange(0, 10 * per, 1)  # every row in use (blocks of `per` rows, each full)
    pages = arena._Pages(cols, np.full(10, per), per)
    whole = pages.n
    assert whole == 10 and pages.firsts == [c.ctypes.data for c in cols]

    def release(rows: np.ndarray) -> int:  # (what Arena.release does with each layout's pages)
        ranges, n = pages.take(rows)
        memory.dontneed_all(ranges)
        return n

    # release every row of the 2nd page but one: nothing goes
    first_row = per
    assert release(np.arange(first_row, first_row + per - 1)) == 0 and not calls
    # its last row: that page goes, in both columns
    assert release(np.array([first_row + per - 1])) == 2 * page
    assert calls == [(pages.firsts[0] + page, page), (pages.firsts[1] + page, page)]
    calls.clear()
    # the 4th and 6th pages: two runs (the 5th page between them holds rows), one call per run
    # and column
    assert release(np.r_[3 * per : 4 * per, 5 * per : 6 * per]) == 4 * page
    assert calls == [(f + k * page, page) for k in (3, 5) for f in pages.firsts]
    calls.clear()
    # every other row: the other whole pages go, counted once; a run joins them across the pages
    # given back before (one call per column)
    rest = np.setdiff1d(live, np.r_[per : 2 * per, 3 * per : 4 * per, 5 * per : 6 * per])
    assert release(rest) == 2 * (whole - 3) * page
    assert calls == [(f, whole * page) for f in pages.firsts]
    assert (pages.live[1:-1] == -1).all()


def test_the_memory_thread_runs_its_calls_in_order_and_the_arena_gives_pages_back_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    import numpy as np

    from hscc_trace.perf import memory

    seen: list[tuple[object, str]] = []
    for k in range(3):
        memory.in_background(lambda k=k: seen.append((k, threading.current_thread().name)))
    memory.in_background(lambda: 1 / 0)  # (a failing call is advice lost, never the thread)
    memory.in_background(lambda: seen.append(("after", threading.current_thread().name)))
    memory.wait_background()
    assert [k for k, _ in seen] == [0, 1, 2, "after"] and {t for _, t in seen} == {"hscc-memory_0"}
    # Arena.release counts the pages at once and gives them back in that thread, every column's
    calls: list[tuple[int, int]] = []
    memory.wait_background()
    monkeypatch.setattr(memory, "dontneed", lambda a, n: calls.append((a, n)) or True)
    from hscc_trace.flows.ingest import load

    cap = load(str(Path(__file__).resolve().parents[2] / "samples" / "reno-vs-cubic" / "capture.pcap"))
    arena = cap.decoded.arena
    rows = arena.flow_rows(0, 1)
    gone = arena.release(rows)
    memory.wait_background()
    assert gone > 0 and sum(n for _a, n in calls) == gone
    starts = np.array([a for a, _n in calls])
    assert len(set(starts.tolist())) == len(calls)  # (each range once)


def test_the_glibc_adapter_gives_pages_back() -> None:
    import mmap

    import numpy as np

    from hscc_trace.perf import memory

    if memory._libc() is None:
        pytest.skip("not glibc")
    page = mmap.PAGESIZE
    m = mmap.mmap(-1, 4 * page, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # as numpy's, page-aligned
    a = np.frombuffer(m, np.uint8)
    a[:] = 7
    addr = a.ctypes.data
    assert memory.dontneed(addr + page, 2 * page)  # the two middle pages: zeros from now on
    assert a[:page].min() == 7 and a[page : 3 * page].max() == 0 and a[3 * page :].min() == 7
    assert not memory.dontneed(addr, 0)
    del a
    m.close()
    memory.trim()  # (nothing to check but that it runs)


# --- a run of one capture: the report's flows are drawn as they finish --------------------------

ONE = CAPTURES[0]  # two flows


def _report(analysis, tmp: Path, name: str, **opts) -> bytes:  # type: ignore[no-untyped-def]
    api.report(analysis, tmp / name, **opts)
    return _STAMP.sub(b"<created>", (tmp / name).read_bytes())


@pytest.mark.parametrize(("jobs", "keep"), [(1, 1), (1, 2), (2, 1), (2, 2)])
def test_one_capture_draws_its_flows_as_they_finish(tmp_path: Path, jobs: int, keep: int) -> None:
    # the report's flows (known from the flow table) are drawn as they finish, from the replays
    # they have: only their sections are kept, and the report is the unstreamed run's
    want = _report(
        api.analyze([ONE], api.AnalyzeOptions(ALGOS, strict=False)).analysis, tmp_path, "a.html", max_flows=keep
    )
    run = api.analyze(
        [ONE],
        api.AnalyzeOptions(ALGOS, jobs=jobs, report_flows=keep, report={"max_points": 2000}, stream=True, strict=False),
    )
    try:
        kept = run.analysis.captures[0].results
        assert len(kept) == keep and all(fr.drawn is not None and not fr.replays for fr in kept)
        assert all(fr.events.acks.height == 0 for fr in kept)  # (its tables are not kept)
        assert _report(run.analysis, tmp_path, "b.html", max_flows=keep, max_points=2000) == want
    finally:
        run.stream.close()


@pytest.mark.parametrize("budget", ["ten", "largest"])
def test_a_flow_beyond_the_event_budget_is_drawn_as_it_finishes(tmp_path: Path, budget: str) -> None:
    # the larger flow's packets do not fit in the report's event budget, so the plan cannot say
    # whether it is drawn at full resolution; its own events settle it when it finishes (it is
    # the largest: no other flow spends the budget before it), so it is drawn then, not kept and
    # replayed again at the end. "ten": its events do not fit either (drawn decimated);
    # "largest": the budget is exactly its events (drawn at full resolution)
    full = api.analyze([ONE], api.AnalyzeOptions(ALGOS, strict=False)).analysis
    big = min(full.captures[0].results, key=lambda fr: report_rank(fr.flow))
    n = big.events.acks.height + big.events.segments.height
    pkts = int(big.flow["pkts_ab"]) + int(big.flow["pkts_ba"])
    events = 10 if budget == "ten" else n
    assert events < pkts  # (so the plan leaves it open)
    opts = {"max_flows": 2, "full_resolution_events": events}
    want = _report(full, tmp_path, "a.html", **opts)
    run = api.analyze(
        [ONE],
        api.AnalyzeOptions(ALGOS, report_flows=2, report={"full_resolution_events": events}, stream=True, strict=False),
    )
    try:
        kept = {fr.flow["flow_id"]: fr for fr in run.analysis.captures[0].results}
        assert kept[big.flow["flow_id"]].drawn is not None and not kept[big.flow["flow_id"]].replays
        assert _report(run.analysis, tmp_path, "b.html", **opts) == want
    finally:
        run.stream.close()


def test_a_drawn_flow_is_analyzed_again_for_a_report_with_other_options(tmp_path: Path) -> None:
    opts = {"max_flows": 2, "max_points": 100, "full_resolution": False}
    want = _report(api.analyze([ONE], api.AnalyzeOptions(ALGOS, strict=False)).analysis, tmp_path, "a.html", **opts)
    run = api.analyze(
        [ONE], api.AnalyzeOptions(ALGOS, report_flows=2, stream=True, strict=False)
    )  # (drawn with the default options)
    try:
        assert all(fr.drawn is not None for fr in run.analysis.captures[0].results)
        assert _report(run.analysis, tmp_path, "b.html", **opts) == want
    finally:
        run.stream.close()


@pytest.mark.parametrize("keep", [1, 2])
def test_a_planned_flow_that_fails_is_replaced_as_an_unstreamed_run_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: int
) -> None:
    # the larger flow (the one planned when keep is 1) cannot be analyzed: the report draws the
    # other one — analyzed again from the capture, since the run did not keep it — and, when the
    # plan was two flows, with the points of one flow per series (its section is made again)
    real = pipeline.analyze_flow
    big = max(api.flows(ONE).iter_rows(named=True), key=lambda r: -report_rank(r))["flow_id"]

    def fails(flow, ev, *a):  # type: ignore[no-untyped-def]
        if flow["flow_id"] == big:
            raise ValueError("boom")
        return real(flow, ev, *a)

    monkeypatch.setattr(pipeline, "analyze_flow", fails)
    monkeypatch.delenv(pipeline.DEBUG_ENV, raising=False)
    opts = {"max_flows": keep, "budget_points": 50_000}
    full = api.analyze([ONE], api.AnalyzeOptions(ALGOS, strict=False))
    assert full.flow_failed
    want = _report(full.analysis, tmp_path, "a.html", **opts)
    run = api.analyze(
        [ONE], api.AnalyzeOptions(ALGOS, report_flows=keep, report={"budget_points": 50_000}, stream=True, strict=False)
    )
    try:
        kept = run.analysis.captures[0].results
        assert [fr.flow["flow_id"] for fr in kept] == [1 - big] and run.flow_failed == full.flow_failed
        assert (kept[0].drawn is None) == (keep == 1)
        assert _report(run.analysis, tmp_path, "b.html", **opts) == want
    finally:
        run.stream.close()


def test_a_flow_without_event_streams_is_left_out_of_the_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a selected flow with no packets (no event streams: it is never analyzed) is not planned, as
    # write_report never sees it: the other flow is drawn as it finished with write_report's points
    # per series, and not read and analyzed again for the report (counted, it made the plan draw
    # the capture's flows with the points of two flows each, and each was made again at the end)
    import hscc_trace.flows as flows_mod

    real = flows_mod.load
    big = max(api.flows(ONE).iter_rows(named=True), key=lambda r: -report_rank(r))["flow_id"]

    def load(path, **kw):  # type: ignore[no-untyped-def]
        cap = real(path, **kw)
        cap.decoded.src.first[big] = -1  # (what an arena row-less flow looks like)
        return cap

    monkeypatch.setattr(flows_mod, "load", load)
    full = api.analyze([ONE], api.AnalyzeOptions(ALGOS, strict=False))
    assert [fr.flow["flow_id"] for fr in full.analysis.captures[0].results] == [1 - big]
    opts = {"max_flows": 2, "budget_points": 50_000}  # (the budget sets the points per series)
    want = _report(full.analysis, tmp_path, "a.html", **opts)
    run = api.analyze(
        [ONE], api.AnalyzeOptions(ALGOS, report_flows=2, report={"budget_points": 50_000}, stream=True, strict=False)
    )
    try:
        (kept,) = run.analysis.captures[0].results
        assert kept.drawn is not None

        def again() -> None:
            raise AssertionError("the drawn flow was read and analyzed again")

        kept.drawn = dataclasses.replace(kept.drawn, restore=again)
        assert _report(run.analysis, tmp_path, "b.html", **opts) == want
    finally:
        run.stream.close()


def test_a_section_not_used_by_one_report_stays_whole_for_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a report written with other options makes the flow's section again; the section drawn as
    # the flow finished stays on it (FlowResult.drawn) and must stay whole — its compression
    # was cancelled, and a report with the first options then met a cancelled future
    import threading

    from hscc_trace.reports import html

    want = _report(
        api.analyze([ONE], api.AnalyzeOptions(ALGOS, strict=False)).analysis, tmp_path, "a.html", max_flows=1
    )
    gate = threading.Event()
    real = html._payload_gz

    def held(div, fig):  # type: ignore[no-untyped-def]
        if threading.current_thread().name.startswith("hscc-draw"):  # (the drawer's worker only)
            gate.wait(60)
        return real(div, fig)

    monkeypatch.setattr(html, "_payload_gz", held)
    run = api.analyze(
        [ONE], api.AnalyzeOptions(ALGOS, report_flows=1, stream=True, strict=False)
    )  # its figures wait in the worker …
    try:
        (kept,) = run.analysis.captures[0].results
        assert kept.drawn is not None and not all(f.done() for f in kept.drawn.section.figures)
        _report(run.analysis, tmp_path, "b.html", max_flows=1, max_points=100)  # … not used here
        gate.set()
        assert _report(run.analysis, tmp_path, "c.html", max_flows=1) == want
    finally:
        gate.set()
        run.stream.close()


def test_a_section_drawn_ahead_is_moved_to_its_place_exactly() -> None:
    # a section drawn before the flows ahead of it finished may land after another number of
    # figures: its payloads are rewritten, the same bytes as written there at once
    from concurrent.futures import ThreadPoolExecutor

    from hscc_trace.reports import html

    fr = api.analyze([ONE], api.AnalyzeOptions(ALGOS)).analysis.captures[0].results[0]
    key = html.SectionKey(
        0,
        0,
        per_series=500,
        full=True,
        colors=(),
        detail_points=100,
        row_class=html.default_row_class,
        capture=None,
        bpf=None,
    )
    with ThreadPoolExecutor(1) as pool:
        ahead, there = html._section(fr, key, 0, pool, None), html._section(fr, key, 3, pool, None)
        assert ahead.payloads(3) == there.payloads(3) and ahead.html(3) == there.html(3)
        assert ahead.payloads(0) != there.payloads(3) and 'id="fig4"' in there.html(3)


def test_a_flow_that_cannot_be_drawn_costs_the_report_not_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a bug while drawing a flow as it finishes: the run still ends with every flow's results
    # (the JSON is written before the report), and the error comes from writing the report
    from hscc_trace.reports import html

    def broken(self, index, fr):  # type: ignore[no-untyped-def]
        raise RuntimeError("figure bug")

    monkeypatch.setattr(html.Drawer, "draw", broken)
    ref = api.analyze(CAPTURES[:1], api.AnalyzeOptions(ALGOS, strict=False))
    run = api.analyze(CAPTURES[:1], api.AnalyzeOptions(ALGOS, report_flows=2, stream=True, strict=False))
    try:
        assert not run.errors
        assert results.comparable(run.to_json()) == results.comparable(ref.to_json())
        kept = run.analysis.captures[0].results
        assert kept and all(fr.drawn is None and fr.events.acks.height for fr in kept)  # kept packed instead

        def no_figures(*a, **k):  # type: ignore[no-untyped-def]
            raise RuntimeError("figure bug")

        monkeypatch.setattr(html.F, "build_flow", no_figures)
        with pytest.raises(RuntimeError, match="figure bug"):
            api.report(run.analysis, tmp_path / "r.html")
    finally:
        run.stream.close()


def test_exporting_a_streamed_analysis_writes_its_kept_flows_whole(tmp_path: Path) -> None:
    # a flow drawn as it finished keeps no event tables: export_analysis makes it whole first
    run = api.analyze(CAPTURES[:1], api.AnalyzeOptions(ALGOS, report_flows=1, stream=True, strict=False))
    try:
        (kept,) = run.analysis.captures[0].results
        assert kept.drawn is not None and kept.events.acks.height == 0
        got = export.export_analysis(run.analysis, tmp_path / "s", "csv")
    finally:
        run.stream.close()
    full = api.analyze(CAPTURES[:1], api.AnalyzeOptions(ALGOS, strict=False))
    want = export.export_analysis(full.analysis, tmp_path / "f", "csv")
    fid = f"flow{int(kept.flow['flow_id'])}."
    want = [f for f in want if f.name.startswith(fid)]
    assert [f.relative_to(tmp_path / "s") for f in got] == [f.relative_to(tmp_path / "f") for f in want]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(got, want))
