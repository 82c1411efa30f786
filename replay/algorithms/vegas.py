"""TCP Vegas — Brakmo & Peterson (1995); Linux net/ipv4/tcp_vegas.c of kernel 6.x (α=2, β=4, γ=1).

Once per RTT round, with ``RTT`` the smallest sample of the round (Vegas' own ``minRTT``, reset
every round) and ``baseRTT`` the smallest sample ever, when the round had more than 2 samples (else
Reno for that ACK). The round: flavor ``linux`` keeps tcp_vegas.c's own — ``beg_snd_nxt`` is the
highest sequence sent when the last adjustment was made (or when Vegas was (re-)enabled: the
start of the connection, the return to the open state), and the round ends on the first ACK
*beyond* it (``after(ack, beg_snd_nxt)``, strictly: an ACK that only reaches it does not end the
round; the first round ends on the first ACK of data, with one sample); flavor ``rfc`` uses the
trace's rounds (the first ACK at or above the snd_max recorded when the round began):

* ``diff`` — packets queued. Flavor ``linux``: ``cwnd·(RTT − baseRTT)/baseRTT`` in integer
  microseconds, RTT + 1 µs (tcp_vegas.c);
  flavor ``rfc``: ``(Expected − Actual)·baseRTT = cwnd·(RTT − baseRTT)/RTT`` (Brakmo & Peterson,
  the same quantity as TCP-Fusion §II-B / CTCP; helpers.vegas_diff);
* slow start: if ``diff > γ`` leave slow start: ``cwnd = min(cwnd, cwnd·baseRTT/RTT + 1)`` (the
  expected window + 1), ``ssthresh = tcp_vegas_ssthresh = min(ssthresh, cwnd)``; otherwise slow
  start continues (Linux tcp_slow_start);
* congestion avoidance: ``diff > β`` → ``cwnd −= 1`` and ``ssthresh = min(ssthresh, cwnd)``;
  ``diff < α`` → ``cwnd += 1``; otherwise hold; cwnd ≥ 2; then (linux)
  ``ssthresh = tcp_current_ssthresh = max(ssthresh, ¾·cwnd)``. (Older kernels' tcp_vegas_ssthresh
  was ``min(ssthresh, cwnd − 1)``; both flavors use the current form — Brakmo & Peterson define
  no ssthresh rule for these decisions.)
* between round ends: slow start grows per ACK (``tcp_slow_start``); congestion avoidance holds.
* flavor ``linux``: ``tcp_vegas_cong_avoid`` has no ``tcp_is_cwnd_limited`` check of its own —
  the per-round decision and the slow start between round ends run whether or not the window was
  the limit; only its Reno fallbacks (``tcp_reno_cong_avoid``: too few samples, or Vegas disabled
  outside the open state — ``doing_vegas_now = 0`` once ``tcp_vegas_state`` left TCP_CA_Open,
  e.g. in TCP_CA_Loss after an RTO, or in TCP_CA_Disorder while SACKed data is outstanding before
  a recovery (helpers.linux_disorder): a round that ends there makes no Vegas decision) check it
  (helpers.reno_cong_avoid).

Losses: Reno (``ssthresh = max(cwnd/2, 2)``, ``tcp_reno_ssthresh``); Vegas restarts its round
sampling when it re-enters the open state (Linux ``tcp_vegas_state`` → ``vegas_enable``): at
recovery exit, and (linux) on every ACK of the loss state, so that sampling starts afresh when the
flow is open again. Flavor ``linux``: a transmission with nothing in flight (``CA_EVENT_TX_START``)
or an idle restart (``CA_EVENT_CWND_RESTART``) re-initialises Vegas (``tcp_vegas_cwnd_event`` →
``tcp_vegas_init``: baseRTT forgotten, ``vegas_enable``).
"""

from __future__ import annotations

import math

from hscc_trace.replay import helpers as H
from hscc_trace.replay._jit import jit
from hscc_trace.replay.interface import Algorithm, Param, Signal
from hscc_trace.replay.state import Field
from hscc_trace.replay.tp import CA_EVENT_CWND_RESTART, CA_EVENT_TX_START, LINUX, OPEN


@jit
def _reset_round(st):
    st.min_rtt = math.inf
    st.cnt_rtt = 0
    st.pending = False


@jit
def _enable(st, tp):
    # tcp_vegas.c vegas_enable(): the next round starts at the current snd_nxt
    st.enabled = True
    st.beg_snd_nxt = tp.snd_max
    _reset_round(st)


@jit
def cwnd_event(st, p, tp, event):
    """tcp_vegas_cwnd_event (net/ipv4/tcp_vegas.c): CA_EVENT_CWND_RESTART or CA_EVENT_TX_START
    → tcp_vegas_init: baseRTT = 0x7fffffff (forgotten), vegas_enable (the next round starts at
    snd_nxt: the engine's snd_max is still the previous ACK's, where the new data begins)."""
    if tp.flavor == LINUX and (event == CA_EVENT_TX_START or event == CA_EVENT_CWND_RESTART):
        st.base_rtt = math.inf
        _enable(st, tp)


@jit
def init(st, p, tp):
    st.base_rtt = math.inf
    st.diff = 0.0
    st.adjust = 0.0
    _reset_round(st)
    # tcp_vegas_init runs when the connection is established: snd_nxt is just past the SYN, the
    # first data byte (relative sequence 1)
    st.enabled = True
    st.beg_snd_nxt = 1.0


@jit
def on_rtt_sample(st, p, tp, rtt):
    st.base_rtt = min(st.base_rtt, rtt)
    st.min_rtt = min(st.min_rtt, rtt)
    st.cnt_rtt += 1


