"""The replay engine: a flow's ACK stream in, each algorithm's window and signals out.

Open-loop semantics (docs/replay.md): the ACK stream, RTT samples, losses and RTT rounds are
those the *actual* sender produced. A replay answers "what would this algorithm have set as its
window, given exactly these ACKs?" — not "what would the network have done had it sent that
window". The congestion state (open / recovery / loss) follows the trace's ``state`` and
``cong_event`` columns; rounds follow the trace's ``round`` / ``round_end``.

Entry points: :func:`prepare` (schema.ACKS → the per-ACK input matrix), :func:`run` (one
algorithm over a prepared stream), :func:`replay` (a DataFrame and algorithm names in, one
DataFrame per algorithm out) and :func:`replay_flow` (a :class:`~hscc_trace.model.FlowEvents`).
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import polars as pl

from hscc_trace import schema
from hscc_trace.errors import InputError
from hscc_trace.perf.firstuse import kernel

from . import tp as T
from .compile import loop_function
from .registry import Resolved, resolve, resolve_many

#: CPUs this process may run on (the loops run ahead in a helper thread only with two or more)
_CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
_STATE_CODE = {s: i for i, s in enumerate(schema.CONG_STATES)}  # open 0, recovery 1, loss 2
#: schema.ACKS columns an ACK table may lack (added after ACK tables were first exported)
_OPTIONAL_ACK_COLUMNS = frozenset({"retrans_bytes"})
_EVENT_CODE = {
    "fast_retransmit": T.EV_FAST_RETRANSMIT,
    "sack_recovery": T.EV_SACK_RECOVERY,
    "rto": T.EV_RTO,
    "ecn": T.EV_ECN,
}


@dataclass
class Prepared:
    """A flow's ACK stream as the engine consumes it."""

    ev: np.ndarray  # (n, tp.NEV) float64, columns tp.E_*
    ts_ns: np.ndarray  # (n,) int64 — ACK capture times
    mss: int  # bytes
    first_flight: float  # packets in flight before the first ACK of new data (iw = 0)
    rate_done: bool = False  # the delivery-rate columns (tp.E_RS_*) are filled (see rate_samples)
    # the ACKs' frame numbers (schema.ACKS ``frame``, UInt64): every replay row carries its ACK's
    # frame, the key that joins a replay to the ACK stream; None → the column is null
    frame: pl.Series | None = None
    # the pieces of the replay tables that a flow's replays may share (built on first use by
    # _frame: the frame and ts_ns keys, and the last Enum column of each name with its codes)
    _shared: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return int(self.ev.shape[0])


