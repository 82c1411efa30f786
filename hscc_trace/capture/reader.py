"""Capture file reading: pcap (µs/ns, either byte order, Kuznetzov "modified"), pcapng and gzip.

Records come out in batches of parallel numpy arrays (:class:`Batch`) over one bytes buffer, so
the decoder never touches a Python object per packet. The record walk is a compiled (numba) loop
over a chunk of the file; the file is read in chunks of :data:`CHUNK` bytes, so memory stays
bounded by the chunk size plus the decoded columns, never by the file size.

Why not libpcap's ``next_batch`` for the records themselves: pcapy-ng's batch records carry
(sec, usec, offset, caplen) only — no original (wire) length, which the conversation table needs
for tshark-equal byte counts, and microseconds only, which loses nanosecond files' precision;
and the bundled libpcap 1.9.1 refuses pcapng files whose interfaces have different link types.
libpcap is still used for what it is best at: compiling ``--filter`` expressions
(:mod:`hscc_trace.capture.bpf`) and as the reader of last resort for a file whose magic number
this module does not know (:func:`_libpcap_batches`), so anything libpcap opens, we open.
"""

from __future__ import annotations

import gzip
import io
import mmap
import os
import stat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, NamedTuple

import numpy as np

from hscc_trace.errors import InputError
from hscc_trace.perf.jit import njit

#: bytes read from the file per chunk (records never straddle a batch; the tail is carried over)
CHUNK = 8 * 1024 * 1024
#: largest captured length accepted per record (libpcap's MAXIMUM_SNAPLEN, 256 KiB)
MAX_CAPLEN = 262144
#: read an uncompressed regular file through a memory map (:class:`_Mapped`) instead of copying
#: it into buffers: on request only (``HSCC_TRACE_MMAP=1``), since a file shortened while it is
#: mapped ends the process with SIGBUS (docs/flows.md, "Reading"); tests set it to compare the two
MAP = os.environ.get("HSCC_TRACE_MMAP", "").strip().lower() not in ("", "0", "false", "no")
_PAGE = mmap.PAGESIZE
_MADV_DONTNEED = getattr(mmap, "MADV_DONTNEED", 4)

PCAP_MAGICS = {
    0xA1B2C3D4: ("pcap", False, 16),
    0xA1B23C4D: ("pcap-ns", True, 16),
    0xA1B2CD34: ("pcap-modified", False, 24),  # Kuznetzov patched libpcap: 8 extra header bytes
}
PCAPNG_SHB = 0x0A0D0D0A
BYTE_ORDER_MAGIC = 0x1A2B3C4D

# LINKTYPE_* numbers (as stored in files) -> libpcap DLT names
LINKTYPE_NAMES = {
    0: "NULL",
    1: "EN10MB",
    6: "IEEE802",
    7: "ARCNET",
    8: "SLIP",
    9: "PPP",
    10: "FDDI",
    12: "RAW",
    14: "RAW",
    50: "PPP_SERIAL",
    51: "PPP_ETHER",
    101: "RAW",
    104: "C_HDLC",
    105: "IEEE802_11",
    108: "LOOP",
    113: "LINUX_SLL",
    127: "IEEE802_11_RADIO",
    192: "PPI",
    228: "IPV4",
    229: "IPV6",
    276: "LINUX_SLL2",
}


def linktype_name(lt: int) -> str:
    return LINKTYPE_NAMES.get(lt, f"LINKTYPE_{lt}")


class Records(NamedTuple):
    """Records as the compiled kernels take them (decoder, BPF): record ``i`` is
    ``buf[off[i] : off[i] + cap[i]]``."""

    buf: np.ndarray  # uint8
    off: np.ndarray  # int64
    cap: np.ndarray  # uint32, captured length
    wire: np.ndarray  # uint32, original length
    lt: np.ndarray  # uint16, LINKTYPE_* of each record


class PcapLayout(NamedTuple):
    """How a pcap file's record headers read (argument of :func:`_walk_pcap`)."""

    be: bool  # big-endian
    nsec: bool  # nanosecond timestamps
    hdrlen: int  # record header bytes: 16, or 24 for Kuznetzov's "modified" format
    max_cap: int  # a larger captured length means the rest of the file is unreliable


class Interfaces(NamedTuple):
    """The interfaces of the current pcapng section, by interface id (argument of :func:`_walk_pcapng`)."""

    snap: np.ndarray  # uint32, snapshot length (0: none)
    pow2: np.ndarray  # bool, if_tsresol is a power of 2 (else of 10)
    exp: np.ndarray  # int64, its exponent
    offs: np.ndarray  # int64, if_tsoffset in ns


