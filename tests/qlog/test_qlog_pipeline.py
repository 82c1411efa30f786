"""qlog in, same pipeline out (issue #42, docs/quic.md): the results document's ``quic``
entries, and the capture commands on qlog files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hscc_trace import api
from hscc_trace.analysis import results

REPO = Path(__file__).resolve().parents[2]
QUIC = REPO / "samples" / "quic"


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hscc_trace", *args], capture_output=True, text=True, timeout=timeout)


def test_results_json_carries_the_quic_connection_and_names_the_algorithm(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    bad = tmp_path / "cut.qlog"
    bad.write_text('{"qlog_version": "0.3", "traces": [{"events": [')  # no packet at all: unreadable
    r = _run(
        "analyze",
        "-q",
        str(QUIC / "aioquic-reno-loss.qlog.gz"),
        str(QUIC / "aioquic-cubic-loss.qlog.gz"),
        str(bad),
        "--json",
        str(out),
    )
    assert r.returncode == 2, r.stderr  # one input unreadable: exit 2, the others analyzed
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    doc = results.read(out)  # validates against results.schema.json
    assert doc["schema_version"] == results.SCHEMA_VERSION == "2.3" and doc["captures"] == []
    reno, cubic, cut = doc["quic"]
    assert cut["connections"] == [] and cut["error"] and doc["errors"] == [cut["error"]]
    for entry, algo in ((reno, "reno"), (cubic, "cubic")):
        (c,) = entry["connections"]
        # the traces are aioquic's server (make_traces.py): it sends the bulk data and logs its cwnd
        assert (c["protocol"], c["vantage"], c["data_sender"], c["logs_the_sender"]) == (
            "quic",
            "server",
            "server",
            True,
        )
        # the verdict names the stack's own algorithm: its aioquic-flavoured replay is exact
        assert c["algorithm"] == algo and c["best"] == f"{algo}[aioquic]", c["verdict"]
        assert c["median_error"] == 0.0 and c["verdict"].startswith(f"follows {algo}[aioquic]")
        assert c["losses_stack"] == c["losses"]["stack"] > 0 and entry["blake3"] and entry["error"] is None


def test_a_results_document_without_quic_still_validates() -> None:
    doc = api.qlog_results([], ["reno"])
    del doc["quic"]  # 2.0 documents have no quic entry: optional
    results.validate(doc)
    doc["quic"] = [{"path": "x"}]
    with pytest.raises(Exception, match="quic"):
        results.validate(doc)


def test_quic_connections_table_matches_the_schema() -> None:
    from hscc_trace import schema
    from hscc_trace.qlog import connection_table, summary

    t = connection_table(summary(str(QUIC / "aioquic-reno-loss-client.qlog.gz"), ("reno",), ("aioquic",)))
    assert t.columns == [c.name for c in schema.QUIC_CONNECTIONS] and t.height == 1
    # the client's trace logs the receiver: the data sender is the server, nothing is replayed
    row = t.row(0, named=True)
    assert (row["vantage"], row["data_sender"], row["logs_the_sender"], row["algorithm"]) == (
        "client",
        "server",
        False,
        None,
    )
    json.dumps(row)


def test_report_draws_the_logged_window_and_the_replays(tmp_path: Path) -> None:
    out = tmp_path / "q.html"
    r = _run(
        "analyze",
        "-q",
        str(QUIC / "aioquic-reno-loss.qlog.gz"),
        str(QUIC / "aioquic-reno-loss-client.qlog.gz"),
        "--algo",
        "reno,cubic",
        "-o",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    assert "The replays are open-loop" in page and "<script" not in page
    # the server's trace: the sender's own window, drawn once, with 2 algorithms x 2 flavors beside it
    assert page.count('class="logged"') == 1 and page.count('class="replay"') == 4
    assert 'data-label="reno[aioquic]"' in page and "verdict: follows reno[aioquic]" in page
    assert "vantage: server (the qlog is the data sender's; data sender: server)" in page
    # the client's trace logs the receiver: stated, nothing drawn as a sender's window
    assert "vantage: client (the qlog is the data receiver's; data sender: server)" in page
    assert page.count("no window drawn") == 1


def test_flows_events_replay_take_a_qlog(tmp_path: Path) -> None:
    q = str(QUIC / "aioquic-reno-loss.qlog.gz")
    r = _run("flows", q, "--json")
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)
    # the counts `hscc-trace qlog` reports for this trace (docs/quic.md): 5320 packets, 5002 ACK
    # frames, 30 losses declared by aioquic and the same 30 by our RFC 9002 §6.1 detection
    assert (row["protocol"], row["vantage"], row["data_sender"]) == ("quic", "server", "server")
    assert (row["packets_sent"], row["ack_frames"], row["losses_stack"], row["losses_ours"]) == (5320, 5002, 30, 30)
    # the link's RTT is 40 ms (make_traces.py): no sample below it
    assert 0.040 <= row["rtt_min_s"] <= row["rtt_median_s"] <= row["rtt_max_s"]
    r = _run("flows", q)
    assert r.returncode == 0 and "1 QUIC connection(s)" in r.stdout and " quic " in r.stdout
    acks = tmp_path / "acks.csv"
    r = _run("events", q, "--flow", "0", "--kind", "acks", "-o", str(acks))
    assert r.returncode == 0, r.stderr
    lines = acks.read_text().splitlines()
    assert "rtt_sample_s" in lines[0] and len(lines) == 1 + 5002  # header + one row per ACK frame
    r = _run("events", q, "--flow", "0", "--kind", "rounds")
    assert r.returncode == 2 and "no 'rounds' stream" in r.stderr and "Traceback" not in r.stderr
    rep = tmp_path / "rep.csv"
    r = _run("replay", q, "--flow", "0", "--algo", "reno,cubic", "--param", "reno.flavor=aioquic", "-o", str(rep))
    assert r.returncode == 0, r.stderr
    # aioquic's own reno, replayed with its departures, is the logged window at every ACK
    assert "1. reno[aioquic]    median   0.00 %" in r.stderr and "2. cubic[rfc]" in r.stderr
    head = rep.read_text().splitlines()
    assert head[0].startswith("algo,t_s,") and len(head) == 1 + 2 * 5002


def test_qlog_replay_api_rejects_bad_params() -> None:
    from hscc_trace.errors import InputError, UsageError

    q = QUIC / "aioquic-reno-loss.qlog.gz"
    with pytest.raises(UsageError, match="ALGO.NAME=VALUE"):
        api.qlog_replay(q, 0, ["reno"], ["flavor=aioquic"])
    with pytest.raises(InputError, match="no connection 3"):
        api.qlog_replay(q, 3, ["reno"])


def test_check_judges_a_qlog_against_the_expected_algorithm(tmp_path: Path) -> None:
    junit = tmp_path / "j.xml"
    res = api.check(
        [
            QUIC / "aioquic-reno-loss.qlog.gz",
            QUIC / "aioquic-cubic-loss.qlog.gz",
            QUIC / "aioquic-reno-loss-client.qlog.gz",
        ],
        api.CheckOptions(expect="reno", max_error=0.10, junit=junit),
    )
    status = [(Path(v.capture).name, v.status) for v in res.verdicts]
    # reno's trace: reno[aioquic] follows the logged window exactly (median 0 <= 0.10) -> pass;
    # cubic's: the best fit is cubic and reno's median is 21 % -> fail; the client's trace logs the
    # receiver -> skipped, never passed
    assert status == [
        ("aioquic-reno-loss.qlog.gz", "pass"),
        ("aioquic-cubic-loss.qlog.gz", "fail"),
        ("aioquic-reno-loss-client.qlog.gz", "skip"),
    ]
    assert res.exit_code == 1 and "best fit cubic[aioquic]" in res.verdicts[1].message
    xml = junit.read_text()
    assert 'tests="3" failures="1" errors="0" skipped="1"' in xml and "expect reno" in xml
    ok = api.check([QUIC / "aioquic-cubic-loss.qlog.gz"], api.CheckOptions(expect="cubic"))
    assert [v.status for v in ok.verdicts] == ["pass"] and ok.exit_code == 0


def test_check_cli_on_a_qlog_exits_by_the_verdict(tmp_path: Path) -> None:
    r = _run("check", str(QUIC / "aioquic-cubic-loss.qlog.gz"), "--expect", "cubic", "--junit", str(tmp_path / "j.xml"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("PASS") and "1 passed, 0 failed, 0 skipped, 0 errors" in r.stdout
    r = _run("check", str(QUIC / "aioquic-cubic-loss.qlog.gz"))
    assert r.returncode == 2 and "--expect reno|cubic" in r.stderr and "Traceback" not in r.stderr


COMMANDS = {
    "analyze": ["analyze", "-q", "{f}", "-o", "{d}/r.html", "--json", "{d}/r.json"],
    "flows": ["flows", "{f}"],
    "events": ["events", "{f}", "--flow", "0", "-o", "{d}/e.csv"],
    "replay": ["replay", "{f}", "--flow", "0", "-o", "{d}/r.csv"],
    "check": ["check", "{f}", "--expect", "reno"],
}


@pytest.fixture(scope="module")
def bad_qlogs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import gzip

    d = tmp_path_factory.mktemp("bad")
    text = gzip.decompress((QUIC / "aioquic-reno-loss.qlog.gz").read_bytes())
    (d / "cut.qlog").write_bytes(text[: len(text) // 3])  # a third of the JSON: cut mid-event
    (d / "junk.qlog").write_bytes(b"\x00\x01 not json {{")
    return {"truncated": d / "cut.qlog", "malformed": d / "junk.qlog"}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_bad_qlog_is_a_warning_with_counts_or_one_line(
    command: str, bad_qlogs: dict[str, Path], tmp_path: Path
) -> None:
    for kind, f in bad_qlogs.items():
        args = [a.format(f=f, d=tmp_path) for a in COMMANDS[command]]
        r = _run(*args)
        err = r.stderr.strip().splitlines()
        assert "Traceback" not in r.stderr, (command, kind, r.stderr)
        if kind == "truncated":  # what precedes the cut is read, and the warning says how much
            assert r.returncode == 0, (command, r.stderr)
            assert err and all(e.startswith("hscc-trace: warning:") for e in err if "warning" in e)
            assert any("cut short or damaged" in e and "read 12007 events" in e for e in err), err
        else:  # nothing to read: one line, exit 2
            assert r.returncode == 2 and len(err) == 1, (command, err)
            assert err[0] == f"hscc-trace: error: {f}: not a qlog file (neither JSON, JSON-SEQ nor NDJSON)"


def test_a_window_no_replay_follows_is_unknown_not_the_best_fit() -> None:
    # Chromium's CUBIC (two-connection emulation): the best replay, reno[aioquic], is 27.56 % off at
    # the median and 66.04 % at p90, far above the 2 % / 5 % a replay must meet to follow the logged
    # window -- so no algorithm is named; aioquic-cubic-loss (0.00 / 0.00 %) is named cubic
    from hscc_trace import qlog

    chromium = qlog.summary(str(QUIC / "external" / "qvis__quictrace_example_github.qlog.gz"), departures=True)
    (conn,) = [c for c in chromium["connections"] if c["replays"]]
    assert conn["best"] == "reno[aioquic]" and conn["median_error"] > qlog.FOLLOW_MEDIAN
    assert conn["algorithm"] is None and conn["verdict"].startswith("unknown: no replay follows")
    cubic = qlog.summary(str(QUIC / "aioquic-cubic-loss.qlog.gz"), departures=True)
    (conn,) = [c for c in cubic["connections"] if c["replays"]]
    assert conn["algorithm"] == "cubic" and conn["verdict"].startswith("follows cubic[aioquic]")
