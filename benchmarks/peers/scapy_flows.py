#!/usr/bin/env python3
"""Peer baseline: the usual scapy script — dissect every packet and build a flow dict.

Streams the capture with scapy's PcapReader (full dissection per packet, as users write it) and
accumulates the same per-connection figures as dpkt_flows.py. scapy runs at a few thousand
packets per second, so the benchmark runs it on the first ``--limit`` packets and extrapolates;
this script reports the packets it really processed, its import time and its loop time.
Usage: scapy_flows.py FILE [--limit N]
"""

from __future__ import annotations

import json
import sys
import time

t_start = time.perf_counter()
import scapy  # noqa: E402
from scapy.layers.inet import IP, TCP  # noqa: E402
from scapy.layers.inet6 import IPv6  # noqa: E402
from scapy.utils import PcapReader  # noqa: E402

t_import = time.perf_counter() - t_start


def main() -> None:
    path = sys.argv[1]
    limit = int(sys.argv[sys.argv.index("--limit") + 1]) if "--limit" in sys.argv else None
    flows: dict[tuple, list] = {}
    n = tcp_n = 0
    t0 = time.perf_counter()
    with PcapReader(path) as rd:
        for pkt in rd:
            n += 1
            if IP in pkt:
                ip = pkt[IP]
                plen = ip.len - ip.ihl * 4
            elif IPv6 in pkt:
                ip = pkt[IPv6]
                plen = ip.plen
            else:
                if limit is not None and n >= limit:
                    break
                continue
            if TCP in pkt:
                tcp = pkt[TCP]
                tcp_n += 1
                payload = plen - tcp.dataofs * 4
                a, b = (ip.src, tcp.sport), (ip.dst, tcp.dport)
                key = (a, b) if a <= b else (b, a)
                d = 0 if a <= b else 1
                ts = float(pkt.time)
                f = flows.get(key)
                if f is None:
                    f = flows[key] = [0, 0, 0, 0, 0, 0, ts, ts, 0, 0, 0, 0, 0, 0, 0, 0]
                flags = int(tcp.flags)
                f[2 * d] += 1
                f[2 * d + 1] += pkt.wirelen or len(pkt)
                f[4 + d] += payload
                f[7] = ts
                f[8] += bool(flags & 0x02)
                f[9] += bool(flags & 0x01)
                f[10] += bool(flags & 0x04)
                f[11 + d] = max(f[11 + d], tcp.seq + payload)
                f[13 + d] = tcp.ack
                f[15] = tcp.window
            if limit is not None and n >= limit:
                break
    loop = time.perf_counter() - t0
    print(
        json.dumps(
            dict(
                tool="scapy",
                version=scapy.__version__,
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
