#!/usr/bin/env python3
"""Generate the synthetic TCP edge-case captures in this folder (deterministic; scapy).

Run from the repository root:  ``python samples/synthetic/make_synthetic.py``

Each scenario is a short hand-written conversation between A = 10.0.0.1:40000 and
B = 10.0.0.2:5201 with MSS 1000 bytes, so that every expected value in
tests/events/test_events_synthetic.py can be worked out by hand. Packets are built with scapy
(Ether/IP/TCP with real options and checksums) and written as nanosecond pcap by the small
writer below, which can also truncate records to a snapshot length and write timestamps in any
order (scapy's writer can do neither). The README next to this script lists the scenarios.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether

HERE = Path(__file__).resolve().parent
A = ("10.0.0.1", 40000, "02:00:00:00:00:01")
B = ("10.0.0.2", 5201, "02:00:00:00:00:02")
MSS = 1000
M32 = 2**32


def write_pcap(path: Path, records: list[tuple[float, bytes]], snaplen: int = 262144) -> None:
    """Nanosecond pcap (magic a1b23c4d), Ethernet; each record cut to ``snaplen`` bytes."""
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, snaplen, 1))
        for t, raw in records:
            ns = int(round(t * 1e9))
            sec, nsec = divmod(ns + 1_700_000_000 * 10**9, 10**9)
            cap = raw[:snaplen]
            fh.write(struct.pack("<IIII", sec, nsec, len(cap), len(raw)))
            fh.write(cap)


class Conv:
    """One connection. ``t`` in seconds; ``rel`` sequence numbers relative to each side's ISN."""

    def __init__(self, isn_a: int, isn_b: int, ts: bool = True, sack: bool = True, ws: int | None = 7):
        self.isn = {0: isn_a, 1: isn_b}
        self.ts = ts
        self.sack = sack
        self.ws = ws
        self.last_tsval = {0: 0, 1: 0}
        self.records: list[tuple[float, bytes]] = []

    def tsval(self, d: int, t: float) -> int:
        # 1 kHz timestamp clocks with different offsets per side (RFC 7323 §5.4)
        return (1000 if d == 0 else 500000) + int(t * 1000 + 1e-9)

    def pkt(
        self,
        t: float,
        d: int,
        flags: str,
        seq: int,
        ack: int = 0,
        length: int = 0,
        win: int = 500,
        sack: list[tuple[int, int]] | None = None,
        ecn: int = 0,
        syn_opts: bool = False,
        tsval: int | None = None,
        tsecr: int | None = None,
    ) -> None:
        """``seq`` relative to the sender's ISN, ``ack`` (and SACK edges) relative to the peer's."""
        src, dst = (A, B) if d == 0 else (B, A)
        opts: list = []
        if syn_opts:
            opts += [("MSS", MSS)]
            if self.ws is not None:
                opts += [("WScale", self.ws)]
            if self.sack:
                opts += [("SAckOK", b"")]
        if self.ts:
            tv = self.tsval(d, t) if tsval is None else tsval
            te = self.last_tsval[1 - d] if tsecr is None else tsecr
            if "A" not in flags:
                te = 0
            opts += [("Timestamp", (tv % M32, te % M32))]
            self.last_tsval[d] = tv
        if sack:
            opts += [("SAck", tuple((self.isn[1 - d] + x) % M32 for lr in sack for x in lr))]
        p = (
            Ether(src=src[2], dst=dst[2])
            / IP(src=src[0], dst=dst[0], tos=ecn, id=len(self.records))
            / TCP(
                sport=src[1],
                dport=dst[1],
                flags=flags,
                seq=(self.isn[d] + seq) % M32,
                ack=(self.isn[1 - d] + ack) % M32 if "A" in flags else 0,
                window=win,
                options=opts,
            )
            / (b"x" * length)
        )
        self.records.append((t, bytes(p)))

    def handshake(self, t_syn: float, t_synack: float, t_ack: float, ecn: bool = False) -> None:
        self.pkt(t_syn, 0, "SEC" if ecn else "S", 0, win=64240, syn_opts=True)
        self.pkt(t_synack, 1, "SAE" if ecn else "SA", 0, 1, win=65000, syn_opts=True)
        self.pkt(t_ack, 0, "A", 1, 1, win=502)


# --------------------------------------------------------------------------------------------
# Scenarios (the expected values are worked out in tests/events/test_events_synthetic.py)
# --------------------------------------------------------------------------------------------


