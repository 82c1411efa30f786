# The flow table kernels of hscc_trace/flows/tracker.py (_flow_kernel, _rehash, _group_stats),
# compiled.
#
# Included into hscc_trace/_kernels.pyx. Same arguments (tracker.Packets, Table, Nodes, Samples,
# PerPacket, Stats), same results as the numba functions (the reference; tests/test_kernels.py
# compares the two on every capture, and checks the constants below against tracker.py's).

from libc.math cimport NAN
from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memcpy

# the per-connection state's columns (tracker._COL) and the kernel's constants
cdef enum:
    C_IPV = 0
    C_PORT0 = 1
    C_FIRST_TS = 3
    C_LAST_TS = 4
    C_FIRST_SIDE = 5
    C_SYN_SIDE = 6
    C_SYNACK_SIDE = 7
    C_T_SYN = 8
    C_T_SYNACK = 9
    C_T_ACK3 = 10
    C_RST = 11
    C_FIN = 12
    C_MRU_SYN = 13
    C_FIRST_RTT = 14
    C_AWAY = 15
    C_PKTS = 16
    C_BYTES = 18
    C_PAYLOAD = 20
    C_MSS = 22
    C_WS = 24
    C_SACKP = 26
    C_TSOPT = 28
    C_SPLIT_SET = 30
    C_SPLIT_BASE = 32
    C_SEQ_SET = 34
    C_LAST_RAW = 36
    C_LAST_U = 38
    C_BASE = 40
    C_MAX_END = 42
    C_MAX_END_TS = 44
    C_MIN_DATA = 46
    C_MAX_DATA = 48
    C_SENT = 50
    C_ACK_SET = 52
    C_ACK_RAW = 54
    C_ACK_U = 56
    C_ACK_TS = 58
    C_HI_ACK = 60
    C_DUP = 62
    C_LASTWIN = 64
    C_QH = 66
    C_QT = 68
    C_DFIRST = 70
    C_DLAST = 72
    C_MAXSEG = 74
    C_RETRANS = 76
    C_UNIQUE = 78
    C_OOO = 80
    C_TS_SET = 82
    C_TS_RAW = 84
    C_TS_U = 86
    C_TQ_H = 88
    C_TQ_T = 90
    C_TQ_N = 92
    C_FL_ACK = 94
    C_FL_LAST = 96
    C_GAP_MIN = 98
    NCOL = 100
    KIND_NONE = 0
    KIND_RETRANS = 1
    KIND_OOO = 2
    KIND_KEEPALIVE = 3
    RK_DATA_ACK = 0
    RK_TS_ECHO = 1
    RK_ACK_DATA = 2
    RK_ECHO_DELAY = 3
    TQ_MAX = 4096
    SAMPLES_PER_PACKET = 5
    FLIGHT_GAP_MIN_NS = 200000
    ST_DONE = 0
    ST_GROW_FLOWS = 1
    ST_GROW_TABLE = 2
    ST_GROW_NODES = 3

#: the constants above by name, for the test that compares them with tracker.py's
FLOW_CONSTANTS = {
    "C_IPV": C_IPV, "C_PORT0": C_PORT0, "C_FIRST_TS": C_FIRST_TS, "C_LAST_TS": C_LAST_TS,
    "C_FIRST_SIDE": C_FIRST_SIDE, "C_SYN_SIDE": C_SYN_SIDE, "C_SYNACK_SIDE": C_SYNACK_SIDE,
    "C_T_SYN": C_T_SYN, "C_T_SYNACK": C_T_SYNACK, "C_T_ACK3": C_T_ACK3, "C_RST": C_RST, "C_FIN": C_FIN,
    "C_MRU_SYN": C_MRU_SYN, "C_FIRST_RTT": C_FIRST_RTT, "C_AWAY": C_AWAY, "C_PKTS": C_PKTS,
    "C_BYTES": C_BYTES, "C_PAYLOAD": C_PAYLOAD, "C_MSS": C_MSS, "C_WS": C_WS, "C_SACKP": C_SACKP,
    "C_TSOPT": C_TSOPT, "C_SPLIT_SET": C_SPLIT_SET, "C_SPLIT_BASE": C_SPLIT_BASE, "C_SEQ_SET": C_SEQ_SET,
    "C_LAST_RAW": C_LAST_RAW, "C_LAST_U": C_LAST_U, "C_BASE": C_BASE, "C_MAX_END": C_MAX_END,
    "C_MAX_END_TS": C_MAX_END_TS, "C_MIN_DATA": C_MIN_DATA, "C_MAX_DATA": C_MAX_DATA, "C_SENT": C_SENT,
    "C_ACK_SET": C_ACK_SET, "C_ACK_RAW": C_ACK_RAW, "C_ACK_U": C_ACK_U, "C_ACK_TS": C_ACK_TS,
    "C_HI_ACK": C_HI_ACK, "C_DUP": C_DUP, "C_LASTWIN": C_LASTWIN, "C_QH": C_QH, "C_QT": C_QT,
    "C_DFIRST": C_DFIRST, "C_DLAST": C_DLAST, "C_MAXSEG": C_MAXSEG, "C_RETRANS": C_RETRANS,
    "C_UNIQUE": C_UNIQUE, "C_OOO": C_OOO, "C_TS_SET": C_TS_SET, "C_TS_RAW": C_TS_RAW, "C_TS_U": C_TS_U,
    "C_TQ_H": C_TQ_H, "C_TQ_T": C_TQ_T, "C_TQ_N": C_TQ_N, "C_FL_ACK": C_FL_ACK, "C_FL_LAST": C_FL_LAST,
    "C_GAP_MIN": C_GAP_MIN, "NCOL": NCOL, "KIND_NONE": KIND_NONE, "KIND_RETRANS": KIND_RETRANS,
    "KIND_OOO": KIND_OOO, "KIND_KEEPALIVE": KIND_KEEPALIVE, "RK_DATA_ACK": RK_DATA_ACK,
    "RK_TS_ECHO": RK_TS_ECHO, "RK_ACK_DATA": RK_ACK_DATA, "RK_ECHO_DELAY": RK_ECHO_DELAY,
    "TQ_MAX": TQ_MAX, "SAMPLES_PER_PACKET": SAMPLES_PER_PACKET, "FLIGHT_GAP_MIN_NS": FLIGHT_GAP_MIN_NS,
    "ST_DONE": ST_DONE, "ST_GROW_FLOWS": ST_GROW_FLOWS, "ST_GROW_TABLE": ST_GROW_TABLE,
    "ST_GROW_NODES": ST_GROW_NODES,
}

