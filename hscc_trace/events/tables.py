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
        "round": np.zeros(n, np.int64), "round_end": np.empty(n, np.bool_), "state": np.zeros(n, np.int8),
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
        o["round"], o["round_end"], o["state"], o["cong"], o["undo"],
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
    rounds = _rounds(acks, segs, eps, fa.mss, fa.rwnd_scale_known, at_sender and vt.vantage == "sender")
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


def _segments(fa, o) -> pl.DataFrame:
    m = o["kind"] >= 0
    syn = ((fa.flags[m] & core.F_SYN) != 0).astype(np.int64)
    fin = ((fa.flags[m] & core.F_FIN) != 0).astype(np.int64)
    df = pl.DataFrame({
        "frame": fa.frame[m],
        "ts_ns": fa.ts[m],
        "seq": fa.seq[m],
        "len": fa.plen[m],
        "kind": pl.Series(np.asarray(schema.SEGMENT_KINDS)[o["kind"][m]], dtype=pl.String),
        "ip_ecn": fa.ecn[m],
        "end_seq": fa.seq[m] + fa.plen[m] + syn + fin,
        "probe": pl.Series(np.asarray(schema.PROBE_KINDS)[o["probe"][m]], dtype=pl.String),
        "rexmit": o["rexmit"][m],
        "outstanding": o["seg_out"][m],
        "round": o["seg_round"][m],
    })
    return schema.conform(df, schema.SEGMENTS)


def _acks(fa, o, offset_ns: np.ndarray) -> pl.DataFrame:
    m = o["isack"]
    rtt = o["rtt"][m]
    has = rtt >= 0
    src = o["rtt_src"][m]
    cong = o["cong"][m]
    df = pl.DataFrame({
        "frame": fa.frame[m],
        "ts_ns": fa.ts[m],
        "ack": o["ackrel"][m],
        "acked_bytes": o["acked"][m],
        "sacked_bytes": o["sacked"][m],
        "dupack": o["dup"][m],
        "rwnd_bytes": o["rwnd"][m],
        "rwnd_scale_known": np.full(int(m.sum()), fa.rwnd_scale_known),
        "ece": (fa.flags[m] & core.F_ECE) != 0,
        "rtt_s": pl.Series(np.where(has, (rtt + offset_ns[m]) / 1e9, np.nan)).fill_nan(None),
        "rtt_source": pl.Series(np.asarray(schema.RTT_SOURCES + ("",))[src], dtype=pl.String).replace("", None),
        "snd_max": o["snd_max"][m],
        "outstanding": o["out"][m],
        "pipe": o["pipe"][m],
        "round": o["round"][m],
        "round_end": o["round_end"][m],
        "state": pl.Series(np.asarray(schema.CONG_STATES)[o["state"][m]], dtype=pl.String),
        "cong_event": pl.Series(np.asarray(schema.EPISODE_KINDS + ("",))[cong], dtype=pl.String).replace("", None),
        "spurious_undo": o["undo"][m],
        "dsack_bytes": o["dsack"][m],
        "rtt_raw_s": pl.Series(np.where(has, rtt / 1e9, np.nan)).fill_nan(None),
    })
    return schema.conform(df, schema.ACKS)


def _episodes(fa, e, n: int) -> pl.DataFrame:
    if n == 0:
        return schema.empty(schema.EPISODES)
    sl = slice(0, n)
    end_i = e["end_i"][sl]
    ended = end_i >= 0
    df = pl.DataFrame({
        "episode": np.arange(n),
        "kind": pl.Series(np.asarray(schema.EPISODE_KINDS)[e["kind"][sl]], dtype=pl.String),
        "start_ns": e["start_t"][sl],
        "end_ns": pl.Series(np.where(ended, e["end_t"][sl], 0)),
        "start_frame": fa.frame[e["start_i"][sl]],
        "flight_bytes": e["flight"][sl],
        "retrans_bytes": e["retx"][sl],
        "recovery_point": e["rp"][sl],
        "end_frame": pl.Series(fa.frame[np.where(ended, end_i, 0)]),
        "spurious": e["spur"][sl],
        "_ended": ended,
    }).with_columns(
        pl.when(pl.col("_ended")).then(pl.col("end_ns")).otherwise(None).alias("end_ns"),
        pl.when(pl.col("_ended")).then(pl.col("end_frame")).otherwise(None).alias("end_frame"),
    )
    return schema.conform(df, schema.EPISODES)


