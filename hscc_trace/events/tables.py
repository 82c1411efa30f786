"""Run the state machine for a batch of flows and assemble the schema tables.

Round limit classification (per round, first rule that applies):

1. **rwnd** — the receiver window limited the sender: a zero window was offered in the round,
   or the window scale is known and the round's peak flight reached the smallest window offered
   in the round minus one MSS (``peak >= rwnd_min − MSS``).
2. **app** — the application had nothing to send (in the spirit of Linux's
   ``tcp_rate_check_app_limited``: nothing queued while the window had room): no loss/recovery
   in the round, and one of

   * the flight drained completely (an ACK in the round left nothing outstanding);
   * the peak flight stayed below :data:`APP_FRACTION` of the largest peak of the previous
     :data:`APP_LOOKBACK` rounds since the last congestion episode ended (a window that shrinks
     by itself without a congestion signal is not the congestion window);
   * captures at the sender only: the data was not released by ACKs — fewer than half of the
     round's new segments (at least :data:`CLOCK_MIN_SEGMENTS`) left within
     :data:`CLOCK_NS` of the latest ACK. A window-limited sender transmits as soon as an ACK
     frees room; an application-limited one when the application writes. A paced sender (BBR,
     fq pacing) is not ACK-clocked either and is reported here as well: its rounds are not
     cwnd-limited, which is what the fit needs to know.
3. **cwnd** — otherwise.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from hscc_trace.errors import Warn
from hscc_trace.model import FlowEvents
from hscc_trace.perf import usable_cpus
from hscc_trace.perf.jit import njit

from . import core
from .prep import NONE, FlowArrays, Handshake, prep_flows
from .records import (
    Acks,
    Counts,
    Episodes,
    FlowFacts,
    FlowInfo,
    FlowParams,
    PacketOut,
    Rounds,
    Rows,
    Segments,
    SenderView,
    Source,
)
from .vantage import at_end, detect, from_handshake, handshake_rtt, sender_view

if TYPE_CHECKING:  # polars and the schema are imported where tables are built (after the capture is read)
    import polars as pl

    from hscc_trace import schema

DUPTHRESH = 3  # RFC 6675 §2 DupThresh
RTO_MIN_NS = 200_000_000  # Linux TCP_RTO_MIN (200 ms); RFC 6298 §2.4 allows below 1 s
OOO_DEFAULT_NS = 3_000_000  # Wireshark: out-of-order window when the initial RTT is unknown
APP_FRACTION = 0.5
APP_LOOKBACK = 8
CLOCK_NS = 500_000  # a segment within 0.5 ms after an ACK was released by it
CLOCK_MIN_SEGMENTS = 4


# threads running batches side by side (at most 2: the target machines have few cores, and a
# pipeline may already run one process per core)
THREADS = min(2, usable_cpus())
THREADED_ROWS = 1 << 19  # largest batch (packets) run in threads: each thread has its working arrays
CHUNK_ROWS = 1 << 17  # packets per batch of flows: bounds the working arrays (~350 B per packet)


@njit(cache=True)
def _in_episodes(start, end, e_start, e_end, e_closed, rec):
    """Mark ``rec[k]`` for every round ``[start[k], end[k]]`` that meets an episode ``[e_start[j],
    e_end[j])`` (an episode not closed runs to the flow's end).

    Rounds run in time order, but capture time may go backwards, so the search bounds are
    monotone envelopes: before the first round whose running-maximum end reaches the episode's
    start, no round does; from the first round after which every start is at or past the
    episode's end, none does. O(rounds + episodes · log rounds + overlaps), not their product."""
    nr = start.shape[0]
    end_max = end.copy()
    for k in range(1, nr):
        if end_max[k - 1] > end_max[k]:
            end_max[k] = end_max[k - 1]
    start_min = start.copy()
    for k in range(nr - 2, -1, -1):
        if start_min[k + 1] < start_min[k]:
            start_min[k] = start_min[k + 1]
    big = np.iinfo(np.int64).max
    for j in range(e_start.shape[0]):
        a = e_start[j]
        b = e_end[j] if e_closed[j] else big
        k = np.searchsorted(end_max, a)
        while k < nr and start_min[k] < b:
            if start[k] < b and end[k] >= a:
                rec[k] = True
            k += 1


@njit(cache=True)
def _rounds_flow(lo, hi, q, rows, sv, po, clock, mss, known, n_ep, ep, el, eh, frac, lookback, rr):
    """RTT rounds of the flow in rows ``lo:hi``, written to the ``r_*`` arrays from row ``q``;
    returns the next free row. Its episodes are the first ``n_ep`` of ``e_*``. Rules: module
    docstring.

    A round is a run of ACKs with the same ``round``; it starts at the previous round's end (the
    flow's first ACK for the first round) and targets the ``tgt`` of the previous round's last
    ACK. Flight peaks include the segments sent in the round.
    """
    isack, rnd, out, rtt, acked, rwnd = po.isack, po.round, po.out, po.rtt, po.acked, po.rwnd
    state, cong, tgt, kind, seg_round = po.state, po.cong, po.tgt, po.kind, po.seg_round
    rexmit, probe = po.rexmit, po.probe
    ts, plen = rows.ts, rows.plen
    off, seg_out = sv.off, sv.peak
    e_start_t, e_end_t, e_end_i = ep.start_t[el:eh], ep.end_t[el:eh], ep.end_i[el:eh]
    r_id = rr.id
    r_start = rr.start
    r_end = rr.end
    r_target = rr.target
    r_peak = rr.peak
    r_acked = rr.acked
    r_minrtt = rr.minrtt
    r_rwnd = rr.rwnd
    r_rec = rr.rec
    r_limit = rr.limit
    q0 = q
    have = False
    prev_r = np.int64(0)
    last = -1
    first_ts = np.int64(0)
    for i in range(lo, hi):
        if not isack[i]:
            continue
        r = rnd[i]
        v = (rtt[i] + off[i]) / 1e9 if rtt[i] >= 0 else np.nan
        if (not have) or r != prev_r:
            if have:
                r_end[q - 1] = ts[last]
                tg = tgt[last]
            else:
                first_ts = ts[i]
                tg = tgt[i]
            r_id[q] = r
            r_target[q] = tg
            r_peak[q] = out[i]
            r_acked[q] = acked[i]
            r_minrtt[q] = v
            r_rwnd[q] = rwnd[i]
            r_rec[q] = state[i] != core.S_OPEN or cong[i] >= 0
            r_limit[q] = 1 if out[i] == 0 else 0  # drained, until the limits below
            q += 1
            have = True
            prev_r = r
        else:
            k = q - 1
            if out[i] > r_peak[k]:
                r_peak[k] = out[i]
            r_acked[k] += acked[i]
            if np.isnan(r_minrtt[k]) or v < r_minrtt[k]:  # fmin: NaN only when all are
                r_minrtt[k] = v
            if rwnd[i] < r_rwnd[k]:
                r_rwnd[k] = rwnd[i]
            if state[i] != core.S_OPEN or cong[i] >= 0:
                r_rec[k] = True
            if out[i] == 0:
                r_limit[k] = 1
        last = i
    if not have:
        return q
    r_end[q - 1] = ts[last]
    r_start[q0] = first_ts
    for k in range(q0 + 1, q):
        r_start[k] = r_end[k - 1]
    nr = q - q0
    rid = r_id[q0:q]
    drained = r_limit[q0:q] == 1
    # flight peaks of the segments sent in each round
    have_seg = False
    cur_r = np.int64(0)
    cur_m = np.int64(0)
    pos = 0  # (segment rounds mostly grow: each search starts from the previous answer)
    for i in range(lo, hi + 1):
        if i < hi and kind[i] < 0:
            continue
        if have_seg and (i == hi or seg_round[i] != cur_r):
            pos = core.seek(rid, cur_r, False, pos)
            if pos < nr and rid[pos] == cur_r and cur_m > r_peak[q0 + pos]:
                r_peak[q0 + pos] = cur_m
            have_seg = False
        if i == hi:
            break
        if not have_seg:
            have_seg = True
            cur_r = seg_round[i]
            cur_m = seg_out[i]
        elif seg_out[i] > cur_m:
            cur_m = seg_out[i]
    # ACK clocking (sender-side captures): new segments within CLOCK_NS of the latest ACK
    unclocked = np.zeros(nr, np.bool_)
    if clock:
        n_new = np.zeros(nr, np.int64)
        n_clk = np.zeros(nr, np.int64)
        any_seg = False
        last_ack = -1
        pos = 0
        for i in range(lo, hi):
            if isack[i]:
                last_ack = i
                continue
            if kind[i] < 0:
                continue
            any_seg = True
            if plen[i] > 0 and not rexmit[i] and probe[i] == 0 and last_ack >= 0:
                pos = core.seek(rid, seg_round[i], False, pos)
                if pos > nr - 1:
                    pos = nr - 1
                if rid[pos] == seg_round[i]:
                    n_new[pos] += 1
                    if ts[i] - ts[last_ack] <= CLOCK_NS:
                        n_clk[pos] += 1
        if any_seg:
            for k in range(nr):
                unclocked[k] = n_new[k] >= CLOCK_MIN_SEGMENTS and n_clk[k] < 0.5 * n_new[k]
    rec = r_rec[q0:q]
    _in_episodes(r_start[q0:q], r_end[q0:q], e_start_t[:n_ep], e_end_t[:n_ep], e_end_i[:n_ep] >= 0, rec)
    lim = _limits(r_peak[q0:q], r_rwnd[q0:q], rec, drained, unclocked, mss, known, frac, lookback)
    r_limit[q0:q] = lim
    return q


@njit(cache=True)
def _compact(lo, hi, j, k, known, rows, sv, po, seg, acks):
    """The rows of schema.SEGMENTS (``o_kind >= 0``) and schema.ACKS (``o_isack``) among rows
    ``lo:hi``, written from rows ``j`` and ``k`` of the ``s_*`` and ``a_*`` columns; returns the
    next free rows. Enum columns as category indices (-1 = null); RTTs in s (NaN = none)."""
    frame, ts, seq, plen, flags, ecn = rows.frame, rows.ts, rows.seq, rows.plen, rows.flags, rows.ecn
    off = sv.off
    o_kind = po.kind
    o_probe = po.probe
    o_rexmit = po.rexmit
    o_seg_out = po.seg_out
    o_seg_round = po.seg_round
    o_isack = po.isack
    o_ackrel = po.ackrel
    o_acked = po.acked
    o_sacked = po.sacked
    o_dsack = po.dsack
    o_dup = po.dup
    o_rwnd = po.rwnd
    o_rtt = po.rtt
    o_rtt_src = po.rtt_src
    o_snd_max = po.snd_max
    o_out = po.out
    o_pipe = po.pipe
    o_round = po.round
    o_round_end = po.round_end
    o_state = po.state
    o_cong = po.cong
    o_undo = po.undo
    o_ca_rtt = po.ca_rtt
    o_rtx = po.rtx
    s_frame = seg.frame
    s_ts = seg.ts
    s_seq = seg.seq
    s_len = seg.len
    s_kind = seg.kind
    s_ecn = seg.ecn
    s_end = seg.end
    s_probe = seg.probe
    s_rexmit = seg.rexmit
    s_out = seg.out
    s_round = seg.round
    a_frame = acks.frame
    a_ts = acks.ts
    a_ack = acks.ack
    a_acked = acks.acked
    a_sacked = acks.sacked
    a_dup = acks.dup
    a_rwnd = acks.rwnd
    a_known = acks.known
    a_ece = acks.ece
    a_rtt = acks.rtt
    a_src = acks.src
    a_snd_max = acks.snd_max
    a_out = acks.out
    a_pipe = acks.pipe
    a_round = acks.round
    a_rend = acks.rend
    a_state = acks.state
    a_cong = acks.cong
    a_undo = acks.undo
    a_dsack = acks.dsack
    a_rtt_raw = acks.rtt_raw
    a_ca_rtt = acks.ca_rtt
    a_rtx = acks.rtx
    for i in range(lo, hi):
        if o_kind[i] >= 0:
            fl = flags[i]
            s_frame[j] = frame[i]
            s_ts[j] = ts[i]
            s_seq[j] = seq[i]
            s_len[j] = plen[i]
            s_kind[j] = o_kind[i]
            s_ecn[j] = ecn[i]
            s_end[j] = seq[i] + plen[i] + (1 if (fl & core.F_SYN) != 0 else 0) + (1 if (fl & core.F_FIN) != 0 else 0)
            s_probe[j] = o_probe[i]
            s_rexmit[j] = o_rexmit[i]
            s_out[j] = o_seg_out[i]
            s_round[j] = o_seg_round[i]
            j += 1
        if o_isack[i]:
            a_frame[k] = frame[i]
            a_ts[k] = ts[i]
            a_ack[k] = o_ackrel[i]
            a_acked[k] = o_acked[i]
            a_sacked[k] = o_sacked[i]
            a_dup[k] = o_dup[i]
            a_rwnd[k] = o_rwnd[i]
            a_known[k] = known
            a_ece[k] = (flags[i] & core.F_ECE) != 0
            r = o_rtt[i]
            if r >= 0:
                a_rtt[k] = (r + off[i]) / 1e9
                a_rtt_raw[k] = r / 1e9
            else:
                a_rtt[k] = np.nan
                a_rtt_raw[k] = np.nan
            r = o_ca_rtt[i]
            a_ca_rtt[k] = r / 1e9 if r >= 0 else np.nan  # (corrected for the vantage already)
            a_src[k] = o_rtt_src[i]
            a_snd_max[k] = o_snd_max[i]
            a_out[k] = o_out[i]
            a_pipe[k] = o_pipe[i]
            a_round[k] = o_round[i]
            a_rend[k] = o_round_end[i]
            a_state[k] = o_state[i]
            a_cong[k] = o_cong[i]
            a_undo[k] = o_undo[i]
            a_dsack[k] = o_dsack[i]
            a_rtx[k] = o_rtx[i]
            k += 1
    return j, k


@njit(work=lambda a: len(a[1].snd), cost=(52.73, 3.86e-05), cache=True, nogil=True)
def _run_flows(bounds, rows, fp, dupthresh, rto_min_ns, sv, po, ep, seg, acks, rr, frac, lookback, counts):
    """Per flow of a batch (flow ``f`` = rows ``bounds[f]:bounds[f+1]``), while its rows are in
    cache: the state machine (:func:`.core.analyze`), its segment and ACK rows into the ``s_*`` and
    ``a_*`` columns (:func:`_compact`), its rounds into ``r_*`` (:func:`_rounds_flow`).

    Flow ``f``'s episodes go to rows ``bounds[f] + f`` on of ``e_*`` (``analyze`` needs rows + 1),
    its warning counters to ``warn[f]``, its counts to ``n_ep``, ``n_seg``, ``n_ack``,
    ``n_rounds``. Away from the sender (``f_at_sender`` False) ``snd_max``, ``outstanding`` and
    ``pipe`` of each ACK are raised to the sender's snd_max when it processed the ACK (``ahead``;
    see hscc_trace.events.vantage.sender_view), ``pipe`` counts each retransmission from the ACK
    that released it (``rel``, flow-relative rows) on, and a segment's round and flight (for the
    round peaks, ``peak``; the ``outstanding`` column keeps what the capture point saw) are those
    of the sender after that ACK.
    """
    seq, plen, flags = rows.seq, rows.plen, rows.flags
    snd, ts, tsv, tse = rows.snd, rows.ts, rows.tsv, rows.tse
    f_mss, f_shift, f_sack, f_known, f_clock, f_ooo, f_at_sender = fp
    ahead, rel, peak = sv.ahead, sv.rel, sv.peak
    o_kind = po.kind
    o_rtt, o_rtt_src, o_ca_rtt = po.rtt, po.rtt_src, po.ca_rtt
    o_rexmit = po.rexmit
    o_seg_out = po.seg_out
    o_seg_round = po.seg_round
    o_isack = po.isack
    o_ackrel = po.ackrel
    o_snd_max = po.snd_max
    o_out = po.out
    o_pipe = po.pipe
    o_round = po.round
    o_round_end = po.round_end
    o_rtx = po.rtx
    warn, n_ep, n_seg, n_ack, n_rounds = counts
    nf = bounds.shape[0] - 1
    j = np.int64(0)  # (typed: a literal 0 would compile the callees twice)
    k = np.int64(0)
    q = np.int64(0)
    for f in range(nf):
        lo = bounds[f]
        hi = bounds[f + 1]
        el = lo + f
        eh = hi + f + 1
        fr, fv = core.flow_rows(rows, sv, lo, hi)
        fo, fe = core.flow_outputs(po, ep, lo, hi, el, eh)
        flow = core.Flow(f_mss[f], f_shift[f], f_sack[f], dupthresh, f_ooo[f], rto_min_ns, f_at_sender[f])
        ne = core.analyze(flow, fr, fv, fo, fe, warn[f])
        n_ep[f] = ne
        if f_at_sender[f]:
            # the kernel's whole-ms timestamp-echo samples (what congestion control is handed)
            core.linux_ts_ticks(
                snd[lo:hi], ts[lo:hi], tsv[lo:hi], tse[lo:hi], o_rtt_src[lo:hi], o_rtt[lo:hi], o_ca_rtt[lo:hi]
            )
        else:
            for i in range(lo, hi):
                if o_isack[i]:
                    extra = ahead[i] - o_snd_max[i]
                    if extra > 0:
                        o_snd_max[i] += extra
                        o_out[i] += extra
                        o_pipe[i] += extra
                elif o_rexmit[i] and rel[i] >= 0:
                    # a retransmission is in flight from the ACK that released it on: the ACKs
                    # seen before it arrived count it in pipe too
                    e = seq[i] + plen[i]
                    for a in range(lo + rel[i] + 1, i):
                        if o_isack[a] and e > o_ackrel[a]:
                            o_pipe[a] += e - (seq[i] if seq[i] > o_ackrel[a] else o_ackrel[a])
        for i in range(lo, hi):
            if o_kind[i] < 0:
                continue
            peak[i] = o_seg_out[i]
            r = lo + rel[i]
            if (not f_at_sender[f]) and rel[i] >= 0 and o_isack[r]:
                # the sender sent it after processing ACK r: its round, and its flight then
                fl = flags[i]
                e = seq[i] + plen[i] + (1 if (fl & core.F_SYN) != 0 else 0) + (1 if (fl & core.F_FIN) != 0 else 0)
                top = ahead[i] if ahead[i] > e else e
                peak[i] = top - o_ackrel[r] if top > o_ackrel[r] else 0
                o_seg_round[i] = o_round[r] + (1 if o_round_end[r] else 0)  # (r may end a round)
        # bytes retransmitted between consecutive ACKs (segments other than new): at the sender
        # the next ACK after the segment; away from it, the next after the ACK that released it
        o_rtx[lo:hi] = 0
        pend = np.int64(0)
        for i in range(lo, hi):
            if o_isack[i]:
                o_rtx[i] += pend
                pend = 0
            elif o_kind[i] > core.K_NEW and plen[i] > 0:
                if f_at_sender[f] or rel[i] < 0:
                    pend += plen[i]
                else:
                    a = lo + rel[i] + 1
                    while a < hi and not o_isack[a]:
                        a += 1
                    if a < hi:
                        o_rtx[a] += plen[i]
        j0 = j
        k0 = k
        j, k = _compact(lo, hi, j, k, f_known[f], rows, sv, po, seg, acks)
        n_seg[f] = j - j0
        n_ack[f] = k - k0
        q0 = q
        q = _rounds_flow(lo, hi, q, rows, sv, po, f_clock[f], f_mss[f], f_known[f], ne, ep, el, eh, frac, lookback, rr)
        n_rounds[f] = q - q0


#: dtypes of the state machine's outputs (:class:`.records.PacketOut`, :class:`.records.Episodes`)
#: that are not int64: kinds, probes, RTT sources and states as int8 codes, flags as booleans
_OUT_DTYPES: dict[str, Any] = {
    **dict.fromkeys(("kind", "probe", "rtt_src", "state", "cong"), np.int8),
    **dict.fromkeys(("rexmit", "isack", "round_end", "undo", "spur"), np.bool_),
}


class _Work:
    """Working arrays of a batch of flows (rows in flow order, each flow in frame order), allocated
    once for the largest batch and reused: a fresh allocation per batch costs page faults."""

    def __init__(self, n: int, nf: int) -> None:
        e = np.empty
        i64 = np.int64
        # prep_flows outputs
        self.frame = e(n, np.uint64)
        self.snd = e(n, np.bool_)
        self.ts, self.seq, self.ack, self.plen, self.flags, self.win = (e(n, i64) for _ in range(6))
        self.tsv, self.tse, self.rtsv, self.sn, self.ecn = (e(n, i64) for _ in range(5))
        self.sl = e((n, 4), i64)
        self.sr = e((n, 4), i64)
        self.sdir, self.mss, self.shift = (e(nf, i64) for _ in range(3))
        self.known, self.sack, self.tsflow, self.seen = (e(nf, np.bool_) for _ in range(4))
        self.syn, self.synack, self.ack3, self.irtt = (e(nf, i64) for _ in range(4))
        # vantage
        self.off = e(n, i64)
        self.ahead = e(n, i64)
        self.rel = e(n, i64)
        self.peak = e(n, i64)  # per segment: flight after it, as the sender saw it (round peaks)
        # analyze outputs (per packet, per episode row: rows + flows)
        self.po = {k: e(n, _OUT_DTYPES.get(k, i64)) for k in PacketOut._fields}
        self.ep = {k: e(n + nf, _OUT_DTYPES.get(k, i64)) for k in Episodes._fields}
        self._n = n
        self._tmp: dict[str, np.ndarray] = {}

    def tmp(self, name: str, k: int, dtype: Any) -> np.ndarray:
        """Scratch array ``name`` of ``k`` (<= rows) elements, reused from batch to batch: for
        columns polars copies anyway (booleans, Enum indices) and for the rounds before their
        final length is known."""
        a = self._tmp.get(name)
        if a is None:
            a = self._tmp[name] = np.empty(self._n, dtype)
        return a[:k]

    def rows(self, n: int) -> Rows:
        """The first ``n`` rows (:func:`.prep.prep_flows` writes them, the state machine reads them)."""
        r = slice(0, n)
        return Rows(
            self.frame[r],
            self.snd[r],
            self.ts[r],
            self.seq[r],
            self.ack[r],
            self.plen[r],
            self.flags[r],
            self.win[r],
            self.tsv[r],
            self.tse[r],
            self.rtsv[r],
            self.sl[r],
            self.sr[r],
            self.sn[r],
            self.ecn[r],
        )

    def info(self, nf: int) -> FlowInfo:
        """The first ``nf`` flows' handshake and options (:func:`.prep.prep_flows` writes them)."""
        q = slice(0, nf)
        return FlowInfo(
            self.sdir[q],
            self.mss[q],
            self.shift[q],
            self.known[q],
            self.sack[q],
            self.tsflow[q],
            self.seen[q],
            self.syn[q],
            self.synack[q],
            self.ack3[q],
            self.irtt[q],
        )

    def outputs(self, n: int, nf: int) -> tuple[PacketOut, Episodes]:
        """The state machine's outputs for ``n`` rows (:class:`.records.PacketOut`) and ``nf``
        flows' episodes (``n + nf`` rows, :class:`.records.Episodes`)."""
        po = PacketOut(**{k: a[:n] for k, a in self.po.items()})
        ep = Episodes(**{k: a[: n + nf] for k, a in self.ep.items()})
        return po, ep

    def handshake(self, f: int) -> Handshake:
        def opt(x: int) -> int | None:
            return None if x == NONE else int(x)

        return Handshake(
            seen=bool(self.seen[f]),
            syn_ns=opt(self.syn[f]),
            synack_ns=opt(self.synack[f]),
            ack_ns=opt(self.ack3[f]),
            irtt_ns=opt(self.irtt[f]),
        )

    def flow(self, f: int, lo: int, hi: int) -> FlowArrays:
        h = self.handshake(f)
        s = slice(lo, hi)
        return FlowArrays(
            frame=self.frame[s],
            snd=self.snd[s],
            ts=self.ts[s],
            seq=self.seq[s],
            ack=self.ack[s],
            plen=self.plen[s],
            flags=self.flags[s],
            win=self.win[s],
            tsv=self.tsv[s],
            tse=self.tse[s],
            rtsv=self.rtsv[s],
            sl=self.sl[s],
            sr=self.sr[s],
            sn=self.sn[s],
            ecn=self.ecn[s],
            sender_dir=int(self.sdir[f]),
            handshake=h,
            mss=int(self.mss[f]),
            rwnd_shift=int(self.shift[f]),
            rwnd_scale_known=bool(self.known[f]),
            sack_flow=bool(self.sack[f]),
            ts_flow=bool(self.tsflow[f]),
        )


_WARN_MSGS = {
    core.W_TS_BACK: "capture timestamps go backwards (packets kept in capture order)",
    core.W_ACK_UNSEEN: "ACKs for data the capture did not see (snd_max moved to the ACK)",
    core.W_NEG_RTT: "negative RTT samples dropped (clock stepped back)",
    core.W_GAP: "gaps in the sender's sequence (segments missing from the capture)",
}


def build_flow_events(
    src: tuple[np.ndarray, ...],
    order: np.ndarray,
    bounds: np.ndarray,
    fids: list[int],
    f_sdir: np.ndarray,
    f_mss: np.ndarray,
    f_wsa: np.ndarray,
    f_wsb: np.ndarray,
    read: Callable[[], Any] | None = None,
    f_end: np.ndarray | None = None,
) -> list[FlowEvents]:
    """Event streams of the flows ``fids``: flow ``k`` is rows ``order[bounds[k]:bounds[k+1]]`` of
    the source columns ``src`` (:func:`.prep.source_columns`), in frame order. Per-flow facts from
    the flows table (``-1``/``0`` = unknown): sender direction, MSS, window scales of A and B, and
    (``f_end``) the end its vantage names, 0 sender or 1 receiver (-1: neither). That end is taken
    where the streams' own timing cannot name one — both handshake gaps under the floor, or no
    handshake rule (the data rule's flows) — and is then the table's TTLs' (or, where the table
    saw a handshake the streams could not use, its gaps'): docs/events.md, "Vantage point".

    Flows are processed in batches of about :data:`CHUNK_ROWS` packets (a larger flow is a batch
    of its own): each stage runs once per batch (compiled loops over its flows), the working
    arrays are reused from batch to batch, and every flow's tables are zero-copy slices of its
    batch's tables. Up to :data:`THREADS` batches run at a time (one unless the batches are small).

    ``read``, when given, is called once nothing reads ``src`` any more: right after the packets
    are copied into the working arrays when the flows are one batch (a long flow: its packets'
    memory in the load arena goes before the state machine's working arrays fill, ≈ 50 bytes a
    packet less at the peak), else when every batch is built.
    """
    nf = len(fids)
    cuts = [0]
    while cuts[-1] < nf:
        f0 = cuts[-1]
        f1 = int(np.searchsorted(bounds, bounds[f0] + CHUNK_ROWS, side="right")) - 1
        cuts.append(min(max(f1, f0 + 1), nf))
    rows = max(int(bounds[b] - bounds[a]) for a, b in zip(cuts[:-1], cuts[1:])) if nf else 0
    flows = max(b - a for a, b in zip(cuts[:-1], cuts[1:])) if nf else 0
    ends = np.full(nf, -1, np.int64) if f_end is None else f_end
    jobs = [
        (
            src,
            order,
            bounds[f0 : f1 + 1],
            fids[f0:f1],
            FlowFacts(f_sdir[f0:f1], f_mss[f0:f1], f_wsa[f0:f1], f_wsb[f0:f1], ends[f0:f1]),
        )
        for f0, f1 in zip(cuts[:-1], cuts[1:])
    ]
    threads = min(THREADS, len(jobs))
    if rows > THREADED_ROWS:
        threads = 1  # flows this long: one set of working arrays (~350 B per packet) is enough memory
    if threads <= 1:
        work = _Work(rows, flows)
        if len(jobs) == 1 and read is not None:
            return _batch(work, *jobs[0], read=read)
        out = [ev for job in jobs for ev in _batch(work, *job)]
        if read is not None:
            read()
        return out
    # two batches at a time: the compiled stages release the GIL, so they run side by side while
    # the other thread does its Python/polars part; one set of working arrays per thread
    free: queue.SimpleQueue[_Work] = queue.SimpleQueue()
    for _ in range(threads):
        free.put(_Work(rows, flows))

    def run(job: tuple) -> list[FlowEvents]:
        work = free.get()
        try:
            return _batch(work, *job)
        finally:
            free.put(work)

    with ThreadPoolExecutor(threads) as pool:
        out = [ev for part in pool.map(run, jobs) for ev in part]
    if read is not None:
        read()
    return out


def _enum_idx(codes: np.ndarray, names: tuple[str, ...]) -> pl.Series:
    """Enum series from category indices (uint32; ``len(names)`` = null)."""
    return _cats(names)[codes]


def _batch(W: _Work, src, order, bounds, fids, facts: FlowFacts, read=None) -> list[FlowEvents]:
    """Event streams of one batch of flows (``facts``: the flows table's, :class:`.records.FlowFacts`):
    :func:`.prep.prep_flows`, the vantage point per flow (:func:`_vantage`), the state machine with
    each flow's segment and ACK rows and rounds (:func:`_run_flows`), the batch's tables
    (:func:`_segments_acks`, :func:`_episodes`, :func:`_rounds`), one FlowEvents per flow
    (:func:`_flow_events`, slices of them). ``read``: as :func:`build_flow_events`."""
    base = int(bounds[0])
    b = (bounds - base).astype(np.int64)
    n = int(b[-1])
    nf = len(fids)
    prep_flows(order[base : base + n], b, facts, Source(*src), W.rows(n), W.info(nf))
    if read is not None:  # (the working arrays hold copies: nothing below reads ``src``)
        del src
        read()
    vts, fp = _vantage(W, b, facts.end)
    po, ep = W.outputs(n, nf)
    S, A, rr = _columns(W, n)
    counts = Counts(np.zeros((nf, core.N_WARN), np.int64), *(np.zeros(nf, np.int64) for _ in range(4)))
    _run_flows(
        b,
        W.rows(n),
        fp,
        np.int64(DUPTHRESH),
        np.int64(RTO_MIN_NS),
        SenderView(W.off[:n], W.ahead[:n], W.rel[:n], W.peak[:n]),
        po,
        ep,
        Segments(*S.values()),
        Acks(*A.values()),
        rr,
        APP_FRACTION,
        APP_LOOKBACK,
        counts,
    )
    segs, acks = _segments_acks(S, A, counts)
    del S, A
    tables = (segs, acks, _episodes(W, ep, b, counts.n_ep), _rounds(rr, counts.n_rounds))
    return _flow_events(W, b, fids, vts, tables, counts)


def _vantage(W: _Work, b: np.ndarray, f_end: np.ndarray) -> tuple[list[Any], FlowParams]:
    """Vantage point and RTT correction per flow of the batch (flow ``f``: rows ``b[f]:b[f+1]``):
    its vantage (:mod:`.vantage`; ``f_end`` the end the flows table names, -1 none), and away from
    the sender its view (:func:`.vantage.sender_view` into ``W.off``, ``W.ahead``, ``W.rel``).
    Returns the vantages and what the state machine is run with."""
    nf = b.shape[0] - 1
    off, ahead, rel = W.off, W.ahead, W.rel
    at_sender = np.empty(nf, np.bool_)
    clock = np.empty(nf, np.bool_)
    ooo = np.empty(nf, np.int64)
    vts = []
    for f in range(nf):
        lo, hi = int(b[f]), int(b[f + 1])
        h = W.handshake(f)
        vt = from_handshake(h, int(W.sdir[f]))
        if vt is None:  # the data rule needs the flow's arrays
            vt = detect(W.flow(f, lo, hi))
        if f_end[f] >= 0 and (vt.method != "handshake" or vt.both_turnarounds):  # the TTLs name it
            vt = at_end(vt, "sender" if f_end[f] == 0 else "receiver")
        vts.append(vt)
        at = not (vt.vantage in ("receiver", "mid-path") and vt.offset_ns > 0)
        at_sender[f] = at
        clock[f] = at and vt.vantage == "sender"
        if at:
            off[lo:hi] = vt.offset_ns
            ahead[lo:hi] = 0
            rel[lo:hi] = -1
        else:
            r = slice(lo, hi)
            sender_view(
                W.ts[r],
                W.snd[r],
                W.plen[r],
                W.flags[r],
                W.seq[r],
                W.rtsv[r],
                np.int64(vt.offset_ns),
                ahead[r],
                rel[r],
                off[r],
            )
        ooo[f] = h.irtt_ns if h.irtt_ns else OOO_DEFAULT_NS
    fp = FlowParams(W.mss[:nf], W.shift[:nf], W.sack[:nf], W.known[:nf], clock, ooo, at_sender)
    return vts, fp


def _columns(W: _Work, n: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], Rounds]:
    """The batch's data-side (segments: the sender's rows) and ACK-side (ACKs: the receiver's
    rows) columns, room for that many, and the rounds' (at most one per ACK), by schema name."""
    n_snd = int(np.count_nonzero(W.snd[:n]))
    cs, ca = n_snd, n - n_snd
    e = np.empty
    t = W.tmp  # (polars copies booleans and gathers Enums: those columns are scratch)
    S = dict(
        frame=e(cs, np.uint64),
        ts_ns=e(cs, np.int64),
        seq=e(cs, np.int64),
        len=e(cs, np.uint32),
        kind=t("s_kind", cs, np.uint32),
        ip_ecn=e(cs, np.uint8),
        end_seq=e(cs, np.int64),
        probe=t("s_probe", cs, np.uint32),
        rexmit=t("s_rexmit", cs, np.bool_),
        outstanding=e(cs, np.int64),
        round=e(cs, np.uint32),
    )
    A = dict(
        frame=e(ca, np.uint64),
        ts_ns=e(ca, np.int64),
        ack=e(ca, np.int64),
        acked_bytes=e(ca, np.int64),
        sacked_bytes=e(ca, np.int64),
        dupack=e(ca, np.uint32),
        rwnd_bytes=e(ca, np.int64),
        rwnd_scale_known=t("a_known", ca, np.bool_),
        ece=t("a_ece", ca, np.bool_),
        rtt_s=e(ca, np.float64),
        rtt_source=t("a_src", ca, np.int32),
        snd_max=e(ca, np.int64),
        outstanding=e(ca, np.int64),
        pipe=e(ca, np.int64),
        round=e(ca, np.uint32),
        round_end=t("a_rend", ca, np.bool_),
        state=t("a_state", ca, np.uint32),
        cong_event=t("a_cong", ca, np.int32),
        spurious_undo=t("a_undo", ca, np.bool_),
        dsack_bytes=e(ca, np.int64),
        rtt_raw_s=e(ca, np.float64),
        ca_rtt_s=e(ca, np.float64),
        retrans_bytes=e(ca, np.int64),
    )
    r_id, r_start, r_end, r_target, r_peak, r_acked, r_rwnd = (t(f"r{k}", ca, np.int64) for k in range(7))
    r_minrtt = t("r_minrtt", ca, np.float64)
    r_rec = t("r_rec", ca, np.bool_)
    r_limit = t("r_limit", ca, np.int8)
    return S, A, Rounds(r_id, r_start, r_end, r_target, r_peak, r_acked, r_minrtt, r_rwnd, r_rec, r_limit)


