"""Shape-preserving decimation for report figures.

A trace of a few million ACKs cannot go into an HTML page point by point, and must never be
truncated. These helpers reduce a time series to what a screen can show without changing its
shape: the time axis is cut into ``buckets`` equal columns (about one per pixel column of a
figure), and each column keeps its first, minimum, maximum and last point (the "M4" scheme of
Jugel et al., VLDB 2014). Drawn as a line at that width, the reduced series is pixel-identical
to the full one: every peak, every drop to one packet after an RTO, every RTT spike survives.

All functions take numpy arrays with ``x`` ascending (times in seconds) and return index arrays
or reduced arrays; none of them mutate their input. Units are whatever the caller passes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hscc_trace.perf.jit import njit


@dataclass(frozen=True)
class Reduction:
    """What one decimation did, for the report's "how was this decimated" note."""

    n_in: int  # points before
    n_out: int  # points after
    buckets: int  # time columns used (0 when nothing was decimated)

    @property
    def decimated(self) -> bool:
        return self.n_out < self.n_in


def _bucket_ids(x: np.ndarray, buckets: int) -> np.ndarray:
    """Column index 0..buckets-1 of each (ascending) time in ``x``."""
    x0, x1 = float(x[0]), float(x[-1])
    span = x1 - x0
    if span <= 0:
        return np.zeros(len(x), dtype=np.int64)
    b = ((x - x0) * (buckets / span)).astype(np.int64)
    np.clip(b, 0, buckets - 1, out=b)
    return b


def _segment_starts(b: np.ndarray) -> np.ndarray:
    """Start index of each run of equal values in the non-decreasing array ``b``."""
    return np.concatenate(([0], np.flatnonzero(b[1:] != b[:-1]) + 1))


def _first_match_per_run(mask: np.ndarray, run_of: np.ndarray, n_runs: int) -> np.ndarray:
    """For each run, the first index where ``mask`` holds (every run has at least one)."""
    idx = np.flatnonzero(mask)
    r = run_of[idx]  # non-decreasing: the first index of each run is where r changes (no sort needed)
    first = np.ones(len(r), dtype=bool)
    first[1:] = r[1:] != r[:-1]
    out = np.empty(n_runs, dtype=np.int64)
    out[r[first]] = idx[first]
    return out


@njit(cache=True, inline="always")
def _bucket(xv, x0, scale, buckets):  # pragma: no cover - compiled
    """The time column of a sample at ``xv`` (:func:`_bucket_ids`' arithmetic)."""
    return min(max(np.int64((xv - x0) * scale), 0), buckets - 1)


@njit(cache=True, inline="always")
def _widen(v, j, vmin, imin, vmax, imax):  # pragma: no cover - compiled
    """A column's (lowest, its first index, highest, its first index) with sample ``j`` (value ``v``) seen."""
    if v < vmin:
        vmin = v
        imin = j
    if v > vmax:
        vmax = v
        imax = j
    return vmin, imin, vmax, imax


@njit(cache=True, inline="always")
def _emit(out, k, start, imin, imax, end):  # pragma: no cover - compiled
    """M4's points of one column ``start..end`` (its minimum at ``imin``, maximum at ``imax``):
    first, min and max in index order, last, each once; written at ``out[k]``, returns the new k."""
    lo = min(imin, imax)
    hi = max(imin, imax)
    out[k] = start
    k += 1
    if lo > start:
        out[k] = lo
        k += 1
    if hi > lo:
        out[k] = hi
        k += 1
    if end > hi:
        out[k] = end
        k += 1
    return k


@njit(work=lambda a: len(a[0]), cost=(0.32, 1.45e-06), cache=True, nogil=True)
def _m4_kernel(x: np.ndarray, y: np.ndarray, buckets: int) -> np.ndarray:  # pragma: no cover - compiled
    """One pass: per column (same bucket arithmetic as :func:`_bucket_ids`) the first, the first
    lowest, the first highest and the last index, ascending and without repeats."""
    n = len(x)
    out = np.empty(4 * buckets, dtype=np.int64)
    x0 = x[0]
    span = x[n - 1] - x0
    scale = buckets / span if span > 0 else 0.0
    k = 0
    i = 0
    while i < n:
        b = _bucket(x[i], x0, scale, buckets)
        start = i
        imin = i
        imax = i
        vmin = y[i]
        vmax = y[i]
        j = i + 1
        while j < n and _bucket(x[j], x0, scale, buckets) == b:
            vmin, imin, vmax, imax = _widen(y[j], j, vmin, imin, vmax, imax)
            j += 1
        k = _emit(out, k, start, imin, imax, j - 1)
        i = j
    return out[:k]


