"""Shared helpers for the capture/flows tests: byte-exact pcap and pcapng writers, corpus paths.

The writers build files by hand (not through scapy or libpcap) so the tests control every
header field: byte order, nanosecond magic, Kuznetzov records, pcapng interfaces with their own
link types and timestamp resolutions. The tests in this module prove the writers produce files
libpcap itself reads identically, so the other tests' inputs are real captures.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

from conftest import EXTERNAL, external  # noqa: E402


def corpus() -> Path | None:
    """The shared external capture corpus (<repo>/../shared/captures/external), or None."""
    return EXTERNAL if EXTERNAL.is_dir() else None


def need_corpus() -> Path:
    return external()


def pcap_bytes(
    records: list[tuple[int, bytes] | tuple[int, bytes, int]],
    linktype: int = 1,
    *,
    nsec: bool = False,
    big_endian: bool = False,
    snaplen: int = 262144,
    modified: bool = False,
) -> bytes:
    """A pcap file: records are (ts_ns, data[, wire_len]); data longer than snaplen is cut."""
    e = ">" if big_endian else "<"
    magic = 0xA1B2CD34 if modified else (0xA1B23C4D if nsec else 0xA1B2C3D4)
    out = [struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)]
    for rec in records:
        ts, data = rec[0], rec[1]
        wire = rec[2] if len(rec) > 2 else len(data)
        cap = data[:snaplen]
        frac = ts % 1_000_000_000 if nsec else (ts % 1_000_000_000) // 1000
        out.append(struct.pack(e + "IIII", ts // 1_000_000_000, frac, len(cap), wire))
        if modified:
            out.append(struct.pack(e + "IHBB", 1, 0x0800, 0, 0))
        out.append(cap)
    return b"".join(out)


def _pad4(b: bytes) -> bytes:
    return b + b"\0" * (-len(b) % 4)


def pcapng_bytes(
    interfaces: list[tuple[int, int | None]],
    packets: list[tuple[int, int, bytes]],
    *,
    big_endian: bool = False,
    simple: list[bytes] | None = None,
) -> bytes:
    """A pcapng file: interfaces are (linktype, if_tsresol byte or None for the default 10^-6);
    packets are Enhanced Packet Blocks (iface, timestamp in that interface's units, data)."""
    e = ">" if big_endian else "<"

    def block(btype: int, body: bytes) -> bytes:
        body = _pad4(body)
        n = 12 + len(body)
        return struct.pack(e + "II", btype, n) + body + struct.pack(e + "I", n)

    out = [block(0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1))]
    for lt, res in interfaces:
        opts = b""
        if res is not None:
            opts = struct.pack(e + "HH", 9, 1) + _pad4(bytes([res])) + struct.pack(e + "HH", 0, 0)
        out.append(block(1, struct.pack(e + "HHI", lt, 0, 0) + opts))
    out.append(block(0x00000005, b"ignored interface statistics"))  # ISB-like block type: skipped
    for iface, ts, data in packets:
        out.append(
            block(6, struct.pack(e + "IIIII", iface, ts >> 32, ts & 0xFFFFFFFF, len(data), len(data)) + _pad4(data))
        )
    for data in simple or []:
        out.append(block(3, struct.pack(e + "I", len(data)) + _pad4(data)))
    return b"".join(out)


def _libpcap_records(path: Path) -> list[tuple[int, int, bytes]]:
    import pcapy

    r = pcapy.open_offline(str(path))
    out = []
    while True:
        hdr, data = r.next()
        if hdr is None:
            break
        sec, usec = hdr.getts()
        out.append((sec * 1_000_000 + usec, hdr.getlen(), bytes(data)))
    return out


def _our_records(path: Path) -> list[tuple[int, int, bytes]]:
    from hscc_trace.capture.reader import ReadInfo, iter_batches

    out = []
    for b in iter_batches(str(path), ReadInfo()):
        for i in range(len(b)):
            o = int(b.off[i])
            out.append((int(b.ts_ns[i]) // 1000, int(b.wire[i]), bytes(b.buf[o : o + int(b.cap[i])])))
    return out


@pytest.mark.parametrize("kw", [{}, {"nsec": True}, {"big_endian": True}, {"nsec": True, "big_endian": True}])
def test_pcap_writer_and_reader_agree_with_libpcap(tmp_path, kw):
    recs = [(1_600_000_000_123_456_789 + i * 1_000_000, bytes(range(i, i + 60)), 60 + i) for i in range(5)]
    p = tmp_path / "x.pcap"
    p.write_bytes(pcap_bytes(recs, snaplen=58, **kw))
    assert _our_records(p) == _libpcap_records(p)
    assert all(len(d) == 58 for _, _, d in _our_records(p))


def test_pcapng_single_linktype_agrees_with_libpcap(tmp_path):
    pk = [(0, 1_600_000_000_000_000 + i, bytes([i]) * 70) for i in range(4)]
    p = tmp_path / "x.pcapng"
    p.write_bytes(pcapng_bytes([(1, None)], pk))
    assert _our_records(p) == _libpcap_records(p)
