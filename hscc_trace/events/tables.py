"""Run the state machine for one flow and assemble the schema tables.

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

from typing import Any

from numba import njit

import numpy as np
import polars as pl

from hscc_trace import schema
from hscc_trace.errors import Warn
from hscc_trace.model import FlowEvents

from . import core
from .prep import prepare
from .vantage import detect, dynamic_offsets

DUPTHRESH = 3  # RFC 6675 §2 DupThresh
RTO_MIN_NS = 200_000_000  # Linux TCP_RTO_MIN (200 ms); RFC 6298 §2.4 allows below 1 s
OOO_DEFAULT_NS = 3_000_000  # Wireshark: out-of-order window when the initial RTT is unknown
APP_FRACTION = 0.5
APP_LOOKBACK = 8
CLOCK_NS = 500_000  # a segment within 0.5 ms after an ACK was released by it
CLOCK_MIN_SEGMENTS = 4


def _run(fa) -> dict[str, np.ndarray]:
    n = fa.ts.shape[0]
    o = {
        "kind": np.empty(n, np.int8), "probe": np.empty(n, np.int8), "rexmit": np.empty(n, np.bool_),
        "seg_out": np.zeros(n, np.int64), "seg_round": np.zeros(n, np.int64),
        "isack": np.empty(n, np.bool_), "ackrel": np.zeros(n, np.int64), "acked": np.zeros(n, np.int64),
        "sacked": np.zeros(n, np.int64), "dsack": np.zeros(n, np.int64), "dup": np.zeros(n, np.int64),
        "rwnd": np.zeros(n, np.int64), "rtt": np.empty(n, np.int64), "rtt_src": np.empty(n, np.int8),
        "snd_max": np.zeros(n, np.int64), "out": np.zeros(n, np.int64), "pipe": np.zeros(n, np.int64),
        "round": np.zeros(n, np.int64), "round_end": np.empty(n, np.bool_), "tgt": np.zeros(n, np.int64), "state": np.zeros(n, np.int8),
        "cong": np.empty(n, np.int8), "undo": np.empty(n, np.bool_),
    }
    e = {
        "kind": np.zeros(n + 1, np.int8), "start_t": np.zeros(n + 1, np.int64), "end_t": np.zeros(n + 1, np.int64),
        "start_i": np.zeros(n + 1, np.int64), "end_i": np.zeros(n + 1, np.int64),
        "flight": np.zeros(n + 1, np.int64), "retx": np.zeros(n + 1, np.int64), "rp": np.zeros(n + 1, np.int64),
        "spur": np.zeros(n + 1, np.bool_),
    }
    warn = np.zeros(core.N_WARN, np.int64)
    return o, e, warn


def build_events(packets: pl.DataFrame, flow: dict[str, Any] | None, flow_id: int) -> FlowEvents:
    """Everything for one flow: prepare, detect the vantage point, run the state machine, tabulate."""
    fa = prepare(packets, flow)
    vt = detect(fa)
    o, e, warn = _run(fa)
    at_sender = not (vt.vantage in ("receiver", "mid-path") and vt.offset_ns > 0)
    if not at_sender:
        off = dynamic_offsets(fa, vt.offset_ns)
        ahead = _snd_max_ahead(fa, off)
    else:
        off = np.full(fa.ts.shape[0], vt.offset_ns, np.int64)
        ahead = np.zeros(fa.ts.shape[0], np.int64)
    ooo = fa.handshake.irtt_ns if fa.handshake.irtt_ns else OOO_DEFAULT_NS
    n_ep = core.analyze(
        fa.snd, fa.ts, fa.seq, fa.ack, fa.plen, fa.flags, fa.win, fa.tsv, fa.tse, fa.sl, fa.sr, fa.sn,
        np.int64(fa.mss), np.int64(fa.rwnd_shift), fa.sack_flow, np.int64(DUPTHRESH), np.int64(ooo),
        off, np.int64(RTO_MIN_NS), at_sender, ahead,
        o["kind"], o["probe"], o["rexmit"], o["seg_out"], o["seg_round"], o["isack"], o["ackrel"], o["acked"],
        o["sacked"], o["dsack"], o["dup"], o["rwnd"], o["rtt"], o["rtt_src"], o["snd_max"], o["out"], o["pipe"],
        o["round"], o["round_end"], o["tgt"], o["state"], o["cong"], o["undo"],
        e["kind"], e["start_t"], e["end_t"], e["start_i"], e["end_i"], e["flight"], e["retx"], e["rp"], e["spur"],
        warn,
    )
    src = f"flow {flow_id}"
    warnings: list[Warn] = []
    msgs = {
        core.W_TS_BACK: "capture timestamps go backwards (packets kept in capture order)",
        core.W_ACK_UNSEEN: "ACKs for data the capture did not see (snd_max moved to the ACK)",
        core.W_NEG_RTT: "negative RTT samples dropped (clock stepped back)",
        core.W_GAP: "gaps in the sender's sequence (segments missing from the capture)",
    }
    for k, msg in msgs.items():
        if warn[k]:
            warnings.append(Warn(src, msg, int(warn[k])))
    if not fa.rwnd_scale_known and (~fa.snd).any():
        warnings.append(Warn(src, "window scale unknown (handshake not captured): rwnd_bytes is the raw window"))
    if not at_sender:
        # estimated sender-side flight at each ACK (docstring of _snd_max_ahead)
        m = o["isack"]
        extra = np.maximum(ahead[m] - o["snd_max"][m], 0)
        o["out"][m] += extra
        o["pipe"][m] += extra
    segs = _segments(fa, o)
    acks = _acks(fa, o, off)
    eps = _episodes(fa, e, n_ep)
    rounds = _rounds(fa, o, segs, eps, off, fa.mss, fa.rwnd_scale_known, at_sender and vt.vantage == "sender")
    return FlowEvents(
        flow_id=flow_id, sender_dir=fa.sender_dir, mss=fa.mss, vantage=vt.vantage,
        segments=segs, acks=acks, episodes=eps, rounds=rounds,
        rtt_offset_s=vt.offset_ns / 1e9, warnings=warnings,
    )


def _snd_max_ahead(fa, offset_ns: np.ndarray) -> np.ndarray:
    """Receiver-side / mid-path captures: the sender's snd_max when it gets each packet's ACK.

    An ACK that leaves the capture point at ``t`` reaches the sender about ``offset/2`` later;
    what the sender has sent by then reaches the capture point by about ``t + offset`` (offset =
    the sender-side part of the RTT at that moment, :func:`.vantage.dynamic_offsets`). So the
    sender's snd_max at that ACK is estimated as the highest sequence number seen at the capture
    point up to ``t + offset``. Used for the round boundaries and to raise ``outstanding`` and
    ``pipe``; the ``snd_max`` column keeps what was observed.
    """
    n = fa.ts.shape[0]
    seg = fa.snd & ((fa.plen > 0) | ((fa.flags & (core.F_SYN | core.F_FIN)) != 0))
    if not seg.any():
        return np.zeros(n, np.int64)
    ends = fa.seq[seg] + fa.plen[seg] + ((fa.flags[seg] & core.F_SYN) != 0) + ((fa.flags[seg] & core.F_FIN) != 0)
    t_seg = np.maximum.accumulate(fa.ts[seg])
    hi = np.maximum.accumulate(ends)
    j = np.searchsorted(t_seg, fa.ts + offset_ns, side="right") - 1
    return np.where(j >= 0, hi[np.clip(j, 0, None)], 0).astype(np.int64)


_ENUMS: dict[tuple[str, ...], pl.Series] = {}


def _enum(codes: np.ndarray, names: tuple[str, ...]) -> pl.Series:
    """Enum series from integer codes (negative = null), without building strings."""
    cats = _ENUMS.get(names)
    if cats is None:
        cats = _ENUMS[names] = pl.Series(list(names), dtype=pl.Enum(list(names)))
    neg = codes < 0
    if neg.any():
        # a null index gathers a null
        idx = pl.Series(np.where(neg, np.nan, codes).astype(np.float64), nan_to_null=True).cast(pl.UInt32)
        return cats.gather(idx)
    return cats.gather(pl.Series(codes.astype(np.uint32)))


def _opt_float(x: np.ndarray) -> pl.Series:
    """Float64 with NaN as null."""
    return pl.Series(x.astype(np.float64), nan_to_null=True)


def _frame(cols: dict[str, Any], table: tuple[schema.Column, ...]) -> pl.DataFrame:
    """DataFrame in the table's column order and dtypes (numpy columns are cast zero-copy where possible)."""
    out = []
    for c in table:
        v = cols[c.name]
        sr = v.alias(c.name) if isinstance(v, pl.Series) else pl.Series(c.name, v)
        if sr.dtype != c.dtype:
            sr = sr.cast(c.dtype)
        out.append(sr)
    return pl.DataFrame(out)


