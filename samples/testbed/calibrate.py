"""Measure the link emulator's accuracy (root only): rate and delay jitter with UDP probes.

For each configured rate it builds the same dumbbell as run.py and makes two measurements:

1. rate: the sender blasts 1500-byte IP packets (1472 B UDP payload) at 1.5x the link rate
   for --seconds; the receiver timestamps arrivals; measured rate = IP bytes delivered · 8 /
   time between first and last arrival, skipping the first 0.5 s (queue filling).
2. delay: a light probe (100 packets/s of 200 B, far below the link rate so nothing queues)
   carries the sender's CLOCK_REALTIME send time; one-way delay − (configured delay +
   serialization of one packet) is the emulator's added delay error (jitter) — it includes
   the Python sender's and receiver's own scheduling, so it is an upper bound.

Writes samples/testbed/calibration.json and prints a markdown table.

    sudo .venv/bin/python samples/testbed/calibrate.py [--rates 10mbit,20mbit] [--delay 20ms]
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run as tb  # noqa: E402

PORT_BLAST, PORT_PROBE = 6001, 6002


def udp_recv(port: int, seconds: float, out: str) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind(("0.0.0.0", port))
    s.settimeout(1.0)
    rows = []
    end = time.time() + seconds
    while time.time() < end:
        try:
            data = s.recv(2048)
        except TimeoutError:
            continue
        t = time.clock_gettime_ns(time.CLOCK_REALTIME)
        (sent,) = struct.unpack_from("<q", data, 0)
        rows.append((t, sent, len(data) + 28))
    np.save(out, np.array(rows, dtype=np.int64).reshape(-1, 3))


def udp_send(dst: str, port: int, rate_bps: float, size: int, seconds: float) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    period = (size + 28) * 8 / rate_bps
    pad = b"\0" * (size - 8)
    t0 = time.monotonic()
    nxt = t0
    while True:
        now = time.monotonic()
        if now - t0 >= seconds:
            break
        if now < nxt:
            time.sleep(min(nxt - now, 0.002))
            continue
        s.sendto(struct.pack("<q", time.clock_gettime_ns(time.CLOCK_REALTIME)) + pad, (dst, port))
        nxt += period


def measure(rate: float, delay: float, seconds: float, queue: int) -> dict:
    py = sys.executable
    me = str(Path(__file__).resolve())
    emu_bin = tb.build_tool("linkemu")
    work = Path("/tmp/hscc_testbed_calib")
    work.mkdir(exist_ok=True)
    procs = []
    try:
        tb.setup_namespaces()
        emu = subprocess.Popen(
            [
                str(emu_bin),
                "--ns-a",
                f"/var/run/netns/{tb.NS_SND}",
                "--dev-a",
                tb.DEV_SND,
                "--ns-b",
                f"/var/run/netns/{tb.NS_RCV}",
                "--dev-b",
                tb.DEV_RCV,
                "--rate-ab",
                f"{rate:.0f}",
                "--delay-ab",
                f"{delay * 1e9:.0f}",
                "--qpkts-ab",
                str(queue),
                "--rate-ba",
                f"{rate:.0f}",
                "--delay-ba",
                f"{delay * 1e9:.0f}",
                "--stats",
                str(work / "emu.json"),
                "--rt",
                "10",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        procs.append(emu)
        assert emu.stdout.readline().strip() == "ready"
        tb.configure_devices()
        results = {}
        for kind, port, size, prate in (
            ("blast", PORT_BLAST, 1472, 1.5 * rate),
            ("probe", PORT_PROBE, 200, 100 * 228 * 8),
        ):
            out = work / f"{kind}.npy"
            r = subprocess.Popen(
                ["ip", "netns", "exec", tb.NS_RCV, py, me, "_recv", str(port), str(seconds + 2), str(out)]
            )
            procs.append(r)
            time.sleep(0.5)
            subprocess.run(
                [
                    "ip",
                    "netns",
                    "exec",
                    tb.NS_SND,
                    py,
                    me,
                    "_send",
                    tb.IP_RCV,
                    str(port),
                    str(prate),
                    str(size),
                    str(seconds),
                ],
                check=True,
            )
            r.wait(timeout=seconds + 10)
            results[kind] = np.load(out)
        emu.terminate()
        emu.wait(timeout=5)
        emu_stats = json.loads((work / "emu.json").read_text())
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        tb.teardown()
    b = results["blast"]
    b = b[b[:, 0] >= b[0, 0] + 500_000_000]
    measured = (b[1:, 2].sum() * 8) / ((b[-1, 0] - b[0, 0]) / 1e9)
    pr = results["probe"]
    owd = (pr[:, 0] - pr[:, 1]) / 1e3  # µs
    extra = owd - (delay * 1e6 + 228 * 8 / rate * 1e6)
    return {
        "rate_bps": rate,
        "delay_one_way_s": delay,
        "queue_pkts": queue,
        "seconds": seconds,
        "blast_offered_bps": 1.5 * rate,
        "measured_rate_bps": float(measured),
        "rate_error": float(measured / rate - 1),
        "probe_packets": int(len(pr)),
        "delay_error_us": {q: float(np.percentile(extra, float(q))) for q in ("1", "50", "90", "99", "99.9")}
        | {"max": float(extra.max())},
        "emulator_release_late_us": emu_stats["a_to_b"]["release_late_us"],
        "emulator_drops": {k: emu_stats["a_to_b"][k] for k in ("drop_queue", "drop_loss", "drop_ring")},
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_recv":
        udp_recv(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "_send":
        udp_send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="10mbit,20mbit")
    ap.add_argument("--delay", default="20ms")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--queue", type=int, default=50)
    a = ap.parse_args()
    res = [measure(tb.parse_rate(r), tb.parse_time(a.delay), a.seconds, a.queue) for r in a.rates.split(",")]
    (HERE / "calibration.json").write_text(
        json.dumps({"kernel": tb.platform.release(), "results": res}, indent=1) + "\n"
    )
    print(
        "| rate | measured rate | error | one-way delay error p50 / p90 / p99 / p99.9 / max (µs) | emulator release lateness p50 / p99 (µs) |"
    )
    print("|---|---|---|---|---|")
    for r in res:
        d = r["delay_error_us"]
        late = r["emulator_release_late_us"]
        print(
            f"| {r['rate_bps'] / 1e6:g} Mbit/s | {r['measured_rate_bps'] / 1e6:.3f} Mbit/s | {r['rate_error']:+.2%} | "
            f"{d['50']:.0f} / {d['90']:.0f} / {d['99']:.0f} / {d['99.9']:.0f} / {d['max']:.0f} | "
            f"{late['p50']:.0f} / {late['p99']:.0f} |"
        )


if __name__ == "__main__":
    main()
