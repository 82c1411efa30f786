"""Where was the capture taken, relative to the data sender, and how to correct RTTs.

Handshake rule (when SYN, SYN/ACK and the third ACK were captured). With ``d1`` = SYN → SYN/ACK
and ``d2`` = SYN/ACK → ACK at the capture point: near the initiator A, ``d1`` is a full RTT and
``d2`` is A's processing time; near the responder B, the reverse. The capture is *near* a side
when that side's gap is below :data:`NEAR_FRACTION` of ``d1 + d2``, or below the host-turnaround
floor (:data:`hscc_trace.flows.near.TURNAROUND_FLOOR_NS`, 200 µs) while the other gap is more than
twice it — at a µs round trip the turnaround is no small fraction; otherwise it is mid-path.
Where both gaps are under the floor (at a receiver over veth they are alike), or without the
handshake, the end the flow table's IP TTLs name (:func:`hscc_trace.flows.near.ttl_near`), when
they name one, replaces the timing's answer (:func:`at_end`, in :func:`.tables.build_flow_events`).

Data rule (no handshake): ``S`` = median time from a data segment to the ACK that first covers
exactly its end (the capture point → receiver → capture point part), ``X`` = median time from a
receiver packet to the sender's reaction (the sender's TSecr echoing the receiver's TSval, RFC
7323; without timestamps: ACK → next new data segment), the capture point → sender → capture
point part. At the sender ``X`` is tiny, at the receiver ``S`` is tiny.

Correction: an RTT sample measured at the capture point covers only the receiver-side part.
The missing sender-side part is the handshake gap on the sender's side (``d2`` when A sends the
data, ``d1`` when B does) or ``X``: the flow's constant (``FlowEvents.rtt_offset_s``; 0 at the
sender). Away from the sender, :func:`sender_view` places every ACK among the sender's segments
(which were sent before the sender got it, which answer it) and so gives, per sample, the
sender-side part of the segment it times (with timestamps: the echo delay of that moment,
queueing included), the sender's snd_max at each ACK and the ACK that released each segment —
rules in its docstring and in docs/events.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hscc_trace.flows.near import TURNAROUND_FLOOR_NS, near_by_floor
from hscc_trace.perf.jit import njit

from .core import seek
from .prep import F_ACK, F_FIN, F_SYN, FlowArrays, Handshake

#: largest int64 (the nanosecond clocks' range)
I64_MAX = 2**63 - 1

NEAR_FRACTION = 0.1  # a side whose gap is < 10 % of the total is where the capture was taken
MIN_SAMPLES = 5  # data rule needs at least this many matches of each kind


@dataclass
class Vantage:
    vantage: str  # schema.VANTAGES
    offset_ns: int  # the constant sender-side RTT part (FlowEvents.rtt_offset_s; per sample with timestamps)
    method: str  # "handshake", "data", or "none"
    near_gap_ns: int | None = None  # receiver-side part (S or the receiver's handshake gap)
    far_gap_ns: int | None = None  # sender-side part (X or the sender's handshake gap)
    #: both handshake gaps are under the host-turnaround floor: either may be a host's own
    #: turnaround, and the TTLs may name the end (:func:`at_end`)
    both_turnarounds: bool = False


def _classify(sender_part: float, receiver_part: float, floor: bool = False) -> str:
    """The side whose part is under :data:`NEAR_FRACTION` of the total (with ``floor``, the
    handshake rule: or under the host-turnaround floor, :func:`hscc_trace.flows.near.near_by_floor`)."""
    tot = sender_part + receiver_part
    if tot <= 0:
        return "unknown"
    if sender_part < NEAR_FRACTION * tot or (floor and near_by_floor(sender_part, receiver_part)):
        return "sender"
    if receiver_part < NEAR_FRACTION * tot or (floor and near_by_floor(receiver_part, sender_part)):
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
            v = _classify(sender_part, receiver_part, floor=True)
            both = max(d1, d2) < TURNAROUND_FLOOR_NS
            if both and v == "mid-path":  # gaps alike, either may be a host's own turnaround
                v = "unknown"  # (the TTLs may still name the end: at_end)
            off = int(sender_part) if v in ("receiver", "mid-path") else 0
            return Vantage(v, off, "handshake", int(receiver_part), int(sender_part), both)
    return None


def at_end(v: Vantage, side: str) -> Vantage:
    """``v`` moved to ``side`` (sender or receiver), where the flow table's TTLs name that end
    (:func:`hscc_trace.flows.near.ttl_near`) and the timing cannot: both handshake gaps under the
    floor, or no handshake. The correction stays the sender-side part ``v`` measured (the
    handshake's sender-side gap, or ``X``; nothing at the sender)."""
    if v.vantage == side:
        return v
    off = 0 if side == "sender" else int(v.far_gap_ns or 0)
    return Vantage(side, off, v.method, v.near_gap_ns, v.far_gap_ns, v.both_turnarounds)


def handshake_rtt(v: Vantage) -> float | None:
    """The handshake's RTT as the data sender measured it (s), from a vantage the handshake
    rule found (None otherwise): the receiver-side gap plus the sender-side part of the RTT as
    the flow's samples are corrected (``offset_ns``: nothing at the sender, where the
    sender-side gap is the sender's own turnaround, not part of its sample). At a sender that
    opened the connection this is SYN → SYN/ACK, the sample Linux takes in
    ``tcp_rcv_synsent_state_process`` before ``tcp_init_transfer`` starts congestion control."""
    if v.method != "handshake" or v.near_gap_ns is None:
        return None
    rtt = v.near_gap_ns + v.offset_ns
    return rtt / 1e9 if rtt > 0 else None


@njit(work=lambda a: len(a[0]), cost=(2.39, 4.33e-06), cache=True, nogil=True)
def sender_view(ts, snd, plen, flags, seq, rtsv, base_ns, ahead, rel, off):
    """Receiver-side / mid-path captures: what the sender knew when each ACK reached it.

    At the capture point an ACK leaves (or passes) at ``t`` and reaches the sender later; what
    the sender transmits *in response* reaches the capture point after everything it had sent
    before (one FIFO path). So the ACK splits the sender's data segments, in capture order, into
    those sent before the sender processed it and its response: the ACK's **boundary** (an
    index into the flow's data segments). Per ACK row this fills

    * ``ahead`` — the sender's snd_max when it processed the ACK: the highest sequence number
      of the segments before the boundary, or, when the first segment carrying new data at or
      after the boundary starts higher (bytes the capture never saw: lost before the capture
      point) and answers this ACK (echoes its TSval, when there are timestamps), that segment's
      first sequence number: nothing new was sent between the ACK and it, so it starts at the
      sender's snd_nxt. (0 before any segment.)

    and per data-segment row

    * ``ahead`` — the sender's snd_max when it sent the segment: the highest end before it, or
      the first sequence number of the next segment carrying new data (at or after it) when
      that is higher (the hole was sent before it, or lost just after it);

    * ``rel`` — the row of the ACK that released it: the last ACK (capture order) whose boundary
      lies at or before it (−1 before the first ACK);

    and per row ``off`` — the sender-side part of the RTT (capture point → sender → capture point):
    with timestamps, at a segment its arrival time minus the time of the ACK that released it (the
    timestamp-echo delay, RFC 7323 §4.3, queueing of that moment included; a sender that waited
    before sending — pacing, an application that wrote late — adds its wait), at an ACK that of
    the newest data segment before it (the one an RTT sample of this ACK usually times);
    without timestamps, and before the first ACK, ``base_ns`` (the segment's release time is
    then known only to within the time it waited in the path's queue).

    Boundaries. With TCP timestamps the sender echoes in TSecr the newest TSval it has received
    (TS.Recent, RFC 7323 §4.3): the boundary of an ACK with TSval ``v`` is the first segment
    echoing ``v`` or later. Several ACKs share one TSval when they leave less than one tick of
    the receiver's clock apart (1 ms in Linux); the first of them is placed exactly, a later one
    by time: the first segment (among those echoing ``v``) arriving at least the sender-side
    delay after the ACK, that delay interpolated between the ACKs placed exactly (the first ACK
    of each TSval whose response echoes it). Without timestamps the boundary is by time alone:
    the first segment arriving ``base_ns`` or more after the ACK. Boundaries never move back.
    """
    n = ts.shape[0]
    lim = -(2**61)
    # ---- the sender's data segments, in capture order ------------------------------------------
    m = 0
    for i in range(n):
        if snd[i] and (plen[i] > 0 or (flags[i] & (F_SYN | F_FIN)) != 0):
            m += 1
    s_row = np.empty(m, np.int64)
    s_t = np.empty(m, np.int64)  # arrival time (running maximum: a clock step back keeps order)
    s_hi = np.empty(m, np.int64)  # highest end up to and including this segment
    s_seq = np.empty(m, np.int64)
    s_new = np.empty(m, np.bool_)  # carries data beyond every earlier segment
    s_echo = np.empty(m, np.int64)  # running maximum of TSecr (lim when none yet)
    k = 0
    have_echo = False
    for i in range(n):
        if snd[i] and (plen[i] > 0 or (flags[i] & (F_SYN | F_FIN)) != 0):
            e = seq[i] + plen[i] + (1 if (flags[i] & F_SYN) != 0 else 0) + (1 if (flags[i] & F_FIN) != 0 else 0)
            t = ts[i]
            hi = e
            ec = np.int64(lim)
            if k > 0:
                if s_t[k - 1] > t:
                    t = s_t[k - 1]
                if s_hi[k - 1] > hi:
                    hi = s_hi[k - 1]
                ec = s_echo[k - 1]
            if rtsv[i] > lim:
                have_echo = True
                if rtsv[i] > ec:
                    ec = rtsv[i]
            s_row[k] = i
            s_t[k] = t
            s_hi[k] = hi
            s_seq[k] = seq[i]
            s_new[k] = k == 0 or e > s_hi[k - 1]
            s_echo[k] = ec
            k += 1
    nxt_new = np.empty(m + 1, np.int64)  # first segment carrying new data at or after index k
    nxt_new[m] = m
    for k in range(m - 1, -1, -1):
        nxt_new[k] = k if s_new[k] else nxt_new[k + 1]
    # ---- the receiver's ACKs and their TSvals -------------------------------------------------------
    na = 0
    for i in range(n):
        if (not snd[i]) and (flags[i] & F_ACK) != 0:
            na += 1
    a_row = np.empty(na, np.int64)
    a_first = np.empty(na, np.bool_)  # first ACK of its TSval (placed exactly)
    q = 0
    prev_v = np.int64(lim)
    for i in range(n):
        if (not snd[i]) and (flags[i] & F_ACK) != 0:
            a_row[q] = i
            v = rtsv[i]
            a_first[q] = v > lim and v != prev_v
            if v > lim:
                prev_v = v
            q += 1
    use_ts = have_echo and m > 0
    # anchors: first ACK of a TSval whose first echo is exactly that TSval -> (time, delay)
    an_t = np.empty(na, np.int64)
    an_d = np.empty(na, np.int64)
    nan_ = 0
    kk = 0
    if use_ts:
        for q in range(na):
            if a_first[q]:
                i = a_row[q]
                kk = seek(s_echo, rtsv[i], False, kk)
                if kk < m and s_echo[kk] == rtsv[i] and s_t[kk] >= ts[i]:
                    an_t[nan_] = ts[i]
                    an_d[nan_] = s_t[kk] - ts[i]
                    nan_ += 1
    # ---- boundaries -----------------------------------------------------------------------------------
    bnd = np.empty(na, np.int64)
    kseg = 0  # segments before the current row in capture order
    prev_b = 0
    ja = 0  # anchor pointer: an_t[ja - 1] <= t < an_t[ja]
    q = 0
    h_e = 0  # (the previous answers of the searches below)
    h_ev = 0
    h_t = 0
    for i in range(n):
        if snd[i] and (plen[i] > 0 or (flags[i] & (F_SYN | F_FIN)) != 0):
            kseg += 1
            continue
        if snd[i] or (flags[i] & F_ACK) == 0:
            continue
        t = ts[i]
        while ja < nan_ and an_t[ja] <= t:
            ja += 1
        if nan_ == 0:
            dly = base_ns
        elif ja == 0:
            dly = an_d[0]
        elif ja == nan_:
            dly = an_d[nan_ - 1]
        else:
            t0 = an_t[ja - 1]
            t1 = an_t[ja]
            dly = an_d[ja - 1]
            if t1 > t0:
                dd = an_d[ja] - an_d[ja - 1]  # both >= 0: no overflow
                dt = t - t0  # < t1 - t0; negative after a clock step back (extrapolated back)
                if dt == 0 or abs(dd) <= I64_MAX // abs(dt):
                    term = dd * dt // (t1 - t0)
                else:  # the product leaves int64 (hostile timestamps): in floating point, bounded
                    f = np.float64(dd) * (np.float64(dt) / np.float64(t1 - t0))
                    term = np.int64(np.floor(min(max(f, -(2.0**62)), 2.0**62)))
                if term > 0 and dly > I64_MAX - term:  # saturate instead of wrapping
                    dly = np.int64(I64_MAX)
                else:
                    dly += term
        # when the ACK reaches the sender, saturated at the int64 range
        if dly >= 0:
            tq = t + dly if t <= I64_MAX - dly else np.int64(I64_MAX)
        else:
            tq = t + dly if t >= -I64_MAX - dly else np.int64(-I64_MAX)
        v = rtsv[i]
        if use_ts and v > lim:
            b = h_e = seek(s_echo, v, False, h_e)  # first segment echoing v or later
            if not a_first[q]:
                bv = h_ev = seek(s_echo, v, True, h_ev)  # first echoing later than v
                bt = h_t = seek(s_t, tq, False, h_t)
                if bt > b:
                    b = bt if bt < bv else bv
        else:
            b = h_t = seek(s_t, tq, False, h_t)
        if b < kseg:
            b = kseg
        if b < prev_b:
            b = prev_b
        prev_b = b
        bnd[q] = b
        q += 1
    # ---- snd_max at each ACK, releasing ACK and sender-side delay of each segment ---------------------
    ahead[:] = 0
    rel[:] = -1
    off[:] = base_ns
    for q in range(na):
        b = bnd[q]
        i = a_row[q]
        e = s_hi[b - 1] if b > 0 else np.int64(0)
        g = nxt_new[b] if b < m else m
        # (with timestamps only when that segment answers this ACK: a hole before a later ACK's
        # answer may as well be this ACK's answer, lost)
        if g < m and s_seq[g] > e and not (use_ts and rtsv[i] > lim and rtsv[s_row[g]] != rtsv[i]):
            e = s_seq[g]
        ahead[i] = e
    for k in range(m):
        e = s_hi[k - 1] if k > 0 else np.int64(0)
        g = nxt_new[k]
        if g < m and s_seq[g] > e:
            e = s_seq[g]
        ahead[s_row[k]] = e
    q = -1
    for k in range(m):
        while q + 1 < na and bnd[q + 1] <= k:
            q += 1
        i = s_row[k]
        if q >= 0:
            rel[i] = a_row[q]
            d = s_t[k] - ts[a_row[q]]
            if use_ts and d >= 0:
                off[i] = d
    cur = base_ns
    for i in range(n):
        if snd[i]:
            if plen[i] > 0 or (flags[i] & (F_SYN | F_FIN)) != 0:
                cur = off[i]
        else:
            off[i] = cur