def _fit(col: np.ndarray, k: int) -> np.ndarray:
    """The first ``k`` rows; a copy when much room is left unused (the table keeps the buffer)."""
    return col[:k].copy() if k < 0.9 * col.shape[0] else col[:k]


def _segments_acks(
    S: dict[str, np.ndarray], A: dict[str, np.ndarray], counts: Counts
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The batch's segments (data side) and ACKs (ACK side) tables from the columns
    :func:`_run_flows` filled (``counts``: how many rows each flow has). Empties ``S`` and ``A``:
    a column's room goes as soon as the table has what it needs of it."""
    import polars as pl

    from hscc_trace import schema

    ns, na = int(counts.n_seg.sum()), int(counts.n_ack.sum())
    seg = {name: _fit(col, ns) for name, col in S.items()}
    S.clear()
    ack = {name: _fit(col, na) for name, col in A.items()}
    A.clear()
    segs = _frame(
        {
            **seg,
            "kind": _enum_idx(seg["kind"], schema.SEGMENT_KINDS),
            "probe": _enum_idx(seg["probe"], schema.PROBE_KINDS),
        },
        schema.SEGMENTS,
    )
    del seg
    ack["rtt_s"] = pl.Series(ack["rtt_s"], nan_to_null=True)
    ack["rtt_raw_s"] = pl.Series(ack["rtt_raw_s"], nan_to_null=True)
    ack["ca_rtt_s"] = pl.Series(ack["ca_rtt_s"], nan_to_null=True)
    ack["state"] = _enum_idx(ack["state"], schema.CONG_STATES)
    ack["rtt_source"] = _enum(ack["rtt_source"], schema.RTT_SOURCES)
    ack["cong_event"] = _enum(ack["cong_event"], schema.EPISODE_KINDS)
    return segs, _frame(ack, schema.ACKS)


def _episodes(W: _Work, ep: Episodes, b: np.ndarray, n_ep: np.ndarray) -> pl.DataFrame:
    """The batch's episodes table: flow f's are rows b[f] + f + (0 .. n_ep[f]) of ``ep``."""
    import polars as pl

    from hscc_trace import schema

    nf = b.shape[0] - 1
    n_tot = int(n_ep.sum())
    ep_at = np.concatenate(([0], np.cumsum(n_ep)))
    local = np.arange(n_tot) - np.repeat(ep_at[:-1], n_ep)
    row0 = np.repeat(b[:-1], n_ep)
    idx = row0 + np.repeat(np.arange(nf), n_ep) + local
    end_i = ep.end_i[idx]
    ended = end_i >= 0
    end_t = pl.Series(ep.end_t[idx])
    end_frame = pl.Series(W.frame[row0 + np.where(ended, end_i, 0)])
    if not ended.all():
        unended = pl.Series(~ended)
        end_t = end_t.set(unended, None)
        end_frame = end_frame.set(unended, None)
    return _frame(
        {
            "episode": local.astype(np.uint32),
            "kind": _enum(ep.kind[idx], schema.EPISODE_KINDS),
            "start_ns": ep.start_t[idx],
            "end_ns": end_t,
            "start_frame": W.frame[row0 + ep.start_i[idx]],
            "flight_bytes": ep.flight[idx],
            "retrans_bytes": ep.retx[idx],
            "recovery_point": ep.rp[idx],
            "end_frame": end_frame,
            "spurious": ep.spur[idx],
        },
        schema.EPISODES,
    )


def _rounds(rr: Rounds, n_rounds: np.ndarray) -> pl.DataFrame:
    """The batch's rounds table (:func:`_run_flows` computed them, flow after flow)."""
    from hscc_trace import schema

    nr = int(n_rounds.sum())
    return _frame(
        {  # (copies: the scratch arrays are reused)
            "round": rr.id[:nr].astype(np.uint32),
            "start_ns": rr.start[:nr].copy(),
            "end_ns": rr.end[:nr].copy(),
            "target_seq": rr.target[:nr].copy(),
            "peak_flight_bytes": rr.peak[:nr].copy(),
            "acked_bytes": rr.acked[:nr].copy(),
            "min_rtt_s": _opt_float(rr.minrtt[:nr]),
            "rwnd_bytes": rr.rwnd[:nr].copy(),
            "limit": _enum(rr.limit[:nr], schema.LIMITS),
            "in_recovery": rr.rec[:nr],
        },
        schema.ROUNDS,
    )


def _flow_events(
    W: _Work, b: np.ndarray, fids: list[int], vts: list[Any], tables: tuple, counts: Counts
) -> list[FlowEvents]:
    """One FlowEvents per flow of the batch: slices of the batch's ``tables`` (segments, ACKs,
    episodes, rounds; ``counts``: each flow's rows of them), its vantage and warnings."""
    segs, acks, eps, rounds = tables
    warn, n_ep, n_seg, n_ack, n_rounds = counts
    at = [np.concatenate(([0], np.cumsum(c))) for c in (n_seg, n_ack, n_ep, n_rounds)]
    n = int(b[-1])
    n_rcv = np.diff(b) - np.add.reduceat(W.snd[:n], b[:-1], dtype=np.int64)
    res = []
    for f in range(len(fids)):
        src_name = f"flow {fids[f]}"
        warnings = [Warn(src_name, msg, int(warn[f, k])) for k, msg in _WARN_MSGS.items() if warn[f, k]]
        if not W.known[f] and n_rcv[f]:
            warnings.append(
                Warn(src_name, "window scale unknown (handshake not captured): rwnd_bytes is the raw window")
            )
        vt = vts[f]
        res.append(
            FlowEvents(
                flow_id=fids[f],
                sender_dir=int(W.sdir[f]),
                mss=int(W.mss[f]),
                vantage=vt.vantage,
                segments=segs.slice(int(at[0][f]), int(n_seg[f])),
                acks=acks.slice(int(at[1][f]), int(n_ack[f])),
                episodes=eps.slice(int(at[2][f]), int(n_ep[f])),
                rounds=rounds.slice(int(at[3][f]), int(n_rounds[f])),
                rtt_offset_s=vt.offset_ns / 1e9,
                warnings=warnings,
                handshake_rtt_s=handshake_rtt(vt),
            )
        )
    return res


_ENUMS: dict[tuple[str, ...], pl.Series] = {}


def _cats(names: tuple[str, ...]) -> pl.Series:
    """The Enum's categories in order, then a null (index ``len(names)``): indexing it with
    category indices builds the column without strings (``Series[ndarray]``, a third of what
    ``gather`` costs: no query plan)."""
    cats = _ENUMS.get(names)
    if cats is None:
        import polars as pl

        cats = _ENUMS[names] = pl.Series([*names, None], dtype=pl.Enum(list(names)))
    return cats


def _enum(codes: np.ndarray, names: tuple[str, ...]) -> pl.Series:
    """Enum series from integer codes (negative = null), without building strings."""
    idx = np.where(codes < 0, len(names), codes).astype(np.uint32)
    return _cats(names)[idx]


def _opt_float(x: np.ndarray) -> pl.Series:
    """Float64 with NaN as null."""
    import polars as pl

    return pl.Series(x.astype(np.float64), nan_to_null=True)


def _frame(cols: dict[str, Any], table: tuple[schema.Column, ...]) -> pl.DataFrame:
    """DataFrame in the table's column order and dtypes (numpy columns are cast zero-copy where possible)."""
    import polars as pl

    out = []
    for c in table:
        v = cols[c.name]
        sr = v.alias(c.name) if isinstance(v, pl.Series) else pl.Series(c.name, v)
        if sr.dtype != c.dtype:
            sr = sr.cast(c.dtype)
        out.append(sr)
    return pl.DataFrame(out)


@njit(cache=True)
def _limits(peak, rw, rec, drained, unclocked, mss, scale_known, frac, lookback):
    """Per-round limit codes (0 cwnd, 1 rwnd, 2 app) — rules in the module docstring."""
    n = peak.shape[0]
    out = np.zeros(n, np.int8)
    hist = np.empty(n, np.int64)
    h = 0
    for k in range(n):
        if rec[k]:
            out[k] = 0
            h = 0
            continue
        if rw[k] == 0 or (scale_known and peak[k] >= rw[k] - mss):
            out[k] = 1
        else:
            ref = np.int64(-1)
            lo = h - lookback if h - lookback > 0 else 0
            for q in range(lo, h):
                if hist[q] > ref:
                    ref = hist[q]
            if drained[k] or unclocked[k] or (ref >= 0 and peak[k] < frac * ref):
                out[k] = 2
        hist[h] = peak[k]
        h += 1
    return out
