"""Packets counted per segment, as Linux counts them (replay/engine.py ``_packet_map``).

Linux counts an skb's packets when it is built or split: net/ipv4/tcp_output.c
``tcp_set_skb_tso_segs`` sets ``tcp_skb_pcount`` to 1 for len ≤ mss, else DIV_ROUND_UP(len,
mss). A short segment is one packet, a GSO super-segment ⌈len / mss⌉; an ACK into the middle
of one leaves ⌈rest / mss⌉ (net/ipv4/tcp_input.c ``tcp_tso_acked``). With the flow's segments
the engine counts so; without them, bytes / MSS.

The flow (MSS 1000 B, sequence numbers from 1): five new-data segments, all sent before the first
ACK —

    s0 [1, 1001)     1000 B  1 packet
    s1 [1001, 2001)  1000 B  1
    s2 [2001, 2501)   500 B  1 (short)
    s3 [2501, 3501)  1000 B  1
    s4 [3501, 6501)  3000 B  3 (one GSO super-segment)

so the packets below each boundary are 0, 1, 2, 3, 4, 7 (6.5 by bytes / MSS at 6501).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from replay_synth import MSS, ack, frame

from hscc_trace import schema
from hscc_trace.replay import engine
from hscc_trace.replay import tp as T

SEGS = [(1, 1000), (1001, 1000), (2001, 500), (2501, 1000), (3501, 3000)]


def segments(segs=SEGS, kinds=None) -> pl.DataFrame:
    rows = [
        {
            "frame": k + 1,
            "ts_ns": 1_000_000_000 + k * 1000,
            "seq": s,
            "len": n,
            "kind": "new" if kinds is None else kinds[k],
            "ip_ecn": 0,
            "end_seq": s + n,
            "probe": "none",
            "rexmit": False,
            "outstanding": s + n - 1,
            "round": 0,
        }
        for k, (s, n) in enumerate(segs)
    ]
    return schema.conform(
        pl.DataFrame(rows, schema=schema.polars_schema(schema.SEGMENTS), strict=False), schema.SEGMENTS
    )


def counts(segs, x, kinds=None) -> list[float]:
    pmap = engine._packet_map(segments(segs, kinds), float(MSS))
    return engine._packet_counts(pmap, np.asarray(x, dtype=float), float(MSS)).tolist()


def test_short_and_super_segments_count_as_the_kernel_counts_them():
    # boundaries: 0, 1, 2, 3 (the short s2 is a whole packet), 4, 7 (s4 is 3)
    assert counts(SEGS, [1, 1001, 2001, 2501, 3501, 6501]) == [0, 1, 2, 3, 4, 7]
    # into s4 (3501 + 3000): at 4501 the rest, 2000 B, is 2 packets → 4 + 3 − 2 = 5; at 5001
    # the rest, 1500 B, is ⌈1.5⌉ = 2 too → 5; at 5501: ⌈1000/1000⌉ = 1 → 6
    assert counts(SEGS, [4501, 5001, 5501]) == [5, 5, 6]
    # beyond the last segment (a FIN byte) and before the first (the SYN's): bytes / MSS
    assert counts(SEGS, [6502, 0]) == pytest.approx([7.001, -0.001])


def test_gaps_resends_and_overlaps():
    # s1 not captured: the gap [1001, 2001) is one piece of ⌈1000/1000⌉ = 1 → the same counts
    assert counts([SEGS[0], *SEGS[2:]], [1001, 2001, 2501, 6501]) == [1, 2, 3, 7]
    # s2 sent again as "new" (a re-send the capture saw twice) adds nothing; a segment [2201,
    # 2801) overlapping s2 counts from s2's end: [2501, 2801), 300 B, 1 packet
    assert counts([*SEGS[:3], (2001, 500)], [2501]) == [3]
    assert counts([*SEGS[:3], (2201, 600)], [2501, 2801]) == [3, 4]
    # retransmissions are not new data: only the new ones make the map
    assert counts(SEGS + [(2001, 500)], [6501], kinds=["new"] * 5 + ["retransmission"]) == [7]


def _acks(rows) -> pl.DataFrame:
    return frame([ack(**r) for r in rows])


# Three ACKs after all five segments went out (snd_max 6501):
#   ACK0 ack 1001: s0        acked 1 packet (1000 B)
#   ACK1 ack 2501: s1 + s2   acked 2 packets (1500 B: 1.5 by bytes)
#   ACK2 ack 6501: s3 + s4   acked 4 packets (4000 B)
ACKS3 = [
    dict(ack=1001, acked_bytes=1000, snd_max=6501, outstanding=5500),
    dict(ack=2501, acked_bytes=1500, snd_max=6501, outstanding=4000),
    dict(ack=6501, acked_bytes=4000, snd_max=6501, outstanding=0),
]


def test_prepare_counts_acked_outstanding_and_sent_per_segment():
    with_segs = engine.prepare(_acks(ACKS3), MSS, segments())
    by_bytes = engine.prepare(_acks(ACKS3), MSS)
    # acked: 1, 2, 4 (bytes: 1, 1.5, 4)
    assert with_segs.ev[:, T.E_ACKED].tolist() == [1, 2, 4]
    assert by_bytes.ev[:, T.E_ACKED].tolist() == [1, 1.5, 4]
    # outstanding after each: 7 − 1 = 6, 7 − 3 = 4, 0 (bytes: 5.5, 4, 0); pipe the same (no SACK)
    assert with_segs.ev[:, T.E_FLIGHT].tolist() == [6, 4, 0]
    assert with_segs.ev[:, T.E_PIPE].tolist() == [6, 4, 0]
    assert by_bytes.ev[:, T.E_FLIGHT].tolist() == [5.5, 4, 0]
    # sent before ACK0: everything from its previous cumulative ACK (1001 − 1000 = 1) to 6501,
    # 7 packets; the flight before ACK0 is 0 + 7 — the initial window the replay takes (6.5 by
    # bytes); packets out when the sender last transmitted: 7 − 0 = 7, then 7 − 1 = 6, 7 − 3 = 4
    assert with_segs.ev[:, T.E_SENT].tolist() == [7, 0, 0]
    assert with_segs.first_flight == 7 and by_bytes.first_flight == 6.5
    assert with_segs.ev[:, T.E_PACKETS_OUT].tolist() == [7, 6, 4]
    assert by_bytes.ev[:, T.E_PACKETS_OUT].tolist() == [6.5, 5.5, 4]


def test_sacked_and_left_out_bytes_round_up_to_whole_packets():
    # ACK0 acknowledges s0 and SACKs the short s2 (500 B); s1 is lost (out of pipe with s2:
    # outstanding − pipe = 1500 B). Linux: sacked_out 1 (tcp_skb_pcount of s2), lost_out 1 →
    # pipe = packets_out 6 − 1 − 1 = 4. Engine: SACKed ⌈500/1000⌉ = 1, flight 7 − 1 = 6,
    # left out ⌈1500/1000⌉ = 2 → pipe 4 (by bytes: 0.5, 5.5 and 4.0)
    # ACK1 (the retransmitted s1 arrives): ack 2501 advances 1500 B over s1 and the SACKed s2:
    # the engine takes min(S = 500, 1500 − 1000) = 500 B of it as SACKed before → covered
    # ⌈500/1000⌉ = 1 packet; newly acked = 3 − 1 − 1 = 1 packet, s1 (by bytes: 1.0 as well)
    rows = [
        dict(ack=1001, acked_bytes=1000, sacked_bytes=500, snd_max=6501, outstanding=5500, pipe=4000),
        dict(ack=2501, acked_bytes=1500, snd_max=6501, outstanding=4000, pipe=4000),
    ]
    with_segs = engine.prepare(_acks(rows), MSS, segments())
    by_bytes = engine.prepare(_acks(rows), MSS)
    assert with_segs.ev[:, T.E_SACKED].tolist() == [1, 0]
    assert with_segs.ev[:, T.E_PIPE].tolist() == [4, 4]
    assert with_segs.ev[:, T.E_ACKED].tolist() == [1, 1]
    assert by_bytes.ev[:, T.E_SACKED].tolist() == [0.5, 0]
    assert by_bytes.ev[:, T.E_PIPE].tolist() == [4, 4]


def test_reno_grows_by_the_packets_linux_counts():
    # reno, flavor linux, iw 10, slow start (ssthresh unset). The sender is cwnd-limited while
    # cwnd < 2 · max_packets_out (tcp_is_cwnd_limited in slow start); max_packets_out is taken
    # at ACK0, the only ACK after a transmission: 7 packets (limit 14). ACK0 +1 → 11, ACK1 +2 →
    # 13, ACK2 (13 < 14) +4 → 17.
    # By bytes: max_packets_out 6.5 (limit 13): 10 + 1 = 11, + 1.5 = 12.5, (12.5 < 13) + 4 = 16.5
    (with_segs,) = engine.replay(_acks(ACKS3), MSS, ["reno"], ["reno.flavor=linux"], segments=segments()).values()
    (by_bytes,) = engine.replay(_acks(ACKS3), MSS, ["reno"], ["reno.flavor=linux"]).values()
    assert with_segs["cwnd"].to_list() == [11, 13, 17]
    assert by_bytes["cwnd"].to_list() == [11, 12.5, 16.5]
