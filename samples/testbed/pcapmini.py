"""A minimal, dependency-free (numpy only) reader for the testbed's own captures.

Used by the testbed (ISN, clock alignment, capture summaries) and by tests/test_samples.py so
that neither depends on the analyzer under test. It reads classic pcap (µs or ns timestamps,
either byte order) with link types RAW (101/12/228, what tcpdump writes on a tun device),
IPv4 (228) and Ethernet (1), IPv4 TCP only; anything else is counted in ``skipped``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PKT_DTYPE = np.dtype(
    [
        ("ts_ns", "i8"),
        ("src", "u4"),
        ("dst", "u4"),
        ("sport", "u2"),
        ("dport", "u2"),
        ("seq", "u4"),
        ("ack", "u4"),
        ("flags", "u2"),
        ("win", "u2"),
        ("payload", "u4"),
        ("wire_len", "u4"),
    ]
)
SYN, ACK_FLAG, FIN, RST = 0x02, 0x10, 0x01, 0x04


@dataclass
class Pcap:
    linktype: int
    snaplen: int
    nanosecond: bool
    packets: np.ndarray  # PKT_DTYPE, IPv4 TCP packets in file order
    skipped: int  # records that were not IPv4/TCP (or too short to decode)


def ip_to_int(a: str) -> int:
    b = [int(x) for x in a.split(".")]
    return (b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]


def read(path: str | Path) -> Pcap:
    data = Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":  # gzip-compressed capture (capture.pcap.gz)
        import gzip

        data = gzip.decompress(data)
    if len(data) < 24:
        raise ValueError(f"{path}: too short for a pcap header")
    magic = data[:4]
    table = {
        b"\xd4\xc3\xb2\xa1": ("<", False),
        b"\xa1\xb2\xc3\xd4": (">", False),
        b"\x4d\x3c\xb2\xa1": ("<", True),
        b"\xa1\xb2\x3c\x4d": (">", True),
    }
    if magic not in table:
        raise ValueError(f"{path}: not a classic pcap file (magic {magic.hex()})")
    bo, nano = table[magic]
    _, _, _, _, snaplen, linktype = struct.unpack_from(bo + "HHiIII", data, 4)
    linktype &= 0xFFFF
    if linktype in (101, 12, 228):
        l2 = 0
    elif linktype == 1:
        l2 = 14
    else:
        raise ValueError(f"{path}: unsupported link type {linktype}")
    rows = []
    skipped = 0
    off = 24
    rec = struct.Struct(bo + "IIII")
    mult = 1 if nano else 1000
    n = len(data)
    while off + 16 <= n:
        sec, frac, incl, orig = rec.unpack_from(data, off)
        off += 16
        pkt = data[off : off + incl]
        off += incl
        p = pkt[l2:]
        if l2 and pkt[12:14] != b"\x08\x00":
            skipped += 1
            continue
        if len(p) < 40 or p[0] >> 4 != 4 or p[9] != 6:
            skipped += 1
            continue
        ihl = (p[0] & 15) * 4
        tot = (p[2] << 8) | p[3]
        if len(p) < ihl + 20:
            skipped += 1
            continue
        src, dst = struct.unpack_from(">II", p, 12)
        sport, dport, seq, ack, off_flags, win = struct.unpack_from(">HHIIHH", p, ihl)
        thl = (off_flags >> 12) * 4
        rows.append(
            (
                sec * 1_000_000_000 + frac * mult,
                src,
                dst,
                sport,
                dport,
                seq,
                ack,
                off_flags & 0x1FF,
                win,
                max(tot - ihl - thl, 0),
                orig,
            )
        )
    return Pcap(linktype, snaplen, nano, np.array(rows, dtype=PKT_DTYPE), skipped)


def unwrap_rel(raw: np.ndarray, isn: int) -> np.ndarray:
    """Sequence numbers relative to ``isn`` (first payload byte = 1), unwrapped to int64.

    Each value is taken modulo 2**32 relative to the ISN, then successive values are unwrapped
    so that no step exceeds ±2**31 (RFC 1982 serial-number arithmetic).
    """
    rel = (raw.astype(np.int64) - int(isn)) & 0xFFFFFFFF
    if rel.size < 2:
        return rel
    d = np.diff(rel)
    step = np.where(d < -(1 << 31), 1, np.where(d > (1 << 31), -1, 0))
    return rel + np.concatenate([[0], np.cumsum(step)]) * (1 << 32)


def flow_packets(pc: Pcap, src: int, sport: int, dst: int, dport: int) -> tuple[np.ndarray, np.ndarray]:
    """(data-direction packets, reverse-direction packets) of one connection."""
    p = pc.packets
    fwd = p[(p["src"] == src) & (p["sport"] == sport) & (p["dst"] == dst) & (p["dport"] == dport)]
    rev = p[(p["src"] == dst) & (p["sport"] == dport) & (p["dst"] == src) & (p["dport"] == sport)]
    return fwd, rev


def isn_of(fwd: np.ndarray) -> int | None:
    syn = fwd[(fwd["flags"] & SYN) != 0]
    return int(syn["seq"][0]) if len(syn) else None


def summarize(fwd: np.ndarray, isn: int) -> dict[str, float | int]:
    """Throughput and retransmission counts of the data direction, from the capture alone.

    A data segment is a retransmission when its end does not exceed the highest sequence
    end sent before it (covers fast retransmits, RTO retransmits and spurious ones).
    """
    data = fwd[fwd["payload"] > 0]
    if len(data) == 0:
        return {"data_segments": 0, "retransmitted_segments": 0, "unique_bytes": 0, "throughput_bps": 0.0}
    seq = unwrap_rel(data["seq"], isn)
    end = seq + data["payload"].astype(np.int64)
    prev_max = np.maximum.accumulate(np.concatenate([[0], end[:-1]]))
    retrans = end <= prev_max
    unique = int(end.max() - seq.min())
    dur = (int(data["ts_ns"][-1]) - int(data["ts_ns"][0])) / 1e9
    return {
        "data_segments": int(len(data)),
        "retransmitted_segments": int(retrans.sum()),
        "unique_bytes": unique,
        "duration_s": dur,
        "throughput_bps": unique * 8 / dur if dur > 0 else 0.0,
        "max_payload": int(data["payload"].max()),
    }
