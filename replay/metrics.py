"""Fit metrics: how well a replayed window matches the actual sender (and, on samples with
kernel ground truth, the kernel's own ``snd_cwnd``).

Fit to the actual sender (schema.FIT_METRICS), over the flow's RTT rounds that were
**cwnd-limited** (schema.ROUNDS ``limit == "cwnd"``) and **not in recovery**:

* the actual window of a round is its **peak flight** in packets (``peak_flight_bytes / mss``):
  on a cwnd-limited round the sender filled its window, so the peak flight is the best
  observation of cwnd the trace offers;
* the replayed window of a round is the replayed cwnd **after the round's last ACK but one**
  (:func:`round_rows`) — the window in force when the round's last segments left: a sender
  answers each ACK by filling its window, and what it sends after the ACK that closes the round
  belongs to the next round. The window after the closing ACK itself would include that ACK's
  update, which the round's flight never saw (for algorithms that update once per round — Vegas,
  Compound's dwnd — a whole step of it); the round's maximum would favour algorithms that
  overshoot inside a round. A rate-based algorithm (BBR) governs its flight by pacing as well as
  by cwnd: its replay carries the signal :data:`FIT_WINDOW` (``inflight_cap`` = min(cwnd,
  pacing rate · srtt)), which is used instead of cwnd;
* ``mare`` — median over rounds of ``|replayed − actual| / actual``;
* ``rmse_pkts`` — root-mean-square of ``replayed − actual`` (packets);
* ``corr`` — Pearson correlation of the two series (null with fewer than 3 rounds or no variance);
* ``goodput_pred_bps`` — mean over the rounds of ``replayed·MSS·8 / RTT`` with RTT the round's
  min RTT sample (the rate the replayed window would sustain at that RTT);
  ``goodput_actual_bps`` — bytes acknowledged in those rounds · 8 / their total duration;
* ``rank`` — 1 = lowest mare (ties: lower RMSE, then name).

:func:`truth_alignment` pairs replay rows with the kernel's tcp_probe rows (samples/) for the
fidelity tests: a probe fires *before* its triggering ACK is processed, so its ``snd_cwnd`` is
the window after the previous ACK, the one whose cumulative ACK equals the probe's ``snd_una``.
"""

from __future__ import annotations

import math
import operator
import threading
import weakref
from typing import Any, Literal

import numpy as np
import polars as pl

from hscc_trace import schema
from hscc_trace.perf.jit import njit

#: replay column a rate-based algorithm provides as its in-flight limit (used instead of cwnd)
FIT_WINDOW = "inflight_cap"


