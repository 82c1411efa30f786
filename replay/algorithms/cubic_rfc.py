"""CUBIC, flavor ``rfc`` — RFC 9438 §4 (Xu, Ha, Rhee, Goel, Eggert, 2023).

The Linux module (``tcp_cubic.c``, integer arithmetic, HyStart) is the flavor ``linux`` of the
same algorithm, in :mod:`cubic_linux` beside this file; ``--param cubic.flavor=rfc`` selects
this one. Windows in packets, t in seconds:

* congestion event (§4.6): ``cwnd_prior = cwnd``; fast convergence (§4.7) ``W_max = cwnd·(1+β)/2``
  if cwnd < W_max else ``W_max = cwnd``; ``ssthresh = max(flight_size·β, 2)`` (RFC 9438 uses
  flight_size; here ``min(flight, cwnd)``, helpers.flight_size), β = 0.7; the engine sets
  cwnd = ssthresh at recovery exit;
* a congestion-avoidance epoch begins on the first ACK in congestion avoidance (§4.2):
  ``t_epoch = now``, ``cwnd_epoch = cwnd``, ``W_est = cwnd_epoch``,
  ``K = ∛((W_max − cwnd_epoch)/C)`` (0 when W_max ≤ cwnd_epoch), C = 0.4;
* per ACK of N packets (§4.2–4.5): ``W_cubic(t) = C·(t − K)³ + W_max``;
  ``W_est += α_cubic·N/cwnd`` with ``α_cubic = 3(1−β)/(1+β)`` until W_est ≥ cwnd_prior, then 1
  (§4.3); if ``W_cubic(t) < W_est`` (Reno-friendly region) ``cwnd = W_est``; otherwise
  ``target = clamp(W_cubic(t + RTT), cwnd, 1.5·cwnd)`` with RTT = srtt and
  ``cwnd += (target − cwnd)·N/cwnd`` (concave region t < K, convex t ≥ K);
* slow start is standard (``cwnd += min(N, L)``; HyStart++ is not modelled in this flavor);
* timeout (§4.8): ssthresh as §4.6, cwnd = 1; the next epoch uses K = 0 and W_max = cwnd_epoch;
* spurious congestion event (§4.9): W_max and cwnd restored (undo_cwnd).
"""

from __future__ import annotations

from enum import IntEnum

from hscc_trace.replay import helpers as H
from hscc_trace.replay._jit import jit
from hscc_trace.replay.interface import Algorithm, Param, Signal
from hscc_trace.replay.state import Field, choice_names

# --- state slots ----------------------------------------------------------------------------


class Region(IntEnum):
    """State ``region``: the growth region of the last update (signal labels)."""

    SLOW_START = 0
    RENO_FRIENDLY = 1
    CONCAVE = 2  # t < K
    CONVEX = 3


@jit
def init(st, p, tp):
    st.w_max = 0.0
    st.k = 0.0
    st.t_epoch = -1.0
    st.cwnd_epoch = 0.0
    st.w_est = 0.0
    st.cwnd_prior = 0.0
    st.prior_w_max = 0.0
    st.region = Region.SLOW_START
    st.after_rto = False
    st.target = 0.0


@jit
def ssthresh(st, p, tp):
    cwnd = tp.cwnd
    st.prior_w_max = st.w_max
    st.cwnd_prior = cwnd
    st.t_epoch = -1.0
    beta = p.beta
    if cwnd < st.w_max and p.fast_convergence:  # §4.7
        st.w_max = cwnd * (1.0 + beta) / 2.0
    else:
        st.w_max = cwnd
    return max(H.flight_size(tp) * beta, 2.0)  # §4.6, flight_size ≤ the replayed cwnd


@jit
def on_rto(st, p, tp):
    st.after_rto = True  # §4.8
    st.t_epoch = -1.0


@jit
def undo_cwnd(st, p, tp):
    st.w_max = st.prior_w_max  # §4.9: restore W_max
    st.t_epoch = -1.0
    return max(tp.cwnd, tp.prior_cwnd)


@jit
def _w_cubic(st, p, t):
    d = t - st.k
    return p.C * d * d * d + st.w_max


