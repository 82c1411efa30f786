"""The TCP flow table: packets → connections (schema.FLOWS), Wireshark's conversation table and more.

A *flow* is one TCP connection. Packets are grouped into conversations by their unordered
5-tuple; a conversation is split into several connections where a port pair is reused: a SYN
(without ACK) whose sequence number differs from the base sequence number already seen from
that endpoint starts a new connection. This is Wireshark's rule (``packet-tcp.c``: a SYN whose
``th_seq != fwd->base_seq`` creates a new conversation; ``base_seq`` is the first packet's seq,
minus one when that packet is not a SYN), so ``flow_id`` lines up with ``tcp.stream``: both number
connections in order of first packet. A retransmitted SYN (same ISN) stays in its connection.

Endpoint A is the SYN sender; without a SYN, the receiver of the first SYN/ACK; without either,
the source of the first packet. ``dir`` is 0 for A→B.

Everything is one compiled (numba) streaming pass over the packets in capture order,
:func:`_flow_kernel`, with per-connection state in an int64 matrix and conversations found
through an open-addressing hash table — so the same code serves :func:`build_flows` (a packet
table in memory) and :func:`flows_from_file` (batches straight from the decoder, never
materializing the packet table: the ``hscc-trace flows`` fast path). Per connection and
direction it unwraps sequence and acknowledgment numbers (RFC 9293 §3.4 modulo-2³² arithmetic),
classifies segments that do not advance the highest sequence number exactly as Wireshark's
``tcp_analyze_sequence_number`` does (keep-alive, spurious / fast / plain retransmission,
out-of-order; see :data:`KIND_RETRANS`), measures unique payload, and takes RTT samples by
data/ACK matching with Karn's rule (Karn & Partridge 1987; RFC 6298 §3): an ACK that advances
the cumulative ACK yields ``t_ack − t_send`` of the newest segment it fully covers, unless any
of the bytes it newly covers was sent more than once. SYN and FIN occupy one sequence number,
so the handshake gives a sample too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from hscc_trace.addr import to_str
from hscc_trace.errors import Warn
from hscc_trace.perf.jit import njit

from .near import both_turnarounds, both_turnarounds_compiled, near_by_floor, near_by_floor_compiled, ttl_near

if TYPE_CHECKING:  # polars is imported where a table is built, so the flows fast path can import it
    import polars as pl  # in the background while the compiled kernels run (hscc_trace.capture.load_flows)

SYN, ACK, FIN, RST = 0x02, 0x10, 0x01, 0x04

#: Largest window-scale shift used (RFC 7323 §2.3: "If a Window Scale option is received with a
#: shift.cnt value larger than 14, the TCP SHOULD log the error but MUST use 14 instead of the
#: specified value"). The flow table's ``wscale_a``/``wscale_b`` hold the shift used; a larger
#: announced value is reported as a warning with the raw value (docs/flows.md).
MAX_WSCALE = 14

#: per-packet segment kinds from the kernel (``kind`` output)
KIND_NONE, KIND_RETRANS, KIND_OOO, KIND_KEEPALIVE = 0, 1, 2, 3

# ---- per-connection state: columns of an int64 matrix; per-side fields take two columns ----
_FLOW_FIELDS = (
    "ipv",
    "port0",
    "port1",
    "first_ts",
    "last_ts",
    "first_side",
    "syn_side",
    "synack_side",
    "t_syn",
    "t_synack",
    "t_ack3",
    "rst",
    "fin",
    "mru_syn",
    "first_rtt",
    "away",  # from the handshake: bit k set if the capture is away from side k's end (-1: unknown)
)
_SIDE_FIELDS = (
    "pkts",
    "bytes",
    "payload",
    "mss",
    "ws",
    "sackp",
    "tsopt",
    "split_set",
    "split_base",
    "seq_set",
    "last_raw",
    "last_u",
    "base",
    "max_end",
    "max_end_ts",
    "min_data",
    "max_data",
    "sent",
    "ack_set",
    "ack_raw",
    "ack_u",
    "ack_ts",
    "hi_ack",
    "dup",
    "lastwin",
    "qh",
    "qt",
    "dfirst",
    "dlast",
    "maxseg",
    "retrans",
    "unique",
    "ooo",
    # receiver-side RTT: this side's TSvals awaiting the other side's echo (a queue of nodes), and
    # the flights of this side's data (ACK -> next new data after a silence)
    "ts_set",
    "ts_raw",
    "ts_u",
    "tq_h",
    "tq_t",
    "tq_n",
    "fl_ack",
    "fl_last",
    "gap_min",
    # the smallest and largest IP TTL (hop limit) of this side's packets: where the capture is
    "ttl_lo",
    "ttl_hi",
)
_COL: dict[str, int] = {}
for _n in _FLOW_FIELDS:
    _COL[_n] = len(_COL)
for _n in _SIDE_FIELDS:
    _COL[_n] = len(_COL)
    _COL[_n + "_1"] = len(_COL)
NCOL = len(_COL)
_I64_MAX = np.iinfo(np.int64).max
_I64_MIN = np.iinfo(np.int64).min  # numba freezes module globals as constants
_DEFAULT = np.zeros(NCOL, np.int64)
for _n, _v in (
    ("first_side", -1),
    ("syn_side", -1),
    ("synack_side", -1),
    ("t_syn", -1),
    ("t_synack", -1),
    ("t_ack3", -1),
    ("mru_syn", -1),
    ("away", -1),
    ("mss", -1),
    ("ws", -1),
    ("min_data", _I64_MAX),
    ("max_data", _I64_MIN),
    ("lastwin", -1),
    ("qh", -1),
    ("qt", -1),
    ("dfirst", -1),
    ("dlast", -1),
    ("tq_h", -1),
    ("tq_t", -1),
    ("fl_ack", -1),
    ("fl_last", -1),
    ("gap_min", _I64_MAX),
    ("ttl_lo", 256),
    ("ttl_hi", -1),
):
    _DEFAULT[_COL[_n]] = _v
    if _n in _SIDE_FIELDS:
        _DEFAULT[_COL[_n] + 1] = _v

# numba sees these as compile-time constants
C_IPV, C_PORT0, C_FIRST_TS, C_LAST_TS, C_FIRST_SIDE = (
    _COL["ipv"],
    _COL["port0"],
    _COL["first_ts"],
    _COL["last_ts"],
    _COL["first_side"],
)
C_SYN_SIDE, C_SYNACK_SIDE, C_T_SYN, C_T_SYNACK, C_T_ACK3 = (
    _COL["syn_side"],
    _COL["synack_side"],
    _COL["t_syn"],
    _COL["t_synack"],
    _COL["t_ack3"],
)
C_RST, C_FIN, C_MRU_SYN, C_FIRST_RTT = _COL["rst"], _COL["fin"], _COL["mru_syn"], _COL["first_rtt"]
C_AWAY = _COL["away"]
C_PKTS, C_BYTES, C_PAYLOAD, C_MSS, C_WS, C_SACKP, C_TSOPT = (
    _COL[n] for n in ("pkts", "bytes", "payload", "mss", "ws", "sackp", "tsopt")
)
C_SPLIT_SET, C_SPLIT_BASE, C_SEQ_SET, C_LAST_RAW, C_LAST_U, C_BASE = (
    _COL[n] for n in ("split_set", "split_base", "seq_set", "last_raw", "last_u", "base")
)
C_MAX_END, C_MAX_END_TS, C_MIN_DATA, C_MAX_DATA, C_SENT = (
    _COL[n] for n in ("max_end", "max_end_ts", "min_data", "max_data", "sent")
)
C_ACK_SET, C_ACK_RAW, C_ACK_U, C_ACK_TS, C_HI_ACK, C_DUP, C_LASTWIN = (
    _COL[n] for n in ("ack_set", "ack_raw", "ack_u", "ack_ts", "hi_ack", "dup", "lastwin")
)
C_QH, C_QT, C_DFIRST, C_DLAST, C_MAXSEG, C_RETRANS, C_UNIQUE = (
    _COL[n] for n in ("qh", "qt", "dfirst", "dlast", "maxseg", "retrans", "unique")
)
C_OOO = _COL["ooo"]
C_TS_SET, C_TS_RAW, C_TS_U, C_TQ_H, C_TQ_T, C_TQ_N = (
    _COL[n] for n in ("ts_set", "ts_raw", "ts_u", "tq_h", "tq_t", "tq_n")
)
C_FL_ACK, C_FL_LAST, C_GAP_MIN = (_COL[n] for n in ("fl_ack", "fl_last", "gap_min"))
C_TTL_LO, C_TTL_HI = _COL["ttl_lo"], _COL["ttl_hi"]

#: RTT sample kinds (how a sample was measured; the sample's side byte is side + 2 · kind):
#: data → its ACK at the capture point; release → ACK through the timestamp echo; release → ACK
#: through an ACK → next-flight round trip; and the bare timestamp-echo delay (receiver TSval →
#: first echo), which only decides where the capture was taken when the handshake does not tell
RK_DATA_ACK, RK_TS_ECHO, RK_ACK_DATA, RK_ECHO_DELAY = 0, 1, 2, 3
#: labels of ``rtt_method`` (schema.RTT_METHODS) by kind
RTT_METHOD_OF = ("data-ack", "ts-echo", "ack-to-data")
TQ_MAX = 4096  # TSvals awaiting an echo, per side (older ones are dropped: never echoed)
#: most RTT samples one packet can give: its echo delay, a data/ACK and a release/ACK sample, and
#: at the handshake's third ACK the handshake round trip for each side
SAMPLES_PER_PACKET = 5
FLIGHT_GAP_MIN_NS = 200_000  # a silence shorter than this never separates two flights

# kernel return status
ST_DONE, ST_GROW_FLOWS, ST_GROW_TABLE, ST_GROW_NODES = 0, 1, 2, 3


@njit(cache=True, inline="always")
def _s32(x):
    """Signed 32-bit difference of two raw sequence numbers held in int64 (RFC 9293 §3.4)."""
    x = x & 0xFFFFFFFF
    return x - 0x100000000 if x >= 0x80000000 else x


@njit(cache=True, inline="always")
def _hash(k0, k1, k2, k3, k4):
    h = np.uint64(0x9E3779B97F4A7C15)
    for k in (k0, k1, k2, k3, k4):
        h = (h ^ k) * np.uint64(0xBF58476D1CE4E5B9)
        h = h ^ (h >> np.uint64(31))
    return h


class Packets(NamedTuple):
    """The flow kernel's packet columns (capture order), as the decoder gives them."""

    shi: np.ndarray  # uint64, source address (high, low 64 bits)
    slo: np.ndarray  # uint64
    dhi: np.ndarray  # uint64, destination address
    dlo: np.ndarray  # uint64
    sport: np.ndarray  # uint16
    dport: np.ndarray  # uint16
    flags: np.ndarray  # uint16
    seq: np.ndarray  # uint32
    ack: np.ndarray  # uint32
    win: np.ndarray  # uint16
    plen: np.ndarray  # uint32, payload length
    wire: np.ndarray  # uint32, frame length
    ts: np.ndarray  # int64, ns
    mss: np.ndarray  # uint16
    has_mss: np.ndarray  # bool
    ws: np.ndarray  # uint8
    has_ws: np.ndarray  # bool
    sackp: np.ndarray  # bool
    has_ts: np.ndarray  # bool, timestamp option present
    tsval: np.ndarray  # uint32
    tsecr: np.ndarray  # uint32
    ipv: np.ndarray  # uint8
    ttl: np.ndarray  # uint8, IPv4 TTL / IPv6 hop limit
    status: np.ndarray  # uint8, the decoder's status per packet (0 = TCP row); empty: every packet is one

    @staticmethod
    def of(c: dict[str, np.ndarray], status: np.ndarray) -> Packets:
        """From columns named as schema.PACKETS (:func:`hscc_trace.capture.decode.decode_all`)."""
        return Packets(
            c["src_hi"],
            c["src_lo"],
            c["dst_hi"],
            c["dst_lo"],
            c["sport"],
            c["dport"],
            c["flags"],
            c["seq"],
            c["ack"],
            c["win"],
            c["payload_len"],
            c["wire_len"],
            c["ts_ns"],
            c["opt_mss"],
            c["has_mss"],
            c["opt_wscale"],
            c["has_ws"],
            c["opt_sack_perm"],
            c["has_ts"],
            c["opt_tsval"],
            c["opt_tsecr"],
            c["ip_version"],
            c["ip_ttl"],
            status,
        )