def prepare(acks: pl.DataFrame, mss: int, segments: pl.DataFrame | None = None) -> Prepared:
    """Build the input matrix from a schema.ACKS DataFrame.

    ``mss`` (bytes) converts bytes to packets. The per-ACK "sent since the previous ACK" count that
    PRR and the cwnd-limited test use is the growth of ``snd_max`` plus the retransmitted bytes:
    the ``retrans_bytes`` column (placed as the sender saw them, also at a receiver-side capture),
    or, for an ACK table without it, those of ``segments`` (schema.SEGMENTS) by capture time;
    with neither, only new data is counted.
    """
    if mss is None or mss <= 0:
        raise InputError(f"MSS must be a positive number of bytes (got {mss!r})")
    missing = [c.name for c in schema.ACKS if c.name not in acks.columns and c.name not in _OPTIONAL_ACK_COLUMNS]
    if missing:
        raise InputError(f"ACK stream lacks column(s) {', '.join(missing)} (see docs/schema.md)")
    n = acks.height
    ev = np.zeros((n, T.NEV), dtype=np.float64)
    if n == 0:
        return Prepared(ev, np.zeros(0, dtype=np.int64), int(mss), 0.0, frame=pl.Series("frame", [], dtype=pl.UInt64))
    m = float(mss)

    # Every eager polars expression (fill_null, replace_strict, filter …) plans and runs a query
    # (~0.1 ms); a flow has ~20 columns, so nulls are filled only where there are any (casts
    # and to_numpy are direct), which matters with thousands of short flows.
    def col(name: str, fill: float | bool = 0.0) -> np.ndarray:
        s = acks.get_column(name)
        nulls = s.null_count()
        if nulls and s.dtype.is_float() and not math.isnan(fill):
            s = s.fill_null(float(fill))  # a float column may hold real NaNs besides its nulls
        x = s.cast(pl.Float64).to_numpy().astype(np.float64, copy=False)
        if nulls and not s.dtype.is_float():  # to_numpy gave NaN exactly at the nulls
            x = np.where(np.isnan(x), float(fill), x)
        return x

    ts_s = acks.get_column("ts_ns")
    if ts_s.null_count():
        ts_s = ts_s.fill_null(strategy="forward").fill_null(0)
    ts = ts_s.to_numpy().astype(np.int64)
    t0 = ts[0]
    ev[:, T.E_T] = (ts - t0) / 1e9
    acked_b = np.maximum(col("acked_bytes"), 0.0)
    sacked_b = np.maximum(col("sacked_bytes"), 0.0)
    outstanding = np.maximum(col("outstanding"), 0.0)
    delivered_cum = _newly_delivered(acked_b, sacked_b, outstanding, m)
    ev[:, T.E_ACKED] = delivered_cum / m
    ev[:, T.E_SACKED] = sacked_b / m
    ev[:, T.E_RTT] = col("rtt_s", math.nan)
    ev[:, T.E_CA_RTT] = col("ca_rtt_s", math.nan) if "ca_rtt_s" in acks.columns else ev[:, T.E_RTT]
    ev[:, T.E_FLIGHT] = outstanding / m
    pipe = acks.get_column("pipe")
    pipe_b = pipe.cast(pl.Float64).to_numpy()
    if pipe.null_count():  # unknown pipe: the outstanding bytes
        null = pipe.is_null().to_numpy()
        pipe_b = np.where(null, outstanding, np.where(null, 0.0, pipe_b))
    ev[:, T.E_PIPE] = np.maximum(pipe_b, 0.0) / m
    ack = col("ack")
    snd_max = col("snd_max")
    prev_ack = np.empty(n)
    prev_ack[0] = ack[0] - acked_b[0]
    prev_ack[1:] = ack[:-1]
    prev_snd_max = np.empty(n)
    prev_snd_max[0] = prev_ack[0]  # everything outstanding before the first ACK was "sent since"
    prev_snd_max[1:] = snd_max[:-1]
    sent = np.maximum(snd_max - prev_snd_max, 0.0) / m
    if "retrans_bytes" in acks.columns and not acks.get_column("retrans_bytes").null_count():
        sent = sent + col("retrans_bytes") / m
    elif segments is not None and segments.height:
        sent = sent + _retransmitted_between(segments, ts) / m
    ev[:, T.E_SENT] = sent
    prev_pipe = np.empty(n)
    prev_pipe[0] = 0.0
    prev_pipe[1:] = pipe_b[:-1]
    ev[:, T.E_PRIOR_FLIGHT] = np.maximum(prev_pipe / m + sent, 0.0)
    # A window whose scale is unknown (handshake not captured) is only a lower bound of the
    # real one: treat it as no limit rather than clamp the replay to an unscaled window.
    rwnd = col("rwnd_bytes", math.inf)
    scale_known = col("rwnd_scale_known", 1.0) != 0.0
    ev[:, T.E_RWND] = np.where(scale_known, rwnd, math.inf) / m
    ev[:, T.E_STATE] = _codes(acks.get_column("state"), _STATE_CODE, 0.0)
    ev[:, T.E_EVENT] = _codes(acks.get_column("cong_event"), _EVENT_CODE, -1.0)
    ev[:, T.E_UNDO] = col("spurious_undo")
    ev[:, T.E_ROUND] = col("round")
    ev[:, T.E_ROUND_END] = col("round_end")
    ev[:, T.E_ECE] = col("ece")
    ev[:, T.E_DUPACK] = col("dupack")
    ev[:, T.E_ACK] = ack
    ev[:, T.E_SND_MAX] = snd_max
    ev[:, T.E_PREV_ACK] = prev_ack
    ev[:, T.E_DATA_ACKED] = (acked_b > 0).astype(np.float64)
    first = np.flatnonzero(acked_b > 0)
    first_flight = float(ev[first[0], T.E_PRIOR_FLIGHT]) if first.size else 0.0
    frame = acks.get_column("frame").cast(pl.UInt64).alias("frame")
    return Prepared(np.ascontiguousarray(ev), ts, int(mss), first_flight, frame=frame)


