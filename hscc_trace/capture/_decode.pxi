# The decoder of hscc_trace/capture/decode.py (decode_batch, decode_batch_flows), compiled.
#
# Included into hscc_trace/_kernels.pyx. Same arguments (reader.Records, decode.Columns), same
# results as the numba functions (the reference; tests/test_kernels.py compares the two).


cdef struct RecIn:
    const uint8_t* buf
    const int64_t* off
    const uint32_t* cap
    const uint32_t* wire
    const uint16_t* lt
    int64_t n  # records
    int64_t blen  # bytes in buf


cdef int _bind_records(_Bound b, object rec, RecIn* r, bint lt) except -1:
    """Bind a reader.Records; every record's bytes must lie inside ``buf``."""
    cdef int64_t blen, i, bad = -1
    r.buf = <const uint8_t*> b.field(rec, "buf", K_UINT, 1, False)
    blen = r.blen = b.rows
    r.off = <const int64_t*> b.field(rec, "off", K_INT, 8, False)
    r.n = b.rows
    r.cap = <const uint32_t*> b.field(rec, "cap", K_UINT, 4, False)
    b.at_least("Records.cap", r.n)
    r.wire = <const uint32_t*> b.field(rec, "wire", K_UINT, 4, False)
    b.at_least("Records.wire", r.n)
    r.lt = NULL
    if lt:
        r.lt = <const uint16_t*> b.field(rec, "lt", K_UINT, 2, False)
        b.at_least("Records.lt", r.n)
    with nogil:
        for i in range(r.n):
            if r.off[i] < 0 or r.off[i] + <int64_t> r.cap[i] > blen:
                bad = i
                break
    if bad >= 0:
        raise KernelArgumentError(f"Records: record {bad} (bytes {r.off[bad]} + {r.cap[bad]}) lies outside buf ({blen} bytes)")
    return 0


cdef struct DecOut:
    uint8_t* status
    uint8_t* ipv
    uint64_t* shi
    uint64_t* slo
    uint64_t* dhi
    uint64_t* dlo
    uint32_t* ipid
    uint8_t* ttl
    uint8_t* ecn
    uint16_t* sport
    uint16_t* dport
    uint32_t* seq
    uint32_t* ack
    uint16_t* flags
    uint16_t* win
    uint8_t* thl
    uint32_t* plen
    uint8_t* trunc
    uint16_t* mss
    uint8_t* has_mss
    uint8_t* wsc
    uint8_t* has_wsc
    uint8_t* sackp
    uint32_t* tsval
    uint32_t* tsecr
    uint8_t* has_ts
    uint8_t* sack_n
    uint32_t* sack
    int64_t sack_stride


cdef void* _col(_Bound b, object cols, str name, int kind, int size, int64_t n) except NULL:
    cdef void* p = b.field(cols, name, kind, size, True)
    b.at_least("Columns." + name, n)
    return p


cdef int _bind_columns(_Bound b, object cols, DecOut* c, int64_t n, bint full) except -1:
    """Bind the decode.Columns the decoder writes (all of them with ``full``), n rows each."""
    c.status = <uint8_t*> _col(b, cols, "status", K_UINT, 1, n)
    c.ipv = <uint8_t*> _col(b, cols, "ipv", K_UINT, 1, n)
    c.shi = <uint64_t*> _col(b, cols, "shi", K_UINT, 8, n)
    c.slo = <uint64_t*> _col(b, cols, "slo", K_UINT, 8, n)
    c.dhi = <uint64_t*> _col(b, cols, "dhi", K_UINT, 8, n)
    c.dlo = <uint64_t*> _col(b, cols, "dlo", K_UINT, 8, n)
    c.sport = <uint16_t*> _col(b, cols, "sport", K_UINT, 2, n)
    c.dport = <uint16_t*> _col(b, cols, "dport", K_UINT, 2, n)
    c.seq = <uint32_t*> _col(b, cols, "seq", K_UINT, 4, n)
    c.ack = <uint32_t*> _col(b, cols, "ack", K_UINT, 4, n)
    c.flags = <uint16_t*> _col(b, cols, "flags", K_UINT, 2, n)
    c.win = <uint16_t*> _col(b, cols, "win", K_UINT, 2, n)
    c.plen = <uint32_t*> _col(b, cols, "plen", K_UINT, 4, n)
    c.mss = <uint16_t*> _col(b, cols, "mss", K_UINT, 2, n)
    c.has_mss = <uint8_t*> _col(b, cols, "has_mss", K_BOOL, 1, n)
    c.wsc = <uint8_t*> _col(b, cols, "wsc", K_UINT, 1, n)
    c.has_wsc = <uint8_t*> _col(b, cols, "has_wsc", K_BOOL, 1, n)
    c.sackp = <uint8_t*> _col(b, cols, "sackp", K_BOOL, 1, n)
    c.tsval = <uint32_t*> _col(b, cols, "tsval", K_UINT, 4, n)
    c.tsecr = <uint32_t*> _col(b, cols, "tsecr", K_UINT, 4, n)
    c.has_ts = <uint8_t*> _col(b, cols, "has_ts", K_BOOL, 1, n)
    c.ipid, c.ttl, c.ecn, c.thl, c.trunc, c.sack_n, c.sack = NULL, NULL, NULL, NULL, NULL, NULL, NULL
    c.sack_stride = 0
    if full:
        c.ipid = <uint32_t*> _col(b, cols, "ipid", K_UINT, 4, n)
        c.ttl = <uint8_t*> _col(b, cols, "ttl", K_UINT, 1, n)
        c.ecn = <uint8_t*> _col(b, cols, "ecn", K_UINT, 1, n)
        c.thl = <uint8_t*> _col(b, cols, "thl", K_UINT, 1, n)
        c.trunc = <uint8_t*> _col(b, cols, "trunc", K_BOOL, 1, n)
        c.sack_n = <uint8_t*> _col(b, cols, "sack_n", K_UINT, 1, n)
        c.sack = <uint32_t*> b.field(cols, "sack", K_UINT, 4, True, 2)
        if b.rows != 8 or b.cols < n:
            raise KernelArgumentError(f"Columns.sack: shape ({b.rows}, {b.cols}), needs (8, {n})")
        c.sack_stride = b.row_stride
    return 0


