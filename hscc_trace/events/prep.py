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

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from hscc_trace.errors import InputError

from numba import njit

from .core import NOTS

F_FIN, F_SYN, F_RST, F_ACK = 0x01, 0x02, 0x04, 0x10


@dataclass
class Handshake:
    """What the SYN exchange tells (times in ns; None when not captured)."""

    seen: bool = False  # SYN and SYN/ACK both captured
    syn_ns: int | None = None  # last SYN from A before the SYN/ACK
    synack_ns: int | None = None  # first SYN/ACK from B
    ack_ns: int | None = None  # first ACK from A after the SYN/ACK (third packet)
    irtt_ns: int | None = None  # Wireshark iRTT: SYN to first pure ACK
    wscale: dict[int, int | None] = field(default_factory=lambda: {0: None, 1: None})
    mss: dict[int, int | None] = field(default_factory=lambda: {0: None, 1: None})
    sack_perm: dict[int, bool] = field(default_factory=lambda: {0: False, 1: False})
    syn_seq: dict[int, int | None] = field(default_factory=lambda: {0: None, 1: None})


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


def _i32wrap(x: np.ndarray) -> np.ndarray:
    """Signed 32-bit interpretation of int64 differences (RFC 1982 serial arithmetic)."""
    return ((x + 2**31) & 0xFFFFFFFF) - 2**31


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


def _col(df: pl.DataFrame, name: str, dtype=np.int64, fill: int = 0) -> np.ndarray:
    s = df.get_column(name)
    if s.null_count():
        s = s.fill_null(fill)
    return s.to_numpy().astype(dtype, copy=False)


def handshake_info(df: pl.DataFrame) -> Handshake:
    """Handshake timing and options of one flow (``df`` sorted by frame)."""
    h = Handshake()
    flags = _col(df, "flags")
    d = _col(df, "dir")
    ts = _col(df, "ts_ns")
    syn = (flags & F_SYN) != 0
    ackf = (flags & F_ACK) != 0
    idx_syn = np.flatnonzero(syn & ~ackf)
    idx_sa = np.flatnonzero(syn & ackf)
    for direction in (0, 1):
        pick = idx_syn if direction == 0 else idx_sa
        pick = pick[d[pick] == direction] if pick.size else pick
        if pick.size == 0:
            # a SYN-only packet from B or SYN/ACK from A (simultaneous open) still carries options
            alt = np.flatnonzero(syn & (d == direction))
            pick = alt
        if pick.size:
            row = df.row(int(pick[0]), named=True)
            h.wscale[direction] = row.get("opt_wscale")
            h.mss[direction] = row.get("opt_mss")
            h.sack_perm[direction] = bool(row.get("opt_sack_perm") or False)
            h.syn_seq[direction] = int(row["seq"])
    a_syn = idx_syn[d[idx_syn] == 0] if idx_syn.size else idx_syn
    b_sa = idx_sa[d[idx_sa] == 1] if idx_sa.size else idx_sa
    if a_syn.size and b_sa.size:
        h.seen = True
        first_sa = int(b_sa[0])
        before = a_syn[a_syn < first_sa]
        syn_i = int(before[-1]) if before.size else int(a_syn[0])
        h.syn_ns = int(ts[syn_i])
        h.synack_ns = int(ts[first_sa])
        third = np.flatnonzero((d == 0) & ackf & ~syn & (np.arange(len(d)) > first_sa))
        if third.size:
            h.ack_ns = int(ts[int(third[0])])
    if a_syn.size:
        pure = np.flatnonzero(ackf & ~syn & (np.arange(len(d)) > int(a_syn[0])))
        if pure.size:
            # Wireshark: ts_mru_syn is the most recent SYN before the first pure ACK
            syns_before = a_syn[a_syn < pure[0]]
            h.irtt_ns = int(ts[int(pure[0])] - ts[int(syns_before[-1])])
    return h


def choose_sender(df: pl.DataFrame, flow: dict[str, Any] | None) -> int:
    """The data sender's direction: the flow row's ``sender_dir`` or the direction with more payload."""
    if flow is not None and flow.get("sender_dir") is not None:
        return int(flow["sender_dir"])
    d = _col(df, "dir")
    p = _col(df, "payload_len")
    b0 = int(p[d == 0].sum())
    b1 = int(p[d == 1].sum())
    return 1 if b1 > b0 else 0