def m4_indices(x: np.ndarray, y: np.ndarray, buckets: int) -> np.ndarray:
    """Indices of the first, min, max and last point of every time column (sorted, unique).

    ``x`` must be ascending and ``y`` free of NaN (drop missing samples first). When the series
    already has at most ``4 * buckets`` points every index is returned: nothing is lost. One
    compiled pass (:func:`m4_indices_numpy` is the vectorised twin the tests compare it with).
    """
    n = len(x)
    if n <= 4 * buckets or buckets <= 0:
        return np.arange(n, dtype=np.int64)
    return _m4_kernel(
        np.ascontiguousarray(x, dtype=np.float64), np.ascontiguousarray(y, dtype=np.float64), int(buckets)
    )


def column_runs(x: np.ndarray, buckets: int) -> np.ndarray:
    """Where each time column's run of ``x`` starts (the bucket arithmetic of :func:`_m4_kernel`
    over the whole of ``x``), ``len(x)`` last: what :func:`select_line` needs of a time axis,
    computed once for every series on it that has no NaN."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty(len(x) + 1, dtype=np.int64)
    if len(x) == 0 or buckets <= 0:
        return out[:0]
    return out[: _runs_kernel(x, int(buckets), out)]


@njit(work=lambda a: len(a[0]), cost=(0.35, 2.01e-06), cache=True)
def _runs_kernel(x: np.ndarray, buckets: int, out: np.ndarray) -> int:  # pragma: no cover - compiled
    n = len(x)
    x0 = x[0]
    span = x[n - 1] - x0
    scale = buckets / span if span > 0 else 0.0
    k = 0
    prev = np.int64(-1)
    for i in range(n):
        b = _bucket(x[i], x0, scale, buckets)
        if b != prev:
            out[k] = i
            k += 1
            prev = b
    out[k] = n
    return k + 1


def select_line(
    x: np.ndarray, y: np.ndarray, buckets: int, runs: np.ndarray | None = None
) -> tuple[np.ndarray, Reduction]:
    """:func:`select` of a line (NaN samples left out, :func:`m4_indices` of the rest) followed by
    :func:`flat_interior`, in one compiled pass: the indices into ``(x, y)`` of the points drawn,
    and the reduction (its ``n_out`` counts the points before the flat runs were thinned, as
    :func:`select` does). ``runs``: :func:`column_runs` of ``x`` for ``buckets``, used when ``y``
    has no NaN (the columns are then those of the whole axis)."""
    # (read-only, whoever lent them: one compiled form of _line_kernel, which `hscc-trace compile`
    # finds on its warm-up capture, whatever columns a later run's series come from)
    x = _read_only(np.ascontiguousarray(x, dtype=np.float64))
    y = _read_only(np.ascontiguousarray(y, dtype=np.float64))
    out = np.empty(len(y), dtype=np.int64)  # (at most 4 a column, and never more than the samples)
    given = runs if runs is not None and len(runs) else _NO_RUNS
    # (ints: the interpreted kernel returns numpy integers, the compiled one Python ints)
    n_in, n_sel, k = (int(v) for v in _line_kernel(x, y, int(buckets), given, out))
    return out[:k], Reduction(n_in, n_sel, buckets if n_sel < n_in else 0)


_NO_RUNS = np.empty(0, dtype=np.int64)


@njit(work=lambda a: len(a[1]), cost=(1.61, 2.57e-06), cache=True)
def _line_kernel(
    x: np.ndarray, y: np.ndarray, buckets: int, runs: np.ndarray, out: np.ndarray
) -> tuple[int, int, int]:  # pragma: no cover - compiled
    """(samples not NaN, points selected, points kept) of :func:`select_line`; the kept indices
    into ``out``. (Not ``nogil``: it runs in the report's calling thread, between Python steps,
    for a fraction of a millisecond; releasing the GIL there let the store's thread take it, and
    the caller waited for it back for up to the interpreter's switch interval, 5 ms, every call.)"""
    return _line_into(x, y, buckets, runs, out, 0)


@njit(cache=True)
def _line_into(x, y, buckets, runs, out, o):  # pragma: no cover - compiled
    """:func:`_line_kernel` of ``(x, y)`` writing the kept indices at ``out[o:]``."""
    n = len(y)
    n_in = 0
    for i in range(n):
        n_in += y[i] == y[i]  # (not NaN; without a branch the loop is vectorised)
    if n_in == 0:
        return 0, 0, 0
    first = 0
    while y[first] != y[first]:
        first += 1
    last = n - 1
    while y[last] != y[last]:
        last -= 1
    k = o
    if n_in <= 4 * buckets or buckets <= 0:
        for i in range(first, last + 1):
            if y[i] == y[i]:
                out[k] = i
                k += 1
    elif n_in == n and len(runs) > 0:  # the columns of the whole axis, found once for it
        for r in range(len(runs) - 1):
            start = runs[r]
            end = runs[r + 1] - 1
            imin = start
            imax = start
            vmin = y[start]
            vmax = y[start]
            for j in range(start + 1, end + 1):
                vmin, imin, vmax, imax = _widen(y[j], j, vmin, imin, vmax, imax)
            k = _emit(out, k, start, imin, imax, end)
    else:  # :func:`_m4_kernel` over the samples that are not NaN
        x0 = x[first]
        span = x[last] - x0
        scale = buckets / span if span > 0 else 0.0
        i = first
        while i <= last:
            b = _bucket(x[i], x0, scale, buckets)
            start = i
            end = i
            imin = i
            imax = i
            vmin = y[i]
            vmax = y[i]
            j = i + 1
            while j <= last:
                v = y[j]
                if v != v:
                    j += 1
                    continue
                if _bucket(x[j], x0, scale, buckets) != b:
                    break
                vmin, imin, vmax, imax = _widen(v, j, vmin, imin, vmax, imax)
                end = j
                j += 1
            k = _emit(out, k, start, imin, imax, end)
            i = j
    n_sel = k - o
    if n_sel > 2:  # flat_interior: a point inside a run of equal values goes
        w = o + 1
        before = y[out[o]]
        for m in range(o + 1, k - 1):
            here = y[out[m]]
            if here != before or here != y[out[m + 1]]:
                out[w] = out[m]
                w += 1
            before = here
        out[w] = out[k - 1]
        k = w + 1
    return n_in, n_sel, k - o


LINES_BATCH = 8  # series one call of _lines_kernel decimates (a tuple of this many arrays: one compiled form)


def _read_only(v: np.ndarray) -> np.ndarray:
    """``v`` as a read-only array: every series of a batch of one type (polars lends its columns
    read-only), so :func:`_lines_kernel` has one compiled form."""
    if v.flags.writeable:
        v = v.view()
        v.flags.writeable = False
    return v


_NO_Y = _read_only(np.empty(0, dtype=np.float64))


def select_lines(
    x: np.ndarray, ys: list[np.ndarray], buckets: int, runs: np.ndarray | None = None
) -> list[tuple[np.ndarray, Reduction, float, float]]:
    """:func:`select_line` of several series on one time axis ``x``, :data:`LINES_BATCH` of them a
    compiled call: per series the indices kept, the reduction, and the lowest and highest finite
    value at the points kept (``inf, -inf`` when none is finite: what a figure's y range needs)."""
    x = _read_only(np.ascontiguousarray(x, dtype=np.float64))  # (one compiled form, as select_line)
    given = runs if runs is not None and len(runs) else _NO_RUNS
    res: list[tuple[np.ndarray, Reduction, float, float]] = []
    for at in range(0, len(ys), LINES_BATCH):
        part = [_read_only(np.ascontiguousarray(y, dtype=np.float64)) for y in ys[at : at + LINES_BATCH]]
        k = len(part)
        cols = tuple(part) + (_NO_Y,) * (LINES_BATCH - k)
        out = np.empty(sum(len(y) for y in part), dtype=np.int64)
        counts = np.zeros((LINES_BATCH, 4), dtype=np.int64)  # n_in, n_sel, kept, offset in out
        ext = np.empty((LINES_BATCH, 2), dtype=np.float64)
        _lines_kernel(x, cols, k, int(buckets), given, out, counts, ext)
        for j in range(k):
            n_in, n_sel, kept, o = (int(v) for v in counts[j])
            red = Reduction(n_in, n_sel, buckets if n_sel < n_in else 0)
            res.append((out[o : o + kept], red, float(ext[j, 0]), float(ext[j, 1])))
    return res


@njit(work=lambda a: len(a[0]) * a[2], cost=(1.61, 2.57e-06), cache=True)
def _lines_kernel(
    x: np.ndarray,
    ys: tuple[np.ndarray, ...],
    k: int,
    buckets: int,
    runs: np.ndarray,
    out: np.ndarray,
    counts: np.ndarray,
    ext: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """:func:`_line_into` of the first ``k`` series of ``ys``, one after the other in ``out``
    (``counts[j]``: samples not NaN, points selected, points kept, where they start in ``out``)
    and the lowest and highest finite value at the points kept (``ext[j]``). (Not ``nogil``, as
    :func:`_line_kernel`.)"""
    o = 0
    for j in range(k):
        y = ys[j]
        n_in, n_sel, kept = _line_into(x, y, buckets, runs, out, o)
        lo = np.inf
        hi = -np.inf
        for m in range(o, o + kept):
            v = y[out[m]]
            if np.isfinite(v):
                if v < lo:
                    lo = v
                if v > hi:
                    hi = v
        counts[j, 0] = n_in
        counts[j, 1] = n_sel
        counts[j, 2] = kept
        counts[j, 3] = o
        ext[j, 0] = lo
        ext[j, 1] = hi
        o += kept


def m4_indices_numpy(x: np.ndarray, y: np.ndarray, buckets: int) -> np.ndarray:
    """:func:`m4_indices` in vectorised numpy (the reference for the compiled pass)."""
    n = len(x)
    if n <= 4 * buckets or buckets <= 0:
        return np.arange(n, dtype=np.int64)
    b = _bucket_ids(x, buckets)
    starts = _segment_starts(b)
    ends = np.concatenate((starts[1:], [n])) - 1
    run_of = np.repeat(np.arange(len(starts)), np.diff(np.concatenate((starts, [n]))))
    mins = np.minimum.reduceat(y, starts)
    maxs = np.maximum.reduceat(y, starts)
    i_min = _first_match_per_run(y == mins[run_of], run_of, len(starts))
    i_max = _first_match_per_run(y == maxs[run_of], run_of, len(starts))
    return np.unique(np.concatenate((starts, i_min, i_max, ends)))


def m4(x: np.ndarray, y: np.ndarray, buckets: int) -> tuple[np.ndarray, np.ndarray, Reduction]:
    """Drop NaN samples, then reduce ``(x, y)`` with :func:`m4_indices`."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    ok = ~np.isnan(y)
    if not ok.all():
        x, y = x[ok], y[ok]
    if len(x) == 0:
        return x, y, Reduction(0, 0, 0)
    idx = m4_indices(x, y, buckets)
    red = Reduction(len(x), len(idx), buckets if len(idx) < len(x) else 0)
    return x[idx], y[idx], red


def select(x: np.ndarray, y: np.ndarray, buckets: int, *, markers: bool = False) -> tuple[np.ndarray, Reduction]:
    """Indices into ``(x, y)`` of the points to draw, NaN samples left out: :func:`m4_indices` for a
    line, the lowest and highest of each of ``buckets`` columns for markers (as :func:`m2`).
    Indices rather than values, so that the caller can carry other columns (frame numbers) along."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    # (most series have no NaN: their sum, one pass without a temporary array, says so — a NaN
    # sum may also be +inf and −inf, which the exact test then clears)
    ok: np.ndarray | None = None
    with np.errstate(invalid="ignore"):  # (inf − inf: no warning)
        total = y.sum()
    if np.isnan(total):
        nan = np.isnan(y)
        if nan.any():
            ok = np.flatnonzero(~nan)
    xs, ys = (x, y) if ok is None else (x[ok], y[ok])  # (no NaN: no copies)
    n = len(ys)
    if n == 0:
        return np.arange(0, dtype=np.int64) if ok is None else ok, Reduction(0, 0, 0)
    if markers:
        if n <= 2 * buckets or buckets <= 0:
            return np.arange(n) if ok is None else ok, Reduction(n, n, 0)
        b = _bucket_ids(xs, buckets)
        starts = _segment_starts(b)
        run_of = np.repeat(np.arange(len(starts)), np.diff(np.concatenate((starts, [n]))))
        i_min = _first_match_per_run(ys == np.minimum.reduceat(ys, starts)[run_of], run_of, len(starts))
        i_max = _first_match_per_run(ys == np.maximum.reduceat(ys, starts)[run_of], run_of, len(starts))
        idx = np.unique(np.concatenate((i_min, i_max)))
        return idx if ok is None else ok[idx], Reduction(n, len(idx), buckets)
    idx = m4_indices(xs, ys, buckets)
    return (idx if ok is None else ok[idx]), Reduction(n, len(idx), buckets if len(idx) < n else 0)


def select_shared(x: np.ndarray, ys: list[np.ndarray], buckets: int) -> tuple[np.ndarray, list[Reduction]]:
    """One index set for several series on the same rows (Compound TCP's loss-based window, dwnd
    and their sum): the union of each series' :func:`select`, so that every series is exact at
    every point drawn and a stacked area adds up at each of them."""
    picks = [select(x, y, buckets) for y in ys]
    idx = np.unique(np.concatenate([p[0] for p in picks])) if picks else np.empty(0, dtype=np.int64)
    return idx, [Reduction(r.n_in, len(idx), r.buckets) for _, r in picks]


def flat_interior(ys: list[np.ndarray]) -> np.ndarray:
    """Mask of the points to keep after dropping interior points of runs where *every* series of
    ``ys`` (equal lengths) stays the same (see :func:`drop_flat`)."""
    n = len(ys[0]) if ys else 0
    keep = np.ones(n, dtype=bool)
    if n <= 2:
        return keep
    change = np.zeros(n - 2, dtype=bool)
    for y in ys:
        change |= (y[1:-1] != y[:-2]) | (y[1:-1] != y[2:])
    keep[1:-1] = change
    return keep


def m2(x: np.ndarray, y: np.ndarray, buckets: int) -> tuple[np.ndarray, np.ndarray, Reduction]:
    """Marker series (samples drawn as dots): the lowest and the highest sample of each time column
    (first occurrence), NaN samples dropped; everything when there are at most ``2 * buckets``.
    A line needs a column's first and last point to join its neighbours; dots do not, and every
    dot is an SVG element the browser must style, so half the points keep the same envelope."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    ok = ~np.isnan(y)
    if not ok.all():
        x, y = x[ok], y[ok]
    n = len(x)
    if n <= 2 * buckets or buckets <= 0:
        return x, y, Reduction(n, n, 0)
    b = _bucket_ids(x, buckets)
    starts = _segment_starts(b)
    run_of = np.repeat(np.arange(len(starts)), np.diff(np.concatenate((starts, [n]))))
    i_min = _first_match_per_run(y == np.minimum.reduceat(y, starts)[run_of], run_of, len(starts))
    i_max = _first_match_per_run(y == np.maximum.reduceat(y, starts)[run_of], run_of, len(starts))
    idx = np.unique(np.concatenate((i_min, i_max)))
    return x[idx], y[idx], Reduction(n, len(idx), buckets)


def bars(t: np.ndarray, lo: np.ndarray, hi: np.ndarray, buckets: int) -> tuple[np.ndarray, np.ndarray, Reduction]:
    """Vertical bars ``(t, lo)–(t, hi)`` as one polyline with gaps (tcptrace's segment marks).

    Each bar becomes three points: bottom, top and a NaN break. With more than ``buckets`` bars,
    the bars of each time column are replaced by one bar at the column's mean time from the
    column's lowest ``lo`` to its highest ``hi`` — the exact envelope of what was there.
    Returns ``(xs, ys, reduction)`` ready for a line trace (NaN = gap).
    """
    t = np.asarray(t, dtype=np.float64)
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    n = len(t)
    if n == 0:
        return t, t, Reduction(0, 0, 0)
    if n > buckets > 0:
        b = _bucket_ids(t, buckets)
        starts = _segment_starts(b)
        counts = np.diff(np.concatenate((starts, [n])))
        t = np.add.reduceat(t, starts) / counts
        lo = np.minimum.reduceat(lo, starts)
        hi = np.maximum.reduceat(hi, starts)
        red = Reduction(n, len(starts), buckets)
    else:
        red = Reduction(n, n, 0)
    xs = np.repeat(t, 3)
    ys = np.empty(len(xs))
    ys[0::3], ys[1::3], ys[2::3] = lo, hi, np.nan
    xs[2::3] = np.nan
    return xs, ys, red


def stable_order(x: np.ndarray) -> np.ndarray | None:
    """``np.argsort(x, kind="stable")``, or None when that is every index in order (``x`` already
    non-decreasing, as runs and rounds are: one comparison pass instead of a sort)."""
    if len(x) < 2 or bool((x[1:] >= x[:-1]).all()):
        return None
    return np.argsort(x, kind="stable")


def merge_intervals(start: np.ndarray, end: np.ndarray, min_gap: float) -> tuple[np.ndarray, np.ndarray]:
    """Sort and merge intervals that overlap or lie closer than ``min_gap`` (one pixel column).

    Used for shaded bands (congestion episodes, phases, limits): thousands of tiny intervals
    become at most about one per pixel column and nothing that was shaded is lost.
    """
    start = np.asarray(start, dtype=np.float64)
    end = np.maximum(np.asarray(end, dtype=np.float64), start)
    if len(start) == 0:
        return start, end
    order = stable_order(start)
    s, e = (start, end) if order is None else (start[order], end[order])
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > run_end[:-1] + min_gap
    first = np.flatnonzero(new)  # each merged interval's first member: its end is its members' latest
    return s[first], np.maximum.reduceat(e, first)


def runs(x: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs of equal consecutive ``values``: (start x, end x, value) with a run ending where the
    next one begins (the last run ends at the last sample). ``values`` may be any numpy dtype."""
    n = len(values)
    if n == 0:
        empty = np.empty(0)
        return empty, empty, values[:0]
    change = np.ones(n, dtype=bool)
    change[1:] = values[1:] != values[:-1]
    starts = np.flatnonzero(change)
    s = x[starts]
    e = np.concatenate((x[starts[1:]], [x[-1]]))
    return s, e, values[starts]


def drop_flat(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Remove interior points of runs of equal ``y`` (lossless for a line or step drawing):
    a constant signal of a million samples becomes its two end points."""
    n = len(y)
    if n <= 2:
        return x, y
    keep = np.ones(n, dtype=bool)
    keep[1:-1] = (y[1:-1] != y[:-2]) | (y[1:-1] != y[2:])
    return x[keep], y[keep]


def coverage_levels(
    start: np.ndarray, end: np.ndarray, t0: float, t1: float, columns: int, levels: int = 4
) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """Dense intervals as shading per time column, graded by how much of the column they cover.

    When thousands of intervals fall into a few hundred columns (e.g. receive-window-limited
    rounds of a long flow), drawing each is impossible and merging neighbours would paint a
    column fully that was covered 5 %. Instead each column gets the covered fraction of its
    time, rounded up to ``1/levels`` (so any coverage stays visible), and runs of columns with
    the same grade become one interval. Returns ``[(grade in (0, 1], starts, ends), …]``.
    """
    s, e = merge_intervals(start, end, 0.0)
    if len(s) == 0 or t1 <= t0 or columns <= 0:
        return []
    edges = np.linspace(t0, t1, columns + 1)
    cum = np.concatenate(([0.0], np.cumsum(e - s)))  # covered time before interval k

    def covered_until(x: np.ndarray) -> np.ndarray:
        k = np.searchsorted(s, x, side="right")  # intervals starting at or before x
        inside = np.where(k > 0, np.clip(x - s[np.maximum(k - 1, 0)], 0, None), 0.0)
        last_len = np.where(k > 0, (e - s)[np.maximum(k - 1, 0)], 0.0)
        return cum[np.maximum(k - 1, 0)] * (k > 0) + np.minimum(inside, last_len)

    frac = np.diff(covered_until(edges)) / (edges[1] - edges[0])
    grade = np.ceil(np.clip(frac, 0, 1) * levels - 1e-9) / levels
    out = []
    for g in np.unique(grade[grade > 0]):
        st, en, v = runs(np.arange(columns, dtype=np.float64), (grade == g).astype(np.int8))
        # runs() gives [start col, next run's start col); turn the grade-g runs into times
        starts_col = st[v == 1].astype(np.int64)
        ends_col = np.concatenate((st[1:], [columns])).astype(np.int64)[v == 1]
        out.append((float(g), edges[starts_col], edges[ends_col]))
    return out
