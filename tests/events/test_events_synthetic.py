"""Event streams of the hand-made edge-case captures in samples/synthetic/ (capture → events).

Every capture is described in samples/synthetic/make_synthetic.py: A = 10.0.0.1 (SYN sender,
data sender unless said otherwise), B = 10.0.0.2, MSS 1000 bytes, B's window 500 << 7 = 64000
bytes. Times below are seconds after the first packet; expected values are worked out by hand
in the comments.
"""

from __future__ import annotations

import functools
from pathlib import Path

import polars as pl
import pytest

from hscc_trace.events import flow_events
from hscc_trace.flows import load

SYN = Path(__file__).resolve().parents[2] / "samples" / "synthetic"
T0 = 1_700_000_000 * 10**9  # the generator's epoch offset (ns)


@functools.cache
def ev(name: str):
    cap = load(SYN / f"{name}.pcap")
    return flow_events(cap, 0)


def t(ns: int) -> float:
    return round((ns - T0) / 1e9, 6)


def rows(df: pl.DataFrame, *cols: str) -> list[tuple]:
    return [tuple(r) for r in df.select(cols).iter_rows()]


# ---- SACK recovery ------------------------------------------------------------------------------


def test_sack_recovery_segment_kinds():
    fe = ev("sack_recovery")
    # SYN (seq 0, occupies 1), six new segments 1..5001, then the retransmission of 2001 at
    # 0.1007: Wireshark's rule = >= 2 duplicate ACKs, seq == last ACK (2001), 0.1 ms after it.
    assert rows(fe.segments, "seq", "end_seq", "kind", "rexmit") == [
        (0, 1, "new", False),
        *[(1 + k * 1000, 1001 + k * 1000, "new", False) for k in range(6)],
        (2001, 3001, "fast_retransmission", True),
    ]


def test_sack_recovery_ack_stream_dupacks_sack_pipe():
    fe = ev("sack_recovery")
    a = fe.acks
    # acks: 1001 (+1000), 2001 (+1000), three duplicates SACKing 3001-4001, -5001, -6001, 6001.
    assert a["ack"].to_list() == [1001, 2001, 2001, 2001, 2001, 6001]
    assert a["acked_bytes"].to_list() == [1000, 1000, 0, 0, 0, 4000]
    assert a["sacked_bytes"].to_list() == [0, 0, 1000, 1000, 1000, 0]
    assert a["dupack"].to_list() == [0, 0, 1, 2, 3, 0]
    # outstanding = snd_max (6001) - ack: 5000, 4000, 4000, 4000, 4000, 0
    assert a["outstanding"].to_list() == [5000, 4000, 4000, 4000, 4000, 0]
    # pipe (RFC 6675): dup1: 4000 - 1000 SACKed = 3000; dup2: 4000 - 2000 = 2000 (2000 SACKed
    # bytes are not > (3-1)*1000, one range < 3: 2001-3001 not lost); dup3: 3000 SACKed
    # > 2000, so 2001-3001 is lost: 4000 - 3000 - 1000 = 0.
    assert a["pipe"].to_list() == [5000, 4000, 3000, 2000, 0, 0]


def test_sack_recovery_rtt_karn_and_timestamp():
    a = ev("sack_recovery").acks
    # 1001 acks the segment sent at 0.0502 -> 0.1002 - 0.0502 = 0.0500 s (data/ACK match);
    # 6001 covers retransmitted bytes (Karn: no match) but echoes TSval 1100, first sent at
    # 0.1007 (the retransmission): 0.1508 - 0.1007 = 0.0501 s.
    got = a.select("rtt_s", "rtt_source").rows()
    assert got[0] == (pytest.approx(0.05, abs=1e-9), "seq")
    assert got[1] == (pytest.approx(0.05, abs=1e-9), "seq")
    assert got[2:5] == [(None, None)] * 3
    assert got[5] == (pytest.approx(0.0501, abs=1e-9), "ts")