class Walked(NamedTuple):
    """Where the record walkers write, one row per record (capacity: the arrays' length)."""

    off: np.ndarray  # int64, offset of the record's bytes in the buffer
    cap: np.ndarray  # uint32, captured length
    wire: np.ndarray  # uint32, original length
    ts: np.ndarray  # int64, ns since the epoch
    iface: np.ndarray  # uint16, pcapng interface id (not written by the pcap walker)

    @staticmethod
    def empty(n: int) -> Walked:
        return Walked(
            np.empty(n, np.int64),
            np.empty(n, np.uint32),
            np.empty(n, np.uint32),
            np.empty(n, np.int64),
            np.empty(n, np.uint16),
        )


class _WalkedPool:
    """Record arrays that take turns (``reuse``: see :func:`iter_batches`): ``n`` sets, each of
    at least the rows asked for, handed out in order; and one read-only array of zeros and one
    of a link type to slice for the batches' ``iface`` and ``linktype`` columns."""

    def __init__(self, n: int):
        self.sets: list[Walked] = [Walked.empty(0) for _ in range(max(n, 2))]
        self.k = 0
        self.consts: dict[int, np.ndarray] = {}

    def next(self, rows: int) -> Walked:
        i = self.k % len(self.sets)
        self.k += 1
        if len(self.sets[i].off) < rows:
            self.sets[i] = Walked.empty(rows)
        return self.sets[i]

    def const(self, value: int, rows: int) -> np.ndarray:
        a = self.consts.get(value)
        if a is None or len(a) < rows:
            a = np.full(rows, value, np.uint16)
            a.flags.writeable = False
            self.consts[value] = a
        return a[:rows]


@dataclass
class Batch:
    """Records of one chunk: packet ``i`` is ``buf[off[i] : off[i] + cap[i]]``."""

    buf: np.ndarray  # uint8; reused by the reader once the next batch is requested
    off: np.ndarray  # int64, offset of the packet bytes in buf
    cap: np.ndarray  # uint32, captured length
    wire: np.ndarray  # uint32, original length
    ts_ns: np.ndarray  # int64, ns since the epoch
    iface: np.ndarray  # uint16, pcapng interface id (section-local), 0 for pcap
    linktype: np.ndarray  # uint16, LINKTYPE_* of each record
    first_frame: int  # 1-based frame number of record 0
    frames: np.ndarray | None = None  # explicit frame numbers (after filtering), else consecutive

    def __len__(self) -> int:
        return len(self.off)

    def records(self, r: slice = slice(None)) -> Records:
        """The kernels' view of records ``r`` (all by default): bytes and where each record lies."""
        return Records(self.buf, self.off[r], self.cap[r], self.wire[r], self.linktype[r])

    def frame_numbers(self, idx: np.ndarray) -> np.ndarray:
        """1-based frame numbers (uint64) of the records at positions ``idx``."""
        if self.frames is not None:
            return self.frames[idx].astype(np.uint64)
        return (self.first_frame + idx).astype(np.uint64)

    def subset(self, keep: np.ndarray) -> Batch:
        """The kept records only, frame numbers preserved."""
        idx = np.flatnonzero(keep)
        return Batch(
            self.buf,
            self.off[idx],
            self.cap[idx],
            self.wire[idx],
            self.ts_ns[idx],
            self.iface[idx],
            self.linktype[idx],
            self.first_frame,
            self.frame_numbers(idx).astype(np.int64),
        )


@dataclass
class ReadInfo:
    """What the reader learnt about the file; problems are (reason, count) not exceptions."""

    format: str = ""
    snaplen: int | None = None
    linktypes: list[int] = field(default_factory=list)  # in order of first appearance
    records: int = 0
    problems: dict[str, int] = field(default_factory=dict)  # reason -> count (file-level)
    #: reason -> (bytes not read or None when unknowable, estimated records not read or None);
    #: every file-level problem means data that was not read
    lost: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)

    def problem(self, reason: str, n: int = 1, lost: tuple[int | None, int | None] = (None, None)) -> None:
        self.problems[reason] = self.problems.get(reason, 0) + n
        self.lost[reason] = lost


# ------------------------------------------------------------------------------------------
# compiled record walkers


@njit(cache=True, inline="always")
def _u32(buf, p, be):
    if be:
        return (
            (np.uint32(buf[p]) << 24)
            | (np.uint32(buf[p + 1]) << 16)
            | (np.uint32(buf[p + 2]) << 8)
            | np.uint32(buf[p + 3])
        )
    return (
        (np.uint32(buf[p + 3]) << 24) | (np.uint32(buf[p + 2]) << 16) | (np.uint32(buf[p + 1]) << 8) | np.uint32(buf[p])
    )


@njit(cache=True, inline="always")
def _u16(buf, p, be):
    if be:
        return (np.uint32(buf[p]) << 8) | np.uint32(buf[p + 1])
    return (np.uint32(buf[p + 1]) << 8) | np.uint32(buf[p])


