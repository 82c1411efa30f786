"""The event builder's input columns straight from the decoder, grouped by flow while reading.

:func:`hscc_trace.flows.load` hands every decoded batch, with each row's connection from the
flow tracker, to :meth:`Arena.add`: the columns the events read (:func:`.prep.source_columns`'s
layout, the same dtypes and null fill-ins) are appended to their flow's run of rows in an arena
of fixed-size blocks (each flow a chain of blocks), while the batch is still in cache. No table
in capture order is built for them and nothing is sorted afterwards: :meth:`Arena.flow_rows` lists
a few flows' rows at a time (runs of :data:`BLOCK` consecutive rows) for
:func:`hscc_trace.events.tables.build_flow_events`. The other packet columns are kept per batch in capture order with
each row's place in the arena, so the packets table can still be built, on demand
(:meth:`Arena.table`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hscc_trace.capture.decode import F_SYN
from hscc_trace.perf.jit import njit
from hscc_trace.perf.memory import dontneed_all, in_background

from .records import DIR_SHIFT, ECN_SHIFT, FLAGS, SACK_SHIFT, TS_SHIFT, Columns, Connection, Stored


@dataclass
class FlowSource:
    """Flow ``f``'s rows are ``bounds[f]:bounds[f+1]`` of ``src`` (in frame order) through the row
    numbers :meth:`rows` lists (what :func:`hscc_trace.events.tables.build_flow_events` reads
    through); ``first[f]`` is the capture-order row of its first packet (-1 = no packet)."""

    src: tuple[np.ndarray, ...]
    bounds: np.ndarray
    first: np.ndarray
    rows: Callable[[int, int], np.ndarray]  # rows(f0, f1): flows f0 … f1 − 1's rows, in turn
    rows_of: Callable[[np.ndarray], np.ndarray]  # rows_of(flows): those flows' rows, in turn

    @property
    def order(self) -> np.ndarray:
        """Every flow's rows (``order[bounds[f]:bounds[f+1]]``: flow ``f``'s), listed on each use —
        4 bytes a packet, so ``analyze`` lists them a batch of flows at a time (:meth:`rows`)."""
        return self.rows(0, len(self.bounds) - 1)


@dataclass
class SackIndex:
    """The rows that carry SACK blocks, by flow: flow ``f``'s are entries ``bounds[f]:bounds[f+1]``
    (in capture order); ``perm`` places each entry in the sorted SACK rows of
    :attr:`FlowSource.src` (their edges), ``frame``, ``dir``, ``ack`` and ``sack_n`` are the
    packet's (read from the arena at :meth:`Arena.finish`, so still there after a release)."""

    bounds: np.ndarray
    perm: np.ndarray
    frame: np.ndarray
    dir: np.ndarray
    ack: np.ndarray
    sack_n: np.ndarray


@dataclass
class SackRows:
    """The SACK index's entries of some flows (:meth:`Arena.sack_arrays_of`), without a copy:
    flow ``flows[k]``'s are entries ``lo[k]:hi[k]`` of ``frame``, ``dir``, raw ``ack`` and
    ``sack_n`` (the packet's; in capture order), and entry ``i``'s raw block edges are
    ``edges[2b][perm[i]]`` (left) and ``edges[2b + 1][perm[i]]`` (right) of block ``b``
    (meaningful for ``b < sack_n``)."""

    flows: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    frame: np.ndarray
    dir: np.ndarray
    ack: np.ndarray
    sack_n: np.ndarray
    perm: np.ndarray
    edges: tuple[np.ndarray, ...]


