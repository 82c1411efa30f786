"""Sorted, disjoint byte ranges ``[L[i], R[i])`` kept in preallocated int64 arrays (numba).

These are the building blocks of the SACK scoreboard (RFC 6675 §3), the retransmitted-bytes
map and the map of sequence-space holes the capture never saw. The caller keeps room for
what a call can add (one range per insertion, one more per split) and grows the arrays between
calls, outside the hot loop (:func:`hscc_trace.events.core.analyze`) — an array replaced inside
it costs reference-count traffic on every iteration. Functions return the new length:
``m, added = insert(L, R, m, l, r)``.

Units: sequence numbers in bytes (relative, unwrapped to 64 bits).
"""

from __future__ import annotations

from hscc_trace.perf.jit import njit


@njit(cache=True, inline="always")
def _bsearch(a, lo, hi, v, right):
    """First index in [lo, hi) with a[i] >= v (right: > v); a sorted ascending."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < v or (right and a[mid] == v):
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, inline="always")
def _gsearch(a, lo, hi, v, right, from_end):
    """Like :func:`_bsearch`, galloping from one end first (the answer is usually near it)."""
    if hi - lo <= 8:
        return _bsearch(a, lo, hi, v, right)
    if from_end:
        step = 1
        j = hi - 1
        while j >= lo and (a[j] > v or ((not right) and a[j] == v)):
            hi = j
            j = hi - step
            step *= 2
        if j < lo:
            j = lo
        return _bsearch(a, j, hi, v, right)
    step = 1
    j = lo
    while j < hi and (a[j] < v or (right and a[j] == v)):
        lo = j + 1
        j = lo + step
        step *= 2
    if j > hi:
        j = hi
    return _bsearch(a, lo, j, v, right)


@njit(cache=True)
def insert(L, R, m, l, r):
    """Add ``[l, r)``; overlapping or touching ranges merge. Returns ``(m, added_bytes)``."""
    if r <= l:
        return m, 0
    # first range whose right edge reaches l (touching merges too)
    i = _gsearch(R, 0, m, l, False, True)  # (from the top: where new SACK blocks usually land)
    j = i
    covered = 0
    nl = l
    nr = r
    while j < m and L[j] <= r:
        ol = L[j] if L[j] > l else l
        orr = R[j] if R[j] < r else r
        if orr > ol:
            covered += orr - ol
        if L[j] < nl:
            nl = L[j]
        if R[j] > nr:
            nr = R[j]
        j += 1
    added = (r - l) - covered
    k = j - i
    if k == 0:
        q = m
        while q > i:
            L[q] = L[q - 1]
            R[q] = R[q - 1]
            q -= 1
        L[i] = l
        R[i] = r
        m += 1
    else:
        L[i] = nl
        R[i] = nr
        if k > 1:
            d = k - 1
            for q in range(i + 1, m - d):
                L[q] = L[q + d]
                R[q] = R[q + d]
            m -= d
    return m, added


@njit(cache=True)
def remove(L, R, m, l, r):
    """Remove ``[l, r)`` from the set (splitting a range if needed). Returns ``(m, removed)``."""
    if r <= l or m == 0:
        return m, 0
    removed = 0
    i = _gsearch(R, 0, m, l, True, True)
    while i < m and L[i] < r:
        a = L[i]
        b = R[i]
        ol = a if a > l else l
        orr = b if b < r else r
        if orr <= ol:
            i += 1
            continue
        removed += orr - ol
        if a < ol and b > orr:  # split in two
            q = m
            while q > i + 1:
                L[q] = L[q - 1]
                R[q] = R[q - 1]
                q -= 1
            R[i] = ol
            L[i + 1] = orr
            R[i + 1] = b
            m += 1
            return m, removed
        if a < ol:
            R[i] = ol
            i += 1
        elif b > orr:
            L[i] = orr
            i += 1
        else:  # whole range goes
            for q in range(i, m - 1):
                L[q] = L[q + 1]
                R[q] = R[q + 1]
            m -= 1
    return m, removed


@njit(cache=True)
def prune_below(L, R, m, una):
    """Drop everything below ``una``. Returns ``(m, removed_bytes)``."""
    if m == 0 or L[0] >= una:
        return m, 0
    removed = 0
    k = 0
    while k < m and R[k] <= una:
        removed += R[k] - L[k]
        k += 1
    if k > 0:
        for q in range(0, m - k):
            L[q] = L[q + k]
            R[q] = R[q + k]
        m -= k
    if m > 0 and L[0] < una:
        removed += una - L[0]
        L[0] = una
    return m, removed


@njit(cache=True)
def overlap(L, R, m, l, r):
    """Bytes of ``[l, r)`` covered by the set."""
    if r <= l or m == 0:
        return 0
    tot = 0
    i = _gsearch(R, 0, m, l, True, True)
    while i < m and L[i] < r:
        ol = L[i] if L[i] > l else l
        orr = R[i] if R[i] < r else r
        if orr > ol:
            tot += orr - ol
        i += 1
    return tot


@njit(cache=True)
def gain(L, R, m, l, r, L2, R2, m2):
    """Bytes of ``[l, r)`` outside the first set that the second covers: how much inserting
    ``[l, r)`` into the first set adds to the bytes both sets cover."""
    if r <= l or m2 == 0:
        return 0
    tot = overlap(L2, R2, m2, l, r)
    if m == 0 or tot == 0:
        return tot
    i = _gsearch(R, 0, m, l, True, True)
    while i < m and L[i] < r:
        ol = L[i] if L[i] > l else l
        orr = R[i] if R[i] < r else r
        if orr > ol:
            tot -= overlap(L2, R2, m2, ol, orr)
        i += 1
    return tot


@njit(cache=True)
def overlap_sets_below(L1, R1, m1, L2, R2, m2, lim):
    """Bytes below ``lim`` covered by both sets (merge walk, O(m1 + m2), over the ranges that start
    below ``lim``: what pruning both sets below ``lim`` takes from their overlap)."""
    i = 0
    j = 0
    tot = 0
    while i < m1 and j < m2 and L1[i] < lim and L2[j] < lim:
        lo = L1[i] if L1[i] > L2[j] else L2[j]
        hi = R1[i] if R1[i] < R2[j] else R2[j]
        if hi > lim:
            hi = lim
        if hi > lo:
            tot += hi - lo
        if R1[i] < R2[j]:
            i += 1
        else:
            j += 1
    return tot