def sack_recovery() -> Conv:
    """One loss (segment 3 of 6), three SACKed duplicate ACKs, fast retransmit, recovery."""
    c = Conv(1000, 5000)
    c.handshake(0.0, 0.050, 0.0501)
    for k in range(6):
        c.pkt(0.0502 + k * 0.0001, 0, "A", 1 + k * MSS, 1, MSS)
    c.pkt(0.1002, 1, "A", 1, 1001)
    c.pkt(0.1003, 1, "A", 1, 2001)
    c.pkt(0.1004, 1, "A", 1, 2001, sack=[(3001, 4001)])
    c.pkt(0.1005, 1, "A", 1, 2001, sack=[(3001, 5001)])
    c.pkt(0.1006, 1, "A", 1, 2001, sack=[(3001, 6001)])
    c.pkt(0.1007, 0, "A", 2001, 1, MSS)  # fast retransmission of segment 3
    c.pkt(0.1508, 1, "A", 1, 6001)
    return c


def rto() -> Conv:
    """Tail loss of segments 3 and 4, retransmission timeout, go-back-N."""
    c = Conv(1000, 5000)
    c.handshake(0.0, 0.050, 0.0501)
    for k in range(4):
        c.pkt(0.0502 + k * 0.0001, 0, "A", 1 + k * MSS, 1, MSS)
    c.pkt(0.1002, 1, "A", 1, 1001)
    c.pkt(0.1003, 1, "A", 1, 2001)
    c.pkt(0.4003, 0, "A", 2001, 1, MSS)  # RTO: 0.3 s of silence
    c.pkt(0.4504, 1, "A", 1, 3001)
    c.pkt(0.4505, 0, "A", 3001, 1, MSS)
    c.pkt(0.5006, 1, "A", 1, 4001)
    return c


def seq_wrap() -> Conv:
    """The sender's sequence numbers cross 2^32 after 2499 payload bytes."""
    c = Conv(M32 - 2500, 5000)
    c.handshake(0.0, 0.050, 0.0501)
    for k in range(5):
        c.pkt(0.0502 + k * 0.0001, 0, "A", 1 + k * MSS, 1, MSS)
    c.pkt(0.1003, 1, "A", 1, 2001)
    c.pkt(0.1005, 1, "A", 1, 4001)
    c.pkt(0.1006, 1, "A", 1, 5001)
    return c


def midflow() -> Conv:
    """Capture starts mid-transfer (no handshake, no timestamps); B sends, ACK-clocked."""
    c = Conv(7_000_000, 3_000_000_000, ts=False, sack=False)
    # B (data sender) at raw seq 3e9 + 100001 onwards; A acks each segment 50 ms later and B
    # sends the next segment 0.1 ms after each ACK (a capture at the sender).
    sends = [(k * 0.0001, 100001 + k * MSS) for k in range(4)]
    t_ack = []
    for k in range(12):
        t_seg, s = sends[k]
        c.pkt(t_seg, 1, "A", s, 1, MSS, win=1000)
        t_ack.append(t_seg + 0.050)
        sends.append((t_seg + 0.0501, 100001 + (k + 4) * MSS))
    # interleave in time order: rebuild records sorted by time (same content)
    for k in range(12):
        c.pkt(t_ack[k], 0, "A", 1, 100001 + (k + 1) * MSS, win=2000)
    c.records.sort(key=lambda r: r[0])
    return c


def reorder() -> Conv:
    """Mid-path capture; segment 3 arrives after segment 4 (reordering, not loss)."""
    c = Conv(1000, 5000)
    c.handshake(0.0, 0.025, 0.050)  # SYN→SYN/ACK 25 ms, SYN/ACK→ACK 25 ms: mid-path
    c.pkt(0.0502, 0, "A", 1, 1, MSS)
    c.pkt(0.0503, 0, "A", 1001, 1, MSS)
    c.pkt(0.0504, 0, "A", 3001, 1, MSS)
    c.pkt(0.05045, 0, "A", 2001, 1, MSS)  # out of order, 0.05 ms after the highest
    c.pkt(0.0752, 1, "A", 1, 1001)
    c.pkt(0.0754, 1, "A", 1, 2001)
    c.pkt(0.07545, 1, "A", 1, 2001, sack=[(3001, 4001)])
    c.pkt(0.07555, 1, "A", 1, 4001)
    return c


def ecn() -> Conv:
    """ECN negotiated; one CE mark; ECE echoed on two ACKs of the same round; CWR."""
    c = Conv(1000, 5000)
    c.handshake(0.0, 0.050, 0.0501, ecn=True)
    for k in range(4):
        c.pkt(0.0502 + k * 0.0001, 0, "A", 1 + k * MSS, 1, MSS, ecn=3 if k == 1 else 2)
    c.pkt(0.1002, 1, "A", 1, 1001)
    c.pkt(0.1003, 1, "AE", 1, 2001)  # CE seen on segment 2
    c.pkt(0.1004, 0, "AC", 4001, 1, MSS, ecn=2)  # sender reduces: CWR
    c.pkt(0.1005, 1, "AE", 1, 3001)  # still ECE until CWR arrives: same round
    c.pkt(0.1006, 1, "A", 1, 4001)  # round 0 ends (target 4001)
    c.pkt(0.1505, 1, "A", 1, 5001)
    return c


