"""From a flow's rows of schema.PACKETS to the arrays the state machine runs on.

Everything here is vectorized (numpy/polars). The main job is sequence arithmetic:

* the data sender's sequence numbers and the receiver's ACK/SACK numbers live in one 32-bit
  space; they are unwrapped *together* (cumulative sum of the signed 32-bit differences between
  consecutive values in capture order, RFC 1982 serial-number arithmetic), so a flow may cross
  2^32 any number of times as long as consecutive values are less than 2^31 apart;
* the origin is the sender's ISN when its SYN was captured (SYN = 0, first payload byte = 1),
  otherwise the first seen sequence number − 1 (first byte = 1), exactly as Wireshark's
  relative sequence numbers (packet-tcp.c: ``base_seq = seq - 1`` without SYN);
* SACK edges are unwrapped relative to the ACK of the same packet;
* TCP timestamps are unwrapped per clock (sender's TSval with the receiver's TSecr, and the
  receiver's TSval with the sender's TSecr), relative to the first value seen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba.extending import overload

from hscc_trace.capture.decode import F_ACK, F_FIN, F_RST, F_SYN  # noqa: F401  (re-used across events)
from hscc_trace.flows.records import DIR_SHIFT, ECN_SHIFT, FLAGS, SACK_SHIFT, TS_SHIFT
from hscc_trace.perf.jit import njit

from .core import NOTS, _fields, seek


@dataclass
class Handshake:
    """What the SYN exchange tells (times in ns; None when not captured)."""

    seen: bool = False  # SYN and SYN/ACK both captured
    syn_ns: int | None = None  # last SYN from A before the SYN/ACK
    synack_ns: int | None = None  # first SYN/ACK from B
    ack_ns: int | None = None  # first ACK from A after the SYN/ACK (third packet)
    irtt_ns: int | None = None  # Wireshark iRTT: SYN to first pure ACK


@dataclass
class FlowArrays:
    """Inputs of :func:`hscc_trace.events.core.analyze` plus what is needed to build tables."""

    frame: np.ndarray
    snd: np.ndarray
    ts: np.ndarray
    seq: np.ndarray
    ack: np.ndarray
    plen: np.ndarray
    flags: np.ndarray
    win: np.ndarray
    tsv: np.ndarray
    tse: np.ndarray
    rtsv: np.ndarray  # receiver-clock TSval (receiver packets) / TSecr (sender packets)
    sl: np.ndarray
    sr: np.ndarray
    sn: np.ndarray
    ecn: np.ndarray
    sender_dir: int
    handshake: Handshake
    mss: int
    rwnd_shift: int
    rwnd_scale_known: bool
    sack_flow: bool
    ts_flow: bool


@njit(cache=True)
def _unwrap_joint(raw, use, lead, origin):
    """Unwrap u32 values (int64) of rows with ``use``; ``lead`` rows move the reference.

    Each value is placed within ±2^31 of the running maximum of the lead rows seen so far (the
    data sender's sequence numbers), so a stray value (a bogus ACK, a RST) cannot derail the
    values after it. ``origin`` is the raw value that maps to 0.
    """
    n = raw.shape[0]
    out = np.zeros(n, np.int64)
    cur = np.int64(0)
    have = False
    m32 = np.int64(2**32)
    h31 = np.int64(2**31)
    for i in range(n):
        if not use[i]:
            continue
        rel = (raw[i] - origin) % m32
        d = (rel - (cur % m32) + h31) % m32 - h31
        v = cur + d
        out[i] = v
        if lead[i] or not have:
            if (not have) or v > cur:
                cur = v
            have = True
    return out


NONE = np.int64(np.iinfo(np.int64).min)  # per-flow time "not captured"

# schema.PACKETS columns the kernel reads, in its argument order, with the dtype it is compiled for
# and the value a null stands for (the old per-flow code filled nulls the same way)
_SOURCE = (
    ("frame", np.uint64, 0),
    ("ts_ns", np.int64, 0),
    ("dir", np.uint8, 0),
    ("seq", np.uint32, 0),
    ("ack", np.uint32, 0),
    ("flags", np.uint16, 0),
    ("win", np.uint16, 0),
    ("payload_len", np.uint32, 0),
    ("ip_ecn", np.uint8, 0),
    ("sack_n", np.uint8, 0),
    *((f"sack_{e}{i}", np.uint32, 0) for i in range(4) for e in ("l", "r")),
    ("opt_tsval", np.uint32, 0),
    ("opt_tsecr", np.uint32, 0),
    ("opt_mss", np.uint16, 0),
    ("opt_wscale", np.int16, -1),
    ("opt_sack_perm", np.bool_, False),
)
NEED = ("frame", "ts_ns", "dir", "seq", "ack", "flags", "win", "payload_len")
COLUMNS = tuple(name for name, _d, _f in _SOURCE)  # every schema.PACKETS column the events read


def source_columns(packets: Any) -> tuple[np.ndarray, ...]:
    """The kernel's input columns from a schema.PACKETS DataFrame, in :func:`prep_flows` order.

    Per-packet columns are the table's own buffers where they have no nulls (no copy). SACK
    edges are taken only for the rows that carry SACK blocks and the SYN options only for SYN
    rows (``sack_rows``/``syn_rows``: sorted table rows; nearly all other values are null). A
    missing optional column reads as all-null; nulls read as the per-flow code read them (0, -1
    for an absent window scale, False). If a column has an unexpected dtype, every column is
    cast to int64 (one other compiled signature).
    """
    import polars as pl

    from hscc_trace import schema

    n = packets.height
    names = packets.columns
    want_dtype = {c.name: c.dtype for c in schema.PACKETS}
    odd = any(name in names and packets.schema[name] != want_dtype[name] for name, _d, _f in _SOURCE)

    def col(df: Any, name: str, dt: Any, fill: Any, rows: int) -> np.ndarray:
        want = np.bool_ if dt is np.bool_ else (np.int64 if odd else dt)
        if name not in df.columns:
            return np.zeros(rows, want)
        s = df.get_column(name)
        if name == "opt_wscale":
            s = s.cast(pl.Int16)
        if s.null_count():
            s = s.fill_null(fill)
        return s.to_numpy().astype(want, copy=False)

    spec = {name: (dt, fill) for name, dt, fill in _SOURCE}
    per_row = [
        col(packets, name, *spec[name], n)
        for name in ("frame", "ts_ns", "dir", "seq", "ack", "flags", "win", "payload_len", "ip_ecn", "sack_n")
    ]
    if "sack_l0" not in names:  # the per-flow code read no SACK blocks without the edge columns
        per_row[9] = np.zeros(n, per_row[9].dtype)
    sack_rows = np.flatnonzero(per_row[9] > 0)
    edges = [f"sack_{e}{i}" for i in range(4) for e in ("l", "r")]
    sub = packets.select([c for c in edges if c in names])[sack_rows]
    sack = [col(sub, name, *spec[name], sack_rows.size) for name in edges]
    tv = packets.get_column("opt_tsval") if "opt_tsval" in names else None
    has_ts = (
        np.zeros(n, np.bool_) if tv is None else (~tv.is_null().to_numpy() if tv.null_count() else np.ones(n, np.bool_))
    )
    ts_opt = [col(packets, name, *spec[name], n) for name in ("opt_tsval", "opt_tsecr")]
    syn_rows = np.flatnonzero((per_row[5] & F_SYN) != 0)
    sub = packets.select([c for c in ("opt_mss", "opt_wscale", "opt_sack_perm") if c in names])[syn_rows]
    syn_opt = [col(sub, name, *spec[name], syn_rows.size) for name in ("opt_mss", "opt_wscale", "opt_sack_perm")]
    return (*per_row, sack_rows, *sack, *ts_opt, has_ts, syn_rows, *syn_opt, False)


@njit(cache=True, inline="always")
def _wrap32(x):
    """Signed 32-bit interpretation of an int64 difference (RFC 1982 serial arithmetic)."""
    return ((x + np.int64(2**31)) & np.int64(0xFFFFFFFF)) - np.int64(2**31)


@njit(cache=True, inline="always")
def _unwrap_step(raw, origin, cur):
    """``raw`` (u32 as int64) placed within ±2^31 of ``cur``, relative to ``origin`` (see _unwrap_joint)."""
    m32 = np.int64(2**32)
    h31 = np.int64(2**31)
    rel = (raw - origin) % m32
    d = (rel - (cur % m32) + h31) % m32 - h31
    return cur + d


_B, _I = np.bool_, np.int64

#: The flow at hand between the steps of :func:`prep_flows`: one structured record, as
#: :data:`.core.STATE` (numba passes it as a pointer; interpreted it is a dict, :func:`prep_array`).
#: Groups: its rows ``lo:hi`` of the batch; the handshake candidates (flow-relative rows, -1 none:
#: A's first SYN without ACK and first SYN, B's first SYN-ACK and first SYN) and each direction's
#: payload bytes; the data sender's direction; the SYN options as the sender sees them — each
#: end's ISN (its SYN's sequence number, Wireshark's ``base_seq``), each end's window scale (-1
#: none), the MSS the receiver announced, SACK-permitted by both; the handshake times (:data:`NONE`: not captured);
#: the first TSval of each clock (``ts_snd``, ``ts_rcv``); any SACK block, the largest segment.
PREP = np.dtype(
    [
        *[("lo", _I), ("hi", _I)],
        *[("syn_a", _I), ("any_syn_a", _I), ("synack_b", _I), ("any_syn_b", _I)],
        *[("bytes_a", _I), ("bytes_b", _I), ("sdir", _I)],
        *[("snd_isn", _I), ("snd_isn_known", _B), ("rcv_isn", _I), ("rcv_isn_known", _B)],
        *[("snd_wscale", _I), ("rcv_wscale", _I), ("rcv_mss", _I), ("sack_ok", _B)],
        *[("seen", _B), ("syn_ns", _I), ("synack_ns", _I), ("ack3_ns", _I), ("irtt_ns", _I)],
        *[("have_ts_snd", _B), ("ts_snd", _I), ("have_ts_rcv", _B), ("ts_rcv", _I)],
        *[("any_sack", _B), ("biggest", _I)],
    ],
    align=True,
)


def prep_array() -> list[dict[str, object]]:
    """A zeroed 1-element :data:`PREP` array (interpreted a dict, as :func:`.core.state_array`)."""
    return [_fields(PREP)]


@overload(prep_array)
def _prep_array_compiled():  # type: ignore[no-untyped-def]
    return lambda: np.zeros(1, PREP)


@njit(cache=True, inline="always")
def gather_flow(order, src, rows, fs):
    """Gather: the flow's source rows into ``rows`` (raw values for the steps after it), its
    handshake candidates and each direction's payload bytes."""
    frame, ts, seq, ack, plen, flags, win = rows.frame, rows.ts, rows.seq, rows.ack, rows.plen, rows.flags, rows.win
    tsv, tse, rtsv, sl, sn, ecn = rows.tsv, rows.tse, rows.rtsv, rows.sl, rows.sn, rows.ecn
    lo = fs["lo"]
    pick0 = -1
    alt0 = -1
    pick1 = -1
    alt1 = -1
    b0 = np.int64(0)
    b1 = np.int64(0)
    for i in range(lo, fs["hi"]):
        g = order[i]
        frame[i] = src.frame[g]
        ts[i] = src.ts[g]
        fl = np.int64(src.flags[g])
        if src.packed:  # (the arena's: hscc_trace.flows.records.FLAGS …)
            d = (fl >> DIR_SHIFT) & 1
            ecn[i] = (fl >> ECN_SHIFT) & 3
            has_ts = ((fl >> TS_SHIFT) & 1) != 0
            n_sack = (fl >> SACK_SHIFT) & 7
            fl = fl & FLAGS
        else:
            d = np.int64(src.dir[g])
            ecn[i] = np.int64(src.ecn[g])
            has_ts = bool(src.has_ts[g])
            n_sack = np.int64(src.sack_n[g])
        flags[i] = fl
        p = np.int64(src.plen[g])
        plen[i] = p
        win[i] = np.int64(src.win[g])
        # raw values for the steps after this one (one read of each source row; rows of a flow
        # are scattered over the table): direction in sn, raw seq/ack in seq/ack, raw ack again
        # in rtsv (ack is unwrapped in place), TSval/TSecr (-1 = no option), SACK count in sl
        sn[i] = d
        seq[i] = np.int64(src.seq[g])
        ack[i] = np.int64(src.ack[g])
        rtsv[i] = ack[i]
        if has_ts:
            tsv[i] = np.int64(src.tsval[g])
            tse[i] = np.int64(src.tsecr[g])
        else:
            tsv[i] = -1
        sl[i, 0] = n_sack
        if d == 0:
            b0 += p
        elif d == 1:
            b1 += p
        if (fl & F_SYN) != 0:
            k = i - lo
            if d == 0:
                if alt0 < 0:
                    alt0 = k
                if (fl & F_ACK) == 0 and pick0 < 0:
                    pick0 = k
            elif d == 1:
                if alt1 < 0:
                    alt1 = k
                if (fl & F_ACK) != 0 and pick1 < 0:
                    pick1 = k
    fs["syn_a"] = pick0
    fs["any_syn_a"] = alt0
    fs["synack_b"] = pick1
    fs["any_syn_b"] = alt1
    fs["bytes_a"] = b0
    fs["bytes_b"] = b1


@njit(cache=True, inline="always")
def syn_options(order, src, rows, fs):
    """Handshake options: the SYN from A / SYN-ACK from B carry each side's ISN, window scale,
    MSS and SACK-permitted (else any SYN of that side), taken as the data sender sees them."""
    sdir = fs["sdir"]
    sack_ok = True
    for side in range(2):
        if side == 0:
            pk = fs["syn_a"] if fs["syn_a"] >= 0 else fs["any_syn_a"]
        else:
            pk = fs["synack_b"] if fs["synack_b"] >= 0 else fs["any_syn_b"]
        ws = np.int64(-1)
        mss = np.int64(0)
        isn = np.int64(0)
        if pk >= 0:
            g = np.searchsorted(src.syn_rows, order[fs["lo"] + pk])  # (a SYN row)
            ws = np.int64(src.opt_ws[g])
            mss = np.int64(src.opt_mss[g])
            sack_ok = sack_ok and src.opt_sack_perm[g]
            isn = rows.seq[fs["lo"] + pk]
        else:
            sack_ok = False
        if side == sdir:
            fs["snd_isn"] = isn
            fs["snd_isn_known"] = pk >= 0
            fs["snd_wscale"] = ws
        else:
            fs["rcv_isn"] = isn
            fs["rcv_isn_known"] = pk >= 0
            fs["rcv_wscale"] = ws
            fs["rcv_mss"] = mss
    fs["sack_ok"] = sack_ok


@njit(cache=True, inline="always")
def handshake_times(rows, fs):
    """Handshake times: the SYN (the last from A before the first SYN-ACK), the SYN-ACK, the
    third packet (A's first ACK after it) and Wireshark's iRTT."""
    ts, flags, sn = rows.ts, rows.flags, rows.sn
    lo = fs["lo"]
    n = fs["hi"] - lo
    pick0 = fs["syn_a"]
    first_sa = fs["synack_b"]
    seen = pick0 >= 0 and first_sa >= 0
    fs["seen"] = seen
    fs["syn_ns"] = NONE
    fs["synack_ns"] = NONE
    fs["ack3_ns"] = NONE
    fs["irtt_ns"] = NONE
    if seen:
        syn_i = pick0
        for k in range(pick0, first_sa):  # last SYN from A before the first SYN/ACK
            fl = flags[lo + k]
            if (fl & F_SYN) != 0 and (fl & F_ACK) == 0 and sn[lo + k] == 0:
                syn_i = k
        fs["syn_ns"] = ts[lo + syn_i]
        fs["synack_ns"] = ts[lo + first_sa]
        for k in range(first_sa + 1, n):
            fl = flags[lo + k]
            if sn[lo + k] == 0 and (fl & F_ACK) != 0 and (fl & F_SYN) == 0:
                fs["ack3_ns"] = ts[lo + k]
                break
    if pick0 >= 0:
        # Wireshark iRTT: the most recent SYN before the first pure ACK, to that ACK
        last_syn = pick0
        for k in range(pick0 + 1, n):
            fl = flags[lo + k]
            if (fl & F_ACK) != 0 and (fl & F_SYN) == 0:
                fs["irtt_ns"] = ts[lo + k] - ts[lo + last_syn]
                break
            if (fl & F_SYN) != 0 and (fl & F_ACK) == 0 and sn[lo + k] == 0:
                last_syn = k


@njit(cache=True, inline="always")
def seq_unwrap(rows, fs):
    """Sequence unwrap: the sender's sequence numbers with the receiver's ACKs, jointly, from the
    sender's ISN (else the first byte seen − 1); the receiver's own sequence on its own."""
    snd, seq, ack, flags, sn = rows.snd, rows.seq, rows.ack, rows.flags, rows.sn
    lo = fs["lo"]
    hi = fs["hi"]
    sdir = fs["sdir"]
    first_snd = -1
    first_rack = -1
    first_rcv = -1
    for i in range(lo, hi):
        s_ = sn[i] == sdir
        snd[i] = s_
        if s_:
            if first_snd < 0:
                first_snd = i
        else:
            if first_rcv < 0:
                first_rcv = i
            if first_rack < 0 and (flags[i] & F_ACK) != 0:
                first_rack = i
    if fs["snd_isn_known"]:
        origin = fs["snd_isn"]
    elif first_snd >= 0:
        origin = seq[first_snd] - 1
    elif first_rack >= 0:
        origin = ack[first_rack] - 1
    else:
        origin = np.int64(0)
    r0 = np.int64(0)
    if first_rcv >= 0:
        r0 = fs["rcv_isn"] if fs["rcv_isn_known"] else seq[first_rcv] - 1
    cur = np.int64(0)
    have = False
    for i in range(lo, hi):
        if snd[i]:
            v = _unwrap_step(seq[i], origin, cur)
            seq[i] = v
            ack[i] = 0
            if (not have) or v > cur:
                cur = v
            have = True
        elif (flags[i] & F_ACK) != 0:
            v = _unwrap_step(ack[i], origin, cur)
            ack[i] = v
            if not have:
                cur = v
                have = True
        else:
            ack[i] = 0
    # the receiver's own sequence (Wireshark's duplicate-ACK rule), unwrapped on its own
    if first_rcv >= 0:
        cur = np.int64(0)
        have = False
        for i in range(lo, hi):
            if not snd[i]:
                v = _unwrap_step(seq[i], r0, cur)
                seq[i] = v
                if (not have) or v > cur:
                    cur = v
                have = True


@njit(cache=True, inline="always")
def ts_clocks(rows, fs):
    """Timestamp clocks: the first TSval of the sender's and of the receiver's, their origins."""
    snd, tsv = rows.snd, rows.tsv
    have_s = False
    have_r = False
    for i in range(fs["lo"], fs["hi"]):
        if tsv[i] >= 0:
            if snd[i]:
                if not have_s:
                    fs["ts_snd"] = tsv[i]
                    have_s = True
            elif not have_r:
                fs["ts_rcv"] = tsv[i]
                have_r = True
            if have_s and have_r:
                break
    fs["have_ts_snd"] = have_s
    fs["have_ts_rcv"] = have_r


@njit(cache=True, inline="always")
def sack_ts_unwrap(order, src, rows, fs):
    """SACK edges relative to the same packet's ACK; TSval/TSecr unwrapped per clock (from
    :func:`ts_clocks`); the largest segment the sender sent."""
    snd, ack, plen, flags = rows.snd, rows.ack, rows.plen, rows.flags
    tsv, tse, rtsv, sl, sr, sn = rows.tsv, rows.tse, rows.rtsv, rows.sl, rows.sr, rows.sn
    sref = fs["ts_snd"]
    rref = fs["ts_rcv"]
    have_s = fs["have_ts_snd"]
    have_r = fs["have_ts_rcv"]
    any_sn = False
    biggest = np.int64(0)
    g = 0
    for i in range(fs["lo"], fs["hi"]):
        fl = flags[i]
        ackf = (fl & F_ACK) != 0
        synf = (fl & F_SYN) != 0
        s_ = snd[i]
        nb = sl[i, 0]
        rr = rtsv[i]
        if nb > 0 and (not s_) and ackf:
            # (a row with SACK blocks; a flow's rows come in table order: from the previous one on)
            g = seek(src.sack_rows, order[i], False, g)
            a = ack[i]
            for k in range(nb if nb < 4 else 4):  # (sl/sr beyond sn are never read: left as they are)
                if k == 0:
                    l_ = np.int64(src.l0[g])
                    r_ = np.int64(src.r0[g])
                elif k == 1:
                    l_ = np.int64(src.l1[g])
                    r_ = np.int64(src.r1[g])
                elif k == 2:
                    l_ = np.int64(src.l2[g])
                    r_ = np.int64(src.r2[g])
                else:
                    l_ = np.int64(src.l3[g])
                    r_ = np.int64(src.r3[g])
                sl[i, k] = a + _wrap32(l_ - rr)
                sr[i, k] = a + _wrap32(r_ - rr)
            sn[i] = nb
            any_sn = True
        else:
            sn[i] = 0
        tv = tsv[i]
        te = tse[i]
        tsv[i] = NOTS
        tse[i] = NOTS
        rtsv[i] = NOTS
        if tv >= 0:
            if s_:
                tsv[i] = sref + _wrap32(tv - sref)
                if have_r and ackf and not synf:
                    rtsv[i] = rref + _wrap32(te - rref)
            else:
                rtsv[i] = rref + _wrap32(tv - rref)
                if have_s and ackf and not synf:
                    tse[i] = sref + _wrap32(te - sref)
        if s_ and plen[i] > biggest:
            biggest = plen[i]
    fs["any_sack"] = any_sn
    fs["biggest"] = biggest


@njit(cache=True, inline="always")
def flow_info(facts, f, fs, info):
    """Window scale, MSS, SACK and timestamps of flow ``f`` (the handshake's, else the flows
    table's ``facts``, else what the rows show) into its row of ``info`` with its handshake."""
    if fs["seen"]:
        both = fs["snd_wscale"] >= 0 and fs["rcv_wscale"] >= 0
        shift = fs["rcv_wscale"] if both else np.int64(0)
        known = True
    else:
        shift = np.int64(0)
        known = False
        fw = np.int64(facts.wsb[f]) if fs["sdir"] == 0 else np.int64(facts.wsa[f])
        if fw >= 0:
            shift = fw
            known = True
    if shift > 14:
        shift = np.int64(14)  # RFC 7323 §2.3: values above 14 are treated as 14
    mss = np.int64(facts.mss[f]) if facts.mss[f] > 0 else np.int64(0)
    if mss <= 0:
        announced = fs["rcv_mss"]
        biggest = fs["biggest"]
        if announced != 0:
            mss = (announced if announced < biggest else biggest) if biggest else announced
        else:
            mss = biggest
    if mss <= 0:
        mss = np.int64(536)  # RFC 9293 §3.7.1 default send MSS
    info.sdir[f] = fs["sdir"]
    info.mss[f] = mss
    info.shift[f] = shift
    info.known[f] = known
    info.sack[f] = fs["sack_ok"] or fs["any_sack"]
    info.tsflow[f] = fs["have_ts_snd"] or fs["have_ts_rcv"]
    info.seen[f] = fs["seen"]
    info.syn[f] = fs["syn_ns"]
    info.synack[f] = fs["synack_ns"]
    info.ack3[f] = fs["ack3_ns"]
    info.irtt[f] = fs["irtt_ns"]


@njit(work=lambda a: len(a[0]), cost=(3.32, 1.31e-05), cache=True, nogil=True)
def prep_flows(order, bounds, facts, src, rows, info):
    """Arrays of several flows for :func:`hscc_trace.events.core.analyze` (rules in the module docstring).

    Reads the source columns ``src`` (:class:`.records.Source`) and the flows table's facts
    ``facts`` (:class:`.records.FlowFacts`: sender direction -1 unknown, MSS 0 unknown, window
    scales -1 unknown); writes the rows ``rows`` (:class:`.records.Rows`) and the flows ``info``
    (:class:`.records.FlowInfo`). Flow ``f`` is rows ``order[bounds[f]:bounds[f+1]]`` of the
    source columns (in frame order); its arrays are written to rows ``bounds[f]:bounds[f+1]`` of
    the outputs. Handshake times are :data:`NONE` when not captured.

    The steps, per flow, the flow at hand in one record (:data:`PREP`): :func:`gather_flow`; the
    sender's direction (the flows table's, else the direction with more payload);
    :func:`syn_options`; :func:`handshake_times`; :func:`seq_unwrap`; :func:`ts_clocks` and
    :func:`sack_ts_unwrap`; :func:`flow_info`.
    """
    for f in range(bounds.shape[0] - 1):
        fa = prep_array()
        fs = fa[0]
        fs["lo"] = bounds[f]
        fs["hi"] = bounds[f + 1]
        gather_flow(order, src, rows, fs)
        sdir = facts.sdir[f]
        fs["sdir"] = sdir if sdir >= 0 else (1 if fs["bytes_b"] > fs["bytes_a"] else 0)
        syn_options(order, src, rows, fs)
        handshake_times(rows, fs)
        seq_unwrap(rows, fs)
        ts_clocks(rows, fs)
        sack_ts_unwrap(order, src, rows, fs)
        flow_info(facts, f, fs, info)


@njit(work=lambda a: len(a[0]), cost=(0.25, 6.51e-07), cache=True)
def group_rows(key, within, nbins, order):
    """Rows grouped by ``key`` (0 <= key < nbins), each group in the order of ``within`` (a
    permutation of the rows; empty = table order), written to ``order`` (one slot per row).
    Returns ``(bounds, first)``: group ``g`` is ``order[bounds[g]:bounds[g+1]]``; ``first[g]`` is
    the table row where it first appears (-1 if empty). A counting sort: two passes, stable."""
    n = key.shape[0]
    counts = np.zeros(nbins + 1, np.int64)
    first = np.full(nbins, np.int64(-1))
    for i in range(n):
        k = key[i]
        counts[k + 1] += 1
        if first[k] < 0:
            first[k] = i
    for g in range(nbins):
        counts[g + 1] += counts[g]
    bounds = counts.copy()
    use_within = within.shape[0] == n
    for j in range(n):
        i = within[j] if use_within else j
        k = key[i]
        order[counts[k]] = i
        counts[k] += 1
    return bounds, first
