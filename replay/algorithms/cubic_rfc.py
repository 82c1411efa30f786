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

from hscc_trace.replay import helpers as H
from hscc_trace.replay._jit import jit
from hscc_trace.replay.interface import Algorithm, Param, Signal
from hscc_trace.replay.tp import CWND, NOW, PRIOR_CWND, SRTT, SSTHRESH

# --- state slots ----------------------------------------------------------------------------
W_MAX = 0  # packets — W_max
K = 1  # s — time to reach W_max from the epoch start
T_EPOCH = 2  # s — epoch start; −1 = no epoch
CWND_EPOCH = 3  # packets — cwnd at the epoch start
W_EST = 4  # packets — Reno-friendly estimate W_est
CWND_PRIOR = 5  # packets — cwnd before the last reduction
PRIOR_W_MAX = 6  # packets — W_max before the last reduction (§4.9 undo)
REGION = 7  # 0 slow start, 1 Reno-friendly, 2 concave, 3 convex
AFTER_RTO = 8  # 1 = the next epoch starts with K = 0, W_max = cwnd_epoch (§4.8)
TARGET = 9  # packets — target window of the last update
NSTATE = 10

P_C = 0  # packets/s³ — C
P_BETA = 1  # fraction — β
P_FAST_CONVERGENCE = 2  # bool
P_RENO_FRIENDLY = 3  # bool — the Reno-friendly region
P_L = 4  # packets — slow-start growth limit per ACK
NPARAMS = 5


@jit
def init(st, p, tp):
    st[W_MAX] = 0.0
    st[K] = 0.0
    st[T_EPOCH] = -1.0
    st[CWND_EPOCH] = 0.0
    st[W_EST] = 0.0
    st[CWND_PRIOR] = 0.0
    st[PRIOR_W_MAX] = 0.0
    st[REGION] = 0.0
    st[AFTER_RTO] = 0.0
    st[TARGET] = 0.0


@jit
def ssthresh(st, p, tp):
    cwnd = tp[CWND]
    st[PRIOR_W_MAX] = st[W_MAX]
    st[CWND_PRIOR] = cwnd
    st[T_EPOCH] = -1.0
    beta = p[P_BETA]
    if cwnd < st[W_MAX] and p[P_FAST_CONVERGENCE] > 0.0:  # §4.7
        st[W_MAX] = cwnd * (1.0 + beta) / 2.0
    else:
        st[W_MAX] = cwnd
    return max(H.flight_size(tp) * beta, 2.0)  # §4.6, flight_size ≤ the replayed cwnd


@jit
def on_rto(st, p, tp):
    st[AFTER_RTO] = 1.0  # §4.8
    st[T_EPOCH] = -1.0


@jit
def undo_cwnd(st, p, tp):
    st[W_MAX] = st[PRIOR_W_MAX]  # §4.9: restore W_max
    st[T_EPOCH] = -1.0
    return max(tp[CWND], tp[PRIOR_CWND])


@jit
def _w_cubic(st, p, t):
    d = t - st[K]
    return p[P_C] * d * d * d + st[W_MAX]


@jit
def cong_avoid(st, p, tp, n):
    if tp[CWND] < tp[SSTHRESH]:
        st[REGION] = 0.0
        H.slow_start_abc(tp, n, p[P_L])
        return
    cwnd = tp[CWND]
    c = p[P_C]
    beta = p[P_BETA]
    if st[T_EPOCH] < 0.0:  # §4.2: a new congestion-avoidance epoch
        st[T_EPOCH] = tp[NOW]
        st[CWND_EPOCH] = cwnd
        st[W_EST] = cwnd
        if st[AFTER_RTO] > 0.0 or st[W_MAX] < cwnd:  # §4.8 after a timeout; no loss yet
            st[W_MAX] = cwnd
            st[AFTER_RTO] = 0.0
        st[K] = ((st[W_MAX] - cwnd) / c) ** (1.0 / 3.0) if st[W_MAX] > cwnd else 0.0
    t = tp[NOW] - st[T_EPOCH]
    rtt = tp[SRTT] if tp[SRTT] > 0.0 else 0.0
    # §4.3 Reno-friendly estimate
    alpha = 3.0 * (1.0 - beta) / (1.0 + beta)
    if st[W_EST] >= st[CWND_PRIOR]:
        alpha = 1.0
    st[W_EST] += alpha * n / cwnd
    w_t = _w_cubic(st, p, t)
    if p[P_RENO_FRIENDLY] > 0.0 and w_t < st[W_EST]:
        st[REGION] = 1.0
        st[TARGET] = st[W_EST]
        tp[CWND] = max(cwnd, st[W_EST])
        return
    target = _w_cubic(st, p, t + rtt)
    target = min(max(target, cwnd), 1.5 * cwnd)
    st[TARGET] = target
    st[REGION] = 2.0 if t < st[K] else 3.0
    tp[CWND] = cwnd + (target - cwnd) * n / cwnd


ALGORITHMS = (
    Algorithm(
        name="cubic",
        summary="CUBIC: window a cubic function of the time since the last loss, Reno-friendly floor",
        citation="RFC 9438 §4; Linux net/ipv4/tcp_cubic.c",
        state=(
            "w_max",
            "k",
            "t_epoch",
            "cwnd_epoch",
            "w_est",
            "cwnd_prior",
            "prior_w_max",
            "region",
            "after_rto",
            "target",
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
                labels=("slow_start", "reno_friendly", "concave", "convex"),
            ),
        ),
        default_flavor="linux",
        flavor="rfc",
        flavor_doc="rfc: RFC 9438 (module cubic_rfc); linux: tcp_cubic.c (integer arithmetic, HyStart, "
        "β = 717/1024) in the Linux TCP core (module cubic_linux)",
    ),
)
