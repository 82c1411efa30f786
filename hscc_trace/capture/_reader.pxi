# The record walkers of hscc_trace/capture/reader.py (_walk_pcap, _walk_pcapng), compiled.
#
# Included into hscc_trace/_kernels.pyx. Same arguments, same results as the numba functions
# (the reference; tests/test_kernels.py compares the two on every capture).


# Software prefetch (gcc, clang; nothing elsewhere). Mapped (hscc_trace/capture/reader.py,
# _Mapped), the records are read from the page cache, not from a buffer a copy just warmed: the
# walker's loads depend on each other (the next record starts where this one ends), so it asks
# for the bytes PF_AHEAD ahead; the decoder, which knows every record's offset, for the record
# PF_RECS ahead. Only timing changes (a prefetch never faults): replica-5M walked in ≈ 25 % less
# time, decoded in ≈ 10 % less (docs/performance.md).
cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define HSCC_PREFETCH(p) __builtin_prefetch((const void*) (p), 0, 3)
    #else
    #define HSCC_PREFETCH(p) ((void) 0)
    #endif
    """
    void HSCC_PREFETCH(const void* p) noexcept nogil

cdef enum:
    PF_AHEAD = 1024  # bytes ahead of the record being walked
    PF_RECS = 8  # records ahead of the one being decoded


cdef inline uint32_t _u32(const uint8_t* b, int64_t p, bint be) noexcept nogil:
    if be:
        return (<uint32_t> b[p] << 24) | (<uint32_t> b[p + 1] << 16) | (<uint32_t> b[p + 2] << 8) | <uint32_t> b[p + 3]
    return (<uint32_t> b[p + 3] << 24) | (<uint32_t> b[p + 2] << 16) | (<uint32_t> b[p + 1] << 8) | <uint32_t> b[p]


cdef inline uint32_t _u16(const uint8_t* b, int64_t p, bint be) noexcept nogil:
    if be:
        return (<uint32_t> b[p] << 8) | <uint32_t> b[p + 1]
    return (<uint32_t> b[p + 1] << 8) | <uint32_t> b[p]


cdef struct WalkOut:
    int64_t* off
    uint32_t* cap
    uint32_t* wire
    int64_t* ts
    uint16_t* iface
    int64_t m  # rows


cdef int _bind_walked(_Bound b, object out, WalkOut* o, bint iface) except -1:
    o.off = <int64_t*> b.field(out, "off", K_INT, 8, True)
    o.m = b.rows
    o.cap = <uint32_t*> b.field(out, "cap", K_UINT, 4, True)
    o.m = min(o.m, b.rows)
    o.wire = <uint32_t*> b.field(out, "wire", K_UINT, 4, True)
    o.m = min(o.m, b.rows)
    o.ts = <int64_t*> b.field(out, "ts", K_INT, 8, True)
    o.m = min(o.m, b.rows)
    if iface:
        o.iface = <uint16_t*> b.field(out, "iface", K_UINT, 2, True)
        o.m = min(o.m, b.rows)
    return 0


cdef int64_t _walk_pcap(
    const uint8_t* buf, int64_t n, bint be, bint nsec, int64_t hdrlen, int64_t max_cap, WalkOut* o, int64_t* res
) noexcept nogil:
    cdef int64_t pos = 0, k = 0, m = o.m
    cdef uint32_t sec, frac, c, w
    while True:
        if pos + PF_AHEAD + 64 < n:
            HSCC_PREFETCH(buf + pos + PF_AHEAD)
            HSCC_PREFETCH(buf + pos + PF_AHEAD + 64)
        if k >= m:
            res[0], res[1] = pos, k
            return 3
        if pos + hdrlen > n:
            res[0], res[1] = pos, k
            return 0
        sec = _u32(buf, pos, be)
        frac = _u32(buf, pos + 4, be)
        c = _u32(buf, pos + 8, be)
        w = _u32(buf, pos + 12, be)
        if <int64_t> c > max_cap:
            res[0], res[1] = pos, k
            return 2
        if pos + hdrlen + <int64_t> c > n:
            res[0], res[1] = pos, k
            return 0
        o.off[k] = pos + hdrlen
        o.cap[k] = c
        o.wire[k] = w
        if nsec:
            o.ts[k] = <int64_t> sec * 1000000000 + <int64_t> frac
        else:
            o.ts[k] = <int64_t> sec * 1000000000 + <int64_t> frac * 1000
        pos += hdrlen + c
        k += 1


def walk_pcap(object buf, int64_t n, object layout, object out):
    """reader._walk_pcap: (bytes consumed, records, status)."""
    cdef _Bound b = _Bound()
    cdef WalkOut o
    cdef int64_t res[2]
    cdef int64_t st
    cdef const uint8_t* bp = <const uint8_t*> b.array(buf, "buf", K_UINT, 1, False, 1)
    if n < 0 or n > b.rows:
        raise KernelArgumentError(f"n = {n} is outside buf ({b.rows} bytes)")
    _bind_walked(b, out, &o, False)
    cdef bint be = layout.be, nsec = layout.nsec
    cdef int64_t hdrlen = layout.hdrlen, max_cap = layout.max_cap
    if hdrlen < 16:
        raise KernelArgumentError(f"PcapLayout.hdrlen = {hdrlen} (a record header has 16 bytes at least)")
    with nogil:
        st = _walk_pcap(bp, n, be, nsec, hdrlen, max_cap, &o, res)
    return res[0], res[1], st


cdef struct Ifaces:
    const uint32_t* snap
    const uint8_t* pow2
    const int64_t* exp
    const int64_t* offs
    int64_t n


cdef int64_t _walk_pcapng(const uint8_t* buf, int64_t n, bint be, Ifaces* f, WalkOut* o, int64_t* res) noexcept nogil:
    cdef int64_t pos = 0, k = 0, m = o.m, nif = f.n
    cdef uint32_t btype, blen, c, w, room
    cdef int64_t body, dataoff, ifid, e10, mul, j
    cdef uint64_t t, e, whole, frac, div
    cdef bint ok
    while True:
        if pos + PF_AHEAD + 64 < n:
            HSCC_PREFETCH(buf + pos + PF_AHEAD)
            HSCC_PREFETCH(buf + pos + PF_AHEAD + 64)
        if k >= m:
            res[0], res[1], res[2] = pos, k, 0
            return 3
        if pos + 12 > n:
            res[0], res[1], res[2] = pos, k, 0
            return 0
        btype = _u32(buf, pos, be)
        blen = _u32(buf, pos + 4, be)
        res[0], res[1], res[2] = pos, k, btype
        if btype == 0x0A0D0D0A or btype == 1:
            return 1
        if blen < 12 or (blen & 3) != 0 or blen > 16 * 1024 * 1024:
            return 2
        if pos + <int64_t> blen > n:
            return 0
        body = pos + 8
        c = 0
        w = 0
        ifid = 0
        t = 0
        dataoff = 0
        ok = False
        if (btype == 6 or btype == 2) and blen >= 32:
            # Enhanced Packet Block (6): 32-bit interface id; obsolete Packet Block (2): 16-bit
            # interface id + 16-bit drops count. The rest of the two layouts is the same.
            ifid = <int64_t> _u32(buf, body, be) if btype == 6 else <int64_t> _u16(buf, body, be)
            t = (<uint64_t> _u32(buf, body + 4, be) << 32) | <uint64_t> _u32(buf, body + 8, be)
            c = _u32(buf, body + 12, be)
            w = _u32(buf, body + 16, be)
            dataoff = body + 20
            if dataoff + <int64_t> c > pos + <int64_t> blen - 4:
                return 2
            ok = True
        elif btype == 3 and blen >= 16:
            ifid = 0
            w = _u32(buf, body, be)
            c = w
            room = blen - 16
            if c > room:
                c = room
            if nif > 0 and f.snap[0] > 0 and c > f.snap[0]:
                c = f.snap[0]
            dataoff = body + 4
            ok = True
        if ok:
            if ifid >= nif:
                return 4
            o.off[k] = dataoff
            o.cap[k] = c
            o.wire[k] = w
            o.iface[k] = <uint16_t> ifid
            if btype == 3:
                o.ts[k] = 0
            elif f.pow2[ifid]:
                e = <uint64_t> f.exp[ifid]
                whole = t >> e
                frac = t & ((<uint64_t> 1 << e) - 1)
                o.ts[k] = <int64_t> whole * 1000000000 + <int64_t> ((frac * <uint64_t> 1000000000) >> e) + f.offs[ifid]
            else:
                e10 = f.exp[ifid]
                if e10 <= 9:
                    mul = 1
                    for j in range(9 - e10):
                        mul *= 10
                    o.ts[k] = <int64_t> t * mul + f.offs[ifid]
                else:
                    div = 1
                    for j in range(e10 - 9):
                        div *= 10
                    o.ts[k] = <int64_t> (t // div) + f.offs[ifid]
            k += 1
        pos += blen


def walk_pcapng(object buf, int64_t n, bint be, object ifs, object out):
    """reader._walk_pcapng: (bytes consumed, records, status, block type)."""
    cdef _Bound b = _Bound()
    cdef WalkOut o
    cdef Ifaces f
    cdef int64_t res[3]
    cdef int64_t st, i
    cdef const uint8_t* bp = <const uint8_t*> b.array(buf, "buf", K_UINT, 1, False, 1)
    if n < 0 or n > b.rows:
        raise KernelArgumentError(f"n = {n} is outside buf ({b.rows} bytes)")
    f.snap = <const uint32_t*> b.field(ifs, "snap", K_UINT, 4, False)
    f.n = b.rows
    f.pow2 = <const uint8_t*> b.field(ifs, "pow2", K_BOOL, 1, False)
    b.at_least("Interfaces.pow2", f.n)
    f.exp = <const int64_t*> b.field(ifs, "exp", K_INT, 8, False)
    b.at_least("Interfaces.exp", f.n)
    f.offs = <const int64_t*> b.field(ifs, "offs", K_INT, 8, False)
    b.at_least("Interfaces.offs", f.n)
    for i in range(f.n):  # (the shifts and powers of ten are defined for these)
        if f.exp[i] < 0 or f.exp[i] > (63 if f.pow2[i] else 18):
            raise KernelArgumentError(f"Interfaces.exp[{i}] = {f.exp[i]} is out of range")
    _bind_walked(b, out, &o, True)
    with nogil:
        st = _walk_pcapng(bp, n, be, &f, &o, res)
    return res[0], res[1], st, res[2]