def test_sack_recovery_episode_and_state():
    fe = ev("sack_recovery")
    e = fe.episodes.row(0, named=True)
    assert fe.episodes.height == 1
    # began with the retransmission at 0.1007 (frame 15); flight then 6001 - 2001 = 4000;
    # recovery point = snd_max 6001, ACKed at 0.1508 (frame 16)
    assert (
        e["kind"],
        t(e["start_ns"]),
        e["start_frame"],
        e["flight_bytes"],
        e["retrans_bytes"],
        e["recovery_point"],
        t(e["end_ns"]),
        e["end_frame"],
        e["spurious"],
    ) == ("sack_recovery", 0.1007, 15, 4000, 1000, 6001, 0.1508, 16, False)
    # the third duplicate (frame 14) is where the sender decided: marked, in recovery
    assert rows(fe.acks, "frame", "state", "cong_event") == [
        (10, "open", None),
        (11, "open", None),
        (12, "open", None),
        (13, "open", None),
        (14, "recovery", "sack_recovery"),
        (16, "open", None),
    ]


def test_sack_recovery_round():
    r = ev("sack_recovery").rounds
    # round 0 opens at the first ACK (snd_max 6001) and closes when 6001 is ACKed;
    # peak flight 6000 (after the sixth segment), 6000 bytes ACKed, min RTT 0.05 s
    assert r.height == 1
    assert rows(r, "round", "target_seq", "peak_flight_bytes", "acked_bytes", "in_recovery") == [
        (0, 6001, 6000, 6000, True)
    ]
    assert r["min_rtt_s"][0] == pytest.approx(0.05)
    assert r["limit"][0] == "cwnd"  # in recovery: never app/rwnd


# ---- RTO -----------------------------------------------------------------------------------------


def test_rto_episode_after_silence():
    fe = ev("rto")
    # RTT samples 0.05, 0.05 -> srtt 0.05, rttvar 0.01875 s; RTO = srtt + max(4*rttvar, 0.2)
    # = 0.25 s. The retransmission of the head (2001) comes 0.3 s after the last ACK with no
    # duplicates: rto. Go-back-N resends 3001 too: 2000 bytes; recovery point 4001.
    assert rows(fe.segments.filter(pl.col("rexmit")), "seq", "kind") == [
        (2001, "retransmission"),
        (3001, "retransmission"),
    ]
    e = fe.episodes.row(0, named=True)
    assert (
        e["kind"],
        t(e["start_ns"]),
        e["flight_bytes"],
        e["retrans_bytes"],
        e["recovery_point"],
        t(e["end_ns"]),
    ) == ("rto", 0.4003, 2000, 2000, 4001, 0.5006)


def test_rto_loss_state_pipe_and_marker():
    a = ev("rto").acks
    # the first ACK after the timeout carries the marker and is in Loss; in Loss everything
    # below the recovery point that is not SACKed is lost: at ack 3001, 4001 - 3001 = 1000
    # outstanding, 1000 lost, nothing retransmitted in flight -> pipe 0.
    assert rows(a, "ack", "state", "cong_event", "outstanding", "pipe") == [
        (1001, "open", None, 3000, 3000),
        (2001, "open", None, 2000, 2000),
        (3001, "loss", "rto", 1000, 0),
        (4001, "open", None, 0, 0),
    ]
    # ack 3001 covers retransmitted bytes: only the TS echo (TSval 1400 of the retransmission
    # sent at 0.4003) gives a sample: 0.4504 - 0.4003 = 0.0501 s
    assert a.row(2, named=True)["rtt_source"] == "ts"
    assert a.row(2, named=True)["rtt_s"] == pytest.approx(0.0501)


# ---- sequence wrap --------------------------------------------------------------------------------


def test_seq_wrap_unwrapped_monotonic():
    fe = ev("seq_wrap")
    # ISN = 2^32 - 2500: raw seq of byte 2501 wraps to 0, yet relative seqs keep growing
    assert fe.segments["seq"].to_list() == [0, 1, 1001, 2001, 3001, 4001]
    assert fe.acks["ack"].to_list() == [2001, 4001, 5001]
    assert fe.acks["acked_bytes"].to_list() == [2000, 2000, 1000]
    assert fe.segments["rexmit"].sum() == 0 and fe.episodes.height == 0