def round_rows(ts: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per round (its closing ACK's time ``end``), the replay row whose window was in force when
    the round's last segments were sent: the row of the ACK before the closing one (the rows are
    one per ACK, in time order); −1 when the closing ACK is not among the rows."""
    last = np.searchsorted(ts, end, side="right") - 1  # the closing ACK's row
    return np.where(last >= 0, np.maximum(last - 1, 0), -1)


def filled(s: pl.Series, fill: Any) -> np.ndarray:
    """``s.fill_null(fill).to_numpy()``, calling the polars expression only when ``s`` has nulls:
    each eager polars expression plans and runs a query (≈ 0.1–0.3 ms), and a flow's fit and
    verdict asked for dozens of them."""
    return (s.fill_null(fill) if s.null_count() else s).to_numpy()


class _RowsOf:
    """:func:`round_rows` of one set of rounds for every replay of a flow, computed once per
    ``ts_ns`` buffer: a flow's replays share one (:func:`hscc_trace.replay.engine.replay`), and
    polars buffers are immutable, so the same buffer means the same times."""

    def __init__(self, end: np.ndarray) -> None:
        self.end = end
        self._key: tuple[int, int, str] | None = None
        self._rows = np.zeros(0, dtype=np.int64)
        self._ts: np.ndarray | None = None  # held: a freed buffer's address could come back

    def __call__(self, ts: np.ndarray) -> np.ndarray:
        key = (int(ts.__array_interface__["data"][0]), int(ts.shape[0]), ts.dtype.str)
        if key != self._key:
            self._rows, self._key, self._ts = round_rows(ts, self.end), key, ts
        return self._rows


def round_table(acks: pl.DataFrame, rounds: pl.DataFrame, replay: pl.DataFrame, mss: int) -> pl.DataFrame:
    """Per usable round: ``round``, ``actual_pkts``, ``replayed_pkts``, ``rtt_s``, ``dur_s``,
    ``acked_bytes`` (cwnd-limited rounds outside recovery only)."""
    if rounds.height == 0 or replay.height == 0:
        return pl.DataFrame(
            schema={
                "round": pl.UInt32,
                "actual_pkts": pl.Float64,
                "replayed_pkts": pl.Float64,
                "rtt_s": pl.Float64,
                "dur_s": pl.Float64,
                "acked_bytes": pl.Int64,
            }
        )
    use = rounds.filter(
        (pl.col("limit") == "cwnd") & ~pl.col("in_recovery").fill_null(True) & (pl.col("peak_flight_bytes") > 0)
    )
    ts = replay.get_column("ts_ns").to_numpy()
    cw = replay.get_column(FIT_WINDOW if FIT_WINDOW in replay.columns else "cwnd").to_numpy()
    end = use.get_column("end_ns").to_numpy()
    idx = round_rows(ts, end)
    ok = idx >= 0
    use = use.filter(pl.Series(ok))
    idx = idx[ok]
    return pl.DataFrame(
        {
            "round": use.get_column("round"),
            "actual_pkts": use.get_column("peak_flight_bytes").cast(pl.Float64) / float(mss),
            "replayed_pkts": pl.Series(cw[idx], dtype=pl.Float64),
            "rtt_s": use.get_column("min_rtt_s").cast(pl.Float64),
            "dur_s": ((use.get_column("end_ns") - use.get_column("start_ns")).cast(pl.Float64) / 1e9),
            "acked_bytes": use.get_column("acked_bytes").cast(pl.Int64),
        }
    )


class _Actual:
    """What :func:`_window_metrics` computes from the actual side alone (the rounds' windows and
    RTTs), once per flow: every replay of a flow is compared with the same rounds."""

    def __init__(self, a: np.ndarray, rtt: np.ndarray) -> None:
        self.a, self.rtt = a, rtt
        self.fa = np.isfinite(a) & (a > 0)
        self._std_pos: bool | None = None
        self._okr: tuple[np.ndarray, np.ndarray] | None = None

    def std_pos(self) -> bool:
        """np.std(a) > 0 (asked only where every round is good: then a is what is compared)."""
        if self._std_pos is None:
            self._std_pos = bool(np.std(self.a) > 0)
        return self._std_pos

    def okr(self) -> tuple[np.ndarray, np.ndarray]:
        """(rounds with a usable RTT, their RTTs), where every round is good."""
        if self._okr is None:
            okr = np.isfinite(self.rtt) & (self.rtt > 0)
            self._okr = (okr, self.rtt[okr])
        return self._okr


def _window_metrics(
    out: dict[str, Any], a: np.ndarray, r: np.ndarray, rtt: np.ndarray, mss: int, pre: _Actual | None = None
) -> bool:
    """Fill ``mare``, ``rmse_pkts``, ``corr`` and ``goodput_pred_bps`` of ``out`` from the rounds'
    actual and replayed windows (packets) and min RTTs (s), aligned; rounds without a finite
    positive actual and a finite replayed window are left out. False when none is left.

    ``pre`` (:class:`_Actual` of these ``a`` and ``rtt``) shares the actual side's part between
    the replays of a flow; the values are the same (where every round is good, the selected
    arrays equal the whole ones)."""
    if pre is None:
        good = np.isfinite(a) & np.isfinite(r) & (a > 0)
        whole = False
    else:
        good = pre.fa & np.isfinite(r)
        whole = bool(good.all())
    if not whole:
        a, r = a[good], r[good]
    if a.size == 0:
        return False
    out["mare"] = float(np.median(np.abs(r - a) / a))
    out["rmse_pkts"] = float(math.sqrt(np.mean((r - a) ** 2)))
    if a.size >= 3 and (pre.std_pos() if whole and pre is not None else np.std(a) > 0) and np.std(r) > 0:
        out["corr"] = float(np.corrcoef(a, r)[0, 1])
    if whole and pre is not None:
        okr, rtt_okr = pre.okr()
    else:
        rtt = rtt[good]
        okr = np.isfinite(rtt) & (rtt > 0)
        rtt_okr = rtt[okr]
    if okr.any():
        out["goodput_pred_bps"] = float(np.mean(r[okr] * mss * 8.0 / rtt_okr))
    return True


def fit_one(rt: pl.DataFrame, mss: int) -> dict[str, Any]:
    """Metrics of one replay from its :func:`round_table`."""
    n = rt.height
    out: dict[str, Any] = {
        "rounds": n,
        "mare": None,
        "rmse_pkts": None,
        "corr": None,
        "goodput_pred_bps": None,
        "goodput_actual_bps": None,
    }
    if n == 0:
        return out
    if not _window_metrics(
        out,
        rt.get_column("actual_pkts").to_numpy(),
        rt.get_column("replayed_pkts").to_numpy(),
        rt.get_column("rtt_s").to_numpy(),
        mss,
    ):
        return out
    dur = float(rt.get_column("dur_s").sum())
    if dur > 0:
        out["goodput_actual_bps"] = float(rt.get_column("acked_bytes").sum()) * 8.0 / dur
    return out


def scaled(x: np.ndarray, d: float) -> np.ndarray:
    """``pl.Series(x).cast(pl.Float64) / d`` as polars computes it — it multiplies by the
    reciprocal, which is not always numpy's ``x / d`` to the last bit (tests/analysis/test_fit_matrix.py
    holds the two equal) — without building a Series (≈ 30 µs each)."""
    return x.astype(np.float64) * (1.0 / d)


class _Memo:
    """The last value computed from some tables, with weak references to them: a flow's fit and
    verdict ask for the same things of its events one after the other (and :func:`warm` before
    them), and take them once. Valid while the tables are the very objects it was made of
    (polars tables are not changed in place here); one entry per thread (the last flow that
    thread asked about: with ``--jobs N`` each lane analyzes its own flows, which would
    otherwise push each other's entry out)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def get(self, tables: tuple[Any, ...], key: tuple[Any, ...], make: Any) -> Any:
        # (plain loops, not generator expressions: a flow asks a dozen times, of up to 16 tables)
        last = getattr(self._local, "last", None)
        if last is not None and last[1] == key and len(last[0]) == len(tables):
            for r, t in zip(last[0], tables):
                if r() is not t:
                    break
            else:
                return last[2]
        value = make()
        try:
            self._local.last = (tuple([weakref.ref(t) for t in tables]), key, value)
        except TypeError:  # (tables without weak references: nothing kept)
            pass
        return value


_LIMITS = _Memo()  # (the strings and the masks asked of them: limit_strings, limit_is)


def limit_strings(rounds: pl.DataFrame) -> np.ndarray:
    """The rounds' ``limit`` as strings (an object array; None where null), kept for the last
    rounds table it was asked of (a weak reference: the fit, the verdict and its evidence of a
    flow each ask for it; turning a long flow's rounds into strings costs ≈ 40 ns each)."""
    return _limits_entry(rounds).strings()


def limit_is(rounds: pl.DataFrame, name: str | None) -> np.ndarray:
    """``limit_strings(rounds) == name`` (``None``: the rounds whose limit is null), read-only,
    kept with the strings: a flow's fit, verdict and evidence ask for the same few masks. An
    Enum column (schema.ROUNDS) is compared by its codes, without its strings."""
    return _limits_entry(rounds).mask(name)


class _Limits:
    """A rounds table's ``limit`` column as :func:`limit_strings` and :func:`limit_is` take it:
    its strings and its label codes, each made when first asked, and the masks asked so far."""

    def __init__(self, s: pl.Series) -> None:
        self.s = s
        self._strings: np.ndarray | None = None
        self._codes: tuple[np.ndarray, list[str]] | None | Literal[False] = None  # False: not an Enum
        self.masks: dict[str | None, np.ndarray] = {}

    def strings(self) -> np.ndarray:
        if self._strings is None:
            s = self.s
            # (an Enum, Categorical or String column gives its strings as objects — not asked
            # through ``s.dtype``, which builds the Enum type and its categories anew at each
            # access; another column that gives objects, e.g. booleans with nulls, gives no
            # strings: cast)
            out = s.to_numpy()
            if out.dtype != object or not isinstance(_first_value(out, s.null_count()), (str, type(None))):
                out = s.cast(pl.String).to_numpy()
            self._strings = _frozen(out)
        return self._strings

    def codes(self) -> tuple[np.ndarray, list[str]] | None:
        """:func:`enum_labels` of the column (None: not an Enum)."""
        if self._codes is None:
            self._codes = enum_labels(self.s) or False
        return self._codes if self._codes is not False else None

    def mask(self, name: str | None) -> np.ndarray:
        hit = self.masks.get(name)
        if hit is None:
            c = self.codes() if name is None or isinstance(name, str) else None
            if c is not None:
                x, labels = c
                if name is None:
                    hit = x < 0
                elif name in labels:
                    hit = x == labels.index(name)
                else:
                    hit = np.zeros(x.shape[0], dtype=bool)
            else:
                hit = self.strings() == name  # (elementwise, also for None)
            hit = self.masks[name] = _frozen(hit)
        return hit


def _limits_entry(rounds: pl.DataFrame) -> _Limits:
    """The rounds' :class:`_Limits`, kept (:class:`_Memo`)."""
    return _LIMITS.get((rounds,), (), lambda: _Limits(rounds.get_column("limit")))


def enum_labels(s: pl.Series) -> tuple[np.ndarray, list[str]] | None:
    """(each row's label index, −1 where null; the labels) of an Enum column, or None for a
    column of another dtype. The label indices are the column's physical codes (read-only)."""
    dt = s.dtype  # (made anew at each access: for an Enum, with its categories)
    if not isinstance(dt, pl.Enum):
        return None
    n, nulls = s.len(), s.null_count()
    if nulls == n:
        x = np.full(n, -1, dtype=np.int64)
    else:
        x = s.to_physical().to_numpy()
        if nulls:  # (floats, NaN at the nulls)
            x = np.where(np.isnan(x), -1, x).astype(np.int64)
    return _frozen(x), dt.categories.to_list()


_ENUMS = _Memo()


def enum_codes(table: pl.DataFrame, name: str) -> tuple[np.ndarray, list[str]] | None:
    """:func:`enum_labels` of column ``name`` of ``table``, kept per table (:class:`_Memo`): a
    flow's replay inputs (``engine.prepare``), its judged ACKs and its verdict ask for the same
    Enum columns of its ACK stream (each ``to_physical`` plans and runs a query)."""
    kept = _ENUMS.get((table,), (), dict)
    hit = kept.get(name)
    if hit is None:
        hit = kept[name] = enum_labels(table.get_column(name)) or False
    return hit or None


def _first_value(a: np.ndarray, nulls: int) -> Any:
    """The first element of the object array ``a`` that is not None (None if all are: ``nulls``
    of them)."""
    if nulls == a.shape[0]:
        return None
    if not nulls:
        return a[0]
    for v in a:
        if v is not None:
            return v
    return None


def equals(s: pl.Series, value: str) -> np.ndarray:
    """``(s == value).fill_null(False).to_numpy()`` for a string, Enum or Categorical column
    (polars compares an Enum by its codes). Not through the column's Arrow dictionary: importing
    pyarrow costs ≈ 25 MB of resident memory, more than the ≈ 60 µs per flow it saves."""
    return filled(s == value, False)


class _UsableRounds:
    """The usable rounds of one flow (see :func:`round_table`) as arrays, computed once per flow
    and shared by every replay of it: only the replayed window differs between algorithms."""

    def __init__(self, rounds: pl.DataFrame, mss: int, use: np.ndarray) -> None:
        # ``use``: the usable rounds' rows, as :class:`_AtRounds` selected them (:func:`_rounds_used`)
        self.empty = rounds.height == 0
        peak = rounds.get_column("peak_flight_bytes").to_numpy() if not self.empty else np.zeros(0)
        if self.empty:
            use = np.zeros(0, dtype=np.int64)
        # the same elementwise operations as round_table's columns, so the values are bit-identical
        self.end = rounds.get_column("end_ns").to_numpy()[use] if not self.empty else np.zeros(0, np.int64)
        if self.empty:
            self.actual = self.rtt = np.zeros(0)
            self.dur, self.acked = np.zeros(0), np.zeros(0, dtype=np.int64)
        else:
            self.actual = scaled(peak[use], float(mss))
            rtt = rounds.get_column("min_rtt_s")
            self.rtt = (rtt if rtt.dtype == pl.Float64 else rtt.cast(pl.Float64)).to_numpy()[use]
            start = rounds.get_column("start_ns").to_numpy()[use]
            self.dur = scaled(self.end - start, 1e9)
            self.acked = rounds.get_column("acked_bytes").cast(pl.Int64).to_numpy()[use]
        self._sums: tuple[float, float] | None = None
        self._at: tuple[np.ndarray, tuple[np.ndarray, int, np.ndarray, _Actual]] | None = None

    def at(self, idx: np.ndarray) -> tuple[np.ndarray, int, np.ndarray, _Actual]:
        """(rounds found among the replay's rows, their number, those rows, the actual side of
        the comparison) for the rows :meth:`rows` gave — once per flow, as they are."""
        if self._at is None or self._at[0] is not idx:
            ok = idx >= 0
            self._at = (idx, (ok, int(ok.sum()), idx[ok], _Actual(self.actual[ok], self.rtt[ok])))
        return self._at[1]

    def sums(self, ok: np.ndarray) -> tuple[float, float]:
        """(total duration s, total acked bytes) of the rounds selected by ``ok`` (the duration
        summed by polars, as round_table's column was: its float sum is not numpy's)."""
        if ok.all():
            if self._sums is None:
                self._sums = (float(pl.Series(self.dur).sum()), float(pl.Series(self.acked).sum()))
            return self._sums
        return float(pl.Series(self.dur[ok]).sum()), float(pl.Series(self.acked[ok]).sum())


def _no_fit() -> dict[str, Any]:
    return {
        "rounds": 0,
        "mare": None,
        "rmse_pkts": None,
        "corr": None,
        "goodput_pred_bps": None,
        "goodput_actual_bps": None,
    }


def _window_metrics_rows(outs: list[dict[str, Any]], R: np.ndarray, mss: int, pre: _Actual) -> list[bool]:
    """:func:`_window_metrics` of every row of ``R`` (one replay's windows per row, at the rounds
    of ``pre``) at once: the rows whose every round is good (the usual case) go through numpy
    along the rows — each reduction over a row of a C-ordered matrix is the one numpy makes over
    that row alone (pairwise sums, the same partition for the median), so the numbers are the
    same — and the others one by one. Returns, per row, whether its metrics were set."""
    a, rtt = pre.a, pre.rtt
    good = np.isfinite(R)
    good &= pre.fa
    whole = good.all(axis=1)
    done = [False] * len(outs)
    for j in np.flatnonzero(~whole):
        done[j] = _window_metrics(outs[j], a, R[j], rtt, mss, pre)
    rows = np.flatnonzero(whole)
    if rows.size == 0:
        return done
    W = R if rows.size == R.shape[0] else R[rows]
    D = W - a
    mare = np.median(np.abs(D) / a, axis=1)
    ms = np.mean(D**2, axis=1)
    corr = np.full(rows.size, np.nan)
    if a.size >= 3 and pre.std_pos():
        spread = np.std(W, axis=1) > 0
        if spread.any():
            corr[spread] = _corrcoef_rows(a, W[spread])
    else:
        spread = np.zeros(rows.size, dtype=bool)
    okr, rtt_okr = pre.okr()
    gp = None
    if okr.any():  # (C order: a mask along the rows' axis gives a matrix in Fortran order, whose sums differ)
        Wr = W if okr.all() else np.ascontiguousarray(W[:, okr])
        gp = np.mean(Wr * mss * 8.0 / rtt_okr, axis=1)
    for k, row in enumerate(rows.tolist()):
        out = outs[row]
        out["mare"] = float(mare[k])
        out["rmse_pkts"] = float(math.sqrt(ms[k]))
        if spread[k]:
            out["corr"] = float(corr[k])
        if gp is not None:
            out["goodput_pred_bps"] = float(gp[k])
        done[row] = True
    return done


def _corrcoef_rows(a: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``np.corrcoef(a, W[j])[0, 1]`` for every row ``j``, by numpy's own steps (``np.cov``:
    the rows centred on their means, the 2 × n product with its transpose through the same
    ``np.dot``, scaled by 1 / (n − 1); then divided by both standard deviations and clipped)
    without its ≈ 70 µs of wrappers per call. tests/analysis/test_fit_matrix.py holds the two equal."""
    n = a.shape[0]
    f = np.true_divide(1, n - 1)
    ac = a - a.mean()
    Wc = W - W.mean(axis=1)[:, None]
    X = np.empty((2, n))
    X[0] = ac
    out = np.empty(W.shape[0])
    for j in range(W.shape[0]):
        X[1] = Wc[j]
        c = np.dot(X, X.T)
        c *= f
        sd = np.sqrt(c.diagonal())  # (np.diag's values, without its wrapper)
        out[j] = c[0, 1] / sd[0] / sd[1]
    return np.clip(out, -1.0, 1.0)


def _fit_replays(u: _UsableRounds, at: _AtRounds, mss: int) -> list[dict[str, Any]]:
    """:func:`fit_one` of :func:`round_table` for every replay without building the tables
    (same operations on the same values, so the same numbers): the replays whose rows are found
    at the same rounds (all of a flow's: they share ``ts_ns``) are compared as one matrix, the
    windows at the usable rounds (:class:`_AtRounds`, shared with the verdict)."""
    outs = [_no_fit() for _ in at.idx]
    groups: dict[int, tuple[np.ndarray, list[int]]] = {}
    if u.empty:
        return outs
    for j, idx in enumerate(at.idx):
        if idx is not None:
            groups.setdefault(id(idx), (idx, []))[1].append(j)
    for idx, members in groups.values():
        ok, n, _, pre = u.at(idx)
        for j in members:
            outs[j]["rounds"] = n
        if n == 0:
            continue
        R = at.W if len(members) == len(outs) else at.W[members]
        if not ok.all():
            R = np.ascontiguousarray(R[:, ok])
        group = [outs[j] for j in members]
        fitted = [out for out, done in zip(group, _window_metrics_rows(group, R, mss, pre)) if done]
        if fitted:
            dur, acked = u.sums(ok)
            if dur > 0:
                for out in fitted:
                    out["goodput_actual_bps"] = acked * 8.0 / dur
    return outs


def fit(events: Any, replays: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """schema.FIT_METRICS for every replay of one flow (a :class:`~hscc_trace.model.FlowEvents`),
    ranked (1 = lowest mare; algorithms with no usable round are ranked last).

    Equivalent to :func:`fit_one` of :func:`round_table` per replay; the usable rounds are
    selected once per flow (:class:`_UsableRounds`) rather than once per algorithm, and the
    replays are compared with them together (:func:`_fit_replays`)."""
    if not replays:
        return schema.empty(schema.FIT_METRICS)
    at = _at_rounds(events, replays)
    u = _UsableRounds(events.rounds, events.mss, at.use)
    rows = [{"algo": label, **out} for label, out in zip(replays, _fit_replays(u, at, events.mss))]
    order = sorted(
        range(len(rows)),
        key=lambda i: (
            rows[i]["mare"] is None,
            rows[i]["mare"] if rows[i]["mare"] is not None else 0.0,
            rows[i]["rmse_pkts"] if rows[i]["rmse_pkts"] is not None else 0.0,
            rows[i]["algo"],
        ),
    )
    # built row by row with the table's exact schema (names, order, dtypes): already conforming
    # (from tuples: ≈ 2× cheaper than from columns as lists, ≈ 5× than from a list of dicts)
    row_of = operator.itemgetter(*(c.name for c in schema.FIT_METRICS))  # (a tuple in one call)
    table = []
    for rank, i in enumerate(order, 1):
        r = rows[i]
        r["flow_id"], r["rank"] = events.flow_id, rank
        table.append(row_of(r))
    return pl.DataFrame(table, schema=schema.polars_schema(schema.FIT_METRICS), orient="row")


def round_windows(
    events: Any, replays: dict[str, pl.DataFrame], limits: tuple[str, ...] = ("cwnd",)
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The actual window of every usable round (peak flight, packets) and, per replay, the
    replayed window at the round's last ACK (:data:`FIT_WINDOW` for a rate-based algorithm,
    else cwnd) — the two series :func:`fit` compares, round by round (for the verdict's paired
    comparisons). A usable round is outside recovery, has a positive peak flight and a limit in
    ``limits`` (default: cwnd-limited rounds only, as :func:`fit`; ``("cwnd", "app")`` also takes
    the rounds a paced or application-limited sender left below its window)."""
    actual, W = round_matrix(events, replays, limits)
    return actual, dict(zip(replays, W.copy()))


def _whole_packets(w: np.ndarray) -> np.ndarray:
    """``w`` (float64, packets) in whole packets, in place: a sender fills ⌊cwnd⌋ (86.4 is 86, as
    Linux's integer snd_cwnd), with 1e-9 of slack for a window a float sum left just below an
    integer. Returns ``w``."""
    w += 1e-9
    return np.floor(w, out=w)


def _window_column(rep: pl.DataFrame) -> np.ndarray:
    return rep.get_column(FIT_WINDOW if FIT_WINDOW in rep.columns else "cwnd").to_numpy()


def round_matrix(
    events: Any, replays: dict[str, pl.DataFrame], limits: tuple[str, ...] = ("cwnd",)
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`round_windows` with the replayed windows as the rows of one matrix (C order; one
    row per replay, in the order of ``replays``; shared with :func:`fit`: not to be changed)."""
    at = _at_rounds(events, replays, limits)
    return at.peak / float(events.mss), at.W


_USED = _Memo()


def _frozen(a: np.ndarray) -> np.ndarray:
    """``a`` read-only (a kept value is handed to every caller: none may change it)."""
    a.setflags(write=False)
    return a


def _rounds_used(rd: pl.DataFrame, limits: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, _RowsOf]:
    """(the usable rounds of ``rd`` — a limit in ``limits``, outside recovery, a positive peak
    flight —, their peak flight in bytes, :func:`round_rows` of their end) for :class:`_AtRounds`:
    the same for every replay of a flow (kept: :class:`_Memo`)."""

    def make() -> tuple[np.ndarray, np.ndarray, _RowsOf]:
        sel = limit_is(rd, limits[0])  # (a few hundred rounds: strings, compared once per flow)
        for x in limits[1:]:
            sel = sel | limit_is(rd, x)
        rec = filled(rd.get_column("in_recovery"), True).astype(bool)
        peak = filled(rd.get_column("peak_flight_bytes").cast(pl.Float64), 0.0)
        use = np.flatnonzero(sel & ~rec & (peak > 0))
        return _frozen(use), _frozen(peak[use]), _RowsOf(rd.get_column("end_ns").to_numpy()[use])

    return _USED.get((rd,), limits, make)


def warm(events: Any) -> None:
    """Compute ahead what :func:`fit` and the verdict (:func:`round_matrix`, :func:`ack_matrix`)
    take from a flow's events alone — its usable rounds, the ACKs the verdict judges — and keep
    it for them (:class:`_Memo`): the pipeline calls this while the look-ahead thread runs the
    flow's replay loops (:func:`hscc_trace.replay.engine.replay`'s ``meanwhile``). Changes no
    result: each is what they would compute themselves."""
    if events.rounds.height:
        _rounds_used(events.rounds, ("cwnd",))
    _judged(events)


class _AtRounds:
    """A flow's replayed windows at its usable rounds (a limit in ``limits``, outside recovery,
    a positive peak flight): per replay the row of the ACK before the one closing each round
    (:func:`round_rows`; −1: none) and the window there (:data:`FIT_WINDOW` or cwnd; NaN where
    there is no row), one matrix row per replay. Holds derived arrays only (no replay column)."""

    def __init__(self, rd: pl.DataFrame, replays: dict[str, pl.DataFrame], limits: tuple[str, ...]) -> None:
        m = len(replays)
        self.idx: list[np.ndarray | None] = [None] * m  # None: an empty replay (a row of NaN)
        if rd.height == 0:
            self.use, self.peak, self.W = np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros((m, 0))
            return
        self.use, self.peak, rows = _rounds_used(rd, limits)
        self.W = W = np.empty((m, self.use.size))
        # (per distinct rows — a flow's replays share one: the rows clipped at 0 and the missing)
        missing: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None = None
        for j, rep in enumerate(replays.values()):
            if rep.height == 0:
                W[j] = np.nan
                continue
            cw = _window_column(rep)
            idx = self.idx[j] = rows(rep.get_column("ts_ns").to_numpy())
            if missing is None or missing[0] is not idx:
                miss = idx < 0
                missing = (idx, np.maximum(idx, 0), miss if miss.any() else None)
            if cw.dtype == np.float64:
                np.take(cw, missing[1], out=W[j])
            else:
                W[j] = cw[missing[1]]
            if missing[2] is not None:
                W[j, missing[2]] = np.nan
        _whole_packets(W)


#: a flow's :class:`_AtRounds`, kept (:class:`_Memo`): :func:`fit` and the verdict
#: (:func:`round_matrix`) of a flow compare the same replays with the same rounds, one after the
#: other (the pipeline's analyze_flow), and take them once. Valid while the rounds table and every
#: replay table are the very objects it was made of (polars tables are not changed in place
#: here: a replay is made once and then only read).
_AT = _Memo()


def _at_rounds(events: Any, replays: dict[str, pl.DataFrame], limits: tuple[str, ...] = ("cwnd",)) -> _AtRounds:
    rd = events.rounds
    return _AT.get((rd, *replays.values()), limits, lambda: _AtRounds(rd, replays, limits))


def ack_windows(events: Any, replays: dict[str, pl.DataFrame]) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """The sender's window as each ACK left it, and each replay's, over the ACKs of the
    cwnd-limited rounds outside recovery (the rounds :func:`fit` uses), for the verdict's
    comparisons at ACK resolution.

    Observed: a window-limited sender answers an ACK by filling its window, so the flight just
    before the next ACK arrives — the highest sequence sent by then (that ACK's ``snd_max``)
    minus this ACK's cumulative ACK — is the window this ACK left (packets). Returns
    ``(observed, round of each ACK, {label: replayed window after each ACK})`` (the rate-based
    :data:`FIT_WINDOW` where a replay has it), aligned; ACKs of a recovery or without a next ACK
    are left out."""
    obs, rnd, A = ack_matrix(events, replays)
    return obs, rnd, dict(zip(replays, A))


def ack_matrix(
    events: Any, replays: dict[str, pl.DataFrame], rows: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`ack_windows` with the replayed windows as the rows of one matrix (C order; one row
    per replay, in the order of ``replays``). ``rows``: which rows to fill in (default all; the
    others are left as allocated — a flow's largest table is this one, a row per replay)."""
    n = events.acks.height
    judged = _judged(events)
    if judged is None:
        return np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros((len(replays), 0))
    at, obs_at, rnd_at = judged
    A = np.empty((len(replays), at.size))
    for j, rep in enumerate(replays.values()):
        if rows is not None and not rows[j]:
            continue
        col = _window_column(rep)
        if col.shape[0] == n and col.dtype == np.float64:
            np.take(col, at, out=A[j], mode="clip")  # (in place; every index is in range)
        elif col.shape[0] == n:
            A[j] = col[at]
        else:
            A[j] = np.nan
        _whole_packets(A[j])
    return obs_at, rnd_at, A


_JUDGED = _Memo()


def _judged(events: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(the ACKs :func:`ack_matrix` judges, the flight each left in packets, their rounds), or
    None when there are none to judge (fewer than 2 ACKs, no round): from the events alone, the
    same for every replay (kept: :class:`_Memo`)."""
    acks, rd = events.acks, events.rounds
    n = acks.height
    if n < 2 or rd.height == 0:
        return None

    def make() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        snd_s, ack_s = acks.get_column("snd_max"), acks.get_column("ack")
        rnd = filled(acks.get_column("round").cast(pl.Int64), -1)
        coded = enum_codes(acks, "state")
        if coded is None:
            is_open = equals(acks.get_column("state"), "open")
        else:  # (the codes engine.prepare took: a null state is not open)
            x, labels = coded
            is_open = x == labels.index("open") if "open" in labels else np.zeros(n, dtype=bool)
        rec = filled(rd.get_column("in_recovery"), True).astype(bool)
        good = rd.get_column("round").cast(pl.Int64).to_numpy()[limit_is(rd, "cwnd") & ~rec]
        table = _table(good, n)
        if (
            table is not None
            and snd_s.dtype == pl.Int64 == ack_s.dtype
            and not (snd_s.null_count() or ack_s.null_count())
        ):
            at, obs_at, rnd_at = _judged_acks(
                snd_s.to_numpy(), ack_s.to_numpy(), rnd, is_open, table, float(events.mss)
            )
            return _frozen(at), _frozen(obs_at), _frozen(rnd_at)
        # (int64 → float64 by numpy as by polars' cast: the same rounding; a null is NaN either way)
        snd = snd_s.to_numpy().astype(np.float64, copy=False)
        ack = ack_s.to_numpy().astype(np.float64, copy=False)
        obs = np.full(n, np.nan)
        obs[:-1] = (snd[1:] - ack[:-1]) / float(events.mss)
        with np.errstate(invalid="ignore"):
            use = member(rnd, good) & is_open & np.isfinite(obs) & (obs > 0)
        at = np.flatnonzero(use)
        return _frozen(at), _frozen(obs[at]), _frozen(rnd[at])

    return _JUDGED.get((acks, rd), (float(events.mss),), make)


def _table(values: np.ndarray, n: int) -> np.ndarray | None:
    """A lookup table of the non-negative integers ``values`` (``table[v]``), or None where
    they are not small integers (then the caller takes another way)."""
    if values.dtype.kind not in "iu":
        return None
    if values.size == 0:
        return np.zeros(1, dtype=np.bool_)
    if int(values.min()) < 0 or int(values.max()) > 4 * n + 1024:
        return None
    table = np.zeros(int(values.max()) + 1, dtype=np.bool_)
    table[values] = True
    return table


@njit(work=lambda a: len(a[0]), cost=(2.45, 5.75e-06), cache=True, nogil=True)
def _judged_acks(snd, ack, rnd, is_open, good, mss):  # pragma: no cover - compiled
    """The ACKs :func:`ack_windows` judges, in one pass: those of a round whose ``good`` is
    set (``rnd`` −1: none), in state open, whose next ACK's ``snd`` minus their ``ack`` (the
    flight they left, in packets of ``mss``: the same float operations as the numpy form) is
    finite and positive. Returns (their indices, that flight, their rounds)."""
    n = snd.shape[0]
    at = np.empty(n, dtype=np.int64)
    obs = np.empty(n)
    rr = np.empty(n, dtype=np.int64)
    t = good.shape[0]
    k = 0
    for i in range(n - 1):
        r = rnd[i]
        if r < 0 or r >= t or not good[r] or not is_open[i]:
            continue
        o = (np.float64(snd[i + 1]) - np.float64(ack[i])) / mss
        if np.isfinite(o) and o > 0:
            at[k] = i
            obs[k] = o
            rr[k] = r
            k += 1
    return at[:k].copy(), obs[:k].copy(), rr[:k].copy()


def member(x: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``np.isin(x, values)``; for integers in a small range (round numbers) by a table lookup
    (``np.isin`` sorts: ≈ 10× the cost)."""
    if x.dtype.kind not in "iu" or values.dtype.kind not in "iu":
        return np.isin(x, values)
    if values.size == 0 or x.size == 0:
        return np.zeros(x.shape[0], dtype=bool)
    lo, hi = int(min(x.min(), values.min())), int(max(x.max(), values.max()))
    if lo < -1 or hi > 4 * (x.size + values.size) + 1024:
        return np.isin(x, values)
    table = np.zeros(hi + 2, dtype=bool)  # (table[-1], where x = −1, stays False)
    table[values[values >= 0]] = True
    return table[x]


# --- kernel ground truth (samples/<name>/truth_probe.parquet) --------------------------------------


def truth_alignment(acks: pl.DataFrame, truth: pl.DataFrame, max_shift_s: float = 0.003) -> np.ndarray:
    """For each tcp_probe row, the index of the ACK whose processing its ``snd_cwnd`` reflects
    (−1 when none matches).

    The probe fires before its triggering ACK is processed, so it shows the state after the
    previous ACK, whose cumulative ACK equals the probe's ``snd_una``. Tracepoint and capture
    clocks agree only to within a fraction of a millisecond, so the probe times are shifted by
    the offset (searched in ±``max_shift_s``) that makes the most ``snd_una`` values match;
    probes that still do not match are left out (−1).
    """
    ats = acks.get_column("ts_ns").to_numpy()
    ack = acks.get_column("ack").to_numpy()
    pts = truth.get_column("ts_ns").to_numpy()
    una = truth.get_column("snd_una").to_numpy()
    if ats.size == 0 or pts.size == 0:
        return np.full(pts.shape[0], -1, dtype=np.int64)
    best, best_idx = -1.0, None
    for d in np.arange(-max_shift_s, max_shift_s + 1e-12, 5e-5):
        idx = np.searchsorted(ats, pts - int(d * 1e9), side="right") - 1
        ok = idx >= 0
        rate = float(np.mean(una[ok] == ack[idx[ok]])) if ok.any() else 0.0
        if rate > best:
            best, best_idx = rate, idx
    idx = best_idx if best_idx is not None else np.full(pts.shape[0], -1)
    ok = idx >= 0
    match = np.zeros(pts.shape[0], dtype=bool)
    match[ok] = una[ok] == ack[idx[ok]]
    return np.where(match, idx, -1).astype(np.int64)


def truth_errors(
    acks: pl.DataFrame, replay: pl.DataFrame, truth: pl.DataFrame, ca_state: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Per matched probe: ``ts_ns``, ``kernel_cwnd``, ``replayed_cwnd``, ``rel_err``, and
    ``outside_recovery`` (the kernel's TCP_CA state at that time was not recovery/loss/cwr)."""
    idx = truth_alignment(acks, truth)
    m = idx >= 0
    pts = truth.get_column("ts_ns").to_numpy()[m]
    kern = truth.get_column("snd_cwnd").cast(pl.Float64).to_numpy()[m]
    rep = _whole_packets(replay.get_column("cwnd").to_numpy()[idx[m]])  # (as the kernel's snd_cwnd)
    outside = np.ones(pts.shape[0], dtype=bool)
    if ca_state is not None and ca_state.height:
        cts = ca_state.get_column("ts_ns").to_numpy()
        cst = ca_state.get_column("state").to_numpy()
        ci = np.searchsorted(cts, pts, side="right") - 1
        st = np.where(ci >= 0, cst[np.maximum(ci, 0)], "open")
        outside = ~np.isin(st, ["recovery", "loss", "cwr"])
    return pl.DataFrame(
        {
            "ts_ns": pts,
            "kernel_cwnd": kern,
            "replayed_cwnd": rep,
            "rel_err": np.abs(rep - kern) / np.maximum(kern, 1.0),
            "outside_recovery": outside,
        }
    )
