"""Reno / NewReno and the engine branches they exercise, ACK by ACK, worked out by hand.

Streams come from replay_synth.stream (MSS = 1000 B, windows in packets). With a constant
outstanding F the flight before an ACK of a packets is F + a (replay_synth docstring), so F = 100
is a cwnd-limited sender.
"""

from __future__ import annotations

import math

import pytest
from replay_synth import MSS, stream

from hscc_trace.replay import engine


def run(specs, algo="reno", flight=100, **params):
    df = stream(specs, flight=flight)
    label = engine.replay(df, MSS, [algo], [f"{algo}.{k}={v}" for k, v in params.items()])
    return next(iter(label.values()))


def cw(out):
    return out["cwnd"].to_list()


# --- slow start ------------------------------------------------------------------------------------


def test_slow_start_linux_one_packet_per_ack():
    # iw = 10, ssthresh = inf. tcp_slow_start: cwnd = min(cwnd + acked, ssthresh):
    # 10+1 = 11, 11+1 = 12, 12+1 = 13.
    out = run([{}, {}, {}])
    assert cw(out) == [11.0, 12.0, 13.0]
    assert out["ssthresh"].to_list() == [None, None, None]  # infinite ssthresh is null
    assert out["phase"].to_list() == ["slow_start"] * 3


def test_slow_start_linux_stretch_ack_adds_all_packets():
    # Linux has no ABC limit: an ACK of 3 packets adds 3 (10 → 13), then 2 more (13 → 15).
    out = run([{"a": 3}, {"a": 2}])
    assert cw(out) == [13.0, 15.0]


def test_slow_start_rfc_abc_limit_L():
    # RFC 3465: cwnd += min(N, L), L = 2. ACK of 3 packets: 10 + min(3, 2) = 12;
    # ACK of 1: 12 + 1 = 13; with L = 1 the 3-packet ACK adds only 1: 10 → 11.
    assert cw(run([{"a": 3}, {"a": 1}], flavor="rfc")) == [12.0, 13.0]
    assert cw(run([{"a": 3}], flavor="rfc", L=1)) == [11.0]


# --- congestion avoidance -----------------------------------------------------------------------------


def test_congestion_avoidance_rfc_increment():
    # newreno (rfc, full ACK exit), iw 19.
    # ACK0: SS, 19 + 1 = 20.
    # ACK1: dupACK (a=0) entering recovery with 20 packets outstanding:
    #       ssthresh = max(min(20, cwnd 20)/2, 2) = 10; rfc sets cwnd = ssthresh = 10.
    # ACK2: back to open, 5 packets acked: exit → cwnd = ssthresh = 10; then CA: 10 + 5/10 = 10.5.
    # ACK3: 1 packet: 10.5 + 1/10.5 = 10.595238…
    out = run(
        [{}, {"a": 0, "F": 20, "state": "recovery", "event": "fast_retransmit"}, {"a": 5}, {}], algo="newreno", iw=19
    )
    c = cw(out)
    assert c[:3] == [20.0, 10.0, 10.5]
    assert c[3] == pytest.approx(10.5 + 1 / 10.5, abs=1e-12)
    assert out["ssthresh"].to_list()[1:] == [10.0, 10.0, 10.0]
    assert out["state"].to_list() == ["open", "recovery", "open", "open"]


def test_segment_counter_linux():
    # iw 10. ACK0 enters recovery: ssthresh = max(10 >> 1, 2) = 5, snd_cwnd_cnt = 0; no packet
    # delivered on it, so PRR leaves cwnd alone (10).
    # ACK1 ends recovery: cwnd = ssthresh = 5, then tcp_cong_avoid_ai(w=5, acked=1): cnt 0 → 1.
    # ACK2..4: cnt 2, 3, 4 (cwnd 5). ACK5: cnt 5 ≥ w = 5 → cwnd 6, cnt 0.
    # ACK6..10 (w = 6): cnt 1..5; ACK11: cnt 6 → cwnd 7.
    specs = [{"a": 0, "state": "recovery", "event": "fast_retransmit"}] + [{} for _ in range(11)]
    c = cw(run(specs))
    assert c == [10.0, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 7]


# --- congestion events --------------------------------------------------------------------------


def test_loss_halving_linux_ssthresh_from_cwnd():
    # tcp_reno_ssthresh = max(cwnd >> 1, 2): iw 21 → ssthresh 10 (integer halving), not 10.5,
    # and independent of the 40 packets outstanding.
    out = run([{"a": 0, "F": 40, "state": "recovery", "event": "sack_recovery"}], iw=21)
    assert out["ssthresh"].to_list() == [10.0]
    # floor: ssthresh is never below 2 (iw 3 → max(1, 2) = 2)
    out = run([{"a": 0, "F": 40, "state": "recovery", "event": "sack_recovery"}], iw=3)
    assert out["ssthresh"].to_list() == [2.0]