@jit
def cong_avoid(st, p, tp, n):
    if tp.cwnd < tp.ssthresh:
        st.region = Region.SLOW_START
        H.slow_start_abc(tp, n, p.L)
        return
    cwnd = tp.cwnd
    c = p.C
    beta = p.beta
    if st.t_epoch < 0.0:  # §4.2: a new congestion-avoidance epoch
        st.t_epoch = tp.now
        st.cwnd_epoch = cwnd
        st.w_est = cwnd
        if st.after_rto or st.w_max < cwnd:  # §4.8 after a timeout; no loss yet
            st.w_max = cwnd
            st.after_rto = False
        st.k = ((st.w_max - cwnd) / c) ** (1.0 / 3.0) if st.w_max > cwnd else 0.0
    t = tp.now - st.t_epoch
    rtt = tp.srtt if tp.srtt > 0.0 else 0.0
    # §4.3 Reno-friendly estimate
    alpha = 3.0 * (1.0 - beta) / (1.0 + beta)
    if st.w_est >= st.cwnd_prior:
        alpha = 1.0
    st.w_est += alpha * n / cwnd
    w_t = _w_cubic(st, p, t)
    if p.reno_friendly and w_t < st.w_est:
        st.region = Region.RENO_FRIENDLY
        st.target = st.w_est
        tp.cwnd = max(cwnd, st.w_est)
        return
    target = _w_cubic(st, p, t + rtt)
    target = min(max(target, cwnd), 1.5 * cwnd)
    st.target = target
    st.region = Region.CONCAVE if t < st.k else Region.CONVEX
    tp.cwnd = cwnd + (target - cwnd) * n / cwnd


ALGORITHMS = (
    Algorithm(
        name="cubic",
        summary="CUBIC: window a cubic function of the time since the last loss, Reno-friendly floor",
        citation="RFC 9438 §4; Linux net/ipv4/tcp_cubic.c",
        state=(
            Field("w_max", "packets", "W_max"),
            Field("k", "s", "time to reach W_max from the epoch start"),
            Field("t_epoch", "s", "epoch start; −1 = no epoch"),
            Field("cwnd_epoch", "packets", "cwnd at the epoch start"),
            Field("w_est", "packets", "Reno-friendly estimate W_est"),
            Field("cwnd_prior", "packets", "cwnd before the last reduction"),
            Field("prior_w_max", "packets", "W_max before the last reduction (§4.9 undo)"),
            Field("region", "", "Region of the last update", "int"),
            Field("after_rto", "", "the next epoch starts with K = 0, W_max = cwnd_epoch (§4.8)", "bool"),
            Field("target", "packets", "target window of the last update"),
        ),
        params=(
            Param("C", "packets/s³", 0.4, "RFC 9438 §5.1", "cubic scaling constant", lo=1e-6),
            Param("beta", "", 0.7, "RFC 9438 §5.1 (β_cubic)", "multiplicative decrease factor", lo=0.0, hi=1.0),
            Param(
                "fast_convergence",
                "",
                True,
                "RFC 9438 §4.7",
                "release bandwidth faster when W_max shrinks",
                kind="bool",
            ),
            Param(
                "reno_friendly",
                "",
                True,
                "RFC 9438 §4.3",
                "never grow slower than the Reno estimate W_est",
                kind="bool",
            ),
            Param("L", "packets", 2.0, "RFC 3465 §2.3", "slow-start growth limit per ACK", lo=0.0),
        ),
        signals=(
            Signal("W_max", "w_max", "packets", "window at the last congestion event (after fast convergence)"),
            Signal("K", "k", "s", "time from the epoch start to reach W_max"),
            Signal("w_est", "w_est", "packets", "Reno-friendly estimate (Linux tcp_cwnd)"),
            Signal("target", "target", "packets", "cubic target of the last update"),
            Signal(
                "region",
                "region",
                "",
                "growth region at the last ACK",
                kind="enum",
                labels=choice_names(Region),
            ),
        ),
        default_flavor="linux",
        flavor="rfc",
        flavor_doc="rfc: RFC 9438 (module cubic_rfc); linux: tcp_cubic.c (integer arithmetic, HyStart, "
        "β = 717/1024) in the Linux TCP core (module cubic_linux)",
    ),
)
