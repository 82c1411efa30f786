#!/usr/bin/env python3
"""Make a benchmark corpus: N distinct capture files built from the real samples.

Capture ``k`` (k = 0 … N−1) is sample ``k mod S`` (``samples/*/capture.pcap`` in name order, or
``--source`` files) with

* every IPv4 address's low 16 bits (IPv6: the low 16 bits of the last word) increased by
  ``k + 1`` modulo 2^16 — source and destination alike, so every connection of the copy keeps its
  two ends and becomes a different connection from every other copy's; the IPv4 header checksum
  and the TCP checksum (its pseudo-header covers the addresses) are updated incrementally
  (RFC 1624, eqn. 3), so a checksum that was right stays right;
* every timestamp increased by ``k · stagger`` seconds (default 600 s): the copies look like
  captures taken one after another.

Ports, sequence numbers, options, payload bytes, inter-packet times and packet order are the
sample's own, so each copy's analysis (flows, events, replays, fits) is the sample's except for
addresses and times. Every copy's bytes differ (addresses and times), so its content hash does
too: the corpus run sees N distinct captures. Files: ``OUT/c00000-<sample>.pcap`` …, plus
``OUT/manifest.json`` (sources with md5, parameters, N, total bytes). The data are not committed:
``benchmarks/data/`` is ignored by git; the files are rebuilt from the samples in seconds.

Supported sources: classic pcap (µs or ns, either byte order) of link type RAW (101, the samples)
or Ethernet (1), IPv4 or IPv6 TCP; a record whose IP or TCP checksum field is not captured keeps
its bytes (only the captured fields are updated).

Usage: python benchmarks/make_corpus.py [--captures 2000] [--out benchmarks/data/corpus] [--stagger 600]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
DEFAULT_OUT = BENCH / "data" / "corpus"

_MAGIC = {
    b"\xd4\xc3\xb2\xa1": ("<", 1000),
    b"\xa1\xb2\xc3\xd4": (">", 1000),
    b"\x4d\x3c\xb2\xa1": ("<", 1),
    b"\xa1\xb2\x3c\x4d": (">", 1),
}
_LINK_HDR = {101: 0, 1: 14}


@dataclass
class Source:
    path: Path
    name: str
    md5: str
    data: np.ndarray  # the file's bytes (uint8)
    endian: str
    ts_sec: np.ndarray  # offsets of each record's seconds field
    addr_lo: np.ndarray  # offsets of the 16-bit words rewritten (2 per record: src, dst)
    ip_ck: np.ndarray  # offsets of IPv4 header checksums (records whose field is captured)
    ip_ck_rec: np.ndarray  # the record each of them belongs to
    tcp_ck: np.ndarray  # offsets of TCP checksums (captured ones)
    tcp_ck_rec: np.ndarray
    records: int


def read_source(path: Path, name: str | None = None) -> Source:
    """Index a capture: where each record's timestamp, rewritten address words and checksums are."""
    raw = path.read_bytes()
    if len(raw) < 24 or raw[:4] not in _MAGIC:
        raise SystemExit(f"{path}: not a classic pcap")
    end, _ = _MAGIC[raw[:4]]
    linktype = struct.unpack(end + "I", raw[20:24])[0]
    if linktype not in _LINK_HDR:
        raise SystemExit(f"{path}: link type {linktype}; RAW (101) or Ethernet (1) only")
    lh = _LINK_HDR[linktype]
    hdr = struct.Struct(end + "IIII")
    ts, lo, ipck, ipck_r, tck, tck_r = [], [], [], [], [], []
    pos, n, rec = 24, len(raw), 0
    while pos + 16 <= n:
        _, _, cap, _ = hdr.unpack_from(raw, pos)
        body = pos + 16
        if body + cap > n:
            break  # a cut-short last record stays as it is (not rewritten)
        ts.append(pos)
        ip = body + lh
        if lh == 14 and cap >= 14:
            etype = int.from_bytes(raw[body + 12 : body + 14], "big")
            ok = etype in (0x0800, 0x86DD)
        else:
            ok = cap > 0
        v = raw[ip] >> 4 if ok and cap > lh else 0
        if v == 4 and cap >= lh + 20:
            lo += [ip + 14, ip + 18]
            ipck.append(ip + 10)
            ipck_r.append(rec)
            l4, proto = ip + (raw[ip] & 0x0F) * 4, raw[ip + 9]
        elif v == 6 and cap >= lh + 40:
            lo += [ip + 22, ip + 38]
            l4, proto = ip + 40, raw[ip + 6]
        else:
            lo += [-1, -1]
            l4, proto = -1, -1
        if proto == 6 and l4 + 18 <= body + cap:
            tck.append(l4 + 16)
            tck_r.append(rec)
        pos = body + cap
        rec += 1
    lo_a = np.asarray(lo, dtype=np.int64).reshape(-1, 2)
    return Source(
        path=path,
        name=name or (path.parent.name if path.name == "capture.pcap" else path.stem),
        md5=hashlib.md5(raw).hexdigest(),
        data=np.frombuffer(raw, dtype=np.uint8),
        endian=end,
        ts_sec=np.asarray(ts, dtype=np.int64),
        addr_lo=lo_a,
        ip_ck=np.asarray(ipck, dtype=np.int64),
        ip_ck_rec=np.asarray(ipck_r, dtype=np.int64),
        tcp_ck=np.asarray(tck, dtype=np.int64),
        tcp_ck_rec=np.asarray(tck_r, dtype=np.int64),
        records=rec,
    )