def _segments(fa, o) -> pl.DataFrame:
    m = o["kind"] >= 0
    syn = ((fa.flags[m] & core.F_SYN) != 0).astype(np.int64)
    fin = ((fa.flags[m] & core.F_FIN) != 0).astype(np.int64)
    seq = fa.seq[m]
    plen = fa.plen[m]
    return _frame({
        "frame": fa.frame[m].astype(np.uint64),
        "ts_ns": fa.ts[m],
        "seq": seq,
        "len": plen.astype(np.uint32),
        "kind": _enum(o["kind"][m], schema.SEGMENT_KINDS),
        "ip_ecn": fa.ecn[m].astype(np.uint8),
        "end_seq": seq + plen + syn + fin,
        "probe": _enum(o["probe"][m], schema.PROBE_KINDS),
        "rexmit": o["rexmit"][m],
        "outstanding": o["seg_out"][m],
        "round": o["seg_round"][m].astype(np.uint32),
    }, schema.SEGMENTS)


def _acks(fa, o, offset_ns: np.ndarray) -> pl.DataFrame:
    m = o["isack"]
    rtt = o["rtt"][m]
    has = rtt >= 0
    return _frame({
        "frame": fa.frame[m].astype(np.uint64),
        "ts_ns": fa.ts[m],
        "ack": o["ackrel"][m],
        "acked_bytes": o["acked"][m],
        "sacked_bytes": o["sacked"][m],
        "dupack": o["dup"][m].astype(np.uint32),
        "rwnd_bytes": o["rwnd"][m],
        "rwnd_scale_known": np.full(int(m.sum()), fa.rwnd_scale_known),
        "ece": (fa.flags[m] & core.F_ECE) != 0,
        "rtt_s": _opt_float(np.where(has, (rtt + offset_ns[m]) / 1e9, np.nan)),
        "rtt_source": _enum(o["rtt_src"][m], schema.RTT_SOURCES),
        "snd_max": o["snd_max"][m],
        "outstanding": o["out"][m],
        "pipe": o["pipe"][m],
        "round": o["round"][m].astype(np.uint32),
        "round_end": o["round_end"][m],
        "state": _enum(o["state"][m], schema.CONG_STATES),
        "cong_event": _enum(o["cong"][m], schema.EPISODE_KINDS),
        "spurious_undo": o["undo"][m],
        "dsack_bytes": o["dsack"][m],
        "rtt_raw_s": _opt_float(np.where(has, rtt / 1e9, np.nan)),
    }, schema.ACKS)


