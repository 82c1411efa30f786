"""Receiver-side and mid-path captures, hand-built: the event streams as the *sender* saw them.

Conventions as tests/events/test_events_unit.py: A = SYN sender = data sender, ISN_A = 1000,
ISN_B = 5000, MSS 1000 bytes, relative sequence numbers in the comments. Every capture here is
taken at the receiver B: the SYN/ACK leaves 0.1 ms after the SYN, the third ACK comes one round
trip (50 ms: 25 ms each way, no queue) later. TCP timestamps: B's TSval is 1000 + the capture
time in ms, so every ACK of B carries its own TSval; A echoes the newest TSval it has received
(RFC 7323 §4.3), which is how the capture knows which ACK released which segment.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from hscc_trace.events import events_from_packets, flow_events
from hscc_trace.events.synth import packets_frame
from hscc_trace.flows.tracker import build_flows
from hscc_trace.replay import engine

IA, IB = 1000, 5000


def handshake(ts: bool = True) -> list[dict]:
    o = (lambda v, e: dict(tsval=v, tsecr=e)) if ts else (lambda v, e: {})
    return [
        dict(t=0.0, d=0, seq=IA, flags="S", mss=1000, ws=7, sackok=True, win=64240, **o(1, 0)),
        dict(t=0.0001, d=1, seq=IB, ack=IA + 1, flags="SA", mss=1000, ws=7, sackok=True, win=65000, **o(1000, 1)),
        dict(t=0.0501, d=0, seq=IA + 1, ack=IB + 1, flags="A", win=502, **o(51, 1000)),
    ]


def seg(t, rel, echo=None, tsval=50, ln=1000):
    """A data segment of A arriving at B at ``t``, echoing B's TSval ``echo``."""
    o = {} if echo is None else dict(tsval=tsval, tsecr=echo)
    return dict(t=t, d=0, seq=IA + rel, ack=IB + 1, flags="A", len=ln, **o)


def ack(t, rel, sack=(), win=500, ts=True):
    """B's ACK of ``rel`` leaving at ``t`` (TSval 1000 + ms)."""
    o = dict(tsval=1000 + round(t * 1000), tsecr=50) if ts else {}
    return dict(t=t, d=1, seq=IB + 1, ack=IA + rel, flags="A", win=win, sack=[(IA + a, IA + b) for a, b in sack], **o)


def run(pkts):
    return events_from_packets(packets_frame(pkts))


# ---- the sender's snd_max at each ACK, and the first ACK's growth -----------------------------------


def slow_start_at_receiver(ts: bool = True) -> list[dict]:
    """IW 10 (rel 1..9001) arrives 1 ms apart from 0.0502 s; B acks the first three segments
    0.1 ms after each (0.0503, 0.0513, 0.0523: TSvals 1050, 1051, 1052); A answers each of those
    ACKs with two new segments (10001 + 11001, 12001 + 13001, 14001 + 15001), which arrive one
    round trip (50 ms) after the ACK left B, 0.1 ms apart; B acks 12001 at 0.1005 and 14001 at
    0.1015."""
    p = handshake(ts)
    for k in range(10):
        p.append(seg(0.0502 + k * 0.001, 1 + 1000 * k, echo=1000 if ts else None))
    for k in range(3):
        t_ack = 0.0503 + k * 0.001
        p.append(ack(t_ack, 1001 + 1000 * k, ts=ts))
        echo = 1000 + round(t_ack * 1000) if ts else None
        p.append(seg(t_ack + 0.05, 10001 + 2000 * k, echo=echo))
        p.append(seg(t_ack + 0.0501, 11001 + 2000 * k, echo=echo))
    p.append(ack(0.1005, 12001, ts=ts))
    p.append(ack(0.1015, 14001, ts=ts))
    return sorted(p, key=lambda x: x["t"])  # (stable: of two packets at one time, the one listed first)


def test_receiver_side_snd_max_is_the_senders_at_each_ack():
    fe = run(slow_start_at_receiver())
    assert fe.vantage == "receiver"
    a = fe.acks.head(3)
    # ACK 1001 leaves B at 0.0503 with only segment 1 received, but when it reached A, A had sent
    # the whole IW: snd_max 10001 (the first segment echoing its TSval, 10001, is A's answer, and
    # every segment before it was sent before); ACK 2001: the IW and the two segments answering
    # ACK 1001 -> 12001; ACK 3001 -> 14001
    assert a["snd_max"].to_list() == [10001, 12001, 14001]
    assert a["outstanding"].to_list() == [9000, 10000, 11000]  # snd_max - ack
    assert a["round"].to_list() == [0, 0, 0]


