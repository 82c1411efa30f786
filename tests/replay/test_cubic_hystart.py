"""CUBIC flavor linux, HyStart: one test per branch of ``cubictcp_acked`` and ``hystart_update``
(Linux 6.x net/ipv4/tcp_cubic.c), each with the kernel's arithmetic worked by hand.

The hook under test is ``on_rtt_sample`` (the engine calls it with the ACK's ``ca_rtt_us``, what
``tcp_clean_rtx_queue`` hands ``pkts_acked``). Times: ``tp.now`` in s, the HyStart clock in µs
(``bictcp_clock_us`` = ``tcp_mstamp``), the epoch in jiffies (HZ 250). Sequence numbers in bytes.
"""

from __future__ import annotations

import math

from hook_harness import Hooks

INF = math.inf


def _ss(**slots: float) -> Hooks:
    """A CUBIC in slow start (ssthresh ∞, no epoch, HyStart not found), cwnd 100 packets of 1000
    bytes (the harness's MSS), srtt 50 ms, delay_min 50 000 µs, in a round that began at 1.975 s (1 975 000 µs) and
    ends when snd_una passes 1 000 000."""
    base = dict(
        CWND=100.0,
        SSTHRESH=INF,
        SRTT=0.05,
        NOW=2.0,
        SND_UNA=900_000.0,
        SND_MAX=1_100_000.0,
        t_epoch=-1.0,
        delay_min=50_000.0,
        found=False,
        round_start=1_975_000.0,
        last_ack=1_975_000.0,
        end_seq=1_000_000.0,
        curr_rtt=INF,
        sample_cnt=0,
    )
    base.update(slots)
    return Hooks("cubic", flavor="linux").set(**base)


# --- cubictcp_acked -------------------------------------------------------------------------------


def test_delay_samples_right_after_an_epoch_start_are_discarded():
    # epoch_start 300 jiffies, now 2.0 s = 500 jiffies: 500 − 300 = 200 < HZ 250 → return before
    # delay_min: a 40 ms sample leaves delay_min at 50 000 and HyStart untouched
    h = _ss(t_epoch=300.0)
    h.call("on_rtt_sample", 0.040)
    assert h["delay_min"] == 50_000.0 and h["sample_cnt"] == 0


def test_a_sample_one_second_after_the_epoch_start_counts():
    # epoch_start 250 jiffies, now 500: 500 − 250 = 250, not < 250 → delay_min = 40 000 µs
    # (cwnd 100 ≥ ssthresh? no, ssthresh 200 here but found stops HyStart: only delay_min moves)
    h = _ss(t_epoch=250.0, SSTHRESH=200.0, found=True)
    h.call("on_rtt_sample", 0.040)
    assert h["delay_min"] == 40_000.0 and h["sample_cnt"] == 0


def test_delay_min_takes_the_first_sample_and_a_zero_sample_is_one_microsecond():
    # delay_min 0 = none: the first sample sets it; rtt 0.4 µs → floor 0 → delay = 1 µs
    h = _ss(delay_min=0.0, found=True)
    h.call("on_rtt_sample", 0.0000004)
    assert h["delay_min"] == 1.0


def test_hystart_runs_only_in_slow_start():
    # cwnd 100 = ssthresh 100: tcp_in_slow_start false → no hystart_update (sample_cnt stays 0),
    # though delay_min still falls to 45 000
    h = _ss(SSTHRESH=100.0)
    h.call("on_rtt_sample", 0.045)
    assert h["delay_min"] == 45_000.0 and h["sample_cnt"] == 0


# --- hystart_update: the round ----------------------------------------------------------------------


def test_a_round_ends_once_snd_una_passes_end_seq_and_the_sample_opens_the_next():
    # after(snd_una 1 000 001, end_seq 1 000 000) → bictcp_hystart_reset: round_start = last_ack =
    # now 2 000 000 µs, end_seq = snd_nxt 1 100 000, curr_rtt ~0, sample_cnt 0; then the 52 ms
    # sample is the round's first: curr_rtt 52 000, sample_cnt 1
    h = _ss(SND_UNA=1_000_001.0, curr_rtt=51_000.0, sample_cnt=8)
    h.call("on_rtt_sample", 0.052)
    assert h["round_start"] == 2_000_000.0 and h["last_ack"] == 2_000_000.0
    assert h["end_seq"] == 1_100_000.0
    assert h["curr_rtt"] == 52_000.0 and h["sample_cnt"] == 1


def test_snd_una_at_end_seq_keeps_the_round():
    # after() is strict: snd_una 1 000 000 = end_seq → no reset; sample_cnt 3 → 4, curr_rtt
    # min(51 000, 52 000) = 51 000
    h = _ss(SND_UNA=1_000_000.0, curr_rtt=51_000.0, sample_cnt=3)
    h.call("on_rtt_sample", 0.052)
    assert h["round_start"] == 1_975_000.0 and h["sample_cnt"] == 4 and h["curr_rtt"] == 51_000.0


def test_below_hystart_low_window_the_round_resets_but_nothing_is_counted():
    # cwnd 15 < 16: the reset happens (snd_una passed end_seq), then return: sample_cnt 0, curr_rtt ∞
    h = _ss(CWND=15.0, SND_UNA=1_000_001.0, sample_cnt=5)
    h.call("on_rtt_sample", 0.052)
    assert h["round_start"] == 2_000_000.0 and h["sample_cnt"] == 0 and h["curr_rtt"] == INF