@pytest.mark.parametrize("algo", ["reno", "newreno"])
@pytest.mark.parametrize(
    "iw, flight, expected",
    [
        # RFC 5681 eq. 4: ssthresh = max(FlightSize/2, 2), FlightSize = min(trace flight, replayed cwnd)
        (11, 100, 5.5),  # trace flight 100 > replayed 11: min = 11 → 5.5 (the trace's 100 gave 50, a raise)
        (21, 12, 6.0),  # application-limited trace, flight 12 < 21: 12/2 = 6 (cwnd/2 would be 10.5)
        (21, 40, 10.5),  # flight 40 > 21: 21/2 = 10.5 (the trace's flight gave 20)
        (3, 2, 2.0),  # min(2, 3)/2 = 1 → floor 2
    ],
)
def test_rfc_ssthresh_flightsize_is_min_of_trace_flight_and_replayed_cwnd(algo, iw, flight, expected):
    out = run([{"a": 0, "F": flight, "state": "recovery", "event": "fast_retransmit"}], algo=algo, iw=iw, flavor="rfc")
    assert out["ssthresh"].to_list() == [expected]
    assert cw(out) == [expected]  # rfc: cwnd = ssthresh on entry (RFC 6675 §5)
    assert expected <= max(iw / 2, 2.0)  # a reduction never raises the replayed window


def test_recovery_exit_sets_cwnd_to_ssthresh():
    # linux, iw 30 → ssthresh 15 on entry; in recovery without deliveries cwnd is untouched (30);
    # the ACK that ends recovery sets cwnd = ssthresh = 15 and then grows in CA with cnt = 1 (< 15).
    specs = [{"a": 0, "state": "recovery", "event": "fast_retransmit"}, {"a": 0, "state": "recovery"}, {}]
    out = run(specs, iw=30)
    assert cw(out) == [30.0, 30.0, 15.0]
    assert out["state"].to_list() == ["recovery", "recovery", "open"]


def test_recovery_exit_reno_rfc_on_first_new_ack():
    # reno rfc (recovery_exit = new_ack, RFC 5681 §3.2 step 6): the first ACK of new data ends
    # recovery even though the trace (NewReno sender) stays in recovery until its full ACK.
    # iw 20; ACK0 (20 packets outstanding): ssthresh = min(20, 20)/2 = 10, cwnd = 10.
    # ACK1 (partial ACK, trace still in recovery): Reno exits: cwnd = 10, then CA +1/10 = 10.1.
    # ACK2: CA again: 10.1 + 1/10.1.  NewReno (full_ack) holds at 10 until the trace's exit.
    specs = [
        {"a": 0, "F": 20, "state": "recovery", "event": "fast_retransmit"},
        {"state": "recovery"},
        {"state": "recovery"},
        {},
    ]
    reno = cw(run(specs, flavor="rfc", iw=20))
    assert reno[:2] == [10.0, 10.1]
    assert reno[2] == pytest.approx(10.1 + 1 / 10.1)
    newreno = cw(run(specs, algo="newreno", iw=20))
    assert newreno[:3] == [10.0, 10.0, 10.0]
    assert newreno[3] == pytest.approx(10.1)  # exit at ACK3: 10, then + 1/10


def test_rto_linux():
    # iw 20. ACK0: SS → 21.
    # ACK1 carries the RTO (trace: loss): ssthresh = 21 >> 1 = 10, cwnd = in-flight + 1 = 1,
    #       then the ACK itself (1 packet, Loss state grows) slow start: min(1 + 1, 10) = 2.
    # ACK2 (loss): 3. ACK3 (open again): 4.
    specs = [{}, {"state": "loss", "event": "rto"}, {"state": "loss"}, {}]
    out = run(specs, iw=20)
    assert cw(out) == [21.0, 2.0, 3.0, 4.0]
    assert out["ssthresh"].to_list() == [None, 10.0, 10.0, 10.0]
    assert out["state"].to_list() == ["open", "loss", "loss", "open"]


