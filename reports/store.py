"""The full-resolution event store of one flow: every event the figures draw, compactly, in the page.

The report's first view of a flow is decimated (:mod:`.decimate`), so that it stays light; this
store holds the same series at full resolution, so that zooming in re-draws from every event
(``report.js``: any window of up to a few thousand events shows each of them). It is one binary
blob per flow, gzip-compressed and base64-encoded in the page, unpacked by the browser only when
the user first zooms into that flow.

Layout (little-endian)::

    "HST1" | header length (uint32) | header (JSON, UTF-8) | padding to 8 | columns, each padded to 8

The header names **tables** (rows of one kind: ``a`` the ACKs, ``s`` the data segments, ``k`` the
SACK blocks, ``r`` the rounds, ``b<i>`` the time ranges of a shaded band …), each with a row count,
a time column (seconds since the flow's first packet), optionally a frame-number column and named
value columns. Every column is a reference to one entry of ``cols``::

    {"o": byte offset, "w": 0 (varints, "l" bytes) or 8 (float64), "d": decimals, "z": delta-coded,
     "m": byte offset of the null bitmap or -1}

A value ``v`` is stored as the integer ``round(v · 10^d)`` (``d`` may be negative), delta-coded
along the rows when ``z`` (so slowly varying series are runs of small numbers that gzip to almost
nothing), as zigzag varints (:func:`varint`: a small step is one byte); a column whose steps do
not fit 32 bits is stored as raw float64 instead. Nulls (NaN) are a bit each in the bitmap (bit ``i % 8`` of byte
``i // 8``). Identical columns are stored once (the RTT of five HRF variants, the ACKs' times of
every replay). :func:`decode` reads a store back (the tests use it; report.js does the same).
"""

from __future__ import annotations

import gzip
import json
import math
import struct
import threading
import zlib
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from hscc_trace.perf.jit import njit

from .deflate import gzip_bytes

MAGIC = b"HST1"
TIME_DECIMALS = 6  # times: 1 µs, as the figures' JSON
SIG_DIGITS = 5  # other values: 5 significant digits of the column's largest magnitude (as the figures)


def decimals_for(values: np.ndarray, sig: int = SIG_DIGITS) -> int:
    """Decimals that keep ``sig`` significant digits of the largest finite magnitude (may be < 0)."""
    m = absmax(values)
    if m <= 0:  # (no finite value, or only zeros)
        return 0
    return int(min(sig - 1 - math.floor(math.log10(m)), 9))


def absmax(values: np.ndarray) -> float:
    """The largest finite magnitude of ``values`` (float64), −1.0 when none is finite: one
    compiled pass, no temporary arrays."""
    v = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    return float(absmax_each(v, np.array([0, len(v)], dtype=np.int64))[0])


