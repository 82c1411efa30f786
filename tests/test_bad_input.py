"""Bad input through the real CLI (`hscc-trace flows` in a subprocess): a one-line error and exit
code 2, or a warning with counts and the partial result — never a traceback."""

from __future__ import annotations

import gzip
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from test_capture_support import need_corpus, pcap_bytes

S = pytest.importorskip("scapy.all")
T0 = 1_700_000_000 * 10**9


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hscc_trace", "flows", *args], capture_output=True, text=True, timeout=120
    )


def assert_error(r: subprocess.CompletedProcess, *needles: str) -> None:
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hscc-trace: error: "), r.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def tcp_frames(n: int = 3) -> list[bytes]:
    return [
        bytes(S.Ether() / S.IP(src="10.0.0.1", dst="10.0.0.2") / S.TCP(sport=1, dport=2, flags="PA", seq=1 + i) / b"x")
        for i in range(n)
    ]


def test_missing_file(tmp_path):
    assert_error(run(str(tmp_path / "nope.pcap")), "no such file")


def test_directory(tmp_path):
    assert_error(run(str(tmp_path)), "is a directory")


def test_empty_file(tmp_path):
    (tmp_path / "e.pcap").write_bytes(b"")
    assert_error(run(str(tmp_path / "e.pcap")), "empty file (0 bytes)")


def test_text_file(tmp_path):
    (tmp_path / "notes.txt").write_text("this is not a capture\n" * 10)
    assert_error(run(str(tmp_path / "notes.txt")), "not a pcap/pcapng capture")


def test_gzip_of_text(tmp_path):
    (tmp_path / "t.gz").write_bytes(gzip.compress(b"hello world, no packets here" * 3))
    assert_error(run(str(tmp_path / "t.gz")), "gzip data is not a pcap or pcapng capture")


