"""Call one algorithm's hooks by hand, as plain Python, on a crafted engine context.

Branch tests set exactly the engine slots a branch reads (``tp``) and the algorithm's own state
(``st``), call one hook, and compare with numbers worked out by hand. The hooks are the same
source the engine compiles (``_jit.pure``); engine-level sequences use ``engine.run`` instead.

Also: random ACK streams (hypothesis) shared by the property tests of fusion/compound/hrf/kyushu.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
from hypothesis import strategies as hs
from replay_synth import MSS, ack, frame

from hscc_trace.replay import registry
from hscc_trace.replay import tp as T
from hscc_trace.replay._jit import pure
from hscc_trace.replay.state import interp


class Hooks:
    """``Hooks("fusion", dmin="0.004")``: state, parameters and a fresh engine context (named
    state and parameters as their interpreted twins, :func:`hscc_trace.replay.state.interp`)."""

    def __init__(self, name: str, **overrides: Any) -> None:
        self.r = registry.resolve(name, {k: str(v) for k, v in overrides.items()})
        self.mod = self.r.base.module
        self.named = self.r.base.named
        self.p = interp(self.r.new_params())
        self.tp = T.interp(np.zeros(T.NTP))  # tp.cwnd is tp[T.CWND]
        for k in (T.RTT, T.MIN_RTT, T.SRTT, T.RTTVAR, T.ROUND_MIN_RTT, T.CUR_ROUND_MIN_RTT, T.CA_INIT):
            self.tp[k] = math.nan
        self.tp[T.SSTHRESH] = math.inf
        self.tp[T.MSS] = float(MSS)
        self.tp[T.EVENT] = T.EV_NONE
        self.tp[T.RWND] = math.inf
        self.st = interp(self.r.new_state())

    def set(self, **slots: float) -> Hooks:
        """Engine slots by tp name (``CWND=100``) or the algorithm's state slots (``reno_cwnd=50``)."""
        for k, v in slots.items():
            if hasattr(T, k) and k.isupper():
                self.tp[getattr(T, k)] = v
            elif self.named:
                setattr(self.st, k, v)
            else:
                self.st[getattr(self.mod, k.upper())] = v
        return self

    def __getitem__(self, name: str) -> float:
        if hasattr(T, name) and name.isupper():
            return float(self.tp[getattr(T, name)])
        if self.named:
            return float(getattr(self.st, name))
        return float(self.st[getattr(self.mod, name.upper())])

    def call(self, hook: str, *args: float) -> Any:
        return pure(getattr(self.mod, hook))(self.st, self.p, self.tp, *args)


# --- random ACK streams for property tests ---------------------------------------------------------


@hs.composite
def ack_streams(draw: Any, max_acks: int = 160) -> pl.DataFrame:
    """A plausible sender's ACK stream: RTT samples between 20 and 300 ms (sometimes missing),
    1-3 packets per ACK (sometimes a pure duplicate), rounds of 5-40 ACKs, and occasionally a
    fast retransmit (a few recovery ACKs), an RTO (a few loss ACKs) or an ECN echo."""
    n = draw(hs.integers(20, max_acks))
    rows = []
    acked = 0
    flight = draw(hs.integers(5, 200))
    round_len = draw(hs.integers(5, 40))
    t = 1_000_000_000
    state = "open"
    left = 0
    base = draw(hs.floats(0.02, 0.2))
    for i in range(n):
        t += draw(hs.integers(100_000, 20_000_000))
        kind = draw(hs.sampled_from(["ack"] * 30 + ["dup", "fr", "rto", "ecn", "nortt"]))
        ev = None
        if left > 0:
            left -= 1
            if left == 0:
                state = "open"
        elif kind == "fr":
            ev, state, left = "fast_retransmit", "recovery", draw(hs.integers(1, 6))
        elif kind == "rto":
            ev, state, left = "rto", "loss", draw(hs.integers(1, 6))
        elif kind == "ecn" and state == "open":
            ev = "ecn"
        a = 0 if kind == "dup" else draw(hs.integers(1, 3))
        acked += a * MSS
        rtt = None if kind == "nortt" else base + draw(hs.floats(0.0, 0.1))
        rows.append(
            ack(
                ts_ns=t,
                ack=acked,
                acked_bytes=a * MSS,
                dupack=1 if a == 0 else 0,
                rtt_s=rtt,
                snd_max=acked + flight * MSS,
                outstanding=flight * MSS,
                round=i // round_len,
                round_end=(i % round_len) == round_len - 1,
                state=state,
                cong_event=ev,
                ece=ev == "ecn",
            )
        )
    return frame(rows)