def test_rto_rfc_ssthresh_flightsize_bounded_by_replayed_cwnd():
    # rfc RTO: ssthresh = max(min(flight, cwnd)/2, 2). iw 20, trace flight 30: min = 20 → 10
    # (the trace's flight gave 15); cwnd = 1 then + min(1, L) = 2.
    out = run([{"F": 30, "state": "loss", "event": "rto"}], iw=20, flavor="rfc")
    assert out["ssthresh"].to_list() == [10.0]
    assert cw(out) == [2.0]
    # trace flight 14 < cwnd 20 (application-limited): 14/2 = 7
    out = run([{"F": 14, "state": "loss", "event": "rto"}], iw=20, flavor="rfc")
    assert out["ssthresh"].to_list() == [7.0]


def test_rto_during_recovery_keeps_ssthresh():
    # Linux tcp_enter_loss reduces ssthresh only once per episode: recovery entry at iw 20 gives
    # ssthresh 10; the RTO inside that recovery keeps 10 (not cwnd/2 again) and sets cwnd 1 → 2.
    specs = [{"a": 0, "state": "recovery", "event": "fast_retransmit"}, {"state": "loss", "event": "rto"}]
    out = run(specs, iw=20)
    assert out["ssthresh"].to_list() == [10.0, 10.0]
    assert cw(out)[1] == 2.0


def test_prr_linux():
    # Linux tcp_cwnd_reduction (RFC 6937), iw 20 → prior_cwnd 20, ssthresh 10.
    # ACK0 (enters SACK recovery, 1 SACKed, pipe 18): prr_delivered 1, prr_out 0,
    #       delta = 10 − 18 < 0 → sndcnt = ceil(10·1/20) − 0 = 1 → cwnd = 18 + 1 = 19.
    # ACK1 (1 new packet was sent → prr_out 1; 1 SACKed; pipe 18): prr_delivered 2,
    #       sndcnt = ceil(10·2/20) − 1 = 0 → cwnd 18.
    # ACK2 (nothing sent; 1 SACKed; pipe 17): prr_delivered 3, sndcnt = ceil(30/20) − 1 = 1 → 18.
    # ACK3 (1 sent → prr_out 2; 1 SACKed; pipe 17): prr_delivered 4, sndcnt = ceil(40/20) − 2 = 0 → 17.
    # ACK4 (nothing sent; the hole is ACKed: 1 packet delivered; pipe 8): prr_delivered 5,
    #       delta = 10 − 8 = 2 ≥ 0 → sndcnt = min(2, max(5 − 2, 1) + 1) = 2 → cwnd = 8 + 2 = 10.
    # Outstanding F (SACKed data stays outstanding; F changes with sends and cumulative ACKs):
    # 19, 20 (one sent), 20, 21 (one sent), 20 (one cumulatively ACKed).
    specs = [
        {"a": 0, "s": 1, "F": 19, "pipe": 18, "state": "recovery", "event": "sack_recovery"},
        {"a": 0, "s": 1, "F": 20, "pipe": 18, "state": "recovery"},
        {"a": 0, "s": 1, "F": 20, "pipe": 17, "state": "recovery"},
        {"a": 0, "s": 1, "F": 21, "pipe": 17, "state": "recovery"},
        {"a": 1, "s": 0, "F": 20, "pipe": 8, "state": "recovery"},
    ]
    assert cw(run(specs, iw=20)) == [19.0, 18.0, 18.0, 17.0, 10.0]


def test_undo_linux_restores_prior_window():
    # iw 20. ACK0 enters recovery (ssthresh 10; 1 SACKed, pipe 18 → PRR cwnd 19).
    # ACK1: the trace proves the episode spurious: cwnd = max(cwnd, prior_cwnd) = max(19, 20) = 20,
    #       ssthresh back to prior (max(inf, ¾·20) = inf → null), state open; the ACK then grows
    #       cwnd in slow start by its newly delivered packet: it advances 2 packets of which 1 was
    #       SACKed before → 1 delivered → 21.
    specs = [
        {"a": 0, "s": 1, "F": 19, "pipe": 18, "state": "recovery", "event": "sack_recovery"},
        {"a": 2, "undo": True},
    ]
    out = run(specs, iw=20)
    assert cw(out) == [19.0, 21.0]
    assert out["ssthresh"].to_list() == [10.0, None]
    assert out["state"].to_list() == ["recovery", "open"]


# --- cwnd validation (Linux tcp_is_cwnd_limited) -------------------------------------------------------


