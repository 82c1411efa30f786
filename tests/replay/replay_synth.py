"""Synthetic ACK streams conforming to schema.ACKS, for hand-worked replay tests.

Windows are whole packets of MSS = 1000 bytes so that every expectation can be worked by hand.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from hscc_trace import schema

MSS = 1000
RTT = 0.1  # s


def ack(**kw: Any) -> dict[str, Any]:
    """One ACK row with neutral defaults (override any schema.ACKS column)."""
    row: dict[str, Any] = {
        "frame": 0, "ts_ns": 0, "ack": 0, "acked_bytes": MSS, "sacked_bytes": 0, "dupack": 0,
        "rwnd_bytes": 10_000_000, "rwnd_scale_known": True, "ece": False, "rtt_s": RTT,
        "rtt_source": "seq", "snd_max": 0, "outstanding": 0, "pipe": None, "round": 0,
        "round_end": False, "state": "open", "cong_event": None, "spurious_undo": False,
    }
    row.update(kw)
    return row


def frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Fill frame numbers, times (1 ms apart unless given), cumulative ack / snd_max."""
    out = []
    for i, r in enumerate(rows):
        r = dict(r)
        r.setdefault("frame", i + 1)
        if not r.get("ts_ns"):
            r["ts_ns"] = 1_000_000_000 + i * 1_000_000
        r["frame"] = i + 1
        out.append(r)
    return schema.conform(pl.DataFrame(out, schema=schema.polars_schema(schema.ACKS), strict=False), schema.ACKS)


def saturating(n_acks: int, *, cwnd0: float = 10, mss: int = MSS, rtt: float = RTT) -> pl.DataFrame:
    """A cwnd-limited sender: every ACK acknowledges one packet and the flight stays at the
    window (the sender refills it), rounds of `cwnd0` ACKs. Used for smoke/parity runs."""
    rows = []
    acked = 0
    flight = int(cwnd0)
    for i in range(n_acks):
        acked += mss
        snd_max = acked + flight * mss
        rows.append(ack(ack=acked, acked_bytes=mss, snd_max=snd_max - mss, outstanding=(flight - 1) * mss,
                        rtt_s=rtt, round=i // int(cwnd0), round_end=(i % int(cwnd0)) == int(cwnd0) - 1))
    return frame(rows)
