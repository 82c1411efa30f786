"""Hostile input through the real CLI: the fuzzing reproducers (tests/fuzz_corpus/, each of which
once made a command fail with an internal error), partly read captures under `check`, pipes,
odd file names, atomic writes, the exit-code table and gzip problems.

Every command runs in a subprocess (``python -m hscc_trace``), as a user runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "fuzz_corpus"
SAMPLE = REPO / "samples" / "reno-bdp" / "capture.pcap"


def cli(
    *args: str, stdin: bytes | None = None, cwd: Path | None = None, env: dict | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """``hscc-trace ARGS`` in a subprocess; stdout/stderr as text (undecodable bytes escaped)."""
    import os

    e = dict(os.environ)
    e.pop("HSCC_TRACE_DEBUG", None)
    e.pop("GITHUB_ACTIONS", None)
    e.update(env or {})
    r = subprocess.run(
        [sys.executable, "-m", "hscc_trace", *args], input=stdin, capture_output=True, cwd=cwd, env=e, timeout=timeout
    )
    return subprocess.CompletedProcess(
        r.args, r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")
    )


def no_traceback(r: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in r.stderr, r.stderr
    assert "internal error" not in r.stderr, r.stderr


def one_error_line(r: subprocess.CompletedProcess, code: int = 2) -> str:
    """The single ``hscc-trace: error:`` line of a failed command (nothing else on stderr)."""
    assert r.returncode == code, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hscc-trace: error: "), r.stderr
    return lines[0]


# --- 1. window scale above 127 / options of the wrong length (fuzz reproducers) -------------------


def test_wscale_128_is_used_as_14_with_a_warning_naming_the_raw_value():
    # wscale128.pcap: Ethernet/IPv4 handshake; the SYN (from A) announces shift 128, the
    # SYN/ACK (from B) 7. RFC 7323 §2.3: a shift above 14 is used as 14. Before: flows printed
    # 128 (an Int8 column) and events exited 70.
    r = cli("flows", str(CORPUS / "wscale128.pcap"), "--json")
    no_traceback(r)
    assert r.returncode == 0
    (row,) = json.loads(r.stdout)
    assert (row["wscale_a"], row["wscale_b"]) == (14, 7)
    warn = [ln for ln in r.stderr.splitlines() if "window-scale" in ln]
    assert len(warn) == 1 and "flow 0 A: 128" in warn[0] and "used as 14" in warn[0], r.stderr


def test_wscale_on_the_scapy_path_and_the_raw_value_in_the_packet_table():
    from hscc_trace import api

    cap = api.load(CORPUS / "ppp_wscale200.pcap")  # PPP: decoded by scapy
    assert cap.meta.decoded_by.get("scapy", 0) > 0
    assert cap.flows.row(0, named=True)["wscale_a"] == 14
    syn = cap.packets.filter(cap.packets["flags"] == 0x02)
    assert syn["opt_wscale"].to_list() == [200]  # the value on the wire is kept (UInt8)
    assert any("flow 0 A: 200" in str(w) for w in cap.warnings)


@pytest.mark.parametrize("name,column", [("ppp_mss_len2.pcap", "opt_mss"), ("ppp_wscale_len2.pcap", "opt_wscale")])
def test_option_of_the_wrong_length_is_ignored_on_the_scapy_path(name, column):
    # An MSS option of length 2 (RFC 9293: length 4) or a window-scale option of length 2
    # (RFC 7323: length 3) made scapy hand b'' to an integer column (polars ComputeError).
    from hscc_trace import api

    cap = api.load(CORPUS / name)
    syn = cap.packets.filter(cap.packets["flags"] == 0x02)
    assert syn.height == 1 and syn[column].to_list() == [None]


@pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.glob("*.pcap")))
def test_reproducers_give_an_answer_in_every_command(name, tmp_path):
    f = str(CORPUS / name)
    for args in (
        ["flows", f],
        ["events", f, "--flow", "0", "--kind", "acks", "-o", str(tmp_path / "e.csv")],
        ["replay", f, "--flow", "0", "--algo", "reno", "-o", str(tmp_path / "r.csv")],
    ):
        r = cli(*args)
        no_traceback(r)
        assert r.returncode == 0, (args, r.stderr)


def test_reproducers_through_analyze_and_check(tmp_path):
    files = [str(p) for p in sorted(CORPUS.glob("*.pcap"))]
    r = cli("analyze", *files, "--algo", "reno", "--json", str(tmp_path / "r.json"), "-q")
    no_traceback(r)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [c.get("error") for c in doc["captures"]] == [None] * len(files)
    r = cli("check", *files, "--expect", "reno")
    no_traceback(r)
    assert r.returncode == 1  # handshake-only or one-segment captures: "nothing could be verified" fails
    assert "nothing could be verified" in r.stdout


# --- 2. check never silently judges a partly read capture ----------------------------------------


def garbage_in_the_middle(tmp_path: Path) -> tuple[Path, int, int]:
    """The reno-bdp sample with 4096 bytes of 0xff inserted after the record that ends past the
    middle of the file: (path, records before the garbage, bytes from the garbage to the end)."""
    import struct

    b = SAMPLE.read_bytes()
    pos, n = 24, 0
    while pos < len(b) // 2:
        pos += 16 + struct.unpack("<I", b[pos + 8 : pos + 12])[0]
        n += 1
    out = tmp_path / "garbage.pcap"
    out.write_bytes(b[:pos] + b"\xff" * 4096 + b[pos:])
    return out, n, len(b) - pos + 4096


def test_check_reports_a_partly_read_capture_everywhere(tmp_path):
    cap, before, lost = garbage_in_the_middle(tmp_path)
    summary = tmp_path / "summary.md"
    r = cli(
        "check",
        str(cap),
        "--expect",
        "reno",
        "--allow-ambiguous",  # (half of reno-bdp: reno and hrf-ci differ in too few rounds to be ranked)
        "--junit",
        str(tmp_path / "j.xml"),
        env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)},
    )
    no_traceback(r)
    assert r.returncode == 0  # warned, not failed: --strict is off by default (docs/ci.md)
    # the first record of the garbage is record before+1: 0xffffffff claims 4 GiB
    what = f"record {before + 1} claims an absurd captured length"
    # bytes not read: the garbage and everything after it; records: bytes ÷ mean record size so far
    mean = (cap.stat().st_size - lost - 24) / before
    counts = f"{lost} bytes, about {round(lost / mean)} records not read"
    warn = [ln for ln in r.stderr.splitlines() if ln.startswith("hscc-trace: warning:")]
    assert len(warn) == 1 and what in warn[0] and counts in warn[0], r.stderr
    assert f"PASS  {cap}" in r.stdout and "[capture only partly read: " + what in r.stdout
    import xml.etree.ElementTree as ET

    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    assert counts in suite.find("system-err").text
    case = suite.find("testcase")
    assert counts in case.find("system-out").text
    ann = [ln for ln in r.stdout.splitlines() if ln.startswith("::warning ")]
    assert len(ann) == 1 and counts in ann[0]
    assert "only partly read" in summary.read_text() and counts in summary.read_text()


def test_check_strict_fails_a_partly_read_capture(tmp_path):
    cap, _, lost = garbage_in_the_middle(tmp_path)
    r = cli("check", str(cap), "--expect", "reno", "--allow-ambiguous", "--strict", "--junit", str(tmp_path / "j.xml"))
    no_traceback(r)
    assert r.returncode == 1
    assert f"FAIL  {cap} [read capture (--strict)]: capture only partly read" in r.stdout
    assert f"{lost} bytes" in r.stdout
    assert 'failures="1"' in (tmp_path / "j.xml").read_text()
    # a capture read to its end passes under --strict
    r = cli("check", str(SAMPLE), "--expect", "reno", "--strict", "-q")
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_results_json_records_what_was_lost(tmp_path):
    cap, _, lost = garbage_in_the_middle(tmp_path)
    r = cli("analyze", str(cap), "--algo", "reno", "--json", str(tmp_path / "r.json"), "-q")
    assert r.returncode == 0, r.stderr
    (w,) = json.loads((tmp_path / "r.json").read_text())["captures"][0]["warnings"]
    assert w["lost"]["bytes"] == lost and w["lost"]["records"] > 0


# --- 7. gzip ------------------------------------------------------------------------------------------


def test_gzip_with_a_bad_crc_keeps_the_result_with_a_warning_naming_the_file_and_counts(tmp_path):
    import gzip

    data = SAMPLE.read_bytes()
    g = bytearray(gzip.compress(data))
    g[-8] ^= 0xFF  # the CRC-32 of the gzip trailer (RFC 1952 §2.3)
    f = tmp_path / "crc.pcap.gz"
    f.write_bytes(bytes(g))
    r = cli("flows", str(f), "--json")
    no_traceback(r)
    assert r.returncode == 0
    ok = json.loads(cli("flows", str(SAMPLE), "--json").stdout)
    assert json.loads(r.stdout) == ok  # every record was delivered before the trailer check failed
    (line,) = r.stderr.splitlines()
    assert line.startswith(f"hscc-trace: warning: {f}: gzip: corrupt compressed data (CRC check failed")
    assert f"after {len(data)} decompressed bytes (13207 records)" in line


def test_gzip_holding_an_empty_file_says_so(tmp_path):
    import gzip

    f = tmp_path / "empty.pcap.gz"
    f.write_bytes(gzip.compress(b""))
    for cmd in (["flows", str(f)], ["analyze", str(f), "-q"]):
        line = one_error_line(cli(*cmd))
        assert f"{f}: gzip holds an empty file" in line, line


# --- 6. exit codes: one table (docs/exit-codes.md), a test per command ----------------------------

COMMANDS = ("flows", "events", "replay", "analyze", "check", "algorithms", "version")


@pytest.mark.parametrize("cmd", COMMANDS)
def test_usage_error_is_one_line_exit_2(cmd):
    r = cli(cmd, "--bogus-option")
    line = one_error_line(r, 2)
    assert "No such option: --bogus-option" in line and f"'hscc-trace {cmd} --help'" in line
    assert r.stdout == ""


def test_missing_argument_and_bad_value_are_one_line():
    assert "Missing argument 'FILE_OR_DIR...'" in one_error_line(cli("analyze"), 2)
    assert "Invalid value for '--flow'" in one_error_line(cli("events", str(SAMPLE), "--flow", "x"), 2)
    assert "No such command 'nope'" in one_error_line(cli("nope"), 2)


def test_help_is_still_rendered():
    r = cli("--help")
    assert r.returncode == 0 and "Usage: hscc-trace" in r.stdout and "analyze" in r.stdout
    r = cli("check", "--help")
    assert r.returncode == 0 and "--strict" in r.stdout
    r = cli()  # no arguments: the help, exit 2
    assert r.returncode == 2 and "Usage: hscc-trace" in r.stdout + r.stderr


@pytest.mark.parametrize("cmd", ["flows", "events", "replay", "analyze", "check"])
def test_input_error_is_one_line_exit_2(cmd, tmp_path):
    extra = {
        "events": ["--flow", "0"],
        "replay": ["--flow", "0"],
        "check": ["--expect", "reno"],
        "analyze": ["-q"],
    }.get(cmd, [])
    line = one_error_line(cli(cmd, str(tmp_path / "missing.pcap"), *extra), 2)
    assert "missing.pcap: no such file" in line


def _in_process(monkeypatch, argv: list[str]) -> int:
    from hscc_trace import cli as cli_mod

    monkeypatch.delenv("HSCC_TRACE_DEBUG", raising=False)
    monkeypatch.setattr(sys, "argv", ["hscc-trace", *argv])
    with pytest.raises(SystemExit) as ei:
        cli_mod.main()
    return ei.value.code


@pytest.mark.parametrize("cmd", ["flows", "events", "replay", "analyze", "check"])
def test_internal_error_is_one_line_exit_70(cmd, monkeypatch, capsys):
    # a bug (here: a polars-like message over three lines) is exit 70 and one line in every
    # command; analyze and check exited 2 before
    import hscc_trace.flows.ingest as capture
    import hscc_trace.flows.scan as flowscan

    def boom(*a, **k):
        raise RuntimeError("could not append value: 128 of type: i64 to the builder\n\nHint: try\n  cast")

    monkeypatch.setattr(capture, "load", boom)
    monkeypatch.setattr(flowscan, "flow_rows", boom)
    extra = {
        "events": ["--flow", "0"],
        "replay": ["--flow", "0", "--algo", "reno"],
        "check": ["--expect", "reno"],
        "analyze": ["-q", "--algo", "reno"],
    }.get(cmd, [])
    code = _in_process(monkeypatch, [cmd, str(SAMPLE), *extra])
    err = capsys.readouterr().err
    assert code == 70, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hscc-trace: ") and "internal error" in lines[0], err
    assert "could not append value: 128" in lines[0] and "Hint" not in lines[0]


def test_exit_code_table_is_documented_and_linked():
    doc = (REPO / "docs" / "exit-codes.md").read_text()
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 70 |"):
        assert code in doc
    assert "docs/exit-codes.md" in (REPO / "README.md").read_text()


# --- 4. file names: not UTF-8, too long -------------------------------------------------------------


def odd_name(tmp_path: Path) -> tuple[bytes, Path]:
    """A copy of the sample under a name that is not UTF-8 (Latin-1 é and a lone 0xff byte)."""
    import os
    import shutil

    raw = b"caf\xe9-\xff.pcap"
    target = os.path.join(os.fsencode(tmp_path), raw)
    shutil.copyfile(SAMPLE, target)
    return raw, Path(os.fsdecode(target))  # str with surrogates, as Python gets it from argv


def test_non_utf8_name_in_results_report_and_junit(tmp_path):
    import os

    raw, f = odd_name(tmp_path)
    out = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"out-\xff.json"))
    r = cli(
        "analyze",
        str(f),
        "--algo",
        "reno",
        "--json",
        out,
        "-o",
        str(tmp_path / "r.html"),
        "-q",
        env={"PYTHONIOENCODING": "utf-8"},
    )  # a strict stdout, as outside a UTF-8 locale
    no_traceback(r)
    assert r.returncode == 0, r.stderr
    doc = json.loads(Path(out).read_bytes())  # was "internal error (UnicodeEncodeError)" and a 0-byte file
    cap = doc["captures"][0]
    assert cap["name"] == "caf\ufffd-\ufffd.pcap" and cap["path"].endswith("caf\ufffd-\ufffd.pcap")
    assert bytes.fromhex(cap["path_hex"]) == os.fsencode(f)
    assert "caf\ufffd-\ufffd.pcap" in (tmp_path / "r.html").read_text(encoding="utf-8")
    from hscc_trace.analysis import results

    results.validate(doc)
    r = cli("check", str(f), "--expect", "reno", "--junit", str(tmp_path / "j.xml"), env={"PYTHONIOENCODING": "utf-8"})
    assert r.returncode == 0, r.stderr
    assert "caf\ufffd-\ufffd.pcap" in (tmp_path / "j.xml").read_text(encoding="utf-8")
    r = cli("flows", str(f), env={"PYTHONIOENCODING": "utf-8"})
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_over_long_names_are_one_line_errors(tmp_path):
    long = str(tmp_path / ("a" * 300 + ".pcap"))
    for cmd in (
        ["flows", long],
        ["events", long, "--flow", "0"],
        ["analyze", long, "-q"],
        ["check", long, "--expect", "reno"],
    ):
        line = one_error_line(cli(*cmd), 2)
        assert "file name too long (305 bytes in one name; file systems allow 255)" in line, line
    # an output name too long: one line, no file left behind (not even the temporary one)
    out = tmp_path / ("b" * 300 + ".json")
    r = cli("analyze", str(CORPUS / "wscale128.pcap"), "--algo", "reno", "-q", "--json", str(out))
    line = one_error_line(r, 2)
    assert "cannot write results (File name too long)" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# --- 5. atomic writes ------------------------------------------------------------------------------


def test_a_failed_write_leaves_the_previous_file_and_no_temporary(tmp_path):
    from hscc_trace import atomic
    from hscc_trace.errors import InputError

    target = tmp_path / "results.json"
    target.write_text("previous")

    def half_then_fail(p: Path) -> None:
        p.write_text('{"half": ')
        raise OSError(28, "No space left on device")

    with pytest.raises(InputError, match=r"results.json: cannot write results \(No space left on device\)"):
        atomic.write_with(target, half_then_fail, "results")
    assert target.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
    with pytest.raises(KeyboardInterrupt):  # any exception: the temporary file goes
        atomic.write_with(tmp_path / "new.json", lambda p: (_ for _ in ()).throw(KeyboardInterrupt()))
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
    atomic.write_text(target, "new")
    assert target.read_text() == "new"


def test_atomic_writes_keep_permissions_and_write_devices_in_place(tmp_path):
    import os

    from hscc_trace import atomic

    old = os.umask(0o022)
    try:
        atomic.write_text(tmp_path / "a.txt", "x")
        assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600
        (tmp_path / "b.txt").write_text("y")
        os.chmod(tmp_path / "b.txt", 0o640)
        atomic.write_text(tmp_path / "b.txt", "z")
        assert (tmp_path / "b.txt").stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)
    r = cli("analyze", str(CORPUS / "wscale128.pcap"), "--algo", "reno", "-q", "--json", "/dev/stdout")
    assert r.returncode == 0 and json.loads(r.stdout)["captures"][0]["flows_total"] == 1


@pytest.mark.parametrize(
    "text",
    ["abc" * 10, "é" * 20 + "x", "ab\udcc3\udca9cd" * 5, "x" * 6 + "\udcc3" + "\udca9" + "y" * 20, "\udcff" * 30],
)
def test_a_long_text_written_in_pieces_is_the_same_bytes(tmp_path, monkeypatch, text):
    # pieces of 7 characters: a lone surrogate (two that make a valid UTF-8 sequence once
    # escaped, split across pieces or not) is written as the whole text would be
    from hscc_trace import atomic

    monkeypatch.setattr(atomic, "TEXT_CHUNK", 7)
    atomic.write_text(tmp_path / "t.txt", text)
    want = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace").encode("utf-8")
    assert (tmp_path / "t.txt").read_bytes() == want
    for cut in range(0, len(text), 5):  # the same text in two pieces, cut anywhere
        atomic.write_texts(tmp_path / "u.txt", [text[:cut], "", text[cut:]])
        assert (tmp_path / "u.txt").read_bytes() == want


def test_every_writer_goes_through_the_atomic_helper():
    # results JSON, the HTML report, JUnit, exports and event tables: no direct writes left
    import re

    for rel in (
        "hscc_trace/analysis/results.py",
        "reports/html.py",
        "hscc_trace/api.py",
        "hscc_trace/analysis/export.py",
    ):
        src = (REPO / rel).read_text()
        assert "hscc_trace.atomic import" in src, rel
        assert not re.search(r"\.write_text\(|\.write_bytes\(|write_(parquet|csv|json|ndjson)\((p|out|path)\b", src), (
            rel
        )


# --- 3. pipes and standard input -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["-", "/dev/stdin"])
def test_every_command_reads_a_pipe(name, tmp_path):
    # before: "File or stream is not seekable" (exit 70) on /dev/stdin, and "-" was a file name
    data = SAMPLE.read_bytes()
    ref = json.loads(cli("flows", str(SAMPLE), "--json").stdout)
    r = cli("flows", name, "--json", stdin=data)
    assert r.returncode == 0 and json.loads(r.stdout) == ref, r.stderr
    r = cli("events", name, "--flow", "0", "--kind", "acks", "-o", str(tmp_path / "e.csv"), stdin=data)
    assert r.returncode == 0, r.stderr
    ref_ev = cli("events", str(SAMPLE), "--flow", "0", "--kind", "acks", "-o", "-")
    assert (tmp_path / "e.csv").read_text() == ref_ev.stdout
    r = cli("replay", name, "--flow", "0", "--algo", "reno", "-o", str(tmp_path / "r.csv"), stdin=data)
    assert r.returncode == 0 and "1. reno" in r.stderr, r.stderr
    r = cli("analyze", name, "--algo", "reno", "-q", "--json", str(tmp_path / "a.json"), stdin=data)
    assert r.returncode == 0, r.stderr
    cap = json.loads((tmp_path / "a.json").read_text())["captures"][0]
    assert cap["path"] == name and cap["blake3"] is None and cap["flows"][0]["best"] == "reno"
    r = cli("check", name, "--expect", "reno", "--jobs", "2", stdin=data)  # (the hashing lane skips a pipe)
    assert r.returncode == 0 and r.stdout.startswith(f"PASS  {name} flow 0"), r.stdout + r.stderr


def test_pipe_of_gzip_and_of_a_capture_that_needs_scapy():
    import gzip

    r = cli("flows", "-", "--json", stdin=gzip.compress(SAMPLE.read_bytes()))
    assert r.returncode == 0 and json.loads(r.stdout)[0]["pkts_ab"] == 8529
    # PPP: decoded by scapy, which the fast path hands over by reading the file again — not a pipe
    r = cli("flows", "-", "--json", stdin=(CORPUS / "ppp_wscale200.pcap").read_bytes())
    assert r.returncode == 0 and json.loads(r.stdout)[0]["wscale_a"] == 14, r.stderr


def test_bad_input_on_a_pipe_is_one_line():
    assert "-: empty file (0 bytes)" in one_error_line(cli("flows", "-", stdin=b""))
    assert "-: not a pcap/pcapng capture" in one_error_line(cli("flows", "-", stdin=b"hello, world\n" * 10))


def test_strict_from_the_configuration(tmp_path):
    cap, _, _ = garbage_in_the_middle(tmp_path)
    (tmp_path / "hscc-trace.toml").write_text('[check]\nexpect = "reno"\nstrict = true\nallow_ambiguous = true\n')
    r = cli("check", str(cap), "-q", cwd=tmp_path)
    assert r.returncode == 1 and "[read capture (--strict)]" in r.stdout, r.stdout + r.stderr
    r = cli("check", str(cap), "-q", "--no-strict", cwd=tmp_path)  # the command line wins
    assert r.returncode == 0, r.stdout + r.stderr