def _codes(s: pl.Series, code: Mapping[str, float], default: float) -> np.ndarray:
    """Labels → float codes (``default`` for null or unmapped labels). An Enum column maps its
    physical codes through a lookup table; any other dtype goes through strings."""
    if isinstance(s.dtype, pl.Enum):
        cats = s.dtype.categories.to_list()
        lut = np.array([code.get(c, default) for c in cats] + [default], dtype=np.float64)
        phys = s.to_physical()
        if phys.null_count():  # to_numpy gives floats with NaN at the nulls: they take the last entry
            x = phys.to_numpy()
            return lut[np.where(np.isnan(x), len(cats), x).astype(np.int64)]
        return lut[phys.to_numpy()]
    return s.cast(pl.String).replace_strict(code, default=default, return_dtype=pl.Float64).to_numpy()


@kernel(work=lambda a: len(a[0]), cache=True, nogil=True)
def _newly_delivered(acked, sacked, outstanding, mss):  # pragma: no cover - compiled
    """Bytes each ACK newly delivers *cumulatively*, excluding bytes already SACKed before
    (Linux ``tcp_newly_delivered`` counts a packet once: when SACKed or, if never SACKed, when
    cumulatively ACKed).

    schema.ACKS gives the cumulative advance ``acked_bytes`` and the newly SACKed bytes but not
    the SACK scoreboard, so the SACKed bytes above the cumulative ACK are tracked as a running
    total S: an ACK that advances while S > 0 must first cover a hole (at least one MSS that was
    never SACKed — the retransmission), and the rest of its advance is taken from S.
    """
    n = acked.shape[0]
    out = np.empty(n)
    s = 0.0
    for i in range(n):
        a = acked[i]
        covered = 0.0
        if a > 0.0 and s > 0.0:
            covered = min(s, max(a - mss, 0.0))
        out[i] = a - covered
        s = s - covered + sacked[i]
        if s > outstanding[i]:
            s = outstanding[i]
        if s < 0.0:
            s = 0.0
    return out


def _retransmitted_between(segments: pl.DataFrame, ack_ts: np.ndarray) -> np.ndarray:
    """Bytes retransmitted in (ACK i−1, ACK i] for every ACK i (first: everything before it)."""
    out = np.zeros(ack_ts.shape[0])
    not_new = _codes(segments.get_column("kind"), {"new": 0.0}, 1.0)  # null kind: dropped below
    kind = segments.get_column("kind")
    if kind.null_count():
        not_new[kind.is_null().to_numpy()] = 0.0
    rx = np.flatnonzero(not_new)
    if rx.size == 0:
        return out
    t = segments.get_column("ts_ns").to_numpy()[rx]
    b = segments.get_column("len").cast(pl.Float64).to_numpy()[rx]
    idx = np.searchsorted(ack_ts, t, side="left")  # segment before ACK idx
    ok = idx < ack_ts.shape[0]
    np.add.at(out, idx[ok], b[ok])
    return out