def test_not_cwnd_limited_hold_in_congestion_avoidance_linux():
    # ssthresh 5 after a loss (iw 10); afterwards only 2 packets outstanding (application-limited):
    # flight before each ACK = 2 + 1 = 3 < cwnd 5 → tcp_is_cwnd_limited false → no growth at all
    # (not even the segment counter). The rfc flavor has no such check and grows (+1/cwnd).
    specs = [{"a": 0, "F": 5, "state": "recovery", "event": "fast_retransmit"}] + [{"F": 2} for _ in range(12)]
    linux = cw(run(specs))
    assert linux[1:] == [5.0] * 12
    out = run(specs, flavor="rfc")
    assert cw(out)[1] == 2.5 + 1 / 2.5  # rfc: ssthresh = max(5/2, 2) = 2.5; exit 2.5 then + 1/2.5
    assert cw(out)[-1] > 5.0


def test_slow_start_twice_max_packets_out_rule_linux():
    # In slow start Linux grows while cwnd < 2·max_packets_out even when not cwnd-limited.
    # F = 5: the first ACK sees 6 packets sent (5 outstanding + the 1 it acks), flight 6 < 10 so
    # not cwnd-limited, max_packets_out = 6: 10 < 12 → 11; 11 < 12 → 12; 12 < 12 false → hold.
    c = cw(run([{"F": 5} for _ in range(6)]))
    assert c == [11.0, 12.0, 12.0, 12.0, 12.0, 12.0]


def test_sack_only_ack_does_not_grow():
    # Linux FLAG_DATA_ACKED: a duplicate ACK that only SACKs (open state, e.g. reordering) does
    # not raise cwnd: 10 → 11 (normal ACK), 11 (SACK-only), 12 (normal).
    c = cw(run([{}, {"a": 0, "s": 1}, {}]))
    assert c == [11.0, 11.0, 12.0]


def test_ecn_reduces_once_per_round():
    # flavor rfc (RFC 3168 §6.1.2): an ECN echo in the open state halves at once — ssthresh =
    # cwnd / 2, cwnd = min(cwnd, ssthresh); a second ECE in the same round is ignored. iw 20: ACK0
    # ECE → ssthresh 10, cwnd 10, then congestion avoidance +1/cwnd → 10.1; ACK1 ECE (same round)
    # → ignored, 10.1 + 1/10.1 = 10.1990…
    specs = [{"event": "ecn", "ece": True}, {"event": "ecn", "ece": True}]
    out = run(specs, iw=20, flavor="rfc")
    assert cw(out) == pytest.approx([10.1, 10.1 + 1 / 10.1])
    assert out["ssthresh"].to_list() == [10.0, 10.0]


def test_ecn_linux_cwr_reduces_by_prr_until_high_seq():
    # flavor linux: the ECE puts the sender in CWR (tcp_enter_cwr: high_seq = snd_nxt, prior_cwnd
    # 20, ssthresh 20 >> 1 = 10) and tcp_cwnd_reduction (PRR, RFC 6937) brings the window down as
    # ACKs come back, with no growth:
    # ACK0 (1 acked, 19 in flight; high_seq = snd_una + 19): delta = 10 − 19 < 0 → sndcnt =
    #   ceil(10 · 1 / 20) − prr_out 0 = 1 → cwnd = 19 + 1 = 20
    # ACK1 (ECE again: ignored in CWR; 1 acked, 18 in flight, nothing sent since): sndcnt =
    #   ceil(10 · 2 / 20) − 0 = 1 → cwnd = 18 + 1 = 19
    # ACK2 (19 acked: snd_una passes high_seq) → tcp_end_cwnd_reduction: cwnd = ssthresh = 10,
    #   open again, and congestion avoidance on the same ACK: cnt 0 + 19 ≥ 10 → +19 // 10 = 1 → 11
    specs = [
        {"event": "ecn", "ece": True, "F": 19},
        {"event": "ecn", "ece": True, "F": 18},
        {"a": 19, "F": 10},
    ]
    out = run(specs, iw=20)
    assert cw(out) == [20.0, 19.0, 11.0]
    assert out["ssthresh"].to_list() == [10.0, 10.0, 10.0]


def test_initial_window_from_trace_first_flight():
    # iw = 0 takes the trace's first flight: the first ACK acks 1 packet with 7 outstanding after
    # it → 8 packets were in flight → iw 8; slow start on that ACK → 9.
    assert cw(run([{"F": 7}], iw=0)) == [9.0]


def test_output_schema_and_signals():
    from hscc_trace import schema

    out = run([{}, {}])
    assert out.columns[: len(schema.REPLAY_BASE)] == [c.name for c in schema.REPLAY_BASE]
    assert out.columns[len(schema.REPLAY_BASE) :] == ["cwnd_limited", "phase"]
    assert out["ts_ns"].to_list() == [1_000_000_000, 1_001_000_000]
    assert not math.isnan(out["cwnd"][0])