def test_receiver_side_first_ack_grows_the_window():
    fe = run(slow_start_at_receiver())
    rep = engine.replay_flow(fe, ["reno"], ["reno.flavor=linux"])["reno"]
    # reno linux, iw 10. ACK 1001: flight before it = 10 packets (snd_max 10001 - 1) >= cwnd 10, so
    # the sender was cwnd-limited and slow start adds the packet acked: 11. ACK 2001: pipe 9 + 2
    # sent since = 11 >= 11 -> 12; ACK 3001 -> 13. (Had snd_max been what B had received, the
    # flight before ACK 1001 would be 1 packet: not cwnd-limited, and the window would stay 10.)
    assert rep["cwnd"].to_list()[:3] == [11.0, 12.0, 13.0]


def test_receiver_side_without_timestamps_places_acks_by_the_handshake_delay():
    fe = run(slow_start_at_receiver(ts=False))
    # without timestamps an ACK's answer is the first segment arriving one handshake round trip
    # (SYN/ACK -> ACK: 50 ms) after it: ACK 1001 (0.0503) -> 10001 at 0.1003, the same answer
    assert fe.acks["snd_max"].to_list()[:3] == [10001, 12001, 14001]


# ---- one episode, not two: a lost top segment and a late retransmission -------------------------------


def split_episode(window_update: bool = False) -> list[dict]:
    """Segments 1..4001 sent in one flight; 1001 and the top one, 5001, are lost before B.

    B: ACK 1001, then three duplicates SACKing 2001..5001 (TSvals 1053, 1054, 1055). A answers the
    third one (0.0801) with the retransmission of 1001, echoing 1055, at B 0.1051: B acks 5001.
    A gets that at 0.1302 and sends new data 6001 (B: 0.1552), which B SACKs (dupack 5001, TSval
    1155); A retransmits 5001 echoing 1155 (B: 0.2153): B acks 7001."""
    p = handshake()
    p += [seg(0.0510, 1, 1000), ack(0.0511, 1001)]
    p += [seg(0.0530, 2001, 1000), ack(0.0531, 1001, sack=[(2001, 3001)])]
    p += [seg(0.0540, 3001, 1000), ack(0.0541, 1001, sack=[(2001, 4001)])]
    p += [seg(0.0550, 4001, 1000), ack(0.0551, 1001, sack=[(2001, 5001)])]
    if window_update:  # leaves B before the retransmission arrives, reaches A after it was sent
        p += [ack(0.0700, 1001, sack=[(2001, 5001)], win=600)]
    p += [seg(0.1051, 1001, 1055, tsval=80), ack(0.1052, 5001)]
    p += [seg(0.1552, 6001, 1105, tsval=130), ack(0.1553, 5001, sack=[(6001, 7001)])]
    p += [seg(0.2153, 5001, 1155, tsval=190), ack(0.2154, 7001)]
    return p


def test_lost_top_segment_keeps_one_episode():
    fe = run(split_episode())
    e = fe.episodes
    # A's recovery point is its snd_max when it retransmitted 1001: 6001, the lost top segment
    # included — B learns of it from the next new segment, which starts at 6001 (nothing new was
    # sent between the retransmission and it). So ACK 5001 does not end the episode, the
    # retransmission of 5001 belongs to it, and ACK 7001 ends it: one episode, as at the sender.
    assert e.height == 1
    r = e.row(0, named=True)
    assert (r["kind"], r["recovery_point"], r["retrans_bytes"], r["flight_bytes"]) == (
        "sack_recovery",
        6001,
        2000,
        5000,
    )
    # it began at the ACK A answered with the retransmission (the third duplicate, 0.0551), which
    # carries the congestion event; it ended at ACK 7001
    acks = fe.acks
    assert acks.filter(pl.col("cong_event").is_not_null())["ts_ns"].to_list() == [r["start_ns"]]
    assert r["start_ns"] == acks.filter(pl.col("ts_ns") == r["start_ns"])["ts_ns"][0]
    assert [round((t - acks["ts_ns"][0]) / 1e6, 1) for t in (r["start_ns"], r["end_ns"])] == [4.0, 164.3]
    assert acks["state"].to_list() == ["open", "open", "open", "recovery", "recovery", "recovery", "open"]


