"""The qlog importer on public qlog files of other stacks (samples/quic/external/PROVENANCE.md):
each is read without an internal error — connections with a warning at most, or one input error."""

from __future__ import annotations

from pathlib import Path

import pytest

from hscc_trace.errors import InputError
from hscc_trace.qlog import checks
from hscc_trace.qlog import connections as _connections

EXTERNAL = Path(__file__).resolve().parents[2] / "samples" / "quic" / "external"
FILES = sorted(EXTERNAL.glob("*.qlog.gz"))
_READ: dict[str, object] = {}


def connections(path: str):  # each file read once per session (the largest takes ≈ 1.5 s of CPU)
    if path not in _READ:
        try:
            _READ[path] = _connections(path)
        except InputError as exc:
            _READ[path] = exc
    got = _READ[path]
    if isinstance(got, InputError):
        raise got
    return got


def test_the_collection_is_there() -> None:
    assert len(FILES) == 7
    text = (EXTERNAL / "PROVENANCE.md").read_text()
    assert all(f.name in text for f in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_file_is_read_without_an_internal_error(path: Path) -> None:
    try:
        conns, warns = connections(str(path))
    except InputError as exc:
        assert "\n" not in str(exc) and path.name.startswith("pcap2qlog__handshake"), exc  # qlog 0.1
        return
    assert conns and all(c.sent.height + c.acks.height > 0 for c in conns)
    for c in conns:
        c.loss_check()
        checks(c)


def test_chromium_quictrace_agrees_with_our_rfc9002_definitions() -> None:
    # a Chromium server's bulk transfer (draft-00, µs units): its 238 losses are exactly the ones
    # our RFC 9002 §6.1 detection finds, and its logged smoothed / min RTT equal ours (§5)
    (c,), _ = connections(str(EXTERNAL / "qvis__quictrace_example_github.qlog.gz"))
    assert c.vantage == "server" and c.is_sender
    lc = c.loss_check()
    assert lc["stack"] == lc["ours"] == lc["both"] == 238
    ch = checks(c)
    assert ch["smoothed_rtt_median_rel_err"] < 1e-3 and ch["min_rtt_median_rel_err"] < 1e-9


def test_picoquic_reference_every_frame_type() -> None:
    # picoquic's converter test: 77 packets, one per frame type and variant, the packet numbers
    # restarting for each group (counted in a warning, the later packet kept)
    (c,), warns = connections(str(EXTERNAL / "picoquic__binlog_ref.qlog.gz"))
    assert c.vantage == "client" and c.sent.height == 77
    assert [w.count for w in warns if "sent twice" in w.message] == [30]


def test_double_vantage_gives_both_endpoints() -> None:
    conns, _ = connections(str(EXTERNAL / "qvis__doublevantage_100ms.qlog.gz"))
    assert sorted(c.vantage for c in conns) == ["client", "server"]
    (snd,) = [c for c in conns if c.is_sender]
    assert snd.vantage == "server" and snd.data_sender == "server"
    (rcv,) = [c for c in conns if not c.is_sender]
    assert rcv.data_sender == "server"
