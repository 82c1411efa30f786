"""Branch-level tests of hscc_trace.events on packet tables built directly (no capture file).

Conventions: A = SYN sender and data sender unless said otherwise, ISN_A = 1000, ISN_B = 5000,
MSS 1000 bytes; raw numbers are written as ISN + relative value. Hand-worked expectations in
the comments.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hscc_trace import schema
from hscc_trace.errors import InputError
from hscc_trace.events import events_from_packets, flow_events
from hscc_trace.events.core import SETS_START
from hscc_trace.events.prep import _unwrap_joint
from hscc_trace.events.ranges import insert, overlap, prune_below, remove
from hscc_trace.events.synth import packets_frame
from hscc_trace.model import Capture, CaptureMeta

IA, IB = 1000, 5000
REPO = Path(__file__).resolve().parents[2]


def hs(t_syn=0.0, t_sa=0.05, t_ack=0.0501, ws=7, sack=True, ts=False):
    o = dict(tsval=1, tsecr=0) if ts else {}
    return [
        dict(t=t_syn, d=0, seq=IA, flags="S", mss=1000, ws=ws, sackok=sack, win=64240, **o),
        dict(t=t_sa, d=1, seq=IB, ack=IA + 1, flags="SA", mss=1000, ws=ws, sackok=sack, win=65000, **o),
        dict(t=t_ack, d=0, seq=IA + 1, ack=IB + 1, flags="A", win=502, **o),
    ]


def seg(t, rel, ln=1000, **kw):
    return dict(t=t, d=0, seq=IA + rel, ack=IB + 1, flags="A", len=ln, **kw)


def ack(t, rel, win=500, **kw):
    return dict(t=t, d=1, seq=IB + 1, ack=IA + rel, flags="A", win=win, **kw)


def run(pkts):
    return events_from_packets(packets_frame(pkts))


# ---- range sets ---------------------------------------------------------------------------------


def test_ranges_insert_merge_remove_prune():
    L = np.empty(4, np.int64)
    R = np.empty(4, np.int64)
    m, added = insert(L, R, 0, 10, 20)
    m, a2 = insert(L, R, m, 30, 40)
    m, a3 = insert(L, R, m, 15, 35)  # bridges both: adds 20..30 only
    assert (added, a2, a3, m, L[0], R[0]) == (10, 10, 10, 1, 10, 40)
    m, rem = remove(L, R, m, 20, 25)  # split
    assert (m, list(L[:m]), list(R[:m]), rem) == (2, [10, 25], [20, 40], 5)
    assert overlap(L, R, m, 0, 100) == 25
    m, pr = prune_below(L, R, m, 30)  # drops 10..20, clips 25..40 to 30..40
    assert (m, L[0], R[0], pr) == (1, 30, 40, 15)


# ---- sequence arithmetic --------------------------------------------------------------------------


def test_unwrap_joint_crosses_2_32_and_ignores_a_stray_value():
    raw = np.array([2**32 - 10, 2**32 - 5, 3, 123_456_789, 20], np.int64)
    use = np.ones(5, np.bool_)
    lead = np.array([True, True, True, False, True])
    # origin 2^32 - 11 -> 1, 6, 14 (wrapped: 3 + 11), the stray non-lead value is placed near
    # the reference without moving it, then 20 + 11 = 31
    out = _unwrap_joint(raw, use, lead, np.int64(2**32 - 11))
    assert list(out[[0, 1, 2, 4]]) == [1, 6, 14, 31]


def test_relative_seq_without_syn_starts_at_one():
    fe = run([seg(0.0, 500), seg(0.0001, 1500), ack(0.05, 1500), ack(0.0501, 2500)])
    # first seen seq = ISN + 500 -> 1 (Wireshark: base = seq - 1)
    assert fe.segments["seq"].to_list() == [1, 1001]
    assert fe.acks["ack"].to_list() == [1001, 2001]


# ---- duplicate ACKs ---------------------------------------------------------------------------------


def test_window_update_is_not_a_duplicate_ack():
    p = hs() + [
        seg(0.0502, 1),
        seg(0.0503, 1001),
        ack(0.1002, 1001),
        ack(0.1003, 1001, win=600),  # same ACK, new window, no SACK: window update
        ack(0.1004, 1001, win=600),
    ]  # same ACK, same window: duplicate #1
    fe = run(p)
    assert fe.acks["dupack"].to_list() == [0, 0, 1]


def test_ack_with_new_sack_counts_as_duplicate_even_if_window_changes():
    p = hs() + [
        seg(0.0502, 1),
        seg(0.0503, 1001),
        seg(0.0504, 2001),
        ack(0.1002, 1001),
        ack(0.1004, 1001, win=600, sack=[(IA + 2001, IA + 3001)]),
    ]
    assert run(p).acks["dupack"].to_list() == [0, 1]


# ---- pipe ------------------------------------------------------------------------------------------


def test_pipe_three_sack_ranges_lose_every_hole_below_the_highest():
    # 8 segments 1..8001; ACK 1001 with three separate 500-byte ranges above the hole 1001-2001:
    # 3001-3501, 5001-5501, 7001-7501 (1500 bytes SACKed, not > 2000, but 3 ranges: Linux's
    # sacked_out = 3 >= tp->reordering, so tcp_rack_reo_wnd is 0 and tcp_rack_detect_loss marks
    # every unSACKed byte sent before the highest SACKed one lost): lost = (7501 − 1001) − 1500
    # = 5000, the holes 1001-3001, 3501-5001, 5501-7001; only 7501-8001 is in flight.
    p = hs() + [seg(0.0502 + k * 1e-4, 1 + k * 1000) for k in range(8)]
    p += [
        ack(0.1002, 1001),
        ack(0.1003, 1001, sack=[(IA + 3001, IA + 3501), (IA + 5001, IA + 5501), (IA + 7001, IA + 7501)]),
    ]
    a = run(p).acks.row(1, named=True)
    # outstanding 8001 − 1001 = 7000; pipe = 7000 − 1500 SACKed − 5000 lost = 500
    assert (a["outstanding"], a["sacked_bytes"], a["pipe"]) == (7000, 1500, 500)


def test_pipe_every_other_segment_sacked_as_at_recovery_entry():
    # The h6 sweep cell's recovery entry (bpf_ktcp_cubic, run 1, t = 0.0788 s), in 1000-byte
    # segments: 8 segments 1..8001, ACK 1001, then SACKs of every other segment, 2001-3001,
    # 4001-5001, 6001-7001, one per ACK. Third ACK: 3 segments SACKed = tp->reordering, so RACK's
    # reo_wnd is 0 and the holes 1001-2001, 3001-4001, 5001-6001 (all sent before 6001-7001) are
    # lost: pipe = 7000 − 3000 − 3000 = 1000 (7001-8001). RFC 6675's IsLost would count only
    # 1001-2001 (3 segments above it) and give 3000; the kernel's cwnd at that entry was
    # in_flight + 1 = 38 with 43 out, 3 SACKed, 3 lost.
    p = hs() + [seg(0.0502 + k * 1e-4, 1 + k * 1000) for k in range(8)]
    p += [
        ack(0.1002, 1001),
        ack(0.1003, 1001, sack=[(IA + 2001, IA + 3001)]),
        ack(0.1004, 1001, sack=[(IA + 4001, IA + 5001), (IA + 2001, IA + 3001)]),
        ack(0.1005, 1001, sack=[(IA + 6001, IA + 7001), (IA + 4001, IA + 5001), (IA + 2001, IA + 3001)]),
    ]
    a = run(p).acks
    # second ACK: 1000 SACKed, 1 range: reo_wnd = min_rtt/4 > 0, nothing lost yet:
    # pipe = 7000 − 1000 = 6000; third: 2000 SACKed (not > 2 · 1000), 2 ranges: 7000 − 2000
    # = 5000; fourth: as above
    assert a["pipe"].to_list()[1:] == [6000, 5000, 1000]


def test_pipe_in_recovery_a_hole_below_one_sacked_segment_is_lost():
    # In recovery tcp_rack_reo_wnd is 0 whatever sacked_out is. 6 segments 1..6001; the ACK
    # 1001 with 3 segments SACKed (2001-5001: > 2 · 1000) starts recovery and 1001-2001 is
    # retransmitted; its ACK (5001) leaves 5001-6001 outstanding, and a new segment 6001-7001
    # goes out. The ACK 5001 SACKing 6001-7001 (1 segment, 1 range): in recovery (the episode's
    # recovery point is 6001, not yet reached), so the hole 5001-6001 below it is lost:
    # outstanding 7001 − 5001 = 2000, pipe = 2000 − 1000 SACKed − 1000 lost = 0.
    p = hs() + [seg(0.0502 + k * 1e-4, 1 + k * 1000) for k in range(6)]
    p += [
        ack(0.1002, 1001),
        ack(0.1003, 1001, sack=[(IA + 2001, IA + 5001)]),
        seg(0.1004, 1001),  # the retransmission of 1001-2001
        ack(0.1505, 5001),
        seg(0.1506, 6001),
        ack(0.2007, 5001, sack=[(IA + 6001, IA + 7001)]),
    ]
    a = run(p).acks.row(-1, named=True)
    assert (a["state"], a["outstanding"], a["sacked_bytes"], a["pipe"]) == ("recovery", 2000, 1000, 0)


def test_scoreboard_past_its_starting_room_keeps_every_range():
    # 80 segments 1..80001, ACK 1001, then one ACK per even segment k = 2, 4, …, 78 SACKing
    # [1 + 1000k, 1001 + 1000k): 39 disjoint ranges, more than the set array starts with
    # (core.SETS_START = 32), so it grows at the 33rd. Each ACK SACKs 1000 new bytes. At the
    # last: outstanding 80001 − 1001 = 79000, SACKed 39 · 1000 = 39000; more than DupThresh
    # ranges, so RACK (reo_wnd 0) loses every hole below the highest SACKed byte 79001: lost =
    # (79001 − 1001) − 39000 = 39000 (holes k = 1, 3, …, 77), pipe = 79000 − 39000 − 39000 =
    # 1000 (79001-80001). A last ACK repeats the first range, [2001, 3001): 0 new bytes, pipe
    # as before — a range lost in the growth would count 1000 new bytes there.
    assert 39 > SETS_START
    p = hs() + [seg(0.0502 + k * 1e-5, 1 + k * 1000) for k in range(80)]
    p += [ack(0.1002, 1001)]
    p += [ack(0.1003 + k * 1e-5, 1001, sack=[(IA + 1 + 1000 * k, IA + 1001 + 1000 * k)]) for k in range(2, 80, 2)]
    p += [ack(0.1010, 1001, sack=[(IA + 2001, IA + 3001)])]
    a = run(p).acks
    assert a["sacked_bytes"].to_list() == [0] + [1000] * 39 + [0]
    assert a.select("outstanding", "pipe").rows()[-2:] == [(79000, 1000)] * 2


def test_dsack_inside_second_block_is_not_counted_as_sacked():
    p = hs() + [seg(0.0502 + k * 1e-4, 1 + k * 1000) for k in range(4)]
    p += [
        ack(0.1002, 1001),
        ack(0.1003, 1001, sack=[(IA + 2001, IA + 4001)]),
        # first block 2001-3001 lies inside the second 2001-4001: D-SACK (RFC 2883 §4.2)
        ack(0.1004, 1001, sack=[(IA + 2001, IA + 3001), (IA + 2001, IA + 4001)]),
    ]
    a = run(p).acks
    assert a["sacked_bytes"].to_list() == [0, 2000, 0]
    assert a["dsack_bytes"].to_list() == [0, 0, 1000]


# ---- episodes ----------------------------------------------------------------------------------------


def test_retransmission_of_non_head_without_dupacks_is_no_episode():
    # a tail-loss-probe-like resend of the last segment 40 ms after the ACK, no duplicates
    p = hs() + [seg(0.0502, 1), seg(0.0503, 1001), seg(0.0504, 2001), ack(0.1002, 1001), seg(0.1402, 2001)]
    fe = run(p)
    assert fe.segments["rexmit"].to_list()[-1] is True
    assert fe.episodes.height == 0


def test_lost_retransmission_turns_recovery_into_rto():
    # SACK recovery for 1001 at 0.1006; the retransmission is lost; the head is resent 0.5 s
    # after the last cumulative ACK (RTO = 0.05 + 0.2 s): a new episode of kind rto (Loss)
    p = hs() + [seg(0.0502 + k * 1e-4, 1 + k * 1000) for k in range(5)]
    p += [ack(0.1002, 1001)] + [
        ack(0.1003 + k * 1e-4, 1001, sack=[(IA + 2001, IA + 3001 + k * 1000)]) for k in range(3)
    ]
    p += [seg(0.1006, 1001), seg(0.6003, 1001), ack(0.6504, 5001)]
    fe = run(p)
    assert fe.episodes["kind"].to_list() == ["sack_recovery", "rto"]
    e0, e1 = fe.episodes.rows(named=True)
    assert e0["end_ns"] == e1["start_ns"] == int(round(0.6003e9))
    assert fe.acks["state"].to_list()[-1] == "open"


def test_recovery_point_acked_with_a_lost_retransmission_beyond_it_restarts_recovery():
    # SACK recovery for 1001 (recovery point 5001 = snd_max at 0.1006). Inside it the sender sends
    # 5001-9001; SACKs of 6001-9001 (3 segments above 5001: RFC 6675 IsLost) make it resend
    # 5001 at 0.1503. The ACK of 0.1506 reaches the recovery point (episode 0 ends) while that
    # retransmission is still outstanding and not SACKed: Linux leaves recovery and enters it
    # again on the same ACK (lost_out > 0), a second congestion event (recovery point 9001,
    # snd_max then) that ends with the ACK of 9001. Without the rule the trace shows one episode
    # and the flow "open" from 0.1506.
    p = hs() + [seg(0.0502 + k * 1e-4, 1 + k * 1000) for k in range(5)]
    p += [ack(0.1002, 1001)] + [
        ack(0.1003 + k * 1e-4, 1001, sack=[(IA + 2001, IA + 3001 + k * 1000)]) for k in range(3)
    ]
    p += [seg(0.1006, 1001)] + [seg(0.1007 + k * 1e-4, 5001 + k * 1000) for k in range(4)]
    p += [
        ack(0.1500, 1001, sack=[(IA + 6001, IA + 8001), (IA + 2001, IA + 5001)]),
        ack(0.1501, 1001, sack=[(IA + 6001, IA + 9001), (IA + 2001, IA + 5001)]),
        seg(0.1503, 5001),
        ack(0.1506, 5001, sack=[(IA + 6001, IA + 9001)]),
        ack(0.2004, 9001),
    ]
    fe = run(p)
    assert fe.episodes["kind"].to_list() == ["sack_recovery", "sack_recovery"]
    e0, e1 = fe.episodes.rows(named=True)
    assert e0["end_ns"] == e1["start_ns"] == int(round(0.1506e9))
    assert e0["recovery_point"] == 5001 and e1["recovery_point"] == 9001
    assert e1["end_ns"] == int(round(0.2004e9))
    a = fe.acks.filter(pl.col("ts_ns") == int(round(0.1506e9))).row(0, named=True)
    assert a["state"] == "recovery" and a["cong_event"] == "sack_recovery"
    assert fe.acks["state"].to_list()[-1] == "open"


def test_ack_for_unseen_data_moves_snd_max_and_warns():
    p = hs() + [seg(0.0502, 1), ack(0.1002, 2001)]  # 1001-2001 never captured
    fe = run(p)
    assert fe.acks["snd_max"].to_list() == [2001]
    assert any("did not see" in w.message and w.count == 1 for w in fe.warnings)


# ---- rounds and limits --------------------------------------------------------------------------------


def test_idle_round_ends_on_first_advancing_ack():
    # everything ACKed at 0.1003 (round 0 ends there); nothing outstanding when round 1 opens,
    # so its target is the ACK itself and the first ACK that advances (0.6502) closes it
    p = hs() + [
        seg(0.0502, 1),
        seg(0.0503, 1001),
        ack(0.1002, 1001),
        ack(0.1003, 2001),
        seg(0.6001, 2001),
        ack(0.6502, 3001),
    ]
    r = run(p).rounds
    assert r["target_seq"].to_list() == [2001, 2001]
    assert r["end_ns"].to_list() == [int(round(0.1003e9)), int(round(0.6502e9))]
    # both drained to 0 outstanding: application-limited
    assert r["limit"].to_list() == ["app", "app"]


def test_rwnd_limited_when_peak_reaches_window_minus_mss():
    # window 4000 bytes (raw 500 with scale 3 -> 4000); the sender keeps 4000 in flight
    p = hs(ws=3)
    t = 0.0502
    for k in range(4):
        p.append(seg(t + k * 1e-4, 1 + k * 1000))
    for r in range(3):
        base = 0.1 + r * 0.05
        for k in range(4):
            n = r * 4 + k
            p.append(ack(base + k * 1e-4, 1001 + n * 1000))
            p.append(seg(base + k * 1e-4 + 1e-5, 4001 + n * 1000))
    rounds = run(p).rounds
    assert rounds["rwnd_bytes"].to_list()[0] == 4000
    assert rounds["peak_flight_bytes"].to_list()[:3] == [4000, 4000, 4000]
    assert rounds["limit"].to_list()[:3] == ["rwnd", "rwnd", "rwnd"]


def test_window_that_halves_without_congestion_signal_is_app_limited():
    # round peaks 8000 then 3000 with no loss: 3000 < 0.5 * 8000 -> app (sender had no data)
    p = hs(ws=7) + [seg(0.0502 + k * 1e-4, 1 + k * 1000) for k in range(8)]
    p += [ack(0.1002 + k * 1e-4, 1001 + k * 1000) for k in range(7)]
    p += [seg(0.1010 + k * 1e-4, 8001 + k * 1000) for k in range(3)]
    p += [ack(0.1009, 8001)] + [ack(0.1510 + k * 1e-4, 9001 + k * 1000) for k in range(3)]
    r = run(p).rounds
    assert r["peak_flight_bytes"].to_list()[0] == 8000
    assert r.filter(pl.col("round") == 1)["limit"].to_list() == ["app"]


# ---- vantage ----------------------------------------------------------------------------------------


def test_vantage_receiver_from_handshake_and_rtt_correction():
    # SYN -> SYN/ACK 0.1 ms (B answers at once: capture at B), SYN/ACK -> ACK 50 ms; A sends the
    # data so B is the receiver; the sender-side part (50 ms) is added to every sample
    p = hs(t_syn=0.0, t_sa=0.0001, t_ack=0.0501) + [seg(0.0600, 1), ack(0.0601, 1001)]
    fe = run(p)
    assert fe.vantage == "receiver"
    assert fe.rtt_offset_s == pytest.approx(0.05)
    a = fe.acks.row(0, named=True)
    assert a["rtt_raw_s"] == pytest.approx(0.0001)
    assert a["rtt_s"] == pytest.approx(0.0501)


def test_vantage_unknown_without_handshake_or_samples():
    fe = run([seg(0.0, 1), ack(0.05, 1001)])
    assert fe.vantage == "unknown" and fe.rtt_offset_s == 0.0


# ---- errors -------------------------------------------------------------------------------------------


def test_missing_columns_is_input_error():
    df = packets_frame(hs()).drop("seq")
    with pytest.raises(InputError, match="lacks columns: seq"):
        events_from_packets(df)


def test_unknown_flow_id_is_input_error():
    pk = packets_frame(hs())
    cap = Capture(
        meta=CaptureMeta(
            path="x.pcap",
            format="pcap",
            link_types=["EN10MB"],
            snaplen=None,
            packets_total=3,
            packets_tcp=3,
            first_ns=0,
            last_ns=1,
        ),
        packets=pk,
        flows=schema.empty(schema.FLOWS),
    )
    with pytest.raises(InputError, match="no flow with id 9"):
        flow_events(cap, 9)


def test_tables_follow_the_schema():
    fe = run(hs() + [seg(0.0502, 1), ack(0.1002, 1001)])
    for df, cols in (
        (fe.segments, schema.SEGMENTS),
        (fe.acks, schema.ACKS),
        (fe.episodes, schema.EPISODES),
        (fe.rounds, schema.ROUNDS),
    ):
        assert dict(df.schema) == schema.polars_schema(cols)


# ---- CLI ----------------------------------------------------------------------------------------------

SYN = REPO / "samples" / "synthetic" / "sack_recovery.pcap"
CLI = [sys.executable, "-m", "hscc_trace"]


def _cli(*args):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=REPO)


@pytest.mark.skipif(not SYN.exists(), reason="synthetic captures not generated")
def test_cli_events_formats(tmp_path):
    r = _cli("events", str(SYN), "--flow", "0", "--kind", "episodes", "-o", "-")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[0].startswith("episode,kind,start_ns") and lines[1].split(",")[1] == "sack_recovery"
    out = tmp_path / "acks.json"
    assert _cli("events", str(SYN), "--flow", "0", "--kind", "acks", "-o", str(out)).returncode == 0
    rows = json.loads(out.read_text())
    assert [r["dupack"] for r in rows] == [0, 0, 1, 2, 3, 0]
    pq = tmp_path / "rounds.parquet"
    assert _cli("events", str(SYN), "--flow", "0", "--kind", "rounds", "-o", str(pq)).returncode == 0
    assert pl.read_parquet(pq)["target_seq"].to_list() == [6001]


@pytest.mark.skipif(not SYN.exists(), reason="synthetic captures not generated")
def test_cli_events_bad_input_one_line_exit_2(tmp_path):
    r = _cli("events", str(SYN), "--flow", "0", "-o", str(tmp_path / "x.xlsx"))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "use .parquet" in r.stderr
    r = _cli("events", str(SYN), "--flow", "7")
    assert r.returncode == 2 and "no flow with id 7" in r.stderr and "Traceback" not in r.stderr