# ---- capture started mid-flow ----------------------------------------------------------------------


def test_midflow_relative_to_first_seen_and_sender_b():
    fe = ev("midflow")
    # no SYN: endpoint A is the first-seen source (10.0.0.2, which sends the data), so the data
    # sender is dir 0; its first seen seq becomes 1 (Wireshark)
    assert fe.sender_dir == 0
    assert fe.segments["seq"].to_list()[:3] == [1, 1001, 2001]
    # window scale unknown: raw window (2000) reported and flagged
    assert fe.acks["rwnd_bytes"].to_list()[0] == 2000
    assert not fe.acks["rwnd_scale_known"].any()
    assert any("window scale unknown" in w.message for w in fe.warnings)


def test_midflow_vantage_from_data_timing():
    fe = ev("midflow")
    # data -> ACK 50 ms, ACK -> next data 0.1 ms: 0.1 / 50.1 < 10 %, the capture is at the sender
    assert fe.vantage == "sender" and fe.rtt_offset_s == 0.0
    assert fe.handshake_rtt_s is None  # (no handshake captured)


def test_midflow_rounds():
    r = ev("midflow").rounds
    # first ACK at 0.05 s: snd_max 4001 -> round 0 ends at ack 4001; by then 3 more segments
    # were sent (snd_max 7001) -> round 1 ends at 7001, round 2 at 10001, round 3 at 12001
    assert r["target_seq"].to_list() == [4001, 7001, 10001, 12001]
    assert r["peak_flight_bytes"].to_list()[:3] == [4000, 4000, 4000]
    # the last round drains to 0 outstanding: nothing more to send = application-limited
    assert r["limit"].to_list() == ["cwnd", "cwnd", "cwnd", "app"]


# ---- reordering, mid-path ---------------------------------------------------------------------------


def test_reorder_out_of_order_is_not_a_retransmission():
    fe = ev("reorder")
    s = fe.segments.filter(pl.col("seq") == 2001)
    # 2001 arrives 0.05 ms after 3001 (highest), within the initial RTT (0.05 s): out-of-order;
    # its bytes were never seen before, so it is not a retransmission, and no episode
    assert rows(s, "kind", "rexmit") == [("out_of_order", False)]
    assert fe.episodes.height == 0


def test_reorder_vantage_mid_path_rtt_correction():
    fe = ev("reorder")
    # SYN -> SYN/ACK 25 ms and SYN/ACK -> ACK 25 ms: mid-path; the missing (sender-side) half
    # is the SYN/ACK -> ACK gap, 25 ms (the flow's constant rtt_offset_s). With timestamps each
    # sample gets the sender-side part of the segment it times: the first data segment (50.2 ms)
    # echoes the SYN/ACK's TSval (seen at 25.0 ms): 25.2 ms. First sample 0.0752 - 0.0502 =
    # 25 ms at the capture point, 25 + 25.2 = 50.2 ms corrected.
    assert fe.vantage == "mid-path"
    assert fe.rtt_offset_s == pytest.approx(0.025)
    # the handshake's RTT as the sender timed it: B's gap 25 ms + the sender-side 25 ms
    assert fe.handshake_rtt_s == pytest.approx(0.05)
    first = fe.acks.row(0, named=True)
    assert first["rtt_raw_s"] == pytest.approx(0.025)
    assert first["rtt_s"] == pytest.approx(0.0502)
    # the second (0.0754, ACK 2001) times the segment sent at 50.3 ms: 25.1 + 25.3 ms
    assert fe.acks.row(1, named=True)["rtt_s"] == pytest.approx(0.0504)


# ---- ECN ---------------------------------------------------------------------------------------------


