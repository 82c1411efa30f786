#!/usr/bin/env python3
"""Make the big-flow benchmark captures: real Linux TCP senders, captured at the sender.

Two shapes (``--shape``, issue 39's "a few big flows" and "one high-speed flow"):

* ``bigflows4``   4 CUBIC flows (``iperf3 -P 4``) through one 1 Gbit/s bottleneck, 30 s;
* ``cubic10M``    one CUBIC flow through a 1.5 Gbit/s bottleneck sending 14 GB (≈ 9.7 M segments
                  of 1448 bytes: ≥ 10 M packets with the ACKs; 80 s when the machine reaches
                  1.4 Gbit/s, longer on a loaded one; the achieved rate goes to the manifest).

Topology (three network namespaces joined by two veth pairs; run as root)::

    hscc_bf_snd             hscc_bf_rtr                          hscc_bf_rcv
    iperf3 -c  bs0 <==> br0   [forwarding]   br1 <==> rr0  iperf3 -s
    10.78.1.1       10.78.1.2            10.78.2.2      10.78.2.1
    tcpdump here            tbf (rate, drop-tail queue)
                            on br1's egress

The bottleneck is the router's ``tbf`` toward the receiver: its drop-tail queue overflows (real
losses that the sender recovers with SACK). This kernel has no ``netem``, so there is no added
propagation delay: the round trip is the veth hops (tens of µs) plus the bottleneck's queue
(``--queue-ms`` of the rate, 8 ms by default), as behind a bloated buffer. Every veth has
``gso_max_segs 1`` (no TSO/GSO super-packets), so every captured packet is one wire segment;
``--offloads`` leaves the veths' defaults (TSO/GSO on: the sender's capture holds super-segments of
up to 64 KB, as a Linux sender's own capture does by default). ``--cc`` replaces the shape's
congestion control (any the kernel offers: reno, cubic, bbr here).
The capture is ``tcpdump -s 128`` (headers only) on the sender's veth (``--at receiver``: the
receiver's; ``--at router``: the router's sender-facing one), nanosecond timestamps, Ethernet link
type, filtered to the data connections' ports (iperf3's control connection is left out). With
``--capture-after S`` tcpdump starts S seconds after the sender (a capture that begins
mid-connection, without the handshake); ``--count N`` stops it after N packets. The sender runs
under ``nice -n -10`` (the machine is shared); tcpdump's "dropped by kernel" count and iperf3's
achieved rate go to the manifest.

Same parameters give the same kind of capture, not the same bytes (a real run). The ``.json``
manifest beside each file records parameters, achieved rate, packets, flows, bytes, sha256 — the
fields benchmarks/run.py reads. Files go to benchmarks/data/ (git-ignored).

Wrap runs in the testbed lock::

    flock /tmp/hscc-testbed.lock python benchmarks/make_bigflow.py --shape cubic10M
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
DATA = BENCH / "data"

NS_SND, NS_RTR, NS_RCV = "hscc_bf_snd", "hscc_bf_rtr", "hscc_bf_rcv"
IP_SND, IP_RTR0, IP_RTR1, IP_RCV = "10.78.1.1", "10.78.1.2", "10.78.2.2", "10.78.2.1"
PORT = 5201
#: --at: the namespace and veth tcpdump listens on
CAPTURE_AT = {"sender": (NS_SND, "bs0"), "router": (NS_RTR, "br0"), "receiver": (NS_RCV, "rr0")}
CPORT = 40001  # data connections bind 40001, 40002, ... (iperf3 --cport)

SHAPES = {
    "bigflows4": dict(flows=4, rate="1gbit", duration=30, cc="cubic"),
    # ≥ 10 M packets whatever rate the machine reaches: a fixed amount of data (≈ 9.7 M segments
    # of 1448 bytes) rather than a fixed time (80 s at 1.4 Gbit/s on an idle machine)
    "cubic10M": dict(flows=1, rate="1500mbit", duration=80, bytes="14G", cc="cubic"),
}


def sh(cmd: str, check: bool = True) -> str:
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"command failed ({r.returncode}): {cmd}\n{r.stderr}")
    return r.stdout


def teardown() -> None:
    for ns in (NS_SND, NS_RTR, NS_RCV):
        sh(f"ip netns del {ns}", check=False)


def rate_bps(s: str) -> float:
    m = re.fullmatch(r"([0-9.]+)(g|m|k)?bit", s)
    if not m:
        raise SystemExit(f"bad rate {s}")
    return float(m.group(1)) * {"g": 1e9, "m": 1e6, "k": 1e3, None: 1.0}[m.group(2)]


def setup(rate: str, queue_bytes: int, mtu: int = 1500, offloads: bool = False) -> None:
    teardown()
    for ns in (NS_SND, NS_RTR, NS_RCV):
        sh(f"ip netns add {ns}")
        sh(f"ip -n {ns} link set lo up")
        sh(f"ip netns exec {ns} sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
        sh(f"ip netns exec {ns} sysctl -qw net.ipv4.tcp_no_metrics_save=1")
    sh(f"ip link add bs0 netns {NS_SND} type veth peer name br0 netns {NS_RTR}")
    sh(f"ip link add br1 netns {NS_RTR} type veth peer name rr0 netns {NS_RCV}")
    for ns, dev, addr in (
        (NS_SND, "bs0", f"{IP_SND}/24"),
        (NS_RTR, "br0", f"{IP_RTR0}/24"),
        (NS_RTR, "br1", f"{IP_RTR1}/24"),
        (NS_RCV, "rr0", f"{IP_RCV}/24"),
    ):
        sh(f"ip -n {ns} addr add {addr} dev {dev}")
        sh(f"ip -n {ns} link set {dev} up")
        # one wire segment per skb (TSO/GSO never build larger ones); veth has no GRO unless
        # XDP is attached, so the receive side sees the same segments
        sh(f"ip -n {ns} link set {dev} mtu {mtu}" + ("" if offloads else f" gso_max_segs 1 gso_max_size {mtu}"))
    sh(f"ip -n {NS_SND} route add default via {IP_RTR0}")
    sh(f"ip -n {NS_RCV} route add default via {IP_RTR1}")
    sh(f"ip netns exec {NS_RTR} sysctl -qw net.ipv4.ip_forward=1")
    # receive buffers large enough that the flows are never receive-window-limited at this BDP
    for ns in (NS_SND, NS_RCV):
        sh(f"ip netns exec {ns} sysctl -qw net.ipv4.tcp_rmem='4096 131072 33554432'")
        sh(f"ip netns exec {ns} sysctl -qw net.ipv4.tcp_wmem='4096 131072 33554432'")
    # the bottleneck: token bucket at `rate` with a drop-tail queue of `queue_bytes`
    burst = max(int(rate_bps(rate) / 8 / 1000), 32 * 1514)  # one ms of tokens
    sh(f"tc -n {NS_RTR} qdisc add dev br1 root tbf rate {rate} burst {burst} limit {queue_bytes}")


def count_pcap(path: Path) -> tuple[int, int]:
    """Packets and TCP connections (distinct 4-tuples, either direction) of an Ethernet/IPv4 pcap."""
    flows: set[tuple[int, int, int, int]] = set()
    n = 0
    with open(path, "rb") as fh:
        hdr = fh.read(24)
        endian = "<" if hdr[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        rec = struct.Struct(endian + "IIII")
        buf = fh.read()
    off, end = 0, len(buf)
    unpack = rec.unpack_from
    while off + 16 <= end:
        _, _, incl, _ = unpack(buf, off)
        p = off + 16
        if buf[p + 12 : p + 14] == b"\x08\x00" and buf[p + 23] == 6:
            ihl = (buf[p + 14] & 15) * 4
            a, b = buf[p + 26 : p + 30], buf[p + 30 : p + 34]
            sp, dp = struct.unpack_from(">HH", buf, p + 14 + ihl)
            ka, kb = (int.from_bytes(a), sp), (int.from_bytes(b), dp)
            flows.add((*ka, *kb) if ka <= kb else (*kb, *ka))
        off = p + incl
        n += 1
    return n, len(flows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), required=True)
    ap.add_argument("--duration", type=float, help="seconds (default: the shape's)")
    ap.add_argument("--bytes", help="send this much instead (iperf3 -n, e.g. 14G; default: the shape's)")
    ap.add_argument("--mtu", type=int, default=1500, help="MTU of every veth")
    ap.add_argument("--rate", help="bottleneck rate, e.g. 1500mbit (default: the shape's)")
    ap.add_argument("--name", help="output name under benchmarks/data (default: the shape)")
    ap.add_argument("--queue-ms", type=float, default=8.0, help="bottleneck queue, in ms of its rate")
    ap.add_argument("--snaplen", type=int, default=128)
    ap.add_argument("--at", choices=sorted(CAPTURE_AT), default="sender", help="where tcpdump listens")
    ap.add_argument("--capture-after", type=float, default=0.0, help="start tcpdump this many s after the sender")
    ap.add_argument("--count", type=int, help="stop tcpdump after this many packets (tcpdump -c)")
    ap.add_argument("--cc", help="congestion control of every flow (default: the shape's)")
    ap.add_argument("--offloads", action="store_true", help="keep TSO/GSO on (super-segments in the capture)")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("run as root (network namespaces)")
    p = dict(SHAPES[a.shape])
    if a.duration:
        p["duration"] = a.duration
        p.pop("bytes", None)  # (a time, not the shape's amount of data, unless --bytes says so)
    if a.rate:
        p["rate"] = a.rate
    if a.bytes:
        p["bytes"] = a.bytes
    p["mtu"] = a.mtu
    if a.cc:
        p["cc"] = a.cc
    name = a.name or a.shape
    DATA.mkdir(parents=True, exist_ok=True)
    pcap = DATA / f"{name}.pcap"
    queue = int(rate_bps(p["rate"]) / 8 * a.queue_ms / 1e3)
    try:
        setup(p["rate"], queue, a.mtu, a.offloads)
        return capture(a, p, name, pcap, queue)
    finally:
        teardown()


def capture(a: argparse.Namespace, p: dict, name: str, pcap: Path, queue: int) -> int:
    ports = " or ".join(f"port {CPORT + i}" for i in range(p["flows"]))
    srv = subprocess.Popen(
        ["ip", "netns", "exec", NS_RCV, "iperf3", "-s", "-1", "-B", IP_RCV, "-p", str(PORT)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    dump_err = open(pcap.with_suffix(".tcpdump.log"), "w")
    ns, dev = CAPTURE_AT[a.at]
    dump_cmd = ["ip", "netns", "exec", ns, "tcpdump", "-i", dev, "-n", "-s", str(a.snaplen), "-B", "131072"]
    dump_cmd += ["--time-stamp-precision", "nano", "-w", str(pcap)] + (["-c", str(a.count)] if a.count else [])
    dump_cmd += [f"tcp and ({ports})"]
    if not a.capture_after:
        dump = subprocess.Popen(dump_cmd, stdout=subprocess.DEVNULL, stderr=dump_err)
    time.sleep(1.5 if not a.capture_after else 0.5)  # tcpdump and the server listening
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    t0 = time.time()
    cli_p = subprocess.Popen(
        ["nice", "-n", "-10", "ip", "netns", "exec", NS_SND, "iperf3", "-c", IP_RCV, "-p", str(PORT)]
        + ["-B", IP_SND, "--cport", str(CPORT), "-P", str(p["flows"]), "-C", p["cc"]]
        + (["-n", p["bytes"]] if p.get("bytes") else ["-t", str(p["duration"])])
        + ["-J"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if a.capture_after:
        time.sleep(a.capture_after)
        dump = subprocess.Popen(dump_cmd, stdout=subprocess.DEVNULL, stderr=dump_err)
    out, err = cli_p.communicate()
    cli = subprocess.CompletedProcess(cli_p.args, cli_p.returncode, out, err)
    wall = time.time() - t0
    time.sleep(1.0)
    if dump.poll() is None:  # (with --count it may have stopped by itself)
        dump.send_signal(signal.SIGINT)
    dump.wait(timeout=60)
    dump_err.close()
    srv.wait(timeout=10)
    if cli.returncode != 0:
        print(cli.stdout[-2000:], cli.stderr[-2000:], file=sys.stderr)
        return 1
    res = json.loads(cli.stdout)
    end = res["end"]
    log = pcap.with_suffix(".tcpdump.log").read_text()
    dropped = re.search(r"(\d+) packets dropped by kernel", log)
    packets, flows = count_pcap(pcap)
    h = hashlib.sha256()
    with open(pcap, "rb") as fh:
        while chunk := fh.read(1 << 24):
            h.update(chunk)
    manifest = dict(
        name=name,
        shape=a.shape,
        made_by="benchmarks/make_bigflow.py",
        params=dict(
            p,
            snaplen=a.snaplen,
            capture_at=f"{a.at} ({dev})",
            capture_after_s=a.capture_after,
            count=a.count,
            queue_ms=a.queue_ms,
            queue_bytes=queue,
            offloads="veth defaults (TSO/GSO on)" if a.offloads else "gso_max_segs 1, gso_max_size = MTU on every veth",
        ),
        kernel=os.uname().release,
        achieved_bps=end["sum_sent"]["bits_per_second"],
        retransmits=end["sum_sent"].get("retransmits"),
        streams_bps=[s["sender"]["bits_per_second"] for s in end["streams"]],
        cpu_utilization_percent=end.get("cpu_utilization_percent"),
        sender_wall_s=wall,
        loadavg_start=load0,
        loadavg_end=Path("/proc/loadavg").read_text().split()[:3],
        tcpdump_dropped=int(dropped.group(1)) if dropped else None,
        packets=packets,
        flows=flows,
        bytes=pcap.stat().st_size,
        sha256=h.hexdigest(),
    )
    pcap.with_suffix(".json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(json.dumps(manifest, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
