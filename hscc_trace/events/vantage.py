"""Where was the capture taken, relative to the data sender, and how to correct RTTs.

Handshake rule (when SYN, SYN/ACK and the third ACK were captured). With ``d1`` = SYN → SYN/ACK
and ``d2`` = SYN/ACK → ACK at the capture point: near the initiator A, ``d1`` is a full RTT and
``d2`` is A's processing time; near the responder B, the reverse. The capture is *near* a side
when that side's gap is below :data:`NEAR_FRACTION` of ``d1 + d2``; otherwise it is mid-path.

Data rule (no handshake): ``S`` = median time from a data segment to the ACK that first covers
exactly its end (the capture point → receiver → capture point part), ``X`` = median time from a
receiver packet to the sender's reaction (the sender's TSecr echoing the receiver's TSval, RFC
7323; without timestamps: ACK → next new data segment), the capture point → sender → capture
point part. At the sender ``X`` is tiny, at the receiver ``S`` is tiny.

Correction: an RTT sample measured at the capture point covers only the receiver-side part.
The missing sender-side part is the handshake gap on the sender's side (``d2`` when A sends the
data, ``d1`` when B does) or ``X``; it is added to every sample as a constant
(``FlowEvents.rtt_offset_s``; 0 at the sender). Queueing that changes during the flow on the
sender-side part is not captured by a constant — documented in docs/events.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .prep import F_ACK, F_FIN, F_SYN, FlowArrays, Handshake

NEAR_FRACTION = 0.1  # a side whose gap is < 10 % of the total is where the capture was taken
MIN_SAMPLES = 5  # data rule needs at least this many matches of each kind


@dataclass
class Vantage:
    vantage: str  # schema.VANTAGES
    offset_ns: int  # added to every RTT sample measured at the capture point
    method: str  # "handshake", "data", or "none"
    near_gap_ns: int | None = None  # receiver-side part (S or the receiver's handshake gap)
    far_gap_ns: int | None = None  # sender-side part (X or the sender's handshake gap)


def _classify(sender_part: float, receiver_part: float) -> str:
    tot = sender_part + receiver_part
    if tot <= 0:
        return "unknown"
    if sender_part < NEAR_FRACTION * tot:
        return "sender"
    if receiver_part < NEAR_FRACTION * tot:
        return "receiver"
    return "mid-path"


def _data_parts(fa: FlowArrays) -> tuple[float | None, float | None]:
    snd = fa.snd
    ackrows = (~snd) & ((fa.flags & F_ACK) != 0) & ((fa.flags & F_SYN) == 0)
    seg = snd & (fa.plen > 0)
    # S: first segment ending at e -> first ACK == e
    S = None
    if seg.any() and ackrows.any():
        ends = fa.seq[seg] + fa.plen[seg]
        tseg = fa.ts[seg]
        ue, first = np.unique(ends, return_index=True)
        acks = fa.ack[ackrows]
        tack = fa.ts[ackrows]
        ua, firsta = np.unique(acks, return_index=True)
        common, ie, ia = np.intersect1d(ue, ua, return_indices=True)
        if common.size:
            d = tack[firsta[ia]] - tseg[first[ie]]
            d = d[d >= 0]
            if d.size >= MIN_SAMPLES:
                S = float(np.median(d))
    X = None
    rt = fa.rtsv
    rv = (~snd) & (rt != np.iinfo(np.int64).min) & (rt > -(2**61))
    sv = snd & (rt > -(2**61)) & ((fa.flags & F_ACK) != 0)
    if rv.any() and sv.any():
        uv, fr = np.unique(rt[rv], return_index=True)
        us, fs = np.unique(rt[sv], return_index=True)
        common, ir, is_ = np.intersect1d(uv, us, return_indices=True)
        if common.size:
            d = fa.ts[sv][fs[is_]] - fa.ts[rv][fr[ir]]
            d = d[d >= 0]
            if d.size >= MIN_SAMPLES:
                X = float(np.median(d))
    if X is None and seg.any() and ackrows.any():
        # ACK that advances -> next segment carrying new data
        acks = fa.ack[ackrows]
        adv = np.concatenate(([True], acks[1:] > np.maximum.accumulate(acks)[:-1]))
        tack = fa.ts[ackrows][adv]
        iack = np.flatnonzero(ackrows)[adv]
        ends = fa.seq[seg] + fa.plen[seg]
        newdata = ends > np.concatenate(([np.iinfo(np.int64).min], np.maximum.accumulate(ends)[:-1]))
        iseg = np.flatnonzero(seg)[newdata]
        j = np.searchsorted(iseg, iack)
        ok = j < iseg.size
        if ok.sum() >= MIN_SAMPLES:
            d = fa.ts[iseg[j[ok]]] - tack[ok]
            d = d[d >= 0]
            if d.size >= MIN_SAMPLES:
                X = float(np.median(d))
    return S, X


def detect(fa: FlowArrays) -> Vantage:
    """Vantage point and RTT offset for one flow (rules in the module docstring)."""
    v = from_handshake(fa.handshake, fa.sender_dir)
    if v is not None:
        return v
    S, X = _data_parts(fa)
    if S is None or X is None:
        return Vantage("unknown", 0, "none", None if S is None else int(S), None if X is None else int(X))
    v = _classify(X, S)
    off = 0 if v == "sender" else int(X)
    return Vantage(v, off, "data", int(S), int(X))


def from_handshake(h: Handshake, sender_dir: int) -> Vantage | None:
    """The handshake rule alone (None when it does not apply: then the data rule decides)."""
    if h.seen and h.syn_ns is not None and h.synack_ns is not None and h.ack_ns is not None:
        d1 = h.synack_ns - h.syn_ns  # B's side: capture -> B -> capture
        d2 = h.ack_ns - h.synack_ns  # A's side: capture -> A -> capture
        if d1 >= 0 and d2 >= 0 and d1 + d2 > 0:
            sender_part = d2 if sender_dir == 0 else d1
            receiver_part = d1 if sender_dir == 0 else d2
            v = _classify(sender_part, receiver_part)
            off = 0 if v == "sender" else int(sender_part)
            return Vantage(v, off, "handshake", int(receiver_part), int(sender_part))
    return None


def dynamic_offsets(fa: FlowArrays, base_ns: int) -> np.ndarray:
    """Per-packet sender-side RTT part (ns) for receiver-side / mid-path captures.

    With TCP timestamps, each receiver packet with TSval ``v`` is followed at the capture point
    by the first sender packet echoing ``v`` in TSecr (RFC 7323 §4.3, TS.Recent): that delay is
    the capture point → sender → capture point part *at that moment*, queueing included. Packets
    without a match take the last known value; before the first match, ``base_ns``. (A value
    whose first echo comes before its first sighting is no match.)
    """
    out = np.empty(fa.ts.shape[0], np.int64)
    dynamic_offsets_into(fa.ts, fa.snd, fa.flags, fa.rtsv, np.int64(base_ns), out)
    return out


@njit(cache=True)
def _first_times(vals, times):
    """Distinct values of ``vals`` (sorted), the time of each one's first occurrence, and for
    every element the index of its value among the distinct ones."""
    n = vals.shape[0]
    ordered = True
    for j in range(1, n):
        if vals[j] < vals[j - 1]:
            ordered = False
            break
    o = np.arange(n) if ordered else np.argsort(vals, kind="mergesort")  # (TS values usually are)
    u = np.empty(n, np.int64)
    t = np.empty(n, np.int64)
    grp = np.empty(n, np.int64)
    m = 0
    for j in range(n):
        v = vals[o[j]]
        if m == 0 or u[m - 1] != v:
            u[m] = v
            t[m] = times[o[j]]
            m += 1
        grp[o[j]] = m - 1
    return u[:m], t[:m], grp


@njit(cache=True, nogil=True)
def dynamic_offsets_into(ts, snd, flags, rt, base_ns, out):
    """:func:`dynamic_offsets` on arrays, into ``out`` (ns per packet)."""
    n = ts.shape[0]
    lim = -(2**61)
    nr = 0
    ns = 0
    for i in range(n):
        if rt[i] > lim:
            if not snd[i]:
                nr += 1
            elif (flags[i] & F_ACK) != 0:
                ns += 1
    out[:] = base_ns
    if nr == 0 or ns == 0:
        return
    rv = np.empty(nr, np.int64)
    rtm = np.empty(nr, np.int64)
    sv = np.empty(ns, np.int64)
    stm = np.empty(ns, np.int64)
    a = 0
    b = 0
    for i in range(n):
        if rt[i] > lim:
            if not snd[i]:
                rv[a] = rt[i]
                rtm[a] = ts[i]
                a += 1
            elif (flags[i] & F_ACK) != 0:
                sv[b] = rt[i]
                stm[b] = ts[i]
                b += 1
    ur, tr, grp = _first_times(rv, rtm)
    us, tsd, _g = _first_times(sv, stm)
    # delay of each value seen on both sides (first echo − first sighting), kept when >= 0
    dly = np.full(ur.shape[0], np.int64(-1))
    j = 0
    found = False
    for k in range(ur.shape[0]):
        while j < us.shape[0] and us[j] < ur[k]:
            j += 1
        if j < us.shape[0] and us[j] == ur[k]:
            d = tsd[j] - tr[k]
            if d >= 0:
                dly[k] = d
                found = True
    if not found:
        return
    cur = base_ns
    a = 0
    for i in range(n):
        if rt[i] > lim and not snd[i]:
            d = dly[grp[a]]
            if d >= 0:
                cur = d
            a += 1
        out[i] = cur


@njit(cache=True, nogil=True)
def snd_max_ahead(ts, snd, plen, flags, seq, offset_ns, out):
    """Receiver-side / mid-path captures: the sender's snd_max when it gets each packet's ACK.

    An ACK that leaves the capture point at ``t`` reaches the sender about ``offset/2`` later;
    what the sender has sent by then reaches the capture point by about ``t + offset`` (offset =
    the sender-side part of the RTT at that moment, :func:`dynamic_offsets`). So the sender's
    snd_max at that ACK is estimated as the highest sequence number seen at the capture point up
    to ``t + offset`` (segment times taken as their running maximum; 0 before the first
    segment). Used for the round boundaries and to raise ``outstanding`` and ``pipe``; the
    ``snd_max`` column keeps what was observed.
    """
    n = ts.shape[0]
    m = 0
    for i in range(n):
        if snd[i] and (plen[i] > 0 or (flags[i] & (F_SYN | F_FIN)) != 0):
            m += 1
    out[:] = 0
    if m == 0:
        return
    t_seg = np.empty(m, np.int64)
    hi = np.empty(m, np.int64)
    k = 0
    for i in range(n):
        if snd[i] and (plen[i] > 0 or (flags[i] & (F_SYN | F_FIN)) != 0):
            e = seq[i] + plen[i] + (1 if (flags[i] & F_SYN) != 0 else 0) + (1 if (flags[i] & F_FIN) != 0 else 0)
            t = ts[i]
            if k > 0:
                if t_seg[k - 1] > t:
                    t = t_seg[k - 1]
                if hi[k - 1] > e:
                    e = hi[k - 1]
            t_seg[k] = t
            hi[k] = e
            k += 1
    # last segment at or before ts + offset: gallop from the previous answer (times nearly sorted)
    j = -1
    for i in range(n):
        x = ts[i] + offset_ns[i]
        if j >= 0 and t_seg[j] > x:
            step = 1
            while j >= 0 and t_seg[j] > x:
                j -= step
                step *= 2
            lo = j + 1 if j >= 0 else 0  # t_seg[lo - 1] <= x (or lo = 0)
            j = lo + np.searchsorted(t_seg[lo : j + step], x, side="right") - 1
        else:
            step = 1
            while j + step < m and t_seg[j + step] <= x:
                j += step
                step *= 2
            hi_ = j + step if j + step < m else m  # t_seg[hi_] > x (or hi_ = m)
            j = j + 1 + np.searchsorted(t_seg[j + 1 : hi_], x, side="right") - 1
        out[i] = hi[j] if j >= 0 else 0
