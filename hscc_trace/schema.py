"""The single source of truth for every table hscc-trace produces.

Each table is a tuple of :class:`Column` (name, polars dtype, unit, meaning). Code builds
DataFrames with :func:`empty` / :func:`conform` and documents them with :func:`markdown`;
docs/schema.md is generated from this module (``python -m hscc_trace.schema > docs/schema.md``).

Conventions (all tables):

* times are ``Int64`` nanoseconds since the Unix epoch (``*_ns``) or ``Float64`` seconds for
  durations and RTTs (``*_s``);
* sequence numbers in event streams are ``Int64`` bytes, unwrapped to 64 bits and relative to
  the data sender's ISN (the first payload byte is 1 when the SYN was seen, as in Wireshark);
* windows handed to and produced by replay are ``Float64`` MSS-sized packets (``*_pkts``);
* ``dir`` is 0 for packets from endpoint A (the connection initiator, i.e. the SYN sender, or
  the first-seen source when the handshake was not captured) to endpoint B, 1 for B → A.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import polars as pl


@dataclass(frozen=True)
class Column:
    name: str
    dtype: pl.DataType | type[pl.DataType]
    unit: str
    doc: str


# Enumerations shared by several tables ------------------------------------------------------

SEGMENT_KINDS = (
    "new",  # first transmission of these bytes
    "retransmission",  # tcp.analysis.retransmission (RTO or other)
    "fast_retransmission",  # tcp.analysis.fast_retransmission (after >= 3 dup ACKs)
    "spurious_retransmission",  # tcp.analysis.spurious_retransmission (bytes already ACKed)
    "out_of_order",  # tcp.analysis.out_of_order (below highest seq, never seen, soon after)
)
SegmentKind = pl.Enum(list(SEGMENT_KINDS))

PROBE_KINDS = (
    "none",
    "keepalive",  # tcp.analysis.keep_alive: 0/1 byte at snd_max - 1 (never a retransmission)
    "zero_window_probe",  # tcp.analysis.zero_window_probe: 1 byte at snd_max while rwnd == 0
)
ProbeKind = pl.Enum(list(PROBE_KINDS))

RTT_SOURCES = ("seq", "ts")  # data/ACK matching (Karn-safe) or TCP timestamp echo
RttSource = pl.Enum(list(RTT_SOURCES))

CONG_STATES = ("open", "recovery", "loss")  # Linux TCP_CA_Open/Recovery/Loss (Disorder/CWR folded into open)
CongState = pl.Enum(list(CONG_STATES))

EPISODE_KINDS = ("fast_retransmit", "sack_recovery", "rto", "ecn")
EpisodeKind = pl.Enum(list(EPISODE_KINDS))

LIMITS = ("cwnd", "rwnd", "app")  # what limited the sender in an RTT round
Limit = pl.Enum(list(LIMITS))

VANTAGES = ("sender", "receiver", "mid-path", "unknown")
Vantage = pl.Enum(list(VANTAGES))
#: how a flow's RTT was measured (docs/flows.md): at the sender data → ACK; away from it from
#: the receiver's packet that released a segment to the ACK of it, through the timestamp echo or
#: through ACK → next-flight round trips
RTT_METHODS = ("data-ack", "ts-echo", "ack-to-data")
RttMethod = pl.Enum(list(RTT_METHODS))


# Packets: one row per decoded TCP packet (hscc_trace.capture) -------------------------------

PACKETS: tuple[Column, ...] = (
    Column("frame", pl.UInt64, "", "1-based frame number in the capture file (as Wireshark)"),
    Column("ts_ns", pl.Int64, "ns", "capture timestamp, ns since the Unix epoch"),
    Column("iface", pl.UInt16, "", "pcapng interface id (0 for pcap)"),
    Column("wire_len", pl.UInt32, "bytes", "original frame length on the wire"),
    Column("cap_len", pl.UInt32, "bytes", "bytes captured (snaplen-limited)"),
    Column("ip_version", pl.UInt8, "", "4 or 6"),
    Column("src_hi", pl.UInt64, "", "source address, high 64 bits (IPv4 as ::ffff:a.b.c.d)"),
    Column("src_lo", pl.UInt64, "", "source address, low 64 bits"),
    Column("dst_hi", pl.UInt64, "", "destination address, high 64 bits"),
    Column("dst_lo", pl.UInt64, "", "destination address, low 64 bits"),
    Column("ip_id", pl.UInt32, "", "IPv4 identification (null for IPv6)"),
    Column("ip_ttl", pl.UInt8, "", "IPv4 TTL / IPv6 hop limit"),
    Column("ip_ecn", pl.UInt8, "", "IP ECN field (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE)"),
    Column("sport", pl.UInt16, "", "TCP source port"),
    Column("dport", pl.UInt16, "", "TCP destination port"),
    Column("seq", pl.UInt32, "", "raw TCP sequence number"),
    Column("ack", pl.UInt32, "", "raw TCP acknowledgment number"),
    Column("flags", pl.UInt16, "", "TCP flags incl. NS(0x100) CWR(0x80) ECE(0x40) URG ACK PSH RST SYN FIN"),
    Column("win", pl.UInt16, "", "raw (unscaled) TCP window field"),
    Column("tcp_hlen", pl.UInt8, "bytes", "TCP header length incl. options"),
    Column("payload_len", pl.UInt32, "bytes", "TCP payload length from the IP length (not snaplen-limited)"),
    Column("truncated", pl.Boolean, "", "the captured bytes stop inside the TCP header or payload"),
    Column("opt_mss", pl.UInt16, "bytes", "MSS option (null if absent)"),
    Column("opt_wscale", pl.UInt8, "", "window-scale shift option (null if absent)"),
    Column("opt_sack_perm", pl.Boolean, "", "SACK-permitted option present"),
    Column("opt_tsval", pl.UInt32, "", "timestamp option TSval (null if absent)"),
    Column("opt_tsecr", pl.UInt32, "", "timestamp option TSecr (null if absent)"),
    Column("sack_n", pl.UInt8, "", "number of SACK blocks carried (0-4)"),
    *(
        Column(
            f"sack_{e}{i}",
            pl.UInt32,
            "",
            f"SACK block {i} {'left' if e == 'l' else 'right'} edge, raw (null if absent)",
        )
        for i in range(4)
        for e in ("l", "r")
    ),
    Column("decoder", pl.UInt8, "", "0 = vectorized fast path, 1 = scapy fallback"),
    Column("flow_id", pl.UInt32, "", "TCP connection this packet belongs to (see FLOWS)"),
    Column("dir", pl.UInt8, "", "0 = A→B (initiator to responder), 1 = B→A"),
)


# Flows: one row per TCP connection (hscc_trace.flows.tracker) ---------------------------------------

FLOWS: tuple[Column, ...] = (
    Column("flow_id", pl.UInt32, "", "connection id, in order of first packet"),
    Column("src", pl.String, "", "endpoint A address (initiator; first-seen source without handshake)"),
    Column("sport", pl.UInt16, "", "endpoint A port"),
    Column("dst", pl.String, "", "endpoint B address"),
    Column("dport", pl.UInt16, "", "endpoint B port"),
    Column("ip_version", pl.UInt8, "", "4 or 6"),
    Column("first_ns", pl.Int64, "ns", "timestamp of the first packet"),
    Column("last_ns", pl.Int64, "ns", "timestamp of the last packet"),
    Column("duration_s", pl.Float64, "s", "last − first packet time"),
    Column("pkts_ab", pl.UInt64, "packets", "packets A→B"),
    Column("bytes_ab", pl.UInt64, "bytes", "frame bytes A→B (wire length, as tshark conv)"),
    Column("pkts_ba", pl.UInt64, "packets", "packets B→A"),
    Column("bytes_ba", pl.UInt64, "bytes", "frame bytes B→A"),
    Column("payload_ab", pl.UInt64, "bytes", "TCP payload bytes A→B (incl. retransmissions)"),
    Column("payload_ba", pl.UInt64, "bytes", "TCP payload bytes B→A"),
    Column("sender_dir", pl.UInt8, "", "direction carrying most unique payload (0 = A→B, 1 = B→A)"),
    Column("goodput_bps", pl.Float64, "bit/s", "unique payload bytes of the data sender · 8 / data duration"),
    Column("mss", pl.UInt32, "bytes", "data sender's effective MSS: min(announced by receiver, largest segment seen)"),
    Column(
        "wscale_a",
        pl.Int8,
        "",
        "window-scale shift announced by A as used: above 14 counts as 14, RFC 7323 §2.3 (−1 = unknown)",
    ),
    Column(
        "wscale_b",
        pl.Int8,
        "",
        "window-scale shift announced by B as used: above 14 counts as 14, RFC 7323 §2.3 (−1 = unknown)",
    ),
    Column("sack_ok", pl.Boolean, "", "SACK permitted by both SYNs"),
    Column("ts_ok", pl.Boolean, "", "timestamps negotiated by both SYNs"),
    Column("handshake", pl.Boolean, "", "SYN and SYN/ACK were both captured"),
    Column("closed", pl.String, "", "how it ended: fin, rst or open"),
    Column(
        "retrans",
        pl.UInt64,
        "segments",
        "data sender's retransmitted segments with payload (all kinds: Wireshark's retransmission, fast and spurious retransmission; out-of-order and keep-alives excluded)",
    ),
    Column(
        "out_of_order",
        pl.UInt64,
        "segments",
        "data sender's segments with payload Wireshark labels out-of-order (below the highest sequence, soon after it); at a sender-side capture these are retransmissions too",
    ),
    Column(
        "rtt_min_s",
        pl.Float64,
        "s",
        "smallest RTT sample of the data sender's segments, measured as rtt_method says (Karn-safe; null if none)",
    ),
    Column("rtt_median_s", pl.Float64, "s", "median RTT sample"),
    Column("rtt_max_s", pl.Float64, "s", "largest RTT sample"),
    Column(
        "rtt_method",
        RttMethod,
        "",
        "how the RTT samples were measured: data-ack (data → its ACK: at the sender), ts-echo (receiver packet"
        " whose TSval a segment first echoes → the ACK of that segment: at the receiver or mid-path), ack-to-data"
        " (first ACK of a flight → the ACK of the next flight's first segment: away from the sender without"
        " timestamps); null with no RTT",
    ),
    Column("vantage", Vantage, "", "where the capture was taken relative to the data sender"),
)


# Event streams (hscc_trace.events), from the data sender's point of view --------------------

SEGMENTS: tuple[Column, ...] = (
    Column("frame", pl.UInt64, "", "frame number"),
    Column("ts_ns", pl.Int64, "ns", "capture time"),
    Column("seq", pl.Int64, "bytes", "first sequence number, unwrapped, relative to the ISN"),
    Column("len", pl.UInt32, "bytes", "payload length"),
    Column(
        "kind", SegmentKind, "", "new / retransmission / fast_retransmission / spurious_retransmission / out_of_order"
    ),
    Column("ip_ecn", pl.UInt8, "", "IP ECN field of the segment"),
    Column("end_seq", pl.Int64, "bytes", "seq + len (+1 for SYN/FIN, which occupy sequence space)"),
    Column("probe", ProbeKind, "", "keep-alive / zero-window probe (Wireshark rules), else none"),
    Column("rexmit", pl.Boolean, "", "re-sends bytes already sent (loss sense; probes never are)"),
    Column(
        "outstanding",
        pl.Int64,
        "bytes",
        "snd_max − snd_una after this segment (tcp.analysis.bytes_in_flight without SACK)",
    ),
    Column("round", pl.UInt32, "", "RTT round in progress when the segment was sent"),
)

ACKS: tuple[Column, ...] = (
    Column("frame", pl.UInt64, "", "frame number"),
    Column("ts_ns", pl.Int64, "ns", "capture time"),
    Column("ack", pl.Int64, "bytes", "cumulative ACK, unwrapped, relative to the sender's ISN"),
    Column("acked_bytes", pl.Int64, "bytes", "bytes newly acknowledged cumulatively by this ACK"),
    Column("sacked_bytes", pl.Int64, "bytes", "bytes newly SACKed by this ACK (above the cumulative ACK)"),
    Column("dupack", pl.UInt32, "", "duplicate-ACK count (0 for an ACK that advances; 1, 2, 3… for duplicates)"),
    Column("rwnd_bytes", pl.Int64, "bytes", "receive window, scale applied"),
    Column("rwnd_scale_known", pl.Boolean, "", "False when the window scale is unknown (no handshake)"),
    Column("ece", pl.Boolean, "", "ECN-Echo flag"),
    Column("rtt_s", pl.Float64, "s", "RTT sample formed by this ACK (null if none)"),
    Column("rtt_source", RttSource, "", "seq (Karn-safe data/ACK match) or ts (timestamp echo)"),
    Column(
        "snd_max",
        pl.Int64,
        "bytes",
        "highest sequence the sender had sent when it processed this ACK (end of highest segment; estimated"
        " away from the sender, docs/events.md)",
    ),
    Column("outstanding", pl.Int64, "bytes", "snd_max − ack after this ACK"),
    Column("pipe", pl.Int64, "bytes", "in flight after this ACK (Linux tcp_packets_in_flight, RACK losses)"),
    Column("round", pl.UInt32, "", "RTT-round index this ACK belongs to"),
    Column("round_end", pl.Boolean, "", "this ACK covers the highest seq sent when the round began"),
    Column("state", CongState, "", "the actual sender's congestion state inferred from the trace"),
    Column("cong_event", EpisodeKind, "", "set on the ACK where a congestion episode begins (else null)"),
    Column("spurious_undo", pl.Boolean, "", "the trace proves the episode this ACK ends was spurious"),
    Column("dsack_bytes", pl.Int64, "bytes", "bytes reported as received twice (D-SACK, RFC 2883)"),
    Column(
        "rtt_raw_s", pl.Float64, "s", "RTT sample as measured at the capture point (rtt_s minus the vantage correction)"
    ),
    Column(
        "ca_rtt_s",
        pl.Float64,
        "s",
        "the RTT sample Linux gives congestion control for this ACK (ca_rtt_us): the newest segment it "
        "newly SACKs (never retransmitted) if any, else rtt_s — at the sender a timestamp-echo sample in "
        "whole ticks of a 1 kHz TSval clock, as the kernel counts it; null if none",
    ),
    Column(
        "retrans_bytes",
        pl.Int64,
        "bytes",
        "payload the sender retransmitted (segments whose kind is not new) after the previous ACK and before this"
        " one, as the sender saw it (away from the sender: each placed after the ACK that released it)",
    ),
)

EPISODES: tuple[Column, ...] = (
    Column("episode", pl.UInt32, "", "episode index within the flow"),
    Column("kind", EpisodeKind, "", "fast_retransmit / sack_recovery / rto / ecn"),
    Column("start_ns", pl.Int64, "ns", "time the episode began (first retransmission or ECE)"),
    Column("end_ns", pl.Int64, "ns", "time the recovery point was cumulatively ACKed"),
    Column("start_frame", pl.UInt64, "", "frame that began it"),
    Column("flight_bytes", pl.Int64, "bytes", "outstanding bytes at onset"),
    Column("retrans_bytes", pl.Int64, "bytes", "bytes retransmitted during the episode"),
    Column("recovery_point", pl.Int64, "bytes", "snd_max at onset (relative seq)"),
    Column("end_frame", pl.UInt64, "", "frame of the ACK that ended it (null if it never ended)"),
    Column("spurious", pl.Boolean, "", "proved spurious by D-SACK (RFC 3708) or Eifel (RFC 3522)"),
)

ROUNDS: tuple[Column, ...] = (
    Column("round", pl.UInt32, "", "round index"),
    Column("start_ns", pl.Int64, "ns", "time of the ACK that opened the round"),
    Column("end_ns", pl.Int64, "ns", "time of the ACK that closed it"),
    Column("target_seq", pl.Int64, "bytes", "highest seq sent when the round began; the round ends when ACKed"),
    Column("peak_flight_bytes", pl.Int64, "bytes", "largest outstanding bytes during the round"),
    Column("acked_bytes", pl.Int64, "bytes", "bytes acknowledged during the round"),
    Column("min_rtt_s", pl.Float64, "s", "smallest RTT sample in the round"),
    Column("rwnd_bytes", pl.Int64, "bytes", "smallest receive window offered during the round"),
    Column("limit", Limit, "", "cwnd-, receive-window- or application-limited"),
    Column("in_recovery", pl.Boolean, "", "any part of the round was in recovery/loss"),
)


# Replay output (hscc_trace.replay): one row per replayed ACK event --------------------------
# Every algorithm produces these columns, followed by its own named signals (documented per
# algorithm in hscc_trace.replay.registry and docs/algorithms.md). Row i answers the flow's ACK
# i; join it to the ACK stream on ``frame`` (unique per ACK), never by row position.

REPLAY_BASE: tuple[Column, ...] = (
    Column(
        "frame",
        pl.UInt64,
        "",
        "frame number of the ACK this row answers (as Wireshark numbers it): the key that joins a replay to schema.ACKS",
    ),
    Column("ts_ns", pl.Int64, "ns", "capture time of that ACK"),
    Column("cwnd", pl.Float64, "packets", "congestion window the algorithm would have set"),
    Column("ssthresh", pl.Float64, "packets", "slow-start threshold"),
    Column("state", CongState, "", "congestion state driven by the trace"),
)

FIT_METRICS: tuple[Column, ...] = (
    Column("flow_id", pl.UInt32, "", "flow"),
    Column("algo", pl.String, "", "algorithm name (with non-default parameters)"),
    Column("rounds", pl.UInt32, "", "cwnd-limited rounds used for the fit"),
    Column("mare", pl.Float64, "", "median |replayed − actual| / actual over those rounds"),
    Column("rmse_pkts", pl.Float64, "packets", "root-mean-square error"),
    Column("corr", pl.Float64, "", "Pearson correlation of replayed and actual window"),
    Column("goodput_pred_bps", pl.Float64, "bit/s", "goodput implied by the replayed window (cwnd·MSS/RTT)"),
    Column("goodput_actual_bps", pl.Float64, "bit/s", "actual goodput over the same rounds"),
    Column("rank", pl.UInt32, "", "1 = best fit (lowest mare)"),
)


# Kernel ground truth stored beside each sample (samples/<name>/truth_*.parquet) -------------
# Written by the testbed from the tcp:tcp_probe, tcp:tcp_cong_state_set and
# tcp:tcp_retransmit_skb tracepoints for the data sender's socket; clock aligned to the capture.

TRUTH_PROBE: tuple[Column, ...] = (
    Column("ts_ns", pl.Int64, "ns", "tracepoint time mapped onto the capture clock"),
    Column("snd_nxt", pl.Int64, "bytes", "snd_nxt, unwrapped, relative to the sender's ISN"),
    Column("snd_una", pl.Int64, "bytes", "snd_una, unwrapped, relative to the sender's ISN"),
    Column("snd_cwnd", pl.UInt32, "packets", "kernel congestion window"),
    Column("ssthresh", pl.UInt32, "packets", "kernel slow-start threshold (2147483647 = infinite)"),
    Column("srtt_us", pl.UInt32, "µs", "kernel smoothed RTT (tp->srtt_us >> 3)"),
    Column("snd_wnd", pl.UInt32, "bytes", "peer's receive window as the kernel sees it"),
    Column("data_len", pl.UInt16, "bytes", "payload length of the skb that triggered the probe"),
    Column("sport", pl.UInt16, "", "data sender's TCP port: identifies the flow when a sample holds several"),
)

TRUTH_CA_STATE: tuple[Column, ...] = (
    Column("ts_ns", pl.Int64, "ns", "time of the transition on the capture clock"),
    Column("state", pl.String, "", "new TCP_CA_* state: open, disorder, cwr, recovery, loss"),
    Column("sport", pl.UInt16, "", "data sender's TCP port (flow)"),
)

TRUTH_RETRANS: tuple[Column, ...] = (
    Column("ts_ns", pl.Int64, "ns", "time of the retransmission on the capture clock"),
    Column("seq", pl.Int64, "bytes", "first byte retransmitted, relative to the ISN"),
    Column("state", pl.String, "", "TCP state string reported by the tracepoint"),
    Column("end_seq", pl.Int64, "bytes", "one past the last byte retransmitted, relative to the ISN"),
    Column("err", pl.Int32, "", "kernel return code of the retransmission (0 = sent)"),
    Column("sport", pl.UInt16, "", "data sender's TCP port (flow)"),
)


# SACK blocks carried by the receiver's ACKs (optional FlowEvents.sack_blocks; drawn in the report's
# time/sequence graph; hscc_trace.events.sack.sack_blocks derives them from the packets) ------

SACK_BLOCKS: tuple[Column, ...] = (
    Column("frame", pl.UInt64, "", "frame number of the ACK carrying the block"),
    Column("ts_ns", pl.Int64, "ns", "capture time of that ACK"),
    Column("left", pl.Int64, "bytes", "first byte the block covers, unwrapped, relative to the sender's ISN"),
    Column("right", pl.Int64, "bytes", "one past the last byte it covers (relative)"),
)


# Corpus dataset (hscc_trace.corpus; docs/corpus.md): one folder per table under the dataset,
# one Parquet file per capture per table (``<dataset>/<table>/<blake3>.parquet``). Every table
# starts with the capture's key; the analysis tables then carry the columns of the table above
# they come from. Values of ``reason`` in the errors table:

CORPUS_ERROR_REASONS = (
    "unreadable",  # the input could not be fetched or read as a capture (bad input)
    "internal",  # the analysis raised an unexpected exception (a bug: report it)
    "worker_died",  # the worker process died twice while analyzing it (OOM kill, segfault)
    "timeout",  # not done within --timeout-per-capture seconds; its worker was restarted
)

CORPUS_KEY: tuple[Column, ...] = (
    Column(
        "blake3",
        pl.String,
        "",
        "BLAKE3 of the capture file's bytes as stored (a .gz file hashed compressed): the partition key",
    ),
    Column("capture", pl.String, "", "the input as given: a path or a URL"),
)

CORPUS_CAPTURES: tuple[Column, ...] = (
    *CORPUS_KEY,
    Column("format", pl.String, "", "file format: pcap, pcap-ns or pcapng (+ .gz when compressed)"),
    Column("packets_total", pl.UInt64, "packets", "records in the file"),
    Column("packets_tcp", pl.UInt64, "packets", "records decoded as TCP"),
    Column("first_ns", pl.Int64, "ns", "timestamp of the first packet"),
    Column("last_ns", pl.Int64, "ns", "timestamp of the last packet"),
    Column("flows", pl.UInt32, "", "rows written to the flows table (analyzed flows)"),
    Column("flows_failed", pl.UInt32, "", "flows whose replay failed (counted, not in the flows table)"),
    Column("warnings", pl.UInt32, "", "warnings the analysis recorded for the capture"),
    Column("algorithms", pl.String, "", "algorithms replayed, comma-separated (with non-default parameters)"),
    Column("version", pl.String, "", "hscc-trace version that wrote the rows"),
    Column("seconds", pl.Float64, "s", "time the worker spent on the capture (a timing column: differs between runs)"),
)

#: a flow's verdict as table columns (hscc_trace.analysis.verdict; docs/verdicts.md)
VERDICT: tuple[Column, ...] = (
    Column("verdict", pl.String, "", "identified, behaves as, ambiguous, unknown or not enough data"),
    Column("verdict_name", pl.String, "", "the algorithm named (identified or behaves as only)"),
    Column("verdict_candidates", pl.String, "", "every algorithm that fits, best first, comma-separated (ambiguous)"),
    Column("verdict_error", pl.Float64, "", "median relative error of the best fit"),
)

#: one QUIC connection of a qlog file (hscc_trace.qlog; docs/quic.md): what `flows FILE.qlog`
#: lists and what the results' ``quic`` entries carry (docs/results.md)
QUIC_CONNECTIONS: tuple[Column, ...] = (
    Column("connection", pl.UInt32, "", "index of the connection in the file (what --flow / --connection take)"),
    Column("protocol", pl.String, "", "quic"),
    Column("trace", pl.Int64, "", "index of the qlog trace the connection is read from"),
    Column("group", pl.String, "", "qlog group_id (the original connection ID), when logged"),
    Column("vantage", pl.String, "", "client or server: who wrote the qlog (unknown: the trace does not say)"),
    Column("data_sender", pl.String, "", "client, server (peer / unknown without a vantage): who sent more bytes"),
    Column("logs_the_sender", pl.Boolean, "", "the qlog is the data sender's own (its logged cwnd is the sender's)"),
    Column("max_datagram_size", pl.UInt32, "bytes", "RFC 9002 max_datagram_size of the replays"),
    Column("packets_sent", pl.UInt64, "", "packets sent by the vantage"),
    Column("ack_frames", pl.UInt64, "", "ACK frames received by the vantage"),
    Column("rtt_samples", pl.UInt64, "", "RTT samples (RFC 9002 §5.1)"),
    Column("bytes_sent", pl.UInt64, "bytes", "bytes sent by the vantage"),
    Column("bytes_received", pl.UInt64, "bytes", "bytes received by the vantage"),
    Column("losses_stack", pl.UInt64, "", "packets the stack declared lost (packet_lost)"),
    Column("losses_ours", pl.UInt64, "", "packets lost by our RFC 9002 §6.1 detection"),
    Column("logged_cwnd_events", pl.UInt64, "", "metrics events with a congestion window"),
    Column(
        "algorithm",
        pl.String,
        "",
        "the algorithm the verdict names: the best-fitting replay where it follows the logged window (median ≤ 2 %, p90 ≤ 5 %), else null",
    ),
    Column("best", pl.String, "", "best-fitting replay as algorithm[flavor]"),
    Column("median_error", pl.Float64, "", "median relative error of the best replay against the logged cwnd"),
    Column("p90_error", pl.Float64, "", "90th percentile of that error"),
)

CORPUS_FLOWS: tuple[Column, ...] = (
    *CORPUS_KEY,
    *FLOWS,
    Column("best", pl.String, "", "best-fitting algorithm (fit rank 1; null when no algorithm was fitted)"),
    Column("best_mare", pl.Float64, "", "that fit's mare"),
    *VERDICT,
    Column("rounds", pl.UInt32, "", "RTT rounds of the flow"),
    Column("cwnd_limited_rounds", pl.UInt32, "", "of which cwnd-limited (the rounds a fit can use)"),
)

CORPUS_FITS: tuple[Column, ...] = (*CORPUS_KEY, *FIT_METRICS)

CORPUS_EPISODES: tuple[Column, ...] = (
    *CORPUS_KEY,
    Column("flow_id", pl.UInt32, "", "flow"),
    *EPISODES,
)

CORPUS_ROUNDS: tuple[Column, ...] = (
    *CORPUS_KEY,
    Column("flow_id", pl.UInt32, "", "flow"),
    *ROUNDS,
)

CORPUS_GROUPS: tuple[Column, ...] = (
    *CORPUS_KEY,
    Column("group", pl.UInt32, "", "the bottleneck group's index in its capture (docs/groups.md)"),
    Column("flow_id", pl.UInt32, "", "one of its flows (one row per flow of the group)"),
    Column("flows", pl.UInt32, "", "flows in the group"),
    Column("algo", pl.String, "", "the flow's algorithm label (kernel's label beside the capture, or its verdict)"),
    Column("goodput_bps", pl.Float64, "bit/s", "the flow's goodput over the group's measurement interval"),
    Column("share", pl.Float64, "", "the flow's share of the group's goodput"),
    Column("friendliness", pl.Float64, "", "its goodput over its reno co-flows' mean (null: no such co-flow)"),
    Column("jain", pl.Float64, "", "the group's Jain fairness index over its measurement interval"),
    Column("capacity_bps", pl.Float64, "bit/s", "the group's estimated bottleneck capacity (goodput terms)"),
    Column("utilization", pl.Float64, "", "the group's total goodput over that capacity"),
)

CORPUS_ERRORS: tuple[Column, ...] = (
    *CORPUS_KEY,
    Column("reason", pl.String, "", "unreadable, internal, worker_died or timeout"),
    Column("message", pl.String, "", "one line saying what went wrong"),
)

#: the corpus dataset's tables by folder name; ``captures`` is written last for a capture and
#: marks it complete, ``errors`` holds the captures that failed (a capture is in exactly one)
CORPUS_TABLES: dict[str, tuple[Column, ...]] = {
    "captures": CORPUS_CAPTURES,
    "flows": CORPUS_FLOWS,
    "fits": CORPUS_FITS,
    "episodes": CORPUS_EPISODES,
    "rounds": CORPUS_ROUNDS,
    "groups": CORPUS_GROUPS,
    "errors": CORPUS_ERRORS,
}


TABLES: dict[str, tuple[Column, ...]] = {
    "packets": PACKETS,
    "flows": FLOWS,
    "segments": SEGMENTS,
    "acks": ACKS,
    "episodes": EPISODES,
    "rounds": ROUNDS,
    "replay": REPLAY_BASE,
    "fit": FIT_METRICS,
    "sack_blocks": SACK_BLOCKS,
    "truth_probe": TRUTH_PROBE,
    "truth_ca_state": TRUTH_CA_STATE,
    "truth_retrans": TRUTH_RETRANS,
    "quic_connections": QUIC_CONNECTIONS,
    **{f"corpus/{name}": cols for name, cols in CORPUS_TABLES.items()},
}


def polars_schema(columns: Iterable[Column]) -> dict[str, Any]:
    """``{name: dtype}`` for ``pl.DataFrame(..., schema=...)``."""
    return {c.name: c.dtype for c in columns}


#: The empty frame of each column tuple :func:`empty` built (at most :data:`_EMPTY_MAX`).
_EMPTY: dict[tuple[Column, ...], pl.DataFrame] = {}
_EMPTY_MAX = 256


def empty(columns: Iterable[Column]) -> pl.DataFrame:
    """An empty DataFrame with exactly these columns and dtypes: a clone of one built once per
    column tuple (building it costs ≈ 0.13 ms, a clone ≈ 1 µs; a small capture of a corpus asks
    for three or four)."""
    key = tuple(columns)
    try:
        hit = _EMPTY.get(key)
    except TypeError:  # (a dtype that cannot be hashed)
        return pl.DataFrame(schema=polars_schema(key))
    if hit is None:
        hit = pl.DataFrame(schema=polars_schema(key))
        if len(_EMPTY) < _EMPTY_MAX:
            _EMPTY[key] = hit
    return hit.clone()


def conform(df: pl.DataFrame, columns: Iterable[Column], *, extra: bool = False) -> pl.DataFrame:
    """Select and cast ``df`` to the table's columns, in order.

    Missing columns are an error (a producer bug, not user input). With ``extra=True`` columns
    not in the table (e.g. an algorithm's own signals) are kept after the table's columns.
    """
    cols = list(columns)
    have = df.schema
    missing = [c.name for c in cols if c.name not in have]
    if missing:
        raise KeyError(f"table is missing columns: {', '.join(missing)}")
    names = [c.name for c in cols]
    if df.columns[: len(names)] == names and all(have[c.name] == c.dtype for c in cols):
        return df if extra or df.width == len(names) else df.select(names)  # (already conformed)
    # column by column, eagerly: a select of casts costs a query plan, ≈ 0.4 ms a table
    out = pl.DataFrame(
        [df.get_column(c.name) if have[c.name] == c.dtype else df.get_column(c.name).cast(c.dtype) for c in cols]
    )
    if extra:
        table = set(names)
        out = out.hstack(df.select([c for c in df.columns if c not in table]))
    return out


def markdown() -> str:
    """Every table as a markdown section: column, dtype, unit, meaning."""
    lines = ["# Table schemas", "", "Generated from `hscc_trace/schema.py` — do not edit by hand.", ""]
    for table, cols in TABLES.items():
        lines += [f"## {table}", "", "| column | dtype | unit | meaning |", "|---|---|---|---|"]
        for c in cols:
            lines.append(f"| `{c.name}` | {c.dtype} | {c.unit} | {c.doc} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - doc generator
    import sys

    sys.stdout.write(markdown())
