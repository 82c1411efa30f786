"""A transmission after idle (replay/_loop.py step 0, flavor linux).

Linux, when the sender transmits with nothing in flight: ``tcp_slow_start_after_idle_check``
(include/net/tcp.h; sysctl tcp_slow_start_after_idle = 1, no ``cong_control`` hook) calls
``tcp_cwnd_restart`` (net/ipv4/tcp_output.c) if now − lsndtime > icsk_rto: ssthresh =
tcp_current_ssthresh, restart_cwnd = min(tcp_init_cwnd, cwnd), cwnd halved once per RTO
elapsed while above restart_cwnd; then ``tcp_event_data_sent`` raises ``CA_EVENT_TX_START``
(CUBIC shifts its epoch, tcp_cubic.c ``cubictcp_cwnd_event``).

The stream (MSS 1000 B, RTT samples 100 ms, no segments: the engine estimates each send time as
its ACK's time minus the ACK's RTT sample, engine._idle_times): 30 ACKs of one packet with 100
outstanding (Reno, flavor linux, iw 10, slow start: cwnd 10 → 40), ACK 30 acknowledges one
packet and leaves nothing outstanding (cwnd 41), ACK 31 comes ``gap`` seconds later after the
sender sent 11 new packets: idle = (t31 − 0.1) − (t30 − 0.1) = gap.

RTO at ACK 31 (replay/_loop.py ``_rto``, Linux srtt + max(4·mdev, tcp_rto_min)): 31 samples of
exactly 100 ms → srtt 0.1, rttvar 0.05·0.75³⁰ ≈ 9e-6 s, 4·rttvar < 0.2 → rto = 0.1 + 0.2 = 0.3 s.
"""

from __future__ import annotations

import math

import pytest
from hook_harness import Hooks
from replay_synth import MSS, stream

from hscc_trace.replay import engine
from hscc_trace.replay import tp as T


def _stream(gap: float):
    specs = [dict(a=1, F=100, t=0.001 * k) for k in range(30)]
    specs.append(dict(a=1, F=0, t=0.030))
    specs.append(dict(a=1, F=10, t=0.030 + gap))
    return stream(specs)  # (ca_rtt_s, which flavor linux times congestion control on, = rtt_s)


def _cwnd(algo: str, gap: float, *params: str) -> list[float]:
    out = engine.replay(_stream(gap), MSS, [algo], [f"{algo}.flavor=linux", *params], compiled=False)
    return next(iter(out.values()))["cwnd"].to_list()


def test_idle_column_is_the_gap_between_the_two_sends():
    prep = engine.prepare(_stream(0.4), MSS)
    # only ACK 31 follows an ACK after which nothing was outstanding, with new data sent
    assert prep.ev[:31, T.E_IDLE].tolist() == [0.0] * 31
    assert prep.ev[31, T.E_IDLE] == pytest.approx(0.4, abs=1e-9)


def test_restart_after_more_than_one_rto_halves_once():
    # gap 0.4 s > rto 0.3: delta = 0.4 − 0.3 = 0.1 > 0 and cwnd 41 > restart min(10, 41) = 10
    # → cwnd ⌊41/2⌋ = 20; delta 0.1 − 0.3 < 0 → stop. ssthresh = tcp_current_ssthresh =
    # max(inf, …) stays unset. Then ACK 31 itself (slow start, 1 packet acknowledged, max
    # packets out 11 at the send: cwnd 20 < 2·11, cwnd-limited) → 21.
    cwnd = _cwnd("reno", 0.4)
    assert cwnd[30] == 41.0
    assert cwnd[31] == 21.0


def test_restart_after_three_rtos_halves_to_the_restart_floor():
    # gap 1.0 s: delta 0.7 → 41 → 20; 0.4 → 20 → 10; 0.1 > 0 but cwnd 10 = restart 10 → stop;
    # cwnd = max(10, 10) = 10, then ACK 31's slow start (10 < 2·11) → 11.
    cwnd = _cwnd("reno", 1.0)
    assert cwnd[31] == 11.0


def test_no_restart_when_idle_is_below_the_rto():
    # gap 0.25 s < rto 0.3: no restart; ACK 31's slow start: 41 < 2·11 is false, not
    # cwnd-limited, cwnd stays 41 (Linux tcp_is_cwnd_limited in slow start: cwnd < 2·max_packets_out)
    cwnd = _cwnd("reno", 0.25)
    assert cwnd[31] == 41.0


def test_flavor_rfc_has_no_idle_restart():
    # the restart is the Linux core's (tcp_slow_start_after_idle): the rfc flavor keeps cwnd 41
    # and ACK 31's slow start adds min(1 acked, L = 2) (RFC 3465 §2.3) → 42
    out = engine.replay(_stream(0.4), MSS, ["reno"], ["reno.flavor=rfc"], compiled=False)
    cwnd = next(iter(out.values()))["cwnd"].to_list()
    assert cwnd[30] == 41.0
    assert cwnd[31] == 42.0


