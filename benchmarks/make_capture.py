#!/usr/bin/env python3
"""Make the benchmark captures: deterministic replications of real TCP captures.

Why a replication: the benchmark needs multi-million-packet captures of *real* TCP (real
congestion control, real loss, real ACK clocking) on every machine that runs it, without
shipping gigabytes. Each output file is built from real captures by copying whole flows many
times, each copy made a distinct TCP connection and shifted in time, then merged in time order
as a busy capture point would see them.

Exactly how a file is made (all deterministic, no randomness):

1. Sources (``--source``, default :data:`DEFAULT_SOURCES`): real classic-pcap captures of
   Ethernet/IPv4 or Ethernet/IPv6 TCP (µs or ns, either byte order, ``.gz`` allowed). Every record
   must be TCP; anything else is an error (nothing is silently dropped). The default is the seven
   M-Lab NDT captures in ``../shared/captures/external`` (beside the repository) (real Internet tests, header-only,
   snaplen 94/114, see that folder's PROVENANCE.md). ``--source samples`` uses the real Linux
   captures ``samples/*/capture.pcap`` instead.
2. Copy ``k`` (k = 0, 1, 2, …) replays source ``k mod S`` (sources in the order given). The
   source's *client* address (source address of its first pure SYN; without a SYN, the address of
   the side with the higher port) is replaced everywhere it appears (src or dst) by
   ``client + k`` — IPv4: ``k`` added to the low 16 bits (wrapping inside the client's /16);
   IPv6: ``k`` added to the low 32 bits. Ports, sequence numbers, options and payload bytes are
   unchanged. The IPv4 header checksum and the TCP checksum are updated incrementally (RFC 1624),
   so a checksum that was right stays right, and one that was wrong (TX offload) stays wrong.
3. Copy ``k`` starts at ``t0 + k · stagger`` where ``t0`` is the first timestamp of source 0;
   inside a copy every packet keeps its original offset from its source's first packet, so the
   inter-packet times, the packet order and therefore every RTT, burst and loss are the real ones.
4. All copies are merged by time (ties: lower copy first, then capture order). The merge key is
   the running maximum of each source's timestamps, so a source whose clock steps backwards keeps
   its own packet order exactly. The first ``--packets`` packets of the merged stream are written
   (like a capture stopped after N packets: the last copies are cut off, as in real captures).
5. ``--prefix P`` (the many-flows variant) keeps only the first ``P`` packets of each copy
   (handshake, slow start, the first round trips): many short flows. Flows cut this way simply
   end without FIN, like connections still open when a capture stops.
6. Output: nanosecond classic pcap, little-endian, link type Ethernet, snaplen = the largest
   source snaplen; each record's caplen/orig len are the source's. Written with numpy in chunks
   (no per-packet Python). A ``.json`` manifest next to it records sources (with md5), parameters,
   packets, copies, bytes and the output's sha256.

Presets (``--preset``): ``0.1M``, ``1M``, ``5M`` (stagger 1 s: ~10 concurrent bulk flows) and
``flows10k`` (10 000 copies of the first 100 packets, stagger 10 ms).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: the external captures beside the repository (../shared/captures/external)
EXTERNAL = Path(__file__).resolve().parents[2] / "shared" / "captures" / "external"
DEFAULT_SOURCES = [
    EXTERNAL / "mlab-etl__ndt-m6znc_1632401351_000000000005BA77.pcap",  # ndt7 download, loss, IPv4
    EXTERNAL / "mlab-etl__ndt-m6znc_1632401351_000000000005B90B.pcap",  # upload, IPv4
    EXTERNAL / "mlab-etl__ndt-4c6fb_1625899199_000000000121C1A0.pcap",  # ndt5 download, IPv4
    EXTERNAL / "mlab-etl__ndt-nnwk2_1611335823_00000000000C2E15.pcap",  # ndt7 download, loss, IPv4
    EXTERNAL / "mlab-etl__ndt-4dh2l_1591894023_0000000000363A84.pcap",  # ndt5 download, loss, IPv4
    EXTERNAL / "mlab-etl__ndt-nnwk2_1611335823_00000000000C2DA9.pcap",  # ndt7 download, IPv6
    EXTERNAL / "mlab-etl__ndt-m6znc_1632401351_000000000005B9EA.pcap.gz",  # upload, IPv6, 146k pkts
]
REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"

PRESETS: dict[str, dict] = {
    "0.1M": dict(packets=100_000, stagger=1.0, prefix=None, copies=None),
    "1M": dict(packets=1_000_000, stagger=1.0, prefix=None, copies=None),
    "5M": dict(packets=5_000_000, stagger=1.0, prefix=None, copies=None),
    "flows10k": dict(packets=None, stagger=0.01, prefix=100, copies=10_000),
}

ROW = 128  # bytes kept per source record in the padded table (≥ every snaplen used here)
ETH = 14


@dataclass
class Source:
    path: Path
    md5: str
    snaplen: int
    ts_ns: np.ndarray  # int64, absolute
    caplen: np.ndarray  # int64
    origlen: np.ndarray  # int64
    rows: np.ndarray  # (n, ROW) uint8, record bytes zero-padded
    ipver: np.ndarray  # uint8 4/6
    client_at: np.ndarray  # (n,) int8: 0 client is src, 1 client is dst
    client: bytes  # client address (4 or 16 bytes)


def _read_bytes(path: Path) -> bytes:
    raw = path.read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


def read_source(path: Path) -> Source:
    """Parse a classic pcap into a padded record table and find the client address."""
    data = _read_bytes(path)
    if len(data) < 24:
        raise SystemExit(f"{path}: not a pcap (too short)")
    magic = data[:4]
    table = {
        b"\xd4\xc3\xb2\xa1": ("<", 1000),
        b"\xa1\xb2\xc3\xd4": (">", 1000),
        b"\x4d\x3c\xb2\xa1": ("<", 1),
        b"\xa1\xb2\x3c\x4d": (">", 1),
    }
    if magic not in table:
        raise SystemExit(f"{path}: not a classic pcap (magic {magic.hex()}); convert pcapng with editcap -F pcap")
    end, mult = table[magic]
    _, _, _, _, snaplen, linktype = struct.unpack(end + "HHiIII", data[4:24])
    if linktype != 1:
        raise SystemExit(f"{path}: link type {linktype}, only Ethernet (1) is supported")
    hdr = struct.Struct(end + "IIII")
    ts, cap, orig, offs = [], [], [], []
    pos, n = 24, len(data)
    while pos + 16 <= n:
        s, frac, c, o = hdr.unpack_from(data, pos)
        if pos + 16 + c > n:
            print(f"warning: {path.name}: truncated last record dropped (1 record)", file=sys.stderr)
            break
        ts.append(s * 1_000_000_000 + frac * mult)
        cap.append(c)
        orig.append(o)
        offs.append(pos + 16)
        pos += 16 + c
    caplen = np.asarray(cap, dtype=np.int64)
    if caplen.max() > ROW:
        raise SystemExit(
            f"{path}: records up to {caplen.max()} bytes captured; use a header-only capture "
            f"(snaplen ≤ {ROW}), e.g. tcpdump -s 96, or editcap -s 96"
        )
    buf = np.frombuffer(data, dtype=np.uint8)
    idx = np.asarray(offs, dtype=np.int64)[:, None] + np.arange(ROW)[None, :]
    rows = buf[np.minimum(idx, len(buf) - 1)].copy()
    rows[np.arange(ROW)[None, :] >= caplen[:, None]] = 0
    etype = (rows[:, 12].astype(np.int64) << 8) | rows[:, 13]
    ipver = np.where(etype == 0x0800, 4, np.where(etype == 0x86DD, 6, 0)).astype(np.uint8)
    proto = np.where(ipver == 4, rows[:, ETH + 9], rows[:, ETH + 6])
    bad = (ipver == 0) | (proto != 6) | ((ipver == 4) & ((rows[:, ETH] & 0x0F) < 5))
    if bad.any():
        raise SystemExit(
            f"{path}: {int(bad.sum())} of {len(rows)} records are not Ethernet/IPv4|IPv6/TCP "
            f"(without IPv6 extension headers); this maker only replicates pure TCP captures"
        )
    if len(set(ipver.tolist())) != 1:
        raise SystemExit(f"{path}: mixes IPv4 and IPv6; use single-family sources")
    v = int(ipver[0])
    alen = 4 if v == 4 else 16
    s0 = ETH + (12 if v == 4 else 8)
    src = rows[:, s0 : s0 + alen]
    dst = rows[:, s0 + alen : s0 + 2 * alen]
    l4 = ETH + (((rows[:, ETH] & 0x0F).astype(np.int64) * 4) if v == 4 else 40)
    r = np.arange(len(rows))
    flags = rows[r, l4 + 13]
    syn = np.flatnonzero((flags & 0x12) == 0x02)
    if len(syn):
        client = bytes(src[syn[0]])
    else:  # no handshake captured: the side with the higher port is the client
        sport = (rows[0, l4[0]].astype(int) << 8) | rows[0, l4[0] + 1]
        dport = (rows[0, l4[0] + 2].astype(int) << 8) | rows[0, l4[0] + 3]
        client = bytes(src[0]) if sport >= dport else bytes(dst[0])
    cl = np.frombuffer(client, dtype=np.uint8)
    is_src = (src == cl).all(axis=1)
    is_dst = (dst == cl).all(axis=1)
    if not (is_src | is_dst).all():
        raise SystemExit(
            f"{path}: {int((~(is_src | is_dst)).sum())} packets do not involve the client "
            f"address; this maker replicates single-client captures"
        )
    return Source(
        path=path,
        md5=hashlib.md5(path.read_bytes()).hexdigest(),
        snaplen=snaplen,
        ts_ns=np.asarray(ts, dtype=np.int64),
        caplen=caplen,
        origlen=np.asarray(orig, dtype=np.int64),
        rows=rows,
        ipver=ipver,
        client_at=np.where(is_src, 0, 1).astype(np.int8),
        client=client,
    )


def _fold(x: np.ndarray) -> np.ndarray:
    """One's-complement fold of int64 sums to 16 bits."""
    x = (x & 0xFFFF) + (x >> 16)
    x = (x & 0xFFFF) + (x >> 16)
    return (x & 0xFFFF) + (x >> 16)


