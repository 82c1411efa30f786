"""Build schema.PACKETS frames from a compact description (for tests and examples).

Each packet is a dict; only ``t`` (seconds), ``d`` (0 = A→B, 1 = B→A), ``seq``, ``ack`` and
``flags`` are needed. ``flags`` is a string of letters as tcpdump prints them: S (SYN), F (FIN),
R (RST), P (PSH), A (ACK), U (URG), E (ECE), W (CWR). Optional keys: ``len`` (payload bytes),
``win`` (raw window), ``mss``, ``ws`` (window-scale shift), ``sackok``, ``tsval``, ``tsecr``,
``sack`` (list of raw (left, right) pairs), ``ecn`` (IP ECN field). Raw sequence values are taken
modulo 2^32, so tests can write ``isn + offset`` without wrapping by hand.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import polars as pl

from hscc_trace import schema

_FLAG_BITS = {"F": 0x01, "S": 0x02, "R": 0x04, "P": 0x08, "A": 0x10, "U": 0x20, "E": 0x40, "W": 0x80}


def flag_bits(letters: str) -> int:
    """``"SA"`` → 0x12 (tcpdump letters, plus E = ECE and W = CWR)."""
    v = 0
    for ch in letters:
        v |= _FLAG_BITS[ch]
    return v


def packets_frame(pkts: Iterable[dict[str, Any]], flow_id: int = 0) -> pl.DataFrame:
    """A schema.PACKETS DataFrame (one flow) for the described packets, frames numbered from 1."""
    rows = []
    for i, p in enumerate(pkts):
        sack = list(p.get("sack", ()))[:4]
        ln = int(p.get("len", 0))
        row = {
            "frame": i + 1,
            "ts_ns": int(round(p["t"] * 1e9)) if isinstance(p["t"], float) else int(p["t"]),
            "iface": 0,
            "wire_len": 54 + ln,
            "cap_len": 54 + ln,
            "ip_version": 4,
            "src_hi": 0xFFFF,
            "src_lo": 0x0A000001 if p["d"] == 0 else 0x0A000002,
            "dst_hi": 0xFFFF,
            "dst_lo": 0x0A000002 if p["d"] == 0 else 0x0A000001,
            "ip_id": i,
            "ip_ttl": 64,
            "ip_ecn": int(p.get("ecn", 0)),
            "sport": 40000 if p["d"] == 0 else 5201,
            "dport": 5201 if p["d"] == 0 else 40000,
            "seq": int(p["seq"]) % 2**32,
            "ack": int(p.get("ack", 0)) % 2**32,
            "flags": flag_bits(p["flags"]),
            "win": int(p.get("win", 65535)),
            "tcp_hlen": 20,
            "payload_len": ln,
            "truncated": bool(p.get("truncated", False)),
            "opt_mss": p.get("mss"),
            "opt_wscale": p.get("ws"),
            "opt_sack_perm": bool(p.get("sackok", False)),
            "opt_tsval": None if p.get("tsval") is None else int(p["tsval"]) % 2**32,
            "opt_tsecr": None if p.get("tsecr") is None else int(p["tsecr"]) % 2**32,
            "sack_n": len(sack),
            "decoder": 0,
            "flow_id": flow_id,
            "dir": int(p["d"]),
        }
        for k in range(4):
            row[f"sack_l{k}"] = int(sack[k][0]) % 2**32 if k < len(sack) else None
            row[f"sack_r{k}"] = int(sack[k][1]) % 2**32 if k < len(sack) else None
        rows.append(row)
    df = pl.DataFrame(rows, schema_overrides=schema.polars_schema(schema.PACKETS), infer_schema_length=None)
    return schema.conform(df, schema.PACKETS)
