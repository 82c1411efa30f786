"""Westwood+ — Mascolo et al. (TCP Westwood+, "bandwidth estimation"), as summarised in
TCP-Fusion §II-A and HRF-TCP §2.2; Linux net/ipv4/tcp_westwood.c.

Bandwidth estimate B: bytes acknowledged (cumulative + SACKed, Linux ``westwood_acked_count``)
summed over a sampling window of ``max(RTT, 50 ms)`` and fed once per window through two
cascaded 7/8 low-pass filters (helpers.westwood_on_ack; the first sample fills both stages).

* growth: Reno's (helpers.reno_cong_avoid, both flavors);
* congestion event, flavor ``rfc`` (Westwood+ as published, Grieco & Mascolo's algorithm on n
  duplicate ACKs: ``ssthresh = max(2, B·RTTmin/MSS); if cwnd > ssthresh: cwnd = ssthresh``):
  ``ssthresh = max(B·RTTmin/MSS, 2)`` and ``cwnd = min(cwnd, ssthresh)`` — a bandwidth estimate
  above the window never raises it (70.7 stays 70.7, and the flow then slow-starts towards
  ssthresh). The engine holds cwnd at the ssthresh hook's value through recovery (RFC 6675 §5),
  so the hook returns ``min(cwnd, B·RTTmin/MSS)`` and ``on_recovery_exit`` restores the paper's
  ssthresh (B·RTTmin/MSS at the loss, slot ``ssthresh_loss``); on ECN the hook returns
  B·RTTmin/MSS and the engine's ``cwnd = min(cwnd, ssthresh)`` is the same rule;
  flavor ``linux``: ``tcp_reno_ssthresh`` (cwnd/2) on entering recovery, B·RTTmin on RTO
  (``CA_EVENT_LOSS``);
* recovery exit, flavor ``linux`` (Linux ``CA_EVENT_COMPLETE_CWR``):
  ``cwnd = ssthresh = max(B·RTTmin/MSS, 2)`` with B and RTTmin at the exit — no cwnd/2 floor and
  no ``min(cwnd, …)``: tcp_westwood.c sets ``snd_cwnd = snd_ssthresh`` there, which can raise
  the window above its value before the loss;
* RTO: ``cwnd = 1``; Linux also re-measures its RTTmin from the next sample (``reset_rtt_min``),
  which this module does with its own RTTmin slot.
"""

from __future__ import annotations

from hscc_trace.replay import helpers as H
from hscc_trace.replay._jit import jit
from hscc_trace.replay.interface import Algorithm, Param, Signal
from hscc_trace.replay.tp import ACKED, CWND, EV_ECN, EVENT, FLAVOR, LINUX, MSS, SACKED, SSTHRESH

# state slots
WW = 0  # first of helpers.WW_NSLOTS Westwood+ filter slots: bk (bytes), window start (s), bw_ns (bytes/s), bw (bytes/s)
WW_1 = 1
WW_2 = 2
WW_3 = 3
RTT_MIN = 4  # s — Westwood's own RTTmin (re-measured after an RTO, Linux reset_rtt_min)
RESET_RTT_MIN = 5  # 1 = take the next sample as RTTmin
BW_BPS = 6  # bit/s — B for output
BW_RTTMIN = 7  # packets — B·RTTmin/MSS (at least 2), the window the estimate supports
SSTHRESH_LOSS = 8  # packets — flavor rfc: ssthresh = max(B·RTTmin/MSS, 2) set at the last loss
WL = 9  # flavor linux: first of helpers.WL_NSLOTS slots of the estimator as Linux counts it (jiffies):
WL_1 = 10  # bk, window start, bw_ns, bw, snd_una, accounted, first_ack, rtt, rtt_min, reset_rtt_min
WL_2 = 11
WL_3 = 12
WL_4 = 13
WL_5 = 14
WL_6 = 15
WL_7 = 16
WL_8 = 17
WL_9 = 18
NSTATE = 19

P_L = 0  # packets — ABC limit (flavor rfc slow start)
P_HZ = 1  # 1/s — kernel tick rate (flavor linux)
NPARAMS = 2


@jit
def init(st, p, tp):
    H.westwood_init(st, WW, tp)
    H.westwood_linux_init(st, WL, p[P_HZ])
    st[RTT_MIN] = 0.0
    st[RESET_RTT_MIN] = 1.0
    st[SSTHRESH_LOSS] = tp[SSTHRESH]