def test_no_restart_for_an_algorithm_with_cong_control():
    # BBR has cong_control: tcp_slow_start_after_idle_check returns before tcp_cwnd_restart. Its
    # own CA_EVENT_TX_START (bbr_cwnd_event, tests below) still runs, but BBR is in STARTUP (its
    # pacing rate kept) and the 1.03 s stream ends long before min_rtt's 10 s expire (no PROBE_RTT
    # to defer): the replay is the same with the idle column zeroed
    prep = engine.prepare(_stream(1.0), MSS)
    with_idle = engine.run("bbr", prep, compiled=False)["cwnd"].to_list()
    prep2 = engine.prepare(_stream(1.0), MSS)
    prep2.ev[:, T.E_IDLE] = 0.0
    without = engine.run("bbr", prep2, compiled=False)["cwnd"].to_list()
    assert prep.ev[31, T.E_IDLE] == pytest.approx(1.0, abs=1e-9)
    assert with_idle == without


def test_cubic_tx_start_shifts_the_epoch_by_the_idle_time():
    # HZ 250: idle 0.2 s = 50 jiffies; epoch_start 100 → 150; now 1.0 s = 250 jiffies ≥ 150
    h = Hooks("cubic", flavor="linux").set(t_epoch=100.0, IDLE=0.2, NOW=1.0)
    h.call("cwnd_event", T.CA_EVENT_TX_START)
    assert h["t_epoch"] == 150.0


def test_cubic_tx_start_shift_is_capped_at_now():
    # idle 0.4 s = 100 jiffies: 100 + 100 = 200 is after now 0.6 s = 150 jiffies → 150
    h = Hooks("cubic", flavor="linux").set(t_epoch=100.0, IDLE=0.4, NOW=0.6)
    h.call("cwnd_event", T.CA_EVENT_TX_START)
    assert h["t_epoch"] == 150.0


def test_cubic_tx_start_without_an_epoch_changes_nothing():
    # epoch_start 0 in Linux (−1 here): no shift
    h = Hooks("cubic", flavor="linux").set(t_epoch=-1.0, IDLE=0.4, NOW=0.6)
    h.call("cwnd_event", T.CA_EVENT_TX_START)
    assert h["t_epoch"] == -1.0


def test_vegas_tx_start_reinitialises_vegas():
    # tcp_vegas_init: baseRTT forgotten, vegas_enable: beg_snd_nxt = snd_nxt (50 000), round reset
    h = Hooks("vegas", flavor="linux").set(
        FLAVOR=T.LINUX, base_rtt=0.05, min_rtt=0.06, cnt_rtt=5, enabled=False, SND_MAX=50_000.0
    )
    h.call("cwnd_event", T.CA_EVENT_TX_START)
    assert math.isinf(h["base_rtt"]) and math.isinf(h["min_rtt"])
    assert h["cnt_rtt"] == 0 and h["enabled"] == 1.0 and h["beg_snd_nxt"] == 50_000.0


# --- BBR (tcp_bbr.c bbr_cwnd_event, CA_EVENT_TX_START while app-limited) ----------------------


def _bbr(**slots: float) -> Hooks:
    # flavor linux, MSS 1000 B; btl_bw 1000 packets/s (the max filter's best sample)
    return Hooks("bbr", flavor="linux").set(**{"FLAVOR": T.LINUX, "bw0_v": 1000.0, "NOW": 2.0, **slots})


def test_bbr_tx_start_in_probe_bw_paces_at_btl_bw():
    # PROBE_BW, pipe full, pacing at gain 1.25: 1000 · 1000 B · 8 · 1.25 · (1 − 1 %) = 9.9 Mbit/s.
    # After idle: gain 1 → 1000 · 1000 · 8 · 0.99 = 7.92 Mbit/s (taken: the pipe is full);
    # idle_restart set; the ACK-aggregation epoch restarts now (2.0 s) with 0 acked
    h = _bbr(mode=2.0, full_bw_reached=1.0, pacing_rate=9.9e6, ack_epoch_stamp=1.5, ack_epoch_acked=37.0)
    h.call("cwnd_event", T.CA_EVENT_TX_START)
    assert h["pacing_rate"] == pytest.approx(7.92e6)
    assert h["idle_restart"] == 1.0 and h["ack_epoch_stamp"] == 2.0 and h["ack_epoch_acked"] == 0.0