class Table(NamedTuple):
    """Connections and the conversation hash table (:class:`FlowTracker`'s state)."""

    S: np.ndarray  # int64 (flows × NCOL): per-connection state, columns C_*
    ADDR: np.ndarray  # uint64 (flows × 4): the two endpoints' addresses (hi, lo each)
    default: np.ndarray  # int64 (NCOL): a new connection's row
    tkeys: np.ndarray  # uint64 (slots × 5): conversation keys (a power of two slots)
    tval: np.ndarray  # int64 (slots): the connection row of each slot, −1 = free
    #: int64 [flows used, free node list head, node high-water mark, conversations in table]
    ctl: np.ndarray
    acc: np.ndarray  # int64 [TCP rows, first ts, last ts]


class Nodes(NamedTuple):
    """Queued segments and TSvals (singly linked lists through ``next``)."""

    end: np.ndarray  # int64, unwrapped end sequence number (a TSval: its unwrapped value)
    ts: np.ndarray  # int64, time sent (a TSval: first seen)
    flag: np.ndarray  # bool, timing ambiguous (Karn)
    next: np.ndarray  # int64, next node or −1
    rel: np.ndarray  # int64, time of the packet that released the segment
    rk: np.ndarray  # uint8, its RK_* kind (0: none)


class Samples(NamedTuple):
    """RTT samples, appended in order (room for :data:`SAMPLES_PER_PACKET` per packet fed)."""

    flow: np.ndarray  # int64, flow row
    side: np.ndarray  # uint8, side whose data the sample times + 2 · its RK_* kind
    val: np.ndarray  # float64, seconds
    used: np.ndarray  # int64 [samples held]


class PerPacket(NamedTuple):
    """Per packet results (:meth:`FlowTracker.feed`)."""

    flow: np.ndarray  # int64, flow row (−1: not a TCP row)
    side: np.ndarray  # uint8, which endpoint of the conversation sent it
    kind: np.ndarray  # uint8, KIND_*
    rtt: np.ndarray  # float64, data/ACK RTT sample (s) or NaN


# ---- steps of the flow kernel that decide from scalars (numba inlines them). The steps that
# update its arrays stay in it: numba counts a reference (an atomic add and subtract) for every
# array handed to an inlined function or read from a tuple, and in a function this large it prunes
# few of them — the kernel split into steps taking its arrays ran 3x slower.


@njit(cache=True, inline="always")
def _conversation_key(a_hi, a_lo, b_hi, b_lo, pa, pb):
    """Wireshark's conversation key, the unordered 5-tuple of a packet from (``a_hi``, ``a_lo``)
    port ``pa`` to (``b_hi``, ``b_lo``) port ``pb``: (sender's side, key). Side 0 is the (address,
    port) that sorts first; key = (hi, lo of side 0, hi, lo of side 1, ports)."""
    if a_hi < b_hi or (a_hi == b_hi and (a_lo < b_lo or (a_lo == b_lo and pa <= pb))):
        return 0, (a_hi, a_lo, b_hi, b_lo, (pa << np.uint64(16)) | pb)
    return 1, (b_hi, b_lo, a_hi, a_lo, (pb << np.uint64(16)) | pa)


@njit(cache=True, inline="always")
def _away(g1, g2, a_side):
    """Where the capture is, from the handshake's gaps SYN → SYN/ACK ``g1`` and SYN/ACK → third
    ACK ``g2`` (ns) as :meth:`FlowTracker._columns` decides the vantage: near a side whose gap is
    under a quarter of the other or its turnaround (:func:`.near.near_by_floor`). Bit k set: away
    from side k's end (endpoint A is side ``a_side``); -1 (every kind of sample kept, as without a
    handshake) when both gaps are under the floor (:func:`.near.both_turnarounds`): the TTLs
    may name the end there."""
    if both_turnarounds_compiled(g1, g2):
        return -1
    near_a = g2 * 4 < g1 or near_by_floor_compiled(g2, g1)
    near_b = g1 * 4 < g2 or near_by_floor_compiled(g1, g2)
    return (0 if near_a else 1 << a_side) | (0 if near_b else 1 << (1 - a_side))