@njit(work=lambda a: int(a[1]), cost=(0.88, 1.8e-07), cache=True, nogil=True)
def _walk_pcap(buf, n, layout, out):
    """Walk pcap records in buf[:n] (``layout``: a :class:`PcapLayout`) into ``out`` (a
    :class:`Walked`; ``iface`` is not written). Returns (bytes consumed, records, status).

    status 0 = buffer exhausted at a record boundary or mid-record (caller carries the tail),
    2 = a record claims more than max_cap bytes (stop: the rest of the file is unreliable),
    3 = output arrays full.
    """
    be, nsec, hdrlen, max_cap = layout
    off, cap, wire, ts = out.off, out.cap, out.wire, out.ts
    pos = 0
    k = 0
    m = len(off)
    while True:
        if k >= m:
            return pos, k, 3
        if pos + hdrlen > n:
            return pos, k, 0
        sec = _u32(buf, pos, be)
        frac = _u32(buf, pos + 4, be)
        c = _u32(buf, pos + 8, be)
        w = _u32(buf, pos + 12, be)
        if c > max_cap:
            return pos, k, 2
        if pos + hdrlen + c > n:
            return pos, k, 0
        off[k] = pos + hdrlen
        cap[k] = c
        wire[k] = w
        if nsec:
            ts[k] = np.int64(sec) * 1000000000 + np.int64(frac)
        else:
            ts[k] = np.int64(sec) * 1000000000 + np.int64(frac) * 1000
        pos += hdrlen + c
        k += 1


@njit(work=lambda a: int(a[1]), cost=(4.4, 2.54e-07), cache=True, nogil=True)
def _walk_pcapng(buf, n, be, ifs, out):
    """Walk pcapng blocks in buf[:n] (byte order ``be``; ``ifs``: the section's
    :class:`Interfaces`) into ``out`` (a :class:`Walked`) until a block Python must handle.

    Packet blocks (EPB 6, SPB 3, obsolete PB 2) become records; other block types are skipped.
    Returns (bytes consumed, records, status, block type): status 0 = need more data,
    1 = a section header or interface description block is next (Python parses it),
    2 = malformed block length, 3 = output full, 4 = packet on an undeclared interface.
    """
    if_snap, if_pow2, if_exp, if_offs = ifs
    off, cap, wire, ts, iface = out
    pos = 0
    k = 0
    m = len(off)
    nif = len(if_snap)
    while True:
        if k >= m:
            return pos, k, 3, 0
        if pos + 12 > n:
            return pos, k, 0, 0
        btype = _u32(buf, pos, be)
        blen = _u32(buf, pos + 4, be)
        if btype == 0x0A0D0D0A or btype == 1:
            return pos, k, 1, btype
        if blen < 12 or (blen & 3) != 0 or blen > 16 * 1024 * 1024:
            return pos, k, 2, btype
        if pos + blen > n:
            return pos, k, 0, btype
        body = pos + 8
        c = np.uint32(0)
        w = np.uint32(0)
        ifid = np.int64(0)
        t = np.uint64(0)
        dataoff = 0
        ok = False
        if (btype == 6 or btype == 2) and blen >= 32:
            # Enhanced Packet Block (6): 32-bit interface id; obsolete Packet Block (2): 16-bit
            # interface id + 16-bit drops count. The rest of the two layouts is the same.
            ifid = np.int64(_u32(buf, body, be)) if btype == 6 else np.int64(_u16(buf, body, be))
            t = (np.uint64(_u32(buf, body + 4, be)) << np.uint64(32)) | np.uint64(_u32(buf, body + 8, be))
            c = _u32(buf, body + 12, be)
            w = _u32(buf, body + 16, be)
            dataoff = body + 20
            if dataoff + c > pos + blen - 4:
                return pos, k, 2, btype
            ok = True
        elif btype == 3 and blen >= 16:
            ifid = np.int64(0)
            w = _u32(buf, body, be)
            c = w
            room = np.uint32(blen - 16)
            if c > room:
                c = room
            if nif > 0 and if_snap[0] > 0 and c > if_snap[0]:
                c = np.uint32(if_snap[0])
            dataoff = body + 4
            ok = True
        if ok:
            if ifid >= nif:
                return pos, k, 4, btype
            off[k] = dataoff
            cap[k] = c
            wire[k] = w
            iface[k] = ifid
            if btype == 3:
                ts[k] = 0
            elif if_pow2[ifid]:
                e = np.uint64(if_exp[ifid])
                whole = t >> e
                frac = t & ((np.uint64(1) << e) - np.uint64(1))
                ts[k] = np.int64(whole) * 1000000000 + np.int64((frac * np.uint64(1000000000)) >> e) + if_offs[ifid]
            else:
                e = if_exp[ifid]
                if e <= 9:
                    mul = np.int64(1)
                    for _ in range(9 - e):
                        mul *= 10
                    ts[k] = np.int64(t) * mul + if_offs[ifid]
                else:
                    div = np.uint64(1)
                    for _ in range(e - 9):
                        div *= np.uint64(10)
                    ts[k] = np.int64(t // div) + if_offs[ifid]
            k += 1
        pos += blen


# ------------------------------------------------------------------------------------------
# file access


#: the file name that means standard input (as for tcpdump -r -, tshark -r -, tcptrace -)
STDIN = "-"


def is_stream(path: str) -> bool:
    """Whether ``path`` can be read only once, front to back: standard input (``-``), a pipe or
    FIFO, a character device (``/dev/stdin``), a socket — anything but a regular file (and
    ``-`` even when the shell redirected a regular file into it)."""
    if path == STDIN:
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False  # (missing: the reader says so)


def _open(path: str) -> tuple[BinaryIO, bool]:
    """Open ``path`` for reading, transparently gunzipping; returns (stream, compressed).

    ``-`` is standard input. Nothing is sought: pipes and other streams read like files."""
    from hscc_trace.names import os_error

    if path == STDIN:
        f = open(0, "rb", closefd=False)  # noqa: SIM115 - closed by the caller
        return _maybe_gzip(f)
    try:
        st = os.stat(path)
    except OSError as exc:  # missing, a name too long, a path through a non-directory …
        raise InputError(os_error(path, exc)) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{path}: is a directory, not a capture file")
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror}") from None
    return _maybe_gzip(f)


