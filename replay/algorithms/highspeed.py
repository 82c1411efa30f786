"""HighSpeed TCP — RFC 3649 (Floyd, 2003); Linux net/ipv4/tcp_highspeed.c.

Flavor ``rfc`` (RFC 3649 §5–§6), for a window w = cwnd (packets):

* ``w ≤ Low_Window``: standard TCP, a(w) = 1, b(w) = 0.5;
* ``b(w) = (High_Decrease − 0.5)·(log w − log Low_Window)/(log High_Window − log Low_Window) + 0.5``;
* ``p(w)``: ``response = table`` → ``0.078/w^1.2`` (the response function ``w = 0.12/p^0.835``
  of §5, the form that generated the Appendix B table); ``response = exact`` → the log-log
  interpolation between (Low_Window, Low_P = (1.2/Low_Window)²) and (High_Window, High_P);
* ``a(w) = w²·p(w)·2·b(w)/(2 − b(w))``; per ACK of N packets in congestion avoidance
  ``cwnd += a(w)·N/w``; on a congestion event ``ssthresh = w·(1 − b(w))`` (≥ 2);
* slow start is standard (RFC 3649 leaves it unchanged; limited slow start, RFC 3742, is not
  modelled): ``cwnd += min(N, L)``.
* Check (from the formulas above): w = 1000 → b = 0.33, a = 7.74; w = 83000 → b = 0.10.

Flavor ``linux`` (tcp_highspeed.c): the AIMD table of RFC 3649 Appendix B (window thresholds,
decrease ×256); ``ai`` = the table row with ``w[ai−1] < cwnd ≤ w[ai]``, updated only in
congestion avoidance; **per ACK** (whatever N) ``snd_cwnd_cnt += ai + 1`` and cwnd += 1 when the
counter reaches cwnd; ``ssthresh = max(cwnd − (cwnd·md[ai] >> 8), 2)``; cwnd-limited check and
``tcp_slow_start`` as Reno.
"""

from __future__ import annotations

import math
from enum import IntEnum

import numpy as np

from hscc_trace.replay import helpers as H
from hscc_trace.replay._jit import jit
from hscc_trace.replay.interface import Algorithm, Param, Signal
from hscc_trace.replay.state import Field, choice_names
from hscc_trace.replay.tp import LINUX

# RFC 3649 Appendix B: window at which a(w) reaches i+1, and b(w)·256 (as scaled in Linux).
AIMD_W = np.array(
    [
        38,
        118,
        221,
        347,
        495,
        663,
        851,
        1058,
        1284,
        1529,
        1793,
        2076,
        2378,
        2699,
        3039,
        3399,
        3778,
        4177,
        4596,
        5036,
        5497,
        5979,
        6483,
        7009,
        7558,
        8130,
        8726,
        9346,
        9991,
        10661,
        11358,
        12082,
        12834,
        13614,
        14424,
        15265,
        16137,
        17042,
        17981,
        18955,
        19965,
        21013,
        22101,
        23230,
        24402,
        25618,
        26881,
        28193,
        29557,
        30975,
        32450,
        33986,
        35586,
        37253,
        38992,
        40808,
        42707,
        44694,
        46776,
        48961,
        51258,
        53677,
        56230,
        58932,
        61799,
        64851,
        68113,
        71617,
        75401,
        79517,
        84035,
        89053,
    ],
    dtype=np.float64,
)
AIMD_MD = np.array(
    [
        128,
        112,
        104,
        98,
        93,
        89,
        86,
        83,
        81,
        78,
        76,
        74,
        72,
        71,
        69,
        68,
        66,
        65,
        64,
        62,
        61,
        60,
        59,
        58,
        57,
        56,
        55,
        54,
        53,
        52,
        52,
        51,
        50,
        49,
        48,
        48,
        47,
        46,
        45,
        45,
        44,
        43,
        43,
        42,
        41,
        41,
        40,
        39,
        39,
        38,
        38,
        37,
        36,
        36,
        35,
        35,
        34,
        33,
        33,
        32,
        32,
        31,
        30,
        30,
        29,
        28,
        28,
        27,
        26,
        26,
        25,
        24,
    ],
    dtype=np.float64,
)


class Response(IntEnum):
    """Parameter ``response``: p(w), the drop rate a window is the response to."""

    TABLE = 0  # 0.078/w^1.2 (generates Appendix B)
    EXACT = 1  # log-log interpolation with High_P


@jit
def b_of_w(w, low_window, high_window, high_decrease):
    """RFC 3649 §5: b(w), the decrease fraction (0.5 at or below Low_Window)."""
    if w <= low_window:
        return 0.5
    return _b_of_logs(math.log(w), math.log(low_window), math.log(high_window), high_decrease)


@jit
def _b_of_logs(log_w, log_low, log_high, high_decrease):
    """b(w) above Low_Window from ln w, ln Low_Window and ln High_Window (:func:`b_of_w`)."""
    return (high_decrease - 0.5) * (log_w - log_low) / (log_high - log_low) + 0.5


@jit
def a_of_w(w, low_window, high_window, high_p, high_decrease, exact):
    """RFC 3649 §5: a(w) = w²·p(w)·2b(w)/(2 − b(w)) packets per RTT (1 at or below Low_Window)."""
    if w <= low_window:
        return 1.0
    return _a_given_b(
        w, math.log(w), b_of_w(w, low_window, high_window, high_decrease), low_window, high_window, high_p, exact
    )