def rate_samples(prep: Prepared) -> Prepared:
    """Fill the per-ACK delivery-rate sample columns (``tp.E_RS_*``) of ``prep`` in place, once.

    Linux computes one ``struct rate_sample`` per ACK in the TCP core (net/ipv4/tcp_rate.c,
    draft-cheng-iccrg-delivery-rate-estimation §3): every transmitted packet P records the
    connection's ``delivered`` count and ``delivered_time`` and the send time of the most
    recently delivered packet (``first_sent_time``); when P is (S)ACKed, ``delivered`` over
    ``interval = max(P.sent − P.first_sent, now − P.delivered_time)`` is a sample of the
    delivery rate. From the trace (:func:`_rate_samples`):

    * the data a sender transmits between ACK i−1 and ACK i (growth of ``snd_max``) is one *send
      batch*, sent right after ACK i−1 was processed: it records that ACK's time, the delivered
      count after it, the time of the last delivery and ``first_sent_time`` then in force;
      after idle (nothing outstanding) both times restart at the send (tcp_rate_skb_sent);
    * the packet an ACK samples is the most recently sent of those it delivers (Linux
      ``tcp_rate_skb_delivered``): the highest byte delivered so far — the cumulative ACK, or,
      for SACKed data, the highest delivered byte plus the newly SACKed bytes (SACK blocks arrive
      in send order; the first lies above a hole of at least one packet) — whose batch holds it; or, when the cumulative ACK fills a
      hole below that byte, a retransmission: retransmissions (packets sent beyond the growth of
      ``snd_max``, known when ``segments`` were given to :func:`prepare`) form their own batches,
      delivered one packet per hole-filling ACK in send order. ACKs that deliver nothing give no
      sample (nan);
    * a sample whose interval is shorter than the smallest RTT so far is dropped, as Linux
      ``tcp_rate_gen`` does (ACK compression would overestimate the rate);
    * ``losses``: packets retransmitted between this ACK and the next (the sender retransmits
      what this ACK marked lost). App-limited marking is not inferred (treated as never
      app-limited, apart from what an algorithm marks itself, e.g. BBR's PROBE_RTT).

    Send times are known only to the gap between two ACKs (the batch is stamped with the ACK
    that released it); at 10 Mbit/s that is ~1-2 ms of a 10-100 ms interval.
    """
    if prep.rate_done or len(prep) == 0:
        prep.rate_done = True
        return prep
    ev = prep.ev
    out = _rate_samples(
        ev[:, T.E_T].copy(),
        ev[:, T.E_ACKED].copy(),
        ev[:, T.E_SACKED].copy(),
        ev[:, T.E_ACK].copy(),
        ev[:, T.E_PREV_ACK].copy(),
        ev[:, T.E_SND_MAX].copy(),
        ev[:, T.E_RTT].copy(),
        ev[:, T.E_SENT].copy(),
        ev[:, T.E_FLIGHT].copy(),
        float(prep.mss),
    )
    ev[:, T.E_RS_DELIVERED] = out[0]
    ev[:, T.E_RS_INTERVAL] = out[1]
    ev[:, T.E_RS_PRIOR_DELIVERED] = out[2]
    ev[:, T.E_RS_LOSSES] = out[3]
    prep.rate_done = True
    return prep


