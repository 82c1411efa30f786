"""The engine's cwnd-limited test with a real-valued window (replay/_loop.py step 1).

Linux decides whether the window limited the last flight with whole packets: in
``tcp_write_xmit`` ``is_cwnd_limited |= tcp_packets_in_flight(tp) >= tcp_snd_cwnd(tp)``, then
``tcp_cwnd_validate`` remembers it for the current window (net/ipv4/tcp_output.c). The
delay-based BPF senders keep Q16 windows and the kernel's ``snd_cwnd`` is their integer part,
so a sender filling its window has ⌊cwnd⌋ packets in flight; the replay keeps the window real.
Compared with the real value (60 in flight against 60.13), the replay read "not cwnd-limited"
and stopped growing where the kernel grew: TCP-Fusion's Reno floor froze for six rounds on the
sweep's path t3 (10 Mbit/s, 100 ms, 0.5 BDP, against CUBIC). The engine compares with ⌊cwnd⌋, as
Linux does (a new capture of t3, replay vs the kernel: median / p90 12.96 % / 38.29 % before, 0 / 0 after).

MSS 1000 B; the synthetic stream's flight before ACK i is ``F(i) + 1`` (replay_synth.stream).
"""

from __future__ import annotations

import math

import pytest
from replay_synth import MSS, stream

from hscc_trace.replay import engine


def _reno_growth(start: float, n: int) -> list[float]:
    """w ← w + 1/w per ACK of one packet (Reno's +1 per window, spread over its ACKs)."""
    w = [start]
    for _ in range(n):
        w.append(w[-1] + 1.0 / w[-1])
    return w


def _replay(flight_below_floor: int) -> tuple[list[float], list[float]]:
    # hrf-cr, flavor linux, iw 10, no RTT sample (HRF's Table 1: no delay information → Reno,
    # +1/cwnd per packet acknowledged, a real-valued window).
    # ACK 0: a duplicate ACK SACKing one packet, fast retransmit: ssthresh = max(10/2, 2) = 5
    #        (eq. (4)); PRR with 10 in flight: cwnd = pipe 10 + 1 = 11.
    # ACK 1: recovery ends: cwnd = ssthresh = 5, then congestion avoidance: 5 + 1/5 = 5.2.
    # ACK k ≥ 2: the sender had filled its window: ⌊w(k−1)⌋ − flight_below_floor packets in
    #        flight before the ACK.
    w = _reno_growth(5.0, 30)  # 5, 5.2, 5.3923, 5.5778, 5.7570, 5.9307, 6.0994, …
    specs = [dict(a=0, s=1, F=10, state="recovery", event="fast_retransmit", rtt=None)]
    specs += [dict(a=1, F=math.floor(w[k - 1] + 1e-9) - 1 - flight_below_floor, rtt=None) for k in range(1, 31)]
    out = next(iter(engine.replay(stream(specs), MSS, ["hrf-cr"], ["hrf-cr.flavor=linux"], compiled=False).values()))
    return out["cwnd"].to_list(), w


def test_linux_cwnd_limited_flight_equal_to_the_integer_window_is_limited():
    # ⌊cwnd⌋ packets in flight: the kernel's snd_cwnd was full, the window grows on every ACK:
    # 5.2, 5.3923, 5.5778, 5.7570, 5.9307, 6.0994, 6.2633, 6.4230, 6.5787, 6.7307, 6.8792 (ACK 11:
    # 6 in flight against 6.7307, which the real-valued comparison read as not limited and held),
    # … 9.2533 after 30 ACKs
    cwnd, w = _replay(0)
    assert cwnd[0] == 11.0
    assert cwnd[1:] == pytest.approx(w[1:], abs=1e-9)
    assert cwnd[11] == pytest.approx(6.8792, abs=1e-4)
    assert cwnd[-1] == pytest.approx(9.2533, abs=1e-4)


def test_linux_cwnd_limited_flight_below_the_integer_window_is_not_limited():
    # one packet fewer than ⌊cwnd⌋ in flight (the application, not the window, was the limit):
    # the window grows only while the last window's cwnd-limited mark lasts (tcp_cwnd_validate
    # keeps it until snd_una passes cwnd_usage_seq), then holds: the flight of 5 before ACK 11
    # is below ⌊6.7307⌋ = 6, and the window holds at 6.7307 for ACKs 11 and 12
    cwnd, w = _replay(1)
    assert cwnd[1:11] == pytest.approx(w[1:11], abs=1e-9)
    assert cwnd[11] == cwnd[12] == pytest.approx(6.7307, abs=1e-4)