def _words(rows: np.ndarray, start: np.ndarray | int, nwords: int) -> np.ndarray:
    """(n, nwords) big-endian 16-bit words at per-row byte offset ``start``."""
    r = np.arange(rows.shape[0])[:, None]
    c = np.asarray(start).reshape(-1, 1) + 2 * np.arange(nwords)[None, :]
    return (rows[r, c].astype(np.int64) << 8) | rows[r, c + 1]


def patch_copies(src: Source, idx: np.ndarray, copy_k: np.ndarray) -> np.ndarray:
    """Rows ``idx`` of ``src`` with the client address shifted by ``copy_k`` (checksums updated)."""
    rows = src.rows[idx].copy()
    n = len(idx)
    if n == 0:
        return rows
    v = int(src.ipver[0])
    alen = 4 if v == 4 else 16
    s0 = ETH + (12 if v == 4 else 8)
    pos = s0 + alen * src.client_at[idx].astype(np.int64)  # where the client address sits
    # the changed part: IPv4 low 16 bits (bytes 2-3), IPv6 low 32 bits (bytes 12-15)
    if v == 4:
        lo_off, nw = 2, 1
        base = int.from_bytes(src.client[2:4], "big")
        new_lo = (base + copy_k) & 0xFFFF
        new_w = new_lo[:, None]
    else:
        lo_off, nw = 12, 2
        base = int.from_bytes(src.client[12:16], "big")
        new_lo = (base + copy_k) & 0xFFFFFFFF
        new_w = np.stack([new_lo >> 16, new_lo & 0xFFFF], axis=1)
    old_w = _words(rows, pos + lo_off, nw)
    r = np.arange(n)[:, None]
    c = (pos + lo_off)[:, None] + np.arange(2 * nw)[None, :]
    nb = np.empty((n, 2 * nw), dtype=np.uint8)
    nb[:, 0::2] = (new_w >> 8) & 0xFF
    nb[:, 1::2] = new_w & 0xFF
    rows[r, c] = nb
    # RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m') over every changed 16-bit word
    delta = ((~old_w) & 0xFFFF).sum(axis=1) + new_w.sum(axis=1)

    def update(ck_off: np.ndarray) -> None:
        hc = _words(rows, ck_off, 1)[:, 0]
        new = (~_fold(((~hc) & 0xFFFF) + delta)) & 0xFFFF
        ok = ck_off + 1 < src.caplen[idx]  # checksum field captured
        rr = np.flatnonzero(ok)
        rows[rr, ck_off[rr]] = (new[rr] >> 8) & 0xFF
        rows[rr, ck_off[rr] + 1] = new[rr] & 0xFF

    if v == 4:
        update(np.full(n, ETH + 10))
        l4 = ETH + (rows[:, ETH] & 0x0F).astype(np.int64) * 4
    else:
        l4 = np.full(n, ETH + 40)
    update(l4 + 16)  # TCP checksum covers the pseudo-header addresses
    return rows