def test_retransmissions_counted_after_the_ack_that_released_them():
    fe = run(split_episode(window_update=True))
    a = fe.acks.select("ack", "retrans_bytes", "state")
    # rows: 1001, dup, dup, dup (released the retransmission of 1001), window update (0.0700,
    # reached A after that retransmission left: the sender counts it there), 5001, dup 5001 SACK
    # 6001 (released the retransmission of 5001), 7001 (the next ACK A got after it)
    assert a["retrans_bytes"].to_list() == [0, 0, 0, 0, 1000, 0, 0, 1000]
    # the window update reached A in recovery
    assert a["state"].to_list()[4] == "recovery"


# ---- the flow table's RTT away from the sender --------------------------------------------------------


def flow_row(pkts):
    _pk, flows = build_flows(packets_frame(pkts))
    return flows.row(0, named=True)


def test_flow_rtt_by_timestamp_echo_at_the_receiver():
    r = flow_row(slow_start_at_receiver())
    assert (r["vantage"], r["rtt_method"]) == ("receiver", "ts-echo")
    # samples: the handshake (SYN 0 -> third ACK 0.0501 s: 50.1 ms) and, for each segment that
    # first echoes one of B's TSvals, from that ACK to B's ACK of it: 10001 first echoes ACK
    # 1001's TSval (ACK at 0.0503) and ACK 12001 (0.1005) covers it: 50.2 ms; 12001 first
    # echoes ACK 2001's (0.0513), ACK 14001 (0.1015) covers it: 50.2 ms. (IW segments echo the
    # SYN/ACK's TSval, first echoed by the third ACK: no sample. B's own data -> ACK time,
    # 0.1 ms, is not an RTT of A.)
    assert (r["rtt_min_s"], r["rtt_median_s"], r["rtt_max_s"]) == pytest.approx((0.0501, 0.0502, 0.0502), abs=1e-9)


def test_flow_rtt_by_ack_to_data_without_timestamps():
    r = flow_row(slow_start_at_receiver(ts=False))
    assert (r["vantage"], r["rtt_method"]) == ("receiver", "ack-to-data")
    # flights of A's new data: the IW (1 ms apart, 0.0502 .. 0.0592) is the first, released by
    # the SYN/ACK (0.0001): ACK 1001 (0.0503) covers its first segment: 50.2 ms. Then 41.1 ms of
    # silence (more than 4 x the 1 ms gap and than half the handshake's 50.1 ms): 10001 at
    # 0.1003 starts a flight, released by the first advancing ACK of the IW flight, ACK 1001
    # (0.0503); ACK 12001 (0.1005) covers it: 50.2 ms. Later gaps are 0.1 to 0.9 ms: no flight.
    # With the handshake (50.1 ms): min 50.1, median 50.2, max 50.2 ms.
    assert (r["rtt_min_s"], r["rtt_median_s"], r["rtt_max_s"]) == pytest.approx((0.0501, 0.0502, 0.0502), abs=1e-9)


def test_flow_rtt_at_the_sender_is_data_ack():
    # the same conversation captured at A: the SYN/ACK comes one round trip after the SYN
    p = slow_start_at_receiver()
    for x in p:  # at A, A's packets are seen 25 ms before B gets them, B's 25 ms after B sent them
        x["t"] = x["t"] + (0.075 if x["d"] == 0 else 0.125)
    p.sort(key=lambda x: x["t"])
    r = flow_row(p)
    assert (r["vantage"], r["rtt_method"]) == ("sender", "data-ack")
    # data -> ACK: segment 1 sent 0.1252, ACK 1001 back 0.1753: 50.1 ms; the handshake's SYN
    # (0.075) -> SYN/ACK (0.1251): 50.1 ms as well; the answers: 10001 sent 0.1753 (with ACK 1001),
    # ACK 12001 back at 0.2255 covers 11001 (sent 0.1754): 50.1 ms
    assert (r["rtt_min_s"], r["rtt_max_s"]) == pytest.approx((0.0501, 0.0501), abs=1e-9)