@jit
def on_round_end(st, p, tp):
    st.pending = True


@jit
def on_recovery_exit(st, p, tp):
    _enable(st, tp)  # tcp_vegas_state(TCP_CA_Open) → vegas_enable


@jit
def on_rto(st, p, tp):
    _reset_round(st)


@jit
def ssthresh(st, p, tp):
    return max(math.floor(tp.cwnd / 2.0), 2.0)


@jit
def cong_avoid(st, p, tp, n):
    linux = tp.flavor == LINUX
    if linux and (tp.state != OPEN or H.linux_disorder(tp)):
        # doing_vegas_now = 0 outside TCP_CA_Open (tcp_vegas_state), Disorder too: Reno
        H.reno_cong_avoid(tp, n, 2.0)
        st.enabled = False
        return
    if linux and not st.enabled:
        _enable(st, tp)  # back in TCP_CA_Open (e.g. the loss state ended): vegas_enable
    if linux:
        round_end = tp.snd_una > st.beg_snd_nxt
    else:
        round_end = st.pending or tp.round_end > 0.0
    if round_end:
        st.beg_snd_nxt = tp.snd_max
        if st.cnt_rtt <= 2:
            H.reno_cong_avoid(tp, n, 2.0)  # too few samples: Reno for this ACK
        else:
            rtt = st.min_rtt
            base = st.base_rtt
            cwnd = tp.cwnd
            if linux:  # integer µs arithmetic, vrtt = rtt_us + 1 (tcp_vegas_pkts_acked)
                rtt_us = math.floor(rtt * 1e6) + 1.0
                base_us = math.floor(base * 1e6) + 1.0
                diff = math.floor(cwnd * (rtt_us - base_us) / base_us)
            else:
                diff = H.vegas_diff(cwnd, rtt, base)
            st.diff = diff
            if diff > p.gamma and cwnd < tp.ssthresh:
                # going too fast: leave slow start at the expected window + 1
                target = cwnd * base / rtt
                if linux:
                    target = math.floor(cwnd * (math.floor(base * 1e6) + 1.0) / (math.floor(rtt * 1e6) + 1.0))
                tp.cwnd = min(cwnd, target + 1.0)
                tp.ssthresh = min(tp.ssthresh, tp.cwnd)  # tcp_vegas_ssthresh
                st.adjust = 2.0
            elif cwnd < tp.ssthresh:
                H.slow_start_step(tp, n, 2.0)
                st.adjust = 0.0
            elif diff > p.beta:
                tp.cwnd = cwnd - 1.0
                tp.ssthresh = min(tp.ssthresh, tp.cwnd)  # tcp_vegas_ssthresh
                st.adjust = -1.0
            elif diff < p.alpha:
                tp.cwnd = cwnd + 1.0
                st.adjust = 1.0
            else:
                st.adjust = 0.0
            if tp.cwnd < 2.0:
                tp.cwnd = 2.0
            # Linux: snd_ssthresh = tcp_current_ssthresh() = max(ssthresh, (cwnd>>1) + (cwnd>>2))
            if linux:
                tp.ssthresh = max(tp.ssthresh, math.floor(tp.cwnd / 2.0) + math.floor(tp.cwnd / 4.0))
        _reset_round(st)
    elif tp.cwnd < tp.ssthresh:
        H.slow_start_step(tp, n, 2.0)


ALGORITHMS = (
    Algorithm(
        name="vegas",
        summary="TCP Vegas: once per round, +1 when fewer than α packets are queued, −1 above β",
        citation="Brakmo & Peterson, TCP Vegas (1995) §3; Linux net/ipv4/tcp_vegas.c",
        state=(
            Field("base_rtt", "s", "smallest RTT sample ever (Vegas baseRTT)"),
            Field("min_rtt", "s", "smallest sample since the last per-round adjustment (Vegas minRTT)"),
            Field("cnt_rtt", "", "samples since the last adjustment (Vegas cntRTT)", "int"),
            Field("diff", "packets", "diff at the last adjustment"),
            Field("adjust", "", "the last per-round decision: −1, 0, +1 (2 = left slow start)"),
            Field("pending", "", "a round ended and the adjustment is made on the next cong_avoid", "bool"),
            Field("beg_snd_nxt", "bytes", "flavor linux: the round ends on the first ACK beyond this"),
            Field("enabled", "", "flavor linux: Vegas runs (doing_vegas_now); off outside the open state", "bool"),
        ),
        params=(
            Param(
                "alpha",
                "packets",
                2.0,
                "Linux tcp_vegas.c (alpha = 2)",
                "grow by 1 per round below this backlog",
                lo=0.0,
            ),
            Param(
                "beta",
                "packets",
                4.0,
                "Linux tcp_vegas.c (beta = 4)",
                "shrink by 1 per round above this backlog",
                lo=0.0,
            ),
            Param(
                "gamma", "packets", 1.0, "Linux tcp_vegas.c (gamma = 1)", "leave slow start above this backlog", lo=0.0
            ),
        ),
        signals=(
            Signal("diff", "diff", "packets", "Vegas backlog estimate at the last per-round adjustment"),
            Signal("base_rtt", "base_rtt", "s", "baseRTT: smallest RTT sample"),
            Signal("adjust", "adjust", "", "last per-round decision: −1 shrink, 0 hold, +1 grow, 2 left slow start"),
        ),
        default_flavor="linux",
        flavor_doc="linux: tcp_vegas.c of kernel 6.x (diff over baseRTT, integer windows, cwnd-limited check "
        "only in its Reno fallbacks); "
        "rfc: Brakmo & Peterson's diff = (Expected − Actual)·baseRTT",
    ),
)
