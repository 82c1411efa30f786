"""``--filter``: BPF expressions compiled by libpcap, executed on our record batches.

libpcap (through pcapy-ng's ``compile``) turns the tcpdump-syntax expression into classic BPF
instructions for the record's link type; :func:`_run` executes them with the semantics of
libpcap's ``bpf_filter()`` (``pcap/bpf.h``: 32-bit accumulator A, index register X, 16 scratch
words; a load outside the captured bytes rejects the packet; ``len`` is the wire length). Running
the program ourselves keeps frame numbers, wire lengths and nanosecond timestamps that the
batch read path of libpcap does not return (see :mod:`hscc_trace.capture.reader`), and lets one
filter apply to a pcapng file whose interfaces have different link types (one program per type).
"""

from __future__ import annotations

import numpy as np

from hscc_trace.errors import InputError
from hscc_trace.perf.jit import njit

# LINKTYPE_* (file) -> DLT_* (what pcap_compile expects) where they differ on Linux
_LINKTYPE_TO_DLT = {101: 12}


@njit(cache=True)
def _ld(buf, p, end, k, size):
    """Load `size` bytes big-endian at packet offset k; returns (value, ok)."""
    if k < 0 or p + k + size > end:
        return np.uint32(0), False
    v = np.uint32(0)
    for j in range(size):
        v = (v << np.uint32(8)) | np.uint32(buf[p + k + j])
    return v, True


@njit(work=lambda a: len(a[2]), cost=(1.07, 2.83e-05), cache=True, nogil=True)
def _run(prog, rec, sel, out):
    """Run the BPF program ``prog`` (n×4 int64: code, jt, jf, k) on records ``sel`` of ``rec``
    (:class:`~hscc_trace.capture.reader.Records`); out[i] = accept.

    Arithmetic is on 32 bits, wrapping, as libpcap's ``bpf_filter`` does (u_int32 A and X)."""
    buf, off, cap, wire = rec.buf, rec.off, rec.cap, rec.wire
    nins = prog.shape[0]
    mem = np.zeros(16, np.uint32)
    for idx in range(len(sel)):
        i = sel[idx]
        p = off[i]
        end = p + cap[i]
        A = np.uint32(0)
        X = np.uint32(0)
        pc = 0
        res = False
        while pc < nins:
            code = prog[pc, 0]
            jt = prog[pc, 1]
            jf = prog[pc, 2]
            k = np.uint32(prog[pc, 3] & 0xFFFFFFFF)
            cls = code & 0x07
            pc += 1
            if cls == 0x00 or cls == 0x01:  # LD / LDX
                mode = code & 0xE0
                size = code & 0x18
                nb = 4 if size == 0x00 else (2 if size == 0x08 else 1)
                ok = True
                if mode == 0x00:
                    v = k
                elif mode == 0x20:
                    v, ok = _ld(buf, p, end, np.int64(k), nb)
                elif mode == 0x40:
                    v, ok = _ld(buf, p, end, np.int64(X) + np.int64(k), nb)
                elif mode == 0x60:
                    v = mem[k & 15]
                elif mode == 0x80:
                    v = np.uint32(wire[i])
                elif mode == 0xA0:  # MSH: X = 4 * (P[k] & 0xf)
                    b, ok = _ld(buf, p, end, np.int64(k), 1)
                    v = (b & np.uint32(0xF)) << np.uint32(2)
                else:
                    ok = False
                    v = np.uint32(0)
                if not ok:
                    res = False
                    break
                if cls == 0x00:
                    A = v
                else:
                    X = v
            elif cls == 0x02:
                mem[k & 15] = A
            elif cls == 0x03:
                mem[k & 15] = X
            elif cls == 0x04:  # ALU
                op = code & 0xF0
                src = X if (code & 0x08) else k
                if op == 0x00:
                    A = np.uint32(A + src)
                elif op == 0x10:
                    A = np.uint32(A - src)
                elif op == 0x20:
                    A = np.uint32(A * src)
                elif op == 0x30:
                    if src == 0:
                        res = False
                        break
                    A = np.uint32(A // src)
                elif op == 0x90:
                    if src == 0:
                        res = False
                        break
                    A = np.uint32(A % src)
                elif op == 0x40:
                    A = np.uint32(A | src)
                elif op == 0x50:
                    A = np.uint32(A & src)
                elif op == 0xA0:
                    A = np.uint32(A ^ src)
                elif op == 0x60:
                    A = np.uint32(A << (src & np.uint32(31))) if src < 32 else np.uint32(0)
                elif op == 0x70:
                    A = np.uint32(A >> (src & np.uint32(31))) if src < 32 else np.uint32(0)
                elif op == 0x80:
                    A = np.uint32(np.uint32(0) - A)
            elif cls == 0x05:  # JMP
                op = code & 0xF0
                src = X if (code & 0x08) else k
                if op == 0x00:
                    pc += np.int64(k)
                elif op == 0x10:
                    pc += jt if A == src else jf
                elif op == 0x20:
                    pc += jt if A > src else jf
                elif op == 0x30:
                    pc += jt if A >= src else jf
                elif op == 0x40:
                    pc += jt if (A & src) != 0 else jf
            elif cls == 0x06:  # RET
                rv = A if (code & 0x18) == 0x10 else k
                res = rv != 0
                break
            else:  # MISC
                if (code & 0xF8) == 0x00:
                    X = A
                else:
                    A = X
        out[i] = res


class BpfFilter:
    """A tcpdump-syntax filter, compiled once per link type on first use."""

    def __init__(self, expr: str):
        self.expr = expr
        self._progs: dict[int, np.ndarray] = {}
        self._compile(1)  # validate the expression up front (Ethernet), one-line error if bad

    def _compile(self, linktype: int) -> np.ndarray:
        prog = self._progs.get(linktype)
        if prog is None:
            import pcapy

            try:
                bp = pcapy.compile(_LINKTYPE_TO_DLT.get(linktype, linktype), 262144, self.expr, 1, 0xFFFFFFFF)
            except Exception as exc:  # pcapy.PcapError
                raise InputError(f"invalid --filter {self.expr!r}: {exc}") from None
            prog = np.array(bp.get_bpf(), dtype=np.int64).reshape(-1, 4)
            self._progs[linktype] = prog
        return prog

    def match(self, batch) -> np.ndarray:
        """Boolean mask of the batch's records that the filter accepts."""
        out = np.zeros(len(batch), np.bool_)
        lts = np.unique(batch.linktype)
        rec = batch.records()
        for lt in lts.tolist():
            sel = np.flatnonzero(batch.linktype == lt) if len(lts) > 1 else np.arange(len(batch))
            _run(self._compile(int(lt)), rec, sel, out)
        return out