def _maybe_gzip(f) -> tuple[BinaryIO, bool]:
    """``f`` (a buffered binary stream), gunzipped when it starts with the gzip magic; the first
    bytes are peeked at, not read, so a pipe needs no seek."""
    head = f.peek(2)[:2]
    if head == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=f, mode="rb"), True  # streamed: never decompressed to memory
    return f, False


def _read_into(f: BinaryIO, view: memoryview) -> tuple[int, str | None]:
    """Fill ``view`` as far as the stream allows; returns (bytes read, problem or None).

    A gzip stream that stops early is a truncated file (a warning, like a cut-short pcap);
    gzip data that cannot be decompressed at all is an input error.
    """
    got = 0
    gz = isinstance(f, gzip.GzipFile)
    while got < len(view):
        try:
            if gz:  # read1: one decompression step at a time, so a cut-short stream keeps what came before
                chunk = f.read1(min(len(view) - got, 1 << 20))
                n = len(chunk)
                view[got : got + n] = chunk
            else:
                n = f.readinto(view[got:])
        except EOFError:
            return got, "compressed data ends early (gzip stream cut short)"
        except (OSError, gzip.BadGzipFile, zlib.error) as exc:
            # a CRC or length check fails after the member's data was delivered; corrupt deflate
            # data stops the stream there: either way keep what came before (like a cut-short
            # file), with a warning that says so
            return got, f"corrupt compressed data ({exc})"
        if not n:
            break
        got += n
    return got, None


class _Chunks:
    """Sequential chunk reader keeping an unconsumed tail between reads."""

    def __init__(self, f: BinaryIO, first: bytes, buffers: int = 2, chunk: int = CHUNK, base: int = 0):
        self.f = f
        self.base = base  # offset of buf[0] in the (decompressed) file
        self.chunk = chunk
        self.buf = np.empty(chunk + MAX_CAPLEN * 2, dtype=np.uint8)
        self.spares = [np.empty_like(self.buf) for _ in range(max(buffers, 2) - 1)]
        self.problem: str | None = None
        self.n = len(first)
        self.buf[: self.n] = np.frombuffer(first, dtype=np.uint8)
        self.eof = False

    def fill(self) -> None:
        if self.eof or self.n >= len(self.buf):
            return
        got, problem = _read_into(self.f, memoryview(self.buf)[self.n :])
        if problem:
            self.problem = problem
            self.eof = True
        self.n += got
        if self.n < len(self.buf):
            self.eof = True

    def consume(self, k: int) -> None:
        """Drop the first k bytes: the tail moves to the front of the next buffer.

        The buffers take turns, so with ``buffers`` = b a batch handed out stays valid while
        b − 1 more batches are requested (consumers copy what they keep), and no page is
        faulted in twice. Dropping nothing (a pass that handed out no batch: a record larger
        than the buffer, which then grows) keeps the buffer: turning it would hand the last
        batch's buffer over early.
        """
        if k == 0:
            return
        rest = self.n - k
        self.base += k
        nxt = self.spares.pop(0)
        if len(nxt) != len(self.buf):
            nxt = np.empty_like(self.buf)
        nxt[:rest] = self.buf[k : self.n]
        self.spares.append(self.buf)
        self.buf = nxt
        self.n = rest

    def grow(self, need: int) -> None:
        if need > len(self.buf):
            new = np.empty(need + self.chunk, dtype=np.uint8)
            new[: self.n] = self.buf[: self.n]
            self.buf = new
            self.eof = False


