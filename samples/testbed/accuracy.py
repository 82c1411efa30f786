"""Emulator accuracy measured on real TCP traffic: the reno-bdp run captured at both ends.

No root needed; reads samples/reno-bdp/capture.pcap (sender side) and
samples/reno-bdp-receiver/capture.pcap (receiver side) of the same run, both stamped by the
same CLOCK_REALTIME:

* bottleneck rate: IP bytes delivered to the receiver per 1-s window while the Reno flow keeps
  the 1-BDP queue non-empty (seconds 1-9), compared with the configured rate;
* delay jitter: every ACK crosses the emulator's reverse direction (no queue limit, nothing
  else queued there); its one-way delay, receiver tap → sender tap, minus the configured
  one-way delay and its own serialization time, is the emulator's added delay error (includes
  the emulator's wake-up latency and both stacks' scheduling on this shared 2-core machine).

    python samples/testbed/accuracy.py     # prints JSON
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import pcapmini  # noqa: E402


def measure(sender_dir: Path, receiver_dir: Path) -> dict:
    meta = json.loads((sender_dir / "meta.json").read_text())
    rate, delay = meta["rate_bps"], meta["delay_one_way_s"]
    rcv = pcapmini.ip_to_int(meta["receiver"]["addr"])
    s = pcapmini.read(sender_dir / "capture.pcap").packets
    r = pcapmini.read(receiver_dir / "capture.pcap").packets
    # rate: data packets arriving at the receiver
    data = r[r["src"] != rcv]
    t = (data["ts_ns"] - data["ts_ns"][0]) / 1e9
    windows = []
    for k in range(1, int(meta["duration_s"]) - 1):
        sel = (t >= k) & (t < k + 1)
        windows.append(float(data["wire_len"][sel].sum()) * 8)
    w = np.array(windows)
    # delay: reverse direction, paired in order (FIFO, no loss, no queue limit)
    a_r, a_s = r[r["src"] == rcv], s[s["src"] == rcv]
    if len(a_r) != len(a_s) or not np.array_equal(a_r["ack"], a_s["ack"]):
        raise SystemExit(f"reverse-direction packets differ: receiver {len(a_r)}, sender {len(a_s)}")
    err_us = (a_s["ts_ns"] - a_r["ts_ns"]) / 1e3 - delay * 1e6 - a_s["wire_len"] * 8 / rate * 1e6
    return {
        "sample": sender_dir.name,
        "rate_bps": rate,
        "delivered_bps_per_1s_window": {
            "min": float(w.min()),
            "median": float(np.median(w)),
            "max": float(w.max()),
            "windows": len(w),
        },
        "rate_error_median": float(np.median(w) / rate - 1),
        "ack_path_packets": int(len(a_s)),
        "ack_path_delay_error_us": {q: float(np.percentile(err_us, float(q))) for q in ("1", "50", "90", "99", "99.9")}
        | {"min": float(err_us.min()), "max": float(err_us.max())},
    }


if __name__ == "__main__":
    print(json.dumps(measure(HERE.parent / "reno-bdp", HERE.parent / "reno-bdp-receiver"), indent=1))