@kernel(work=lambda a: len(a[0]), cache=True, nogil=True)
def _rate_samples(t, acked, sacked, ack, prev_ack, snd_max, rtt, sent, flight, mss):  # pragma: no cover - compiled
    """(delivered, interval, prior_delivered, losses) per ACK — see :func:`rate_samples`.
    Units: t and rtt s; acked, sacked, sent, flight packets; ack, prev_ack, snd_max bytes."""
    n = t.shape[0]
    res = np.full((4, n), np.nan)
    # send batches of new data, in sequence order
    b_end = np.empty(n)  # bytes — end of the batch (snd_max after it)
    b_del = np.empty(n)  # packets — delivered when the batch was sent
    b_dtime = np.empty(n)  # s — delivered_time when it was sent
    b_sent = np.empty(n)  # s — its send time
    b_first = np.empty(n)  # s — first_sent_time when it was sent
    # retransmission batches, in send order (each fills holes below the highest delivered byte)
    r_left = np.empty(n)  # packets of the batch not yet delivered
    r_del = np.empty(n)
    r_dtime = np.empty(n)
    r_sent = np.empty(n)
    r_first = np.empty(n)
    nb = 0
    ptr = 0
    nr = 0
    rptr = 0
    delivered = 0.0
    dtime = np.nan  # Linux tp->delivered_mstamp
    first_tx = np.nan  # Linux tp->first_tx_mstamp
    high = prev_ack[0]  # bytes — highest byte delivered so far (+1)
    prev_max = prev_ack[0]
    min_rtt = np.inf
    for i in range(n):
        # 1. what was sent since the previous ACK (after it was processed)
        new_pk = max(snd_max[i] - prev_max, 0.0) / mss
        rtx_pk = max(sent[i] - new_pk, 0.0) if i > 0 else 0.0
        if new_pk > 0.0 or rtx_pk > 0.0:
            if i > 0:
                ts = t[i - 1]
                idle = flight[i - 1] <= 0.0
            else:  # the first flight, sent one RTT before the first ACK if that is known
                ts = t[0] - rtt[0] if rtt[0] > 0.0 else t[0]
                idle = True
            if idle or not (dtime == dtime):
                dtime = ts
                first_tx = ts
            if rtx_pk > 0.0:
                r_left[nr] = rtx_pk
                r_del[nr] = delivered
                r_dtime[nr] = dtime
                r_sent[nr] = ts
                r_first[nr] = first_tx
                nr += 1
            if new_pk > 0.0:
                b_end[nb] = snd_max[i]
                b_del[nb] = delivered
                b_dtime[nb] = dtime
                b_sent[nb] = ts
                b_first[nb] = first_tx
                nb += 1
                prev_max = snd_max[i]
        # 2. what this ACK delivers
        if rtt[i] > 0.0 and rtt[i] < min_rtt:
            min_rtt = rtt[i]
        d = acked[i] + sacked[i]
        delivered += d
        new_high = ack[i]
        if sacked[i] > 0.0:  # SACKed data lies above a hole of at least one packet
            below = high if high > ack[i] else ack[i] + mss
            new_high = max(new_high, below + sacked[i] * mss)
        new_high = min(new_high, snd_max[i])
        if d > 0.0:
            dtime = t[i]
        # the packet sampled is the most recently sent of those delivered (tcp_rate_skb_delivered):
        # a retransmission when the cumulative ACK filled a hole below the highest delivered byte,
        # else (or if sent later) the batch holding the new highest delivered byte
        s_del, s_dtime, s_sent, s_first = np.nan, np.nan, -np.inf, np.nan
        if ack[i] > prev_ack[i] and prev_ack[i] < high and rptr < nr:
            s_del, s_dtime, s_sent, s_first = r_del[rptr], r_dtime[rptr], r_sent[rptr], r_first[rptr]
            r_left[rptr] -= 1.0
            if r_left[rptr] <= 1e-9:
                rptr += 1
        if new_high > high and nb > 0:
            high = new_high
            while ptr < nb - 1 and b_end[ptr] < high:
                ptr += 1
            if b_sent[ptr] >= s_sent:
                s_del, s_dtime, s_sent, s_first = b_del[ptr], b_dtime[ptr], b_sent[ptr], b_first[ptr]
        if s_del == s_del:
            interval = max(s_sent - s_first, t[i] - s_dtime)
            first_tx = s_sent
            if interval > 0.0 and not (interval < min_rtt):
                res[0, i] = delivered - s_del
                res[1, i] = interval
                res[2, i] = s_del
        # 3. losses: what the sender retransmitted before the next ACK (its reaction to this one)
        if i + 1 < n:
            nxt_new = max(snd_max[i + 1] - snd_max[i], 0.0) / mss
            res[3, i] = max(sent[i + 1] - nxt_new, 0.0)
        else:
            res[3, i] = 0.0
    return res


def _needs_rate(r: Resolved) -> bool:
    return callable(getattr(r.base.module, "cong_control", None))


def run(algo: Resolved | str, prep: Prepared, *, compiled: bool | None = None) -> pl.DataFrame:
    """Replay one algorithm over a prepared stream → schema.REPLAY_BASE + the algorithm's signals.

    ``compiled``: ``True`` the compiled loop (compiled now if not cached), ``False`` the same
    source as plain Python, ``None`` (default) by the first-use rule: compiled when cached, else
    interpreted while the work is small (:func:`hscc_trace.replay.compile.loop_function`)."""
    r = resolve(algo) if isinstance(algo, str) else algo
    if not prep.rate_done and _needs_rate(r):
        rate_samples(prep)
    loop, sigs = _setup(r, prep, compiled)
    return _frame(prep.ts_ns, loop(), sigs, prep.frame, prep._shared)


