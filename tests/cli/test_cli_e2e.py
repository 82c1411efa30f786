"""End to end: `hscc-trace analyze` and `hscc-trace check` run as subprocesses on the real samples.

Samples come from samples/index.json (real Linux senders captured by the testbed). To stay fast
the tests use the smallest Reno sample, replay a subset of algorithms except in the one test that
is about "all algorithms", and share module-scoped runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from hscc_trace.analysis import results

REPO = Path(__file__).resolve().parents[2]
INDEX = REPO / "samples" / "index.json"
CLI = [sys.executable, "-m", "hscc_trace"]
FAST_ALGOS = "reno,fusion"  # an exact-model baseline and a high-speed algorithm that should not fit Reno


def _samples() -> list[dict]:
    if not INDEX.is_file():
        return []
    return json.loads(INDEX.read_text())["samples"]


def _smallest(cc: str) -> Path | None:
    """The smallest sender-side sample of ``cc`` whose sender was window-limited (not held back
    by a small receive window or a rate-limited application), so its flow can be judged."""
    cands = [
        s
        for s in _samples()
        if s.get("cc") == cc
        and s.get("capture_point", "sender") == "sender"
        and not s.get("app_rate_bps")
        and not s.get("rwnd_rcvbuf_bytes")
        and (REPO / s["capture"]).is_file()
    ]
    if not cands:
        return None
    return REPO / min(cands, key=lambda s: s["capture_bytes"])["capture"]


def _limited(cc: str) -> Path | None:
    """The smallest sample of ``cc`` held back by the application or the receive window."""
    cands = [
        s
        for s in _samples()
        if s.get("cc") == cc
        and (s.get("app_rate_bps") or s.get("rwnd_rcvbuf_bytes"))
        and (REPO / s["capture"]).is_file()
    ]
    return REPO / min(cands, key=lambda s: s["capture_bytes"])["capture"] if cands else None


def _named(*names: str) -> Path | None:
    for n in names:
        if (REPO / "samples" / n / "capture.pcap").is_file():
            return REPO / "samples" / n / "capture.pcap"
    return None


# window-limited Linux Reno senders (samples/README.md), smallest first; else whatever the index offers
RENO = _named("reno-loss", "reno-bdp") or _smallest("reno")
RENO_LIMITED = _limited("reno")
CUBIC = _named("cubic-loss") or _smallest("cubic")
needs_reno = pytest.mark.skipif(RENO is None, reason="no Reno sample in samples/index.json")


def run(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    e.update(env or {})
    return subprocess.run([*CLI, *args], cwd=cwd, env=e, capture_output=True, text=True, timeout=timeout)


def no_traceback(p: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout, p.stderr


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("e2e")


@pytest.fixture(scope="module")
def corrupt(work: Path) -> Path:
    p = work / "corrupt.pcap"
    p.write_bytes(b"this is not a capture file\n" * 20)
    return p


@pytest.fixture(scope="module")
def full_run(work: Path) -> tuple[subprocess.CompletedProcess, Path, Path]:
    """The README quick start: every registered algorithm on the smallest Reno sample."""
    if RENO is None:
        pytest.skip("no Reno sample")
    out = work / "full"
    out.mkdir()
    p = run(["analyze", str(RENO), "-o", "report.html", "--json", "results.json"], cwd=out)
    return p, out / "report.html", out / "results.json"


@pytest.fixture(scope="module")
def fast_json(work: Path) -> Path:
    """A results document with the fast subset, used as a baseline."""
    if RENO is None:
        pytest.skip("no Reno sample")
    p = run(
        [
            "analyze",
            str(RENO),
            "--algo",
            FAST_ALGOS,
            "--json",
            "base.json",
            "--export",
            "exp",
            "--export-format",
            "csv",
            "-q",
        ],
        cwd=work,
    )
    assert p.returncode == 0, p.stderr
    return work / "base.json"


# --- analyze -----------------------------------------------------------------------------------------


@needs_reno
def test_analyze_all_algorithms_writes_report_and_valid_json(full_run) -> None:
    p, report, res = full_run
    no_traceback(p)
    assert p.returncode == 0, p.stderr
    html = report.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html") and len(html) > 10_000
    doc = json.loads(res.read_text())
    jsonschema.Draft202012Validator(results.json_schema()).validate(doc)
    from hscc_trace import api

    assert doc["algorithms"] == list(api.select(None).labels)  # default: every registered algorithm
    (cap,) = doc["captures"]
    assert cap["error"] is None and cap["meta"]["packets_total"] > 1000
    data = [f for f in cap["flows"] if f["events"]["segments"] > 0]
    assert data, "the sample has a data flow"
    f = max(data, key=lambda f: f["events"]["segments"])
    assert len(f["fit"]) == len(doc["algorithms"]) and f["best"] in doc["algorithms"]
    assert f["events"]["cwnd_limited_rounds"] > 0
    # the terminal summary gives the flow's verdict, its reason and the evidence (a Linux Reno sender)
    # (behaves as: Reno's window is also what senders outside the library set, docs/verdicts.md)
    assert f["verdict"]["class"] == "behaves as" and f["verdict"]["name"] == "reno"
    assert "behaves as reno — its replay follows the sender's window" in p.stdout and "1 capture(s)" in p.stdout
    assert "evidence: β 0.45" in p.stdout
    # the report gives the same verdict, coloured by its class, with threshold, margin and evidence
    v = f["verdict"]
    assert '<span class="verdict v-behaves">behaves as reno</span>' in html
    assert f"threshold {v['threshold'] * 100:.1f}%" in html
    assert (
        f"margin: closer to the sender than {v['runner_up']} in {v['closer_rounds']} of {v['differing_rounds']}" in html
    )
    assert (
        "β per loss episode (flight after recovery / flight at its onset): "
        + ", ".join(f"{b:.2f}" for b in v["evidence"]["beta"])
        in html
    )
    assert html.count('<tr class="v-behaves">') == 1


@needs_reno
def test_corrupt_capture_exit_2_one_line_others_still_processed(work: Path, corrupt: Path) -> None:
    p = run(["analyze", str(corrupt), "-q"], cwd=work)
    no_traceback(p)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hscc-trace: error: ") and "corrupt.pcap" in lines[0]

    p = run(["analyze", str(corrupt), str(RENO), "--algo", "reno", "--json", "mixed.json", "-q"], cwd=work)
    no_traceback(p)
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1
    doc = results.read(work / "mixed.json")
    assert [c["path"] for c in doc["captures"]] == [str(corrupt), str(RENO)]
    assert doc["captures"][0]["error"] and doc["captures"][1]["error"] is None
    assert doc["captures"][1]["flows"]


def test_missing_file_and_bad_options_exit_2(work: Path) -> None:
    p = run(["analyze", "nope.pcap", "-q"], cwd=work)
    no_traceback(p)
    assert p.returncode == 2 and "nope.pcap: no such file or directory" in p.stderr
    p = run(["analyze", "nope.pcap", "--algo", "no-such-algo"], cwd=work)
    no_traceback(p)
    assert p.returncode == 2 and "no-such-algo" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = run(["check", "nope.pcap"], cwd=work)  # neither --expect nor --baseline
    no_traceback(p)
    assert p.returncode == 2 and "--expect" in p.stderr


@needs_reno
def test_jobs_2_gives_the_same_results_as_jobs_1(work: Path) -> None:
    inputs = [str(RENO)] + ([str(CUBIC)] if CUBIC else [])
    docs = []
    for jobs in (1, 2):
        # --jobs 2: a helper thread replays flows while the main thread reads the next capture
        p = run(
            ["analyze", *inputs, "--algo", FAST_ALGOS, "--jobs", str(jobs), "--json", f"j{jobs}.json", "-q"], cwd=work
        )
        no_traceback(p)
        assert p.returncode == 0, p.stderr
        docs.append(results.comparable(json.loads((work / f"j{jobs}.json").read_text())))
    assert docs[0] == docs[1]
    assert len(docs[0]["captures"]) == len(inputs)


@needs_reno
def test_export_tables(work: Path, fast_json: Path) -> None:
    files = sorted(f.name for f in (work / "exp").rglob("*.csv"))
    assert any(f.endswith(".acks.csv") for f in files) and any(f.endswith(".replay.csv") for f in files)
    import polars as pl

    acks = pl.read_csv(next((work / "exp").rglob("*.acks.csv")))
    assert {"ts_ns", "ack", "rtt_s", "round"} <= set(acks.columns) and acks.height > 0


# --- check -----------------------------------------------------------------------------------------


@needs_reno
def test_check_samples_folder_passes_by_its_own_expectations(work: Path) -> None:
    # samples/hscc-trace.toml expects each sample flow to be named as the algorithm its sender
    # ran (samples/index.json); the whole folder passes, the flows without enough data and the
    # synthetic captures without an expectation are skipped, nothing fails
    idx = json.loads((REPO / "samples" / "index.json").read_text())
    flows = sum(len(s["flows"]) for s in idx["samples"])
    p = run(["check", str(REPO / "samples"), "--junit", "samples.xml"], cwd=work, timeout=900)
    no_traceback(p)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr
    root = ET.parse(work / "samples.xml").getroot()
    assert root.get("failures") == "0" and root.get("errors") == "0"
    cases = root.findall("testsuite/testcase")
    passed = [c for c in cases if c.find("failure") is None and c.find("skipped") is None and c.find("error") is None]
    assert len(passed) >= flows - 2, (len(passed), flows)  # app- and rwnd-limited: not enough data


def test_check_reno_sample_passes_expect_reno(work: Path) -> None:
    p = run(["check", str(RENO), "--expect", "reno", "--junit", "pass.xml"], cwd=work)
    no_traceback(p)
    assert p.returncode == 0, p.stdout + p.stderr
    root = ET.parse(work / "pass.xml").getroot()
    assert root.get("failures") == "0" and root.get("errors") == "0"
    cases = root.findall("testsuite/testcase")
    passed = [c for c in cases if c.find("failure") is None and c.find("skipped") is None and c.find("error") is None]
    assert passed, "at least one flow was judged (not only skipped)"
    assert "reno mare" in p.stdout


@needs_reno
def test_check_reno_sample_fails_expect_fusion(work: Path) -> None:
    """Also run as a GitHub Actions step would: annotations on stdout, a job summary appended."""
    summary = work / "summary.md"
    summary.write_text("# earlier step\n")
    p = run(
        ["check", str(RENO), "--expect", "fusion", "--max-error", "0.05", "--junit", "fail.xml"],
        cwd=work,
        env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)},
    )
    no_traceback(p)
    assert p.returncode == 1, p.stdout + p.stderr
    root = ET.parse(work / "fail.xml").getroot()
    failures = root.findall("testsuite/testcase/failure")
    assert failures and "fusion mare" in failures[0].get("message") and "> 0.050" in failures[0].get("message")
    assert any(l.startswith("::error file=") and "fusion mare" in l for l in p.stdout.splitlines())
    assert any(l.startswith("::notice file=") for l in p.stdout.splitlines())
    text = summary.read_text()
    assert text.startswith("# earlier step\n") and "### hscc-trace check" in text and "❌ fail" in text


@pytest.mark.skipif(RENO_LIMITED is None, reason="no application- or rwnd-limited Reno sample")
def test_check_limited_flow_is_skipped_not_passed(work: Path) -> None:
    p = run(["check", str(RENO_LIMITED), "--expect", "reno", "--junit", "limited.xml"], cwd=work)
    no_traceback(p)
    root = ET.parse(work / "limited.xml").getroot()
    skipped = root.findall("testsuite/testcase/skipped")
    assert skipped and "cwnd-limited round" in skipped[0].get("message")
    # nothing in the capture could be judged: the gate does not go green
    assert p.returncode == 1 and "nothing could be verified" in p.stdout


@needs_reno
def test_check_corrupt_capture_exit_2(work: Path, corrupt: Path) -> None:
    p = run(["check", str(corrupt), str(RENO), "--expect", "reno", "--junit", "err.xml"], cwd=work)
    no_traceback(p)
    assert p.returncode == 2
    root = ET.parse(work / "err.xml").getroot()
    assert root.get("errors") == "1" and root.find("testsuite/testcase/error") is not None


@needs_reno
def test_check_against_baseline(work: Path, fast_json: Path) -> None:
    p = run(["check", str(RENO), "--baseline", str(fast_json)], cwd=work)
    no_traceback(p)
    assert p.returncode == 0, p.stdout + p.stderr
    # a baseline in which every algorithm fitted perfectly: whatever does not fit exactly now
    # (fusion on a Reno sender) has regressed
    doc = json.loads(fast_json.read_text())
    for cap in doc["captures"]:
        for f in cap["flows"]:
            for r in f["fit"]:
                r.update(mare=0.0, rmse_pkts=0.0, corr=1.0)
    (work / "better.json").write_text(json.dumps(doc))
    p = run(["check", str(RENO), "--baseline", "better.json", "--junit", "reg.xml"], cwd=work)
    assert p.returncode == 1, p.stdout
    msg = ET.parse(work / "reg.xml").getroot().find("testsuite/testcase/failure").get("message")
    assert "regression(s)" in msg and "fusion mare 0.000 → " in msg and "tolerance 0.020" in msg
    # the same regression is accepted with a tolerance wide enough for it
    p = run(
        ["check", str(RENO), "--baseline", "better.json", "--tolerance", "mare=none,rmse_pkts=none,corr=none"], cwd=work
    )
    assert p.returncode == 0, p.stdout


@needs_reno
def test_check_reads_expectations_from_config(work: Path) -> None:
    cfgdir = work / "cfg"
    cfgdir.mkdir()
    (cfgdir / "hscc-trace.toml").write_text(
        '[check]\nmax_error = 0.05\n\n[[check.expectations]]\nmatch = "*.pcap"\nexpect = "fusion"\n'
    )
    p = run(["check", str(RENO)], cwd=cfgdir)
    assert p.returncode == 1, p.stdout + p.stderr  # fusion does not fit a Reno sender within 5 %
    p = run(["check", str(RENO), "--expect", "reno", "--max-error", "0.10"], cwd=cfgdir)  # CLI overrides
    assert p.returncode == 0, p.stdout + p.stderr
    (cfgdir / "hscc-trace.toml").write_text("[check]\nmax_eror = 0.05\n")
    p = run(["check", str(RENO), "--expect", "reno"], cwd=cfgdir)
    no_traceback(p)
    assert p.returncode == 2 and "max_eror" in p.stderr


# --- input expansion and exports, in process -----------------------------------------------------


def test_expand_inputs_order_directories_and_errors(tmp_path: Path) -> None:
    from hscc_trace.analysis import pipeline

    d = tmp_path / "caps"
    (d / "sub").mkdir(parents=True)
    for name in ("b.pcap", "a.pcapng", "sub/c.pcap.gz", "notes.txt"):
        (d / name).write_bytes(b"x")
    (tmp_path / "empty").mkdir()
    single = tmp_path / "z.dat"  # a file named explicitly is read whatever its extension
    single.write_bytes(b"x")
    args = [str(single), "missing.pcap", str(d), str(tmp_path / "empty"), str(d / "b.pcap")]
    entries, errors = pipeline.expand_inputs(args)
    assert entries == [
        str(single),
        "missing.pcap",
        str(d / "a.pcapng"),
        str(d / "b.pcap"),
        str(d / "sub" / "c.pcap.gz"),
        str(tmp_path / "empty"),
    ]  # b.pcap once
    assert errors == {
        "missing.pcap": "missing.pcap: no such file or directory",
        str(tmp_path / "empty"): f"{tmp_path / 'empty'}: no capture files in directory (.pcap, .pcapng, .cap …)",
    }


@needs_reno
def test_export_keeps_dtypes_in_parquet_and_writes_json(tmp_path: Path) -> None:
    import polars as pl

    from hscc_trace import api, schema
    from hscc_trace.analysis import export

    cap = api.load(RENO)
    fid = int(cap.flows.sort("payload_ab", descending=True)["flow_id"][0])
    ev = api.events(cap, fid)
    p = api.export(ev, tmp_path / "acks.parquet")
    back = pl.read_parquet(p)
    assert back.schema == ev.acks.schema and back.height == ev.acks.height
    assert [c.name for c in schema.ACKS] == back.columns[: len(schema.ACKS)]
    reps = api.replay(ev, ["reno"])
    j = export.write(reps, tmp_path / "rep.json")
    rows = json.loads(j.read_text())
    assert len(rows) == reps["reno"].height and rows[0]["algo"] == "reno" and "cwnd" in rows[0]
    with pytest.raises(Exception, match="unknown output format"):
        export.write(ev, tmp_path / "acks.xlsx")


@needs_reno
def test_library_api_tables_checks_and_figures(tmp_path: Path) -> None:
    """The notebook path (docs/api.md): the same analysis as the CLI, as DataFrames and figures."""
    from hscc_trace import api
    from hscc_trace.analysis import check

    a = api.analyze(RENO, api.AnalyzeOptions(algorithms=["reno", "fusion"])).analysis
    ft = api.flow_table(a)
    assert ft.height == len(a.captures[0].results) and {"capture", "flow_id", "best", "best_mare"} <= set(ft.columns)
    fits = api.fit_table(a)
    assert set(fits["algo"].unique()) == {"reno", "fusion"} and fits["capture"].unique().to_list() == [str(RENO)]
    data = ft.sort("payload_ab", descending=True).row(0, named=True)
    fr = api.flow_result(a, data["flow_id"])
    assert set(fr.replays) == {"reno", "fusion"} and fr.events.acks.height > 0
    res = api.check(a, api.CheckOptions(expect="reno"))
    assert res.exit_code == check.exit_code(res.verdicts) == 0 and any(v.status == check.PASS for v in res.verdicts)
    figs = api.figures(a, data["flow_id"])
    assert figs and all(hasattr(f, "to_dict") for f in figs.values())
    with pytest.raises(Exception, match="was not analyzed"):
        api.flow_result(a, 999)
    # a streamed run keeps the drawn flows without their replays: figures replays them again,
    # so a notebook gets the same algorithm panels
    other = str(REPO / "samples" / "cubic-loss" / "capture.pcap")
    # one capture: the flow is drawn as it finishes (its events let go too); with a second
    # capture its replays are released
    for inputs in ([str(RENO)], [str(RENO), other]):
        run = api.analyze(inputs, api.AnalyzeOptions(["reno", "fusion"], report_flows=2, stream=True, strict=False))
        try:
            kept = api.flow_result(run.analysis, data["flow_id"])
            assert not kept.replays
            assert kept.drawn is not None if len(inputs) == 1 else kept.released is not None
            streamed = api.figures(run.analysis, data["flow_id"])
            assert sorted(streamed) == sorted(figs) and {"algo:reno", "algo:fusion"} <= set(streamed)
            assert streamed["window"].to_json() == figs["window"].to_json()
        finally:
            run.stream.close()


def test_configured_params_for_algorithms_not_run_are_dropped_given_ones_are_not() -> None:
    from hscc_trace import api
    from hscc_trace.errors import UsageError

    assert api.select_params(["reno"], {"fusion": {"dmin_ms": 2}, "reno": {"iw": 4}}) == {"reno": {"iw": 4}}
    # a table for a name that is not registered at all is kept, so that resolve reports the typo
    typo = api.select_params(["reno"], {"fuison": {"dmin_ms": 2}})
    with pytest.raises(UsageError, match="fuison"):
        api.select(["reno"], typo)
    # --param for an algorithm that is not run is an error, not silently ignored
    given = api.select_params(["reno"], {}, {"fusion": {"dmin_ms": 2}})
    with pytest.raises(UsageError, match="fusion"):
        api.select(["reno"], given)
    sel = api.select(["reno"], api.select_params(["reno"], {"reno": {"iw": 4}}))
    assert sel.labels == ("reno[iw=4]",) and sel.values["reno[iw=4]"]["iw"] == 4


def test_params_without_configured_tables_need_no_registry() -> None:
    """Without configured tables select_params answers the overrides given, as the registry
    would, and imports neither the algorithms nor numba (fresh interpreter)."""
    from hscc_trace import api
    from hscc_trace.replay import selection

    for names, given in ((None, {}), (["reno"], {"fusion": {"dmin_ms": 2}}), (None, {"reno": {"iw": 4}})):
        assert api.select_params(names, {}, given) == selection.select_params(names, {}, given)
    code = (
        "import sys; from hscc_trace import api; "
        "assert api.select_params(None, {}, {'reno': {'iw': 4}}) == {'reno': {'iw': 4}}; "
        "print(sorted(m for m in sys.modules if m == 'numba' or m.startswith('hscc_trace.replay')))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"