cdef inline uint32_t _be16(const uint8_t* b, int64_t p) noexcept nogil:
    return (<uint32_t> b[p] << 8) | <uint32_t> b[p + 1]


cdef inline uint32_t _be32(const uint8_t* b, int64_t p) noexcept nogil:
    return (<uint32_t> b[p] << 24) | (<uint32_t> b[p + 1] << 16) | (<uint32_t> b[p + 2] << 8) | <uint32_t> b[p + 3]


cdef inline uint64_t _be64(const uint8_t* b, int64_t p) noexcept nogil:
    return (<uint64_t> _be32(b, p) << 32) | <uint64_t> _be32(b, p + 4)


cdef enum:
    DEC_OK = 0
    DEC_FRAGMENT = 6
    DEC_FALLBACK = 7


cdef int64_t _decode(bint full, RecIn* r, DecOut* c, bint compact) noexcept nogil:
    """decode._decode: see there. With ``full`` False the columns the flow table does not read
    are not written (their pointers are NULL)."""
    cdef const uint8_t* buf = r.buf
    cdef int64_t n = r.n, k = 0, i, j, p0, end, l3, l4, ip_end, q, o, oend, hl, ihl, pl, jumbo, ln, nb, bb, ns
    cdef int st, ver
    cdef uint16_t t
    cdef uint32_t et, fam_be, fam_le, fam, tot, frag
    cdef uint8_t v, proto, nh, ot, ol, kind
    cdef bint bad
    for i in range(n):
        if i + PF_RECS < n:  # (records lie inside buf: checked before the call)
            p0 = r.off[i + PF_RECS]
            HSCC_PREFETCH(buf + p0)
            if p0 + 64 < r.blen:
                HSCC_PREFETCH(buf + p0 + 64)
        j = k if compact else i  # output row
        p0 = r.off[i]
        end = p0 + r.cap[i]
        if p0 < 0 or end > r.blen:  # (checked before the call; again here, should an output alias an input)
            c.status[i] = 1
            continue
        t = r.lt[i]
        st = 0
        l3 = -1
        ver = 0
        et = 0
        # ---- link layer -----------------------------------------------------------------
        if t == 1:  # Ethernet
            if end - p0 < 14:
                c.status[i] = 1
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
                c.status[i] = st
                continue
            l3 = q
        elif t == 113:  # Linux SLL
            if end - p0 < 16:
                c.status[i] = 1
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
                c.status[i] = st
                continue
            l3 = q
        elif t == 276:  # Linux SLL2
            if end - p0 < 20:
                c.status[i] = 1
                continue
            et = _be16(buf, p0)
            l3 = p0 + 20
        elif t == 101 or t == 12 or t == 14:  # raw IP
            if end - p0 < 1:
                c.status[i] = 4
                continue
            v = buf[p0] >> 4
            et = 0x0800 if v == 4 else (0x86DD if v == 6 else 0)
            l3 = p0
        elif t == 228:
            et = 0x0800
            l3 = p0
        elif t == 229:
            et = 0x86DD
            l3 = p0
        elif t == 0 or t == 108:  # BSD NULL (host order) / LOOP (network order)
            if end - p0 < 4:
                c.status[i] = 1
                continue
            fam_be = _be32(buf, p0)
            fam_le = (<uint32_t> buf[p0 + 3] << 24) | (<uint32_t> buf[p0 + 2] << 16) | (<uint32_t> buf[p0 + 1] << 8) | <uint32_t> buf[p0]
            fam = fam_be if t == 108 else (fam_le if fam_le < 256 else fam_be)
            if fam == 2:
                et = 0x0800
            elif fam == 24 or fam == 28 or fam == 30 or fam == 10:
                et = 0x86DD
            else:
                c.status[i] = 2
                continue
            l3 = p0 + 4
        else:
            c.status[i] = DEC_FALLBACK
            continue
        if et == 0x0800:
            ver = 4
        elif et == 0x86DD:
            ver = 6
        elif et == 0x8847 or et == 0x8848 or et == 0x8864 or et < 0x0600:
            c.status[i] = DEC_FALLBACK  # MPLS, PPPoE session, 802.3 length field (LLC/SNAP)
            continue
        else:
            c.status[i] = 2
            continue
        # ---- IP ---------------------------------------------------------------------------
        l4 = 0
        ip_end = 0
        if ver == 4:
            if l3 + 20 > end or (buf[l3] >> 4) != 4:
                c.status[i] = 4
                continue
            ihl = <int64_t> (buf[l3] & 0x0F) * 4
            tot = _be16(buf, l3 + 2)
            if tot == 0:  # TSO/BIG TCP super-packet: length from the frame
                tot = <uint32_t> (<int64_t> r.wire[i] - (l3 - p0))
            if ihl < 20 or <int64_t> tot < ihl:
                c.status[i] = 4
                continue
            proto = buf[l3 + 9]
            frag = _be16(buf, l3 + 6)
            if (frag & 0x3FFF) != 0:
                c.status[i] = DEC_FRAGMENT
                continue
            if proto != 6:
                if proto == 47 or proto == 4 or proto == 41:
                    c.status[i] = DEC_FALLBACK
                elif proto == 17 and l3 + ihl + 4 <= end and _be16(buf, l3 + ihl + 2) == 4789:
                    c.status[i] = DEC_FALLBACK  # VXLAN
                else:
                    c.status[i] = 3
                continue
            c.ipv[j] = 4
            c.shi[j] = 0
            c.slo[j] = <uint64_t> 0xFFFF00000000 | <uint64_t> _be32(buf, l3 + 12)
            c.dhi[j] = 0
            c.dlo[j] = <uint64_t> 0xFFFF00000000 | <uint64_t> _be32(buf, l3 + 16)
            if full:
                c.ipid[j] = _be16(buf, l3 + 4)
                c.ttl[j] = buf[l3 + 8]
                c.ecn[j] = buf[l3 + 1] & 3
            l4 = l3 + ihl
            ip_end = l3 + tot
        else:
            if l3 + 40 > end or (buf[l3] >> 4) != 6:
                c.status[i] = 4
                continue
            pl = _be16(buf, l3 + 4)
            nh = buf[l3 + 6]
            q = l3 + 40
            bad = False
            jumbo = -1
            while nh == 0 or nh == 43 or nh == 60 or nh == 51:
                if q + 8 > end:
                    bad = True
                    break
                hl = (<int64_t> buf[q + 1] + 2) * 4 if nh == 51 else (<int64_t> buf[q + 1] + 1) * 8
                if nh == 0:  # hop-by-hop: look for the jumbo payload option (RFC 2675)
                    o = q + 2
                    while o + 2 <= q + hl and o + 2 <= end:
                        ot = buf[o]
                        if ot == 0:
                            o += 1
                            continue
                        ol = buf[o + 1]
                        if ot == 0xC2 and ol == 4 and o + 6 <= end:
                            jumbo = _be32(buf, o + 2)
                        o += 2 + ol
                nh = buf[q]
                q += hl
            if bad:
                c.status[i] = 4
                continue
            if nh == 44:
                c.status[i] = DEC_FRAGMENT
                continue
            if nh != 6:
                if nh == 4 or nh == 41 or nh == 47:
                    c.status[i] = DEC_FALLBACK
                elif nh == 17 and q + 4 <= end and _be16(buf, q + 2) == 4789:
                    c.status[i] = DEC_FALLBACK
                else:
                    c.status[i] = 3
                continue
            if pl == 0:
                pl = jumbo if jumbo >= 0 else <int64_t> r.wire[i] - (l3 - p0) - 40
            c.ipv[j] = 6
            c.shi[j] = _be64(buf, l3 + 8)
            c.slo[j] = _be64(buf, l3 + 16)
            c.dhi[j] = _be64(buf, l3 + 24)
            c.dlo[j] = _be64(buf, l3 + 32)
            if full:
                c.ipid[j] = 0
                c.ttl[j] = buf[l3 + 7]
                c.ecn[j] = (buf[l3 + 1] >> 4) & 3
            l4 = q
            ip_end = l3 + 40 + pl
        # ---- TCP --------------------------------------------------------------------------
        if l4 + 20 > end:
            c.status[i] = 5 if l4 < ip_end else 8
            continue
        hl = <int64_t> (buf[l4 + 12] >> 4) * 4
        if hl < 20 or l4 + hl > ip_end:
            c.status[i] = 8
            continue
        c.sport[j] = _be16(buf, l4)
        c.dport[j] = _be16(buf, l4 + 2)
        c.seq[j] = _be32(buf, l4 + 4)
        c.ack[j] = _be32(buf, l4 + 8)
        c.flags[j] = ((<uint32_t> buf[l4 + 12] & 1) << 8) | <uint32_t> buf[l4 + 13]
        c.win[j] = _be16(buf, l4 + 14)
        c.plen[j] = <uint32_t> (ip_end - l4 - hl)
        if full:
            c.thl[j] = <uint8_t> hl
            c.trunc[j] = ip_end > end
        if full and l4 + hl > end:
            c.trunc[j] = 1
        ns = 0
        # the flow table reads options of SYN segments only (MSS, window scale, SACK-permitted,
        # timestamps negotiated) and the timestamp option of every segment: without ``full`` the
        # other options of other segments are not parsed and their columns are left as they were
        if (not full) and (buf[l4 + 13] & 0x02) == 0:
            c.has_ts[j] = 0
            o = l4 + 20
            oend = min(l4 + hl, end)
            if oend - o >= 12 and buf[o] == 1 and buf[o + 1] == 1 and buf[o + 2] == 8 and buf[o + 3] == 10:
                # NOP, NOP, timestamps: the layout every common stack sends (RFC 7323 Appendix A)
                c.tsval[j] = _be32(buf, o + 4)
                c.tsecr[j] = _be32(buf, o + 8)
                c.has_ts[j] = 1
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
                    ln = buf[o + 1]
                    if ln < 2 or o + ln > oend:
                        break
                    if kind == 8 and ln == 10:
                        c.tsval[j] = _be32(buf, o + 2)
                        c.tsecr[j] = _be32(buf, o + 6)
                        c.has_ts[j] = 1
                        break
                    o += ln
        if full or (buf[l4 + 13] & 0x02) != 0:
            # presence flags only: values behind a False flag (or beyond sack_n) are never read
            c.has_mss[j] = 0
            c.has_wsc[j] = 0
            c.sackp[j] = 0
            c.has_ts[j] = 0
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
                ln = buf[o + 1]
                if ln < 2 or o + ln > oend:
                    break
                if kind == 2 and ln == 4:
                    c.mss[j] = _be16(buf, o + 2)
                    c.has_mss[j] = 1
                elif kind == 3 and ln == 3:
                    c.wsc[j] = buf[o + 2]
                    c.has_wsc[j] = 1
                elif kind == 4 and ln == 2:
                    c.sackp[j] = 1
                elif kind == 5 and ln >= 10 and full:
                    nb = (ln - 2) // 8
                    for bb in range(nb):
                        if ns < 4:
                            c.sack[2 * ns * c.sack_stride + j] = _be32(buf, o + 2 + 8 * bb)
                            c.sack[(2 * ns + 1) * c.sack_stride + j] = _be32(buf, o + 6 + 8 * bb)
                            ns += 1
                elif kind == 8 and ln == 10:
                    c.tsval[j] = _be32(buf, o + 2)
                    c.tsecr[j] = _be32(buf, o + 6)
                    c.has_ts[j] = 1
                o += ln
        if full:
            c.sack_n[j] = <uint8_t> ns
        c.status[i] = DEC_OK
        k += 1
    return k


def decode_batch(object rec, object cols, bint compact):
    """decode.decode_batch: decode every record into ``cols``; the number of TCP records."""
    cdef _Bound b = _Bound()
    cdef RecIn r
    cdef DecOut c
    cdef int64_t k
    _bind_records(b, rec, &r, True)
    _bind_columns(b, cols, &c, r.n, True)
    with nogil:
        k = _decode(True, &r, &c, compact)
    return k


def decode_batch_flows(object rec, object cols):
    """decode.decode_batch_flows: the columns the flow table reads only."""
    cdef _Bound b = _Bound()
    cdef RecIn r
    cdef DecOut c
    cdef int64_t k
    _bind_records(b, rec, &r, True)
    _bind_columns(b, cols, &c, r.n, False)
    with nogil:
        k = _decode(False, &r, &c, False)
    return k