cdef int64_t _I64_MIN = INT64_MIN


cdef inline int64_t _s32(int64_t x) noexcept nogil:
    """Signed 32-bit difference of two raw sequence numbers held in int64 (RFC 9293 §3.4)."""
    x = x & <int64_t> 0xFFFFFFFF
    return x - <int64_t> 0x100000000 if x >= <int64_t> 0x80000000 else x


cdef inline int64_t _floordiv(int64_t a, int64_t b) noexcept nogil:
    """a // b as Python (and numba) compute it: rounded towards minus infinity (b > 0)."""
    cdef int64_t q = a // b  # (cdivision: C's division, rounded towards zero)
    if (a % b) != 0 and ((a < 0) != (b < 0)):
        q -= 1
    return q


cdef inline uint64_t _hash(uint64_t k0, uint64_t k1, uint64_t k2, uint64_t k3, uint64_t k4) noexcept nogil:
    cdef uint64_t h = 0x9E3779B97F4A7C15
    h = (h ^ k0) * <uint64_t> 0xBF58476D1CE4E5B9
    h = h ^ (h >> 31)
    h = (h ^ k1) * <uint64_t> 0xBF58476D1CE4E5B9
    h = h ^ (h >> 31)
    h = (h ^ k2) * <uint64_t> 0xBF58476D1CE4E5B9
    h = h ^ (h >> 31)
    h = (h ^ k3) * <uint64_t> 0xBF58476D1CE4E5B9
    h = h ^ (h >> 31)
    h = (h ^ k4) * <uint64_t> 0xBF58476D1CE4E5B9
    h = h ^ (h >> 31)
    return h


cdef struct Pk:  # tracker.Packets
    const uint64_t* shi
    const uint64_t* slo
    const uint64_t* dhi
    const uint64_t* dlo
    const uint16_t* sport
    const uint16_t* dport
    const uint16_t* flags
    const uint32_t* seq
    const uint32_t* ack
    const uint16_t* win
    const uint32_t* plen
    const uint32_t* wire
    const int64_t* ts
    const uint16_t* mss
    const uint8_t* has_mss
    const uint8_t* ws
    const uint8_t* has_ws
    const uint8_t* sackp
    const uint8_t* has_ts
    const uint32_t* tsval
    const uint32_t* tsecr
    const uint8_t* ipv
    const uint8_t* status  # NULL: every packet is a TCP row
    int64_t n


cdef struct Tab:  # tracker.Table, Nodes, Samples and PerPacket
    int64_t* S
    int64_t ss  # S's row stride
    int64_t nrows  # S's rows
    uint64_t* ADDR
    int64_t as_  # ADDR's row stride
    const int64_t* default
    uint64_t* tkeys
    int64_t ks  # tkeys' row stride
    int64_t* tval
    int64_t nslots
    int64_t* ctl
    int64_t* acc
    int64_t* n_end
    int64_t* n_ts
    uint8_t* n_flag
    int64_t* n_next
    int64_t* n_rel
    uint8_t* n_rk
    int64_t nnodes
    int64_t* rf
    uint8_t* rs
    double* rv
    int64_t* rtt_acc
    int64_t* out_flow
    uint8_t* out_side
    uint8_t* out_kind
    double* out_rtt


cdef void* _pkcol(_Bound b, object pk, str name, int kind, int size, int64_t n) except NULL:
    cdef void* p = b.field(pk, name, kind, size, False)
    b.at_least("Packets." + name, n)
    return p


cdef void* _arr(_Bound b, object rec, str name, int kind, int size, int ndim=1) except NULL:
    return b.field(rec, name, kind, size, True, ndim)