def _sack_index(sack_rows: np.ndarray, owner: np.ndarray, block: int, nf: int, a: dict[str, np.ndarray]) -> SackIndex:
    """The :class:`SackIndex` of the arena rows ``sack_rows`` (sorted): a flow's rows in arena order
    are in capture order (its blocks are taken in increasing order, filled in turn)."""
    flow = owner[sack_rows // block]
    perm = np.argsort(flow, kind="stable")
    bounds = np.zeros(nf + 1, np.int64)
    np.cumsum(np.bincount(flow, minlength=nf)[:nf], out=bounds[1:])
    del flow
    g = sack_rows[perm]
    w = a["flags"][g]
    return SackIndex(
        bounds=bounds,
        perm=perm.astype(np.int32) if perm.size < 2**31 else perm,
        frame=a["frame"][g],
        dir=((w >> DIR_SHIFT) & 1).astype(np.uint8),
        ack=a["ack"][g],
        sack_n=((w >> SACK_SHIFT) & 7).astype(np.uint8),
    )


#: rows per arena block: a flow's rows are runs of this many consecutive rows. Every flow's last
#: block is partly empty, and its pages are touched: 64 rows (2.2 KB) keeps that waste small for
#: many short connections (50 000 flows of 50 packets: 141 MB of arena instead of 563 MB with 256)
#: and costs long flows nothing measurable (replica-5M: the same load time and memory)
BLOCK = 64
#: rows of a run: a flow that holds this many rows takes its next blocks a run at a time — this
#: many rows of consecutive blocks, starting at a multiple of it — so that in every column (≥ 2
#: bytes a row, starting at a page) its rows fill whole pages of their own, which
#: :meth:`Arena.release` gives back as soon as the flow's events are built instead of when every
#: flow sharing the page is done (long flows' blocks otherwise interleave with every flow alive
#: at the same time). Shorter flows keep single blocks. The waste: a run's unused blocks, never
#: written (no memory, only room in the reservation)
RUN_ROWS = 2048


@njit(work=lambda a: len(a[1]), cost=(0.2, 7.31e-07), cache=True, nogil=True)
def _place(row0, flow, head, tail, fill, count, first, nxt, owner, ctl, pos, block, run, run_end):
    """Arena row of each row of a batch (capture rows ``row0 ..``) into ``pos``: the next free
    row of its flow's last block; when full, a new block (``owner`` the flow): the next one from
    ``ctl[0]`` (or from the blocks ``ctl[2]:ctl[3]`` skipped by the last run), or, for a flow of
    ``run`` blocks' rows already, the next block of its current run of ``run`` consecutive blocks
    (a new run, from the next multiple of ``run`` at ``ctl[0]``, when it has none left;
    ``run_end``: the block after it). Returns the number of rows placed (fewer when the arena
    ran out of blocks: grow it and call again from there)."""
    nb = nxt.shape[0]
    for i in range(ctl[1], flow.shape[0]):
        f = flow[i]
        if count[f] == 0 or fill[f] == block:
            if count[f] > 0 and tail[f] + 1 < run_end[f]:
                b = tail[f] + 1
            elif count[f] >= run * block:
                b = (ctl[0] + run - 1) // run * run
                if b + run > nb:
                    ctl[1] = i
                    return i
                if b > ctl[0]:  # (ctl[0] moved: the last gap is used up; the next short blocks fill this one)
                    ctl[2] = ctl[0]
                    ctl[3] = b
                ctl[0] = b + run
                run_end[f] = b + run
            elif ctl[2] < ctl[3]:
                b = ctl[2]
                ctl[2] = b + 1
            else:
                if ctl[0] >= nb:
                    ctl[1] = i
                    return i
                b = ctl[0]
                ctl[0] = b + 1
            owner[b] = f
            if count[f] == 0:
                head[f] = b
                first[f] = row0 + i
            else:
                nxt[tail[f]] = b
            tail[f] = b
            fill[f] = 0
        pos[i] = tail[f] * block + fill[f]
        fill[f] += 1
        count[f] += 1
    ctl[1] = flow.shape[0]
    return flow.shape[0]


@njit(work=lambda a: len(a[0]), cost=(0.45, 2.16e-06), cache=True, nogil=True)
def _fill(pos, c, a):
    """Row ``i`` of each column of ``c`` (:class:`.records.Columns`) to row ``pos[i]`` of the arena
    column (``a``, :class:`.records.Stored`): one column at a time (a pass writes one run per flow,
    few pages at once); the side, timestamp presence, ECN and SACK count packed into ``flags``
    (:data:`.records.FLAGS` …); TSval/TSecr 0 without the option (the table's nulls, read as 0)."""
    frame, ts, side, seq, ack, flags, win, plen, ecn, sn, tsv, tse, hasts = c
    o_frame, o_ts, o_seq, o_ack, o_flags, o_win, o_plen, o_tsv, o_tse = a
    n = pos.shape[0]
    for i in range(n):
        o_frame[pos[i]] = frame[i]
    for i in range(n):
        o_ts[pos[i]] = ts[i]
    for i in range(n):
        o_seq[pos[i]] = seq[i]
    for i in range(n):
        o_ack[pos[i]] = ack[i]
    for i in range(n):
        o_flags[pos[i]] = (
            (np.int64(flags[i]) & FLAGS)
            | ((np.int64(side[i]) & 1) << DIR_SHIFT)
            | (np.int64(1 if hasts[i] else 0) << TS_SHIFT)
            | ((np.int64(ecn[i]) & 3) << ECN_SHIFT)
            | ((np.int64(sn[i]) & 7) << SACK_SHIFT)
        )
    for i in range(n):
        o_win[pos[i]] = win[i]
    for i in range(n):
        o_plen[pos[i]] = plen[i]
    for i in range(n):
        o_tsv[pos[i]] = tsv[i] if hasts[i] else 0
    for i in range(n):
        o_tse[pos[i]] = tse[i] if hasts[i] else 0


@njit(work=lambda a: len(a[1]), cost=(0.26, 6.62e-07), cache=True, nogil=True)
def _sparse(
    row0,
    pos,
    flags,
    sn,
    sack,
    mss,
    hasmss,
    ws,
    hasws,
    sperm,
    at,
    sk_g,
    sk_r,
    sk_edge,
    op_g,
    op_r,
    op_mss,
    op_ws,
    op_flag,
):
    """Rows with SACK blocks → (arena row, capture row, 8 edges); SYN rows and rows with an
    option → (arena row, capture row, MSS, window scale, flags: 1 has MSS, 2 has window scale,
    4 SACK-permitted, 8 SYN). Appended at ``at[0]`` and ``at[1]``."""
    ks = at[0]
    ko = at[1]
    for i in range(pos.shape[0]):
        if sn[i] > 0:
            sk_g[ks] = pos[i]
            sk_r[ks] = row0 + i
            for e in range(8):
                sk_edge[ks, e] = sack[e, i]
            ks += 1
        fl = np.uint8(0)
        if hasmss[i]:
            fl |= 1
        if hasws[i]:
            fl |= 2
        if sperm[i]:
            fl |= 4
        if (flags[i] & F_SYN) != 0:
            fl |= 8
        if fl != 0:
            op_g[ko] = pos[i]
            op_r[ko] = row0 + i
            op_mss[ko] = mss[i] if hasmss[i] else 0
            op_ws[ko] = ws[i] if hasws[i] else 0
            op_flag[ko] = fl
            ko += 1
    at[0] = ks
    at[1] = ko


@njit(work=lambda a: int(a[2][a[3]].sum()), cost=(0.14, 3.24e-07), cache=True, nogil=True)
def _chains(head, nxt, count, fl, block, a_side, flags, order, size):
    """The arena rows of the flows ``fl``, in order, one flow after the other, into ``order`` (when
    it is not empty); else (``finish``) the side bit of their ``flags`` turned into the direction
    (xor with the flow's A side), the rows that hold a packet only; and, when ``size`` is not
    empty, the rows each of their blocks holds into it."""
    k = 0
    for f in fl:
        left = count[f]
        b = head[f]
        x = np.uint16((np.int64(a_side[f]) & 1) << DIR_SHIFT)
        while left > 0:
            m = block if left > block else left
            g0 = b * block
            if size.shape[0] > 0:
                size[b] = m
            if order.shape[0] > 0:
                for j in range(m):
                    order[k + j] = g0 + j
            elif x != 0 and flags.shape[0] > 0:
                for j in range(m):
                    flags[g0 + j] ^= x
            k += m
            left -= m
            b = nxt[b]


@njit(work=lambda a: len(a[0]), cost=(2.1, 7.28e-06), cache=True, nogil=True)
def _unplace(pos, owner, block, a_side, addr, ports, a, o, conn):
    """Capture row ``i`` (``o``, :class:`.records.Columns`) from arena row ``pos[i]`` (``a``,
    :class:`.records.Stored`: the packed ``flags`` unpacked); its connection from the arena block's
    owner, addresses and ports from the connection and the row's side (``dir`` xor the A side).
    One column at a time: each pass reads one run per flow (few pages at once)."""
    a_frame, a_ts, a_seq, a_ack, a_flags, a_win, a_plen, a_tsv, a_tse = a
    frame, ts, dir_, seq, ack, flags, win, plen, ecn, sn, tsv, tse, hasts = o
    flow, src_hi, src_lo, dst_hi, dst_lo, sport, dport = conn
    n = pos.shape[0]
    for i in range(n):
        f = owner[pos[i] // block]
        flow[i] = f
    for i in range(n):
        w = np.int64(a_flags[pos[i]])
        flags[i] = w & FLAGS
        dir_[i] = (w >> DIR_SHIFT) & 1
        hasts[i] = ((w >> TS_SHIFT) & 1) != 0
        ecn[i] = (w >> ECN_SHIFT) & 3
        sn[i] = (w >> SACK_SHIFT) & 7
    for i in range(n):
        frame[i] = a_frame[pos[i]]
    for i in range(n):
        ts[i] = a_ts[pos[i]]
    for i in range(n):
        seq[i] = a_seq[pos[i]]
    for i in range(n):
        ack[i] = a_ack[pos[i]]
    for i in range(n):
        win[i] = a_win[pos[i]]
    for i in range(n):
        plen[i] = a_plen[pos[i]]
    for i in range(n):
        tsv[i] = a_tsv[pos[i]]
    for i in range(n):
        tse[i] = a_tse[pos[i]]
    for i in range(n):
        f = flow[i]
        s = dir_[i] ^ a_side[f]
        src_hi[i] = addr[f, 2 * s]
        src_lo[i] = addr[f, 2 * s + 1]
        dst_hi[i] = addr[f, 2 - 2 * s]
        dst_lo[i] = addr[f, 3 - 2 * s]
        sport[i] = ports[f, s]
        dport[i] = ports[f, 1 - s]


def _grown(a: np.ndarray, n: int, keep: int) -> np.ndarray:
    """``a`` with room for ``n`` rows (first axis), its first ``keep`` rows copied."""
    out = np.empty((n, *a.shape[1:]), a.dtype)
    out[:keep] = a[:keep]
    return out


def _column(n: int, dtype: Any, like: np.ndarray | None = None, keep: int = 0) -> np.ndarray:
    """An arena column of ``n`` rows that starts at a memory page (so that a run of blocks whose
    rows fill whole pages owns those pages in every column: :data:`RUN_ROWS`), the first ``keep``
    rows of ``like`` copied."""
    page = _Pages.PAGE
    size = np.dtype(dtype).itemsize
    buf = np.empty(n * size + page, np.uint8)
    at = -int(buf.ctypes.data) % page
    out = buf[at : at + n * size].view(dtype)
    if like is not None and keep:
        out[:keep] = like[:keep]
    return out


# the arena's columns (records.Stored): 34 bytes a packet. ``flags`` packs the direction (the
# tracker's side until finish()), the timestamp option's presence, ECN and the SACK count
# (records.FLAGS …); frame numbers and payload lengths are kept narrow while they fit (_WIDE)
_ARENA = (
    ("frame", np.uint32),
    ("ts_ns", np.int64),
    ("seq", np.uint32),
    ("ack", np.uint32),
    ("flags", np.uint16),
    ("win", np.uint16),
    ("payload_len", np.uint16),
    ("opt_tsval", np.uint32),
    ("opt_tsecr", np.uint32),
)
#: the narrow columns' dtype once a batch holds a value that does not fit (a frame number past
#: 2³² − 1, a TSO/BIG TCP payload past 65 535 bytes): the column is copied into the wider one
_WIDE = {"frame": np.uint64, "payload_len": np.uint32}
# the packet table's columns that come from the arena (records.Columns, in that order), unpacked
_TABLE = (
    ("frame", np.uint64),
    ("ts_ns", np.int64),
    ("dir", np.uint8),
    ("seq", np.uint32),
    ("ack", np.uint32),
    ("flags", np.uint16),
    ("win", np.uint16),
    ("payload_len", np.uint32),
    ("ip_ecn", np.uint8),
    ("sack_n", np.uint8),
    ("opt_tsval", np.uint32),
    ("opt_tsecr", np.uint32),
    ("has_ts", np.bool_),
)


def _stored(d: dict[str, np.ndarray]) -> Stored:
    return Stored(*(d[name] for name, _dt in _ARENA))


# the decoder's columns kept per batch (capture order) for the packets table; the rest is in the
# arena, the SACK/option stores, or follows from the connection (addresses, ports)
KEEP = ("iface", "wire_len", "cap_len", "ip_version", "ip_id", "ip_ttl", "tcp_hlen", "truncated")


@njit(work=lambda a: int(a[0].sum()), cost=(0.49, 6.13e-07), cache=True, nogil=True)
def _page_rows(size, block, isz, off, page, live):
    """``live[1 + p]`` += the rows of whole page ``p`` that hold a packet (``size[b]``: the rows
    block ``b`` holds, from its first row on); ``live[0]`` and ``live[-1]`` count the rows before
    the first and after the last whole page (:class:`_Pages`)."""
    n = live.shape[0] - 2
    for b in range(size.shape[0]):
        for j in range(size[b]):
            p = ((b * block + j) * isz - off) // page + 1
            if p < 0:
                p = 0
            elif p > n + 1:
                p = n + 1
            live[p] += 1


@njit(work=lambda a: len(a[0]), cost=(1.81, 1.17e-06), cache=True, nogil=True)
def _drop_rows(rows, isz, off, page, live, runs):
    """Take ``rows`` off their pages' counts (``live``, :func:`_page_rows`): a whole page whose
    last row goes is marked given back (-1). Returns ``(k, pages)``: the pages to give back as
    ``k`` runs ``runs[i, 0] .. runs[i, 1] - 1`` (1-based, as ``live``), in increasing order, and
    how many pages were emptied now. A run joins two emptied pages across the pages between them
    that hold no row any more (given back before, or never written: nothing reads them), so that
    one call gives back what many small ones would."""
    n = live.shape[0] - 2
    done = np.empty(rows.shape[0], np.int64)
    m = 0
    for i in range(rows.shape[0]):
        p = (np.int64(rows[i]) * isz - off) // page + 1
        if p < 0:
            p = 0
        elif p > n + 1:
            p = n + 1
        live[p] -= 1
        if live[p] == 0 and 1 <= p <= n:
            live[p] = -1
            done[m] = p
            m += 1
    if m == 0:
        return 0, 0
    d = np.sort(done[:m])
    k = 0
    runs[0, 0] = d[0]
    end = d[0] + 1
    for i in range(1, m):
        q = d[i]
        joined = True
        for g in range(end, q):
            if live[g] > 0:
                joined = False
                break
        if not joined:
            runs[k, 1] = end
            k += 1
            runs[k, 0] = q
        end = q + 1
    runs[k, 1] = end
    return k + 1, m


class _Pages:
    """Rows still to be read per memory page, for :meth:`Arena.release`, of the arena columns of
    one item size that start at the same offset in a page (so share their page layout): a page
    whose rows are all released is given back to the system in each of them. Only pages wholly
    inside a column count (its first and last page may hold other memory). ``size[b]``: the rows
    arena block ``b`` holds (blocks of ``block`` rows, from its first row on)."""

    PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

    def __init__(self, cols: list[np.ndarray], size: np.ndarray, block: int) -> None:
        a = cols[0]
        addr = int(a.ctypes.data)
        first = -(-addr // self.PAGE) * self.PAGE  # the first whole page
        self.off = first - addr
        self.n = max((addr + a.nbytes) // self.PAGE * self.PAGE - first, 0) // self.PAGE
        self.size = a.itemsize
        self.firsts = [int(c.ctypes.data) + self.off for c in cols]
        self.live = np.zeros(self.n + 2, np.int64)
        _page_rows(np.asarray(size, np.int64), np.int64(block), *self._layout(), self.live)

    def _layout(self) -> tuple[np.int64, np.int64, np.int64]:
        return np.int64(self.size), np.int64(self.off), np.int64(self.PAGE)

    def take(self, rows: np.ndarray) -> tuple[list[tuple[int, int]], int]:
        """Take ``rows`` off their pages: the ``(address, length)`` ranges to give back now (in
        every column) and their bytes."""
        runs = np.empty((max(rows.size, 1), 2), np.int64)
        k, pages = _drop_rows(rows, *self._layout(), self.live, runs)
        ranges = [
            (first + (s - 1) * self.PAGE, (e - s) * self.PAGE) for s, e in runs[:k].tolist() for first in self.firsts
        ]
        return ranges, int(pages) * self.PAGE * len(self.firsts)


class Arena:
    """Decoded TCP rows grouped by flow as they are read (module docstring).

    ``rows_hint``: an upper bound on the rows expected (e.g. from the file size) — the arena
    is reserved for that many rows up front (pages are only used when written) and doubles
    when it runs out. ``keep``: also keep the columns :meth:`table` needs (else it cannot be
    called).
    """

    def __init__(self, rows_hint: int = 1 << 20, keep: bool = True) -> None:
        self.keep = keep  # keep the other columns for table()
        self.block = BLOCK
        self.run = RUN_ROWS // math.gcd(RUN_ROWS, self.block)  # blocks of a run (RUN_ROWS)
        # every flow wastes part of its last block: room for twice the rows hinted plus 4096
        # flows (reserved only: pages that are never written are never made resident)
        nb = 2 * (rows_hint // self.block) + 4096
        self.cols = {name: _column(nb * self.block, dt) for name, dt in _ARENA}
        self.nxt = np.full(nb, -1, np.int64)
        self.owner = np.empty(nb, np.int64)  # flow of each block
        # [blocks used, rows of the current batch placed, the blocks skipped by the last run: from, to]
        self.ctl = np.zeros(4, np.int64)
        nf = 256
        self.head, self.tail, self.fill, self.count = (np.zeros(nf, np.int64) for _ in range(4))
        self.first = np.full(nf, -1, np.int64)
        self.run_end = np.zeros(nf, np.int64)  # the block after each flow's current run
        self.at = np.zeros(2, np.int64)  # SACK rows, option rows stored
        self._sparse_alloc(4096, 4096)
        self.parts: list[tuple[dict[str, np.ndarray], np.ndarray]] = []  # KEEP columns, arena row
        self.rows = 0
        self.ts_range = [np.iinfo(np.int64).max, np.iinfo(np.int64).min]
        self.n_flows = 0
        self.src: FlowSource | None = None
        self.sack: SackIndex | None = None  # (finish())
        self.released = False  # (release(): the rows read are gone)
        self._pages: list[_Pages] | None = None

    def _sparse_alloc(self, ns: int, no: int) -> None:
        ks, ko = int(self.at[0]), int(self.at[1])
        old = getattr(self, "sk_g", None)
        e = np.empty
        if old is None or ns > len(self.sk_g):
            self.sk_g = e(ns, np.int64) if old is None else _grown(self.sk_g, ns, ks)
            self.sk_r = e(ns, np.int64) if old is None else _grown(self.sk_r, ns, ks)
            self.sk_edge = e((ns, 8), np.uint32) if old is None else _grown(self.sk_edge, ns, ks)
        if old is None or no > len(self.op_g):
            self.op_g = e(no, np.int64) if old is None else _grown(self.op_g, no, ko)
            self.op_r = e(no, np.int64) if old is None else _grown(self.op_r, no, ko)
            self.op_mss = e(no, np.uint16) if old is None else _grown(self.op_mss, no, ko)
            self.op_ws = e(no, np.uint8) if old is None else _grown(self.op_ws, no, ko)
            self.op_flag = e(no, np.uint8) if old is None else _grown(self.op_flag, no, ko)

    def add(
        self, c: dict[str, np.ndarray], flow: np.ndarray, side: np.ndarray, n_flows: int, copy: bool = False
    ) -> None:
        """One batch of :func:`hscc_trace.capture.decode.decode_arrays` columns (capture order) with
        each row's connection (``flow``, ``side``) from the flow tracker, which now knows
        ``n_flows`` connections. Keeps the ``KEEP`` columns of ``c`` (copies with ``copy``: for
        columns in a reused :class:`~hscc_trace.capture.decode.Scratch`)."""
        n = len(flow)
        if n_flows > len(self.count):
            old, m = len(self.count), max(n_flows, 2 * len(self.count))
            for name in ("head", "tail", "fill", "count", "run_end"):
                v, was = np.zeros(m, np.int64), getattr(self, name)
                v[: min(len(was), m)] = was[:m]
                setattr(self, name, v)
            first = np.full(m, -1, np.int64)
            first[:old] = self.first
            self.first = first
        self.n_flows = max(self.n_flows, n_flows)
        pos = np.empty(n, np.int64)
        self.ctl[1] = 0
        while (
            _place(
                self.rows,
                flow,
                self.head,
                self.tail,
                self.fill,
                self.count,
                self.first,
                self.nxt,
                self.owner,
                self.ctl,
                pos,
                self.block,
                self.run,
                self.run_end,
            )
            < n
        ):
            self._grow_blocks()
        self._widen(c)
        a = self.cols
        _fill(
            pos,
            Columns(
                c["frame"],
                c["ts_ns"],
                side,
                c["seq"],
                c["ack"],
                c["flags"],
                c["win"],
                c["payload_len"],
                c["ip_ecn"],
                c["sack_n"],
                c["opt_tsval"],
                c["opt_tsecr"],
                c["has_ts"],
            ),
            _stored(a),
        )
        ks, ko = int(self.at[0]), int(self.at[1])
        if ks + n > len(self.sk_g) or ko + n > len(self.op_g):
            self._sparse_alloc(
                max(len(self.sk_g), 2 * len(self.sk_g) if ks + n > len(self.sk_g) else 0, ks + n),
                max(len(self.op_g), 2 * len(self.op_g) if ko + n > len(self.op_g) else 0, ko + n),
            )
        _sparse(
            self.rows,
            pos,
            c["flags"],
            c["sack_n"],
            c["sack"],
            c["opt_mss"],
            c["has_mss"],
            c["opt_wscale"],
            c["has_ws"],
            c["opt_sack_perm"],
            self.at,
            self.sk_g,
            self.sk_r,
            self.sk_edge,
            self.op_g,
            self.op_r,
            self.op_mss,
            self.op_ws,
            self.op_flag,
        )
        small = len(self.nxt) * self.block <= np.iinfo(np.int32).max
        if self.keep:
            kept = {k: c[k].copy() if copy else c[k] for k in KEEP}
            self.parts.append((kept, pos.astype(np.int32) if small else pos))
        ts = c["ts_ns"]
        self.ts_range = [min(self.ts_range[0], int(ts.min())), max(self.ts_range[1], int(ts.max()))]
        self.rows += n

    def _widen(self, c: dict[str, np.ndarray]) -> None:
        """Copy a narrow column (:data:`_WIDE`) into its wide dtype when this batch's values do not
        fit (the rows written so far: the blocks used)."""
        for name, wide in _WIDE.items():
            col, v = self.cols[name], c[name]
            if col.dtype != wide and v.size and int(v.max()) > np.iinfo(col.dtype).max:
                self.cols[name] = _column(len(col), wide, col, int(self.ctl[0]) * self.block)

    def _grow_blocks(self) -> None:
        nb = len(self.nxt)
        used = int(self.ctl[0]) * self.block
        m = 2 * nb
        self.cols = {k: _column(m * self.block, v.dtype, v, used) for k, v in self.cols.items()}
        nxt = np.full(m, -1, np.int64)
        nxt[:nb] = self.nxt
        self.nxt = nxt
        self.owner = _grown(self.owner, m, nb)

    def finish(self, a_side: np.ndarray) -> FlowSource:
        """The events' input (:class:`FlowSource`) once every batch was added; ``a_side`` per
        connection: the tracker's side that is endpoint A."""
        nf = self.n_flows
        self.a_side = a_side.astype(np.uint8)
        count = self.count[:nf]
        bounds = np.zeros(nf + 1, np.int64)
        np.cumsum(count, out=bounds[1:])
        a = self.cols
        self._chains(np.arange(nf), dirs=a["flags"])  # (its side bit: the direction from here on)
        ks, ko = int(self.at[0]), int(self.at[1])
        k = np.argsort(self.sk_g[:ks], kind="stable")
        sack_rows = self.sk_g[:ks][k].astype(self._row_dtype())
        e = self.sk_edge[:ks][k]
        edges = [np.ascontiguousarray(e[:, j]) for j in range(8)]
        del e
        syn = np.flatnonzero(self.op_flag[:ko] & 8)
        syn = syn[np.argsort(self.op_g[syn], kind="stable")]
        fl = self.op_flag[syn]
        syn_rows = self.op_g[syn]
        syn_mss = self.op_mss[syn]
        syn_ws = np.where(fl & 2, self.op_ws[syn].astype(np.int16), np.int16(-1)).astype(np.int16)
        syn_sperm = (fl & 4) != 0
        del fl, syn
        self.sack = _sack_index(sack_rows, self.owner, self.block, nf, a)
        if not self.keep:  # (table() cannot be called: nothing reads the stores any more)
            self._drop_stores()
        none = np.empty(0, np.uint8)  # (dir, ECN, SACK count, TS presence: packed in flags)
        src = (
            a["frame"],
            a["ts_ns"],
            none,
            a["seq"],
            a["ack"],
            a["flags"],
            a["win"],
            a["payload_len"],
            none,
            none,
            sack_rows,
            *edges,
            a["opt_tsval"],
            a["opt_tsecr"],
            none.view(np.bool_),
            syn_rows,
            syn_mss,
            syn_ws,
            syn_sperm,
            True,
        )
        self.src = FlowSource(
            src=src, bounds=bounds, first=self.first[:nf].copy(), rows=self.flow_rows, rows_of=self.rows_of
        )
        return self.src

    def _row_dtype(self) -> type:
        """Arena row numbers as int32 while they fit."""
        return np.int32 if len(self.nxt) * self.block <= np.iinfo(np.int32).max else np.int64

    def _chains(self, fl: np.ndarray, dirs: np.ndarray | None = None, size: np.ndarray | None = None) -> np.ndarray:
        nf = self.n_flows
        n = 0 if dirs is not None or size is not None else int(self.count[:nf][fl].sum())
        order = np.empty(n, self._row_dtype())
        _chains(
            self.head[:nf],
            self.nxt,
            self.count[:nf],
            fl.astype(np.int64, copy=False),
            self.block,
            self.a_side,
            np.empty(0, np.uint16) if dirs is None else dirs,
            order,
            np.empty(0, np.int64) if size is None else size,
        )
        return order

    def flow_rows(self, f0: int, f1: int) -> np.ndarray:
        """The arena rows of flows ``f0 … f1 − 1`` (:attr:`FlowSource.src`'s rows), one flow after
        the other, each in frame order (:class:`FlowSource`; after :meth:`finish`)."""
        return self._chains(np.arange(int(f0), int(f1)))

    def rows_of(self, flows: np.ndarray) -> np.ndarray:
        """:meth:`flow_rows` of the flows ``flows``, in that order."""
        return self._chains(np.asarray(flows, np.int64))

    def _block_rows(self) -> np.ndarray:
        """The rows each arena block holds (none: a run's unused blocks), from its first row on."""
        size = np.zeros(int(self.ctl[0]), np.int64)
        self._chains(np.arange(self.n_flows), size=size)
        return size

    def release(self, rows: np.ndarray) -> int:
        """Give back to the system the memory of these arena rows (from :meth:`flow_rows`,
        after :meth:`finish`): their flows' events are built and nothing reads them again
        (:func:`hscc_trace.events.flow_event_batches` with ``release``: ``analyze`` frees the
        arena as it goes). A page goes when every row in it is released; its contents read as
        zeros afterwards, so the arena can build no events and no packet table any more
        (:attr:`released`). The first call also drops the SACK and option stores, which only
        :meth:`table` reads (the events read :attr:`src`'s sorted copies; an arena that keeps
        no packet table dropped them in :meth:`finish` already): ≈ 6 bytes a packet on replica-5M.
        The pages are counted here (compiled: :func:`_drop_rows`) and given back by the memory
        thread (:func:`hscc_trace.perf.memory.in_background`: the calls' system time overlaps the
        caller's work). Returns the bytes to give back (the system may not; the stores not
        counted)."""
        if self.src is None:
            raise ValueError("Arena.release before finish()")
        if self._pages is None:
            groups: dict[tuple[int, int, int], list[np.ndarray]] = {}
            for a in self.cols.values():  # (columns sharing a page layout share the counting)
                groups.setdefault((a.itemsize, int(a.ctypes.data) % _Pages.PAGE, a.nbytes), []).append(a)
            size = self._block_rows()
            self._pages = [_Pages(cols, size, self.block) for cols in groups.values()]
        if not self.released:
            self._drop_stores()
        self.released = True
        ranges: list[tuple[int, int]] = []
        n = 0
        for p in self._pages:
            r, b = p.take(rows)
            ranges += r
            n += b
        if ranges:  # (the columns go along: their pages cannot be freed before, nor reused)
            in_background(dontneed_all, ranges, keep=list(self.cols.values()))
        return n

    def _drop_stores(self) -> None:
        """Empty the SACK and option stores (``sk_*``, ``op_*``; their counters ``at`` stay):
        after :meth:`release` nothing reads them."""
        for name in ("sk_g", "sk_r", "sk_edge", "op_g", "op_r", "op_mss", "op_ws", "op_flag"):
            a = getattr(self, name, None)
            if a is not None:
                setattr(self, name, a[:0].copy())

    def sack_table(self) -> Any:
        """The rows that carry SACK blocks, in capture order, with the schema.PACKETS columns
        ``frame, flow_id, dir, ack, sack_n, sack_l0 … sack_r3`` (values and nulls as in
        :meth:`table`), from the arena's SACK index (:class:`SackIndex`, made by :meth:`finish`)
        without building or reading the packet table. Call after :meth:`finish`."""
        if self.released:
            raise ValueError("the packet arena was released (events built): read the capture again")
        s = self._sack_index()
        at = np.argsort(s.frame, kind="stable")  # (by flow → capture order: frames grow with it)
        return self._sack_frame(at)

    def sack_rows_of(self, flow_ids: Any) -> Any:
        """:meth:`sack_table`'s rows of the flows ``flow_ids`` (increasing ids), by flow and in capture
        order within a flow: what the report's SACK blocks of a batch of flows read. Still
        answers after :meth:`release` (the SACK index is not released: ≈ 14 bytes a SACK row)."""
        s = self._sack_index()
        f = np.asarray(flow_ids, np.int64)
        f = f[(f >= 0) & (f < len(s.bounds) - 1)]
        lo, hi = s.bounds[f], s.bounds[f + 1]
        n = hi - lo
        at = np.repeat(hi - np.cumsum(n), n) + np.arange(int(n.sum()))  # (the runs lo..hi, concatenated)
        return self._sack_frame(at)

    def sack_arrays_of(self, flow_ids: Any) -> SackRows:
        """:meth:`sack_rows_of` as the SACK index's arrays (:class:`SackRows`: no table, no
        copy), for the compiled SACK blocks of a batch of flows
        (:func:`hscc_trace.events.sack.with_sack_blocks`)."""
        s = self._sack_index()
        f = np.asarray(flow_ids, np.int64)
        f = f[(f >= 0) & (f < len(s.bounds) - 1)]
        edges = tuple(self.src.src[11:19]) if self.src is not None else ()  # (Source: l0, r0 … l3, r3)
        return SackRows(
            flows=f,
            lo=s.bounds[f],
            hi=s.bounds[f + 1],
            frame=s.frame,
            dir=s.dir,
            ack=s.ack,
            sack_n=s.sack_n,
            perm=s.perm,
            edges=edges,
        )

    def _sack_index(self) -> SackIndex:
        if self.src is None or self.sack is None:
            raise ValueError("Arena: SACK rows before finish()")
        return self.sack

    def _sack_frame(self, at: np.ndarray) -> Any:
        """schema.PACKETS' SACK columns of the SACK index's entries ``at``."""
        import polars as pl

        from hscc_trace import schema
        from hscc_trace.capture.decode import sack_edges_as_null

        s = self._sack_index()
        flow = np.repeat(np.arange(len(s.bounds) - 1, dtype=np.uint32), np.diff(s.bounds))
        cols: dict[str, np.ndarray] = {
            "frame": s.frame[at],
            "flow_id": flow[at],
            "dir": s.dir[at],
            "ack": s.ack[at],
            "sack_n": s.sack_n[at],
        }
        rows = s.perm[at]
        edges = self.src.src[11:19] if self.src is not None else ()  # (Source: l0, r0 … l3, r3)
        for b in range(4):
            cols[f"sack_l{b}"] = edges[2 * b][rows]
            cols[f"sack_r{b}"] = edges[2 * b + 1][rows]
        order = [c.name for c in schema.PACKETS if c.name in cols]  # (the packet table's order)
        dtype = {c.name: c.dtype for c in schema.PACKETS}
        return pl.DataFrame(cols).with_columns(sack_edges_as_null()).select(order).cast({k: dtype[k] for k in cols})

    def table(self, addr: np.ndarray, ports: np.ndarray) -> Any:
        """schema.PACKETS of every row (capture order), the values and nulls the decoder's own
        table would have (:func:`hscc_trace.capture.decode.to_frame`); ``addr`` per connection:
        the tracker's (hi, lo) of side 0 and of side 1, ``ports`` its ports of side 0 and 1."""
        import polars as pl

        from hscc_trace import schema
        from hscc_trace.capture.decode import absent_as_null

        if not self.keep:
            raise ValueError("Arena(keep=False) kept no columns for the packet table")
        if self.released:
            raise ValueError("the packet arena was released (events built): read the capture again")
        n = self.rows
        pos = np.concatenate([p[1] for p in self.parts]) if self.parts else np.empty(0, np.int64)
        cols: dict[str, Any] = {k: np.concatenate([p[0][k] for p in self.parts]) for k in KEEP}
        e = np.empty
        out = {name: e(n, dt) for name, dt in _TABLE}
        out.update(
            flow_id=e(n, np.uint32),
            src_hi=e(n, np.uint64),
            src_lo=e(n, np.uint64),
            dst_hi=e(n, np.uint64),
            dst_lo=e(n, np.uint64),
            sport=e(n, np.uint16),
            dport=e(n, np.uint16),
        )
        a = self.cols
        _unplace(
            pos,
            self.owner,
            self.block,
            self.a_side,
            addr,
            ports.astype(np.uint16),
            _stored(a),
            Columns(*(out[name] for name, _dt in _TABLE)),
            Connection(*(out[k] for k in ("flow_id", "src_hi", "src_lo", "dst_hi", "dst_lo", "sport", "dport"))),
        )
        has_ts = out.pop("has_ts")
        cols.update(out)
        ks, ko = int(self.at[0]), int(self.at[1])
        r = self.op_r[:ko]
        f = self.op_flag[:ko]
        mss = np.zeros(n, np.uint16)
        mss[r] = self.op_mss[:ko]
        has_mss = np.zeros(n, np.bool_)
        has_mss[r] = (f & 1) != 0
        ws = np.zeros(n, np.uint8)
        ws[r] = self.op_ws[:ko]
        has_ws = np.zeros(n, np.bool_)
        has_ws[r] = (f & 2) != 0
        sperm = np.zeros(n, np.bool_)
        sperm[r] = (f & 4) != 0
        cols.update(opt_mss=mss, opt_wscale=ws, opt_sack_perm=sperm)
        r = self.sk_r[:ks]
        for b in range(4):
            for j, e in ((2 * b, "l"), (2 * b + 1, "r")):
                v = np.zeros(n, np.uint32)
                v[r] = self.sk_edge[:ks, j]
                cols[f"sack_{e}{b}"] = v
        df = pl.DataFrame(cols)
        df = df.with_columns(absent_as_null(has_mss, has_ws, has_ts))
        return schema.conform(df, schema.PACKETS)
