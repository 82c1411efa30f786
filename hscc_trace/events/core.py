"""The per-packet state machine behind the event streams (numba, one pass in capture order).

One call handles one flow: every packet of both directions, in frame order (not timestamp
order, so that a clock stepping backwards cannot reorder the conversation — Wireshark does the
same). Sequence numbers arrive already unwrapped to 64 bits and relative to the data sender's
ISN (see :mod:`hscc_trace.events.prep`).

What it computes, and from which source:

* **Segment kinds** with the semantics of Wireshark's ``tcp.analysis`` flags
  (``epan/dissectors/packet-tcp.c``, ``tcp_analyze_sequence_number``): zero-window probe,
  keep-alive, spurious retransmission (``seq + len <= last ACK``), fast retransmission
  (>= 2 duplicate ACKs, ``seq == last ACK`` and within 20 ms of the last ACK), out-of-order
  (below the highest sequence, within the initial RTT — 3 ms when unknown — of the highest
  segment, and not ending exactly at it), otherwise retransmission. Wireshark's own
  duplicate-ACK rule (same window, non-zero window, same ACK, no payload) drives these.
* **rexmit** (loss sense): the segment re-sends bytes already sent (overlaps the sent space
  ``[first seen, snd_max)`` minus holes the capture never saw); keep-alives and zero-window
  probes are never retransmissions in this sense.
* **ACK stream**: cumulative ACK advance, duplicate ACKs (RFC 5681 §2 definition; with SACK an
  ACK that SACKs new data also counts, RFC 6675 §2), the SACK scoreboard (RFC 2018) with
  D-SACK detection (RFC 2883 §4: first block below the cumulative ACK or inside the second
  block), RTT samples (Karn/Partridge — RFC 6298 §3: a data/ACK match only when none of the
  newly acknowledged bytes was ever retransmitted or previously SACKed; otherwise from the
  timestamp echo, RFC 7323 §4), ``outstanding = snd_max − snd_una`` and the RFC 6675 §4 pipe
  with DupThresh and the IsLost rule.
* **Congestion episodes and sender state**: see :func:`analyze` (rules documented in
  docs/events.md) — fast retransmit / SACK recovery after duplicate ACKs or SACK, RTO after a
  silence of about one RTO (RFC 6298 estimator with Linux's 200 ms minimum), ECN once per round
  (RFC 3168 §6.1.2); an episode ends when its recovery point (snd_max at onset, RFC 6582 §3.2)
  is cumulatively acknowledged. Spurious episodes: all retransmissions D-SACKed (RFC 3708) or
  the Eifel check (RFC 3522: the ACK of the first retransmission echoes an older timestamp).
* **Rounds**: a round ends on the first ACK at or above the snd_max recorded when the round
  began (and above the round's starting ACK).
"""

from __future__ import annotations

import numpy as np

from hscc_trace.perf.jit import njit

from . import ranges as rg
from .ranges import _bsearch, _gsearch  # noqa: F401 (used here and by the modules importing core)

NOTS = np.int64(-(2**62))  # "no timestamp option" sentinel for unwrapped TS values

# segment kinds (order of schema.SEGMENT_KINDS)
K_NEW, K_RETX, K_FAST, K_SPUR, K_OOO = 0, 1, 2, 3, 4
# probe kinds (schema.PROBE_KINDS)
P_NONE, P_KA, P_ZWP = 0, 1, 2
# states (schema.CONG_STATES)
S_OPEN, S_REC, S_LOSS = 0, 1, 2
# episode kinds (schema.EPISODE_KINDS)
E_FAST, E_SACK, E_RTO, E_ECN = 0, 1, 2, 3
# RTT sources (schema.RTT_SOURCES)
R_SEQ, R_TS = 0, 1

F_FIN, F_SYN, F_RST, F_ACK, F_ECE = 0x01, 0x02, 0x04, 0x10, 0x40

# warning counter slots
W_TS_BACK, W_ACK_UNSEEN, W_NEG_RTT, W_GAP = 0, 1, 2, 3
N_WARN = 4


@njit(cache=True, inline="always")
def seek(a, v, right, h):
    """``np.searchsorted(a, v, "right" if right else "left")`` (``a`` sorted), galloping from
    ``h`` (the previous answer: queries that mostly move forward a little)."""
    n = a.shape[0]
    if h > n:
        h = n
    if h > 0 and not (a[h - 1] < v or (right and a[h - 1] == v)):
        return _gsearch(a, 0, h, v, right, True)  # (the answer is before h)
    return _gsearch(a, h, n, v, right, False)


@njit(cache=True)
def _ts_lookup(vals, times, n, v):
    i = np.searchsorted(vals[:n], v)
    if i < n and vals[i] == v:
        return times[i]
    return np.int64(-1)