def test_flow_rtt_vantage_unknown_is_decided_by_the_echo_delay():
    # no handshake: the receiver-side conversation from the first data segment on. The echo
    # delay (B's TSval -> A's first echo: ~50 ms) dwarfs B's data -> ACK time (0.1 ms): away
    # from the sender, so the RTT is the release -> ACK one, not B's ACK delay
    p = [x for x in slow_start_at_receiver() if x["flags"] == "A" and x["t"] > 0.0502 - 1e-9]
    r = flow_row(p)
    assert r["vantage"] == "unknown" and r["rtt_method"] == "ts-echo"
    # the two release -> ACK samples of the receiver-side test above (no handshake sample here)
    assert (r["rtt_min_s"], r["rtt_max_s"]) == pytest.approx((0.0502, 0.0502), abs=1e-9)


def sender_view_both_ways(ts, snd, plen, flags, seq, rtsv):
    """Run the sender_view kernel interpreted and compiled, warnings as errors; the ``(ahead,
    rel, off)`` lists of each."""
    import warnings

    import numpy as np

    from hscc_trace.events import vantage

    n = len(ts)
    i64 = [np.asarray(x, np.int64) for x in (plen, flags, seq, rtsv)]
    arrays = [np.asarray(ts, np.int64), np.asarray(snd, bool), *i64]
    outs = []
    for run_kernel in (vantage.sender_view.py_func, vantage.sender_view.call_compiled):
        ahead, rel, off = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            run_kernel(*arrays, np.int64(0), ahead, rel, off)
        outs.append((ahead.tolist(), rel.tolist(), off.tolist()))
    return outs


def test_interpolated_delay_beyond_int64_neither_warns_nor_wraps():
    """A hostile capture (found by fuzzing): two anchors 4 ns apart whose echo delays differ by
    5·10¹⁸ ns. The ACK between them (t = 3, the second of TSval 10) gets the delay interpolated
    between the anchors, 100 + (5·10¹⁸ − 104)·3/4 ≈ 3.75·10¹⁸ ns: the product (≈ 1.5·10¹⁹) leaves
    int64, so the kernel interpolates in floating point there. Working: the ACK reaches the sender
    at ≈ 3.75·10¹⁸, after segment 0 (t = 100) and before segment 1 (t = 5·10¹⁸), so its
    boundary is segment 1 (the first echoing a later TSval), segment 0 was released by ACK row 0
    and segment 1 by ACK row 2 (the last ACK placed at or before it). A wrapped product would
    give a negative delay, boundary 0, and segment 0 released by ACK row 1."""
    from hscc_trace.events.prep import F_ACK

    big = 5 * 10**18
    outs = sender_view_both_ways(
        ts=[0, 3, 4, 100, big],
        snd=[False, False, False, True, True],
        plen=[0, 0, 0, 1000, 1000],
        flags=[F_ACK] * 5,
        seq=[0, 0, 0, 1, 1001],
        rtsv=[10, 10, 11, 10, 11],
    )
    for _ahead, rel, off in outs:
        assert rel == [-1, -1, -1, 0, 2]
        assert off[3:] == [100, big - 4]  # arrival minus the releasing ACK's time
    assert outs[0] == outs[1]


@pytest.mark.parametrize("late", [330, 5 * 10**18], ids=["small", "hostile"])
def test_ack_before_its_anchor_after_a_clock_step_back(late):
    """An ACK whose time steps back (t = 50) before the anchor it is placed after (t0 = 100):
    the anchors' delays are extrapolated back, as integers while the product fits. Anchors
    (100, 10) and (300, late − 300); rows: ACK 100 (TSval 10), segment 110 echoing 10, ACK 200 and
    ACK 50 (TSval 10 again: placed by time), ACK 300 (TSval 11), segment ``late`` echoing 11.

    small (late = 330): delays 10 and 30; for the ACK at 50: 10 + 20·(50 − 100) // 200 = 10 − 5
    = 5 ns, so it reaches the sender at 55, before segment 110: it releases nothing new, segment
    110 is released by ACK row 0 and segment 330 by ACK row 4 (what the code before the overflow
    guard gave). hostile (late = 5·10¹⁸): the product leaves int64 and is taken in floating point
    — no overflow warning, the same result compiled and interpreted."""
    from hscc_trace.events.prep import F_ACK

    outs = sender_view_both_ways(
        ts=[100, 110, 200, 50, 300, late],
        snd=[False, True, False, False, False, True],
        plen=[0, 1000, 0, 0, 0, 1000],
        flags=[F_ACK] * 6,
        seq=[0, 1, 0, 0, 0, 1001],
        rtsv=[10, 10, 10, 10, 11, 11],
    )
    assert outs[0] == outs[1]
    assert outs[0][1] == [-1, 0, -1, -1, -1, 4]
    if late == 330:
        assert outs[0] == ([1, 1, 1001, 1001, 1001, 1001], [-1, 0, -1, -1, -1, 4], [0, 10, 10, 10, 10, 30])


