#!/usr/bin/env python3
"""Peer baseline: the usual dpkt script — parse every packet to TCP fields and build a flow dict.

Per packet: Ethernet → IPv4/IPv6 → TCP, then the fields a flow table needs (time, addresses,
ports, seq, ack, flags, window, payload length), accumulated per connection (packets and wire
bytes each way, first/last time, SYN/FIN/RST seen). Prints a one-line JSON summary on stdout.
Usage: dpkt_flows.py FILE [--limit N]
"""

from __future__ import annotations

import json
import socket
import sys
import time

t_start = time.perf_counter()
import dpkt  # noqa: E402

t_import = time.perf_counter() - t_start


def main() -> None:
    path = sys.argv[1]
    limit = int(sys.argv[sys.argv.index("--limit") + 1]) if "--limit" in sys.argv else None
    flows: dict[tuple, list] = {}
    n = tcp_n = 0
    t0 = time.perf_counter()
    with open(path, "rb") as fh:
        for ts, buf in dpkt.pcap.Reader(fh):
            n += 1
            if limit is not None and n > limit:
                n -= 1
                break
            try:
                eth = dpkt.ethernet.Ethernet(buf)
            except (dpkt.UnpackError, dpkt.NeedData):
                continue
            ip = eth.data
            if isinstance(ip, dpkt.ip.IP):
                src, dst, iplen = (
                    socket.inet_ntop(socket.AF_INET, ip.src),
                    socket.inet_ntop(socket.AF_INET, ip.dst),
                    ip.len,
                )
                tcp = ip.data
                plen = iplen - ip.hl * 4
            elif isinstance(ip, dpkt.ip6.IP6):
                src, dst = socket.inet_ntop(socket.AF_INET6, ip.src), socket.inet_ntop(socket.AF_INET6, ip.dst)
                tcp = ip.data
                plen = ip.plen
            else:
                continue
            if not isinstance(tcp, dpkt.tcp.TCP):
                continue
            tcp_n += 1
            sport, dport, seq, ack, flags, win = tcp.sport, tcp.dport, tcp.seq, tcp.ack, tcp.flags, tcp.win
            payload = plen - tcp.off * 4
            a, b = (src, sport), (dst, dport)
            key = (a, b) if a <= b else (b, a)
            d = 0 if a <= b else 1
            f = flows.get(key)
            if f is None:
                # pkts0, bytes0, pkts1, bytes1, payload0, payload1, first, last, syn, fin, rst, max_seq0, max_seq1, last_ack0, last_ack1, win
                f = flows[key] = [0, 0, 0, 0, 0, 0, ts, ts, 0, 0, 0, 0, 0, 0, 0, 0]
            f[2 * d] += 1
            f[2 * d + 1] += len(buf)
            f[4 + d] += payload
            f[7] = ts
            f[8] += bool(flags & dpkt.tcp.TH_SYN)
            f[9] += bool(flags & dpkt.tcp.TH_FIN)
            f[10] += bool(flags & dpkt.tcp.TH_RST)
            f[11 + d] = max(f[11 + d], seq + payload)
            f[13 + d] = ack
            f[15] = win
    loop = time.perf_counter() - t0
    print(
        json.dumps(
            dict(
                tool="dpkt",
                version=dpkt.__version__,
                packets=n,
                tcp_packets=tcp_n,
                flows=len(flows),
                import_s=t_import,
                loop_s=loop,
            )
        )
    )


if __name__ == "__main__":
    main()
