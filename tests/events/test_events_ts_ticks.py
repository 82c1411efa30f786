"""Branch tests of ``acks.ca_rtt_s`` for ACKs timed by the timestamp echo, at the sender
(:func:`hscc_trace.events.core.linux_ts_ticks`): Linux hands congestion control such a sample
in whole ticks of its 1 kHz TSval clock (``tcp_rtt_tsopt_us``), not the µs the capture shows.

The flow of every test (hand-built, no capture file): A sends 200 segments of 1000 bytes, one
every 1.25 ms from t = 100 ms (segment k, relative seq 1 + 1000·k, at 100 + 1.25·k ms); B
acknowledges each one RTT later, echoing its TSval. Segment 100 (sent at 225.0 ms) is sent a
second time at 225.2 ms, so the ACK that covers it (at 225.0 ms + RTT) gives no sequence sample
(Karn): it is timed by its echo (``rtt_source`` ``ts``), ACK time − the first time A used the
echoed TSval, 225.0 ms. A's clock is TSval = 5000 + ⌊t / 1 ms⌋ unless a test says otherwise, so
tick boundaries fall on whole ms of the capture clock.
"""

from __future__ import annotations

import math

from hscc_trace.events import events_from_packets
from hscc_trace.events.synth import packets_frame

IA, IB = 1000, 5000


def _flow(rtt_ms: float, clock=lambda t_ms: 5000 + math.floor(t_ms)) -> list[dict]:
    pk: list[dict] = []
    t_syn, t_sa = 0.0, rtt_ms
    pk.append(dict(t=t_syn / 1e3, d=0, seq=IA, flags="S", mss=1000, ws=7, sackok=True, tsval=clock(t_syn), tsecr=0))
    pk.append(
        dict(
            t=t_sa / 1e3, d=1, seq=IB, ack=IA + 1, flags="SA", mss=1000, ws=7, sackok=True, tsval=1, tsecr=clock(t_syn)
        )
    )
    pk.append(dict(t=(t_sa + 0.01) / 1e3, d=0, seq=IA + 1, ack=IB + 1, flags="A", tsval=clock(t_sa + 0.01), tsecr=1))
    ev = []
    for k in range(200):
        t = 100.0 + 1.25 * k
        ev.append((t, 0, k))
        ev.append((t + rtt_ms, 1, k))
    ev.append((225.2, 2, 100))  # the second copy of segment 100, same TSval tick as the first
    for t, kind, k in sorted(ev):
        if kind == 1:  # B's ACK of segment k, echoing the TSval of its first copy
            pk.append(
                dict(
                    t=t / 1e3,
                    d=1,
                    seq=IB + 1,
                    ack=IA + 1 + 1000 * (k + 1),
                    flags="A",
                    tsval=2,
                    tsecr=clock(100.0 + 1.25 * k),
                )
            )
        else:
            pk.append(
                dict(t=t / 1e3, d=0, seq=IA + 1 + 1000 * k, ack=IB + 1, flags="A", len=1000, tsval=clock(t), tsecr=2)
            )
    return pk


def _ack_of_segment_100(rtt_ms: float, **kw) -> tuple[str, float, float]:
    ev = events_from_packets(packets_frame(_flow(rtt_ms, **kw)))
    assert ev.vantage == "sender"
    a = ev.acks.filter(ev.acks["ack"] == 1 + 1000 * 101).row(0, named=True)
    return str(a["rtt_source"]), a["rtt_s"], a["ca_rtt_s"]


def test_a_timestamp_echo_sample_is_handed_to_congestion_control_in_whole_ms() -> None:
    """RTT 20.3 ms. The ACK of segment 100 arrives at 225.0 + 20.3 = 245.3 ms and echoes TSval
    5225 (⌊225.0⌋). The capture's sample is 245.3 − 225.0 = 20.3 ms; the kernel reads its clock
    at 245.3 ms, 5000 + ⌊245.3⌋ = 5245, and hands 5245 − 5225 = 20 ticks = 20 ms."""
    src, rtt, ca = _ack_of_segment_100(20.3)
    assert src == "ts"
    assert abs(rtt - 0.0203) < 1e-9
    assert ca == 0.020


def test_zero_ticks_count_as_one() -> None:
    """RTT 0.4 ms: the ACK arrives at 225.4 ms, in the tick it echoes (5225): 0 ticks, which
    tcp_rtt_tsopt_us counts as 1 — 1 ms where the capture shows 0.4 ms."""
    src, rtt, ca = _ack_of_segment_100(0.4)
    assert src == "ts"
    assert abs(rtt - 0.0004) < 1e-9
    assert ca == 0.001


def test_a_microsecond_clock_keeps_the_capture_value() -> None:
    """A's TSval counts µs (5000 + ⌊t / 1 µs⌋, Linux's usec timestamps): 1000 ticks per ms, not
    a 1 kHz clock — the kernel's sample is then µs too, and the capture's 20.3 ms stays."""
    src, rtt, ca = _ack_of_segment_100(20.3, clock=lambda t_ms: 5000 + math.floor(t_ms * 1000))
    assert src == "ts"
    assert ca == rtt and abs(ca - 0.0203) < 1e-9


def test_tsvals_that_a_1_khz_line_does_not_predict_keep_the_capture_value() -> None:
    """A's TSval advances 2 every 2 ms (5000 + 2·⌊t / 2 ms⌋): 1 per ms on average, as a 1 kHz
    clock, but a 1 ms tick model predicts only about half of its TSvals exactly (< 90 %), so the
    clock is not read and the capture's sample stays: segment 100 (225.0 ms) carries 5224, first
    used then, and its ACK at 245.3 ms gives 20.3 ms."""
    src, rtt, ca = _ack_of_segment_100(20.3, clock=lambda t_ms: 5000 + 2 * math.floor(t_ms / 2))
    assert src == "ts"
    assert ca == rtt and abs(ca - 0.0203) < 1e-9


def test_an_ack_just_before_a_tick_edge_is_counted_in_the_next_tick() -> None:
    """RTT 20.985 ms: the ACK of segment 100 reaches the capture at 245.985 ms. The line fitted
    through A's TSvals (slope 0.99993, tick start at the latest consistent with every TSval)
    reads 245.992 there, 8 µs before tick 5246 begins. The kernel reads its clock
    TS_CLOCK_READ_NS (15 µs) after the capture: 245.992 + 0.015 = 246.007, tick 5246, and
    5246 − 5225 = 21 ticks = 21 ms, where the capture's instant alone would give 20."""
    src, rtt, ca = _ack_of_segment_100(20.985)
    assert src == "ts"
    assert ca == 0.021


def test_an_ack_further_before_a_tick_edge_stays_in_its_tick() -> None:
    """RTT 20.97 ms: the ACK arrives at 245.970 ms, read as 245.977; 15 µs later the clock
    still reads 245.992 < 246, tick 5245: 20 ticks."""
    src, rtt, ca = _ack_of_segment_100(20.97)
    assert src == "ts"
    assert ca == 0.020