def prepare(packets: pl.DataFrame, flow: dict[str, Any] | None = None) -> FlowArrays:
    """Arrays for one flow. ``packets`` are that flow's rows of schema.PACKETS (any order)."""
    need = ("frame", "ts_ns", "dir", "seq", "ack", "flags", "win", "payload_len")
    missing = [c for c in need if c not in packets.columns]
    if missing:
        raise InputError(f"packets table lacks columns: {', '.join(missing)}")
    if packets.height == 0:
        raise InputError("flow has no packets")
    fr = packets.get_column("frame")
    df = packets if fr.is_sorted() else packets.sort("frame")
    h = handshake_info(df)
    sdir = choose_sender(df, flow)
    rdir = 1 - sdir
    n = df.height
    d = _col(df, "dir")
    snd = d == sdir
    flags = _col(df, "flags")
    seq_raw = _col(df, "seq")
    ack_raw = _col(df, "ack")
    ts = _col(df, "ts_ns")
    plen = _col(df, "payload_len")
    win = _col(df, "win")
    ackf = (flags & F_ACK) != 0

    # ---- joint unwrap of the sender's seq space (sender seq + receiver ack) -------------------
    use = snd | (~snd & ackf)
    vals = np.where(snd, seq_raw, ack_raw)
    if h.syn_seq[sdir] is not None:
        origin = h.syn_seq[sdir]
    elif snd.any():
        origin = int(seq_raw[np.flatnonzero(snd)[0]]) - 1
    else:
        first_ack = np.flatnonzero(~snd & ackf)
        origin = int(ack_raw[first_ack[0]]) - 1 if first_ack.size else 0
    un = _unwrap_joint(vals, use, snd, np.int64(origin))
    seq = np.where(snd, un, 0)
    ack = np.where(~snd & ackf, un, 0)
    # receiver's own sequence (for Wireshark's duplicate-ACK rule), unwrapped on its own
    rpos = np.flatnonzero(~snd)
    if rpos.size:
        r0 = h.syn_seq[rdir] if h.syn_seq[rdir] is not None else int(seq_raw[rpos[0]]) - 1
        rsq = _unwrap_joint(seq_raw[rpos], np.ones(rpos.size, np.bool_), np.ones(rpos.size, np.bool_), np.int64(r0))
        seq[rpos] = rsq

    # ---- SACK blocks relative to the same packet's ACK -----------------------------------------
    sn = _col(df, "sack_n") if "sack_n" in df.columns else np.zeros(n, np.int64)
    sl = np.zeros((n, 4), np.int64)
    sr = np.zeros((n, 4), np.int64)
    rows = np.flatnonzero((sn > 0) & ~snd & ackf) if ("sack_l0" in df.columns and sn.any()) else np.empty(0, np.int64)
    if rows.size:
        idx = pl.Series(rows)
        a_rows = ack[rows]
        r_raw = ack_raw[rows]
        for k in range(4):
            lk = df.get_column(f"sack_l{k}").gather(idx).fill_null(0).to_numpy().astype(np.int64)
            rk = df.get_column(f"sack_r{k}").gather(idx).fill_null(0).to_numpy().astype(np.int64)
            sl[rows, k] = a_rows + _i32wrap(lk - r_raw)
            sr[rows, k] = a_rows + _i32wrap(rk - r_raw)
        blocks = np.arange(4)[None, :] < sn[rows][:, None]
        sl[rows] = np.where(blocks, sl[rows], 0)
        sr[rows] = np.where(blocks, sr[rows], 0)
        keep = np.zeros(n, np.bool_)
        keep[rows] = True
        sn = np.where(keep, sn, 0)
    else:
        sn = np.zeros(n, np.int64)

    # ---- timestamps -----------------------------------------------------------------------------
    tsv = np.full(n, NOTS, np.int64)
    tse = np.full(n, NOTS, np.int64)
    rtsv = np.full(n, NOTS, np.int64)
    ts_flow = False
    if "opt_tsval" in df.columns:
        tv = df.get_column("opt_tsval")
        te = df.get_column("opt_tsecr")
        has = ~tv.is_null().to_numpy()
        tvr = tv.fill_null(0).to_numpy().astype(np.int64)
        ter = te.fill_null(0).to_numpy().astype(np.int64)
        ts_flow = bool(has.any())
        s_has = has & snd
        if s_has.any():
            ref = int(tvr[np.flatnonzero(s_has)[0]])
            tsv[s_has] = ref + _i32wrap(tvr[s_has] - ref)
            r_e = has & ~snd & ackf & ~((flags & F_SYN) != 0)
            tse[r_e] = ref + _i32wrap(ter[r_e] - ref)
        r_has = has & ~snd
        if r_has.any():
            ref = int(tvr[np.flatnonzero(r_has)[0]])
            rtsv[r_has] = ref + _i32wrap(tvr[r_has] - ref)
            s_e = has & snd & ackf & ~((flags & F_SYN) != 0)
            rtsv[s_e] = ref + _i32wrap(ter[s_e] - ref)

    # ---- window scale, MSS, SACK ----------------------------------------------------------------
    if h.seen:
        ws_s, ws_r = h.wscale[sdir], h.wscale[rdir]
        shift = int(ws_r) if (ws_s is not None and ws_r is not None) else 0
        shift = min(shift, 14)  # RFC 7323 §2.3: values above 14 are treated as 14
        scale_known = True
    else:
        shift = 0
        scale_known = False
        if flow is not None:
            fw = flow.get("wscale_b" if sdir == 0 else "wscale_a")
            if fw is not None and int(fw) >= 0:
                shift, scale_known = min(int(fw), 14), True
    seg_lens = plen[snd & (plen > 0)]
    mss = 0
    if flow is not None and flow.get("mss"):
        mss = int(flow["mss"])
    if mss <= 0:
        announced = h.mss[rdir]
        biggest = int(seg_lens.max()) if seg_lens.size else 0
        if announced:
            mss = min(int(announced), biggest) if biggest else int(announced)
        else:
            mss = biggest
    if mss <= 0:
        mss = 536  # RFC 9293 §3.7.1 default send MSS
    sack_flow = bool(h.sack_perm[0] and h.sack_perm[1]) or bool(sn.any())
    ecn = _col(df, "ip_ecn") if "ip_ecn" in df.columns else np.zeros(n, np.int64)
    return FlowArrays(
        frame=_col(df, "frame"), snd=snd, ts=ts, seq=seq, ack=ack, plen=plen, flags=flags, win=win,
        tsv=tsv, tse=tse, rtsv=rtsv, sl=sl, sr=sr, sn=sn.astype(np.int64), ecn=ecn,
        sender_dir=sdir, handshake=h, mss=mss, rwnd_shift=shift, rwnd_scale_known=scale_known,
        sack_flow=sack_flow, ts_flow=ts_flow,
    )