cdef int64_t _flow_kernel(int64_t i0, Pk* P, Tab* T, bint per_packet, int64_t* stop) noexcept nogil:
    """tracker._flow_kernel: see there. Returns ST_*; ``stop`` = the next packet index."""
    cdef int64_t n = P.n, tmask = T.nslots - 1, ss = T.ss
    cdef int64_t* S = T.S
    cdef int64_t* R
    cdef int64_t ctl[4]  # T.ctl, T.acc and T.rtt_acc[0] in locals while the loop runs
    cdef int64_t acc[3]
    cdef int64_t nsmp = T.rtt_acc[0], st = ST_DONE
    cdef int64_t* n_next = T.n_next
    cdef int64_t* n_end = T.n_end
    cdef int64_t* n_ts = T.n_ts
    cdef bint check = P.status != NULL
    cdef int64_t mru = -1, slot, r, i, s, o, fl, sq, t, ln, g1, g2, a_side, hk, side, k, rel_t, v, vu, dv
    cdef int64_t nd, eu, nxt, u, sl, a_new, e, max_end, thres, dt_hi, last, gap, thr, fa, e_any, a, last_ts
    cdef int64_t away, kk
    cdef int rel_k
    cdef uint64_t m0 = 0, m1 = 0, m2 = 0, m3 = 0, m4 = 0, k0, k1, k2, k3, k4, a_hi, a_lo, b_hi, b_lo, pa, pb
    cdef bint lt, pure_syn, new, fresh, sent, not_adv, start, amb
    cdef int k_
    cdef double rtt
    ctl[0], ctl[1], ctl[2], ctl[3] = T.ctl[0], T.ctl[1], T.ctl[2], T.ctl[3]
    acc[0], acc[1], acc[2] = T.acc[0], T.acc[1], T.acc[2]
    stop[0] = n
    for i in range(i0, n):
        if check and P.status[i] != 0:
            if per_packet:
                T.out_flow[i] = -1
                T.out_side[i] = 0
                T.out_kind[i] = KIND_NONE
                T.out_rtt[i] = NAN
            continue
        # capacity checks (one packet adds at most one flow, one conversation, one node)
        if ctl[0] + 1 > T.nrows:
            stop[0], st = i, ST_GROW_FLOWS
            break
        if (ctl[3] + 1) * 2 > T.nslots:
            stop[0], st = i, ST_GROW_TABLE
            break
        if ctl[2] + 2 > T.nnodes:  # (a packet may take two nodes: a TSval and a segment)
            stop[0], st = i, ST_GROW_NODES
            break
        t = P.ts[i]
        acc[0] += 1
        if t < acc[1]:
            acc[1] = t
        if t > acc[2]:
            acc[2] = t
        # ---- conversation lookup: side 0 is the (addr, port) that sorts first
        a_hi, a_lo, b_hi, b_lo = P.shi[i], P.slo[i], P.dhi[i], P.dlo[i]
        pa, pb = P.sport[i], P.dport[i]
        lt = a_hi < b_hi or (a_hi == b_hi and (a_lo < b_lo or (a_lo == b_lo and pa <= pb)))
        s = 0 if lt else 1
        if lt:
            k0, k1, k2, k3, k4 = a_hi, a_lo, b_hi, b_lo, (pa << 16) | pb
        else:
            k0, k1, k2, k3, k4 = b_hi, b_lo, a_hi, a_lo, (pb << 16) | pa
        if mru >= 0 and k4 == m4 and k1 == m1 and k3 == m3 and k0 == m0 and k2 == m2:
            slot = mru  # same conversation as the previous TCP packet: no hashing
        else:
            slot = <int64_t> (_hash(k0, k1, k2, k3, k4) & <uint64_t> tmask)
            while T.tval[slot] >= 0 and not (
                T.tkeys[slot * T.ks] == k0
                and T.tkeys[slot * T.ks + 1] == k1
                and T.tkeys[slot * T.ks + 2] == k2
                and T.tkeys[slot * T.ks + 3] == k3
                and T.tkeys[slot * T.ks + 4] == k4
            ):
                slot = (slot + 1) & tmask
            mru, m0, m1, m2, m3, m4 = slot, k0, k1, k2, k3, k4
        fl = P.flags[i]
        sq = P.seq[i]
        pure_syn = (fl & 0x12) == 0x02
        r = T.tval[slot]
        new = r < 0
        if not new and pure_syn and S[r * ss + C_SPLIT_SET + s] == 1 and sq != S[r * ss + C_SPLIT_BASE + s]:
            new = True  # port reuse: a new connection on this 5-tuple
        if new:
            r = ctl[0]
            ctl[0] += 1
            R = S + r * ss
            memcpy(R, T.default, NCOL * sizeof(int64_t))
            if T.tval[slot] < 0:
                ctl[3] += 1
                T.tkeys[slot * T.ks] = k0
                T.tkeys[slot * T.ks + 1] = k1
                T.tkeys[slot * T.ks + 2] = k2
                T.tkeys[slot * T.ks + 3] = k3
                T.tkeys[slot * T.ks + 4] = k4
            T.tval[slot] = r
            T.ADDR[r * T.as_] = k0
            T.ADDR[r * T.as_ + 1] = k1
            T.ADDR[r * T.as_ + 2] = k2
            T.ADDR[r * T.as_ + 3] = k3
            R[C_PORT0] = <int64_t> (k4 >> 16)
            R[C_PORT0 + 1] = <int64_t> (k4 & 0xFFFF)
            R[C_IPV] = P.ipv[i]
            R[C_FIRST_TS] = t
            R[C_FIRST_SIDE] = s
        R = S + r * ss
        if R[C_SPLIT_SET + s] == 0:
            R[C_SPLIT_SET + s] = 1
            R[C_SPLIT_BASE + s] = sq if (fl & 0x02) else ((sq - 1) & <int64_t> 0xFFFFFFFF)
        o = 1 - s
        if per_packet:
            T.out_flow[i] = r
            T.out_side[i] = <uint8_t> s
        # ---- counters and handshake
        ln = P.plen[i]
        R[C_LAST_TS] = t
        R[C_PKTS + s] += 1
        R[C_BYTES + s] += P.wire[i]
        R[C_PAYLOAD + s] += ln
        if fl & 0x04:
            R[C_RST] = 1
        if fl & 0x01:
            R[C_FIN] = 1
        if fl & 0x02:
            if P.has_mss[i] and R[C_MSS + s] < 0:
                R[C_MSS + s] = P.mss[i]
            if P.has_ws[i] and R[C_WS + s] < 0:
                R[C_WS + s] = P.ws[i]
            if P.sackp[i]:
                R[C_SACKP + s] = 1
            if P.has_ts[i]:
                R[C_TSOPT + s] = 1
        if pure_syn:
            if R[C_SYN_SIDE] < 0:
                R[C_SYN_SIDE] = s
                R[C_T_SYN] = t
            R[C_MRU_SYN] = t
        elif (fl & 0x12) == 0x12:
            if R[C_T_SYNACK] < 0 and R[C_SYN_SIDE] != s:
                R[C_SYNACK_SIDE] = s
                R[C_T_SYNACK] = t
        elif (fl & 0x10) != 0:
            if R[C_MRU_SYN] >= 0 and R[C_FIRST_RTT] == 0:
                R[C_FIRST_RTT] = t - R[C_MRU_SYN]
            if R[C_T_SYNACK] >= 0 and R[C_T_ACK3] < 0 and s != R[C_SYNACK_SIDE] and t >= R[C_T_SYNACK]:
                R[C_T_ACK3] = t
                if R[C_T_SYN] >= 0 and R[C_SYN_SIDE] >= 0 and R[C_T_SYNACK] >= R[C_T_SYN]:
                    # where the capture is, as _columns decides the vantage
                    g1 = R[C_T_SYNACK] - R[C_T_SYN]
                    g2 = t - R[C_T_SYNACK]
                    a_side = R[C_SYN_SIDE]
                    R[C_AWAY] = (0 if g2 * 4 < g1 else (<int64_t> 1) << a_side) | (
                        0 if g1 * 4 < g2 else (<int64_t> 1) << (1 - a_side)
                    )
                if R[C_T_SYN] >= 0 and t >= R[C_T_SYN]:
                    # the handshake's round trip, SYN -> third ACK: one sample of each side's
                    # away-from-the-sender RTT, of the kind its other samples will be
                    hk = RK_TS_ECHO if (R[C_TSOPT] == 1 and R[C_TSOPT + 1] == 1) else RK_ACK_DATA
                    for side in range(2):
                        if R[C_AWAY] >= 0 and ((R[C_AWAY] >> side) & 1) == 0:
                            continue  # (the capture is at this side's end: data/ACK times it)
                        kk = nsmp
                        T.rf[kk] = r
                        T.rs[kk] = <uint8_t> (side + 2 * hk)
                        T.rv[kk] = <double> (t - R[C_T_SYN]) * 1e-9
                        nsmp = kk + 1
        # ---- timestamps: side s's TSval awaits o's echo; s's echo of o's TSval releases this packet
        rel_t = -1
        rel_k = 0
        if P.has_ts[i]:
            v = P.tsval[i]
            fresh = False
            vu = 0
            if R[C_TS_SET + s] == 0:
                R[C_TS_SET + s] = 1
                R[C_TS_RAW + s] = v
                R[C_TS_U + s] = 0
                fresh = True
            else:
                dv = _s32(v - R[C_TS_RAW + s])
                if dv > 0:
                    fresh = True
                    vu = R[C_TS_U + s] + dv
                    R[C_TS_RAW + s] = v
                    R[C_TS_U + s] = vu
            if fresh:
                if R[C_TQ_N + s] >= TQ_MAX:  # never echoed: drop the oldest
                    nd = R[C_TQ_H + s]
                    R[C_TQ_H + s] = n_next[nd]
                    n_next[nd] = ctl[1]
                    ctl[1] = nd
                    R[C_TQ_N + s] -= 1
                if ctl[1] >= 0:
                    nd = ctl[1]
                    ctl[1] = n_next[nd]
                else:
                    nd = ctl[2]
                    ctl[2] += 1
                n_end[nd] = vu
                n_ts[nd] = t
                n_next[nd] = -1
                if R[C_TQ_N + s] == 0:
                    R[C_TQ_H + s] = nd
                else:
                    n_next[R[C_TQ_T + s]] = nd
                R[C_TQ_T + s] = nd
                R[C_TQ_N + s] += 1
            if (fl & 0x10) and R[C_TQ_N + o] > 0:
                eu = R[C_TS_U + o] + _s32(<int64_t> P.tsecr[i] - R[C_TS_RAW + o])
                nd = R[C_TQ_H + o]
                while nd >= 0 and n_end[nd] <= eu:
                    if n_end[nd] == eu and n_ts[nd] <= t:
                        rel_t = n_ts[nd]
                        rel_k = RK_TS_ECHO
                    nxt = n_next[nd]
                    n_next[nd] = ctl[1]
                    ctl[1] = nd
                    R[C_TQ_N + o] -= 1
                    nd = nxt
                R[C_TQ_H + o] = nd
                if nd < 0:
                    R[C_TQ_T + o] = -1
                if rel_k == RK_TS_ECHO and R[C_AWAY] < 0:
                    kk = nsmp
                    T.rf[kk] = r
                    T.rs[kk] = <uint8_t> (s + 2 * RK_ECHO_DELAY)
                    T.rv[kk] = <double> (t - rel_t) * 1e-9
                    nsmp = kk + 1
        # ---- sequence analysis of this packet as data of side s
        if R[C_SEQ_SET + s] == 0:
            R[C_SEQ_SET + s] = 1
            R[C_BASE + s] = sq
            R[C_LAST_RAW + s] = sq
            R[C_LAST_U + s] = 0
            u = 0
        else:
            u = R[C_LAST_U + s] + _s32(sq - R[C_LAST_RAW + s])
            R[C_LAST_RAW + s] = sq
            R[C_LAST_U + s] = u
        sl = ln + (1 if fl & 0x02 else 0) + (1 if fl & 0x01 else 0)
        # duplicate-ACK bookkeeping (this packet as an ACK of o's data), before it updates
        if (fl & 0x10) and R[C_SEQ_SET + o] == 1 and R[C_ACK_SET + o] == 1:
            a_new = R[C_ACK_U + o] + _s32(<int64_t> P.ack[i] - R[C_ACK_RAW + o])
            if (
                ln == 0
                and P.win[i] != 0
                and <int64_t> P.win[i] == R[C_LASTWIN + s]
                and u == R[C_MAX_END + s]
                and a_new == R[C_ACK_U + o]
                and (fl & 0x07) == 0
            ):
                R[C_DUP + o] += 1
            elif a_new != R[C_ACK_U + o]:
                R[C_DUP + o] = 0
        k_ = KIND_NONE
        if sl > 0 and not (fl & 0x04):
            e = u + sl
            sent = R[C_SENT + s] == 1
            max_end = R[C_MAX_END + s]
            if ln > 0:
                if R[C_DFIRST + s] < 0:
                    R[C_DFIRST + s] = t
                R[C_DLAST + s] = t
                if ln > R[C_MAXSEG + s]:
                    R[C_MAXSEG + s] = ln
                if u < R[C_MIN_DATA + s]:
                    R[C_MIN_DATA + s] = u
                if u + ln > R[C_MAX_DATA + s]:
                    R[C_MAX_DATA + s] = u + ln
            not_adv = sent and u < max_end  # (part of) this sequence space was sent before
            if sent and ln <= 1 and u == max_end - 1 and (fl & 0x07) == 0:
                k_ = KIND_KEEPALIVE
            else:
                if ln > 1 and u == max_end - 1:  # after a zero-window probe: new data
                    not_adv = False
                thres = R[C_FIRST_RTT] if R[C_FIRST_RTT] > 0 else 3000000
                dt_hi = t - R[C_MAX_END_TS + s]
                if ln > 0 and R[C_ACK_SET + s] == 1 and u + ln <= R[C_ACK_U + s]:
                    k_ = KIND_RETRANS  # spurious: already acknowledged
                elif not_adv and R[C_DUP + s] >= 2 and R[C_ACK_U + s] == u and t - R[C_ACK_TS + s] < 20000000:
                    k_ = KIND_RETRANS  # fast retransmission
                elif not_adv and 0 <= dt_hi < thres and max_end != e:
                    k_ = KIND_OOO
                elif not_adv:
                    k_ = KIND_RETRANS
            if k_ == KIND_RETRANS and ln > 0:
                R[C_RETRANS + s] += 1
            elif k_ == KIND_OOO and ln > 0:
                R[C_OOO + s] += 1
            if k_ == KIND_RETRANS or k_ == KIND_OOO:
                # Karn: queued segments overlapping [u, e) become ambiguous
                nd = R[C_QH + s]
                while nd >= 0:
                    if n_end[nd] > u:
                        T.n_flag[nd] = 1
                        if n_end[nd] >= e:
                            break
                    nd = n_next[nd]
            if not sent or e > max_end:
                if ln > 0:
                    # flights of new data: after a silence, released by the previous flight's
                    # first advancing ACK
                    last = R[C_FL_LAST + s]
                    start = last < 0  # the first data starts a flight
                    if not start:
                        gap = t - last
                        thr = FLIGHT_GAP_MIN_NS
                        if R[C_T_ACK3] >= 0 and R[C_T_SYN] >= 0 and _floordiv(R[C_T_ACK3] - R[C_T_SYN], 2) > thr:
                            thr = _floordiv(R[C_T_ACK3] - R[C_T_SYN], 2)  # half the handshake's round trip
                        start = gap > thr and gap > 4 * R[C_GAP_MIN + s]
                        if 0 < gap < R[C_GAP_MIN + s]:
                            R[C_GAP_MIN + s] = gap
                    if start:
                        fa = R[C_FL_ACK + s]
                        if fa >= 0 and fa <= t and rel_k == 0:
                            rel_t = fa
                            rel_k = RK_ACK_DATA
                        R[C_FL_ACK + s] = -1
                    R[C_FL_LAST + s] = t
                if ctl[1] >= 0:
                    nd = ctl[1]
                    ctl[1] = n_next[nd]
                else:
                    nd = ctl[2]
                    ctl[2] += 1
                n_end[nd] = e
                n_ts[nd] = t
                T.n_flag[nd] = sent and u < max_end  # partly re-sent: its timing is ambiguous
                T.n_rel[nd] = rel_t
                T.n_rk[nd] = <uint8_t> rel_k
                n_next[nd] = -1
                if R[C_QT + s] < 0:
                    R[C_QH + s] = nd
                else:
                    n_next[R[C_QT + s]] = nd
                R[C_QT + s] = nd
        if per_packet:
            T.out_kind[i] = <uint8_t> k_
        # Wireshark's nextseq advances on any packet (pure ACKs too) that ends beyond it
        e_any = u + sl
        if R[C_SENT + s] == 0 or e_any > R[C_MAX_END + s]:
            R[C_MAX_END + s] = e_any
            R[C_MAX_END_TS + s] = t
        R[C_SENT + s] = 1
        R[C_LASTWIN + s] = P.win[i]
        # ---- this packet as an ACK for the data of side o
        if per_packet:
            T.out_rtt[i] = NAN
        if (fl & 0x10) and R[C_SEQ_SET + o] == 1:
            if R[C_ACK_SET + o] == 0:  # first ACK of o's data: relative to o's first seq seen
                R[C_ACK_SET + o] = 1
                a = _s32(<int64_t> P.ack[i] - R[C_BASE + o])
                R[C_HI_ACK + o] = _I64_MIN
            else:
                a = R[C_ACK_U + o] + _s32(<int64_t> P.ack[i] - R[C_ACK_RAW + o])
            R[C_ACK_RAW + o] = P.ack[i]
            R[C_ACK_U + o] = a
            R[C_ACK_TS + o] = t
            if a > R[C_HI_ACK + o]:
                R[C_HI_ACK + o] = a
                if R[C_FL_ACK + o] < 0:
                    R[C_FL_ACK + o] = t  # the first advancing ACK of o's current flight
                last_ts = -1
                amb = False
                rel_t = -1
                rel_k = 0
                nd = R[C_QH + o]
                while nd >= 0 and n_end[nd] <= a:
                    last_ts = n_ts[nd]
                    if T.n_flag[nd]:
                        amb = True
                    if T.n_rk[nd] > 0:
                        rel_t = T.n_rel[nd]
                        rel_k = T.n_rk[nd]
                    nxt = n_next[nd]
                    n_next[nd] = ctl[1]
                    ctl[1] = nd
                    nd = nxt
                R[C_QH + o] = nd
                if nd < 0:
                    R[C_QT + o] = -1
                if last_ts >= 0 and not amb:
                    rtt = <double> (t - last_ts) * 1e-9
                    if per_packet:
                        T.out_rtt[i] = rtt
                    away = R[C_AWAY]
                    if away < 0 or ((away >> o) & 1) == 0:
                        kk = nsmp
                        T.rf[kk] = r
                        T.rs[kk] = <uint8_t> o  # the sample times the other side's data
                        T.rv[kk] = rtt
                        nsmp = kk + 1
                    if rel_k > 0 and t >= rel_t and (away < 0 or ((away >> o) & 1) == 1):  # release -> this ACK
                        kk = nsmp
                        T.rf[kk] = r
                        T.rs[kk] = <uint8_t> (o + 2 * rel_k)
                        T.rv[kk] = <double> (t - rel_t) * 1e-9
                        nsmp = kk + 1
    T.ctl[0], T.ctl[1], T.ctl[2], T.ctl[3] = ctl[0], ctl[1], ctl[2], ctl[3]
    T.acc[0], T.acc[1], T.acc[2] = acc[0], acc[1], acc[2]
    T.rtt_acc[0] = nsmp
    return st


