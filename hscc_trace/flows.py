"""The TCP flow table: packets → connections (schema.FLOWS), Wireshark's conversation table and more.

A *flow* is one TCP connection. Packets are first grouped into conversations by their unordered
5-tuple; a conversation is split into several connections where a port pair is reused: a SYN
(without ACK) whose sequence number differs from the base sequence number already seen from
that endpoint starts a new connection. This is Wireshark's rule (``packet-tcp.c``: a SYN whose
``th_seq != fwd->base_seq`` creates a new conversation; ``base_seq`` is the first packet's seq,
minus one when that packet is not a SYN), so ``flow_id`` lines up with ``tcp.stream``: both number
connections in order of first packet. A retransmitted SYN (same ISN) stays in its connection.

Endpoint A is the SYN sender; without a SYN, the receiver of the first SYN/ACK; without either,
the source of the first packet. ``dir`` is 0 for A→B.

Per connection, one compiled pass (numba) over its packets in capture order unwraps sequence and
acknowledgment numbers (RFC 9293 modulo-2³² comparison), counts retransmissions (a segment
carrying payload whose sequence space lies below the highest sequence already sent in that
direction — Wireshark's ``tcp.analysis.retransmission`` family, keep-alives excluded), measures
the unique payload each way, and takes RTT samples by data/ACK matching with Karn's rule
(Karn & Partridge 1987; RFC 6298 §3): an ACK that advances the cumulative ACK yields
``t_ack − t_send`` of the newest segment it fully covers, unless any byte it newly covers was
retransmitted. SYN and FIN occupy one sequence number, so the handshake gives a sample too.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from numba import njit

from hscc_trace import schema
from hscc_trace.addr import to_str

SYN, ACK, FIN, RST = 0x02, 0x10, 0x01, 0x04


@njit(cache=True)
def _split_connections(conv, side, flags, seq):
    """Assign a connection id (in order of first packet) to each packet, packets in capture order.

    conv: conversation id per packet (0..nconv-1); side: 0/1 which endpoint of the conversation
    sent the packet. Returns int64 flow ids.
    """
    n = len(conv)
    nconv = 0
    for i in range(n):
        if conv[i] + 1 > nconv:
            nconv = conv[i] + 1
    cur = np.full(nconv, -1, np.int64)
    base = np.zeros((nconv, 2), np.uint32)
    bset = np.zeros((nconv, 2), np.bool_)
    out = np.empty(n, np.int64)
    nxt = 0
    for i in range(n):
        c = conv[i]
        s = side[i]
        is_syn = (flags[i] & 0x12) == 0x02
        if cur[c] < 0:
            cur[c] = nxt
            nxt += 1
        elif is_syn and bset[c, s] and seq[i] != base[c, s]:
            cur[c] = nxt
            nxt += 1
            bset[c, 0] = False
            bset[c, 1] = False
        if not bset[c, s]:
            base[c, s] = seq[i] if (flags[i] & 0x02) else seq[i] - np.uint32(1)
            bset[c, s] = True
        out[i] = cur[c]
    return out


#: per-packet sequence-analysis kinds returned by :func:`_seq_analysis`
KIND_NONE, KIND_RETRANS, KIND_OOO, KIND_KEEPALIVE = 0, 1, 2, 3


@njit(cache=True)
def _seq_analysis(starts, dirs, flags, seq, ack, win, plen, ts):
    """Per-flow, per-direction sequence analysis over packets grouped by flow (capture order within).

    starts: index of each flow's first packet (len nflows+1). Returns
    (unique[nf,2], retrans[nf,2], data_first_ns[nf,2], data_last_ns[nf,2], max_seg[nf,2], rtt[n], kind[n]):
    unique payload bytes (highest end − lowest start), retransmitted data segments, time of the
    first/last segment with payload, largest payload; per packet the RTT sample (s) that this
    ACK gave for the data of the opposite direction (NaN if none) and the segment's KIND_*.

    Classification of a segment that does not advance the highest sequence sent (Wireshark
    ``tcp_analyze_sequence_number``, in its order): keep-alive (≤ 1 byte at next_seq − 1);
    fast retransmission (≥ 2 duplicate ACKs for exactly this seq, last ACK < 20 ms ago);
    out-of-order (< one initial RTT — or 3 ms without handshake — after the highest segment,
    and not ending exactly at the highest sequence); otherwise a (spurious) retransmission.
    """
    n = len(dirs)
    nf = len(starts) - 1
    unique = np.zeros((nf, 2), np.int64)
    retrans = np.zeros((nf, 2), np.int64)
    dfirst = np.full((nf, 2), -1, np.int64)
    dlast = np.full((nf, 2), -1, np.int64)
    maxseg = np.zeros((nf, 2), np.int64)
    rtt = np.full(n, np.nan)
    kind = np.zeros(n, np.uint8)
    # queues of sent-but-unacked new segments, per direction (reused across flows)
    q_end = np.empty((2, n), np.int64)
    q_ts = np.empty((2, n), np.int64)
    q_flag = np.empty((2, n), np.bool_)
    for f in range(nf):
        seq_set = np.zeros(2, np.bool_)
        last_raw = np.zeros(2, np.uint32)
        base = np.zeros(2, np.uint32)
        last_u = np.zeros(2, np.int64)
        max_end = np.zeros(2, np.int64)  # Wireshark's nextseq (highest seq + len sent), relative
        max_end_ts = np.zeros(2, np.int64)
        min_data = np.full(2, np.iinfo(np.int64).max, np.int64)
        max_data = np.full(2, np.iinfo(np.int64).min, np.int64)
        sent = np.zeros(2, np.bool_)
        # ACK state indexed by the data direction being acknowledged
        ack_set = np.zeros(2, np.bool_)
        ack_raw = np.zeros(2, np.uint32)
        ack_u = np.zeros(2, np.int64)  # last ACK value (unwrapped, relative to base of that data)
        ack_ts = np.zeros(2, np.int64)
        hi_ack = np.zeros(2, np.int64)
        dup = np.zeros(2, np.int64)
        lastwin = np.full(2, -1, np.int64)
        qh = np.zeros(2, np.int64)
        qt = np.zeros(2, np.int64)
        mru_syn = np.int64(-1)
        first_rtt = np.int64(0)
        for i in range(starts[f], starts[f + 1]):
            d = dirs[i]
            o = 1 - d
            fl = flags[i]
            t = ts[i]
            if (fl & 0x12) == 0x02:
                mru_syn = t
            elif (fl & 0x12) == 0x10 and mru_syn >= 0 and first_rtt == 0:
                first_rtt = t - mru_syn
            # ---- this packet as data of direction d
            if not seq_set[d]:
                seq_set[d] = True
                base[d] = seq[i]
                last_raw[d] = seq[i]
                last_u[d] = 0
                u = np.int64(0)
            else:
                u = last_u[d] + np.int64(np.int32(seq[i] - last_raw[d]))
                last_raw[d] = seq[i]
                last_u[d] = u
            ln = np.int64(plen[i])
            sl = ln + (1 if fl & 0x02 else 0) + (1 if fl & 0x01 else 0)
            # ---- duplicate-ACK bookkeeping (this packet as an ACK of o's data), before it updates
            if (fl & 0x10) and seq_set[o] and ack_set[o]:
                a_new = ack_u[o] + np.int64(np.int32(ack[i] - ack_raw[o]))
                if (ln == 0 and win[i] != 0 and np.int64(win[i]) == lastwin[d] and u == max_end[d]
                        and a_new == ack_u[o] and (fl & 0x07) == 0):
                    dup[o] += 1
                elif a_new != ack_u[o]:
                    dup[o] = 0
            if sl > 0 and not (fl & 0x04):
                e = u + sl
                if ln > 0:
                    if dfirst[f, d] < 0:
                        dfirst[f, d] = t
                    dlast[f, d] = t
                    if ln > maxseg[f, d]:
                        maxseg[f, d] = ln
                    if u < min_data[d]:
                        min_data[d] = u
                    if u + ln > max_data[d]:
                        max_data[d] = u + ln
                not_adv = sent[d] and u < max_end[d]  # (part of) this sequence space was sent before
                k_ = KIND_NONE
                if sent[d] and ln <= 1 and u == max_end[d] - 1 and (fl & 0x07) == 0:
                    k_ = KIND_KEEPALIVE
                else:
                    if ln > 1 and u == max_end[d] - 1:  # after a zero-window probe: new data
                        not_adv = False
                    if ln > 0 and ack_set[d] and u + ln <= ack_u[d]:
                        k_ = KIND_RETRANS  # spurious: already acknowledged
                    elif not_adv and dup[d] >= 2 and ack_u[d] == u and t - ack_ts[d] < 20000000:
                        k_ = KIND_RETRANS  # fast retransmission
                    elif not_adv and 0 <= t - max_end_ts[d] < (first_rtt if first_rtt > 0 else 3000000) and max_end[d] != e:
                        k_ = KIND_OOO
                    elif not_adv:
                        k_ = KIND_RETRANS
                kind[i] = k_
                if k_ == KIND_RETRANS and ln > 0:
                    retrans[f, d] += 1
                if k_ == KIND_RETRANS or k_ == KIND_OOO:
                    # Karn: queued segments overlapping [u, e) become ambiguous
                    k = qh[d] + np.searchsorted(q_end[d, qh[d]:qt[d]], u, side="right")
                    while k < qt[d]:
                        q_flag[d, k] = True
                        if q_end[d, k] >= e:
                            break
                        k += 1
                if not sent[d] or e > max_end[d]:
                    q_end[d, qt[d]] = e
                    q_ts[d, qt[d]] = t
                    q_flag[d, qt[d]] = bool(sent[d] and u < max_end[d])  # partly re-sent: ambiguous
                    qt[d] += 1
            # Wireshark's nextseq advances on any packet (pure ACKs too) that ends beyond it
            e_any = u + sl
            if not sent[d] or e_any > max_end[d]:
                max_end[d] = e_any
                max_end_ts[d] = t
            sent[d] = True
            lastwin[d] = np.int64(win[i])
            # ---- this packet as an ACK for the data of direction o
            if (fl & 0x10) and seq_set[o]:
                if not ack_set[o]:
                    ack_set[o] = True
                    a = np.int64(np.int32(ack[i] - base[o]))
                    hi_ack[o] = a
                    ack_raw[o] = ack[i]
                    ack_u[o] = a
                    ack_ts[o] = t
                    # segments at or below the first ACK seen are not timed
                    while qh[o] < qt[o] and q_end[o, qh[o]] <= a:
                        qh[o] += 1
                else:
                    a = ack_u[o] + np.int64(np.int32(ack[i] - ack_raw[o]))
                    ack_raw[o] = ack[i]
                    ack_u[o] = a
                    ack_ts[o] = t
                    if a > hi_ack[o]:
                        hi_ack[o] = a
                        last = -1
                        amb = False
                        while qh[o] < qt[o] and q_end[o, qh[o]] <= a:
                            last = qh[o]
                            if q_flag[o, qh[o]]:
                                amb = True
                            qh[o] += 1
                        if last >= 0 and not amb:
                            rtt[i] = (t - q_ts[o, last]) * 1e-9
        for d in range(2):
            if min_data[d] < max_data[d]:
                unique[f, d] = max_data[d] - min_data[d]
    return unique, retrans, dfirst, dlast, maxseg, rtt, kind


def _endpoint_side(packets: pl.DataFrame) -> pl.Series:
    """0 if (src, sport) sorts before (dst, dport), else 1 — the packet's side in its conversation."""
    s = packets
    lt = (pl.col("src_hi") < pl.col("dst_hi")) | (
        (pl.col("src_hi") == pl.col("dst_hi"))
        & ((pl.col("src_lo") < pl.col("dst_lo")) | ((pl.col("src_lo") == pl.col("dst_lo")) & (pl.col("sport") <= pl.col("dport"))))
    )
    return s.select((~lt).cast(pl.UInt8).alias("side")).to_series()


