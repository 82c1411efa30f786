"""The generated capture ``hscc-trace compile`` runs every step over (every kernel forced to
compile, :func:`hscc_trace.api.compile_kernels`), so that each is compiled for the argument types
a real capture gives it: a nanosecond pcap (Ethernet, IPv4, TCP with MSS, window-scale,
SACK-permitted, timestamp and SACK options) of one simulated Reno sender with a few losses, seen
twice (≈ 7 000 packets each, enough for the report's decimation): where the sender is, and where
the receiver is (the sender-view kernels). The simulation is plain; it is used for nothing else.
"""

from __future__ import annotations

import heapq
import struct
from pathlib import Path

MSS = 1448
_SNAPLEN = 128


def reno_packets(
    segments: int = 3500, rtt: float = 0.02, gap: float = 4e-5, losses: tuple[int, ...] = (300, 1400, 2600)
) -> list[tuple[float, float, int, int, int, str, int, tuple[tuple[int, int], ...]]]:
    """One simulated connection: ``(t_at_sender, t_at_receiver, dir, seq, ack, flags, len, sack)``
    per packet (dir 0 = sender → receiver), sequence numbers relative (ISNs added later)."""
    owd = rtt / 2
    out: list[tuple[float, float, int, int, int, str, int, tuple[tuple[int, int], ...]]] = []
    out.append((0.0, owd, 0, 0, 0, "S", 0, ()))
    out.append((rtt, owd, 1, 0, 1, "SA", 0, ()))
    out.append((rtt, rtt + owd, 0, 1, 1, "A", 0, ()))
    acks: list[tuple[float, int, int, tuple[tuple[int, int], ...]]] = []  # (arrival at sender, k, ack idx, sack)
    got: set[int] = set()
    lost = set(losses)
    t = rtt
    link = t
    nxt = una = 0
    cwnd, ssthresh = 10.0, 1e9
    recovery, recover, dup = False, 0, 0
    order = 0

    def send(i: int, now: float, first: bool) -> None:
        nonlocal link, order
        link = max(link, now) + gap
        arrive = link + owd
        out.append((now, arrive, 0, 1 + i * MSS, 1, "A", MSS, ()))
        if first and i in lost:
            return
        got.add(i)
        cum = 0
        while cum in got:
            cum += 1
        sack: tuple[tuple[int, int], ...] = ()
        if any(j > cum for j in got) and i > cum:
            lo = i
            while lo - 1 in got and lo - 1 > cum:
                lo -= 1
            sack = ((1 + lo * MSS, 1 + (i + 1) * MSS),)
        order += 1
        heapq.heappush(acks, (arrive + owd, order, cum, sack))
        out.append((arrive + owd, arrive, 1, 1, 1 + cum * MSS, "A", 0, sack))

    while nxt < segments and nxt - una < cwnd:
        send(nxt, t, True)
        nxt += 1
    while acks:
        t, _, a, _sack = heapq.heappop(acks)
        if a > una:
            if recovery and a >= recover:
                recovery, cwnd = False, ssthresh
            elif recovery:
                send(a, t, False)  # partial ACK: the next hole
            else:
                cwnd += 1.0 if cwnd < ssthresh else 1.0 / cwnd
            una, dup = a, 0
        elif a == una and una < nxt:
            dup += 1
            if dup == 3 and not recovery:
                ssthresh = max(cwnd / 2, 2.0)
                cwnd, recovery, recover = ssthresh, True, nxt
                send(una, t, False)
        while nxt < segments and nxt - una - (dup if recovery else 0) < cwnd:
            send(nxt, t, True)
            nxt += 1
    fin = max(p[0] for p in out) + 0.001
    out.append((fin, fin + owd, 0, 1 + segments * MSS, 1, "FA", 0, ()))
    out.append((fin + rtt, fin + owd, 1, 1, 2 + segments * MSS, "FA", 0, ()))
    out.append((fin + rtt, fin + rtt + owd, 0, 2 + segments * MSS, 2, "A", 0, ()))
    return out


_FLAGS = {"F": 0x01, "S": 0x02, "R": 0x04, "P": 0x08, "A": 0x10}


def _frame(
    src: tuple[bytes, int], dst: tuple[bytes, int], seq: int, ack: int, flags: str, n: int, tsval: int, tsecr: int, sack
) -> tuple[bytes, int]:
    fl = sum(_FLAGS[c] for c in flags)
    opts = b""
    if "S" in flags:  # MSS, SACK permitted, timestamps, window scale 7
        opts = struct.pack("!BBH", 2, 4, MSS) + b"\x04\x02" + struct.pack("!BBII", 8, 10, tsval, tsecr)
        opts += b"\x01\x03\x03\x07"
    else:
        opts = b"\x01\x01" + struct.pack("!BBII", 8, 10, tsval, tsecr)
        if sack:
            opts += b"\x01\x01" + struct.pack("!BB", 5, 2 + 8 * len(sack))
            opts += b"".join(struct.pack("!II", lo & 0xFFFFFFFF, hi & 0xFFFFFFFF) for lo, hi in sack)
    tcp = struct.pack(
        "!HHIIBBHHH", src[1], dst[1], seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, (5 + len(opts) // 4) << 4, fl, 65535, 0, 0
    )
    tcp += opts
    total = 20 + len(tcp) + n
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0x4000, 64, 6, 0, src[0], dst[0])  # (no checksum)
    eth = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00"
    return eth + ip + tcp, 14 + total


def write_capture(path: Path) -> Path:
    """Write the warm-up capture (two connections, ≈ 14 000 packets, ≈ 1.5 MB) to ``path``."""
    pkts = reno_packets()
    a, b = b"\x0a\x4d\x00\x01", b"\x0a\x4d\x00\x02"
    records: list[tuple[float, bytes, int]] = []
    for view, (sport, dport, isn_a, isn_b) in enumerate(
        ((40001, 5001, 1_000_000, 7_000_000), (40002, 5002, 4_294_000_000, 9))
    ):
        for t_snd, t_rcv, d, seq, ack, flags, n, sack in pkts:
            t = 1.0 + (t_snd if view == 0 else t_rcv + 0.005)
            ts_a, ts_b = int(t_snd * 1000) + 100, int(t_rcv * 1000) + 5000
            if d == 0:
                s, r, sq, ak, tv, te = (a, sport), (b, dport), isn_a + seq, isn_b + ack, ts_a, ts_b
                sk: tuple[tuple[int, int], ...] = ()
            else:
                s, r, sq, ak, tv, te = (b, dport), (a, sport), isn_b + seq, isn_a + ack, ts_b, ts_a
                sk = tuple((isn_a + lo, isn_a + hi) for lo, hi in sack)
            if "S" in flags and d == 0:
                ak = 0
            hdr, orig = _frame(s, r, sq, ak, flags, n, tv, te if ("A" in flags) else 0, sk)
            records.append((t, hdr[:_SNAPLEN], orig))
    records.sort(key=lambda r: r[0])
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, _SNAPLEN, 1))  # nanosecond pcap, Ethernet
        for t, data, orig in records:
            ns = round(t * 1e9)
            f.write(struct.pack("<IIII", ns // 1_000_000_000, ns % 1_000_000_000, len(data), orig))
            f.write(data)
    return path