def test_gzip_cut_short_is_a_warning_with_partial_result(tmp_path):
    good = gzip.compress(pcap_bytes([(T0 + i, f) for i, f in enumerate(tcp_frames(400))]))
    (tmp_path / "c.pcap.gz").write_bytes(good[: len(good) // 2])
    r = run(str(tmp_path / "c.pcap.gz"), "--json")
    assert r.returncode == 0 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert "compressed data ends early (gzip stream cut short)" in lines[0]
    assert all(line.startswith("hscc-trace: warning: ") for line in lines)
    assert 0 < json.loads(r.stdout)[0]["pkts_ab"] < 400


def test_gzip_with_garbage_after_the_header(tmp_path):
    good = gzip.compress(pcap_bytes([(T0, f) for f in tcp_frames(5)]))
    (tmp_path / "g.pcap.gz").write_bytes(good[:10] + b"\xff" * 200)
    assert_error(run(str(tmp_path / "g.pcap.gz")), "corrupt compressed data")


def test_truncated_header(tmp_path):
    (tmp_path / "h.pcap").write_bytes(pcap_bytes([])[:10])
    assert_error(run(str(tmp_path / "h.pcap")), "truncated pcap file header")


def test_truncated_last_record_is_a_warning_with_partial_result(tmp_path):
    raw = pcap_bytes([(T0 + i, f) for i, f in enumerate(tcp_frames(3))])
    (tmp_path / "t.pcap").write_bytes(raw[:-5])
    r = run(str(tmp_path / "t.pcap"), "--json")
    assert r.returncode == 0 and "Traceback" not in r.stderr
    assert (
        r.stderr.strip()
        == f"hscc-trace: warning: {tmp_path / 't.pcap'}: file ends inside record 3 (66 bytes of it present); that record ignored"
    )
    assert [f["pkts_ab"] for f in json.loads(r.stdout)] == [2]


def test_absurd_record_length_in_the_first_record(tmp_path):
    raw = pcap_bytes([]) + struct.pack("<IIII", 1, 0, 500_000_000, 500_000_000) + b"\0" * 64
    (tmp_path / "a.pcap").write_bytes(raw)
    assert_error(run(str(tmp_path / "a.pcap")), "no packets could be read", "absurd captured length")


def test_absurd_record_length_later_keeps_the_packets_before(tmp_path):
    raw = pcap_bytes([(T0, f) for f in tcp_frames(2)]) + struct.pack("<IIII", 1, 0, 500_000_000, 60) + b"\0" * 64
    (tmp_path / "a2.pcap").write_bytes(raw)
    r = run(str(tmp_path / "a2.pcap"), "--json")
    assert r.returncode == 0 and "record 3 claims an absurd captured length" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert [f["pkts_ab"] for f in json.loads(r.stdout)] == [2]


def test_unknown_link_type(tmp_path):
    (tmp_path / "u.pcap").write_bytes(pcap_bytes([(T0, b"\x01" * 64)], linktype=147))
    assert_error(run(str(tmp_path / "u.pcap")), "no TCP packets", "unsupported link type 147: 1")


def test_no_tcp(tmp_path):
    udp = [bytes(S.Ether() / S.IP() / S.UDP() / b"q"), bytes(S.Ether() / S.ARP())]
    (tmp_path / "udp.pcap").write_bytes(pcap_bytes([(T0, f) for f in udp]))
    assert_error(run(str(tmp_path / "udp.pcap")), "no TCP packets among 2 records", "IP but not TCP (UDP, ICMP, …): 1")


def test_some_non_tcp_is_a_counted_warning(tmp_path):
    frames = tcp_frames(2) + [bytes(S.Ether() / S.IP() / S.UDP())] * 3
    (tmp_path / "mix.pcap").write_bytes(pcap_bytes([(T0, f) for f in frames]))
    r = run(str(tmp_path / "mix.pcap"))
    assert r.returncode == 0
    assert (
        r.stderr.strip() == f"hscc-trace: warning: {tmp_path / 'mix.pcap'}: skipped: IP but not TCP (UDP, ICMP, …) (3×)"
    )


def test_invalid_filter(tmp_path):
    (tmp_path / "f.pcap").write_bytes(pcap_bytes([(T0, f) for f in tcp_frames()]))
    assert_error(run(str(tmp_path / "f.pcap"), "--filter", "tcp port"), "invalid --filter 'tcp port'")


def test_filter_matches_nothing(tmp_path):
    (tmp_path / "f.pcap").write_bytes(pcap_bytes([(T0, f) for f in tcp_frames()]))
    assert_error(
        run(str(tmp_path / "f.pcap"), "--filter", "udp"), "no packet matches the filter 'udp' (3 packets read)"
    )


def test_pcapng_with_bad_section_header(tmp_path):
    (tmp_path / "b.pcapng").write_bytes(b"\x0a\x0d\x0d\x0a" + b"\xff" * 40)
    assert_error(run(str(tmp_path / "b.pcapng")))


@pytest.mark.parametrize(
    "name,rc,needle",
    [
        ("ODD__mlab-packet-headers__v6-cut-short.pcap", 0, "file ends inside record 9"),
        ("ODD__ndpi__fuzz-2021-10-13.pcap", 2, "absurd captured length"),
        ("ODD__ns3__ns3tcp-loss-NewReno4-response-vectors.pcap", 2, "unsupported link type field 0x46c5e1f5"),
        ("ODD__pcap-parser__modified-format.pcap", 2, "no TCP packets among 1 records"),
        ("ODD__tcpdump__heapoverflow-tcp_print.pcap", 0, ""),
    ],
)
def test_odd_corpus_files(name, rc, needle):
    path: Path = need_corpus() / name
    r = run(str(path))
    assert r.returncode == rc and "Traceback" not in r.stderr
    if rc == 2:
        assert_error(r, needle)
    else:
        assert needle in r.stderr
        assert len(r.stderr.strip().splitlines()) <= 1
