"""Fast-path decoder: link layer → IPv4/IPv6 → TCP header and options, compiled with numba.

One compiled loop over a batch's record index fills parallel column arrays (no Python object
per packet). Link types: Ethernet (any stack of 802.1Q / 802.1ad / QinQ tags), Linux cooked SLL
and SLL2, raw IP (LINKTYPE_RAW 101 and the DLT_RAW values 12/14, IPV4 228, IPV6 229), BSD NULL
(host byte order, either) and LOOP (network byte order). IPv4 with options; IPv6 with
hop-by-hop, routing, destination-options and AH extension headers skipped (RFC 8200 §4);
BIG TCP / TSO super-packets whose IP length field is 0 take their length from the frame length
(IPv4 tot_len 0, as tcpdump does; IPv6 jumbo payload option, RFC 2675). TCP options (RFC 9293
§3.1, RFC 7323, RFC 2018): MSS (kind 2), window scale (3), SACK-permitted (4), SACK blocks (5,
up to 4), timestamps (8).

Each record gets a status: :data:`OK` or a skip reason (:data:`REASONS`). Records the fast path
does not understand — other link types, MPLS, PPPoE, 802.3/LLC frames, GRE/IP-in-IP/VXLAN
tunnels and IP fragments — get :data:`FALLBACK` and go to the scapy decoder
(:mod:`hscc_trace.capture.slow`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from hscc_trace.perf.jit import njit

if TYPE_CHECKING:
    import polars as pl

#: TCP flag bits of the ``flags`` column (RFC 9293 §3.1)
F_FIN, F_SYN, F_RST, F_ACK = 0x01, 0x02, 0x04, 0x10

OK = 0
FALLBACK = 7
FRAGMENT = 6
#: status code -> human reason used in CaptureMeta.skipped
REASONS = {
    1: "link-layer header truncated",
    2: "not IP (ARP, LLDP, STP, …)",
    3: "IP but not TCP (UDP, ICMP, …)",
    4: "IP header truncated or malformed",
    5: "TCP header truncated by the snapshot length",
    6: "IP fragment",
    7: "not decodable (unknown link type or encapsulation)",
    8: "malformed TCP header",
}


@njit(cache=True, inline="always")
def _be16(b, p):
    return (np.uint32(b[p]) << 8) | np.uint32(b[p + 1])


@njit(cache=True, inline="always")
def _be32(b, p):
    return (np.uint32(b[p]) << 24) | (np.uint32(b[p + 1]) << 16) | (np.uint32(b[p + 2]) << 8) | np.uint32(b[p + 3])


@njit(cache=True, inline="always")
def _be64(b, p):
    return (np.uint64(_be32(b, p)) << np.uint64(32)) | np.uint64(_be32(b, p + 4))


class Columns(NamedTuple):
    """The decoder's output columns, one row per record (or per TCP record, packed). ``sack`` is
    8×n (left, right edge of SACK blocks 0-3, one row each); ``status`` is per record (:data:`OK`
    or a skip reason)."""

    status: np.ndarray  # uint8
    ipv: np.ndarray  # uint8
    shi: np.ndarray  # uint64, source address (high, low 64 bits; IPv4 as ::ffff:a.b.c.d)
    slo: np.ndarray  # uint64
    dhi: np.ndarray  # uint64, destination address
    dlo: np.ndarray  # uint64
    ipid: np.ndarray  # uint32
    ttl: np.ndarray  # uint8
    ecn: np.ndarray  # uint8
    sport: np.ndarray  # uint16
    dport: np.ndarray  # uint16
    seq: np.ndarray  # uint32
    ack: np.ndarray  # uint32
    flags: np.ndarray  # uint16
    win: np.ndarray  # uint16
    thl: np.ndarray  # uint8, TCP header length
    plen: np.ndarray  # uint32, TCP payload length
    trunc: np.ndarray  # bool, payload cut by the snapshot length
    mss: np.ndarray  # uint16
    has_mss: np.ndarray  # bool
    wsc: np.ndarray  # uint8
    has_wsc: np.ndarray  # bool
    sackp: np.ndarray  # bool, SACK permitted
    tsval: np.ndarray  # uint32
    tsecr: np.ndarray  # uint32
    has_ts: np.ndarray  # bool
    sack_n: np.ndarray  # uint8, SACK blocks carried (≤ 4)
    sack: np.ndarray  # uint32, 8×n

    def rows(self, r: slice) -> Columns:
        """Rows ``r`` of every column."""
        return Columns(*(a[r] if a.ndim == 1 else a[:, r] for a in self))


@njit(work=lambda a: len(a[0].off), cost=(6.93, 4.57e-05), cache=True, nogil=True)
def decode_batch(rec, cols, compact):
    """Decode every record of ``rec`` (:class:`~hscc_trace.capture.reader.Records`) into
    ``cols`` (:class:`Columns`, filled in place); see the module docstring.

    ``cols.status[i]`` is record i's status. With ``compact`` the columns of the TCP records
    (status :data:`OK`) are packed at the front of the output arrays, in record order; otherwise
    column row i belongs to record i. Returns the number of TCP records.
    """
    return _decode(True, rec, cols, compact)


@njit(work=lambda a: len(a[0].off), cost=(12.12, 3.43e-05), cache=True, nogil=True)
def decode_batch_flows(rec, cols):
    """:func:`decode_batch` (not compact) filling only what the flow table needs: not ``ipid``,
    ``ecn``, ``thl``, ``trunc``, ``sack_n`` or ``sack`` (never written, may be empty),
    the option columns (mss, has_mss, wsc, has_wsc, sackp) only for SYN segments (the flow table
    reads those options of SYNs only) and the timestamp option (tsval, tsecr, has_ts: the
    receiver-side RTT) of every segment; ≈ 40 % less time."""
    return _decode(False, rec, cols, False)


@njit(cache=True, inline="always")
def _decode(full, rec, cols, compact):
    """The decoder (see :func:`decode_batch`); with ``full`` False (a constant in each caller, so
    the compiler drops the branches) the columns the flow table does not read are not written."""
    buf, off, cap, wire, lt = rec
    (
        status,
        ipv,
        shi,
        slo,
        dhi,
        dlo,
        ipid,
        ttl,
        ecn,
        sport,
        dport,
        seq,
        ack,
        flags,
        win,
        thl,
        plen,
        trunc,
        mss,
        has_mss,
        wsc,
        has_wsc,
        sackp,
        tsval,
        tsecr,
        has_ts,
        sack_n,
        sack,
    ) = cols
    n = len(off)
    k = 0  # TCP records so far
    for i in range(n):
        j = k if compact else i  # output row
        p0 = off[i]
        end = p0 + cap[i]
        t = lt[i]
        st = 0
        l3 = -1
        ver = 0
        et = np.uint32(0)
        # ---- link layer -----------------------------------------------------------------
        if t == 1:  # Ethernet
            if end - p0 < 14:
                status[i] = 1
                continue
            et = _be16(buf, p0 + 12)
            q = p0 + 14
            while et == 0x8100 or et == 0x88A8 or et == 0x9100 or et == 0x9200:
                if q + 4 > end:
                    st = 1
                    break
                et = _be16(buf, q + 2)
                q += 4
            if st:
                status[i] = st
                continue
            l3 = q
        elif t == 113:  # Linux SLL
            if end - p0 < 16:
                status[i] = 1
                continue
            et = _be16(buf, p0 + 14)
            q = p0 + 16
            while et == 0x8100 or et == 0x88A8:
                if q + 4 > end:
                    st = 1
                    break
                et = _be16(buf, q + 2)
                q += 4
            if st:
                status[i] = st
                continue
            l3 = q
        elif t == 276:  # Linux SLL2
            if end - p0 < 20:
                status[i] = 1
                continue
            et = _be16(buf, p0)
            l3 = p0 + 20
        elif t == 101 or t == 12 or t == 14:  # raw IP
            if end - p0 < 1:
                status[i] = 4
                continue
            v = buf[p0] >> 4
            et = np.uint32(0x0800) if v == 4 else (np.uint32(0x86DD) if v == 6 else np.uint32(0))
            l3 = p0
        elif t == 228:
            et = np.uint32(0x0800)
            l3 = p0
        elif t == 229:
            et = np.uint32(0x86DD)
            l3 = p0
        elif t == 0 or t == 108:  # BSD NULL (host order) / LOOP (network order)
            if end - p0 < 4:
                status[i] = 1
                continue
            fam_be = _be32(buf, p0)
            fam_le = (
                (np.uint32(buf[p0 + 3]) << 24)
                | (np.uint32(buf[p0 + 2]) << 16)
                | (np.uint32(buf[p0 + 1]) << 8)
                | np.uint32(buf[p0])
            )
            fam = fam_be if t == 108 else (fam_le if fam_le < 256 else fam_be)
            if fam == 2:
                et = np.uint32(0x0800)
            elif fam == 24 or fam == 28 or fam == 30 or fam == 10:
                et = np.uint32(0x86DD)
            else:
                status[i] = 2
                continue
            l3 = p0 + 4
        else:
            status[i] = FALLBACK
            continue
        if et == 0x0800:
            ver = 4
        elif et == 0x86DD:
            ver = 6
        elif et == 0x8847 or et == 0x8848 or et == 0x8864 or et < 0x0600:
            status[i] = FALLBACK  # MPLS, PPPoE session, 802.3 length field (LLC/SNAP)
            continue
        else:
            status[i] = 2
            continue
        # ---- IP ---------------------------------------------------------------------------
        l4 = 0
        ip_end = 0
        if ver == 4:
            if l3 + 20 > end or (buf[l3] >> 4) != 4:
                status[i] = 4
                continue
            ihl = (buf[l3] & 0x0F) * 4
            tot = _be16(buf, l3 + 2)
            if tot == 0:  # TSO/BIG TCP super-packet: length from the frame
                tot = np.uint32(wire[i] - (l3 - p0))
            if ihl < 20 or tot < ihl:
                status[i] = 4
                continue
            proto = buf[l3 + 9]
            frag = _be16(buf, l3 + 6)
            if (frag & 0x3FFF) != 0:
                status[i] = FRAGMENT
                continue
            if proto != 6:
                if proto == 47 or proto == 4 or proto == 41:
                    status[i] = FALLBACK
                elif proto == 17 and l3 + ihl + 4 <= end and _be16(buf, l3 + ihl + 2) == 4789:
                    status[i] = FALLBACK  # VXLAN
                else:
                    status[i] = 3
                continue
            ipv[j] = 4
            shi[j] = 0
            slo[j] = np.uint64(0xFFFF00000000) | np.uint64(_be32(buf, l3 + 12))
            dhi[j] = 0
            dlo[j] = np.uint64(0xFFFF00000000) | np.uint64(_be32(buf, l3 + 16))
            ttl[j] = buf[l3 + 8]  # (the flow table too: where the capture is)
            if full:
                ipid[j] = _be16(buf, l3 + 4)
                ecn[j] = buf[l3 + 1] & 3
            l4 = l3 + ihl
            ip_end = l3 + tot
        else:
            if l3 + 40 > end or (buf[l3] >> 4) != 6:
                status[i] = 4
                continue
            pl = np.int64(_be16(buf, l3 + 4))
            nh = buf[l3 + 6]
            q = l3 + 40
            bad = False
            jumbo = np.int64(-1)
            while nh == 0 or nh == 43 or nh == 60 or nh == 51:
                if q + 8 > end:
                    bad = True
                    break
                hl = (np.int64(buf[q + 1]) + 2) * 4 if nh == 51 else (np.int64(buf[q + 1]) + 1) * 8
                if nh == 0:  # hop-by-hop: look for the jumbo payload option (RFC 2675)
                    o = q + 2
                    while o + 2 <= q + hl and o + 2 <= end:
                        ot = buf[o]
                        if ot == 0:
                            o += 1
                            continue
                        ol = np.int64(buf[o + 1])  # (a uint8 sum 2 + 254 would wrap to 0)
                        if ot == 0xC2 and ol == 4 and o + 6 <= end:
                            jumbo = np.int64(_be32(buf, o + 2))
                        o += 2 + ol
                nh = buf[q]
                q += hl
            if bad:
                status[i] = 4
                continue
            if nh == 44:
                status[i] = FRAGMENT
                continue
            if nh != 6:
                if nh == 4 or nh == 41 or nh == 47:
                    status[i] = FALLBACK
                elif nh == 17 and q + 4 <= end and _be16(buf, q + 2) == 4789:
                    status[i] = FALLBACK
                else:
                    status[i] = 3
                continue
            if pl == 0:
                pl = jumbo if jumbo >= 0 else np.int64(wire[i]) - (l3 - p0) - 40
            ipv[j] = 6
            shi[j] = _be64(buf, l3 + 8)
            slo[j] = _be64(buf, l3 + 16)
            dhi[j] = _be64(buf, l3 + 24)
            dlo[j] = _be64(buf, l3 + 32)
            ttl[j] = buf[l3 + 7]
            if full:
                ipid[j] = 0
                ecn[j] = (buf[l3 + 1] >> 4) & 3
            l4 = q
            ip_end = l3 + 40 + pl
        # ---- TCP --------------------------------------------------------------------------
        if l4 + 20 > end:
            status[i] = 5 if l4 < ip_end else 8
            continue
        hl = np.int64(buf[l4 + 12] >> 4) * 4
        if hl < 20 or l4 + hl > ip_end:
            status[i] = 8
            continue
        sport[j] = _be16(buf, l4)
        dport[j] = _be16(buf, l4 + 2)
        seq[j] = _be32(buf, l4 + 4)
        ack[j] = _be32(buf, l4 + 8)
        flags[j] = ((np.uint32(buf[l4 + 12]) & 1) << 8) | np.uint32(buf[l4 + 13])
        win[j] = _be16(buf, l4 + 14)
        plen[j] = ip_end - l4 - hl
        if full:
            thl[j] = hl
            trunc[j] = ip_end > end
        if full and l4 + hl > end:
            trunc[j] = True
        ns = 0
        # the flow table reads options of SYN segments only (MSS, window scale, SACK-permitted,
        # timestamps negotiated) and the timestamp option of every segment: without ``full`` the
        # other options of other segments are not parsed and their columns are left as they were
        if (not full) and (buf[l4 + 13] & 0x02) == 0:
            has_ts[j] = False
            o = l4 + 20
            oend = min(l4 + hl, end)
            if oend - o >= 12 and buf[o] == 1 and buf[o + 1] == 1 and buf[o + 2] == 8 and buf[o + 3] == 10:
                # NOP, NOP, timestamps: the layout every common stack sends (RFC 7323 Appendix A)
                tsval[j] = _be32(buf, o + 4)
                tsecr[j] = _be32(buf, o + 8)
                has_ts[j] = True
            else:
                while o < oend:
                    kind = buf[o]
                    if kind == 0:
                        break
                    if kind == 1:
                        o += 1
                        continue
                    if o + 2 > oend:
                        break
                    ln = np.int64(buf[o + 1])
                    if ln < 2 or o + ln > oend:
                        break
                    if kind == 8 and ln == 10:
                        tsval[j] = _be32(buf, o + 2)
                        tsecr[j] = _be32(buf, o + 6)
                        has_ts[j] = True
                        break
                    o += ln
        if full or (buf[l4 + 13] & 0x02) != 0:
            # presence flags only: values behind a False flag (or beyond sack_n) are never read
            has_mss[j] = False
            has_wsc[j] = False
            sackp[j] = False
            has_ts[j] = False
            # options, as far as they were captured
            o = l4 + 20
            oend = min(l4 + hl, end)
            while o < oend:
                kind = buf[o]
                if kind == 0:
                    break
                if kind == 1:
                    o += 1
                    continue
                if o + 2 > oend:
                    break
                ln = np.int64(buf[o + 1])
                if ln < 2 or o + ln > oend:
                    break
                if kind == 2 and ln == 4:
                    mss[j] = _be16(buf, o + 2)
                    has_mss[j] = True
                elif kind == 3 and ln == 3:
                    wsc[j] = buf[o + 2]
                    has_wsc[j] = True
                elif kind == 4 and ln == 2:
                    sackp[j] = True
                elif kind == 5 and ln >= 10 and full:
                    nb = (ln - 2) // 8
                    for b in range(nb):
                        if ns < 4:
                            sack[2 * ns, j] = _be32(buf, o + 2 + 8 * b)
                            sack[2 * ns + 1, j] = _be32(buf, o + 6 + 8 * b)
                            ns += 1
                elif kind == 8 and ln == 10:
                    tsval[j] = _be32(buf, o + 2)
                    tsecr[j] = _be32(buf, o + 6)
                    has_ts[j] = True
                o += ln
        if full:
            sack_n[j] = ns
        status[i] = OK
        k += 1
    return k


class Scratch:
    """Output arrays reused from batch to batch (no allocation and page faults per batch).

    Only for consumers that are done with a batch's columns before decoding the next one
    (the streaming flow table); DataFrames may share numpy memory, so :func:`decode` never uses it.
    """

    def __init__(self) -> None:
        self.cap = 0
        self.arrays = _alloc(0)

    def get(self, n: int) -> Columns:
        if n > self.cap:
            self.cap = max(n, 2 * self.cap)
            self.arrays = _alloc(self.cap)
        return self.arrays.rows(slice(0, n))


def _alloc(n: int) -> Columns:
    e = np.empty  # decode_batch writes every field of every record it decodes as TCP
    dtypes = {f: t for t, fs in _DTYPES.items() for f in fs}
    return Columns(*(e((8, n) if f == "sack" else n, dtypes[f]) for f in Columns._fields))


#: each column's dtype
_DTYPES = {
    np.uint8: ("status", "ipv", "ttl", "ecn", "thl", "wsc", "sack_n"),
    np.uint64: ("shi", "slo", "dhi", "dlo"),
    np.uint32: ("ipid", "seq", "ack", "plen", "tsval", "tsecr", "sack"),
    np.uint16: ("sport", "dport", "flags", "win", "mss"),
    np.bool_: ("trunc", "has_mss", "has_wsc", "sackp", "has_ts"),
}


def decode_all(batch, scratch: Scratch, lo: int = 0, hi: int | None = None) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Decode a batch into scratch columns covering *every* record, and the status per record.

    Like :func:`decode_arrays` but without picking out the TCP records: the values of records
    whose status is not :data:`OK` are garbage (for consumers that skip them by status, such as
    :meth:`hscc_trace.flows.tracker.FlowTracker.feed_decoded`). Only the columns returned are decoded,
    the option columns (``opt_mss``, ``has_mss``, ``opt_wscale``, ``has_ws``, ``opt_sack_perm``)
    only for SYN segments (other rows keep stale values), the timestamps (``opt_tsval``,
    ``opt_tsecr``, ``has_ts``) for every segment.
    Valid until ``scratch`` is reused.

    With ``lo`` / ``hi`` only records lo..hi−1 are decoded (their rows of the same full-length
    columns and status): two threads can share one batch's decoding, each calling with the same
    scratch and its own range.
    """
    n = len(batch)
    hi = n if hi is None else hi
    c = scratch.get(n)
    if hi > lo:
        r = slice(lo, hi)
        decode_batch_flows(batch.records(r), c.rows(r))
    cols = {
        "ts_ns": batch.ts_ns,
        "wire_len": batch.wire,
        "ip_version": c.ipv,
        "ip_ttl": c.ttl,
        "src_hi": c.shi,
        "src_lo": c.slo,
        "dst_hi": c.dhi,
        "dst_lo": c.dlo,
        "sport": c.sport,
        "dport": c.dport,
        "seq": c.seq,
        "ack": c.ack,
        "flags": c.flags,
        "win": c.win,
        "payload_len": c.plen,
        "opt_mss": c.mss,
        "has_mss": c.has_mss,
        "opt_wscale": c.wsc,
        "has_ws": c.has_wsc,
        "opt_sack_perm": c.sackp,
        "opt_tsval": c.tsval,
        "opt_tsecr": c.tsecr,
        "has_ts": c.has_ts,
    }
    return cols, c.status