def _rounds(acks: pl.DataFrame, segs: pl.DataFrame, eps: pl.DataFrame, mss: int, scale_known: bool,
            clock_test: bool) -> pl.DataFrame:
    if acks.height == 0:
        return schema.empty(schema.ROUNDS)
    a = acks.group_by("round").agg(
        pl.col("ts_ns").first().alias("first_ack_ns"),
        pl.col("ts_ns").last().alias("end_ns"),
        pl.col("outstanding").max().alias("ack_peak"),
        pl.col("acked_bytes").sum().alias("acked_bytes"),
        pl.col("rtt_s").min().alias("min_rtt_s"),
        pl.col("rwnd_bytes").min().alias("rwnd_bytes"),
        (pl.col("state") != "open").any().alias("rec_state"),
        pl.col("cong_event").is_not_null().any().alias("rec_event"),
        (pl.col("outstanding") == 0).any().alias("drained"),
        pl.col("round_end").any().alias("closed"),
        pl.col("ack").first().alias("first_ack"),
        pl.col("snd_max").first().alias("first_snd_max"),
    )
    s = segs.group_by("round").agg(pl.col("outstanding").max().alias("seg_peak"))
    if clock_test:
        newseg = segs.filter((pl.col("len") > 0) & ~pl.col("rexmit") & (pl.col("probe") == "none")).sort("frame")
        last_ack = acks.select(pl.col("frame").alias("ack_frame"), pl.col("ts_ns").alias("ack_ns")).sort("ack_frame")
        # segments sent before the first ACK (initial window) say nothing about ACK clocking
        ck = (newseg.join_asof(last_ack, left_on="frame", right_on="ack_frame", strategy="backward")
              .filter(pl.col("ack_ns").is_not_null())
              .with_columns(((pl.col("ts_ns") - pl.col("ack_ns")) <= CLOCK_NS).alias("clocked"))
              .group_by("round").agg(pl.col("clocked").mean().alias("clocked_frac"), pl.len().alias("n_new")))
        s = s.join(ck, on="round", how="left")
    else:
        s = s.with_columns(pl.lit(None, pl.Float64).alias("clocked_frac"), pl.lit(0, pl.UInt32).alias("n_new"))
    r = a.join(s, on="round", how="left").sort("round")
    # a round opens at the ACK that closed the previous one (the first ACK for round 0)
    r = r.with_columns(
        pl.col("end_ns").shift(1).fill_null(pl.col("first_ack_ns")).alias("start_ns"),
        pl.max_horizontal(pl.col("ack_peak"), pl.col("seg_peak").fill_null(0)).alias("peak_flight_bytes"),
    )
    # target: snd_max when the round began (recorded on the closing ACK of the previous round)
    closing = acks.filter(pl.col("round_end")).select(
        (pl.col("round") + 1).alias("round"), pl.col("snd_max").alias("target_seq"))
    r = r.join(closing.with_columns(pl.col("round").cast(r.schema["round"])), on="round", how="left").with_columns(
        pl.col("target_seq").fill_null(pl.col("first_snd_max")))
    # limit classification (module docstring)
    peak = r.get_column("peak_flight_bytes").to_numpy()
    rw = r.get_column("rwnd_bytes").to_numpy()
    rec = (r.get_column("rec_state") | r.get_column("rec_event")).to_numpy()
    drained = r.get_column("drained").to_numpy()
    unclocked = ((r.get_column("n_new").fill_null(0) >= CLOCK_MIN_SEGMENTS)
                 & (r.get_column("clocked_frac").fill_null(1.0) < 0.5)).to_numpy()
    start = r.get_column("start_ns").to_numpy()
    end = r.get_column("end_ns").to_numpy()
    if eps.height:
        es = eps.get_column("start_ns").to_numpy()
        ee = eps.get_column("end_ns").fill_null(np.iinfo(np.int64).max).to_numpy()
        for k in range(len(start)):
            if ((es <= end[k]) & (ee > start[k])).any():
                rec[k] = True
    limits = []
    ref_hist: list[int] = []
    for k in range(len(peak)):
        if rec[k]:
            limits.append("cwnd")
            ref_hist = []
            continue
        if rw[k] == 0 or (scale_known and peak[k] >= rw[k] - mss):
            limits.append("rwnd")
        elif drained[k] or unclocked[k] or (ref_hist and peak[k] < APP_FRACTION * max(ref_hist[-APP_LOOKBACK:])):
            limits.append("app")
        else:
            limits.append("cwnd")
        ref_hist.append(int(peak[k]))
    r = r.with_columns(
        pl.Series("limit", limits, dtype=pl.String),
        pl.Series("in_recovery", rec),
    )
    return schema.conform(r, schema.ROUNDS)