@jit
def _a_given_b(w, log_w, b, low_window, high_window, high_p, exact):
    """a(w) above Low_Window, for ln w and b = b(w) already computed (:func:`a_of_w`)."""
    if exact:
        low_p = (1.2 / low_window) ** 2
        s = (math.log(high_window) - math.log(low_window)) / (math.log(high_p) - math.log(low_p))
        p = low_p * (w / low_window) ** (1.0 / s)
    else:
        p = 0.078 * math.exp(-1.2 * log_w)  # 0.078 / w^1.2
    return w * w * p * 2.0 * b / (2.0 - b)


@jit
def _update(st, p, w):
    # every ACK in congestion avoidance: one logarithm and one exponential (ln w, e^(−1.2 ln w);
    # the constant logarithms are kept in the state) instead of the six logarithms and a power
    # of b_of_w and a_of_w (which computes b(w) again): 1.7x the replay speed on replica-1M
    if w <= p.low_window:
        st.b_w = 0.5
        st.a_w = 1.0
        return
    if st.log_high == 0.0:
        st.log_low = math.log(p.low_window)
        st.log_high = math.log(p.high_window)
    log_w = math.log(w)
    b = _b_of_logs(log_w, st.log_low, st.log_high, p.high_decrease)
    st.b_w = b
    st.a_w = _a_given_b(w, log_w, b, p.low_window, p.high_window, p.high_p, p.response == Response.EXACT)


@jit
def init(st, p, tp):
    st.ai = 0
    _update(st, p, tp.cwnd)
    if tp.flavor == LINUX:
        st.a_w = 1.0
        st.b_w = AIMD_MD[0] / 256.0


@jit
def ssthresh(st, p, tp):
    w = tp.cwnd
    if tp.flavor == LINUX:
        ai = int(st.ai)
        return max(w - math.floor(w * AIMD_MD[ai] / 256.0), 2.0)
    _update(st, p, w)
    return max(w * (1.0 - st.b_w), 2.0)


@jit
def cong_avoid(st, p, tp, n):
    g = H.growth_gate(tp, n, p.L)
    if g == H.HELD:
        return
    if tp.flavor == LINUX:
        if g == H.SLOW_START:
            return
        w = tp.cwnd
        ai = int(st.ai)
        last = AIMD_W.shape[0] - 1
        if w > AIMD_W[ai]:
            while w > AIMD_W[ai] and ai < last:
                ai += 1
        elif ai > 0 and w <= AIMD_W[ai - 1]:
            while ai > 0 and w <= AIMD_W[ai - 1]:
                ai -= 1
        st.ai = ai
        st.a_w = ai + 1.0
        st.b_w = AIMD_MD[ai] / 256.0
        tp.cwnd_cnt += ai + 1.0
        if tp.cwnd_cnt >= tp.cwnd:
            tp.cwnd_cnt -= tp.cwnd
            tp.cwnd += 1.0
        return
    _update(st, p, tp.cwnd)
    if g == H.CONG_AVOID:
        tp.cwnd += st.a_w * n / tp.cwnd


ALGORITHMS = (
    Algorithm(
        name="highspeed",
        reduces_to="reno",  # RFC 3649 §5: standard TCP at or below Low_Window
        summary="HighSpeed TCP: above Low_Window, increase a(w) and decrease b(w) scale with the window",
        citation="RFC 3649 §5-6 and Appendix B; Linux net/ipv4/tcp_highspeed.c",
        state=(
            Field("ai", "", "Linux table row index (flavor linux)", "int"),
            Field("a_w", "packets per RTT", "a(w) at the current window"),
            Field("b_w", "fraction", "b(w) at the current window"),
            Field("log_low", "ln(packets)", "ln Low_Window, computed on first use (b(w) needs it every ACK)"),
            Field("log_high", "ln(packets)", "ln High_Window, likewise (0 = not yet: High_Window ≥ 2 packets)"),
        ),
        params=(
            Param(
                "low_window",
                "packets",
                38.0,
                "RFC 3649 §5 (Low_Window); the Kyushu-TCP paper uses 83",
                "below this window HighSpeed is standard TCP (flavor rfc)",
                lo=1.0,
            ),
            Param(
                "high_window",
                "packets",
                83000.0,
                "RFC 3649 §5 (High_Window)",
                "window reached at drop rate High_P",
                lo=2.0,
            ),
            Param(
                "high_p",
                "",
                1e-7,
                "RFC 3649 §5 (High_P)",
                "drop rate at High_Window (used by response = exact)",
                lo=1e-15,
                hi=1.0,
            ),
            Param("high_decrease", "", 0.1, "RFC 3649 §5 (High_Decrease)", "b(High_Window)", lo=0.0, hi=0.5),
            Param(
                "response",
                "",
                "table",
                "RFC 3649 §5 and Appendix B",
                "p(w): table = 0.078/w^1.2 (generates Appendix B), exact = log-log interpolation with High_P",
                kind="choice",
                choices=choice_names(Response),
            ),
            Param("L", "packets", 2.0, "RFC 3465 §2.3", "flavor rfc: slow-start growth limit per ACK", lo=0.0),
        ),
        signals=(
            Signal("a_w", "a_w", "packets/RTT", "a(w): additive increase per RTT at the current window"),
            Signal("b_w", "b_w", "", "b(w): multiplicative decrease fraction at the current window"),
        ),
        default_flavor="linux",
        flavor_doc="rfc: RFC 3649 formulas; linux: tcp_highspeed.c (Appendix B table, per-ACK counter) in "
        "the Linux TCP core",
    ),
)