@njit(cache=True, inline="always")
def _duplicate_acks(dup, fl, ln, win, same, moved):
    """Wireshark's ``tcp.analysis.duplicate_ack`` count after an ACK with flags ``fl``, payload
    ``ln`` and window ``win``: one more when it carries nothing, has a non-zero window, is the
    ``same`` (window as the side's last, seq at its nextseq) and has not ``moved`` the ACK, with
    no SYN/FIN/RST; 0 when it moved the ACK; else ``dup``."""
    if ln == 0 and win != 0 and same and not moved and (fl & 0x07) == 0:
        return dup + 1
    if moved:
        return np.int64(0)
    return dup


@njit(cache=True, inline="always")
def _analyze_sequence_number(u, ln, fl, t, nextseq, lastack):
    """Wireshark's ``tcp_analyze_sequence_number`` (``epan/dissectors/packet-tcp.c``) for a segment
    at relative seq ``u`` with payload ``ln``, flags ``fl``, time ``t``; ``nextseq`` = (sent
    before, highest end, its time, initial RTT or 0) and ``lastack`` = (ACKed before, last ACK,
    its time, duplicate ACKs) of its side. KIND_KEEPALIVE (``keep_alive``), KIND_RETRANS
    (``spurious_retransmission``: already acknowledged; ``fast_retransmission``: ≥ 2 duplicate
    ACKs, at the last ACK, within 20 ms of it; ``retransmission``), KIND_OOO (``out_of_order``:
    within the initial RTT, 3 ms when unknown, of the highest end, not ending at it), else
    KIND_NONE."""
    sent, max_end, max_end_ts, first_rtt = nextseq
    ack_set, ack_u, ack_ts, dup = lastack
    e = u + ln + (1 if fl & 0x02 else 0) + (1 if fl & 0x01 else 0)
    not_adv = sent and u < max_end  # (part of) this sequence space was sent before
    if sent and ln <= 1 and u == max_end - 1 and (fl & 0x07) == 0:
        return KIND_KEEPALIVE
    if ln > 1 and u == max_end - 1:  # after a zero-window probe: new data
        not_adv = False
    thres = first_rtt if first_rtt > 0 else 3000000
    dt_hi = t - max_end_ts
    if ln > 0 and ack_set and u + ln <= ack_u:
        return KIND_RETRANS  # spurious: already acknowledged
    if not_adv and dup >= 2 and ack_u == u and t - ack_ts < 20000000:
        return KIND_RETRANS  # fast retransmission
    if not_adv and 0 <= dt_hi < thres and max_end != e:
        return KIND_OOO
    if not_adv:
        return KIND_RETRANS
    return KIND_NONE


@njit(cache=True, inline="always")
def _flight_start(t, last, gap_min, t_syn, t_ack3):
    """Does new data at ``t`` start a flight (the side's previous new data at ``last``, −1: none,
    the shortest gap so far ``gap_min``)? After a silence longer than four times the shortest gap,
    than half the handshake's round trip (SYN ``t_syn`` → third ACK ``t_ack3``) when captured and
    than :data:`FLIGHT_GAP_MIN_NS`. (starts, shortest gap now)."""
    if last < 0:
        return True, gap_min  # the first data starts a flight
    gap = t - last
    thr = FLIGHT_GAP_MIN_NS
    if t_ack3 >= 0 and t_syn >= 0 and (t_ack3 - t_syn) // 2 > thr:
        thr = (t_ack3 - t_syn) // 2  # half the handshake's round trip
    start = gap > thr and gap > 4 * gap_min
    if 0 < gap < gap_min:
        gap_min = gap
    return start, gap_min