@njit(cache=True, nogil=True)
def linux_ts_ticks(snd, ts, tsv, tse, rtt_src, rtt, ca):
    """At the sender: the RTT sample Linux hands congestion control on an ACK timed by its
    timestamp echo (``rtt_src`` ``R_TS``: the ACK covers retransmitted or previously SACKed data,
    so Karn's rule leaves no sequence sample). The kernel counts it in whole ticks of its TSval
    clock, ``tcp_rtt_tsopt_us``: (clock now − TSecr) · 1 ms, 0 ticks counted as 1 (TCP_TS_HZ =
    1000 since Linux 4.13), where the capture gives the µs value. The clock is read off the
    sender's own TSvals: a least-squares line through (capture time, TSval) of its packets gives
    the rate, and the latest tick start consistent with every packet the phase (a TSval is
    stamped before its packet reaches the capture point, never after). ``ca`` (ns, −1 = none) is
    rewritten in place where the ACK's own sample is used (not a SACK sample), when the clock
    ticks every millisecond (rate within 1 %), the line predicts at least 90 % of the sender's
    TSvals exactly, and the tick count agrees with the µs sample within 1.5 ticks; otherwise the
    µs value stays. Returns the number of samples rewritten."""
    n = snd.shape[0]
    t0 = np.int64(0)
    v0 = np.int64(0)
    m = 0
    span = 0.0
    sx = 0.0
    sy = 0.0
    sxx = 0.0
    sxy = 0.0
    for i in range(n):
        if snd[i] and tsv[i] != NOTS:
            if m == 0:
                t0 = ts[i]
                v0 = tsv[i]
            x = (ts[i] - t0) / 1e6  # ms
            y = float(tsv[i] - v0)
            span = max(span, y)
            m += 1
            sx += x
            sy += y
            sxx += x * x
            sxy += x * y
    if m < 16:
        return 0
    den = m * sxx - sx * sx
    if den <= 0.0:
        return 0
    slope = (m * sxy - sx * sy) / den  # ticks per ms
    if abs(slope - 1.0) > 0.01 or span < 100.0:  # not a 1 kHz clock, or too short to tell it
        return 0
    phase = np.inf
    for i in range(n):
        if snd[i] and tsv[i] != NOTS:
            d = slope * ((ts[i] - t0) / 1e6) - float(tsv[i] - v0)
            if d < phase:
                phase = d
    hit = 0
    for i in range(n):
        if snd[i] and tsv[i] != NOTS:
            if np.floor(slope * ((ts[i] - t0) / 1e6) - phase + 1e-9) == float(tsv[i] - v0):
                hit += 1
    if hit < 0.9 * m:
        return 0
    done = 0
    for i in range(n):
        if snd[i] or rtt_src[i] != R_TS or tse[i] == NOTS or ca[i] != rtt[i] or rtt[i] < 0:
            continue
        now = np.floor(slope * ((ts[i] - t0) / 1e6) - phase + 1e-9)
        ticks = now - float(tse[i] - v0)
        if ticks < 0.0:
            continue
        if ticks == 0.0:
            ticks = 1.0
        if abs(ticks - rtt[i] / 1e6) > 1.5:
            continue
        ca[i] = np.int64(ticks) * 1_000_000
        done += 1
    return done