def build(
    sources: list[Source], packets: int | None, stagger_s: float, prefix: int | None, copies: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Plan the merged stream: (source index, record index, copy k) per output packet, time order."""
    t0 = int(sources[0].ts_ns[0])
    per = [min(len(s.ts_ns), prefix) if prefix else len(s.ts_ns) for s in sources]
    if copies is None:
        assert packets is not None
        copies, total = 0, 0
        while total < packets:
            total += per[copies % len(sources)]
            copies += 1
    ks = np.arange(copies)
    si = ks % len(sources)
    # merge key and payload per copy, concatenated
    key_parts, src_parts, rec_parts, k_parts = [], [], [], []
    rel = [np.maximum.accumulate(s.ts_ns - s.ts_ns[0]) for s in sources]
    for k in range(copies):
        s = int(si[k])
        m = per[s]
        key_parts.append(rel[s][:m] + t0 + int(round(k * stagger_s * 1e9)))
        src_parts.append(np.full(m, s, dtype=np.int32))
        rec_parts.append(np.arange(m, dtype=np.int64))
        k_parts.append(np.full(m, k, dtype=np.int64))
    key = np.concatenate(key_parts)
    kk = np.concatenate(k_parts)
    rec = np.concatenate(rec_parts)
    order = np.lexsort((rec, kk, key))
    if packets is not None:
        order = order[:packets]
    return np.concatenate(src_parts)[order], rec[order], kk[order]


def write(
    out: Path,
    sources: list[Source],
    plan: tuple[np.ndarray, np.ndarray, np.ndarray],
    stagger_s: float,
    chunk: int = 250_000,
) -> dict:
    sidx, rec, kk = plan
    t0 = int(sources[0].ts_ns[0])
    snaplen = max(s.snaplen for s in sources)
    sha = hashlib.sha256()
    nbytes = 0
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    with open(tmp, "wb") as fh:
        head = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, snaplen, 1)
        fh.write(head)
        sha.update(head)
        nbytes += len(head)
        for a in range(0, len(sidx), chunk):
            b = min(a + chunk, len(sidx))
            n = b - a
            rows = np.empty((n, ROW), dtype=np.uint8)
            ts = np.empty(n, dtype=np.int64)
            cap = np.empty(n, dtype=np.int64)
            orig = np.empty(n, dtype=np.int64)
            for s, src in enumerate(sources):
                sel = np.flatnonzero(sidx[a:b] == s)
                if len(sel) == 0:
                    continue
                r = rec[a:b][sel]
                k = kk[a:b][sel]
                rows[sel] = patch_copies(src, r, k)
                ts[sel] = src.ts_ns[r] - src.ts_ns[0] + t0 + np.round(k * stagger_s * 1e9).astype(np.int64)
                cap[sel] = src.caplen[r]
                orig[sel] = src.origlen[r]
            hdr = np.empty((n, 4), dtype="<u4")
            hdr[:, 0] = ts // 1_000_000_000
            hdr[:, 1] = ts % 1_000_000_000
            hdr[:, 2] = cap
            hdr[:, 3] = orig
            full = np.concatenate([hdr.view(np.uint8).reshape(n, 16), rows], axis=1)
            mask = np.arange(16 + ROW)[None, :] < (16 + cap)[:, None]
            blob = full[mask].tobytes()
            fh.write(blob)
            sha.update(blob)
            nbytes += len(blob)
    tmp.replace(out)
    return dict(bytes=nbytes, sha256=sha.hexdigest(), snaplen=snaplen)


def resolve_sources(spec: list[str] | None) -> list[Path]:
    if not spec:
        return DEFAULT_SOURCES
    if spec == ["samples"]:
        found = sorted((REPO / "samples").glob("*/capture.pcap"))
        if not found:
            raise SystemExit("no samples/*/capture.pcap yet")
        return found
    return [Path(p) for p in spec]


def make(
    name: str,
    packets: int | None,
    stagger: float,
    prefix: int | None,
    copies: int | None,
    source_paths: list[Path],
    out_dir: Path = DATA,
    force: bool = False,
) -> dict:
    out = out_dir / f"{name}.pcap"
    man = out.with_suffix(".json")
    params = dict(
        packets=packets, stagger_s=stagger, prefix=prefix, copies=copies, sources=[str(p) for p in source_paths]
    )
    if out.exists() and man.exists() and not force:
        old = json.loads(man.read_text())
        if old.get("params") == params:
            return old
    sources = [read_source(p) for p in source_paths]
    plan = build(sources, packets, stagger, prefix, copies)
    info = write(out, sources, plan, stagger)
    sidx, _, kk = plan
    manifest = dict(
        name=name,
        file=str(out),
        params=params,
        packets=int(len(sidx)),
        copies_started=int(len(np.unique(kk))),
        flows=int(len(np.unique(kk))),
        sources=[
            dict(
                path=str(s.path),
                md5=s.md5,
                packets=int(len(s.ts_ns)),
                client=(".".join(map(str, s.client)) if len(s.client) == 4 else s.client.hex()),
            )
            for s in sources
        ],
        duration_s=None,
        **info,
    )
    manifest["duration_s"] = round(((len(np.unique(kk)) - 1) * stagger), 3)
    man.write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--preset", action="append", choices=sorted(PRESETS), help="preset(s) to build (default: all)")
    ap.add_argument("--name", help="custom output name (with --packets/--copies)")
    ap.add_argument("--packets", type=int)
    ap.add_argument("--copies", type=int)
    ap.add_argument("--prefix", type=int)
    ap.add_argument("--stagger", type=float, default=1.0, help="seconds between copy starts")
    ap.add_argument("--source", action="append", help="source pcap (repeatable) or 'samples'")
    ap.add_argument("--out-dir", type=Path, default=DATA)
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args(argv)
    srcs = resolve_sources(a.source)
    jobs = []
    if a.name:
        jobs.append((a.name, a.packets, a.stagger, a.prefix, a.copies))
    else:
        for p in a.preset or list(PRESETS):
            c = PRESETS[p]
            jobs.append((f"replica-{p}", c["packets"], c["stagger"], c["prefix"], c["copies"]))
    for name, packets, stagger, prefix, copies in jobs:
        m = make(name, packets, stagger, prefix, copies, srcs, a.out_dir, a.force)
        print(
            f"{m['file']}: {m['packets']} packets, {m['flows']} flows, {m['bytes'] / 1e6:.1f} MB, sha256 {m['sha256'][:16]}"
        )


if __name__ == "__main__":
    main()