def flow_kernel(int64_t i0, object pk, object tab, object nodes, object smp, bint per_packet, object out):
    """tracker._flow_kernel: (next packet index, ST_*).

    Checked here: every array's dtype, dimensions, layout and length, and the counters in
    ``tab.ctl`` and ``smp.used`` against the arrays' sizes. The contents of the state arrays
    (node links, rows in the hash table) are the kernel's own and are trusted."""
    cdef _Bound b = _Bound()
    cdef Pk P
    cdef Tab T
    cdef int64_t n, st, stop = 0, room
    P.flags = <const uint16_t*> b.field(pk, "flags", K_UINT, 2, False)
    n = P.n = b.rows
    P.shi = <const uint64_t*> _pkcol(b, pk, "shi", K_UINT, 8, n)
    P.slo = <const uint64_t*> _pkcol(b, pk, "slo", K_UINT, 8, n)
    P.dhi = <const uint64_t*> _pkcol(b, pk, "dhi", K_UINT, 8, n)
    P.dlo = <const uint64_t*> _pkcol(b, pk, "dlo", K_UINT, 8, n)
    P.sport = <const uint16_t*> _pkcol(b, pk, "sport", K_UINT, 2, n)
    P.dport = <const uint16_t*> _pkcol(b, pk, "dport", K_UINT, 2, n)
    P.seq = <const uint32_t*> _pkcol(b, pk, "seq", K_UINT, 4, n)
    P.ack = <const uint32_t*> _pkcol(b, pk, "ack", K_UINT, 4, n)
    P.win = <const uint16_t*> _pkcol(b, pk, "win", K_UINT, 2, n)
    P.plen = <const uint32_t*> _pkcol(b, pk, "plen", K_UINT, 4, n)
    P.wire = <const uint32_t*> _pkcol(b, pk, "wire", K_UINT, 4, n)
    P.ts = <const int64_t*> _pkcol(b, pk, "ts", K_INT, 8, n)
    P.mss = <const uint16_t*> _pkcol(b, pk, "mss", K_UINT, 2, n)
    P.has_mss = <const uint8_t*> _pkcol(b, pk, "has_mss", K_BOOL, 1, n)
    P.ws = <const uint8_t*> _pkcol(b, pk, "ws", K_UINT, 1, n)
    P.has_ws = <const uint8_t*> _pkcol(b, pk, "has_ws", K_BOOL, 1, n)
    P.sackp = <const uint8_t*> _pkcol(b, pk, "sackp", K_BOOL, 1, n)
    P.has_ts = <const uint8_t*> _pkcol(b, pk, "has_ts", K_BOOL, 1, n)
    P.tsval = <const uint32_t*> _pkcol(b, pk, "tsval", K_UINT, 4, n)
    P.tsecr = <const uint32_t*> _pkcol(b, pk, "tsecr", K_UINT, 4, n)
    P.ipv = <const uint8_t*> _pkcol(b, pk, "ipv", K_UINT, 1, n)
    P.status = <const uint8_t*> b.field(pk, "status", K_UINT, 1, False)
    if b.rows == 0:
        P.status = NULL
    else:
        b.at_least("Packets.status", n)
    if i0 < 0 or i0 > n:
        raise KernelArgumentError(f"i0 = {i0} is outside the {n} packets")
    # the state
    T.S = <int64_t*> _arr(b, tab, "S", K_INT, 8, 2)
    T.nrows, T.ss = b.rows, b.row_stride
    if b.cols != NCOL:
        raise KernelArgumentError(f"Table.S: {b.cols} columns, the compiled kernel has {NCOL} (rebuild it)")
    T.ADDR = <uint64_t*> _arr(b, tab, "ADDR", K_UINT, 8, 2)
    T.as_ = b.row_stride
    if b.cols != 4:
        raise KernelArgumentError(f"Table.ADDR: {b.cols} columns, needs 4")
    b.at_least("Table.ADDR", T.nrows)
    T.default = <const int64_t*> b.field(tab, "default", K_INT, 8, False)
    if b.rows != NCOL:
        raise KernelArgumentError(f"Table.default: {b.rows} values, needs {NCOL}")
    T.tkeys = <uint64_t*> _arr(b, tab, "tkeys", K_UINT, 8, 2)
    T.ks = b.row_stride
    if b.cols != 5:
        raise KernelArgumentError(f"Table.tkeys: {b.cols} columns, needs 5")
    room = b.rows
    T.tval = <int64_t*> _arr(b, tab, "tval", K_INT, 8)
    T.nslots = b.rows
    if T.nslots < 2 or (T.nslots & (T.nslots - 1)) != 0 or room < T.nslots:
        raise KernelArgumentError(f"Table.tval: {T.nslots} slots (a power of two, ≥ 2, as many as tkeys' rows)")
    T.ctl = <int64_t*> _arr(b, tab, "ctl", K_INT, 8)
    b.at_least("Table.ctl", 4)
    T.acc = <int64_t*> _arr(b, tab, "acc", K_INT, 8)
    b.at_least("Table.acc", 3)
    T.n_end = <int64_t*> _arr(b, nodes, "end", K_INT, 8)
    T.nnodes = b.rows
    T.n_ts = <int64_t*> _arr(b, nodes, "ts", K_INT, 8)
    b.at_least("Nodes.ts", T.nnodes)
    T.n_flag = <uint8_t*> _arr(b, nodes, "flag", K_BOOL, 1)
    b.at_least("Nodes.flag", T.nnodes)
    T.n_next = <int64_t*> _arr(b, nodes, "next", K_INT, 8)
    b.at_least("Nodes.next", T.nnodes)
    T.n_rel = <int64_t*> _arr(b, nodes, "rel", K_INT, 8)
    b.at_least("Nodes.rel", T.nnodes)
    T.n_rk = <uint8_t*> _arr(b, nodes, "rk", K_UINT, 1)
    b.at_least("Nodes.rk", T.nnodes)
    if not (0 <= T.ctl[0] <= T.nrows and -1 <= T.ctl[1] < T.nnodes and 0 <= T.ctl[2] <= T.nnodes
            and 0 <= T.ctl[3] <= T.nslots):
        raise KernelArgumentError(f"Table.ctl = {[T.ctl[0], T.ctl[1], T.ctl[2], T.ctl[3]]} does not fit the arrays")
    # the samples: room for SAMPLES_PER_PACKET per packet
    T.rtt_acc = <int64_t*> _arr(b, smp, "used", K_INT, 8)
    b.at_least("Samples.used", 1)
    if T.rtt_acc[0] < 0:
        raise KernelArgumentError(f"Samples.used = {T.rtt_acc[0]}")
    room = T.rtt_acc[0] + SAMPLES_PER_PACKET * (n - i0)
    T.rf = <int64_t*> _arr(b, smp, "flow", K_INT, 8)
    b.at_least("Samples.flow", room)
    T.rs = <uint8_t*> _arr(b, smp, "side", K_UINT, 1)
    b.at_least("Samples.side", room)
    T.rv = <double*> _arr(b, smp, "val", K_FLOAT, 8)
    b.at_least("Samples.val", room)
    T.out_flow, T.out_side, T.out_kind, T.out_rtt = NULL, NULL, NULL, NULL
    if per_packet:
        T.out_flow = <int64_t*> _arr(b, out, "flow", K_INT, 8)
        b.at_least("PerPacket.flow", n)
        T.out_side = <uint8_t*> _arr(b, out, "side", K_UINT, 1)
        b.at_least("PerPacket.side", n)
        T.out_kind = <uint8_t*> _arr(b, out, "kind", K_UINT, 1)
        b.at_least("PerPacket.kind", n)
        T.out_rtt = <double*> _arr(b, out, "rtt", K_FLOAT, 8)
        b.at_least("PerPacket.rtt", n)
    with nogil:
        st = _flow_kernel(i0, &P, &T, per_packet, &stop)
    return stop, st