def test_ecn_one_episode_per_round():
    fe = ev("ecn")
    # ECE on acks 2001 and 3001 (same round: round 0 ends at 4001): one ecn episode, started at
    # the first ECE ACK (0.1003, flight 4001 - 2001 = 2000) and ended when its recovery point
    # (snd_max 4001 at onset) was ACKed at 0.1006
    assert fe.episodes.height == 1
    e = fe.episodes.row(0, named=True)
    assert (
        e["kind"],
        t(e["start_ns"]),
        e["flight_bytes"],
        e["recovery_point"],
        t(e["end_ns"]),
        e["retrans_bytes"],
    ) == ("ecn", 0.1003, 2000, 4001, 0.1006, 0)
    assert fe.acks["ece"].to_list() == [False, True, True, False, False]
    assert fe.acks["cong_event"].to_list() == [None, "ecn", None, None, None]
    # ECN does not change the loss-recovery state
    assert set(fe.acks["state"].to_list()) == {"open"}
    # the data segments carried ECT(0) = 2, segment 2 was CE = 3
    assert fe.segments.filter(pl.col("len") > 0)["ip_ecn"].to_list() == [2, 3, 2, 2, 2]


# ---- zero-window probes and keep-alives --------------------------------------------------------------


def test_probes_zero_window_and_keepalive():
    fe = ev("probes")
    s = fe.segments
    # probes at 2001 (1 byte while the window is 0), a 1-byte keep-alive at 3000 = snd_max - 1;
    # none is a retransmission; the 0-byte keep-alive is not a segment at all
    assert rows(s.filter(pl.col("probe") != "none"), "seq", "len", "probe", "kind", "rexmit") == [
        (2001, 1, "zero_window_probe", "new", False),
        (2001, 1, "zero_window_probe", "new", False),
        (3000, 1, "keepalive", "new", False),
    ]
    assert s.filter(pl.col("seq") == 2001, pl.col("len") == 1000)["rexmit"].to_list() == [False]
    assert fe.episodes.height == 0
    # the zero window makes round 0 receive-window-limited
    assert fe.rounds["limit"][0] == "rwnd"
    assert fe.acks["rwnd_bytes"].to_list()[:4] == [0, 0, 0, 64000]


# ---- clock stepping back ------------------------------------------------------------------------------


def test_clock_back_counts_and_drops_negative_rtt():
    fe = ev("clock_back")
    msgs = {w.message: w.count for w in fe.warnings}
    assert msgs["capture timestamps go backwards (packets kept in capture order)"] == 1
    assert msgs["negative RTT samples dropped (clock stepped back)"] == 1
    # ack 2001 at 0.0403 matches the segment sent at 0.0503: -10 ms, dropped; the next sample
    # is fine: 0.0905 - 0.0404 = 0.0501 s
    assert fe.acks["rtt_s"].to_list()[1] is None
    assert fe.acks["rtt_s"].to_list()[2] == pytest.approx(0.0501)
    assert fe.acks["ack"].to_list() == [1001, 2001, 3001]  # capture order kept


# ---- spurious retransmissions --------------------------------------------------------------------------


def test_dsack_proves_spurious_rto():
    fe = ev("dsack")
    e = fe.episodes.row(0, named=True)
    assert (e["kind"], e["retrans_bytes"], e["spurious"]) == ("rto", 1000, True)
    # the D-SACK block 1001-2001 lies below the cumulative ACK 3001 (RFC 2883): 1000 bytes
    # reported twice = every retransmitted byte of the episode -> spurious, on that ACK
    last = fe.acks.row(-1, named=True)
    assert (last["dsack_bytes"], last["sacked_bytes"], last["spurious_undo"]) == (1000, 0, True)


def test_eifel_proves_spurious_rto():
    fe = ev("eifel")
    # the ACK of the retransmission (TSval 2400) echoes TSval 1050 (the original): Eifel
    assert fe.episodes["spurious"].to_list() == [True]
    assert fe.acks["spurious_undo"].to_list() == [False, True]


# ---- snaplen --------------------------------------------------------------------------------------------


def test_snaplen_truncated_lengths_from_ip():
    fe = ev("snaplen")
    # 66-byte records keep 12 payload bytes; lengths come from the IP header: 1000 each
    assert fe.segments.filter(pl.col("len") > 0)["len"].to_list() == [1000, 1000, 1000]
    assert fe.acks["outstanding"].to_list() == [1000, 0]
