#!/usr/bin/env python3
"""Generate tests/golden/tshark_analysis/*.parquet from the external captures (run once).

For every external capture (../shared/captures/external, see PROVENANCE.md) with a TCP stream
carrying at least 20 data segments, tshark's TCP analysis of the *main* stream (most data
segments) is stored per frame:

* ``frame``   — frame number (1-based, as tshark);
* ``flags``   — bit set of tcp.analysis expert flags: 1 retransmission, 2 fast_retransmission,
  4 spurious_retransmission, 8 out_of_order, 16 keep_alive, 32 zero_window_probe,
  64 duplicate_ack, 128 lost_segment;
* ``ack_rtt`` — tcp.analysis.ack_rtt (s), null where tshark defines none;
* ``bif``     — tcp.analysis.bytes_in_flight (bytes), null where tshark defines none;
* ``len``     — tcp.len.

The tests (tests/events/test_events_tshark.py) compare hscc-trace's event streams with these files
without needing tshark. Usage::

    python tests/golden/make_tshark_analysis.py [--captures DIR]

Made with TShark (Wireshark) 4.0.17, default preferences (relative sequence numbers, bytes in
flight tracked, payload-based bytes-in-flight).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent
OUT = HERE / "tshark_analysis"
REPO = HERE.parent.parent
MIN_DATA_SEGMENTS = 20

FLAG_TEXT = (  # (bit, substring of the expert message, substrings that must NOT appear)
    (2, "fast retransmission", ()),
    (4, "spurious retransmission", ()),
    (1, "(suspected) retransmission", ()),
    (8, "out-of-order", ()),
    (16, "keep-alive", ("keep-alive ack",)),
    (32, "zero window probe", ("zero window probe ack",)),
    (64, "duplicate ack", ()),
    (128, "previous segment", ()),
)


def shared_dir() -> Path:
    cand = REPO.parent / "shared"
    if not cand.is_dir():
        raise SystemExit(f"external capture corpus not found ({cand})")
    return cand


def _tshark(path: Path, fields: list[str], extra: list[str] | None = None) -> list[list[str]]:
    cmd = [
        "tshark",
        "-n",
        "-r",
        str(path),
        "-T",
        "fields",
        "-E",
        "separator=\t",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=|",
    ]
    for f in fields:
        cmd += ["-e", f]
    cmd += extra or []
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return [line.split("\t") for line in res.stdout.splitlines() if line]


def analyse(path: Path) -> pl.DataFrame | None:
    rows = _tshark(
        path,
        [
            "frame.number",
            "tcp.stream",
            "tcp.len",
            "tcp.analysis.ack_rtt",
            "tcp.analysis.bytes_in_flight",
            "_ws.expert.message",
        ],
        ["-Y", "tcp"],
    )
    if not rows:
        return None
    recs = []
    for r in rows:
        r = r + [""] * (6 - len(r))
        if not r[1]:
            continue
        msg = r[5].lower()
        flags = 0
        for bit, sub, nots in FLAG_TEXT:
            parts = [m for m in msg.split("|") if sub in m and not any(x in m for x in nots)]
            if parts:
                flags |= bit
        recs.append(
            {
                "frame": int(r[0]),
                "stream": int(r[1].split("|")[0]),
                "len": int(r[2].split("|")[0] or 0),
                "ack_rtt": float(r[3].split("|")[0]) if r[3] else None,
                "bif": int(r[4].split("|")[0]) if r[4] else None,
                "flags": flags,
            }
        )
    df = pl.DataFrame(
        recs,
        schema={
            "frame": pl.UInt32,
            "stream": pl.UInt32,
            "len": pl.UInt32,
            "ack_rtt": pl.Float64,
            "bif": pl.UInt32,
            "flags": pl.UInt8,
        },
    )
    data = df.filter(pl.col("len") > 0).group_by("stream").len().sort("len", descending=True)
    if data.height == 0 or data.row(0)[1] < MIN_DATA_SEGMENTS:
        return None
    main = data.row(0)[0]
    return df.filter(pl.col("stream") == main).drop("stream")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--captures", type=Path, default=shared_dir() / "captures" / "external")
    args = ap.parse_args()
    if shutil.which("tshark") is None:
        print("tshark not found", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    version = subprocess.run(["tshark", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    index = {"tshark": version, "captures": {}}
    for path in sorted(args.captures.iterdir()):
        if path.name.startswith("ODD__") or path.suffix not in (".pcap", ".pcapng", ".gz"):
            continue
        src = path
        tmp = None
        if path.suffix == ".gz":
            tmp = tempfile.NamedTemporaryFile(suffix=".pcap", delete=False)
            with gzip.open(path, "rb") as fh:
                shutil.copyfileobj(fh, tmp)
            tmp.close()
            src = Path(tmp.name)
        try:
            df = analyse(src)
        finally:
            if tmp is not None:
                Path(tmp.name).unlink()
        if df is None:
            continue
        name = path.name.split(".pcap")[0]
        df.write_parquet(OUT / f"{name}.parquet", compression="zstd", compression_level=19)
        index["captures"][path.name] = {
            "golden": f"{name}.parquet",
            "frames": df.height,
            "retransmissions": int(((df["flags"] & 1) > 0).sum()),
            "ack_rtt": int(df["ack_rtt"].is_not_null().sum()),
            "bif": int(df["bif"].is_not_null().sum()),
        }
        print(f"{path.name}: {df.height} frames", file=sys.stderr)
    (OUT / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