def rehash(object tkeys, object tval, int64_t size):
    """tracker._rehash: the conversation table (keys, values) in ``size`` slots (a power of two)."""
    import numpy as np

    cdef _Bound b = _Bound()
    cdef const uint64_t* kp = <const uint64_t*> b.array(tkeys, "tkeys", K_UINT, 8, False, 2)
    cdef int64_t ks = b.row_stride, nold, j, slot, mask = size - 1, c, used = 0
    if b.cols != 5:
        raise KernelArgumentError(f"tkeys: {b.cols} columns, needs 5")
    nold = b.rows
    cdef const int64_t* vp = <const int64_t*> b.array(tval, "tval", K_INT, 8, False, 1)
    if b.rows > nold:
        raise KernelArgumentError(f"tval: {b.rows} slots, tkeys {nold}")
    nold = b.rows
    if size < 1 or (size & (size - 1)) != 0:
        raise KernelArgumentError(f"size = {size} is not a power of two")
    for j in range(nold):
        used += vp[j] >= 0
    if used >= size:
        raise KernelArgumentError(f"{used} conversations do not fit {size} slots")
    nk = np.zeros((size, 5), np.uint64)
    nv = np.full(size, -1, np.int64)
    cdef uint64_t* nkp = <uint64_t*> b.array(nk, "nk", K_UINT, 8, True, 2)
    cdef int64_t* nvp = <int64_t*> b.array(nv, "nv", K_INT, 8, True, 1)
    with nogil:
        for j in range(nold):
            if vp[j] >= 0:
                slot = <int64_t> (_hash(kp[j * ks], kp[j * ks + 1], kp[j * ks + 2], kp[j * ks + 3], kp[j * ks + 4])
                                  & <uint64_t> mask)
                while nvp[slot] >= 0:
                    slot = (slot + 1) & mask
                for c in range(5):
                    nkp[slot * 5 + c] = kp[j * ks + c]
                nvp[slot] = vp[j]
    return nk, nv