def _episodes(fa, e, n: int) -> pl.DataFrame:
    if n == 0:
        return schema.empty(schema.EPISODES)
    sl = slice(0, n)
    end_i = e["end_i"][sl]
    ended = end_i >= 0
    return _frame({
        "episode": np.arange(n, dtype=np.uint32),
        "kind": _enum(e["kind"][sl].astype(np.int64), schema.EPISODE_KINDS),
        "start_ns": e["start_t"][sl],
        "end_ns": pl.Series(e["end_t"][sl]).set(pl.Series(~ended), None) if not ended.all() else e["end_t"][sl],
        "start_frame": fa.frame[e["start_i"][sl]].astype(np.uint64),
        "flight_bytes": e["flight"][sl],
        "retrans_bytes": e["retx"][sl],
        "recovery_point": e["rp"][sl],
        "end_frame": (pl.Series(fa.frame[np.where(ended, end_i, 0)].astype(np.uint64)).set(pl.Series(~ended), None)
                      if not ended.all() else fa.frame[end_i].astype(np.uint64)),
        "spurious": e["spur"][sl],
    }, schema.EPISODES)


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


def _rounds(fa, o, segs: pl.DataFrame, eps: pl.DataFrame, rtt_off: np.ndarray, mss: int, scale_known: bool,
            clock_test: bool) -> pl.DataFrame:
    m = o["isack"]
    if not m.any():
        return schema.empty(schema.ROUNDS)
    rnd = o["round"][m]
    ts = fa.ts[m]
    starts = np.flatnonzero(np.r_[True, rnd[1:] != rnd[:-1]])
    ends = np.r_[starts[1:], rnd.size] - 1
    rid = rnd[starts]
    out = o["out"][m]
    rtt = np.where(o["rtt"][m] >= 0, (o["rtt"][m] + rtt_off[m]) / 1e9, np.nan)
    ack_peak = np.maximum.reduceat(out, starts)
    acked = np.add.reduceat(o["acked"][m], starts)
    with np.errstate(invalid="ignore"):
        min_rtt = np.fmin.reduceat(rtt, starts)
    rwnd = np.minimum.reduceat(o["rwnd"][m], starts)
    rec = np.maximum.reduceat(((o["state"][m] != core.S_OPEN) | (o["cong"][m] >= 0)).astype(np.int8), starts) > 0
    drained = np.maximum.reduceat((out == 0).astype(np.int8), starts) > 0
    end_ns = ts[ends]
    start_ns = np.r_[ts[0], end_ns[:-1]]
    tgt = o["tgt"][m]
    target = np.r_[tgt[starts[0]], tgt[ends[:-1]]]
    # segment peaks per round
    seg_round = segs.get_column("round").to_numpy().astype(np.int64)
    seg_out = segs.get_column("outstanding").to_numpy()
    peak = ack_peak.copy()
    if seg_round.size:
        ss = np.flatnonzero(np.r_[True, seg_round[1:] != seg_round[:-1]])
        sp = np.maximum.reduceat(seg_out, ss)
        pos = np.searchsorted(rid, seg_round[ss])
        ok = (pos < rid.size) & (rid[np.clip(pos, 0, rid.size - 1)] == seg_round[ss])
        np.maximum.at(peak, pos[ok], sp[ok])
    # ACK clocking (sender-side captures)
    unclocked = np.zeros(rid.size, np.bool_)
    if clock_test and seg_round.size:
        sm = ((segs.get_column("len").to_numpy() > 0) & ~segs.get_column("rexmit").to_numpy()
              & (segs.get_column("probe").to_physical().to_numpy() == 0))
        sf = segs.get_column("frame").to_numpy()[sm]
        st = segs.get_column("ts_ns").to_numpy()[sm]
        sr = seg_round[sm]
        af = fa.frame[m]
        j = np.searchsorted(af, sf) - 1
        valid = j >= 0
        clocked = valid & ((st - ts[np.clip(j, 0, None)]) <= CLOCK_NS)
        pos = np.searchsorted(rid, sr)
        pos = np.clip(pos, 0, rid.size - 1)
        okr = valid & (rid[pos] == sr)
        n_new = np.bincount(pos[okr], minlength=rid.size)
        n_clk = np.bincount(pos[okr], weights=clocked[okr].astype(np.float64), minlength=rid.size)
        unclocked = (n_new >= CLOCK_MIN_SEGMENTS) & (n_clk < 0.5 * n_new)
    if eps.height:
        es = eps.get_column("start_ns").to_numpy()
        ee = eps.get_column("end_ns").fill_null(np.iinfo(np.int64).max).to_numpy()
        for a, b in zip(es, ee):
            rec |= (start_ns < b) & (end_ns >= a)
    lim = _limits(peak, rwnd, rec, drained, unclocked, np.int64(mss), scale_known, APP_FRACTION, APP_LOOKBACK)
    return _frame({
        "round": rid.astype(np.uint32),
        "start_ns": start_ns,
        "end_ns": end_ns,
        "target_seq": target,
        "peak_flight_bytes": peak,
        "acked_bytes": acked,
        "min_rtt_s": _opt_float(min_rtt),
        "rwnd_bytes": rwnd,
        "limit": _enum(lim.astype(np.int64), schema.LIMITS),
        "in_recovery": rec,
    }, schema.ROUNDS)
