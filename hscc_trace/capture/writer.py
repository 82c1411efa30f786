"""Writing a capture again as pcapng, with packet comments (``hscc-trace annotate``).

The file format is the pcapng draft, draft-ietf-opsawg-pcapng: a Section Header Block (SHB,
§4.1), Interface Description Blocks (IDB, §4.2), Enhanced Packet Blocks (EPB, §4.3). A comment
is the ``opt_comment`` option (code 1, §3.5: UTF-8 text, not NUL-terminated), which a packet
block may carry any number of times; Wireshark shows each as ``frame.comment``.

What is written, per input format:

* **pcapng**: every block is copied byte for byte — every section, interface, packet, name
  resolution, statistics, decryption-secrets and custom block, with their options and existing
  comments — except that a packet block to be commented (an EPB, or the obsolete Packet Block,
  type 2, which has options too) gets its new ``opt_comment`` options after the options it
  already has, and each SHB's section length is set to −1 ("not specified", §4.1) when it
  was given: the blocks of the section grow. A Simple Packet Block (type 3) has no options: a
  comment meant for one is not written, and counted.
* **pcap** (µs or ns, either byte order, Kuznetzov's "modified" records) and whatever libpcap
  alone reads: one SHB, one IDB with the file's link type and snapshot length and
  ``if_tsresol`` = 6 (µs) or 9 (ns, for a nanosecond pcap), then one EPB per record with the
  record's captured bytes, captured length, original length and timestamp, exactly. Dropped,
  and counted: the extra header fields of Kuznetzov records (interface index, protocol, packet
  type) and the FCS length a pcap header may carry in its link-type field (pcapng's
  ``if_fcslen`` has no agreed unit, and Wireshark reads neither).

Records are numbered as :mod:`hscc_trace.capture.reader` numbers them — from 1, every EPB,
SPB and obsolete Packet Block of every section in file order — which is Wireshark's
``frame.number``, so a comment for frame ``n`` lands on the frame Wireshark calls ``n``. The
writer stops where the reader stops (a malformed block, a packet on an undeclared interface, a
file cut short): what the reader did not read is not copied, and the reason is returned.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Protocol

from hscc_trace.errors import InputError

from .reader import PCAP_MAGICS, PCAPNG_SHB, ReadInfo, _open, iter_batches

#: block types (draft-ietf-opsawg-pcapng §4, §10.1)
SHB, IDB, PB, SPB, EPB = PCAPNG_SHB, 1, 2, 3, 6
#: option codes (§3.5, §4.1, §4.2)
OPT_ENDOFOPT, OPT_COMMENT, SHB_USERAPPL, IF_TSRESOL = 0, 1, 4, 9
#: the largest block the reader accepts (larger: the rest of the file is not read)
MAX_BLOCK = 16 * 1024 * 1024
#: bytes read from the input at a time
CHUNK = 4 * 1024 * 1024


class Output(Protocol):
    """Where the pcapng goes: anything with a binary ``write`` (a file, a gzip file, stdout's buffer)."""

    def write(self, data: Any, /) -> Any: ...


@dataclass
class Written:
    """What :func:`write_commented` wrote."""

    format: str = ""  # the input's format, as the reader names it ("pcap", "pcapng.gz" …)
    records: int = 0  # packet records written
    comments: int = 0  # opt_comment options added
    commented: int = 0  # records that got at least one
    kept_comments: int = 0  # comments the input's packet blocks already had (pcapng), kept
    tsresol: int | None = None  # if_tsresol written (pcap input): 6 or 9
    #: what was not carried over: reason -> count
    dropped: dict[str, int] = field(default_factory=dict)
    #: the input's problems (a file cut short …): the reader's own messages, reason -> count
    problems: dict[str, int] = field(default_factory=dict)
    #: comments for frames the input does not have (frame number -> comments)
    unplaced: dict[int, int] = field(default_factory=dict)

    def drop(self, reason: str, n: int = 1) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + n


def _option(code: int, value: bytes, order: str) -> bytes:
    pad = (-len(value)) & 3
    return struct.pack(order + "HH", code, len(value)) + value + b"\0" * pad


def comment_bytes(text: str) -> bytes:
    """A comment as an option value: UTF-8 (lone surrogates as U+FFFD), NULs removed, at most
    65535 bytes (an option's length is 16 bits), cut at a character boundary."""
    b = text.replace("\0", "").encode("utf-8", "replace")
    if len(b) > 0xFFFF:
        b = b[:0xFFFF].decode("utf-8", "ignore").encode("utf-8")
    return b


def _comment_options(texts: Sequence[str], order: str) -> bytes:
    return b"".join(_option(OPT_COMMENT, comment_bytes(t), order) for t in texts)


def write_commented(
    path: str, out: Output, comments: Mapping[int, Sequence[str]], *, userappl: str | None = None
) -> Written:
    """Write the capture at ``path`` (pcap, pcapng, gzip'ed or not; read twice is fine: not a
    pipe) to the binary stream ``out`` as pcapng, with ``comments[n]`` as packet comments of
    frame ``n`` (1-based, Wireshark's numbering). ``userappl``: the ``shb_userappl`` of the
    section written for a pcap input. Raises :class:`InputError` for a file that is not a
    capture, as the reader does."""
    f, _gz = _open(path)
    try:
        head = f.read(4)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None
    finally:
        f.close()
    w = Written()
    magic_le = int.from_bytes(head[:4], "little") if len(head) == 4 else None
    if magic_le == PCAPNG_SHB:
        _copy_pcapng(path, out, comments, w)
    else:
        _convert(path, out, comments, w, userappl)
    have = w.records
    for n, texts in comments.items():
        if not 1 <= n <= have and texts:
            w.unplaced[n] = len(texts)
    return w


# --- pcap (and libpcap's formats) -> pcapng -------------------------------------------------


def _shb(userappl: str | None) -> bytes:
    opts = b""
    if userappl:
        opts = _option(SHB_USERAPPL, comment_bytes(userappl), "<") + b"\0\0\0\0"
    blen = 28 + len(opts)
    # byte-order magic, version 1.0, section length -1 (not specified)
    return struct.pack("<IIIHHq", SHB, blen, 0x1A2B3C4D, 1, 0, -1) + opts + struct.pack("<I", blen)


def _idb(linktype: int, snaplen: int, tsresol: int) -> bytes:
    opts = _option(IF_TSRESOL, bytes([tsresol]), "<") + b"\0\0\0\0"
    blen = 20 + len(opts)
    return struct.pack("<IIHHI", IDB, blen, linktype, 0, snaplen) + opts + struct.pack("<I", blen)


def _pcap_header(path: str) -> bytes:
    f, _gz = _open(path)
    try:
        return f.read(24)
    except (OSError, EOFError, zlib.error):
        return b""
    finally:
        f.close()


def _convert(path: str, out: Output, comments: Mapping[int, Sequence[str]], w: Written, userappl: str | None) -> None:
    info = ReadInfo()
    head = _pcap_header(path)
    network = 0
    modified = False
    if len(head) >= 24:
        for order in ("<", ">"):
            magic = struct.unpack(order + "I", head[:4])[0]
            if magic in PCAP_MAGICS:
                network = struct.unpack(order + "I", head[20:24])[0]
                modified = PCAP_MAGICS[magic][0] == "pcap-modified"
                break
    started = False

    def start() -> None:
        nonlocal started
        started = True
        w.format = info.format
        nsec = info.format.startswith("pcap-ns")
        w.tsresol = 9 if nsec else 6
        lt = info.linktypes[0] if info.linktypes else 1
        snap = info.snaplen if info.snaplen is not None else 0
        out.write(_shb(userappl) + _idb(lt & 0xFFFF, min(max(snap, 0), 0xFFFFFFFF), w.tsresol))

    frame = 0
    for batch in iter_batches(path, info):
        if not started:
            start()
        mv = batch.buf.data  # (a memoryview of the read buffer: records are sliced, not copied)
        offs, caps, wires, tss = (a.tolist() for a in (batch.off, batch.cap, batch.wire, batch.ts_ns))
        div = 1 if w.tsresol == 9 else 1000
        parts: list[bytes | memoryview] = []
        for o, c, wl, t in zip(offs, caps, wires, tss):
            frame += 1
            ts = t // div
            texts = comments.get(frame)
            opts = b""
            if texts:
                opts = _comment_options(texts, "<") + b"\0\0\0\0"
                w.comments += len(texts)
                w.commented += 1
            pad = (-c) & 3
            blen = 32 + c + pad + len(opts)
            parts.append(struct.pack("<IIIIIII", EPB, blen, 0, (ts >> 32) & 0xFFFFFFFF, ts & 0xFFFFFFFF, c, wl))
            parts.append(mv[o : o + c])
            parts.append(b"\0" * pad + opts + struct.pack("<I", blen))
        out.write(b"".join(parts))
        w.records = frame
    if not started:
        start()
    w.problems.update(info.problems)
    if modified and frame:
        w.drop("Kuznetzov record header fields (interface index, protocol, packet type) not kept", frame)
    if network & 0xF0000000:
        w.drop("FCS length of the pcap header's link-type field not kept")


# --- pcapng -> pcapng ------------------------------------------------------------------------


class _Blocks:
    """The input's bytes, a chunk at a time: ``need(n)`` makes ``n`` bytes from ``pos`` on
    available (False at the end of the file or of what could be decompressed)."""

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.buf = bytearray()
        self.pos = 0
        self.eof = False
        self.problem: str | None = None

    def need(self, n: int) -> bool:
        while len(self.buf) - self.pos < n and not self.eof:
            if self.pos:
                del self.buf[: self.pos]
                self.pos = 0
            try:
                chunk = self.f.read(max(CHUNK, n - len(self.buf)))
            except EOFError:
                chunk, self.problem = b"", "compressed data ends early (gzip stream cut short)"
            except (OSError, zlib.error) as exc:
                chunk, self.problem = b"", f"corrupt compressed data ({exc})"
            if not chunk:
                self.eof = True
            self.buf += chunk
        return len(self.buf) - self.pos >= n

    @property
    def left(self) -> int:
        return len(self.buf) - self.pos


def _copy_pcapng(path: str, out: Output, comments: Mapping[int, Sequence[str]], w: Written) -> None:
    f, gz = _open(path)
    w.format = "pcapng" + (".gz" if gz else "")
    src = _Blocks(f)
    order = "<"
    nif = 0  # interfaces declared in the current section
    frame = 0
    seen_shb = False
    try:
        while src.need(8):
            p = src.pos
            buf = src.buf
            if buf[p : p + 4] == b"\x0a\x0d\x0d\x0a":
                if not src.need(12):
                    break
                buf, p = src.buf, src.pos
                bom = bytes(buf[p + 8 : p + 12])
                if bom == b"\x4d\x3c\x2b\x1a":
                    order = "<"
                elif bom == b"\x1a\x2b\x3c\x4d":
                    order = ">"
                elif not seen_shb:
                    raise InputError(f"{path}: pcapng section header has a bad byte-order magic")
                else:
                    w.problems[
                        f"pcapng: a section header with a bad byte-order magic after record {frame}; rest of file not copied"
                    ] = 1
                    return
            btype, blen = struct.unpack_from(order + "II", buf, p)
            if blen < 12 or blen % 4 or blen > MAX_BLOCK:
                if not seen_shb:
                    raise InputError(f"{path}: not a capture file (bad pcapng section header)")
                w.problems[f"pcapng: malformed block length {blen} after record {frame}; rest of file not copied"] = 1
                return
            if not src.need(blen):
                break
            buf, p = src.buf, src.pos
            blk = memoryview(buf)[p : p + blen]
            if btype == SHB:
                seen_shb = True
                nif = 0
                out.write(_shb_unsized(blk, order))
            elif btype == IDB:
                nif += 1
                out.write(blk)
            elif btype in (EPB, PB) and blen >= 32:
                ifid = struct.unpack_from(order + ("I" if btype == EPB else "H"), blk, 8)[0]
                cap = struct.unpack_from(order + "I", blk, 20)[0]
                if 28 + cap > blen - 4:
                    w.problems[f"pcapng: a malformed block after record {frame}; rest of file not copied"] = 1
                    return
                if ifid >= nif:
                    w.problems[
                        f"pcapng: a packet on an undeclared interface after record {frame}; rest of file not copied"
                    ] = 1
                    return
                frame += 1
                texts = comments.get(frame)
                out.write(_with_comments(blk, cap, texts, order, w) if texts else blk)
                if not texts:
                    w.kept_comments += _count_comments(blk, cap, order)
            elif btype == SPB and blen >= 16:
                if nif == 0:
                    w.problems[
                        f"pcapng: a packet on an undeclared interface after record {frame}; rest of file not copied"
                    ] = 1
                    return
                frame += 1
                if comments.get(frame):
                    w.drop("comments meant for Simple Packet Blocks, which have no options", len(comments[frame]))
                out.write(blk)
            else:
                out.write(blk)
            blk.release()
            src.pos += blen
        if src.problem:
            w.problems[f"gzip: {src.problem} after record {frame}"] = 1
        if src.left:
            w.problems[f"file ends inside a pcapng block after record {frame} ({src.left} bytes); not copied"] = 1
    finally:
        w.records = frame
        f.close()


def _shb_unsized(blk: memoryview, order: str) -> bytes | memoryview:
    """The SHB with its section length set to −1 (the blocks after it may grow)."""
    if len(blk) < 24 or struct.unpack_from(order + "q", blk, 16)[0] == -1:
        return blk
    b = bytearray(blk)
    struct.pack_into(order + "q", b, 16, -1)
    return bytes(b)


def _options_end(blk: memoryview, cap: int, order: str) -> tuple[int, int, bool]:
    """(offset where the block's options end — before its opt_endofopt —, comments among them,
    whether they were well formed) of an EPB or obsolete PB."""
    end = len(blk) - 4
    p = 28 + cap + ((-cap) & 3)
    keep = p
    n = 0
    ok = True
    while p + 4 <= end:
        code, olen = struct.unpack_from(order + "HH", blk, p)
        if code == OPT_ENDOFOPT:
            break
        nxt = p + 4 + olen + ((-olen) & 3)
        if nxt > end:
            ok = False
            break
        n += code == OPT_COMMENT
        p = keep = nxt
    return min(keep, end), n, ok


def _count_comments(blk: memoryview, cap: int, order: str) -> int:
    if len(blk) <= 32 + cap + ((-cap) & 3):
        return 0
    return _options_end(blk, cap, order)[1]


def _with_comments(blk: memoryview, cap: int, texts: Sequence[str], order: str, w: Written) -> bytes:
    keep, n, ok = _options_end(blk, cap, order)
    w.kept_comments += n
    if not ok:
        w.drop("packet blocks whose options were malformed: the malformed rest of their options not kept")
    opts = _comment_options(texts, order) + b"\0\0\0\0"
    blen = keep + len(opts) + 4
    w.comments += len(texts)
    w.commented += 1
    head = bytearray(blk[:keep])
    struct.pack_into(order + "I", head, 4, blen)
    return bytes(head) + opts + struct.pack(order + "I", blen)


__all__ = ["Output", "Written", "write_commented", "comment_bytes"]
