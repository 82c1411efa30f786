"""The engine's per-flow context ("tcp_sock"): one record ``tp`` of named float64 fields.

Linux congestion-control modules read and write ``struct tcp_sock`` (snd_cwnd, snd_ssthresh,
snd_cwnd_cnt, srtt …); hscc-trace algorithms do the same through ``tp.cwnd``, ``tp.ssthresh``
…: each slot below, declared once with its unit, is the field of its lower-cased name
(:data:`FIELDS`). The engine (:mod:`hscc_trace.replay.engine`) fills a float64 array by slot
and hands the loop its record view (:func:`record`, the same memory, so a compiled hook's
``tp.cwnd`` is the load of a fixed offset, as ``tp[CWND]`` was). The engine
(:mod:`hscc_trace.replay._loop`) owns every field; algorithms may only *write* ``cwnd``,
``ssthresh`` and ``cwnd_cnt`` (everything else is input they read).

Units: windows and counts in MSS-sized packets (floats), times in seconds since the first ACK
of the replayed stream, RTTs in seconds. ``nan`` means "no value yet".

The second block (``E_*``) names the columns of the per-ACK input matrix ``ev`` built by
:func:`hscc_trace.replay.engine.prepare` from a schema.ACKS DataFrame.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# --- tp: the congestion state the algorithm acts on ------------------------------------------
CWND = 0  # packets — congestion window (algorithms write)
SSTHRESH = 1  # packets — slow-start threshold (algorithms write; inf = not set)
CWND_CNT = 2  # packets — Linux snd_cwnd_cnt, the additive-increase segment counter (algorithms write)
STATE = 3  # 0 open, 1 recovery, 2 loss — replayed congestion state (driven by the trace)
FLAVOR = 4  # 0 rfc, 1 linux — the common `flavor` parameter (engine core model + algorithm variant)
IW = 5  # packets — initial window actually used
NOW = 6  # s — time of the current ACK since the first ACK
MSS = 7  # bytes — the flow's MSS (packets = bytes / MSS)
# --- RTT (engine-maintained) ---
RTT = 8  # s — latest RTT sample (the current ACK's if RTT_NEW, else the previous one)
RTT_NEW = 9  # 1 if the current ACK carried an RTT sample
MIN_RTT = 10  # s — RTTmin / baseRTT: smallest sample so far (reset by nothing)
SRTT = 11  # s — RFC 6298 smoothed RTT (alpha 1/8)
RTTVAR = 12  # s — RFC 6298 RTT variance (beta 1/4)
ROUND = 13  # round index of the current ACK (from the trace)
ROUND_END = 14  # 1 if the current ACK closes its round (trace round_end)
ROUND_MIN_RTT = 15  # s — smallest sample in the last completed round (nan if it had none)
ROUND_SAMPLES = 16  # samples in the last completed round
CUR_ROUND_MIN_RTT = 17  # s — smallest sample so far in the current round
CUR_ROUND_SAMPLES = 18  # samples so far in the current round
# --- the current ACK (inputs) ---
ACKED = 19  # packets newly delivered by the cumulative ACK (not counting bytes SACKed before)
SACKED = 20  # packets newly SACKed by this ACK
DELIVERED = 21  # packets delivered so far (cumulative sum of ACKED + SACKED)
FLIGHT = 22  # packets outstanding after this ACK (snd_max − ack)
PIPE = 23  # packets in flight after this ACK (Linux tcp_packets_in_flight)
PRIOR_FLIGHT = 24  # packets in flight just before this ACK (after the sender's last transmissions)
SENT = 25  # packets the sender transmitted since the previous ACK
RWND = 26  # packets — receive window offered by this ACK
ECE = 27  # 1 if the ACK carries ECN-Echo
EVENT = 28  # congestion event at this ACK: -1 none, 0 fast_retransmit, 1 sack_recovery, 2 rto, 3 ecn
DUPACK = 29  # duplicate-ACK count
# --- Linux core emulation (engine-maintained) ---
IS_CWND_LIMITED = 30  # Linux tp->is_cwnd_limited, emulated from the trace (see helpers.linux_cwnd_limited)
MAX_PACKETS_OUT = 31  # Linux tp->max_packets_out (packets)
CWND_USAGE_SEQ = 32  # Linux tp->cwnd_usage_seq (bytes, relative sequence)
PRIOR_CWND = 33  # packets — cwnd when the current reduction began (undo, PRR)
PRIOR_SSTHRESH = 34  # packets — ssthresh before the current reduction (undo)
PRR_DELIVERED = 35  # packets delivered since recovery began (RFC 6937)
PRR_OUT = 36  # packets sent since recovery began (RFC 6937)
LAST_ECN_ROUND = 37  # round index of the last ECN reaction (at most one per round)
SND_UNA = 38  # bytes — cumulative ACK (relative sequence)
SND_MAX = 39  # bytes — highest sequence sent so far
ACKS = 40  # number of ACKs processed so far (including the current one)
EXIT_ON_PARTIAL = (
    41  # set by an algorithm's init: flavor rfc leaves recovery on the first ACK of new data (RFC 5681 Reno)
)
# --- delivery-rate sample of the current ACK (Linux struct rate_sample, tcp_rate.c;
# draft-cheng-iccrg-delivery-rate-estimation), filled only for algorithms with a cong_control hook ---
RS_DELIVERED = 42  # packets delivered over the sample's interval (nan: no valid sample on this ACK)
RS_INTERVAL = 43  # s — the sample's interval, max(send elapsed, ACK elapsed)
RS_PRIOR_DELIVERED = 44  # packets — delivered count when the sample's packet was sent (P.delivered)
RS_LOSSES = 45  # packets newly marked lost by this ACK (estimated: retransmitted before the next ACK)
DELIVERED_TIME = 46  # s — time of the last ACK that delivered data (Linux tp->delivered_mstamp)
# --- the connection before the ACK stream ---
HANDSHAKE_RTT = 47  # s — handshake RTT as the sender timed it (Linux tcp_min_rtt at bbr_init); nan: unknown
# --- transmission after idle (Linux tcp_slow_start_after_idle_check / CA_EVENT_TX_START) ---
IDLE = 48  # s — now − lsndtime of the sender's first transmission since the previous ACK when nothing was in flight (0: none)
# --- the connection before the ACK stream (continued): when congestion control started (Linux
# tcp_init_congestion_control, as the SYN/ACK arrives) ---
CA_INIT = 49  # s — since the first ACK (negative: before it); nan: unknown
NTP = 50  # size of tp

#: tp's fields, in slot order: (name, kind) as replay.state declares records
FIELDS: tuple[tuple[str, str], ...] = tuple(
    (k.lower(), "float")
    for k, v in sorted(
        ((k, v) for k, v in dict(globals()).items() if k.isupper() and isinstance(v, int)), key=lambda kv: kv[1]
    )
    if v < NTP and not k.startswith("E_")
)
assert len(FIELDS) == NTP  # (every slot 0 … NTP-1 once)


def record(tpa: Any) -> Any:
    """The record view of a float64 array of NTP slots (what compiled hooks receive as ``tp``)."""
    return tpa.view(_DTYPE)[0]


def interp(tpa: Any) -> Any:
    """The interpreted view of the same array: ``tp.cwnd`` is ``tpa[CWND]`` (no copy;
    :func:`hscc_trace.replay.state.interp`'s twin class)."""
    from .state import interp_class

    return tpa.view(interp_class(FIELDS))


# --- ev: the per-ACK input matrix (one row per ACK, float64) ---------------------------------
E_T = 0  # s since the first ACK
E_ACKED = 1  # packets newly cumulatively acked (tcp_skb_pcount per segment: engine.prepare)
E_SACKED = 2  # packets newly SACKed
E_RTT = 3  # s, nan when this ACK formed no RTT sample
E_FLIGHT = 4  # packets outstanding after the ACK
E_PIPE = 5  # packets in flight after the ACK (Linux tcp_packets_in_flight)
E_PRIOR_FLIGHT = 6  # packets in flight before the ACK (previous pipe + packets sent since)
E_SENT = 7  # packets sent since the previous ACK (snd_max growth + ACKS.retrans_bytes)
E_RWND = 8  # packets, receive window
E_STATE = 9  # trace congestion state: 0 open, 1 recovery, 2 loss
E_EVENT = 10  # -1 none, 0 fast_retransmit, 1 sack_recovery, 2 rto, 3 ecn
E_UNDO = 11  # 1 when the trace proves the episode this ACK ends was spurious
E_ROUND = 12  # round index
E_ROUND_END = 13  # 1 on the ACK that closes its round
E_ECE = 14  # 1 if ECN-Echo
E_DUPACK = 15  # duplicate-ACK count
E_ACK = 16  # bytes, cumulative ACK
E_SND_MAX = 17  # bytes, highest sequence sent
E_PREV_ACK = 18  # bytes, cumulative ACK before this ACK (snd_una when the sender last transmitted)
E_DATA_ACKED = 19  # 1 if the cumulative ACK advanced (Linux FLAG_DATA_ACKED)
E_RS_DELIVERED = 20  # packets, delivery-rate sample (nan = none); see engine.rate_samples
E_RS_INTERVAL = 21  # s, its interval
E_RS_PRIOR_DELIVERED = 22  # packets, delivered count when its packet was sent
E_RS_LOSSES = 23  # packets newly marked lost (estimated)
E_CA_RTT = 24  # s, the sample Linux gives congestion control (acks.ca_rtt_s: newest newly SACKed, else E_RTT)
E_IDLE = (
    25  # s, now − lsndtime when the sender transmitted new data with nothing in flight since the previous ACK (0: none)
)
E_PACKETS_OUT = 26  # packets outstanding when the sender last transmitted (snd_una before this ACK to snd_max)
NEV = 27

# --- enumerations -----------------------------------------------------------------------------
OPEN = 0
RECOVERY = 1
LOSS = 2
EV_NONE = -1
EV_FAST_RETRANSMIT = 0
EV_SACK_RECOVERY = 1
EV_RTO = 2
EV_ECN = 3
RFC = 0
LINUX = 1
# Linux enum tcp_ca_event (include/net/tcp.h) values the engine dispatches to the cwnd_event hook
CA_EVENT_TX_START = 0  # first transmission with nothing in flight (tcp_event_data_sent)
CA_EVENT_CWND_RESTART = 1  # congestion window restart after an idle period (tcp_cwnd_restart)

_DTYPE = np.dtype([(n, np.float64) for n, _ in FIELDS])