class _Mapped:
    """:class:`_Chunks`' interface over a read-only memory map of a regular file: the walkers and
    the decoder read the page cache's own pages, so no byte of the file is copied.

    ``buf`` is a view of the map from ``base`` on, ``n`` of its bytes valid — windows of the
    same size as :class:`_Chunks`' buffers, so batches are the same. Read buffers that take
    turns are not needed (a batch's bytes stay valid as long as the batch is referenced), but the
    pages of windows ``buffers`` batches behind are unmapped from this process as it goes
    (``madvise(MADV_DONTNEED)``: the page cache keeps them, a later access reads them again), so
    the resident size stays that of ``buffers`` windows, as with read buffers. The file's size
    is taken once, when it is opened: bytes appended later are not read (a file that is
    shortened while it is read ends the process with SIGBUS, as for any program that maps it).
    """

    def __init__(self, f: BinaryIO, base: int, size: int, buffers: int = 2, chunk: int = CHUNK):
        self.f = f
        self.size = size
        self.mm = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)
        self.whole = np.frombuffer(self.mm, dtype=np.uint8)
        self.chunk = chunk
        self.window = chunk + MAX_CAPLEN * 2
        self.keep = max(buffers, 2) * self.window  # bytes behind ``base`` left mapped
        self.dropped = 0  # pages before this offset have been unmapped
        self.base = base
        self.end = base  # buf[: n] = whole[base : end]
        self.n = 0
        self.buf = self.whole[base:base]
        self.problem: str | None = None
        self.eof = False

    def _view(self) -> None:
        self.n = self.end - self.base
        self.buf = self.whole[self.base : min(self.size, self.base + max(self.window, self.n))]

    def fill(self) -> None:
        self.end = min(self.size, max(self.end, self.base + self.window))
        self.eof = self.end >= self.size
        self._view()

    def consume(self, k: int) -> None:
        self.base += k
        self._view()
        drop = (self.base - self.keep) // _PAGE * _PAGE
        if drop - self.dropped >= self.window:
            try:
                self.mm.madvise(_MADV_DONTNEED, self.dropped, drop - self.dropped)
            except (OSError, ValueError, AttributeError):  # (no madvise: Windows; only memory depends on it)
                pass
            self.dropped = drop

    def grow(self, need: int) -> None:
        if need > self.window:
            self.window = need + self.chunk
            self.eof = False


def _chunks(f: BinaryIO, first: bytes, buffers: int, chunk: int, base: int = 0) -> _Chunks | _Mapped:
    """The chunk source of a capture whose first ``base + len(first)`` bytes are read: a memory
    map (:class:`_Mapped`) for an uncompressed regular file that can be mapped, else reads into
    buffers (:class:`_Chunks`). ``first`` holds the file's bytes from ``base`` on."""
    if MAP and isinstance(f, io.BufferedReader):
        try:
            st = os.fstat(f.fileno())
            if stat.S_ISREG(st.st_mode) and st.st_size > base + len(first) and f.tell() == base + len(first):
                return _Mapped(f, base, st.st_size, buffers, chunk)
        except (OSError, ValueError):  # not mappable (some file systems), not seekable: read it
            pass
    return _Chunks(f, first, buffers, chunk, base)


def _rest(ch: _Chunks | _Mapped, at: int, records: int, header: int) -> tuple[tuple[int | None, int | None], str]:
    """How much of the file from ``buf[at]`` on is not read: ((bytes, estimated records), phrase).

    Bytes: from the file size for a plain regular file, else by reading the rest of the stream
    and counting (a gzip file, a pipe); a stream that breaks while counting gives a lower bound
    ("or more"). Records: the bytes divided by the mean record size so far (header excluded).
    """
    pos = ch.base + at
    f = ch.f
    n: int | None = None
    exact = True
    if not isinstance(f, gzip.GzipFile):
        try:
            st = os.fstat(f.fileno())
            if stat.S_ISREG(st.st_mode):
                n = max(st.st_size - pos, 0)
        except (OSError, AttributeError, ValueError):
            pass
    if n is None:
        n = ch.n - at
        if not ch.eof:
            try:
                while True:
                    b = f.read1(1 << 20) if isinstance(f, gzip.GzipFile) else f.read(1 << 20)
                    if not b:
                        break
                    n += len(b)
            except (EOFError, OSError, zlib.error):
                exact = False
    est = round(n * records / (pos - header)) if records and pos > header else None
    phrase = f"{n} bytes{'' if exact else ' or more'}" + (f", about {est} records" if est is not None else "")
    return (n, est), phrase + " not read"