def probes() -> Conv:
    """Zero window, two zero-window probes, window opens; later two keep-alives."""
    c = Conv(1000, 5000)
    c.handshake(0.0, 0.050, 0.0501)
    c.pkt(0.0502, 0, "A", 1, 1, MSS)
    c.pkt(0.0503, 0, "A", 1001, 1, MSS)
    c.pkt(0.1003, 1, "A", 1, 2001, win=0)  # receiver buffer full
    c.pkt(0.3003, 0, "A", 2001, 1, 1)  # zero-window probe (1 byte at snd_max)
    c.pkt(0.3504, 1, "A", 1, 2001, win=0)
    c.pkt(0.7004, 0, "A", 2001, 1, 1)  # second probe
    c.pkt(0.7505, 1, "A", 1, 2001, win=0)
    c.pkt(0.9000, 1, "A", 1, 2001, win=500)  # window update
    c.pkt(0.9001, 0, "A", 2001, 1, MSS)
    c.pkt(0.9502, 1, "A", 1, 3001, win=500)
    c.pkt(10.9502, 0, "A", 3000, 1, 0)  # keep-alive, 0 bytes at snd_max - 1
    c.pkt(11.0003, 1, "A", 1, 3001, win=500)
    c.pkt(20.9502, 0, "A", 3000, 1, 1)  # keep-alive with 1 garbage byte
    c.pkt(21.0003, 1, "A", 1, 3001, win=500)
    return c


def clock_back() -> Conv:
    """The capture clock steps back 60 ms before an ACK (that ACK gives a negative RTT)."""
    c = Conv(1000, 5000)
    c.handshake(0.0, 0.050, 0.0501)
    c.pkt(0.0502, 0, "A", 1, 1, MSS)
    c.pkt(0.0503, 0, "A", 1001, 1, MSS)
    c.pkt(0.1002, 1, "A", 1, 1001)
    c.pkt(0.0403, 1, "A", 1, 2001)  # clock stepped back
    c.pkt(0.0404, 0, "A", 2001, 1, MSS)
    c.pkt(0.0905, 1, "A", 1, 3001)
    return c


def dsack() -> Conv:
    """Spurious RTO proven by D-SACK (no timestamps): the originals were only delayed."""
    c = Conv(1000, 5000, ts=False)
    c.handshake(0.0, 0.050, 0.0501)
    for k in range(3):
        c.pkt(0.0502 + k * 0.0001, 0, "A", 1 + k * MSS, 1, MSS)
    c.pkt(0.1002, 1, "A", 1, 1001)
    c.pkt(1.4003, 0, "A", 1001, 1, MSS)  # RTO after a long delay spike
    c.pkt(1.4010, 1, "A", 1, 3001)  # the delayed originals were received
    c.pkt(1.4504, 1, "A", 1, 3001, sack=[(1001, 2001)])  # D-SACK: duplicate of 1001-2001
    return c


def eifel() -> Conv:
    """Spurious RTO proven by the timestamp echo (Eifel, RFC 3522)."""
    c = Conv(1000, 5000)
    c.handshake(0.0, 0.050, 0.0501)
    for k in range(3):
        c.pkt(0.0502 + k * 0.0001, 0, "A", 1 + k * MSS, 1, MSS)
    c.pkt(0.1002, 1, "A", 1, 1001)
    c.pkt(1.4003, 0, "A", 1001, 1, MSS)  # RTO, TSval 2400
    c.pkt(1.4010, 1, "A", 1, 3001, tsecr=1050)  # echoes the original's TSval (1050)
    return c


def snaplen() -> tuple[Conv, int]:
    """Headers-only capture: snaplen 66 keeps Ethernet + IP + TCP + 12 payload bytes of each segment."""
    c = Conv(1000, 5000, ts=False, sack=False)
    c.handshake(0.0, 0.050, 0.0501)
    for k in range(3):
        c.pkt(0.0502 + k * 0.0001, 0, "A", 1 + k * MSS, 1, MSS)
    c.pkt(0.1003, 1, "A", 1, 2001)
    c.pkt(0.1005, 1, "A", 1, 3001)
    return c, 66


SCENARIOS = {
    "sack_recovery": sack_recovery,
    "rto": rto,
    "seq_wrap": seq_wrap,
    "midflow": midflow,
    "reorder": reorder,
    "ecn": ecn,
    "probes": probes,
    "clock_back": clock_back,
    "dsack": dsack,
    "eifel": eifel,
    "snaplen": snaplen,
}


def main() -> int:
    for name, fn in SCENARIOS.items():
        res = fn()
        conv, snap = res if isinstance(res, tuple) else (res, 262144)
        write_pcap(HERE / f"{name}.pcap", conv.records, snap)
        print(f"{name}.pcap: {len(conv.records)} packets", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