# --- hystart_update: ACK-train detection ---------------------------------------------------------


def test_ack_train_fires_past_half_of_delay_min_plus_the_ack_delay():
    # hystart_ack_delay: pacing rate 2·cwnd·mss/srtt = 2·100·1000/0.05 = 4 000 000 B/s;
    # 4·65 536·10⁶ / 4 000 000 = 65 536 µs → capped at 1 000 µs. threshold = (50 000 + 1 000) >> 1
    # = 25 500 (no pacing: halved). now − last_ack = 2 000 000 − 1 999 000 = 1 000 ≤ 2 000 (a train):
    # last_ack = now; now − round_start = 2 000 000 − 1 974 499 = 25 501 > 25 500 → found,
    # ssthresh = cwnd = 100
    h = _ss(round_start=1_974_499.0, last_ack=1_999_000.0)
    h.call("on_rtt_sample", 0.051)
    assert h["found"] == 1.0 and h["SSTHRESH"] == 100.0 and h["hystart_exit"] == 100.0
    assert h["last_ack"] == 2_000_000.0


def test_ack_train_at_the_threshold_does_not_fire():
    # now − round_start = 2 000 000 − 1 974 500 = 25 500, not > 25 500
    h = _ss(round_start=1_974_500.0, last_ack=1_999_000.0)
    h.call("on_rtt_sample", 0.051)
    assert h["found"] == 0.0 and h["SSTHRESH"] == INF and h["last_ack"] == 2_000_000.0


def test_a_gap_over_the_ack_delta_breaks_the_train():
    # now − last_ack = 2 000 000 − 1 997 999 = 2 001 > 2 000 µs: last_ack stays, no detection
    # though now − round_start (30 000) is past the threshold
    h = _ss(round_start=1_970_000.0, last_ack=1_997_999.0)
    h.call("on_rtt_sample", 0.051)
    assert h["found"] == 0.0 and h["last_ack"] == 1_997_999.0


def test_the_ack_delay_below_one_millisecond_at_a_high_pacing_rate():
    # cwnd 10 000, srtt 1 ms: rate 2·10 000·1000/0.001 = 2·10¹⁰ B/s; 262 144·10⁶ / rate = 13.1
    # → 13 µs; threshold = (50 000 + 13) >> 1 = 25 006; now − round_start = 25 007 → found
    h = _ss(CWND=10_000.0, SRTT=0.001, round_start=1_974_993.0, last_ack=1_999_000.0)
    h.call("on_rtt_sample", 0.051)
    assert h["found"] == 1.0 and h["SSTHRESH"] == 10_000.0
    h = _ss(CWND=10_000.0, SRTT=0.001, round_start=1_974_994.0, last_ack=1_999_000.0)
    h.call("on_rtt_sample", 0.051)  # 25 006, not > 25 006
    assert h["found"] == 0.0


# --- hystart_update: delay detection ---------------------------------------------------------------


def test_delay_detection_waits_for_eight_samples():
    # sample_cnt 7 < HYSTART_MIN_SAMPLES 8 → 8, no check, though curr_rtt 60 000 is far above
    h = _ss(sample_cnt=7, last_ack=0.0)
    h.call("on_rtt_sample", 0.060)
    assert h["sample_cnt"] == 8 and h["found"] == 0.0 and h["curr_rtt"] == 60_000.0


def test_delay_detection_fires_above_delay_min_plus_an_eighth():
    # 9th sample: curr_rtt = min(56 300, 56 251) = 56 251; threshold 50 000 + clamp(50 000 >> 3
    # = 6 250, 4 000, 16 000) = 56 250; 56 251 > 56 250 → found, ssthresh = cwnd = 100
    # (last_ack 0: no ACK train)
    h = _ss(sample_cnt=8, curr_rtt=56_300.0, last_ack=0.0)
    h.call("on_rtt_sample", 0.056251)
    assert h["curr_rtt"] == 56_251.0 and h["found"] == 1.0 and h["SSTHRESH"] == 100.0


def test_delay_detection_uses_the_round_minimum():
    # curr_rtt is the round's minimum: 56 250 (an earlier sample) stays though this one is 70 ms;
    # 56 250 is not > 56 250 → no exit
    h = _ss(sample_cnt=8, curr_rtt=56_250.0, last_ack=0.0)
    h.call("on_rtt_sample", 0.070)
    assert h["curr_rtt"] == 56_250.0 and h["found"] == 0.0


def test_delay_threshold_is_clamped_to_four_and_sixteen_milliseconds():
    # delay_min 20 000: 20 000 >> 3 = 2 500 → 4 000; threshold 24 000: curr 24 001 fires
    h = _ss(delay_min=20_000.0, sample_cnt=8, curr_rtt=INF, last_ack=0.0)
    h.call("on_rtt_sample", 0.024001)
    assert h["found"] == 1.0
    # delay_min 200 000: 25 000 → 16 000; threshold 216 000: curr 216 000 does not fire
    h = _ss(delay_min=200_000.0, sample_cnt=8, curr_rtt=INF, last_ack=0.0)
    h.call("on_rtt_sample", 0.216)
    assert h["found"] == 0.0