def _stream_problem(ch: _Chunks | _Mapped, info: ReadInfo, records: int) -> None:
    """The warning for a compressed stream that stopped early (cut short or corrupt)."""
    done = ch.base + ch.n
    if ch.problem.startswith("corrupt"):
        f = getattr(ch.f, "fileobj", None)
        left = None
        try:
            if f is not None:
                left = max(os.fstat(f.fileno()).st_size - f.tell(), 0)
        except (OSError, AttributeError, ValueError):
            left = None
        rest = (
            f"about {left} compressed bytes after it not read"
            if left
            else "nothing after it is missing (a check at the end of the stream failed)"
        )
        info.problem(
            f"gzip: {ch.problem} after {done} decompressed bytes ({records} records); {rest}",
            lost=(None, None) if left else (0, 0),
        )
    else:
        info.problem(
            f"{ch.problem} after {done} decompressed bytes ({records} records); how much is missing cannot be known"
        )


def iter_batches(
    path: str, info: ReadInfo, *, buffers: int = 2, chunk: int | None = None, reuse: bool = False
) -> Iterator[Batch]:
    """Yield record batches of the capture at ``path``; fill ``info`` as a side effect.

    A batch's bytes (``Batch.buf``) stay valid while ``buffers`` − 1 further batches are
    requested (the read buffers take turns; each holds ``chunk`` (default :data:`CHUNK`) + 2 ×
    ``MAX_CAPLEN`` bytes). With ``reuse`` the same holds for a pcap batch's arrays (``off``,
    ``cap``, ``wire``, ``ts_ns``: they take turns too, so no memory is allocated per batch, and
    ``iface`` / ``linktype`` are read-only views of one array) — for a consumer that keeps
    nothing of a batch, such as the flow table; without it every batch has arrays of its own.
    Raises :class:`InputError` when the file is missing, empty or not a capture.
    """
    f, gz = _open(path)
    try:
        buf = bytearray(24)
        n, problem = _read_into(f, memoryview(buf))
        head = bytes(buf[:n])
        if problem and n < 24:
            raise InputError(f"{path}: {problem}")
        if len(head) == 0:
            raise InputError(
                f"{path}: gzip holds an empty file (0 bytes decompressed)" if gz else f"{path}: empty file (0 bytes)"
            )
        if len(head) < 4:
            raise InputError(f"{path}: not a capture file (only {len(head)} bytes)")
        magic_le = int.from_bytes(head[:4], "little")
        magic_be = int.from_bytes(head[:4], "big")
        suffix = ".gz" if gz else ""
        if magic_le in PCAP_MAGICS or magic_be in PCAP_MAGICS:
            be = magic_be in PCAP_MAGICS
            yield from _pcap_batches(path, f, head, be, info, suffix, buffers, chunk or CHUNK, reuse)
        elif magic_le == PCAPNG_SHB:
            yield from _pcapng_batches(path, f, head, info, suffix, buffers, chunk or CHUNK)
        else:
            if head.lstrip(b" \t\r\n\xef\xbb\xbf")[:1] in (b"{", b"\x1e"):  # JSON, JSON-SEQ: docs/quic.md
                raise InputError(f"{path}: a qlog (QUIC) file, not a packet capture: read it with `hscc-trace qlog`")
            if gz:
                raise InputError(f"{path}: gzip data is not a pcap or pcapng capture")
            if is_stream(path):  # libpcap would open it again: what was read is gone
                raise InputError(f"{path}: not a pcap/pcapng capture (magic 0x{magic_le:08x})")
            yield from _libpcap_batches(path, info)
    finally:
        f.close()