def _fold(x: np.ndarray) -> np.ndarray:
    """One's-complement fold of int64 sums to 16 bits."""
    for _ in range(3):
        x = (x & 0xFFFF) + (x >> 16)
    return x


def _get16(buf: np.ndarray, off: np.ndarray) -> np.ndarray:
    return (buf[off].astype(np.int64) << 8) | buf[off + 1]


def _put16(buf: np.ndarray, off: np.ndarray, val: np.ndarray) -> None:
    buf[off] = (val >> 8) & 0xFF
    buf[off + 1] = val & 0xFF


def copy_bytes(src: Source, k: int, stagger_s: int) -> bytes:
    """Capture ``k`` made from ``src``: addresses + (k + 1), timestamps + k · stagger (see above)."""
    buf = src.data.copy()
    # timestamps: the seconds field of every record header
    if len(src.ts_sec) and k:
        idx = src.ts_sec[:, None] + np.arange(4)[None, :]
        sec = buf[idx].copy().view(src.endian + "u4").ravel().astype(np.int64) + k * stagger_s
        buf[idx] = sec.astype(src.endian + "u4").view(np.uint8).reshape(-1, 4)
    # addresses: the low 16-bit word of src and dst
    rec_ok = src.addr_lo[:, 0] >= 0
    offs = src.addr_lo[rec_ok]
    old = _get16(buf, offs.ravel()).reshape(-1, 2)
    new = (old + k + 1) & 0xFFFF
    _put16(buf, offs.ravel(), new.ravel())
    # RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m') for both changed words, per record
    delta = np.zeros(len(src.addr_lo), dtype=np.int64)
    delta[rec_ok] = ((~old) & 0xFFFF).sum(axis=1) + new.sum(axis=1)
    for ck, rec in ((src.ip_ck, src.ip_ck_rec), (src.tcp_ck, src.tcp_ck_rec)):
        if len(ck):
            hc = _get16(buf, ck)
            _put16(buf, ck, (~_fold(((~hc) & 0xFFFF) + delta[rec])) & 0xFFFF)
    return buf.tobytes()


def sources(spec: list[str] | None) -> list[Path]:
    if spec:
        return [Path(p) for p in spec]
    found = sorted((REPO / "samples").glob("*/capture.pcap"))
    if not found:
        raise SystemExit("no samples/*/capture.pcap")
    return found


def make(n: int, out: Path = DEFAULT_OUT, stagger_s: int = 600, source_paths: list[Path] | None = None) -> dict:
    """Write the corpus (or reuse it when its manifest says it was made the same way)."""
    paths = source_paths or sources(None)
    man_path = out / "manifest.json"
    params = {"captures": n, "stagger_s": stagger_s, "sources": [str(p) for p in paths]}
    if man_path.exists():
        old = json.loads(man_path.read_text())
        if old.get("params") == params and all((out / f).exists() for f in old["files"]):
            return old
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    srcs = [read_source(p) for p in paths]
    files, total = [], 0
    for k in range(n):
        s = srcs[k % len(srcs)]
        name = f"c{k:05d}-{s.name}.pcap"
        blob = copy_bytes(s, k, stagger_s)
        (out / name).write_bytes(blob)
        files.append(name)
        total += len(blob)
    manifest = {
        "params": params,
        "sources": [{"path": str(s.path), "md5": s.md5, "records": s.records} for s in srcs],
        "files": files,
        "bytes": total,
    }
    man_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--captures", type=int, default=2000)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--stagger", type=int, default=600, help="seconds between copies")
    ap.add_argument("--source", action="append", help="source capture (repeatable; default: the samples)")
    a = ap.parse_args(argv)
    m = make(a.captures, a.out, a.stagger, sources(a.source) if a.source else None)
    print(f"{len(m['files'])} captures, {m['bytes'] / 2**20:.1f} MiB in {a.out}")


if __name__ == "__main__":
    main()