@njit(work=lambda a: len(a[1].flags) - int(a[0]), cost=(8.01, 3.2e-05), cache=True, nogil=True)
def _flow_kernel(i0, pk, tab, nodes, smp, per_packet, out):
    """Process packets i0.. of ``pk`` (:class:`Packets`) in capture order, updating ``tab``
    (:class:`Table`), ``nodes`` (:class:`Nodes`) and ``smp`` (:class:`Samples`); returns (next
    packet index, ST_*).

    ``status`` is the decoder's status per packet (:mod:`hscc_trace.capture.decode`): packets
    whose status is not 0 are not TCP rows and are skipped (``out_flow`` −1, ``out_rtt`` NaN);
    an empty ``status`` means every packet is a TCP row.
    ctl = [flows used, free node list head, node high-water mark, conversations in table].
    The kernel stops *before* a packet that could overflow a table; the caller grows it and
    calls again from the returned index.
    With ``per_packet`` the arrays of ``out`` (:class:`PerPacket`) get each packet's (flow row,
    side, KIND_*, data/ACK RTT sample s or NaN); without, they are not touched (may be empty). Either way every RTT sample is
    appended at rf/rs/rv[rtt_acc[0]] (flow row, side whose data it times + 2 · its kind ``RK_*``,
    s; the caller leaves room for :data:`SAMPLES_PER_PACKET` per packet) and acc = [TCP rows, first ts, last ts] is
    updated.

    Receiver-side RTT (kinds other than data/ACK). A sample must time the data sender's whole
    round trip: from the packet of the receiver that released a segment to the receiver's ACK of
    it, both at the capture point (at the receiver that is the sender's RTT; mid-path the two
    halves add up). The releasing packet is known two ways. Timestamps (RFC 7323 §4.3): the
    first segment echoing a TSval the other side sent was released by the packet that carried it
    (``RK_TS_ECHO``; the delay alone, ``RK_ECHO_DELAY``, is kept to tell where the capture was
    taken). Without them, flights: the side's first data, and a new-data segment arriving after
    a silence longer than four times the shortest gap between two of the side's new-data
    segments, than half the handshake's round trip when it was captured, and than
    :data:`FLIGHT_GAP_MIN_NS`, start a flight, released by the first advancing ACK (of the
    side's sequence space: the SYN/ACK for the first flight) after the previous flight began
    (``RK_ACK_DATA``). Each ACK gives one such sample: of the newest segment it
    covers that has a releasing packet (Karn's rule as for data/ACK samples). Node arrays:
    ``n_rel`` the releasing packet's time, ``n_rk`` its kind (0: none); queued TSvals use
    ``n_end`` (unwrapped value) and ``n_ts`` (first time seen).
    """
    (shi, slo, dhi, dlo, sport, dport, flags, seq, ack, win, plen, wire, ts, mss, has_mss, ws, has_ws) = pk[:17]
    sackp, has_tsopt, tsval, tsecr, ipv, ttl, status = pk[17:]
    S, ADDR, default, tkeys, tval, ctl, acc = tab
    n_end, n_ts, n_flag, n_next, n_rel, n_rk = nodes
    rf, rs, rv, rtt_acc = smp
    out_flow, out_side, out_kind, out_rtt = out
    n = len(flags)
    tmask = len(tval) - 1
    check = len(status) > 0
    # slot and key of the last conversation looked up (slots do not move during one call)
    mru = np.int64(-1)
    m0 = m1 = m2 = m3 = m4 = np.uint64(0)
    for i in range(i0, n):
        if check and status[i] != 0:
            if per_packet:
                out_flow[i] = -1
                out_side[i] = 0
                out_kind[i] = KIND_NONE
                out_rtt[i] = np.nan
            continue
        # capacity checks (one packet adds at most one flow, one conversation, one node)
        if ctl[0] + 1 > S.shape[0]:
            return i, ST_GROW_FLOWS
        if (ctl[3] + 1) * 2 > len(tval):
            return i, ST_GROW_TABLE
        if ctl[2] + 2 > len(n_end):  # (a packet may take two nodes: a TSval and a segment)
            return i, ST_GROW_NODES
        acc[0] += 1
        if ts[i] < acc[1]:
            acc[1] = ts[i]
        if ts[i] > acc[2]:
            acc[2] = ts[i]
        # ---- conversation lookup: side 0 is the (addr, port) that sorts first
        s, key = _conversation_key(shi[i], slo[i], dhi[i], dlo[i], np.uint64(sport[i]), np.uint64(dport[i]))
        k0, k1, k2, k3, k4 = key
        if mru >= 0 and k4 == m4 and k1 == m1 and k3 == m3 and k0 == m0 and k2 == m2:
            slot = mru  # same conversation as the previous TCP packet: no hashing
        else:
            slot = np.int64(_hash(k0, k1, k2, k3, k4) & np.uint64(tmask))
            while tval[slot] >= 0 and not (
                tkeys[slot, 0] == k0
                and tkeys[slot, 1] == k1
                and tkeys[slot, 2] == k2
                and tkeys[slot, 3] == k3
                and tkeys[slot, 4] == k4
            ):
                slot = (slot + 1) & tmask
            mru, m0, m1, m2, m3, m4 = slot, k0, k1, k2, k3, k4
        fl = np.int64(flags[i])
        sq = np.int64(seq[i])
        t = ts[i]
        pure_syn = (fl & 0x12) == 0x02
        r = tval[slot]
        new = r < 0
        if not new and pure_syn and S[r, C_SPLIT_SET + s] == 1 and sq != S[r, C_SPLIT_BASE + s]:
            new = True  # port reuse: a new connection on this 5-tuple
        if new:
            r = ctl[0]
            ctl[0] += 1
            S[r, :] = default
            if tval[slot] < 0:
                ctl[3] += 1
                tkeys[slot, 0] = k0
                tkeys[slot, 1] = k1
                tkeys[slot, 2] = k2
                tkeys[slot, 3] = k3
                tkeys[slot, 4] = k4
            tval[slot] = r
            ADDR[r, 0] = k0
            ADDR[r, 1] = k1
            ADDR[r, 2] = k2
            ADDR[r, 3] = k3
            S[r, C_PORT0] = np.int64(k4 >> np.uint64(16))
            S[r, C_PORT0 + 1] = np.int64(k4 & np.uint64(0xFFFF))
            S[r, C_IPV] = ipv[i]
            S[r, C_FIRST_TS] = t
            S[r, C_FIRST_SIDE] = s
        if S[r, C_SPLIT_SET + s] == 0:
            S[r, C_SPLIT_SET + s] = 1
            S[r, C_SPLIT_BASE + s] = sq if (fl & 0x02) else ((sq - 1) & 0xFFFFFFFF)
        o = 1 - s
        if per_packet:
            out_flow[i] = r
            out_side[i] = s
        # ---- counters and handshake
        ln = np.int64(plen[i])
        S[r, C_LAST_TS] = t
        S[r, C_PKTS + s] += 1
        h = np.int64(ttl[i])
        if h < S[r, C_TTL_LO + s]:
            S[r, C_TTL_LO + s] = h
        if h > S[r, C_TTL_HI + s]:
            S[r, C_TTL_HI + s] = h
        S[r, C_BYTES + s] += wire[i]
        S[r, C_PAYLOAD + s] += ln
        if fl & 0x04:
            S[r, C_RST] = 1
        if fl & 0x01:
            S[r, C_FIN] = 1
        if fl & 0x02:
            if has_mss[i] and S[r, C_MSS + s] < 0:
                S[r, C_MSS + s] = mss[i]
            if has_ws[i] and S[r, C_WS + s] < 0:
                S[r, C_WS + s] = ws[i]
            if sackp[i]:
                S[r, C_SACKP + s] = 1
            if has_tsopt[i]:
                S[r, C_TSOPT + s] = 1
        if pure_syn:
            if S[r, C_SYN_SIDE] < 0:
                S[r, C_SYN_SIDE] = s
                S[r, C_T_SYN] = t
            S[r, C_MRU_SYN] = t
        elif (fl & 0x12) == 0x12:
            if S[r, C_T_SYNACK] < 0 and S[r, C_SYN_SIDE] != s:
                S[r, C_SYNACK_SIDE] = s
                S[r, C_T_SYNACK] = t
        elif (fl & 0x10) != 0:
            if S[r, C_MRU_SYN] >= 0 and S[r, C_FIRST_RTT] == 0:
                S[r, C_FIRST_RTT] = t - S[r, C_MRU_SYN]
            if S[r, C_T_SYNACK] >= 0 and S[r, C_T_ACK3] < 0 and s != S[r, C_SYNACK_SIDE] and t >= S[r, C_T_SYNACK]:
                S[r, C_T_ACK3] = t
                if S[r, C_T_SYN] >= 0 and S[r, C_SYN_SIDE] >= 0 and S[r, C_T_SYNACK] >= S[r, C_T_SYN]:
                    # where the capture is, as _columns decides the vantage: only the samples that
                    # will be used are kept from now on (data/ACK for a side whose end this is)
                    S[r, C_AWAY] = _away(S[r, C_T_SYNACK] - S[r, C_T_SYN], t - S[r, C_T_SYNACK], S[r, C_SYN_SIDE])
                if S[r, C_T_SYN] >= 0 and t >= S[r, C_T_SYN]:
                    # the handshake's round trip, SYN -> third ACK, wherever the capture is (at the
                    # sender data/ACK matching times it): one sample of each side's away-from-the-
                    # sender RTT, of the kind its other samples will be
                    hk = RK_TS_ECHO if (S[r, C_TSOPT] == 1 and S[r, C_TSOPT + 1] == 1) else RK_ACK_DATA
                    for side in range(2):
                        if S[r, C_AWAY] >= 0 and (S[r, C_AWAY] >> side) & 1 == 0:
                            continue  # (the capture is at this side's end: data/ACK times it)
                        k = rtt_acc[0]
                        rf[k] = r
                        rs[k] = side + 2 * hk
                        rv[k] = (t - S[r, C_T_SYN]) * 1e-9
                        rtt_acc[0] = k + 1
        # ---- timestamps: side s's TSval awaits o's echo; s's echo of o's TSval releases this packet
        rel_t = np.int64(-1)
        rel_k = 0
        if has_tsopt[i]:
            v = np.int64(tsval[i])
            fresh = False
            vu = np.int64(0)
            if S[r, C_TS_SET + s] == 0:
                S[r, C_TS_SET + s] = 1
                S[r, C_TS_RAW + s] = v
                S[r, C_TS_U + s] = 0
                fresh = True
            else:
                dv = _s32(v - S[r, C_TS_RAW + s])
                if dv > 0:
                    fresh = True
                    vu = S[r, C_TS_U + s] + dv
                    S[r, C_TS_RAW + s] = v
                    S[r, C_TS_U + s] = vu
            if fresh:
                if S[r, C_TQ_N + s] >= TQ_MAX:  # never echoed: drop the oldest
                    nd = S[r, C_TQ_H + s]
                    S[r, C_TQ_H + s] = n_next[nd]
                    n_next[nd] = ctl[1]
                    ctl[1] = nd
                    S[r, C_TQ_N + s] -= 1
                if ctl[1] >= 0:
                    nd = ctl[1]
                    ctl[1] = n_next[nd]
                else:
                    nd = ctl[2]
                    ctl[2] += 1
                n_end[nd] = vu
                n_ts[nd] = t
                n_next[nd] = -1
                if S[r, C_TQ_N + s] == 0:
                    S[r, C_TQ_H + s] = nd
                else:
                    n_next[S[r, C_TQ_T + s]] = nd
                S[r, C_TQ_T + s] = nd
                S[r, C_TQ_N + s] += 1
            if (fl & 0x10) and S[r, C_TQ_N + o] > 0:
                eu = S[r, C_TS_U + o] + _s32(np.int64(tsecr[i]) - S[r, C_TS_RAW + o])
                nd = S[r, C_TQ_H + o]
                while nd >= 0 and n_end[nd] <= eu:
                    if n_end[nd] == eu and n_ts[nd] <= t:
                        rel_t = n_ts[nd]
                        rel_k = RK_TS_ECHO
                    nxt = n_next[nd]
                    n_next[nd] = ctl[1]
                    ctl[1] = nd
                    S[r, C_TQ_N + o] -= 1
                    nd = nxt
                S[r, C_TQ_H + o] = nd
                if nd < 0:
                    S[r, C_TQ_T + o] = -1
                if rel_k == RK_TS_ECHO and S[r, C_AWAY] < 0:
                    k = rtt_acc[0]
                    rf[k] = r
                    rs[k] = s + 2 * RK_ECHO_DELAY
                    rv[k] = (t - rel_t) * 1e-9
                    rtt_acc[0] = k + 1
        # ---- sequence analysis of this packet as data of side s
        if S[r, C_SEQ_SET + s] == 0:
            S[r, C_SEQ_SET + s] = 1
            S[r, C_BASE + s] = sq
            S[r, C_LAST_RAW + s] = sq
            S[r, C_LAST_U + s] = 0
            u = np.int64(0)
        else:
            u = S[r, C_LAST_U + s] + _s32(sq - S[r, C_LAST_RAW + s])
            S[r, C_LAST_RAW + s] = sq
            S[r, C_LAST_U + s] = u
        sl = ln + (1 if fl & 0x02 else 0) + (1 if fl & 0x01 else 0)
        # duplicate-ACK bookkeeping (this packet as an ACK of o's data), before it updates
        if (fl & 0x10) and S[r, C_SEQ_SET + o] == 1 and S[r, C_ACK_SET + o] == 1:
            moved = _s32(np.int64(ack[i]) - S[r, C_ACK_RAW + o]) != 0
            same = np.int64(win[i]) == S[r, C_LASTWIN + s] and u == S[r, C_MAX_END + s]
            S[r, C_DUP + o] = _duplicate_acks(S[r, C_DUP + o], fl, ln, np.int64(win[i]), same, moved)
        k_ = KIND_NONE
        if sl > 0 and not (fl & 0x04):
            e = u + sl
            sent = S[r, C_SENT + s] == 1
            max_end = S[r, C_MAX_END + s]
            if ln > 0:
                if S[r, C_DFIRST + s] < 0:
                    S[r, C_DFIRST + s] = t
                S[r, C_DLAST + s] = t
                if ln > S[r, C_MAXSEG + s]:
                    S[r, C_MAXSEG + s] = ln
                if u < S[r, C_MIN_DATA + s]:
                    S[r, C_MIN_DATA + s] = u
                if u + ln > S[r, C_MAX_DATA + s]:
                    S[r, C_MAX_DATA + s] = u + ln
            nextseq = (sent, max_end, S[r, C_MAX_END_TS + s], S[r, C_FIRST_RTT])
            lastack = (S[r, C_ACK_SET + s] == 1, S[r, C_ACK_U + s], S[r, C_ACK_TS + s], S[r, C_DUP + s])
            k_ = _analyze_sequence_number(u, ln, fl, t, nextseq, lastack)
            if k_ == KIND_RETRANS and ln > 0:
                S[r, C_RETRANS + s] += 1
            elif k_ == KIND_OOO and ln > 0:
                S[r, C_OOO + s] += 1
            if k_ == KIND_RETRANS or k_ == KIND_OOO:
                # Karn: queued segments overlapping [u, e) become ambiguous
                nd = S[r, C_QH + s]
                while nd >= 0:
                    if n_end[nd] > u:
                        n_flag[nd] = True
                        if n_end[nd] >= e:
                            break
                    nd = n_next[nd]
            if not sent or e > max_end:
                if ln > 0:
                    # flights of new data: after a silence, released by the previous flight's
                    # first advancing ACK
                    start, S[r, C_GAP_MIN + s] = _flight_start(
                        t, S[r, C_FL_LAST + s], S[r, C_GAP_MIN + s], S[r, C_T_SYN], S[r, C_T_ACK3]
                    )
                    if start:
                        fa = S[r, C_FL_ACK + s]
                        if fa >= 0 and fa <= t and rel_k == 0:
                            rel_t = fa
                            rel_k = RK_ACK_DATA
                        S[r, C_FL_ACK + s] = -1
                    S[r, C_FL_LAST + s] = t
                if ctl[1] >= 0:
                    nd = ctl[1]
                    ctl[1] = n_next[nd]
                else:
                    nd = ctl[2]
                    ctl[2] += 1
                n_end[nd] = e
                n_ts[nd] = t
                n_flag[nd] = sent and u < max_end  # partly re-sent: its timing is ambiguous
                n_rel[nd] = rel_t
                n_rk[nd] = rel_k
                n_next[nd] = -1
                if S[r, C_QT + s] < 0:
                    S[r, C_QH + s] = nd
                else:
                    n_next[S[r, C_QT + s]] = nd
                S[r, C_QT + s] = nd
        if per_packet:
            out_kind[i] = k_
        # Wireshark's nextseq advances on any packet (pure ACKs too) that ends beyond it
        e_any = u + sl
        if S[r, C_SENT + s] == 0 or e_any > S[r, C_MAX_END + s]:
            S[r, C_MAX_END + s] = e_any
            S[r, C_MAX_END_TS + s] = t
        S[r, C_SENT + s] = 1
        S[r, C_LASTWIN + s] = win[i]
        # ---- this packet as an ACK for the data of side o
        if per_packet:
            out_rtt[i] = np.nan
        if (fl & 0x10) and S[r, C_SEQ_SET + o] == 1:
            if S[r, C_ACK_SET + o] == 0:  # first ACK of o's data: relative to o's first seq seen
                S[r, C_ACK_SET + o] = 1
                a = _s32(np.int64(ack[i]) - S[r, C_BASE + o])
                S[r, C_HI_ACK + o] = _I64_MIN
            else:
                a = S[r, C_ACK_U + o] + _s32(np.int64(ack[i]) - S[r, C_ACK_RAW + o])
            S[r, C_ACK_RAW + o] = np.int64(ack[i])
            S[r, C_ACK_U + o] = a
            S[r, C_ACK_TS + o] = t
            if a > S[r, C_HI_ACK + o]:
                S[r, C_HI_ACK + o] = a
                if S[r, C_FL_ACK + o] < 0:
                    S[r, C_FL_ACK + o] = t  # the first advancing ACK of o's current flight
                last_ts = np.int64(-1)
                amb = False
                rel_t = np.int64(-1)
                rel_k = 0
                nd = S[r, C_QH + o]
                while nd >= 0 and n_end[nd] <= a:
                    last_ts = n_ts[nd]
                    if n_flag[nd]:
                        amb = True
                    if n_rk[nd] > 0:
                        rel_t = n_rel[nd]
                        rel_k = n_rk[nd]
                    nxt = n_next[nd]
                    n_next[nd] = ctl[1]
                    ctl[1] = nd
                    nd = nxt
                S[r, C_QH + o] = nd
                if nd < 0:
                    S[r, C_QT + o] = -1
                if last_ts >= 0 and not amb:
                    rtt = (t - last_ts) * 1e-9
                    if per_packet:
                        out_rtt[i] = rtt
                    away = S[r, C_AWAY]
                    if away < 0 or (away >> o) & 1 == 0:
                        k = rtt_acc[0]
                        rf[k] = r
                        rs[k] = o  # the sample times the other side's data
                        rv[k] = rtt
                        rtt_acc[0] = k + 1
                    if rel_k > 0 and t >= rel_t and (away < 0 or (away >> o) & 1 == 1):  # release -> this ACK
                        k = rtt_acc[0]
                        rf[k] = r
                        rs[k] = o + 2 * rel_k
                        rv[k] = (t - rel_t) * 1e-9
                        rtt_acc[0] = k + 1
    return n, ST_DONE