def _pcap_batches(
    path: str,
    f: BinaryIO,
    head: bytes,
    be: bool,
    info: ReadInfo,
    suffix: str,
    buffers: int = 2,
    chunk: int = CHUNK,
    reuse: bool = False,
) -> Iterator[Batch]:
    if len(head) < 24:
        raise InputError(f"{path}: truncated pcap file header ({len(head)} of 24 bytes)")
    order = "big" if be else "little"
    magic = int.from_bytes(head[:4], order)
    fmt, nsec, hdrlen = PCAP_MAGICS[magic]
    snaplen = int.from_bytes(head[16:20], order)
    network = int.from_bytes(head[20:24], order)
    linktype = network & 0xFFFF
    if network & 0x03FF0000:
        raise InputError(
            f"{path}: unsupported link type field 0x{network:08x} (reserved bits set; libpcap and Wireshark refuse it too)"
        )
    info.format = fmt + suffix
    info.snaplen = snaplen
    info.linktypes = [linktype]
    max_cap = max(MAX_CAPLEN, min(snaplen, 16 * 1024 * 1024))
    layout = PcapLayout(be, nsec, hdrlen, max_cap)
    ch = _chunks(f, b"", buffers, chunk, base=24)
    pool = _WalkedPool(buffers) if reuse else None
    frame = 1
    while True:
        ch.fill()
        rows = max(1, ch.n // (hdrlen + 20) + 1)
        out = pool.next(rows) if pool is not None else Walked.empty(rows)
        used, k, status = _walk_pcap(ch.buf, ch.n, layout, out)
        used, k = int(used), int(k)  # (Python ints: interpreted, the walker returns numpy scalars)
        if k == 0 and pool is not None:
            pool.k -= 1  # (no batch handed out: the arrays' turn is not used up)
        if k:
            info.records += k
            yield Batch(
                ch.buf,
                out.off[:k],
                out.cap[:k],
                out.wire[:k],
                out.ts[:k],
                pool.const(0, k) if pool is not None else np.zeros(k, np.uint16),
                pool.const(linktype, k) if pool is not None else np.full(k, linktype, np.uint16),
                frame,
            )
            frame += k
        if status == 2:
            lost, phrase = _rest(ch, used, frame - 1, 24)
            info.problem(
                f"record {frame} claims an absurd captured length (> {max_cap} bytes); rest of file ignored ({phrase})",
                lost=lost,
            )
            return
        ch.consume(used)
        if status == 3:
            continue
        if ch.eof:
            if ch.problem:
                _stream_problem(ch, info, frame - 1)
            if ch.n:
                info.problem(
                    f"file ends inside record {frame} ({ch.n} bytes of it present); that record ignored", lost=(ch.n, 1)
                )
            return
        if k == 0:
            # one record larger than the buffer: grow (bounded by max_cap)
            ch.grow(ch.n + max_cap + hdrlen)


def _parse_shb(path: str, blk: bytes) -> bool:
    """Return True when the section is big-endian."""
    bom = blk[8:12]
    if bom == b"\x4d\x3c\x2b\x1a":
        return False
    if bom == b"\x1a\x2b\x3c\x4d":
        return True
    raise InputError(f"{path}: pcapng section header has a bad byte-order magic")


def _parse_idb(blk: bytes, be: bool) -> tuple[int, int, bool, int, int]:
    """(linktype, snaplen, tsresol is power of 2, exponent, ts offset ns) of an IDB."""
    order = "big" if be else "little"
    lt = int.from_bytes(blk[8:10], order)
    snap = int.from_bytes(blk[12:16], order)
    pow2, exp, offs = False, 6, 0
    p, end = 16, len(blk) - 4
    while p + 4 <= end:
        code = int.from_bytes(blk[p : p + 2], order)
        olen = int.from_bytes(blk[p + 2 : p + 4], order)
        val = blk[p + 4 : p + 4 + olen]
        if code == 0:
            break
        if code == 9 and olen >= 1:  # if_tsresol
            pow2, exp = bool(val[0] & 0x80), val[0] & 0x7F
        elif code == 14 and olen >= 8:  # if_tsoffset, seconds
            offs = int.from_bytes(val[:8], order, signed=True) * 1_000_000_000
        p += 4 + ((olen + 3) & ~3)
    if not pow2 and exp > 18:
        exp = 18
    if pow2 and exp > 63:
        exp = 63
    return lt, snap, pow2, exp, offs


def _pcapng_batches(
    path: str, f: BinaryIO, head: bytes, info: ReadInfo, suffix: str, buffers: int = 2, chunk: int = CHUNK
) -> Iterator[Batch]:
    info.format = "pcapng" + suffix
    ch = _chunks(f, head, buffers, chunk)
    be = False
    # interfaces of the current section
    lts: list[int] = []
    snaps: list[int] = []
    pow2s: list[bool] = []
    exps: list[int] = []
    offss: list[int] = []
    seen_shb = False
    frame = 1
    while True:
        ch.fill()
        out = Walked.empty(max(1, ch.n // 32 + 1))
        if_lt = np.array(lts, np.uint16)
        ifs = Interfaces(
            np.array(snaps, np.uint32), np.array(pow2s, np.bool_), np.array(exps, np.int64), np.array(offss, np.int64)
        )
        used, k, status, btype = _walk_pcapng(ch.buf, ch.n, be, ifs, out)
        used, k = int(used), int(k)
        if k:
            info.records += k
            iface = out.iface[:k]
            yield Batch(ch.buf, out.off[:k], out.cap[:k], out.wire[:k], out.ts[:k], iface.copy(), if_lt[iface], frame)
            frame += k
        if status == 2 or status == 4:
            what = "a malformed block" if status == 2 else "a packet on an undeclared interface"
            lost, phrase = _rest(ch, used, frame - 1, 0)
            info.problem(f"pcapng: {what} after record {frame - 1}; rest of file ignored ({phrase})", lost=lost)
            return
        if status == 1:
            # SHB or IDB at `used`: make sure the whole block is buffered, then parse it
            blen_bytes = bytes(ch.buf[used + 4 : used + 8])
            if len(blen_bytes) < 4:
                ch.consume(used)
                if ch.eof:
                    info.problem(f"pcapng: file ends inside a block ({ch.n} bytes not read)", lost=(ch.n, None))
                    return
                continue
            if btype == PCAPNG_SHB:
                bom = bytes(ch.buf[used + 8 : used + 12]) if ch.n >= used + 12 else b""
                be = bom == b"\x1a\x2b\x3c\x4d"
            blen = int.from_bytes(blen_bytes, "big" if be else "little")
            if blen < 12 or blen % 4 or blen > 16 * 1024 * 1024:
                if not seen_shb:
                    raise InputError(f"{path}: not a capture file (bad pcapng section header)")
                lost, phrase = _rest(ch, used, frame - 1, 0)
                info.problem(
                    f"pcapng: malformed block length {blen} after record {frame - 1}; rest of file ignored ({phrase})",
                    lost=lost,
                )
                return
            if used + blen > ch.n:
                ch.consume(used)
                ch.grow(blen)
                ch.fill()
                if ch.n < blen:
                    if not seen_shb:
                        raise InputError(f"{path}: truncated pcapng section header")
                    info.problem(f"pcapng: file ends inside a block ({ch.n} bytes not read)", lost=(ch.n, None))
                    return
                continue
            blk = bytes(ch.buf[used : used + blen])
            if btype == PCAPNG_SHB:
                be = _parse_shb(path, blk)
                seen_shb = True
                lts, snaps, pow2s, exps, offss = [], [], [], [], []
            else:
                lt, snap, p2, e, o = _parse_idb(blk, be)
                lts.append(lt)
                snaps.append(snap)
                pow2s.append(p2)
                exps.append(e)
                offss.append(o)
                if lt not in info.linktypes:
                    info.linktypes.append(lt)
                if info.snaplen is None or (snap and snap > info.snaplen):
                    info.snaplen = snap or None
            ch.consume(used + blen)
            continue
        ch.consume(used)
        if status == 3:
            continue
        if ch.eof:
            if ch.problem:
                _stream_problem(ch, info, frame - 1)
            if ch.n:
                info.problem(
                    f"file ends inside a pcapng block after record {frame - 1} ({ch.n} bytes); ignored "
                    f"({ch.n} bytes not read)",
                    lost=(ch.n, None),
                )
            return
        if k == 0 and ch.n >= len(ch.buf):
            ch.grow(2 * len(ch.buf))  # one block larger than the buffer (blocks are capped at 16 MiB)


def _libpcap_batches(path: str, info: ReadInfo) -> Iterator[Batch]:
    """Last resort: whatever libpcap itself can open (per-packet ``next()``, full headers)."""
    import pcapy

    try:
        r = pcapy.open_offline(path)
    except Exception as exc:  # pcapy.PcapError
        msg = str(exc).split(": ", 1)[-1] if str(exc) else "unknown format"
        raise InputError(f"{path}: not a pcap/pcapng capture ({msg})") from None
    lt = {12: 101}.get(r.datalink(), r.datalink())  # DLT_RAW -> LINKTYPE_RAW
    info.format = "libpcap"
    info.linktypes = [lt]
    datas: list[bytes] = []
    caps: list[int] = []
    wires: list[int] = []
    tss: list[int] = []
    frame = 1
    while True:
        try:
            hdr, data = r.next()
        except Exception as exc:
            info.problem(
                f"libpcap: {exc} after record {frame - 1 + len(datas)}; rest of file ignored "
                "(how much libpcap did not read cannot be known)"
            )
            break
        if hdr is None:
            break
        sec, usec = hdr.getts()
        datas.append(data)
        caps.append(hdr.getcaplen())
        wires.append(hdr.getlen())
        tss.append(sec * 1_000_000_000 + usec * 1000)
    if not datas:
        return
    buf = np.frombuffer(b"".join(datas), dtype=np.uint8)
    capa = np.array(caps, np.uint32)
    off = np.zeros(len(caps), np.int64)
    off[1:] = np.cumsum(capa[:-1], dtype=np.int64)
    k = len(caps)
    info.records += k
    yield Batch(
        buf,
        off,
        capa,
        np.array(wires, np.uint32),
        np.array(tss, np.int64),
        np.zeros(k, np.uint16),
        np.full(k, lt, np.uint16),
        frame,
    )


__all__ = ["Batch", "Records", "ReadInfo", "iter_batches", "linktype_name", "CHUNK", "MAX_CAPLEN"]