@njit(cache=True)
def analyze(
    lo, hi, el, eh, rows, mss, rwnd_shift, sack_flow, dupthresh, ooo_thres_ns, rto_min_ns, at_sender, sv, po, ep, warn
):
    """Run the state machine over rows ``lo:hi`` of a batch (one flow); fills the output arrays,
    returns the number of episodes.

    The flow's rows are ``rows[lo:hi]`` (:class:`.records.Rows`), its sender's view ``sv[lo:hi]``
    (``off`` is ``rtt_offset_ns`` below, :class:`.records.SenderView`), its per-row outputs
    ``po[lo:hi]`` (the ``o_*`` names below are its fields, :class:`.records.PacketOut`), its
    episode rows ``ep[el:eh]`` (``e_*``, :class:`.records.Episodes`), its warning counters
    ``warn``; the other arguments are the flow's scalars.

    ``rtt_offset_ns`` (per packet) is added to RTT samples before they feed the RTO estimator;
    ``at_sender`` is False for receiver-side/mid-path captures, where ``ahead`` (per ACK row)
    estimates the sender's snd_max when it processed the ACK, ``rel`` (per data-segment row)
    the row of the ACK that released the segment (−1 unknown; see
    :func:`hscc_trace.events.vantage.sender_view`), and ``rtt_offset_ns`` the sender-side part
    of the RTT (at an ACK with an RTT sample it is replaced by that of the segment the sample
    times, which the tables then add too): an episode then begins at the ACK that released its first retransmission, its
    recovery point is the sender's snd_max then, and the time since the last advancing ACK
    (RTO test) is the sender's (the capture point sees the retransmission one sender-side part
    later).

    ``snd`` marks packets from the data sender; ``seq`` is the sender's relative unwrapped
    sequence for sender packets and the receiver's own (unwrapped) sequence for receiver
    packets; ``ack`` is the receiver's cumulative ACK in the sender's relative space (only
    meaningful where ``flags & ACK``). Times in ns; ``mss`` in bytes; ``rwnd_shift`` the
    receiver's window-scale shift (0 when unknown).
    """
    snd = rows.snd[lo:hi]
    ts = rows.ts[lo:hi]
    seq = rows.seq[lo:hi]
    ack = rows.ack[lo:hi]
    plen = rows.plen[lo:hi]
    flags = rows.flags[lo:hi]
    win = rows.win[lo:hi]
    tsv = rows.tsv[lo:hi]
    tse = rows.tse[lo:hi]
    sl = rows.sl[lo:hi]
    sr = rows.sr[lo:hi]
    sn = rows.sn[lo:hi]
    rtt_offset_ns = sv.off[lo:hi]
    ahead = sv.ahead[lo:hi]
    rel = sv.rel[lo:hi]
    o_kind = po.kind[lo:hi]
    o_probe = po.probe[lo:hi]
    o_rexmit = po.rexmit[lo:hi]
    o_seg_out = po.seg_out[lo:hi]
    o_seg_round = po.seg_round[lo:hi]
    o_isack = po.isack[lo:hi]
    o_ackrel = po.ackrel[lo:hi]
    o_acked = po.acked[lo:hi]
    o_sacked = po.sacked[lo:hi]
    o_dsack = po.dsack[lo:hi]
    o_dup = po.dup[lo:hi]
    o_rwnd = po.rwnd[lo:hi]
    o_rtt = po.rtt[lo:hi]
    o_rtt_src = po.rtt_src[lo:hi]
    o_snd_max = po.snd_max[lo:hi]
    o_out = po.out[lo:hi]
    o_pipe = po.pipe[lo:hi]
    o_round = po.round[lo:hi]
    o_round_end = po.round_end[lo:hi]
    o_tgt = po.tgt[lo:hi]
    o_state = po.state[lo:hi]
    o_cong = po.cong[lo:hi]
    o_undo = po.undo[lo:hi]
    o_ca_rtt = po.ca_rtt[lo:hi]
    e_kind = ep.kind[el:eh]
    e_start_t = ep.start_t[el:eh]
    e_end_t = ep.end_t[el:eh]
    e_start_i = ep.start_i[el:eh]
    e_end_i = ep.end_i[el:eh]
    e_flight = ep.flight[el:eh]
    e_retx = ep.retx[el:eh]
    e_rp = ep.rp[el:eh]
    e_spur = ep.spur[el:eh]
    n = snd.shape[0]
    # SACK scoreboard, retransmitted bytes (ever / since the last RTO), holes never seen.
    # Worst-case sizes (one range per insertion, one more per split): never reallocated.
    n_snd = 0
    n_blk = 0
    for i in range(n):
        if snd[i]:
            n_snd += 1
        else:
            n_blk += sn[i]
    cap_sb = n_blk + 8
    cap_x = n_snd + 8
    sbL = np.empty(cap_sb, np.int64)
    sbR = np.empty(cap_sb, np.int64)
    sbm = 0
    sb_tot = 0
    xaL = np.empty(cap_x, np.int64)
    xaR = np.empty(cap_x, np.int64)
    xam = 0
    xpL = np.empty(cap_x, np.int64)
    xpR = np.empty(cap_x, np.int64)
    xpm = 0
    xp_tot = np.int64(0)  # bytes in xp
    xp_sb = np.int64(0)  # bytes in both xp and the scoreboard (kept as both change: O(1) per ACK)
    hoL = np.empty(2 * cap_x + n, np.int64)
    hoR = np.empty(2 * cap_x + n, np.int64)
    hom = 0
    # first-transmission records [s, e) with send time, sorted by e (for data/ACK RTT)
    rcap = 2 * n + 2
    rec_s = np.empty(rcap, np.int64)
    rec_e = np.empty(rcap, np.int64)
    rec_t = np.empty(rcap, np.int64)
    rec_o = np.empty(rcap, np.int64)  # the segment's sender-side RTT part (rtt_offset_ns)
    rh = 0
    rm = 0
    # sender TSval -> first time it was seen (for TS-echo RTT and Eifel)
    tsvals = np.empty(n + 1, np.int64)
    tstimes = np.empty(n + 1, np.int64)
    tsoffs = np.empty(n + 1, np.int64)
    tsn = 0

    have_snd = False
    have_una = False
    snd_min = np.int64(0)
    snd_max = np.int64(0)
    una = np.int64(0)
    # Wireshark-semantics state
    ws_have_next = False
    ws_next = np.int64(0)
    ws_next_t = np.int64(0)
    ws_have_lastack = False
    ws_lastack = np.int64(0)
    ws_lastack_t = np.int64(0)
    ws_dupnum = 0
    rcv_win_raw = np.int64(-1)
    rcv_have_next = False
    rcv_next = np.int64(0)
    # own state
    dup = 0
    my_last_win = np.int64(-1)
    last_adv_t = np.int64(0)
    last_adv_off = np.int64(0)  # away from the sender: sender-side RTT part at the last advance
    have_adv = False
    srtt = np.int64(-1)
    rttvar = np.int64(0)
    state = S_OPEN
    ep_n = 0
    ep_active = False
    ep_cur = -1
    ep_first_retx_seq = np.int64(-1)
    ep_first_retx_tsv = NOTS
    ep_eifel_done = True
    ep_dsack = np.int64(0)
    ep_retx_lo = np.int64(0)
    ep_retx_hi = np.int64(0)
    pending_cong = -1
    last_ack_row = -1
    last_end_row = -1
    trig_row = -1
    rnd = 0
    rnd_started = False
    rnd_target = np.int64(0)
    rnd_start_ack = np.int64(0)
    last_ecn_round = -1
    prev_t = ts[0] if n > 0 else np.int64(0)

    for i in range(n):
        t = ts[i]
        if t < prev_t:
            warn[W_TS_BACK] += 1
        prev_t = t
        f = flags[i]
        syn = (f & F_SYN) != 0
        fin = (f & F_FIN) != 0
        rst = (f & F_RST) != 0
        o_kind[i] = -1
        o_probe[i] = 0
        o_rexmit[i] = False
        o_isack[i] = False
        o_cong[i] = -1
        o_undo[i] = False
        o_rtt[i] = -1
        o_rtt_src[i] = -1
        o_round_end[i] = False

        if snd[i]:
            s = seq[i]
            ln = plen[i]
            e = s + ln + (1 if syn else 0) + (1 if fin else 0)
            if not have_snd:
                have_snd = True
                snd_min = s
                snd_max = s
                if not have_una:
                    una = s
                    have_una = True
            if tsv[i] != NOTS and (tsn == 0 or tsv[i] > tsvals[tsn - 1]):
                tsvals[tsn] = tsv[i]
                tstimes[tsn] = t
                tsoffs[tsn] = rtt_offset_ns[i]
                tsn += 1
            is_seg = ln > 0 or syn or fin
            # ---- Wireshark tcp.analysis semantics -------------------------------------
            probe = P_NONE
            if ln == 1 and ws_have_next and s == ws_next and rcv_win_raw == 0:
                probe = P_ZWP
            elif ln <= 1 and ws_have_next and s == ws_next - 1 and not (syn or fin or rst):
                probe = P_KA
            kind = K_NEW
            if is_seg and probe != P_KA:
                not_adv = ws_have_next and s < ws_next
                if ln > 1 and ws_have_next and ws_next - 1 == s:
                    not_adv = False
                if ln > 0 and ws_have_lastack and s + ln <= ws_lastack:
                    kind = K_SPUR
                # Wireshark computes these gaps as unsigned: a clock step back never qualifies
                elif not_adv and ws_dupnum >= 2 and ws_lastack == s and 0 <= (t - ws_lastack_t) < 20_000_000:
                    kind = K_FAST
                elif not_adv and 0 <= (t - ws_next_t) < ooo_thres_ns and ws_next != e:
                    kind = K_OOO
                elif not_adv:
                    kind = K_RETX
            # Wireshark advances nextseq on every packet (a pure ACK carries snd_nxt too)
            if probe != P_ZWP and ((not ws_have_next) or e > ws_next):
                ws_have_next = True
                ws_next = e
                ws_next_t = t
            if (not is_seg) and (not rst) and s > snd_max:
                # a pure ACK's sequence number is the sender's snd_nxt: data the capture missed
                hom, _a = rg.insert(hoL, hoR, hom, snd_max, s)
                warn[W_GAP] += 1
                snd_max = s
            # ---- loss-sense bookkeeping -----------------------------------------------
            rexmit = False
            if is_seg and not rst:
                pre = 0
                if s < snd_min:
                    pre = (e if e < snd_min else snd_min) - s
                ml = s if s > snd_min else snd_min
                mr = e if e < snd_max else snd_max
                inside = 0
                if mr > ml:
                    inside = (mr - ml) - (rg.overlap(hoL, hoR, hom, ml, mr) if hom > 0 else 0)
                sent_before = pre + inside
                # out-of-order, long after the highest one (Wireshark: not out-of-order) or once
                # the receiver has SACKed more than (DupThresh - 1) * MSS above it (RFC 6675
                # IsLost), re-sends bytes lost before the capture point
                rexmit = probe == P_NONE and (sent_before > 0 or kind == K_RETX or kind == K_FAST or kind == K_SPUR)
                if (not rexmit) and probe == P_NONE and e < snd_max and sbm > 0:
                    if rg.overlap(sbL, sbR, sbm, e, snd_max) > (dupthresh - 1) * mss:
                        rexmit = True
                if probe == P_ZWP:
                    # a probe byte may be sent many times: an ACK covering it gives no RTT (Karn)
                    xam, _a = rg.insert(xaL, xaR, xam, s, e)
                else:
                    # holes: a jump past snd_max leaves bytes the capture never saw
                    if s > snd_max:
                        hom, _a = rg.insert(hoL, hoR, hom, snd_max, s)
                        warn[W_GAP] += 1
                    newly_filled = 0
                    if hom > 0 and s < hoR[hom - 1] and e > hoL[0]:
                        hom, newly_filled = rg.remove(hoL, hoR, hom, s, e)
                    if rexmit:
                        xl = s if s > una else una
                        xr = e if e < snd_max else snd_max
                        if xr > xl:
                            xam, _a = rg.insert(xaL, xaR, xam, xl, xr)
                            if sbm > 0:
                                xp_sb += rg.gain(xpL, xpR, xpm, xl, xr, sbL, sbR, sbm)
                            xpm, _a = rg.insert(xpL, xpR, xpm, xl, xr)
                            xp_tot += _a
                    elif sent_before == 0 and ln > 0:
                        # first transmission: remember its send time (sorted by end)
                        pos = rm if (rm == rh or rec_e[rm - 1] <= e) else _gsearch(rec_e, rh, rm, e, False, True)
                        q = rm
                        while q > pos:
                            rec_s[q] = rec_s[q - 1]
                            rec_e[q] = rec_e[q - 1]
                            rec_t[q] = rec_t[q - 1]
                            rec_o[q] = rec_o[q - 1]
                            q -= 1
                        rec_s[pos] = s
                        rec_e[pos] = e
                        rec_t[pos] = t
                        rec_o[pos] = rtt_offset_ns[i]
                        rm += 1
                    if e > snd_max:
                        snd_max = e
                # ---- congestion episodes triggered by a retransmission -------------------
                if rexmit and e > una:
                    if srtt > 0:
                        var4 = 4 * rttvar
                        rto = srtt + (var4 if var4 > rto_min_ns else rto_min_ns)
                    else:
                        rto = np.int64(1_000_000_000)
                    ref = last_adv_t if have_adv else t
                    elapsed = t - ref
                    if (not at_sender) and have_adv:
                        # the retransmission reaches the capture point one sender-side part
                        # after it left the sender, the advancing ACK left the capture point that
                        # much before it reached the sender
                        elapsed -= last_adv_off
                    head = s <= una
                    dup_or_sack = dup > 0 or sb_tot > 0
                    start = -1
                    late = (
                        (not at_sender)
                        and state == S_OPEN
                        and ep_cur >= 0
                        and (not ep_active)
                        and e_kind[ep_cur] != E_ECN
                        and 0 <= rel[i] < last_end_row
                    )
                    if late:
                        # away from the sender: released by an ACK before the one that ended the
                        # last episode, so sent while the sender was still in it — its bytes
                        # count there, and no new episode begins
                        e_retx[ep_cur] += (e if e < snd_max else snd_max) - (s if s > una else una)
                    elif state == S_OPEN:
                        if head and (not dup_or_sack) and elapsed * 10 >= rto * 9:
                            start = E_RTO
                        elif dup_or_sack:
                            start = E_SACK if (sack_flow or sb_tot > 0) else E_FAST
                        elif head and elapsed * 2 >= rto:
                            start = E_RTO
                    else:
                        again = rg.overlap(xpL, xpR, xpm, una, una + 1) > 0 and ep_active and e_retx[ep_cur] > 0
                        if head and elapsed * 10 >= rto * 9 and (state == S_LOSS or again or not dup_or_sack):
                            if state == S_LOSS:
                                # RTO backoff inside Loss: no new transition, recovery point moves
                                e_rp[ep_cur] = snd_max
                            else:
                                start = E_RTO
                    if start >= 0:
                        if ep_active:
                            e_end_t[ep_cur] = t
                            e_end_i[ep_cur] = i
                        ep_cur = ep_n
                        ep_n += 1
                        ep_active = True
                        e_kind[ep_cur] = start
                        e_start_t[ep_cur] = t
                        e_start_i[ep_cur] = i
                        e_end_t[ep_cur] = -1
                        e_end_i[ep_cur] = -1
                        rp = snd_max
                        mark = last_ack_row
                        if not at_sender:
                            # the sender decided on the ACK that released this retransmission;
                            # the recovery point is the sender's snd_max when it sent it (bytes
                            # lost before the capture point included)
                            if rel[i] > last_end_row and rel[i] <= last_ack_row and o_isack[rel[i]]:
                                mark = rel[i]
                            elif trig_row > last_end_row and trig_row >= 0:
                                # no ACK placed before it: the ACK that crossed DupThresh
                                # (duplicates or SACKed bytes)
                                mark = trig_row
                            if ahead[i] > rp:
                                rp = ahead[i]
                            if mark >= 0 and start != E_RTO:
                                e_start_t[ep_cur] = ts[mark]
                                e_start_i[ep_cur] = mark
                        e_flight[ep_cur] = rp - una
                        e_retx[ep_cur] = 0
                        e_rp[ep_cur] = rp
                        e_spur[ep_cur] = False
                        ep_first_retx_seq = s
                        ep_first_retx_tsv = tsv[i]
                        ep_eifel_done = tsv[i] == NOTS
                        ep_dsack = 0
                        ep_retx_lo = s
                        ep_retx_hi = e
                        last_ack_row = mark
                        if (
                            start != E_RTO
                            and last_ack_row >= 0
                            and o_cong[last_ack_row] < 0
                            and last_ack_row > last_end_row
                        ):
                            # fast retransmit / SACK recovery: the sender decided on the ACK it
                            # just received (the DupThresh-th duplicate or the SACK that marked
                            # loss) — mark that ACK and put it in recovery
                            o_cong[last_ack_row] = start
                            o_state[last_ack_row] = S_REC
                            # away from the sender, the ACKs seen between that ACK and the
                            # retransmission reached the sender after it: in recovery too
                            for q in range(last_ack_row + 1, i):
                                if o_isack[q] and o_state[q] == S_OPEN:
                                    o_state[q] = S_REC
                        else:
                            # RTO: the timer fired after the last ACK; mark the next ACK
                            pending_cong = start
                        if start == E_RTO:
                            state = S_LOSS
                            # Linux tcp_enter_loss: everything outstanding is lost; earlier
                            # retransmissions are no longer counted in flight
                            xpm = 0
                            xp_tot = 0
                            xp_sb = 0
                            xl = s if s > una else una
                            xr = e if e < snd_max else snd_max
                            if xr > xl:
                                if sbm > 0:
                                    xp_sb += rg.gain(xpL, xpR, xpm, xl, xr, sbL, sbR, sbm)
                                xpm, _a = rg.insert(xpL, xpR, xpm, xl, xr)
                                xp_tot += _a
                        else:
                            state = S_REC
                    if ep_active and ep_cur >= 0 and e_kind[ep_cur] != E_ECN:
                        e_retx[ep_cur] += (e if e < snd_max else snd_max) - (s if s > una else una)
                        if s < ep_retx_lo:
                            ep_retx_lo = s
                        if e > ep_retx_hi:
                            ep_retx_hi = e
            if is_seg and not rst and (ln > 0 or syn or fin):
                o_kind[i] = kind
                o_probe[i] = probe
                o_rexmit[i] = rexmit
                o_seg_out[i] = (e if (probe == P_ZWP and e > snd_max) else snd_max) - una
                o_seg_round[i] = rnd
            o_snd_max[i] = snd_max
            continue

        # ================= receiver -> sender =================================================
        a = ack[i]
        has_ack = (f & F_ACK) != 0
        rs = seq[i]
        # Wireshark duplicate-ACK bookkeeping for the receiver direction
        if has_ack:
            if (
                plen[i] == 0
                and win[i] != 0
                and win[i] == rcv_win_raw
                and rcv_have_next
                and rs == rcv_next
                and ws_have_lastack
                and a == ws_lastack
                and not (syn or fin or rst)
            ):
                ws_dupnum += 1
            if (not ws_have_lastack) or a != ws_lastack:
                ws_dupnum = 0
            ws_have_lastack = True
            ws_lastack = a
        ws_lastack_t = t
        rcv_win_raw = win[i]
        re = rs + plen[i] + (1 if syn else 0) + (1 if fin else 0)
        if (not rcv_have_next) or re > rcv_next:
            rcv_next = re
            rcv_have_next = True
        if not has_ack:
            o_snd_max[i] = snd_max
            continue
        if not have_snd and not have_una:
            una = a
            snd_max = a
            snd_min = a
            have_una = True
        elif not have_una:
            una = a
            have_una = True
        if a > snd_max:
            warn[W_ACK_UNSEEN] += 1
            if hom > 0:
                hom, _a = rg.remove(hoL, hoR, hom, snd_max, a)
            snd_max = a
        acked = np.int64(0)
        rtt = np.int64(-1)
        src = -1
        s_off = rtt_offset_ns[i]
        if a > una:
            acked = a - una
            if rm > rh:
                idx = _gsearch(rec_e, rh, rm, a, False, False)
                if idx < rm and rec_e[idx] == a:
                    if (xam == 0 or rg.overlap(xaL, xaR, xam, una, a) == 0) and (
                        sbm == 0 or rg.overlap(sbL, sbR, sbm, una, a) == 0
                    ):
                        rtt = t - rec_t[idx]
                        src = R_SEQ
                        s_off = rec_o[idx]
                rh = _gsearch(rec_e, rh, rm, a, True, False)
            if sbm > 0 and xpm > 0:
                xp_sb -= rg.overlap_sets_below(xpL, xpR, xpm, sbL, sbR, sbm, a)
            una = a
            if sbm > 0:
                sbm, pr = rg.prune_below(sbL, sbR, sbm, una)
                sb_tot -= pr
            if xam > 0:
                xam, _p = rg.prune_below(xaL, xaR, xam, una)
            if xpm > 0:
                xpm, _p = rg.prune_below(xpL, xpR, xpm, una)
                xp_tot -= _p
            if hom > 0:
                hom, _p = rg.prune_below(hoL, hoR, hom, una)
            dup = 0
            trig_row = -1
            last_adv_t = t
            last_adv_off = rtt_offset_ns[i]
            have_adv = True
        # SACK blocks and D-SACK
        newly = np.int64(0)
        dsk = np.int64(0)
        sack_hi = np.int64(-1)  # right edge of the highest block that SACKs new data at its end
        nb = sn[i]
        for k in range(nb):
            l = sl[i, k]
            r = sr[i, k]
            if r <= l:
                continue
            isd = False
            if k == 0:
                if r <= a:
                    isd = True
                elif nb > 1 and l >= sl[i, 1] and r <= sr[i, 1]:
                    isd = True
            if isd:
                dsk += r - l
                if ep_cur >= 0:
                    ol = l if l > ep_retx_lo else ep_retx_lo
                    orr = r if r < ep_retx_hi else ep_retx_hi
                    if orr > ol:
                        ep_dsack += orr - ol
                continue
            if l < una:
                l = una
            if r > snd_max:
                r = snd_max
            if r > l:
                fresh_end = sbm == 0 or rg.overlap(sbL, sbR, sbm, r - 1, r) == 0
                if xpm > 0:
                    xp_sb += rg.gain(sbL, sbR, sbm, l, r, xpL, xpR, xpm)
                sbm, added = rg.insert(sbL, sbR, sbm, l, r)
                newly += added
                if added > 0 and fresh_end and r > sack_hi:
                    sack_hi = r
        sb_tot += newly
        # timestamp-echo RTT when data/ACK matching gave none (RFC 7323 §4: ACKs of new data)
        if src < 0 and acked > 0 and tse[i] != NOTS and tsn > 0:
            j = _gsearch(tsvals, 0, tsn, tse[i], False, True)
            t0 = tstimes[j] if (j < tsn and tsvals[j] == tse[i]) else np.int64(-1)
            if t0 >= 0:
                rtt = t - t0
                src = R_TS
                s_off = tsoffs[j]
        if src >= 0 and rtt < 0:
            warn[W_NEG_RTT] += 1
            rtt = -1
            src = -1
        if src >= 0:
            # the correction of the segment the sample times (written back: the tables add it too)
            rtt_offset_ns[i] = s_off
            sample = rtt + s_off
            if srtt < 0:
                srtt = sample
                rttvar = sample // 2
            else:  # RFC 6298 §2.3, alpha = 1/8, beta = 1/4
                d = srtt - sample
                if d < 0:
                    d = -d
                rttvar = (3 * rttvar + d) // 4
                srtt = (7 * srtt + sample) // 8
        # duplicate ACK (RFC 5681 §2; with SACK, new SACK information counts — RFC 6675 §2)
        if (
            acked == 0
            and a == una
            and plen[i] == 0
            and not (fin or rst or syn)
            and snd_max > una
            and (win[i] == my_last_win or newly > 0)
        ):
            dup += 1
        my_last_win = win[i]
        undo = False
        # Eifel (RFC 3522 §2): the ACK covering the first retransmission echoes an older TSval
        if ep_cur >= 0 and not ep_eifel_done and una > ep_first_retx_seq and tse[i] != NOTS:
            ep_eifel_done = True
            if tse[i] < ep_first_retx_tsv and not e_spur[ep_cur]:
                e_spur[ep_cur] = True
                undo = True
        # D-SACK (RFC 3708 §3): every retransmitted byte of the episode reported twice
        if (
            ep_cur >= 0
            and not e_spur[ep_cur]
            and e_kind[ep_cur] != E_ECN
            and e_retx[ep_cur] > 0
            and ep_dsack >= e_retx[ep_cur]
        ):
            e_spur[ep_cur] = True
            undo = True
        # episode end: the recovery point is cumulatively acknowledged (RFC 6582 §3.2 step 3)
        restart = -1
        if ep_active and una >= e_rp[ep_cur]:
            ep_active = False
            e_end_t[ep_cur] = t
            e_end_i[ep_cur] = i
            state = S_OPEN
            last_end_row = i
            # Data sent during the recovery and already retransmitted in it (lost beyond the
            # recovery point) is still outstanding and not SACKed: Linux leaves recovery on this
            # ACK and enters it again at once (tcp_fastretrans_alert: lost_out > 0 →
            # tcp_time_to_recover), a second congestion event with its own reduction. The trace
            # shows no new retransmission (it happened before), so the episode starts here.
            if (e_kind[ep_cur] == E_FAST or e_kind[ep_cur] == E_SACK) and xpm > 0:
                if xp_tot - xp_sb > 0:
                    restart = e_kind[ep_cur]
            if restart < 0 and (not at_sender) and (e_kind[ep_cur] == E_FAST or e_kind[ep_cur] == E_SACK):
                # away from the sender a retransmission it sent before this ACK reached it may not
                # have arrived yet: one released by an earlier ACK, seen later, that re-sends bytes
                # (it starts below the sender's snd_max then) this ACK does not cover. (Segments
                # are released in capture order: the first one released by this ACK or later
                # ends the search.)
                for q in range(i + 1, n):
                    if not snd[q] or (plen[q] == 0 and (flags[q] & (F_SYN | F_FIN)) == 0):
                        continue
                    if rel[q] >= i:
                        break
                    if rel[q] >= 0 and seq[q] < ahead[q] and seq[q] + plen[q] > una:
                        restart = e_kind[ep_cur]
                        break
        # ECN echo: one reaction per round (RFC 3168 §6.1.2)
        cong = -1
        if restart >= 0:
            ep_cur = ep_n
            ep_n += 1
            ep_active = True
            e_kind[ep_cur] = restart
            e_start_t[ep_cur] = t
            e_start_i[ep_cur] = i
            e_end_t[ep_cur] = -1
            e_end_i[ep_cur] = -1
            # (away from the sender: the sender's snd_max when it processed this ACK)
            rp = snd_max if (at_sender or ahead[i] < snd_max) else ahead[i]
            e_flight[ep_cur] = rp - una
            e_retx[ep_cur] = 0
            e_rp[ep_cur] = rp
            e_spur[ep_cur] = False
            ep_eifel_done = True
            ep_dsack = 0
            ep_retx_lo = 0
            ep_retx_hi = 0
            state = S_REC
            cong = restart
        if (f & F_ECE) != 0 and not syn and state == S_OPEN and not ep_active and last_ecn_round != rnd:
            last_ecn_round = rnd
            ep_cur = ep_n
            ep_n += 1
            ep_active = True
            e_kind[ep_cur] = E_ECN
            e_start_t[ep_cur] = t
            e_start_i[ep_cur] = i
            e_end_t[ep_cur] = -1
            e_end_i[ep_cur] = -1
            e_flight[ep_cur] = snd_max - una
            e_retx[ep_cur] = 0
            e_rp[ep_cur] = snd_max
            e_spur[ep_cur] = False
            ep_eifel_done = True
            ep_dsack = 0
            ep_retx_lo = 0
            ep_retx_hi = 0
            if snd_max <= una:
                ep_active = False
                e_end_t[ep_cur] = t
                e_end_i[ep_cur] = i
            cong = E_ECN
        if syn:
            # SYN/ACK: moves snd_una past the SYN but is not part of the ACK clock
            o_snd_max[i] = snd_max
            continue
        if pending_cong >= 0 and cong < 0:
            cong = pending_cong
            pending_cong = -1
        # pipe (RFC 6675 §4 SetPipe, in bytes)
        out = snd_max - una
        lost = np.int64(0)
        if state == S_LOSS and ep_cur >= 0:
            rp = e_rp[ep_cur] if e_rp[ep_cur] < snd_max else snd_max
            if rp > una:
                lost = (rp - una) - (rg.overlap(sbL, sbR, sbm, una, rp) if sbm > 0 else 0)
        elif sbm > 0:
            cum = np.int64(0)
            cnt = 0
            k = sbm - 1
            while k >= 0:
                cum += sbR[k] - sbL[k]
                cnt += 1
                if cum > (dupthresh - 1) * mss or cnt >= dupthresh:
                    lost = (sbL[k] - una) - (sb_tot - cum)
                    break
                k -= 1
        retx_in = xp_tot - xp_sb  # (retransmitted bytes in flight: not SACKed since)
        pipe = out - sb_tot - lost + retx_in
        if pipe < 0:
            pipe = 0
        # RTT rounds
        rend = False
        myr = rnd
        # away from the sender, the sender's snd_max when it processed this ACK is estimated
        # (``ahead``, see vantage.sender_view)
        tgt = snd_max if at_sender or ahead[i] < snd_max else ahead[i]
        if not rnd_started:
            rnd_started = True
            rnd_target = tgt
            rnd_start_ack = una
        elif una >= rnd_target and una > rnd_start_ack:
            rend = True
            rnd += 1
            rnd_target = tgt
            rnd_start_ack = una
        o_isack[i] = True
        o_ackrel[i] = a
        o_acked[i] = acked
        o_sacked[i] = newly
        o_dsack[i] = dsk
        o_dup[i] = dup
        o_rwnd[i] = win[i] << rwnd_shift
        o_rtt[i] = rtt
        # Linux's RTT sample for congestion control (tcp_clean_rtx_queue → ca_rtt_us, what the
        # modules' pkts_acked and rate sample get): the newest segment this ACK newly SACKs (its
        # first transmission, never retransmitted) when there is one, else the ACK's own sample.
        # (A timestamp-echo sample is whole ms ticks in the kernel, tcp_rtt_tsopt_us: at the
        # sender linux_ts_ticks rewrites it once the flow is done, from the sender's TSval clock.)
        # Written with the vantage correction of the segment it times (the tables add none).
        ca = rtt + rtt_offset_ns[i] if src >= 0 else np.int64(-1)
        if sack_hi > 0 and rm > rh:
            idx = _gsearch(rec_e, rh, rm, sack_hi, False, False)
            if (
                idx < rm
                and rec_e[idx] == sack_hi
                and (xam == 0 or rg.overlap(xaL, xaR, xam, sack_hi - 1, sack_hi) == 0)
            ):
                if t >= rec_t[idx]:
                    ca = t - rec_t[idx] + rec_o[idx]
        o_ca_rtt[i] = ca
        o_rtt_src[i] = src
        o_snd_max[i] = snd_max
        o_out[i] = out
        o_pipe[i] = pipe
        o_round[i] = myr
        o_round_end[i] = rend
        o_tgt[i] = rnd_target
        o_state[i] = state
        o_cong[i] = cong
        o_undo[i] = undo
        last_ack_row = i
        if trig_row < 0 and state == S_OPEN and (dup >= dupthresh or sb_tot > (dupthresh - 1) * mss):
            trig_row = i
    return ep_n