# ---- a µs round trip: the host's own turnaround is no small fraction of it (issue 38) -------------

USRTT = Path(__file__).resolve().parent / "data" / "cubic-usrtt-sender.pcap"


def test_h_vantage_us_rtt_sender_capture_is_at_the_sender():
    """A real CUBIC flow over veth + tbf (tests/events/data/README.md), captured at the sender:
    SYN → SYN/ACK 16.0 µs, SYN/ACK → ACK (the sender's own turnaround) 6.3 µs — 28 % of the
    total, mid-path by the fraction alone; under the 200 µs floor and less than half of the
    other gap, so at the sender, in the event streams and in the flow table alike."""
    from hscc_trace.flows import load
    from hscc_trace.flows.scan import flow_rows

    cap = load(str(USRTT))
    t = cap.packets["ts_ns"].head(3).to_list()  # SYN, SYN/ACK, ACK: the first three packets
    assert cap.packets["flags"].head(3).to_list() == [0x02, 0x12, 0x10]
    assert [round((t[1] - t[0]) / 1e3, 1), round((t[2] - t[1]) / 1e3, 1)] == [16.0, 6.3]
    fe = flow_events(cap, 0)
    assert (fe.vantage, fe.rtt_offset_s) == ("sender", 0.0)
    row = flow_rows(str(USRTT)).rows[0]
    assert (row["vantage"], row["rtt_method"]) == ("sender", "data-ack")


USRTT_RCV = USRTT.with_name("cubic-usrtt-receiver.pcap")
USRTT_RCV_NOHS = USRTT.with_name("cubic-usrtt-receiver-nohs.pcap")
USRTT_SND_NOHS = USRTT.with_name("cubic-usrtt-sender-nohs.pcap")