def absmax_each(v: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """:func:`absmax` of each ``v[bounds[j]:bounds[j+1]]`` (``v`` float64, contiguous)."""
    out = np.empty(len(bounds) - 1, dtype=np.float64)
    if len(v):
        _absmax_kernel(v, bounds, out)
    else:
        out[:] = -1.0
    return out


@njit(work=lambda a: len(a[0]), cost=(0.29, 1.37e-06), cache=True)
def _absmax_kernel(v: np.ndarray, bounds: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    for j in range(len(bounds) - 1):
        m = -1.0
        for i in range(bounds[j], bounds[j + 1]):
            x = v[i]
            if np.isfinite(x):
                ax = abs(x)
                if ax > m:
                    m = ax
        out[j] = m


@dataclass
class _Table:
    n: int
    t: int  # column (its position among the columns given: StoreBuilder._given)
    frame: int | None
    cols: dict[str, int] = field(default_factory=dict)


class StoreBuilder:
    """Collects the tables and columns of one flow; :meth:`encode` gives the binary store."""

    def __init__(self, pool: Executor | None = None) -> None:
        self.tables: dict[str, _Table] = {}
        self._cols: list[tuple[dict[str, Any], bytes, bytes]] = []  # (spec, values, mask)
        self._index: dict[tuple[int, int, int, int, int, bytes], list[int]] = {}  # (spec, sizes, start) → columns
        # the columns given, in order (a table names them by this position), encoded only by
        # encode(): the report encodes a flow's store in a second thread while it builds the next flow
        # (``pool``: a one-thread executor that encodes them as they are given, while the figures
        # are built; a column's values are dropped once it is encoded)
        self._given: list[tuple[np.ndarray, int | None, bool] | None] = []
        self._pool = pool
        self._ahead: Future[Any] | None = None
        self._final: list[int] = []  # position given → column index, once encoded
        # held while columns are encoded: the pool's worker and a caller (encode_columns, encoded,
        # the layout) encode the columns left one after the other, never the same ones twice
        self._encoding = threading.Lock()
        self._raw: dict[tuple[int, int | None, bool, int], list[int]] = {}  # values → positions
        self.meta: dict[str, Any] = {}  # free-form extras for the page (enumerations, packet-list columns)

    # -- building ------------------------------------------------------------------------------

    def table(self, name: str, t_s: np.ndarray, frame: np.ndarray | None = None) -> str:
        """Register a table of ``len(t_s)`` rows: times in seconds since the flow's first packet and,
        when known, each row's frame number. Returns ``name`` (registering it again is a no-op)."""
        if name in self.tables:
            return name
        t = np.asarray(t_s, dtype=np.float64)
        ti = self._add(t, TIME_DECIMALS, delta=True)
        fi = None
        if frame is not None:
            fi = self._add(np.asarray(frame, dtype=np.float64), 0, delta=True)
        self.tables[name] = _Table(len(t), ti, fi)
        return name

    def alias(self, name: str, like: str) -> str:
        """Register table ``name`` as table ``like`` again: its rows and columns (the same store as
        :meth:`table` and :meth:`column` with the same values give, without comparing them)."""
        if name not in self.tables:
            tb = self.tables[like]
            self.tables[name] = _Table(tb.n, tb.t, tb.frame, dict(tb.cols))
        return name

    def has(self, table: str, col: str) -> bool:
        return table in self.tables and col in self.tables[table].cols

    def column(
        self,
        table: str,
        name: str,
        values: np.ndarray,
        *,
        decimals: int | None = None,
        delta: bool = True,
    ) -> str:
        """Add a value column to ``table`` (same row count); ``decimals`` None → 5 significant digits.
        Returns ``name``; adding a name twice keeps the first."""
        tb = self.tables[table]
        if name in tb.cols:
            return name
        v = np.asarray(values, dtype=np.float64)
        if len(v) != tb.n:
            raise ValueError(f"column {name!r} has {len(v)} rows, table {table!r} {tb.n}")
        tb.cols[name] = self._add(v, decimals, delta=delta)  # (None: decimals_for, when encoded)
        return name

    def _add(self, v: np.ndarray, d: int | None, *, delta: bool) -> int:
        # identical columns are stored once: look the values up (CRC-32 of at most 256 evenly
        # spaced values, then compared whole) among the columns not encoded yet; the encoded
        # bytes are looked up again when encoded (a column given again after its twin was
        # encoded, or different values with the same code): the same store either way
        v = np.ascontiguousarray(v, dtype=np.float64)
        key = (len(v), d, delta, zlib.crc32(np.ascontiguousarray(v[:: max(len(v) // 256, 1)]).data.cast("B")))
        for i in self._raw.get(key, ()):
            given = self._given[i]  # (None once encoded: its values are gone)
            # compared bit for bit (40 times faster than np.array_equal with equal_nan): equal
            # values that differ in their bits (−0.0 and 0.0, NaN payloads) encode to the same
            # bytes, which the encoded columns' lookup finds
            if given is not None and np.array_equal(given[0].view(np.int64), v.view(np.int64)):
                return i
        self._given.append((v, d, delta))
        i = len(self._given) - 1
        self._raw.setdefault(key, []).append(i)
        if (
            self._pool is not None
            and len(self._given) - len(self._final) >= BATCH
            and (self._ahead is None or self._ahead.done())
        ):
            self._ahead = self._pool.submit(self._resolve, True)
        return i

    def seal(self) -> None:
        """No more columns: the index of the columns given goes, and the pool (when there is one)
        encodes the columns left (less than a batch) while the caller lays out its figures."""
        self._raw = {}
        if self._pool is not None and len(self._final) < len(self._given):
            self._ahead = self._pool.submit(self._resolve)

    def encode_columns(self) -> None:
        """Encode every column given so far (their values are let go); :meth:`encode` then only
        lays the store out. (Runs in the thread that encodes: the pool's, when there is one.)"""
        self._resolve()

    def _resolve(self, batches: bool = False) -> list[int]:
        """Encode the columns given since the last call; position given → column index. (Runs
        in one thread at a time: the pool's, when there is one.) Up to :data:`BATCH` columns a
        compiled call (:func:`_encode_kernel`): in the pool's thread each call gives the
        interpreter lock back to the thread drawing the figures, and each return takes it again —
        once a column, that exchange cost the drawing thread more than the columns' encoding.
        ``batches``: only whole batches (the pool's work while columns are still being given).
        Any thread may call it: one at a time encodes (``_encoding``)."""
        with self._encoding:
            while len(self._given) - len(self._final) >= (BATCH if batches else 1):
                at = len(self._final)
                end = min(at + BATCH, len(self._given))
                items = self._given[at:end]
                self._final += self._encode_many(cast(list[tuple[np.ndarray, int | None, bool]], items))
                for i in range(at, end):
                    self._given[i] = None
            return self._final

    def encoded(self, table: str, col: str) -> tuple[dict[str, Any], bytes, bytes]:
        """The encoded column ``col`` of ``table``: (spec, values, null bitmap) — for the tests."""
        return self._cols[self._resolve()[self.tables[table].cols[col]]]

    def _encode(self, v: np.ndarray, d: int | None, *, delta: bool) -> int:
        """Encode one column (``d`` None: :func:`decimals_for` its values); its column index."""
        return self._encode_many([(np.ascontiguousarray(v, dtype=np.float64), d, delta)])[0]

    def _encode_many(self, items: list[tuple[np.ndarray, int | None, bool]]) -> list[int]:
        # one compiled pass over at most BATCH columns (:func:`_encode_kernel`); a column whose
        # values or steps do not fit the integers is stored as raw float64
        k = len(items)
        assert 0 < k <= BATCH
        cols = tuple(_read_only(v) for v, _, _ in items) + (_NO_VALUES,) * (BATCH - k)
        ns = np.array([len(c) for c in cols], dtype=np.int64)
        at = np.zeros(BATCH + 1, dtype=np.int64)
        np.cumsum(5 * ns, out=at[1:])
        bits_at = np.zeros(BATCH + 1, dtype=np.int64)
        np.cumsum((ns + 7) // 8, out=bits_at[1:])
        decimals = np.zeros(BATCH, dtype=np.int64)
        scales = np.ones(BATCH, dtype=np.float64)
        auto = np.zeros(BATCH, dtype=np.bool_)
        deltas = np.zeros(BATCH, dtype=np.bool_)
        for j, (_, d, delta) in enumerate(items):
            deltas[j] = bool(delta)
            if d is None:
                auto[j] = True
            else:
                decimals[j], scales[j] = d, 10.0**d
        buf = np.empty(int(at[-1]), dtype=np.uint8)
        bits = np.zeros(int(bits_at[-1]), dtype=np.uint8)
        res = np.zeros((BATCH, 3), dtype=np.int64)
        _encode_kernel(cols, k, decimals, scales, auto, deltas, _P10, buf, at, bits, bits_at, res)
        out = []
        for j, (v, _, delta) in enumerate(items):
            n_bytes, nulls, d = (int(x) for x in res[j])
            spec: dict[str, Any]
            if n_bytes < 0:
                data, spec, mask = v.astype("<f8").tobytes(), {"w": 8, "d": 0, "z": 0}, b""
            else:
                o = int(at[j])
                data = buf[o : o + n_bytes].tobytes()
                spec = {"w": 0, "d": d, "z": int(delta), "l": len(data)}
                mask = bits[bits_at[j] : bits_at[j + 1]].tobytes() if nulls else b""
            # identical columns once: looked up by their spec, lengths and first bytes, then the
            # bytes compared whole (no hash of every byte: that holds or gives away the
            # interpreter lock, which the drawing thread wants, for a few ms a flow)
            key = (spec["w"], spec["d"], spec["z"], len(data), len(mask), data[:32])
            same = self._index.setdefault(key, [])
            hit = next((i for i in same if self._cols[i][1] == data and self._cols[i][2] == mask), None)
            if hit is None:
                self._cols.append((spec, data, mask))
                hit = len(self._cols) - 1
                same.append(hit)
            out.append(hit)
        return out

    # -- output --------------------------------------------------------------------------------

    def encode(self) -> bytes:
        """The binary store (see the module docstring)."""
        return bytes(self._layout())

    def gzipped(self) -> bytes:
        """The store gzip-compressed (zlib-ng's level 4, or zlib's level 4 without the wheel:
        :mod:`.deflate`)."""
        return gzip_bytes(self._layout(), "store")

    def _layout(self) -> bytearray:
        """The store laid out in one buffer (each column copied once; the zeros pad)."""
        at = self._resolve()
        cols = []
        size = 0
        for spec, data, mask in self._cols:
            o = size
            size += len(data) + (-len(data) % 8)
            m = -1
            if mask:
                m = size
                size += len(mask) + (-len(mask) % 8)
            cols.append({**spec, "o": o, "m": m})
        header = {
            "tables": {
                k: {
                    "n": tb.n,
                    "t": at[tb.t],
                    "frame": None if tb.frame is None else at[tb.frame],
                    "cols": {c: at[i] for c, i in tb.cols.items()},
                }
                for k, tb in self.tables.items()
            },
            "cols": cols,
            "meta": self.meta,
        }
        hb = json.dumps(header, separators=(",", ":")).encode("utf-8")
        head = MAGIC + struct.pack("<I", len(hb)) + hb
        head += b"\0" * (-len(head) % 8)
        out = bytearray(len(head) + size)
        out[: len(head)] = head
        for (_, data, mask), c in zip(self._cols, cols):
            o = len(head) + c["o"]
            out[o : o + len(data)] = data
            if mask:
                o = len(head) + c["m"]
                out[o : o + len(mask)] = mask
        return out


def varint(q: np.ndarray) -> bytes:
    """Integers (|q| < 2³¹) as zigzag LEB128 varints: 7 bits a byte, low bits first, the top bit set
    on every byte but a value's last; zigzag maps 0, −1, 1, −2 … to 0, 1, 2, 3 … (small steps of
    either sign take one byte). Gzips about a fifth smaller than fixed-width integers here.

    Vectorised numpy: the store's columns are written by their compiled pass
    (:func:`_encode_kernel`), which the tests hold to this."""
    q = np.ascontiguousarray(q, dtype=np.int64)
    z = ((q << 1) ^ (q >> 63)).view(np.uint64)
    size = np.ones(len(z), dtype=np.int64)
    for bits in range(7, 64, 7):  # bytes of each value
        size += z >= np.uint64(1 << bits)
    end = np.cumsum(size)
    row = np.repeat(np.arange(len(z)), size)
    at = np.arange(int(end[-1]) if len(z) else 0) - np.repeat(end - size, size)  # a byte's place in its value
    b = (z[row] >> (7 * at).astype(np.uint64)) & np.uint64(0x7F)
    b[at < size[row] - 1] |= np.uint64(0x80)
    return b.astype(np.uint8).tobytes()


BATCH = 16  # columns one call of _encode_kernel encodes (a tuple of this many arrays: one compiled form)


def _read_only(v: np.ndarray) -> np.ndarray:
    """``v`` (float64, contiguous) as a read-only array: every column of a batch of one type
    (polars lends its columns read-only), so :func:`_encode_kernel` has one compiled form."""
    if v.flags.writeable:
        v = v.view()
        v.flags.writeable = False
    return v


_NO_VALUES = _read_only(np.empty(0, dtype=np.float64))
_P10_LOW = -330  # _P10[d - _P10_LOW] is 10.0**d as Python computes it, for every d decimals_for gives
_P10 = np.array([10.0**d for d in range(_P10_LOW, 10)])


@njit(work=lambda a: sum(len(c) for c in a[0]), cost=(0.82, 4.18e-06), cache=True, nogil=True)
def _encode_kernel(
    cols: tuple[np.ndarray, ...],
    k: int,
    decimals: np.ndarray,
    scales: np.ndarray,
    auto: np.ndarray,
    delta: np.ndarray,
    p10: np.ndarray,
    out: np.ndarray,
    at: np.ndarray,
    nulls: np.ndarray,
    nulls_at: np.ndarray,
    res: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """The first ``k`` columns of ``cols`` as the store writes them (:func:`_encode_column`), column
    ``j`` into ``out[at[j]:]`` and its nulls into ``nulls[nulls_at[j]:]``; ``res[j]`` = (bytes
    written or −1, nulls, decimals). A column with ``auto[j]`` gets :func:`decimals_for` of its
    values (the largest finite magnitude's, as :func:`_absmax_kernel` finds it), its scale from
    ``p10`` (Python's ``10.0**d``); the others ``decimals[j]`` and ``scales[j]``."""
    for j in range(k):
        v = cols[j]
        d = decimals[j]
        sc = scales[j]
        if auto[j]:
            m = -1.0
            for i in range(len(v)):
                x = v[i]
                if np.isfinite(x):
                    ax = abs(x)
                    if ax > m:
                        m = ax
            d = 0
            if m > 0:
                d = min(SIG_DIGITS - 1 - np.int64(math.floor(math.log10(m))), 9)  # (as decimals_for)
            sc = p10[d - _P10_LOW]
        n_bytes, n_null = _encode_column(v, sc, delta[j], out[at[j] :], nulls[nulls_at[j] :])
        res[j, 0] = n_bytes
        res[j, 1] = n_null
        res[j, 2] = d


@njit(cache=True)
def _encode_column(
    v: np.ndarray, scale: float, delta: bool, out: np.ndarray, nulls: np.ndarray
) -> tuple[int, int]:  # pragma: no cover - compiled
    """A column as the store writes it, in one pass: each finite value as the integer
    ``rint(v · scale)`` (a null, non-finite, repeats the previous integer when ``delta``, else
    0; nulls before the first value are 0), delta-coded along the rows when ``delta``, as
    zigzag varints (:func:`varint`) into ``out`` (5 bytes a value at most); each null a bit of
    ``nulls`` (bit ``i % 8`` of byte ``i // 8``). Returns (bytes written, nulls), or (−1, 0)
    when a scaled value reaches 2⁶² or a step 2³¹ (the column is then stored as float64)."""
    k = 0
    n_null = 0
    prev = np.int64(0)  # the last value's integer (a null repeats it)
    last = np.int64(0)  # the previous row's integer (the steps)
    for i in range(len(v)):
        x = v[i]
        if np.isfinite(x):
            s = x * scale
            if abs(s) >= 4611686018427387904.0:  # 2**62
                return -1, 0
            q = np.int64(np.rint(s))
            prev = q
        else:
            nulls[i >> 3] |= np.uint8(1 << (i & 7))
            n_null += 1
            q = prev if delta else np.int64(0)
        step = q - last if delta else q
        last = q
        if abs(step) >= 2147483648:  # 2**31
            return -1, 0
        z = np.uint64((step << 1) ^ (step >> 63))
        while z >= 128:
            out[k] = np.uint8((z & np.uint64(127)) | np.uint64(128))
            z >>= np.uint64(7)
            k += 1
        out[k] = np.uint8(z)
        k += 1
    return k, n_null


def unvarint(b: bytes, n: int) -> np.ndarray:
    """The first ``n`` integers of :func:`varint` bytes (int64)."""
    a = np.frombuffer(b, dtype=np.uint8)
    last = np.flatnonzero(a < 0x80)[:n]  # the last byte of each value
    first = np.concatenate(([0], last[:-1] + 1))
    z = np.zeros(n, dtype=np.uint64)
    for k in range(5):
        pos = first + k
        ok = pos <= last
        z[ok] |= (a[pos[ok]].astype(np.uint64) & np.uint64(0x7F)) << np.uint64(7 * k)
    return (z >> np.uint64(1)).astype(np.int64) ^ -(z & np.uint64(1)).astype(np.int64)


def decode(blob: bytes) -> dict[str, Any]:
    """A store back as ``{"tables": {name: {"t": array, "frame": array|None, col: array …}}, "meta": …}``
    (values as float64, nulls NaN). ``blob`` may be gzip-compressed."""
    if blob[:2] == b"\x1f\x8b":
        blob = gzip.decompress(blob)
    if blob[:4] != MAGIC:
        raise ValueError("not an hscc-trace report store")
    (hl,) = struct.unpack("<I", blob[4:8])
    header = json.loads(blob[8 : 8 + hl])
    base = 8 + hl + (-(8 + hl) % 8)
    cache: dict[tuple[int, int], np.ndarray] = {}

    def col(i: int, n: int) -> np.ndarray:
        if (i, n) in cache:
            return cache[(i, n)]
        c = header["cols"][i]
        o = base + c["o"]
        if c["w"] == 8:
            out = np.frombuffer(blob, dtype="<f8", count=n, offset=o).copy()
        else:
            raw = unvarint(blob[o : o + c["l"]], n)
            q = np.cumsum(raw) if c["z"] else raw
            out = q.astype(np.float64) * (10.0 ** -c["d"])
            if c["m"] >= 0:
                bits = np.unpackbits(
                    np.frombuffer(blob, dtype=np.uint8, count=(n + 7) // 8, offset=base + c["m"]), bitorder="little"
                )[:n].astype(bool)
                out[bits] = np.nan
        cache[(i, n)] = out
        return out

    tables = {}
    for name, tb in header["tables"].items():
        n = tb["n"]
        d = {"t": col(tb["t"], n), "frame": col(tb["frame"], n) if tb["frame"] is not None else None}
        for k, i in tb["cols"].items():
            d[k] = col(i, n)
        tables[name] = d
    return {"tables": tables, "meta": header["meta"], "columns": len(header["cols"])}