@jit
def on_rtt_sample(st, p, tp, rtt):
    H.westwood_linux_rtt(st, WL, rtt, p[P_HZ])
    if st[RESET_RTT_MIN] > 0.0 or rtt < st[RTT_MIN]:
        st[RTT_MIN] = rtt
        st[RESET_RTT_MIN] = 0.0


@jit
def _bw_rttmin(st, tp):
    if tp[FLAVOR] == LINUX:  # integer bytes per jiffy × jiffies / MSS, as tcp_westwood_bw_rttmin
        return H.westwood_linux_bw_rttmin(st, WL, tp)
    if not (st[RTT_MIN] > 0.0):
        return 2.0
    return max(st[WW + H.WW_BW] * st[RTT_MIN] / tp[MSS], 2.0)


@jit
def on_ack(st, p, tp):
    if tp[FLAVOR] == LINUX:
        bw = H.westwood_linux_on_ack(st, WL, tp, p[P_HZ])
        st[RTT_MIN] = st[WL + H.WL_RTT_MIN_J] / p[P_HZ]
    else:
        bw = H.westwood_on_ack(st, WW, tp, (tp[ACKED] + tp[SACKED]) * tp[MSS])
    st[BW_BPS] = bw * 8.0
    st[BW_RTTMIN] = _bw_rttmin(st, tp)


@jit
def ssthresh(st, p, tp):
    if tp[FLAVOR] == LINUX:
        return max(float(int(tp[CWND] / 2.0)), 2.0)  # tcp_reno_ssthresh
    w = _bw_rttmin(st, tp)  # Westwood+: ssthresh = max(2, B·RTTmin/MSS)
    st[SSTHRESH_LOSS] = w
    if tp[EVENT] == EV_ECN:  # the engine applies cwnd = min(cwnd, ssthresh) itself
        return w
    return min(tp[CWND], w)  # if cwnd > ssthresh: cwnd = ssthresh (held through recovery)


@jit
def on_rto(st, p, tp):
    tp[SSTHRESH] = _bw_rttmin(st, tp)  # CA_EVENT_LOSS
    st[RESET_RTT_MIN] = 1.0
    st[WL + H.WL_RESET_MIN] = 1.0


@jit
def on_recovery_exit(st, p, tp):
    if tp[FLAVOR] != LINUX:  # cwnd = min(cwnd_at_loss, ssthresh) already (engine); the paper's ssthresh
        tp[SSTHRESH] = st[SSTHRESH_LOSS]
        return
    w = _bw_rttmin(st, tp)  # CA_EVENT_COMPLETE_CWR
    tp[SSTHRESH] = w
    tp[CWND] = w


@jit
def cong_avoid(st, p, tp, n):
    H.reno_cong_avoid(tp, n, p[P_L])


ALGORITHMS = (
    Algorithm(
        name="westwood",
        summary="Westwood+: Reno growth, window set to the bandwidth-delay estimate B·RTTmin after a loss",
        citation="Mascolo et al., TCP Westwood+ (TCP-Fusion §II-A, HRF-TCP §2.2); Linux net/ipv4/tcp_westwood.c",
        state=(
            "ww",
            "ww_1",
            "ww_2",
            "ww_3",
            "rtt_min",
            "reset_rtt_min",
            "bw_bps",
            "bw_rttmin",
            "ssthresh_loss",
            "wl",
            *(f"wl_{k}" for k in range(1, H.WL_NSLOTS)),
        ),
        params=(
            Param("L", "packets", 2.0, "RFC 3465 §2.3", "flavor rfc: slow-start growth limit per ACK", lo=0.0, hi=1e6),
            Param(
                "HZ",
                "1/s",
                250.0,
                "CONFIG_HZ of the reference kernel (samples/*/meta.json)",
                "flavor linux: kernel tick rate (tcp_westwood.c counts time and RTTs in jiffies)",
                lo=1.0,
                hi=10000.0,
            ),
        ),
        signals=(
            Signal("B", "bw_bps", "bit/s", "Westwood+ bandwidth estimate (two cascaded 7/8 filters)"),
            Signal("bw_rttmin", "bw_rttmin", "packets", "B·RTTmin/MSS (≥ 2): ssthresh after a loss"),
            Signal("rtt_min", "rtt_min", "s", "Westwood's RTTmin (re-measured after an RTO)"),
        ),
        default_flavor="linux",
        flavor_doc="rfc: ssthresh = B·RTTmin and cwnd = min(cwnd, ssthresh) at every congestion event; "
        "linux: tcp_westwood (cwnd/2 on entering recovery, B·RTTmin at recovery exit and RTO) in the Linux TCP core",
    ),
)
