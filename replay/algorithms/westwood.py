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
  ssthresh (B·RTTmin/MSS at the loss, field ``ssthresh_loss``); on ECN the hook returns
  B·RTTmin/MSS and the engine's ``cwnd = min(cwnd, ssthresh)`` is the same rule;
  flavor ``linux``: ``tcp_reno_ssthresh`` (cwnd/2) on entering recovery, B·RTTmin on RTO
  (``CA_EVENT_LOSS``);
* recovery exit, flavor ``linux`` (Linux ``CA_EVENT_COMPLETE_CWR``):
  ``cwnd = ssthresh = max(B·RTTmin/MSS, 2)`` with B and RTTmin at the exit — no cwnd/2 floor and
  no ``min(cwnd, …)``: tcp_westwood.c sets ``snd_cwnd = snd_ssthresh`` there, which can raise
  the window above its value before the loss;
* RTO: ``cwnd = 1``; Linux also re-measures its RTTmin from the next sample (``reset_rtt_min``),
  which this module does with its own RTTmin field.
"""

from __future__ import annotations

from hscc_trace.replay import helpers as H
from hscc_trace.replay._jit import jit
from hscc_trace.replay.interface import TICK_PHASE, Algorithm, Param, Signal
from hscc_trace.replay.state import Field
from hscc_trace.replay.tp import EV_ECN, LINUX


@jit
def init(st, p, tp):
    H.westwood_init(st, tp)
    H.westwood_linux_init(st, p.HZ)
    st.rtt_min = 0.0
    st.reset_rtt_min = True
    st.ssthresh_loss = tp.ssthresh


@jit
def on_rtt_sample(st, p, tp, rtt):
    H.westwood_linux_rtt(st, rtt, p.HZ)
    if st.reset_rtt_min or rtt < st.rtt_min:
        st.rtt_min = rtt
        st.reset_rtt_min = False


@jit
def _bw_rttmin(st, tp):
    if tp.flavor == LINUX:  # integer bytes per jiffy × jiffies / MSS, as tcp_westwood_bw_rttmin
        return H.westwood_linux_bw_rttmin(st, tp)
    if not (st.rtt_min > 0.0):
        return 2.0
    return max(st.ww_bw * st.rtt_min / tp.mss, 2.0)


@jit
def on_ack(st, p, tp):
    if tp.flavor == LINUX:
        bw = H.westwood_linux_on_ack(st, tp, p.HZ, p.tick_phase)
        st.rtt_min = st.wl_rtt_min_j / p.HZ
    else:
        bw = H.westwood_on_ack(st, tp, (tp.acked + tp.sacked) * tp.mss)
    st.bw_bps = bw * 8.0
    st.bw_rttmin = _bw_rttmin(st, tp)


@jit
def ssthresh(st, p, tp):
    if tp.flavor == LINUX:
        return max(float(int(tp.cwnd / 2.0)), 2.0)  # tcp_reno_ssthresh
    w = _bw_rttmin(st, tp)  # Westwood+: ssthresh = max(2, B·RTTmin/MSS)
    st.ssthresh_loss = w
    if tp.event == EV_ECN:  # the engine applies cwnd = min(cwnd, ssthresh) itself
        return w
    return min(tp.cwnd, w)  # if cwnd > ssthresh: cwnd = ssthresh (held through recovery)


@jit
def on_rto(st, p, tp):
    tp.ssthresh = _bw_rttmin(st, tp)  # CA_EVENT_LOSS
    st.reset_rtt_min = True
    st.wl_reset_min = True


@jit
def on_recovery_exit(st, p, tp):
    if tp.flavor != LINUX:  # cwnd = min(cwnd_at_loss, ssthresh) already (engine); the paper's ssthresh
        tp.ssthresh = st.ssthresh_loss
        return
    w = _bw_rttmin(st, tp)  # CA_EVENT_COMPLETE_CWR
    tp.ssthresh = w
    tp.cwnd = w


@jit
def cong_avoid(st, p, tp, n):
    H.reno_cong_avoid(tp, n, p.L)


ALGORITHMS = (
    Algorithm(
        name="westwood",
        summary="Westwood+: Reno growth, window set to the bandwidth-delay estimate B·RTTmin after a loss",
        citation="Mascolo et al., TCP Westwood+ (TCP-Fusion §II-A, HRF-TCP §2.2); Linux net/ipv4/tcp_westwood.c",
        state=(
            *H.WESTWOOD_STATE,
            Field("rtt_min", "s", "Westwood's own RTTmin (re-measured after an RTO, Linux reset_rtt_min)"),
            Field("reset_rtt_min", "", "the next RTT sample is taken as RTTmin", "bool"),
            Field("bw_bps", "bit/s", "B for output"),
            Field("bw_rttmin", "packets", "B·RTTmin/MSS (at least 2), the window the estimate supports"),
            Field("ssthresh_loss", "packets", "flavor rfc: ssthresh = max(B·RTTmin/MSS, 2) set at the last loss"),
            *H.WESTWOOD_LINUX_STATE,
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
            TICK_PHASE,
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