cdef int _cmp_double(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*> a)[0], y = (<const double*> b)[0]
    return (x > y) - (x < y)


cdef double _select(double* a, int64_t m, int64_t k) noexcept nogil:
    """Rearrange a[0:m] so that a[k] is its k-th smallest value, nothing before it larger and
    nothing after it smaller (as np.partition); returns a[k]. Quickselect with a median-of-three
    pivot and a three-way partition; after 2·log2(m) + 8 rounds the rest is sorted instead, so
    no input takes quadratic time."""
    cdef int64_t lo = 0, hi = m - 1, lt, gt, i, mid, budget = 8
    cdef int64_t x = m
    cdef double p, tmp, aa, bb, cc
    while x > 1:
        budget += 2
        x >>= 1
    while hi > lo:
        if budget == 0:
            qsort(a + lo, hi - lo + 1, sizeof(double), _cmp_double)
            return a[k]
        budget -= 1
        mid = lo + (hi - lo) // 2
        aa, bb, cc = a[lo], a[mid], a[hi]
        if aa < bb:
            p = bb if bb < cc else (cc if aa < cc else aa)
        else:
            p = aa if aa < cc else (cc if bb < cc else bb)
        # three-way partition of a[lo..hi]: < p | == p | > p
        lt, i, gt = lo, lo, hi
        while i <= gt:
            if a[i] < p:
                tmp = a[lt]; a[lt] = a[i]; a[i] = tmp
                lt += 1
                i += 1
            elif a[i] > p:
                tmp = a[gt]; a[gt] = a[i]; a[i] = tmp
                gt -= 1
            else:
                i += 1
        if k < lt:
            hi = lt - 1
        elif k > gt:
            lo = gt + 1
        else:
            return a[k]
    return a[k]


