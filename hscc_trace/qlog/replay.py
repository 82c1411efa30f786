"""Open-loop replays of QUIC congestion control on a connection's ACK stream, in bytes.

The TCP engine (:mod:`hscc_trace.replay`) counts MSS-sized packets, takes the congestion state
from TCP's cumulative-ACK episodes and models Linux around the algorithm (PRR, undo, the
cwnd-limited test). QUIC's congestion control differs where RFC 9002 §7 says so, and these
small replays implement it directly:

* the window is in **bytes**, grown by the bytes of each newly acknowledged in-flight packet
  (§7, §7.3.1: slow start adds the acknowledged bytes; §7.3.3: congestion avoidance adds
  ``max_datagram_size · acked / cwnd``);
* every loss is unambiguous (a retransmission is a new packet number) and the sender's own
  detection decides it: the stack's ``packet_lost`` events (``losses="stack"``), or our RFC
  9002 §6.1 detection (``losses="ours"``, :mod:`hscc_trace.qlog.streams`);
* **one reduction per recovery period** (§7.3.2): a loss starts a congestion event only if the
  lost packet was sent after the current recovery period began (``congestion_recovery_start_time``,
  set to the time of the loss); packets sent before it do not grow the window when acknowledged;
* **persistent congestion** (§7.6): the ack-eliciting lost packets of one detection, consecutive
  in packet number, spanning more than ``(smoothed_rtt + max(4·rttvar, 1 ms) + max_ack_delay) · 3``
  and sent after the first RTT sample, collapse the window to the minimum (2 datagrams, §7.2);
* a loss of a packet above the largest acknowledged one cannot come from §6.1 (no later packet
  was acknowledged): it is a PTO probe's early retransmission, removed from the flight without a
  congestion event (§6.2 forbids marking PTO'd packets lost; aioquic logs them as lost);
* initial window 10 datagrams (§7.2: min(10·mds, max(14720, 2·mds))), minimum window 2.

Algorithms: ``reno`` (RFC 9002 §7, Appendix B: NewReno in bytes, β = 0.5) and ``cubic`` (RFC
9438 §4 in bytes: C = 0.4 in segments and seconds, β = 0.7, fast convergence §4.7, the
Reno-friendly estimate §4.3 with α = 3(1−β)/(1+β) until the window regains cwnd_prior and 1
after, the target at t + RTT with RTT = smoothed_rtt §4.2, clamped to [cwnd, 1.5·cwnd] §4.4).
Each has two flavors: ``rfc`` (the RFCs as written) and ``aioquic`` (the departures aioquic 1.7's
``aioquic/quic/congestion/{reno,cubic}.py`` makes, each a parameter — :data:`FLAVORS` and
docs/quic.md list them with their effect), so that :func:`departures` can switch them back one at
a time and measure what each one changes against the stack's logged window.

Pure Python: a QUIC connection's ACK stream of a 10 s transfer is ~10⁴ events (≈ 0.1 s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import polars as pl

from hscc_trace.errors import InputError
from hscc_trace.qlog.streams import GRANULARITY, Connection

#: RFC 9002 §7.2 kMinimumWindow, datagrams
MIN_WINDOW = 2
#: RFC 9002 §7.2 kInitialWindow, datagrams (capped at max(14720, 2·mds) bytes)
INITIAL_WINDOW = 10
#: RFC 9002 §7.6.1 kPersistentCongestionThreshold
PERSISTENT_THRESHOLD = 3

#: every parameter, its RFC value and what aioquic does instead (aioquic/quic/congestion/*.py)
FLAVORS: dict[str, dict[str, dict[str, Any]]] = {
    "reno": {
        "rfc": {
            "beta": 0.5,  # RFC 9002 §7.3.2 kLossReductionFactor
            "ca_counter": "exact",  # §7.3.3: cwnd += mds · acked / cwnd on every ACK
            "ss_exit": "loss",  # RFC 9002 leaves slow start on a loss only
            "ssthresh_floor": False,  # Appendix B.6: ssthresh = cwnd · β, cwnd = max(ssthresh, min window)
            "cwnd_limited": True,  # §7.8: no growth while the window is underutilized
            "ecn": True,  # §7.5: a higher ECN-CE count is a congestion event
        },
        "aioquic": {
            "beta": 0.5,
            "ca_counter": "stash",  # acked bytes accumulate; + 1 mds each time they reach cwnd
            "ss_exit": "rtt_monitor",  # QuicRttMonitor: slow start ends when the RTT rises
            "ssthresh_floor": True,  # ssthresh = max(cwnd · β, min window) (= the new cwnd)
            "cwnd_limited": False,  # grows whatever the flight
            "ecn": False,  # reads an ACK_ECN frame's counts and drops them
        },
    },
    "cubic": {
        "rfc": {
            "beta": 0.7,  # RFC 9438 §4.6 β_cubic
            "c": 0.4,  # §4.2 C (segments / s³)
            "alpha": "rfc",  # §4.3: 3(1−β)/(1+β), 1 once cwnd ≥ cwnd_prior
            "rtt": "smoothed",  # §4.2: W_cubic(t + RTT), RTT the smoothed RTT
            "reduce_from": "cwnd",  # §4.6: ssthresh = cwnd · β
            "recovery_gate": True,  # RFC 9002 §7.3.2: no growth for packets sent before recovery began
            "ss_exit": "loss",
            "idle_reset_s": 0.0,  # 0 = none (RFC 9438 §5.8 leaves idle handling to RFC 7661 / RFC 9002 §7.8)
            "fast_convergence": True,  # §4.7
            "cwnd_limited": True,  # RFC 9002 §7.8
            "ecn": True,  # RFC 9002 §7.5
        },
        "aioquic": {
            "beta": 0.7,
            "c": 0.4,
            "alpha": "one",  # W_est grows by one mds per cwnd acknowledged, always
            "rtt": "latest",  # the latest RTT sample (on_rtt_measurement), 20 ms before the first
            "reduce_from": "flight",  # ssthresh = bytes in flight after the ACK and the losses · β
            "recovery_gate": False,  # on_packet_acked grows the window in recovery too
            "ss_exit": "rtt_monitor",
            "idle_reset_s": 2.0,  # K_CUBIC_MAX_IDLE_TIME: reset to the initial window after 2 s
            "fast_convergence": True,
            "cwnd_limited": False,
            "ecn": False,
        },
    },
}


class _RttMonitor:
    """aioquic's QuicRttMonitor (aioquic/quic/congestion/base.py): a slow-start exit on rising
    delay, not in RFC 9002 (akin to HyStart's delay test). A sample is taken at most every ms;
    once 5 are held, the largest of the 5 is the running filtered minimum and the smallest of the
    5 counts as an increase when ≥ 1.25 × that minimum; 5 increases in a row end slow start."""

    SIZE = 5

    def __init__(self) -> None:
        self.increases = 0
        self.ready = False
        self.idx = 0
        self.samples = [0.0] * self.SIZE
        self.sample_time = 0.0
        self.filtered_min: float | None = None
        self.smin = 0.0
        self.smax = 0.0

    def _add(self, rtt: float) -> None:
        self.samples[self.idx] = rtt
        self.idx += 1
        if self.idx >= self.SIZE:
            self.idx = 0
            self.ready = True
        if self.ready:
            self.smax = self.smin = self.samples[0]
            for s in self.samples[1:]:
                if s < self.smin:
                    self.smin = s
                elif s > self.smax:
                    self.smax = s

    def increasing(self, now: float, rtt: float) -> bool:
        if now > self.sample_time + GRANULARITY:
            self._add(rtt)
            self.sample_time = now
            if self.ready:
                if self.filtered_min is None or self.filtered_min > self.smax:
                    self.filtered_min = self.smax
                delta = self.smin - self.filtered_min
                if delta * 4 >= self.filtered_min:
                    self.increases += 1
                    if self.increases >= self.SIZE:
                        return True
                elif delta > 0:
                    self.increases = 0
        return False


class _Cc:
    """State shared by both algorithms: RFC 9002 Appendix B's variables, in bytes."""

    def __init__(self, mds: int, p: dict[str, Any]) -> None:
        self.mds = mds
        self.p = p
        self.iw = min(INITIAL_WINDOW * mds, max(14720, 2 * mds)) if p.get("iw_cap", True) else INITIAL_WINDOW * mds
        if p.get("aioquic_iw"):
            self.iw = INITIAL_WINDOW * mds
        self.cwnd = float(self.iw)
        self.ssthresh = math.inf
        self.recovery_start = -math.inf  # no recovery period yet (RFC 9002 B.3 writes 0 on an absolute clock)
        self.monitor = _RttMonitor() if p.get("ss_exit") == "rtt_monitor" else None
        self.in_recovery = False

    def in_congestion_recovery(self, sent_t: float) -> bool:
        return sent_t <= self.recovery_start

    def on_rtt(self, now: float, rtt: float) -> None:
        if self.monitor is not None and self.ssthresh == math.inf and self.monitor.increasing(now, rtt):
            self.ssthresh = self.cwnd

    def min_window(self) -> float:
        return float(MIN_WINDOW * self.mds)

    def on_acked(self, now: float, sent_t: float, size: int, flight: int) -> None:
        raise NotImplementedError

    def on_congestion(self, now: float, flight: int) -> None:
        raise NotImplementedError

    def on_sent(self, t: float) -> None:
        pass

    def persistent(self) -> None:
        """RFC 9002 §7.6.2: cwnd to the minimum window, the recovery period forgotten."""
        self.cwnd = self.min_window()
        self.recovery_start = -math.inf


class _Reno(_Cc):
    """RFC 9002 §7.3 / Appendix B.5–B.8 (OnPacketsAcked, OnCongestionEvent), NewReno in bytes."""

    def __init__(self, mds: int, p: dict[str, Any]) -> None:
        super().__init__(mds, p)
        self.stash = 0.0

    def on_acked(self, now: float, sent_t: float, size: int, flight: int) -> None:
        if self.in_congestion_recovery(sent_t):
            return
        if self.cwnd < self.ssthresh:
            self.cwnd += size
        elif self.p["ca_counter"] == "stash":
            self.stash += size
            count = self.stash // self.cwnd
            if count:
                self.stash -= count * self.cwnd
                self.cwnd += count * self.mds
        else:
            self.cwnd += self.mds * size / self.cwnd

    def on_congestion(self, now: float, flight: int) -> None:
        self.recovery_start = now
        beta = self.p["beta"]
        if self.p["ssthresh_floor"]:
            self.cwnd = max(float(int(self.cwnd * beta)), self.min_window())
            self.ssthresh = self.cwnd
        else:
            self.ssthresh = self.cwnd * beta
            self.cwnd = max(self.ssthresh, self.min_window())

    def on_sent(self, t: float) -> None:
        pass


class _Cubic(_Cc):
    """RFC 9438 §4 over RFC 9002's recovery rules, in bytes (windows in segments inside the
    cubic function, as the RFC defines C)."""

    def __init__(self, mds: int, p: dict[str, Any]) -> None:
        super().__init__(mds, p)
        self.rtt = 0.02  # aioquic's starting value; the RFC flavor uses smoothed_rtt once known
        self.srtt: float | None = None
        self.last_ack = 0.0
        self._reset()

    def _reset(self) -> None:
        self.cwnd = float(self.iw)
        self.ssthresh = math.inf
        self.first_ss = True
        self.starting_ca = False
        self.k = 0.0
        self.w_est = 0.0
        self.t_epoch = 0.0
        self.cwnd_epoch = 0.0
        self.w_max = self.cwnd
        self.cwnd_prior = self.cwnd

    def w_cubic(self, t: float) -> float:
        """RFC 9438 §4.2 Eq. 1: C·(t − K)³ + W_max, segments → bytes."""
        w = self.p["c"] * (t - self.k) ** 3 + self.w_max / self.mds
        return w * self.mds if not self.p.get("int_cubic") else float(int(w * self.mds))

    def _epoch(self, now: float) -> None:
        self.t_epoch = now
        self.cwnd_epoch = self.cwnd
        self.w_est = self.cwnd_epoch
        x = (self.w_max / self.mds - self.cwnd_epoch / self.mds) / self.p["c"]
        self.k = -((-x) ** (1 / 3)) if x < 0 else x ** (1 / 3)  # §4.2 Eq. 2

    def on_rtt_sample(self, now: float, latest: float, srtt: float | None) -> None:
        self.rtt = latest if self.p["rtt"] == "latest" else (srtt if srtt is not None else self.rtt)
        self.on_rtt(now, latest)

    def on_acked(self, now: float, sent_t: float, size: int, flight: int) -> None:
        self.last_ack = sent_t
        if self.p["recovery_gate"] and self.in_congestion_recovery(sent_t):
            return
        if self.cwnd < self.ssthresh:
            self.cwnd += size
            return
        if self.first_ss and not self.starting_ca:  # §4.10: slow start left without a loss
            self.first_ss = False
            self.w_max = self.cwnd
            self._epoch(now)
        if self.starting_ca:
            self.starting_ca = False
            self.first_ss = False
            self._epoch(now)
        beta = self.p["beta"]
        if self.p["alpha"] == "one" or self.cwnd >= self.cwnd_prior:
            alpha = 1.0
        else:
            alpha = 3 * (1 - beta) / (1 + beta)
        self.w_est = self.w_est + alpha * self.mds * (size / self.cwnd)
        if self.p.get("int_cubic"):
            self.w_est = float(int(self.w_est))
        t = now - self.t_epoch
        wc = self.w_cubic(t + self.rtt)
        if wc < self.cwnd:
            target = self.cwnd
        elif wc > 1.5 * self.cwnd:
            target = 1.5 * self.cwnd
            if self.p.get("int_cubic"):
                target = float(int(target))
        else:
            target = wc
        if self.w_cubic(t) < self.w_est:  # §4.3 Reno-friendly region
            self.cwnd = self.w_est
        else:  # §4.4 concave / §4.5 convex: (target − cwnd)/cwnd per acknowledged segment
            step = (
                (target - self.cwnd) * (self.mds / self.cwnd)
                if self.p.get("int_cubic")
                else (target - self.cwnd) * size / self.cwnd
            )
            self.cwnd = self.cwnd + step
            if self.p.get("int_cubic"):
                self.cwnd = float(int(self.cwnd))

    def on_congestion(self, now: float, flight: int) -> None:
        self.recovery_start = now
        beta = self.p["beta"]
        if self.p["fast_convergence"] and self.cwnd < self.w_max:  # §4.7
            self.w_max = self.cwnd * (1 + beta) / 2
        else:
            self.w_max = self.cwnd
        if self.p.get("int_cubic"):
            self.w_max = float(int(self.w_max))
        self.cwnd_prior = self.cwnd
        base = flight if self.p["reduce_from"] == "flight" else self.cwnd
        ss = base * beta
        if self.p.get("int_cubic"):
            ss = float(int(ss))
        self.ssthresh = max(ss, self.min_window())
        self.cwnd = max(self.ssthresh, self.min_window())
        self.starting_ca = True

    def on_sent(self, t: float) -> None:
        idle = self.p["idle_reset_s"]
        if idle and self.last_ack != 0.0 and t - self.last_ack >= idle:
            self._reset()


ALGORITHMS = {"reno": _Reno, "cubic": _Cubic}


def params_of(algo: str, flavor: str = "rfc", **overrides: Any) -> dict[str, Any]:
    if algo not in FLAVORS:
        raise InputError(f"unknown QUIC replay algorithm {algo!r} (have: {', '.join(FLAVORS)})")
    if flavor not in FLAVORS[algo]:
        raise InputError(f"unknown flavor {flavor!r} of {algo} (have: {', '.join(FLAVORS[algo])})")
    p = dict(FLAVORS[algo][flavor])
    if flavor == "aioquic":
        p["aioquic_iw"] = True
        p["int_cubic"] = algo == "cubic"
    for k, v in overrides.items():
        if k not in p and k not in ("aioquic_iw", "int_cubic", "iw_cap"):
            raise InputError(f"{algo}: no parameter {k!r} (have: {', '.join(p)})")
        p[k] = v
    return p


@dataclass
class Replay:
    algo: str
    flavor: str
    params: dict[str, Any]
    losses: str
    table: pl.DataFrame  # one row per ACK frame: t_s, event, cwnd, ssthresh, logged_cwnd, in_recovery


def replay(conn: Connection, algo: str, flavor: str = "rfc", losses: str = "stack", **overrides: Any) -> Replay:
    """Replay ``algo`` (``reno`` | ``cubic``) with ``flavor`` (``rfc`` | ``aioquic``) over the
    connection's timeline; ``losses``: ``stack`` (the logged packet_lost events) or ``ours``
    (RFC 9002 §6.1 detection). One row per ACK frame, with the stack's logged cwnd in force once
    the stack had processed that ACK (the last metrics value before its next received packet)."""
    if not conn.is_sender:
        raise InputError(
            f"{conn.path}: trace {conn.trace} is the data receiver's ({conn.vantage}); "
            "its window is not in the log: replay the sender's trace"
        )
    if losses not in ("stack", "ours"):
        raise InputError(f"losses must be 'stack' or 'ours', not {losses!r}")
    p = params_of(algo, flavor, **overrides)
    cc = ALGORITHMS[algo](conn.max_datagram_size, p)
    flight = 0
    out: list[dict[str, Any]] = []
    outstanding: dict[
        tuple[int, int], tuple[float, int, bool, bool]
    ] = {}  # (space, pn) -> (t, size, in_flight, eliciting)
    largest_acked = {0: -1, 1: -1, 2: -1}
    first_rtt: float | None = None
    srtt: float | None = None
    rttvar = 0.0
    logged: float | None = None
    pending: dict[str, Any] | None = None  # the last ACK's row, completed when its processing ends
    mad = conn.peer_max_ack_delay_s
    ce_seen = {0: 0, 1: 0, 2: 0}  # the highest ECN-CE count acknowledged per space

    batch: list[tuple[int, int, float, int, bool, bool]] = []  # the stack's losses of one detection
    batch_t = 0.0

    def close_pending() -> None:
        nonlocal pending
        if batch:  # one detection's packet_lost events are one OnPacketsLost call (RFC 9002 A.10)
            lose(batch_t, list(batch))
            batch.clear()
        if pending is not None:
            pending["cwnd"] = cc.cwnd
            pending["ssthresh"] = None if cc.ssthresh == math.inf else cc.ssthresh
            pending["logged_cwnd"] = logged
            pending["flight"] = flight
            out.append(pending)
            pending = None

    def lose(now: float, pkts: list[tuple[int, int, float, int, bool, bool]]) -> None:
        """Packets (space, pn, t, size, in_flight, eliciting) declared lost at ``now``."""
        nonlocal flight
        cc_pkts = []
        for sp, pn, t, size, infl, elic in pkts:
            if outstanding.pop((sp, pn), None) is None:
                continue  # acknowledged or lost already
            if infl:
                flight -= size
                cc_pkts.append((sp, pn, t, size, elic))
        congestion = [q for q in cc_pkts if q[1] <= largest_acked[q[0]]]  # §6.1 losses, not PTO probes
        if not congestion:
            return
        largest_t = max(q[2] for q in congestion)
        if largest_t > cc.recovery_start:  # RFC 9002 §7.3.2: a new congestion event
            cc.on_congestion(now, flight)
        if srtt is not None and first_rtt is not None:
            period = (srtt + max(4 * rttvar, GRANULARITY) + mad) * PERSISTENT_THRESHOLD
            run_start = None
            prev = None
            for sp, pn, t, _size, elic in sorted(congestion, key=lambda q: (q[0], q[1])):
                if prev is not None and (sp, pn) != (prev[0], prev[1] + 1):
                    run_start = None
                prev = (sp, pn)
                if elic and t > first_rtt:
                    if run_start is None:
                        run_start = t
                    elif t - run_start > period:
                        cc.persistent()
                        break

    for ev in conn.timeline:
        kind = ev[0]
        if kind == "sent":
            close_pending()
            _, t, pn, size, infl, elic, sp, _idx = ev
            outstanding[(sp, pn)] = (t, size, infl, elic)
            if infl:
                flight += size
                cc.on_sent(t)
        elif kind == "ack":
            close_pending()
            _, now, newly, sp, sample, s_rtt, _m, idx, ce = ev
            largest = max((q[0] for q in newly), default=-1)
            largest_acked[sp] = max(largest_acked[sp], largest)
            # RFC 9002 §7.8: the window was in use when the sender had (within a datagram) filled it
            limited = not p["cwnd_limited"] or flight + cc.mds >= cc.cwnd
            for pn, t, size, infl, _elic in newly:
                if outstanding.pop((sp, pn), None) is None:
                    continue
                if infl:
                    flight -= size
                    if limited:
                        cc.on_acked(now, t, size, flight)
                    elif isinstance(cc, _Cubic):
                        cc.last_ack = t
            if sample is not None:
                if first_rtt is None:
                    first_rtt = now
                    rttvar = sample / 2
                elif srtt is not None and s_rtt is not None:
                    rttvar = 0.75 * rttvar + 0.25 * abs(srtt - s_rtt)
                srtt = s_rtt
                if isinstance(cc, _Cubic):
                    cc.on_rtt_sample(now, sample, srtt)
                else:
                    cc.on_rtt(now, sample)
            if p["ecn"] and ce is not None and newly and ce > ce_seen[sp]:
                # RFC 9002 §7.5 / B.7 ProcessECN: a higher CE count is a congestion event dated by the
                # send time of the largest acknowledged packet (no event inside the recovery period)
                ce_seen[sp] = ce
                if newly[-1][1] > cc.recovery_start:
                    cc.on_congestion(now, flight)
            pending = {"t_s": now, "event": idx, "space": sp}
        elif kind == "lost_stack" and losses == "stack":
            _, now, pn, sp, info, _la, _idx = ev
            if info is not None:
                if batch and now != batch_t:
                    lose(batch_t, list(batch))
                    batch.clear()
                t, size, infl, elic = info
                batch.append((sp, pn, t, size, infl, elic))
                batch_t = now
        elif kind == "lost_ours" and losses == "ours":
            if batch:
                lose(batch_t, list(batch))
                batch.clear()
            _, now, pkts, sp = ev
            lose(now, [(sp, pn, t, size, infl, elic) for pn, t, size, infl, elic in pkts])
        elif kind == "metrics":
            v = ev[2].get("cwnd")
            logged = v if v is not None else logged
        elif kind == "discard":
            close_pending()
            for key in [k for k in outstanding if k[0] in (0, 1)]:
                _t, size, infl, _e = outstanding.pop(key)
                if infl:
                    flight -= size
    close_pending()
    return Replay(algo, flavor, p, losses, _table(out))


#: the replay table's columns: the ACK's time (s), timeline index and packet number space, the
#: replayed window and threshold (bytes; null: no threshold yet), the stack's logged window
#: (bytes), the bytes in flight after the ACK
_TABLE = {
    "t_s": pl.Float64,
    "event": pl.Int64,
    "space": pl.Int64,
    "cwnd": pl.Float64,
    "ssthresh": pl.Float64,
    "logged_cwnd": pl.Float64,
    "flight": pl.Int64,
}


def _table(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """The replay's rows (one per ACK frame) as a table of :data:`_TABLE`'s columns."""
    return pl.DataFrame(rows, schema=_TABLE) if rows else pl.DataFrame(schema=_TABLE)


def agreement(rep: Replay, skip_s: float = 0.0) -> dict[str, Any]:
    """Relative error |replayed − logged| / logged over the ACKs of the application-data space
    where the stack logged a window: median, p90, p99, the share exactly equal (within 1 byte)."""
    t = rep.table.filter((pl.col("space") == 2) & pl.col("logged_cwnd").is_not_null() & (pl.col("t_s") >= skip_s))
    if t.height == 0:
        return {"acks": 0, "median": None, "p90": None, "p99": None, "exact": None}
    err = ((t["cwnd"] - t["logged_cwnd"]).abs() / t["logged_cwnd"]).sort()
    diff = (t["cwnd"] - t["logged_cwnd"]).abs()
    n = err.len()
    return {
        "acks": n,
        "median": float(err[int(0.5 * (n - 1))]),
        "p90": float(err[int(0.9 * (n - 1))]),
        "p99": float(err[int(0.99 * (n - 1))]),
        "exact": float((diff <= 1.0).mean()),  # type: ignore[arg-type]
    }


def departures(conn: Connection, algo: str, losses: str = "stack") -> list[dict[str, Any]]:
    """Each parameter in which the ``aioquic`` flavor departs from the ``rfc`` one, switched back
    to the RFC's value alone: the agreement with the logged window with and without it. A
    departure the stack really has makes the agreement worse when switched back."""
    base = agreement(replay(conn, algo, "aioquic", losses))
    rfc = FLAVORS[algo]["rfc"]
    aio = FLAVORS[algo]["aioquic"]
    out = []
    for k in rfc:
        if rfc[k] == aio[k]:
            continue
        a = agreement(replay(conn, algo, "aioquic", losses, **{k: rfc[k]}))
        out.append({"parameter": k, "aioquic": aio[k], "rfc": rfc[k], "with": base, "switched_back": a})
    return out