def _setup(r: Resolved, prep: Prepared, compiled: bool | None) -> tuple[Callable[[], np.ndarray], list]:
    """(a call running ``r``'s loop over ``prep`` and returning its output matrix, the signals):
    everything but the loop itself and the table, done in the calling thread. ``prep``'s rate
    samples must be filled already if ``r`` needs them (:func:`run` does it)."""
    fn, sigs, sig_idx = _plan(r, compiled)
    n = len(prep)
    tpa = np.zeros(T.NTP, dtype=np.float64)
    flavor = r.values["flavor"]
    tpa[T.FLAVOR] = T.LINUX if flavor == "linux" else T.RFC
    iw = float(r.values["iw"])
    if iw <= 0.0:
        iw = max(round(prep.first_flight), 1.0) if prep.first_flight > 0 else 10.0
    tpa[T.IW] = iw
    tpa[T.CWND] = iw
    tpa[T.SSTHRESH] = math.inf
    tpa[T.MSS] = float(prep.mss)
    for k in (T.RTT, T.MIN_RTT, T.SRTT, T.RTTVAR, T.ROUND_MIN_RTT, T.CUR_ROUND_MIN_RTT):
        tpa[k] = math.nan
    tpa[T.LAST_ECN_ROUND] = -1.0
    tpa[T.DELIVERED_TIME] = math.nan
    tpa[T.CWND_USAGE_SEQ] = -math.inf
    st = np.zeros(r.nstate, dtype=np.float64)
    p = r.param_array()
    ncol = 3 + len(sigs)

    def loop() -> np.ndarray:
        out = np.empty((n, ncol), dtype=np.float64, order="F")  # columns contiguous → zero-copy Series
        fn(prep.ev, tpa, st, p, sig_idx, out)
        return out

    return loop, sigs


#: Loops run ahead in a helper thread while this one builds the previous algorithm's table, for
#: flows of at least this many ACKs (below, a thread hand-over costs more than it saves). The
#: compiled loops release the GIL (``nogil``), the tables need it: on two cores a flow's replays
#: take about the longer of the two instead of their sum. Outputs are the same either way: each
#: loop writes only its own arrays, and the input matrix is read-only by then.
AHEAD_MIN_ACKS = 2000
#: Whether loops may run ahead at all. Off in the corpus runner's tasks
#: (:mod:`hscc_trace.corpus.runner`): its worker processes already keep every core busy, and there
#: the hand-overs only cost CPU (400 captures on 2 workers, two alternating rounds, load ≈ 2:
#: 18.4 / 19.2 s with the look-ahead, 15.5 / 17.4 s without).
LOOK_AHEAD = True
#: loops run or finished ahead of the tables at most (bounds the output matrices held at once)
AHEAD = 2
_POOL: Any = None
_POOL_LOCK = threading.Lock()


def _pool() -> Any:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            from concurrent.futures import ThreadPoolExecutor

            _POOL = ThreadPoolExecutor(1, thread_name_prefix="hscc-replay-loop")
        return _POOL


_PLANS: dict[tuple[int, int, bool | None], tuple[Any, Any, Any, list, np.ndarray]] = {}


def _plan(r: Resolved, compiled: bool | None) -> tuple[Any, list, np.ndarray]:
    """(loop function, signals, their state indices) of an algorithm: the same for every flow, so
    looked up once per process (finding the generated module and listing the signals cost
    ~0.1 ms a call, as much as replaying a short flow). Keyed by the registry's Algorithm objects
    (kept in the entry, so their ids stay theirs)."""
    key = (id(r.base), id(r.wrapper), compiled)
    hit = _PLANS.get(key)
    if hit is None or hit[0] is not r.base or hit[1] is not r.wrapper:
        sigs = r.signals()
        hit = (
            r.base,
            r.wrapper,
            loop_function(r.base, r.wrapper, compiled=compiled),
            sigs,
            np.array([i for _, i in sigs], dtype=np.int64),
        )
        _PLANS[key] = hit
    return hit[2], hit[3], hit[4]


@lru_cache(maxsize=256)
def _enum_labels(name: str, labels: tuple[str, ...]) -> pl.Series:
    """The labels of an Enum column as a Series of that Enum (built once per process: creating
    the Enum dtype and its string Series costs ~1 ms, more than the whole rest of a frame)."""
    return pl.Series(name, list(labels), dtype=pl.Enum(list(labels)))