def _data_rule_parts_us(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[float, float]:
    """(S, X) of the data rule (hscc_trace.events.vantage's docstring) for flow 0, in µs."""
    import hscc_trace.events.vantage as vantage
    from hscc_trace.flows import load

    seen = []
    orig = vantage._data_parts
    monkeypatch.setattr(vantage, "_data_parts", lambda fa: seen.append(orig(fa)) or seen[-1])
    flow_events(load(str(path)), 0)
    S, X = seen[0]
    return round(S / 1e3, 1), round(X / 1e3, 1)


def test_h_vantage_us_rtt_receiver_capture_is_at_the_receiver_by_its_ttls():
    """The same path captured at the receiver (tests/events/data/README.md): SYN → SYN/ACK (the
    receiver's own turnaround) 10.3 µs, SYN/ACK → ACK (the path and the sender's turnaround)
    11.0 µs. Neither is under 10 % of the 21.3 µs, nor under half the other: by the gaps alone,
    mid-path, and as both are under the 200 µs floor (either may be a host's turnaround) the gaps
    say unknown. The TTLs decide: the sender's SYN arrives with
    63 (64 less the router), the receiver's SYN/ACK leaves with 64 — at the receiver. The
    correction is the sender's gap, d2 = 10 996 ns."""
    from hscc_trace.events.prep import Handshake
    from hscc_trace.events.vantage import from_handshake
    from hscc_trace.flows import load
    from hscc_trace.flows.scan import flow_rows

    cap = load(str(USRTT_RCV))
    head = cap.packets.head(3)
    assert head["flags"].to_list() == [0x02, 0x12, 0x10]
    assert head["ip_ttl"].to_list() == [63, 64, 63]
    t = head["ts_ns"].to_list()
    assert [t[1] - t[0], t[2] - t[1]] == [10282, 10996]
    h = Handshake(seen=True, syn_ns=t[0], synack_ns=t[1], ack_ns=t[2])
    assert from_handshake(h, 0).vantage == "unknown"  # (the gaps alone: alike, under the floor)
    fe = flow_events(cap, 0)
    assert (fe.vantage, fe.rtt_offset_s) == ("receiver", 10996e-9)
    row = flow_rows(str(USRTT_RCV)).rows[0]
    assert (row["vantage"], row["rtt_method"]) == ("receiver", "ts-echo")


def test_h_vantage_us_rtt_receiver_capture_without_handshake_is_at_the_receiver(monkeypatch):
    """Captured at the receiver from 1 s into the connection: S (data → its ACK: the receiver's
    own ACK delay, on a loaded host) = 337.9 µs, X (ACK → the sender's first echo of it: the
    path and the sender) = 62.2 µs. 10 % of the 400.1 µs is 40.0 µs: neither part is under it,
    so the data rule says mid-path; and the smaller part is the far one, so a host-turnaround
    floor on the data rule would call it the sender's (X under 200 µs and under half of S). The
    TTLs decide instead: the sender's packets arrive with 63, the receiver's leave with 64. The
    correction is X."""
    from hscc_trace.flows import load
    from hscc_trace.flows.near import near_by_floor

    assert _data_rule_parts_us(USRTT_RCV_NOHS, monkeypatch) == (337.9, 62.2)
    assert near_by_floor(62205, 337887)  # (what a floor would take as the sender's turnaround)
    cap = load(str(USRTT_RCV_NOHS))
    fl = cap.flows.row(0, named=True)
    assert (fl["handshake"], fl["sender_dir"], str(fl["vantage"])) == (False, 1, "receiver")
    ttl = cap.packets.group_by("dir").agg(pl.col("ip_ttl").min().alias("lo"), pl.col("ip_ttl").max().alias("hi"))
    assert sorted(ttl.rows()) == [(0, 64, 64), (1, 63, 63)]  # (dir 1: B → A, the data sender B)
    fe = flow_events(cap, 0)
    assert (fe.vantage, fe.rtt_offset_s) == ("receiver", 62205e-9)


def test_h_vantage_us_rtt_sender_capture_without_handshake_is_at_the_sender(monkeypatch):
    """Captured at the sender from 1 s into the connection: S (data → its ACK: the path, the
    queue and the receiver) = 215.7 µs, X (the sender's own reaction) = 46.4 µs. 10 % of the
    262.1 µs is 26.2 µs: neither part is under it, so the data rule says mid-path. The TTLs:
    the sender's packets leave with 64, the receiver's arrive with 63 — at the sender, no
    correction."""
    from hscc_trace.flows import load

    assert _data_rule_parts_us(USRTT_SND_NOHS, monkeypatch) == (215.7, 46.4)
    cap = load(str(USRTT_SND_NOHS))
    assert str(cap.flows.row(0, named=True)["vantage"]) == "sender"
    fe = flow_events(cap, 0)
    assert (fe.vantage, fe.rtt_offset_s) == ("sender", 0.0)


@pytest.mark.parametrize(
    ("d1_us", "d2_us", "sender_dir", "want"),
    [
        (16.0, 6.3, 0, "sender"),  # the capture above: A's turnaround, under the floor
        (16.0, 6.3, 1, "receiver"),  # the same, B sending: the capture is at the receiver
        (5.0, 15.0, 0, "receiver"),  # at B, A sending: B's turnaround (SYN -> SYN/ACK) is tiny
        (26.0, 216.0, 0, "receiver"),  # the M-Lab ndt7 upload at the server (11 %: mid-path before)
        (10.8, 8.2, 1, "unknown"),  # loopback (pcapplusplus): both gaps are turnarounds, alike
        (8.0, 6.0, 0, "unknown"),  # at the sender over a direct veth pair: alike, under the floor
        (300.0, 700.0, 0, "mid-path"),  # above the floor: the fraction alone decides (30 %)
        (40276.6, 52.0, 0, "sender"),  # a testbed sample: the fraction decides, as before
    ],
)
def test_host_turnaround_floor(d1_us, d2_us, sender_dir, want):
    from hscc_trace.events.prep import Handshake
    from hscc_trace.events.vantage import from_handshake

    syn = 1_000_000
    sa = syn + round(d1_us * 1e3)
    h = Handshake(seen=True, syn_ns=syn, synack_ns=sa, ack_ns=sa + round(d2_us * 1e3))
    v = from_handshake(h, sender_dir)
    assert v is not None and v.vantage == want
    sender_gap = round((d2_us if sender_dir == 0 else d1_us) * 1e3)
    assert v.offset_ns == (0 if want in ("sender", "unknown") else sender_gap)