def group_stats(object fl, object sd, object v, object snd, object out):
    """tracker._group_stats: per flow f, min / median / max of the samples that timed its data
    sender, into ``out`` (tracker.Stats)."""
    cdef _Bound b = _Bound()
    cdef const int64_t* flp = <const int64_t*> b.array(fl, "fl", K_INT, 8, False, 1)
    cdef int64_t ns = b.rows, nf, i, f, m, kk, j, bad = -1
    cdef const uint8_t* sdp = <const uint8_t*> b.array(sd, "sd", K_UINT, 1, False, 1)
    b.at_least("sd", ns)
    cdef const double* vp = <const double*> b.array(v, "v", K_FLOAT, 8, False, 1)
    b.at_least("v", ns)
    cdef const int64_t* sndp = <const int64_t*> b.array(snd, "snd", K_INT, 8, False, 1)
    nf = b.rows
    cdef double* rmin = <double*> b.field(out, "min", K_FLOAT, 8, True)
    b.at_least("Stats.min", nf)
    cdef double* rmed = <double*> b.field(out, "median", K_FLOAT, 8, True)
    b.at_least("Stats.median", nf)
    cdef double* rmax = <double*> b.field(out, "max", K_FLOAT, 8, True)
    b.at_least("Stats.max", nf)
    for i in range(ns):
        if flp[i] < 0 or flp[i] >= nf:
            bad = i
            break
    if bad >= 0:
        raise KernelArgumentError(f"fl[{bad}] = {flp[bad]} is not a flow (there are {nf})")
    cdef int64_t* cnt = <int64_t*> malloc((nf + 1) * sizeof(int64_t))
    cdef int64_t* pos = <int64_t*> malloc((nf + 1) * sizeof(int64_t))
    cdef double* g = NULL
    cdef double lo_, hi_, mn, mx
    cdef double* part
    if cnt == NULL or pos == NULL:
        free(cnt)
        free(pos)
        raise MemoryError()
    try:
        with nogil:
            # samples bucketed by flow (counting sort, capture order kept)
            for f in range(nf + 1):
                cnt[f] = 0
            for i in range(ns):
                if sdp[i] == sndp[flp[i]]:
                    cnt[flp[i] + 1] += 1
            for f in range(nf):
                cnt[f + 1] += cnt[f]
            g = <double*> malloc((cnt[nf] + 1) * sizeof(double))
        if g == NULL:
            raise MemoryError()
        with nogil:
            for f in range(nf):
                pos[f] = cnt[f]
            for i in range(ns):
                f = flp[i]
                if sdp[i] == sndp[f]:
                    g[pos[f]] = vp[i]
                    pos[f] += 1
            for f in range(nf):
                m = cnt[f + 1] - cnt[f]
                if m == 0:
                    continue
                part = g + cnt[f]
                mn = part[0]
                mx = part[0]
                for j in range(1, m):
                    if part[j] < mn:
                        mn = part[j]
                    if part[j] > mx:
                        mx = part[j]
                kk = (m - 1) // 2
                lo_ = _select(part, m, kk)
                hi_ = lo_
                if m % 2 == 0:
                    hi_ = part[kk + 1]
                    for j in range(kk + 2, m):
                        if part[j] < hi_:
                            hi_ = part[j]
                rmin[f] = mn
                rmax[f] = mx
                rmed[f] = (lo_ + hi_) / 2
    finally:
        free(cnt)
        free(pos)
        free(g)