def _enum(name: str, labels: tuple[str, ...], codes: np.ndarray, shared: dict[Any, Any] | None = None) -> pl.Series:
    """Float codes 0..k−1 → an Enum column (gathered from the labels, no per-row strings).

    With ``shared`` (one dict per flow), a column whose codes equal those of the flow's previous
    column of the same name and labels is that Series again (polars Series are immutable): the
    congestion state follows the trace, so every replay of a flow mostly has the same ``state``;
    comparing the codes costs a fraction of building the column."""
    key = ("enum", name, labels)
    if shared is not None:
        hit = shared.get(key)
        if hit is not None and np.array_equal(hit[0], codes):
            return hit[1]
    # nan and codes < 0 → 0, codes > k−1 → k−1 (comparisons with nan are False); truncated
    idx = np.where(codes > 0.0, codes, 0.0)
    np.minimum(idx, len(labels) - 1, out=idx)
    col = _enum_labels(name, labels)[idx.astype(np.uint32)]  # Series[ndarray] gathers without the expression engine
    if shared is not None:
        shared[key] = (codes.copy(), col)  # (a copy: a view would keep the loop's whole output alive)
    return col


_STATES = tuple(schema.CONG_STATES)


def _public_f64(name: str, v: np.ndarray) -> pl.Series:
    return pl.Series(name, v, dtype=pl.Float64, nan_to_null=True)


def _float_series_maker() -> Any:
    """``(name, float64 array) → Series`` with NaN as null, zero-copy.

    ``pl.Series(name, v, dtype=Float64, nan_to_null=True)`` validates its arguments in Python
    (~15 µs, most of a short flow's replay frame with ~10 float columns) before calling the
    constructor ``PySeries.new_f64(name, v, nan_to_null)`` for a contiguous float64 array. That
    constructor is not public API: it is used only if it exists and gives the public result on a
    probe (so another polars version falls back to the public path). This adapter is the only
    use of it; it goes when ``pl.Series`` gets a fast path for a contiguous float64 array (or
    the replay builds its table another way). Tested by the replay parity tests, which compare
    with the public constructor's result."""
    try:
        try:
            from polars._plr import PySeries  # polars ≥ 1.32
        except ImportError:
            from polars.polars import PySeries  # type: ignore[no-redef]

        def fast(name: str, v: np.ndarray) -> pl.Series:
            if v.dtype != np.float64 or not v.flags.c_contiguous:
                return _public_f64(name, v)
            return pl.Series._from_pyseries(PySeries.new_f64(name, v, True))

        probe = np.asfortranarray(np.array([[1.5, np.nan, -np.inf, 0.0], [2.0, 3.0, np.nan, 4.0]]).T)[:, 0]
        a, b = fast("p", probe), _public_f64("p", probe)
        if a.dtype == b.dtype and a.name == b.name and a.to_list() == b.to_list() and a.null_count() == 1:
            return fast
    except Exception:  # noqa: BLE001 - any difference: the public constructor
        pass
    return _public_f64


_f64 = _float_series_maker()


def _frame(
    ts_ns: np.ndarray,
    out: np.ndarray,
    sigs: list,
    frame: pl.Series | None = None,
    shared: dict[Any, Any] | None = None,
) -> pl.DataFrame:
    """The replay table from the loop's output matrix: one Series per column straight from numpy
    (no expression engine: each eager polars expression costs a query plan, ~0.1 ms). Row i
    answers ACK i: ``frame`` and ``ts_ns`` are that ACK's (the keys of schema.REPLAY_BASE).

    Float columns are zero-copy views of a column-major float matrix, and ts_ns of the flow's one
    array, shared by every algorithm's frame. Views keep their whole matrix alive, so when the
    loop's output also holds columns that become Enum/Boolean Series (state, flags: a quarter of
    all output columns over the default algorithms), the float columns are first moved to a
    matrix of their own (a column copy each), which the replays of a long capture keep instead.

    ``shared`` (a dict per flow, :class:`Prepared`) keeps what a flow's tables have in common:
    the ``frame`` and ``ts_ns`` Series are built once per flow, an Enum column equal to the
    previous one of its name is reused (:func:`_enum`)."""
    kinds = ["float", "float", "enum", *(s.kind for s, _ in sigs)]
    fidx = [c for c, k in enumerate(kinds) if k not in ("bool", "enum")]
    if len(fidx) < out.shape[1]:
        floats = np.empty((out.shape[0], len(fidx)), dtype=np.float64, order="F")
        for j, c in enumerate(fidx):
            floats[:, j] = out[:, c]
    else:
        floats = out
    fcol = {c: floats[:, j] for j, c in enumerate(fidx)}
    ssthresh = fcol[1]
    ssthresh[~np.isfinite(ssthresh)] = np.nan  # infinite ssthresh (never set) is null, in place
    keys = shared.get("keys") if shared is not None else None
    if keys is None or keys[0] is not ts_ns or keys[1] is not frame:
        frames = (
            frame.alias("frame")
            if frame is not None and len(frame) == len(ts_ns)
            else pl.Series("frame", [None] * len(ts_ns), dtype=pl.UInt64)
        )
        keys = (ts_ns, frame, frames, pl.Series("ts_ns", ts_ns, dtype=pl.Int64))
        if shared is not None:
            shared["keys"] = keys
    cols: dict[str, pl.Series] = {
        "frame": keys[2],
        "ts_ns": keys[3],
        "cwnd": _f64("cwnd", fcol[0]),
        "ssthresh": _f64("ssthresh", ssthresh),
        "state": _enum("state", _STATES, out[:, 2], shared),
    }
    for k, (s, _) in enumerate(sigs):
        c = 3 + k
        if s.name in cols:
            raise RuntimeError(f"signal {s.name!r} collides with a base column")
        if s.kind == "bool":
            cols[s.name] = pl.Series(s.name, out[:, c] != 0.0, dtype=pl.Boolean)
        elif s.kind == "enum":
            cols[s.name] = _enum(s.name, tuple(s.labels), out[:, c], shared)
        else:
            cols[s.name] = _f64(s.name, fcol[c])
    return pl.DataFrame(list(cols.values()))