def test_bbr_tx_start_in_startup_keeps_the_pacing_rate():
    # STARTUP (mode 0): only idle_restart and the epoch; pacing stays 23 Mbit/s
    h = _bbr(mode=0.0, pacing_rate=23e6, ack_epoch_acked=5.0)
    h.call("cwnd_event", T.CA_EVENT_TX_START)
    assert h["pacing_rate"] == 23e6 and h["idle_restart"] == 1.0 and h["ack_epoch_acked"] == 0.0


def test_bbr_tx_start_in_probe_rtt_checks_its_end():
    # PROBE_RTT (3) whose 200 ms ended at 1.9 s < now 2.0 s: bbr_check_probe_rtt_done →
    # min_rtt_stamp = now, cwnd = max(4, prior_cwnd 60) = 60, back to PROBE_BW (pipe full): mode 2
    h = _bbr(mode=3.0, full_bw_reached=1.0, probe_rtt_done=1.9, prior_cwnd=60.0, CWND=4.0, min_rtt_stamp=0.0)
    h.call("cwnd_event", T.CA_EVENT_TX_START)
    assert h["mode"] == 2.0 and h["CWND"] == 60.0 and h["min_rtt_stamp"] == 2.0


def test_bbr_other_events_change_nothing():
    # CA_EVENT_CWND_RESTART (never raised for BBR: it has cong_control) is not bbr_cwnd_event's
    h = _bbr(mode=2.0, full_bw_reached=1.0, pacing_rate=9.9e6)
    h.call("cwnd_event", T.CA_EVENT_CWND_RESTART)
    assert h["pacing_rate"] == 9.9e6 and h["idle_restart"] == 0.0


def test_bbr_idle_restart_defers_probe_rtt_until_data_is_delivered():
    # min_rtt stamped at 0.5 s, now 11 s > 0.5 + 10 (min_rtt_win): the filter has expired.
    # With idle_restart, bbr_update_min_rtt does not enter PROBE_RTT; this ACK delivers a packet
    # (acked 1), which ends the restart; the next ACK enters PROBE_RTT (mode 3)
    h = _bbr(mode=2.0, full_bw_reached=1.0, min_rtt=0.05, min_rtt_stamp=0.5, idle_restart=1.0, NOW=11.0, ACKED=1.0)
    h.call("_update_min_rtt", 1.0)
    assert h["mode"] == 2.0 and h["idle_restart"] == 0.0
    h.call("_update_min_rtt", 1.0)
    assert h["mode"] == 3.0
    # an ACK that delivers nothing keeps the restart (and so no PROBE_RTT)
    h2 = _bbr(mode=2.0, min_rtt=0.05, min_rtt_stamp=0.5, idle_restart=1.0, NOW=11.0, ACKED=0.0, SACKED=0.0)
    h2.call("_update_min_rtt", 1.0)
    assert h2["mode"] == 2.0 and h2["idle_restart"] == 1.0


def _segments(ts_s: list[float], lengths: list[int]):
    import polars as pl

    # (replay_synth.stream's capture clock starts at 1 s: ACK k at 1 s + t_k)
    return pl.DataFrame({"ts_ns": [round((1.0 + t) * 1e9) for t in ts_s], "len": lengths})


def test_idle_from_segments_is_the_gap_between_the_data_segments_around_the_idle():
    # the same stream, with segments: ACK 30 at 0.030 s leaves nothing outstanding; the last
    # data segment before it at 0.029 s, the first after it at 0.380 s (before ACK 31 at
    # 0.430 s): idle = 0.380 − 0.029 = 0.351 s; the SYN at 0 and the FIN at 0.5 carry no payload
    # and are not send times of data
    prep = engine.prepare(_stream(0.4), MSS)
    prep.ev[:, T.E_IDLE] = 0.0
    engine._idle_times(prep.ev, prep.ts_ns, _segments([0.0, 0.029, 0.380, 0.5], [0, MSS, MSS, 0]))
    assert prep.ev[:31, T.E_IDLE].tolist() == [0.0] * 31
    assert prep.ev[31, T.E_IDLE] == pytest.approx(0.351, abs=1e-9)


def test_no_idle_from_segments_when_fewer_than_two_carry_data():
    # a flow whose segments are a SYN, a FIN and one data segment (the fuzz regression input
    # ipv6_no_payload_flow.pcap has none): no two data segments bracket the idle period, so no
    # value — where it once indexed an empty array
    for lengths in ([0, 0], [0, MSS, 0]):
        prep = engine.prepare(_stream(0.4), MSS)
        prep.ev[:, T.E_IDLE] = 0.0
        engine._idle_times(prep.ev, prep.ts_ns, _segments([0.0, 0.029, 0.5][: len(lengths)], lengths))
        assert prep.ev[:, T.E_IDLE].tolist() == [0.0] * 32