def build_flows(packets: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Assign ``flow_id`` and ``dir`` to every packet and build the flow table.

    ``packets`` follows schema.PACKETS (``flow_id``/``dir`` may be absent or stale) in capture
    order. Returns (packets conforming to schema.PACKETS, flows conforming to schema.FLOWS).
    """
    cols = [c.name for c in schema.PACKETS if c.name not in ("flow_id", "dir")]
    pk = packets.select(cols)
    if pk.height == 0:
        return schema.conform(pk.with_columns(flow_id=pl.lit(0, pl.UInt32), dir=pl.lit(0, pl.UInt8)), schema.PACKETS), schema.empty(schema.FLOWS)
    if not pk["frame"].is_sorted():
        pk = pk.sort("frame")
    side = _endpoint_side(pk)
    pk = pk.with_columns(side)
    lo_hi = pl.when(pl.col("side") == 0)
    keys = pk.select(
        lo_hi.then(pl.col("src_hi")).otherwise(pl.col("dst_hi")).alias("k0"),
        lo_hi.then(pl.col("src_lo")).otherwise(pl.col("dst_lo")).alias("k1"),
        lo_hi.then(pl.col("sport")).otherwise(pl.col("dport")).alias("k2"),
        lo_hi.then(pl.col("dst_hi")).otherwise(pl.col("src_hi")).alias("k3"),
        lo_hi.then(pl.col("dst_lo")).otherwise(pl.col("src_lo")).alias("k4"),
        lo_hi.then(pl.col("dport")).otherwise(pl.col("sport")).alias("k5"),
    )
    conv = keys.select(pl.struct(pl.all()).rank("dense").alias("c")).to_series().to_numpy().astype(np.int64) - 1
    fid = _split_connections(conv, pk["side"].to_numpy(), pk["flags"].to_numpy(), pk["seq"].to_numpy())
    pk = pk.with_columns(pl.Series("flow_id", fid, pl.UInt32))

    # endpoint A per flow: first pure SYN's sender; else first SYN/ACK's receiver; else first source
    f = pl.col("flags")
    a_side = (
        pk.group_by("flow_id")
        .agg(
            pl.col("side").filter((f & 0x12) == 0x02).first().alias("syn_side"),
            (1 - pl.col("side").filter((f & 0x12) == 0x12).first()).alias("synack_side"),
            pl.col("side").first().alias("first_side"),
        )
        .select("flow_id", pl.coalesce("syn_side", "synack_side", "first_side").cast(pl.UInt8).alias("a_side"))
    )
    pk = pk.join(a_side, on="flow_id", how="left", maintain_order="left")
    pk = pk.with_columns((pl.col("side") != pl.col("a_side")).cast(pl.UInt8).alias("dir")).drop("side", "a_side")
    packets_out = schema.conform(pk, schema.PACKETS)
    return packets_out, _flow_table(packets_out)


def _flow_table(pk: pl.DataFrame) -> pl.DataFrame:
    """schema.FLOWS from packets carrying flow_id and dir."""
    order = pk.select(pl.arg_sort_by("flow_id", "frame")).to_series().to_numpy()
    srt = pk[order] if not pk["flow_id"].is_sorted() else pk
    fidv = srt["flow_id"].to_numpy()
    nf = int(fidv.max()) + 1
    starts = np.searchsorted(fidv, np.arange(nf + 1)).astype(np.int64)
    unique, retrans, dfirst, dlast, maxseg, rtt, _kind = _seq_analysis(
        starts, srt["dir"].to_numpy(), srt["flags"].to_numpy(), srt["seq"].to_numpy(), srt["ack"].to_numpy(),
        srt["win"].to_numpy(), srt["payload_len"].to_numpy(), srt["ts_ns"].to_numpy(),
    )
    f = pl.col("flags")
    d0 = pl.col("dir") == 0
    d1 = pl.col("dir") == 1
    syn0 = ((f & 0x12) == 0x02) & d0  # SYN from A
    syn1 = ((f & 0x12) == 0x12) & d1  # SYN/ACK from B
    anysyn_a = ((f & 0x02) != 0) & d0
    anysyn_b = ((f & 0x02) != 0) & d1
    agg = (
        srt.with_columns(pl.Series("rtt_ab", rtt).fill_nan(None))  # sample from an ACK in dir d for data of the other dir
        .group_by("flow_id", maintain_order=True)
        .agg(
            pl.col("src_hi").filter(d0).first().alias("a_hi"),
            pl.col("src_lo").filter(d0).first().alias("a_lo"),
            pl.col("sport").filter(d0).first().alias("a_port"),
            pl.col("dst_hi").filter(d0).first().alias("b_hi"),
            pl.col("dst_lo").filter(d0).first().alias("b_lo"),
            pl.col("dport").filter(d0).first().alias("b_port"),
            pl.col("dst_hi").filter(d1).first().alias("a_hi1"),
            pl.col("dst_lo").filter(d1).first().alias("a_lo1"),
            pl.col("dport").filter(d1).first().alias("a_port1"),
            pl.col("src_hi").filter(d1).first().alias("b_hi1"),
            pl.col("src_lo").filter(d1).first().alias("b_lo1"),
            pl.col("sport").filter(d1).first().alias("b_port1"),
            pl.col("ip_version").first(),
            pl.col("ts_ns").min().alias("first_ns"),
            pl.col("ts_ns").max().alias("last_ns"),
            d0.sum().alias("pkts_ab"),
            pl.col("wire_len").filter(d0).sum().alias("bytes_ab"),
            d1.sum().alias("pkts_ba"),
            pl.col("wire_len").filter(d1).sum().alias("bytes_ba"),
            pl.col("payload_len").filter(d0).sum().alias("payload_ab"),
            pl.col("payload_len").filter(d1).sum().alias("payload_ba"),
            pl.col("opt_mss").filter(anysyn_a).drop_nulls().first().alias("mss_a"),
            pl.col("opt_mss").filter(anysyn_b).drop_nulls().first().alias("mss_b"),
            pl.col("opt_wscale").filter(anysyn_a).drop_nulls().first().alias("ws_a"),
            pl.col("opt_wscale").filter(anysyn_b).drop_nulls().first().alias("ws_b"),
            pl.col("opt_sack_perm").filter(anysyn_a).any().alias("sp_a"),
            pl.col("opt_sack_perm").filter(anysyn_b).any().alias("sp_b"),
            pl.col("opt_tsval").filter(anysyn_a).is_not_null().any().alias("ts_a"),
            pl.col("opt_tsval").filter(anysyn_b).is_not_null().any().alias("ts_b"),
            anysyn_a.any().alias("syn_a_seen"),
            anysyn_b.any().alias("syn_b_seen"),
            syn0.any().alias("has_syn"),
            syn1.any().alias("has_synack"),
            ((f & RST) != 0).any().alias("has_rst"),
            ((f & FIN) != 0).any().alias("has_fin"),
            pl.col("ts_ns").filter(syn0).first().alias("t_syn"),
            pl.col("ts_ns").filter(syn1).first().alias("t_synack"),
            pl.col("rtt_ab").filter(d1).min().alias("rtt0_min"),  # ACKs from B time A's data
            pl.col("rtt_ab").filter(d1).median().alias("rtt0_med"),
            pl.col("rtt_ab").filter(d1).max().alias("rtt0_max"),
            pl.col("rtt_ab").filter(d0).min().alias("rtt1_min"),
            pl.col("rtt_ab").filter(d0).median().alias("rtt1_med"),
            pl.col("rtt_ab").filter(d0).max().alias("rtt1_max"),
        )
    )
    # handshake third packet: first A→B ACK (no SYN) after the SYN/ACK
    third = (
        srt.select("flow_id", "ts_ns", "dir", "flags")
        .join(agg.select("flow_id", "t_synack"), on="flow_id")
        .filter((pl.col("dir") == 0) & ((f & 0x12) == 0x10) & (pl.col("ts_ns") >= pl.col("t_synack")))
        .group_by("flow_id")
        .agg(pl.col("ts_ns").min().alias("t_ack3"))
    )
    agg = agg.join(third, on="flow_id", how="left", maintain_order="left")
    fids = agg["flow_id"].to_numpy().astype(np.int64)
    sender = (unique[fids, 1] > unique[fids, 0]).astype(np.uint8)
    u_s = unique[fids, sender]
    first_s = dfirst[fids, sender]
    last_s = dlast[fids, sender]
    dur_s = (last_s - first_s) * 1e-9
    with np.errstate(divide="ignore", invalid="ignore"):
        goodput = np.where((first_s >= 0) & (dur_s > 0), u_s * 8.0 / dur_s, np.nan)
    agg = agg.with_columns(
        pl.Series("sender_dir", sender, pl.UInt8),
        pl.Series("goodput_bps", goodput, pl.Float64).fill_nan(None),
        pl.Series("retrans", retrans[fids, sender], pl.UInt64),
        pl.Series("maxseg", maxseg[fids, sender], pl.Int64),
    )
    s0 = pl.col("sender_dir") == 0
    # receiver's announced MSS limits the sender; without it, the largest segment seen
    ann = pl.when(s0).then(pl.col("mss_b")).otherwise(pl.col("mss_a")).cast(pl.Int64)
    seen = pl.when(pl.col("maxseg") > 0).then(pl.col("maxseg"))
    mss = pl.min_horizontal(ann, seen)
    g1 = (pl.col("t_synack") - pl.col("t_syn")).cast(pl.Float64)
    g2 = (pl.col("t_ack3") - pl.col("t_synack")).cast(pl.Float64)
    near_a = g2 * 4 < g1
    near_b = g1 * 4 < g2
    vantage = (
        pl.when(pl.col("t_syn").is_null() | pl.col("t_synack").is_null() | pl.col("t_ack3").is_null() | (g1 < 0))
        .then(pl.lit("unknown"))
        .when(near_a)
        .then(pl.when(s0).then(pl.lit("sender")).otherwise(pl.lit("receiver")))
        .when(near_b)
        .then(pl.when(s0).then(pl.lit("receiver")).otherwise(pl.lit("sender")))
        .otherwise(pl.lit("mid-path"))
    )
    out = agg.with_columns(
        pl.coalesce("a_hi", "a_hi1").alias("a_hi"),
        pl.coalesce("a_lo", "a_lo1").alias("a_lo"),
        pl.coalesce("a_port", "a_port1").alias("sport"),
        pl.coalesce("b_hi", "b_hi1").alias("b_hi"),
        pl.coalesce("b_lo", "b_lo1").alias("b_lo"),
        pl.coalesce("b_port", "b_port1").alias("dport"),
        ((pl.col("last_ns") - pl.col("first_ns")) * 1e-9).alias("duration_s"),
        mss.alias("mss"),
        pl.col("ws_a").cast(pl.Int8).fill_null(-1).alias("wscale_a"),
        pl.col("ws_b").cast(pl.Int8).fill_null(-1).alias("wscale_b"),
        (pl.col("sp_a") & pl.col("sp_b")).fill_null(False).alias("sack_ok"),
        (pl.col("ts_a") & pl.col("ts_b")).fill_null(False).alias("ts_ok"),
        (pl.col("has_syn") & pl.col("has_synack")).alias("handshake"),
        pl.when(pl.col("has_rst")).then(pl.lit("rst")).when(pl.col("has_fin")).then(pl.lit("fin")).otherwise(pl.lit("open")).alias("closed"),
        pl.when(s0).then(pl.col("rtt0_min")).otherwise(pl.col("rtt1_min")).alias("rtt_min_s"),
        pl.when(s0).then(pl.col("rtt0_med")).otherwise(pl.col("rtt1_med")).alias("rtt_median_s"),
        pl.when(s0).then(pl.col("rtt0_max")).otherwise(pl.col("rtt1_max")).alias("rtt_max_s"),
        vantage.alias("vantage"),
    )
    names = _addr_strings(out)
    out = out.with_columns(pl.Series("src", names[0], pl.String), pl.Series("dst", names[1], pl.String))
    return schema.conform(out, schema.FLOWS)


def _addr_strings(flows: pl.DataFrame) -> tuple[list[str], list[str]]:
    ver = flows["ip_version"].to_list()
    src = [to_str(h, l, v) for h, l, v in zip(flows["a_hi"].to_list(), flows["a_lo"].to_list(), ver)]
    dst = [to_str(h, l, v) for h, l, v in zip(flows["b_hi"].to_list(), flows["b_lo"].to_list(), ver)]
    return src, dst