def status_counts(status: np.ndarray) -> np.ndarray:
    """Records per decoder status (index: :data:`OK` and the :data:`REASONS` codes), like
    ``np.bincount(status, minlength=len(REASONS) + 1)`` but without its int64 copy of
    ``status`` when every record is TCP (the usual batch: fresh memory costs more than counting)."""
    counts = np.zeros(len(REASONS) + 1, np.int64)
    if not status.any():
        counts[OK] = len(status)
        return counts
    counts += np.bincount(status, minlength=len(REASONS) + 1)
    return counts


def decode_arrays(batch, scratch: Scratch | None = None) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Decode a :class:`~hscc_trace.capture.reader.Batch` into numpy columns of its TCP records.

    Returns (columns named as schema.PACKETS — options as value arrays plus ``has_mss``,
    ``has_ws``, ``has_ts`` presence masks, SACK edges as ``sack`` (8×n, one row per edge) — for
    the records decoded as TCP, status per record). Records with a non-OK status are not in the
    columns: the decoder packs the TCP rows itself, so no column is copied afterwards.
    With ``scratch`` the columns are only valid until the next call.
    """
    n = len(batch)
    c = scratch.get(n) if scratch is not None else _alloc(n)
    k = decode_batch(batch.records(), c, True)
    if k == n:
        frame = batch.frame_numbers(np.arange(n))
        ts, iface, wire, cap = batch.ts_ns, batch.iface, batch.wire, batch.cap
    else:
        idx = np.flatnonzero(c.status == OK)
        frame = batch.frame_numbers(idx)
        ts, iface, wire, cap = batch.ts_ns[idx], batch.iface[idx], batch.wire[idx], batch.cap[idx]
    cols = {
        "frame": frame,
        "ts_ns": ts,
        "iface": iface,
        "wire_len": wire,
        "cap_len": cap,
        "ip_version": c.ipv[:k],
        "src_hi": c.shi[:k],
        "src_lo": c.slo[:k],
        "dst_hi": c.dhi[:k],
        "dst_lo": c.dlo[:k],
        "ip_id": c.ipid[:k],
        "ip_ttl": c.ttl[:k],
        "ip_ecn": c.ecn[:k],
        "sport": c.sport[:k],
        "dport": c.dport[:k],
        "seq": c.seq[:k],
        "ack": c.ack[:k],
        "flags": c.flags[:k],
        "win": c.win[:k],
        "tcp_hlen": c.thl[:k],
        "payload_len": c.plen[:k],
        "truncated": c.trunc[:k],
        "opt_mss": c.mss[:k],
        "has_mss": c.has_mss[:k],
        "opt_wscale": c.wsc[:k],
        "has_ws": c.has_wsc[:k],
        "opt_sack_perm": c.sackp[:k],
        "opt_tsval": c.tsval[:k],
        "opt_tsecr": c.tsecr[:k],
        "has_ts": c.has_ts[:k],
        "sack_n": c.sack_n[:k],
        "sack": c.sack[:, :k],
    }
    return cols, c.status


def decode(batch, tracker=None) -> tuple[pl.DataFrame, np.ndarray]:
    """Decode a batch into rows of schema.PACKETS (without flow_id/dir) and a status per record.

    With a :class:`hscc_trace.flows.tracker.FlowTracker` the rows are also fed to it, in order, and get
    two extra columns: ``flow_id`` (connection) and ``side`` (which endpoint of the 5-tuple sent it).
    """
    c, status = decode_arrays(batch)
    df = to_frame(c, tracker) if len(c["flags"]) else to_frame(c, None)
    return df, status


def to_frame(c: dict[str, np.ndarray], tracker=None) -> pl.DataFrame:
    """Rows of schema.PACKETS (without flow_id/dir) from :func:`decode_arrays` columns.

    With a :class:`hscc_trace.flows.tracker.FlowTracker` the rows are fed to it and get ``flow_id`` and
    ``side`` (see :func:`decode`). Numeric columns are shared with ``c``, not copied.
    """
    import polars as pl

    c = dict(c)
    extra = {}
    if tracker is not None and len(c["flags"]):
        flow, side, _kind, _rtt = tracker.feed(c)
        extra = {"flow_id": flow.astype(np.uint32), "side": side}
    sk = c.pop("sack")
    m_mss, m_ws, m_ts = c.pop("has_mss"), c.pop("has_ws"), c.pop("has_ts")
    for b in range(4):
        c[f"sack_l{b}"] = sk[2 * b]  # rows of the 8×n array: contiguous, handed to polars without a copy
        c[f"sack_r{b}"] = sk[2 * b + 1]
    c.update(extra)
    df = pl.DataFrame(c)
    return df.with_columns(absent_as_null(m_mss, m_ws, m_ts))


def absent_as_null(has_mss: np.ndarray, has_ws: np.ndarray, has_ts: np.ndarray) -> list:
    """The polars expressions that turn decoded packet columns into schema.PACKETS values: an
    option, the IPv4 id or a SACK edge the packet did not carry is null (the decoder writes 0
    there), and ``decoder`` is 0 (the fast path). Shared by :func:`to_frame` and the load
    arena's table (hscc_trace.flows.arena)."""
    import polars as pl

    return [
        pl.when(pl.Series(has_mss)).then(pl.col("opt_mss")).alias("opt_mss"),
        pl.when(pl.Series(has_ws)).then(pl.col("opt_wscale")).alias("opt_wscale"),
        pl.when(pl.Series(has_ts)).then(pl.col("opt_tsval")).alias("opt_tsval"),
        pl.when(pl.Series(has_ts)).then(pl.col("opt_tsecr")).alias("opt_tsecr"),
        pl.when(pl.col("ip_version") == 4).then(pl.col("ip_id")).alias("ip_id"),
        *sack_edges_as_null(),
        pl.lit(0, pl.UInt8).alias("decoder"),
    ]


def sack_edges_as_null() -> list:
    """The polars expressions that make the SACK edges of blocks a packet did not carry
    (block index ≥ ``sack_n``) null, as schema.PACKETS has them (the decoder writes 0)."""
    import polars as pl

    return [
        pl.when(pl.col("sack_n") > b).then(pl.col(f"sack_{e}{b}")).alias(f"sack_{e}{b}") for b in range(4) for e in "lr"
    ]