@njit(work=lambda a: len(a[1]), cost=(3.05, 7.03e-06), cache=True)
def _rehash(tkeys, tval, size):
    """The conversation table (keys, values) in ``size`` slots (a power of two)."""
    nk = np.zeros((size, 5), np.uint64)
    nv = np.full(size, -1, np.int64)
    mask = size - 1
    for j in range(len(tval)):
        if tval[j] >= 0:
            slot = np.int64(_hash(tkeys[j, 0], tkeys[j, 1], tkeys[j, 2], tkeys[j, 3], tkeys[j, 4]) & np.uint64(mask))
            while nv[slot] >= 0:
                slot = (slot + 1) & mask
            nk[slot, :] = tkeys[j, :]
            nv[slot] = tval[j]
    return nk, nv


class FlowTracker:
    """Streaming state of :func:`_flow_kernel`: feed packet columns batch by batch, then finish."""

    def __init__(self, flows: int = 1024, nodes: int = 1 << 16, samples: int = 0):
        """Initial capacities (all grow as needed): connections, queued segments, RTT samples.

        ``samples`` may be generous: the sample arrays are written in order, so memory pages
        beyond the samples actually taken are never touched (not resident), and a large enough
        reservation saves the copies of growing them.
        """
        self.S = np.zeros((flows, NCOL), np.int64)
        self.ADDR = np.zeros((flows, 4), np.uint64)
        self.tkeys = np.zeros((4096, 5), np.uint64)
        self.tval = np.full(4096, -1, np.int64)
        self.n_end = np.zeros(nodes, np.int64)
        self.n_ts = np.zeros(nodes, np.int64)
        self.n_flag = np.zeros(nodes, np.bool_)
        self.n_next = np.full(nodes, -1, np.int64)
        self.n_rel = np.zeros(nodes, np.int64)
        self.n_rk = np.zeros(nodes, np.uint8)
        self.ctl = np.array([0, -1, 0, 0], np.int64)
        # RTT samples (flow row, side whose data they time, seconds); rtt_acc[0] = samples held
        self.rtt_flow = np.empty(samples, np.int64)
        self.rtt_side = np.empty(samples, np.uint8)
        self.rtt_val = np.empty(samples, np.float64)
        self.rtt_acc = np.zeros(1, np.int64)
        #: what :meth:`feed_decoded` saw: [TCP rows, first ts_ns, last ts_ns]
        self.acc = np.zeros(3, np.int64)
        self.acc[1], self.acc[2] = _I64_MAX, _I64_MIN

    def feed(self, c: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Process one batch of packet columns (capture order); returns per packet (flow row, side, kind, rtt s)."""
        n = len(c["flags"])
        out = PerPacket(np.empty(n, np.int64), np.empty(n, np.uint8), np.empty(n, np.uint8), np.empty(n, np.float64))
        self._run(c, _NO_STATUS, True, out)
        return tuple(out)

    def feed_decoded(self, c: dict[str, np.ndarray], status: np.ndarray) -> None:
        """Process every record of one decoded batch whose ``status`` is 0 (a TCP row), in order.

        ``c`` holds the decoder's columns for *all* records of the batch (values of non-TCP
        records are garbage and never read). Nothing per packet is returned (the kernel writes
        no per-packet output); :attr:`acc` counts the TCP rows and keeps their first/last timestamp.
        """
        self._run(c, status, False, _NO_OUT)

    def _run(self, c: dict[str, np.ndarray], status: np.ndarray, per_packet: bool, out: PerPacket) -> None:
        n = len(c["flags"])
        used = int(self.rtt_acc[0])
        if used + SAMPLES_PER_PACKET * n > len(self.rtt_val):  # room for the most samples a packet gives
            size = max(used + SAMPLES_PER_PACKET * n, 2 * len(self.rtt_val), 4096)
            self.rtt_flow = _grown(self.rtt_flow, used, size)
            self.rtt_side = _grown(self.rtt_side, used, size)
            self.rtt_val = _grown(self.rtt_val, used, size)
        pk = Packets.of(c, status)
        smp = Samples(self.rtt_flow, self.rtt_side, self.rtt_val, self.rtt_acc)
        i = 0
        while True:
            tab = Table(self.S, self.ADDR, _DEFAULT, self.tkeys, self.tval, self.ctl, self.acc)
            nodes = Nodes(self.n_end, self.n_ts, self.n_flag, self.n_next, self.n_rel, self.n_rk)
            i, st = _flow_kernel(i, pk, tab, nodes, smp, per_packet, out)
            if st == ST_DONE:
                break
            if st == ST_GROW_FLOWS:
                grow = self.S.shape[0] * 2
                self.S = np.concatenate([self.S, np.zeros((grow - self.S.shape[0], NCOL), np.int64)])
                self.ADDR = np.concatenate([self.ADDR, np.zeros((grow - self.ADDR.shape[0], 4), np.uint64)])
            elif st == ST_GROW_TABLE:
                self.tkeys, self.tval = _rehash(self.tkeys, self.tval, len(self.tval) * 4)
            else:
                m = len(self.n_end)
                self.n_end = np.concatenate([self.n_end, np.zeros(m, np.int64)])
                self.n_ts = np.concatenate([self.n_ts, np.zeros(m, np.int64)])
                self.n_flag = np.concatenate([self.n_flag, np.zeros(m, np.bool_)])
                self.n_next = np.concatenate([self.n_next, np.full(m, -1, np.int64)])
                self.n_rel = np.concatenate([self.n_rel, np.zeros(m, np.int64)])
                self.n_rk = np.concatenate([self.n_rk, np.zeros(m, np.uint8)])

    @property
    def n_flows(self) -> int:
        return int(self.ctl[0])

    def a_side(self) -> np.ndarray:
        """Per flow, which canonical side is endpoint A (the SYN sender)."""
        S = self.S[: self.n_flows]
        syn, synack, first = S[:, C_SYN_SIDE], S[:, C_SYNACK_SIDE], S[:, C_FIRST_SIDE]
        return np.where(syn >= 0, syn, np.where(synack >= 0, 1 - synack, first)).astype(np.uint8)

    def table(self) -> pl.DataFrame:
        """The flow table (schema.FLOWS) of everything fed so far."""
        import polars as pl

        from hscc_trace import schema

        if self.n_flows == 0:
            return schema.empty(schema.FLOWS)
        return schema.conform(pl.DataFrame(self._columns(), nan_to_null=True), schema.FLOWS)

    def rows(self) -> list[dict]:
        """The flow table as row dicts, without polars: equal to
        ``table().with_columns(pl.col("vantage").cast(str)).to_dicts()`` (same keys in the same
        order, same Python types and values; NaN becomes None as ``nan_to_null`` does).

        For ``hscc-trace flows``, which prints rows: importing polars (≈ 0.15 s) would be a
        tenth of the command's run time.
        """
        nf = self.n_flows
        if nf == 0:
            return []
        cols = self._columns()
        lists = []
        for name, v in cols.items():
            if isinstance(v, list):
                lists.append(v)
                continue
            # values as the schema's dtype gives them back: np.ndarray.tolist() yields Python
            # int / float / bool / str exactly like polars' to_dicts of the cast column
            kind = _ROW_KIND.get(name)
            vals = v.tolist()
            if kind == "int_or_none":
                vals = [None if x != x else int(x) for x in vals]
            elif v.dtype.kind == "f":
                vals = [None if x != x else x for x in vals]
            lists.append(vals)
        names = list(cols)
        return [dict(zip(names, r)) for r in zip(*lists)]

    def wscale_warning(self, source: str) -> Warn | None:
        """One warning naming every connection whose SYN announced a window-scale shift above
        :data:`MAX_WSCALE`, with the raw values (the flow table holds 14 for them; the packet
        table's ``opt_wscale`` keeps the value on the wire); None when there is none."""
        nf = self.n_flows
        if nf == 0:
            return None
        S = self.S[:nf]
        A = self.a_side().astype(np.int64)
        rows = np.arange(nf)
        over = []
        for name, which in (("A", A), ("B", 1 - A)):
            raw = S[rows, C_WS + which]
            for f in np.flatnonzero(raw > MAX_WSCALE).tolist():
                over.append((f, name, int(raw[f])))
        if not over:
            return None
        over.sort()
        shown = ", ".join(f"flow {f} {n}: {v}" for f, n, v in over[:5]) + (" …" if len(over) > 5 else "")
        return Warn(
            source,
            f"window-scale shift above {MAX_WSCALE} announced ({shown}); used as {MAX_WSCALE} (RFC 7323 §2.3)",
            len(over),
        )

    def _columns(self) -> dict[str, np.ndarray | list[str]]:
        """The flow table's columns (schema.FLOWS order) as numpy arrays / lists of str, before
        the schema casts (integer columns int64 or smaller, NaN = missing)."""
        nf = self.n_flows
        S = self.S[:nf]
        A = self.a_side().astype(np.int64)
        B = 1 - A
        rows = np.arange(nf)

        def side(col: int, which: np.ndarray) -> np.ndarray:
            return S[rows, col + which]

        # unique payload bytes per side: highest data end − lowest data start
        uniq = np.where(
            S[:, [C_MAX_DATA, C_MAX_DATA + 1]] > S[:, [C_MIN_DATA, C_MIN_DATA + 1]],
            S[:, [C_MAX_DATA, C_MAX_DATA + 1]] - S[:, [C_MIN_DATA, C_MIN_DATA + 1]],
            0,
        )
        u_a, u_b = uniq[rows, A], uniq[rows, B]
        sender = (u_b > u_a).astype(np.uint8)  # 0 = A→B carries most unique payload
        snd = np.where(sender == 0, A, B)
        rcv = 1 - snd
        u_s = uniq[rows, snd]
        first_s, last_s = side(C_DFIRST, snd), side(C_DLAST, snd)
        dur = (last_s - first_s) * 1e-9
        with np.errstate(divide="ignore", invalid="ignore"):
            goodput = np.where((first_s >= 0) & (dur > 0), u_s * 8.0 / dur, np.nan)
        ann = side(C_MSS, rcv).astype(np.float64)
        seen = side(C_MAXSEG, snd).astype(np.float64)
        ann[ann < 0] = np.nan
        seen[seen <= 0] = np.nan
        mss = np.fmin(ann, seen)
        # vantage from the handshake: at A the SYN→SYN/ACK gap is ~RTT and SYN/ACK→ACK tiny; at B the
        # reverse (tiny: under a quarter of the other, or under the host-turnaround floor, .near)
        t_syn, t_sa, t_a3 = S[:, C_T_SYN], S[:, C_T_SYNACK], S[:, C_T_ACK3]
        hs_ok = (t_syn >= 0) & (t_sa >= 0) & (t_a3 >= 0) & (t_sa >= t_syn)
        g1 = (t_sa - t_syn).astype(np.float64)
        g2 = (t_a3 - t_sa).astype(np.float64)
        near_a = (g2 * 4 < g1) | near_by_floor(g2, g1)
        near_b = (g1 * 4 < g2) | near_by_floor(g1, g2)
        sender_is_a = sender == 0
        vantage = np.where(
            ~hs_ok,
            "unknown",
            np.where(
                near_a,
                np.where(sender_is_a, "sender", "receiver"),
                np.where(near_b, np.where(sender_is_a, "receiver", "sender"), "mid-path"),
            ),
        )
        # where the gaps cannot name the end (both under the floor) or there is no handshake: the
        # IP TTLs, when one side's are at an initial value and the other's below it (.near.ttl_near)
        lo_s, hi_s, lo_r, hi_r = side(C_TTL_LO, snd), side(C_TTL_HI, snd), side(C_TTL_LO, rcv), side(C_TTL_HI, rcv)
        ttl_snd, ttl_rcv = ttl_near(lo_s, hi_s, lo_r, hi_r), ttl_near(lo_r, hi_r, lo_s, hi_s)
        by_ttl = (~hs_ok | both_turnarounds(g1, g2)) & (ttl_snd | ttl_rcv)
        vantage = np.where(by_ttl, np.where(ttl_snd, "sender", "receiver"), vantage)
        # both gaps under the floor, gaps alike and no TTL answer: either gap may be a host's own
        # turnaround (a capture at the sender over veth: 8 µs and 6 µs), so nothing names a place
        alike = hs_ok & both_turnarounds(g1, g2) & ~by_ttl & (vantage == "mid-path")
        vantage = np.where(alike, "unknown", vantage)
        # RTT of the data sender's segments, measured as the vantage point allows
        rmin, rmed, rmax, method = self._rtt_columns(nf, snd, vantage)
        handshake = (S[:, C_SYN_SIDE] >= 0) & (S[:, C_SYNACK_SIDE] >= 0) & (S[:, C_SYNACK_SIDE] != S[:, C_SYN_SIDE])
        ipv = S[:, C_IPV]
        addr = self.ADDR[:nf]
        a_hi, a_lo = addr[rows, 2 * A], addr[rows, 2 * A + 1]
        b_hi, b_lo = addr[rows, 2 * B], addr[rows, 2 * B + 1]
        src = _addr_strings(a_hi, a_lo, ipv)
        dst = _addr_strings(b_hi, b_lo, ipv)
        ws_a, ws_b = side(C_WS, A), side(C_WS, B)
        return {
            "flow_id": rows.astype(np.uint32),
            "src": src,
            "sport": side(C_PORT0, A),
            "dst": dst,
            "dport": side(C_PORT0, B),
            "ip_version": ipv,
            "first_ns": S[:, C_FIRST_TS],
            "last_ns": S[:, C_LAST_TS],
            "duration_s": (S[:, C_LAST_TS] - S[:, C_FIRST_TS]) * 1e-9,
            "pkts_ab": side(C_PKTS, A),
            "bytes_ab": side(C_BYTES, A),
            "pkts_ba": side(C_PKTS, B),
            "bytes_ba": side(C_BYTES, B),
            "payload_ab": side(C_PAYLOAD, A),
            "payload_ba": side(C_PAYLOAD, B),
            "sender_dir": sender,
            "goodput_bps": goodput,
            "mss": mss,
            "wscale_a": np.where(ws_a >= 0, np.minimum(ws_a, MAX_WSCALE), -1),
            "wscale_b": np.where(ws_b >= 0, np.minimum(ws_b, MAX_WSCALE), -1),
            "sack_ok": (side(C_SACKP, A) == 1) & (side(C_SACKP, B) == 1),
            "ts_ok": (side(C_TSOPT, A) == 1) & (side(C_TSOPT, B) == 1),
            "handshake": handshake,
            "closed": np.where(S[:, C_RST] == 1, "rst", np.where(S[:, C_FIN] == 1, "fin", "open")),
            "retrans": side(C_RETRANS, snd),
            "out_of_order": side(C_OOO, snd),
            "rtt_min_s": rmin,
            "rtt_median_s": rmed,
            "rtt_max_s": rmax,
            "rtt_method": method,
            "vantage": vantage,
        }

    def preload(self) -> None:
        """Load the compiled RTT statistics kernel now (numba loads a cached kernel on its first
        call, ≈ 10 ms holding the GIL): called while this thread would otherwise wait for the
        first batch, so the final :meth:`table` / :meth:`rows` does not pay it."""
        z = np.empty(0, np.float64)
        _group_stats(self.rtt_flow[:0], self.rtt_side[:0], self.rtt_val[:0], np.empty(0, np.int64), Stats(z, z, z))

    def _rtt_stats(self, nf: int, snd: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """min / median / max of the samples that timed each flow's data sender, per sample kind:
        arrays of shape (4, nf), row ``RK_*`` (one pass over the samples, keyed flow · 4 + kind)."""
        rmin = np.full(4 * nf, np.nan)
        rmed = np.full(4 * nf, np.nan)
        rmax = np.full(4 * nf, np.nan)
        used = int(self.rtt_acc[0])
        if used:
            sd = self.rtt_side[:used]
            key = self.rtt_flow[:used] * 4 + (sd >> 1)
            _group_stats(key, sd & 1, self.rtt_val[:used], np.repeat(snd.astype(np.int64), 4), Stats(rmin, rmed, rmax))
        return rmin.reshape(nf, 4).T, rmed.reshape(nf, 4).T, rmax.reshape(nf, 4).T

    def _rtt_columns(
        self, nf: int, snd: np.ndarray, vantage: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str | None]]:
        """rtt_min_s, rtt_median_s, rtt_max_s and rtt_method per flow (rules: docs/flows.md).

        At the sender: data → ACK. At the receiver or mid-path: release → ACK through the
        timestamp echo, else through ACK → next-flight round trips, else none (the data → ACK
        time there is only the receiver's side). Vantage unknown: the timestamp echo delay
        against the data → ACK time, as the event streams decide (a part below 10 % of the two
        is where the capture was taken); without timestamps, data → ACK."""
        st = self._rtt_stats(nf, snd)
        da, ts, ad = ((st[0][k], st[1][k], st[2][k]) for k in (RK_DATA_ACK, RK_TS_ECHO, RK_ACK_DATA))
        echo_med = st[1][RK_ECHO_DELAY]
        has_ts, has_ad = ~np.isnan(ts[1]), ~np.isnan(ad[1])
        away = (vantage == "receiver") | (vantage == "mid-path")
        unknown = vantage == "unknown"
        s_med = np.where(np.isnan(da[1]), 0.0, da[1])
        far = unknown & ~np.isnan(echo_med) & ~(echo_med < 0.1 * (echo_med + s_med))
        use_ts = (away | far) & has_ts
        use_ad = away & ~has_ts & has_ad
        none = (away & ~has_ts & ~has_ad) | (far & ~has_ts)
        out = []
        for k in range(3):
            col = np.where(use_ts, ts[k], np.where(use_ad, ad[k], da[k]))
            col[none] = np.nan
            out.append(col)
        labels = np.where(use_ts, RK_TS_ECHO, np.where(use_ad, RK_ACK_DATA, RK_DATA_ACK))
        method: list[str | None] = [
            None if (no or m != m) else RTT_METHOD_OF[lab]
            for no, m, lab in zip(none.tolist(), out[1].tolist(), labels.tolist())
        ]
        return out[0], out[1], out[2], method


def _addr_strings(hi: np.ndarray, lo: np.ndarray, ipv: np.ndarray) -> list[str]:
    """Text addresses (as :func:`hscc_trace.addr.to_str`); IPv4 dotted quads formatted directly,
    since ipaddress takes a few µs each (thousands of connections)."""
    out = []
    for h, x, v in zip(hi.tolist(), lo.tolist(), ipv.tolist()):
        if v == 4:
            out.append(f"{(x >> 24) & 255}.{(x >> 16) & 255}.{(x >> 8) & 255}.{x & 255}")
        else:
            out.append(to_str(h, x, v))
    return out


def _grown(a: np.ndarray, used: int, size: int) -> np.ndarray:
    """``a`` in a new array of ``size`` elements, its first ``used`` copied (the rest is not written:
    its pages are never touched until samples land there)."""
    b = np.empty(size, a.dtype)
    b[:used] = a[:used]
    return b


_NO_STATUS = np.zeros(0, np.uint8)  # feed(): every packet is a TCP row
_NO_OUT = PerPacket(np.empty(0, np.int64), np.empty(0, np.uint8), np.empty(0, np.uint8), np.empty(0, np.float64))
#: FlowTracker.rows(): float columns whose schema dtype is an integer (NaN = null)
_ROW_KIND = {"mss": "int_or_none"}


class Stats(NamedTuple):
    """Per group: min, median, max (:func:`_group_stats` writes them; NaN-filled by the caller)."""

    min: np.ndarray  # float64
    median: np.ndarray  # float64
    max: np.ndarray  # float64


@njit(work=lambda a: len(a[0]), cost=(4.77, 1.53e-06), cache=True, nogil=True)
def _group_stats(fl, sd, v, snd, out):
    """Per flow f: min, median (mean of the two middle values if even), max of the samples v
    with fl == f that timed the data sender's segments (sd == snd[f]), into ``out`` (:class:`Stats`).

    Samples are bucketed by flow (counting sort, capture order kept) and the median is found by
    selection (np.partition) rather than a full sort.
    """
    rmin, rmed, rmax = out
    nf = len(snd)
    cnt = np.zeros(nf + 1, np.int64)
    for i in range(len(fl)):
        if sd[i] == snd[fl[i]]:
            cnt[fl[i] + 1] += 1
    for f in range(nf):
        cnt[f + 1] += cnt[f]
    pos = cnt[:nf].copy()
    g = np.empty(cnt[nf], np.float64)
    for i in range(len(fl)):
        f = fl[i]
        if sd[i] == snd[f]:
            g[pos[f]] = v[i]
            pos[f] += 1
    for f in range(nf):
        m = cnt[f + 1] - cnt[f]
        if m == 0:
            continue
        part = g[cnt[f] : cnt[f + 1]]
        k = (m - 1) // 2
        lo_ = np.partition(part, k)  # lo_[k] is the k-th smallest; everything after it is >= it
        hi = lo_[k]
        if m % 2 == 0:
            hi = lo_[k + 1]
            for j in range(k + 2, m):
                if lo_[j] < hi:
                    hi = lo_[j]
        rmin[f] = part.min()
        rmax[f] = part.max()
        rmed[f] = (lo_[k] + hi) / 2


def _columns(pk: pl.DataFrame) -> dict[str, np.ndarray]:
    """Kernel inputs from a packet table (nullable options become value + presence mask)."""
    c = {
        name: pk[name].to_numpy()
        for name in (
            "src_hi",
            "src_lo",
            "dst_hi",
            "dst_lo",
            "sport",
            "dport",
            "flags",
            "seq",
            "ack",
            "win",
            "payload_len",
            "wire_len",
            "ts_ns",
            "ip_version",
        )
    }
    c["ip_ttl"] = pk["ip_ttl"].fill_null(0).to_numpy() if "ip_ttl" in pk.columns else np.zeros(pk.height, np.uint8)
    c["opt_mss"] = pk["opt_mss"].fill_null(0).to_numpy()
    c["has_mss"] = pk["opt_mss"].is_not_null().to_numpy()
    c["opt_wscale"] = pk["opt_wscale"].fill_null(0).to_numpy()
    c["has_ws"] = pk["opt_wscale"].is_not_null().to_numpy()
    c["opt_sack_perm"] = pk["opt_sack_perm"].fill_null(False).to_numpy()
    c["has_ts"] = pk["opt_tsval"].is_not_null().to_numpy()
    c["opt_tsval"] = pk["opt_tsval"].fill_null(0).to_numpy()
    c["opt_tsecr"] = pk["opt_tsecr"].fill_null(0).to_numpy()
    return c


def build_flows(
    packets: pl.DataFrame, *, warnings: list | None = None, source: str = ""
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Assign ``flow_id`` and ``dir`` to every packet and build the flow table.

    ``packets`` follows schema.PACKETS (``flow_id``/``dir`` may be absent or stale). Returns
    (packets in capture order conforming to schema.PACKETS, flows conforming to schema.FLOWS).
    With a ``warnings`` list, warnings about the connections (a window-scale shift above 14)
    are appended to it, with ``source`` as their source.
    """
    import polars as pl

    from hscc_trace import schema

    cols = [c.name for c in schema.PACKETS if c.name not in ("flow_id", "dir")]
    pk = packets.select(cols)
    if pk.height == 0:
        empty = pk.with_columns(flow_id=pl.lit(0, pl.UInt32), dir=pl.lit(0, pl.UInt8))
        return schema.conform(empty, schema.PACKETS), schema.empty(schema.FLOWS)
    if not pk["frame"].is_sorted():
        pk = pk.sort("frame")
    tr = FlowTracker(flows=max(16, pk.height // 64), nodes=max(1024, pk.height // 4))
    flow, side, _kind, _rtt = tr.feed(_columns(pk))
    a = tr.a_side()
    pk = pk.with_columns(
        pl.Series("flow_id", flow.astype(np.uint32)), pl.Series("dir", (side ^ a[flow]).astype(np.uint8))
    )
    if warnings is not None:
        w = tr.wscale_warning(source)
        if w is not None:
            warnings.append(w)
    return schema.conform(pk, schema.PACKETS), tr.table()


def segment_kinds(packets: pl.DataFrame) -> np.ndarray:
    """Per packet KIND_* (in the order of ``packets``, which must be in capture order).

    Exposed for tests and for comparison with Wireshark's tcp.analysis flags.
    """
    tr = FlowTracker()
    return tr.feed(_columns(packets))[2]


__all__ = ["build_flows", "FlowTracker", "segment_kinds", "KIND_NONE", "KIND_RETRANS", "KIND_OOO", "KIND_KEEPALIVE"]