def replay(
    acks: pl.DataFrame,
    mss: int,
    algos: Iterable[str | Resolved],
    params: Iterable[str] = (),
    *,
    segments: pl.DataFrame | None = None,
    compiled: bool | None = None,
) -> dict[str, pl.DataFrame]:
    """Replay several algorithms over one ACK stream → ``{label: frame}``.

    ``algos`` are names (``reno``, ``kyushu+cubic``) or resolved algorithms; ``params`` are
    ``algo.name=value`` overrides for the named ones; ``compiled`` as in :func:`run`.
    """
    algos = list(algos)
    names = [a for a in algos if isinstance(a, str)]
    params = list(params)
    if params and not names:
        raise InputError("--param overrides apply to algorithms given by name")
    rs = resolve_many(names, params) if names else []
    order = [a if not isinstance(a, str) else rs.pop(0) for a in algos]
    if not order:
        raise InputError("no algorithm given (see `hscc-trace algorithms`)")
    prep = prepare(acks, mss, segments)
    labels = [r.label for r in order]
    for k, label in enumerate(labels):
        if label in labels[:k]:
            raise InputError(f"algorithm {label} requested twice")
    if not prep.rate_done and any(_needs_rate(r) for r in order):
        rate_samples(prep)  # (before any loop runs: the loops only read the input matrix)
    jobs = [_setup(r, prep, compiled) for r in order]
    out: dict[str, pl.DataFrame] = {}
    if not LOOK_AHEAD or len(jobs) < 2 or len(prep) < AHEAD_MIN_ACKS or _CPUS < 2 or compiled is False:
        for label, (loop, sigs) in zip(labels, jobs):
            out[label] = _frame(prep.ts_ns, loop(), sigs, prep.frame, prep._shared)
        return out
    pool = _pool()
    futures: list[Any] = [pool.submit(loop) for loop, _ in jobs[:AHEAD]]
    try:
        for k, (label, (_, sigs)) in enumerate(zip(labels, jobs)):
            mat = futures[k].result()
            futures[k] = None
            if k + AHEAD < len(jobs):
                futures.append(pool.submit(jobs[k + AHEAD][0]))
            out[label] = _frame(prep.ts_ns, mat, sigs, prep.frame, prep._shared)
    finally:
        for f in futures:
            if f is not None:
                f.cancel()
    return out


def replay_flow(
    events: Any, algos: Iterable[str | Resolved], params: Iterable[str] = (), *, compiled: bool | None = None
) -> dict[str, pl.DataFrame]:
    """:func:`replay` on a :class:`hscc_trace.model.FlowEvents`."""
    return replay(events.acks, events.mss, algos, params, segments=events.segments, compiled=compiled)
