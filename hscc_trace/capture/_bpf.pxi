# The BPF interpreter of hscc_trace/capture/bpf.py (_run), compiled.
#
# Included into hscc_trace/_kernels.pyx. Same arguments, same results as the numba function
# (the reference; tests/test_kernels.py compares the two). 32-bit wrapping arithmetic, as
# libpcap's bpf_filter().


cdef inline bint _ld(const uint8_t* buf, int64_t p, int64_t end, int64_t k, int size, uint32_t* v) noexcept nogil:
    """Load ``size`` bytes big-endian at packet offset k into v; False when out of the packet."""
    cdef int j
    cdef uint32_t x = 0
    if k < 0 or p + k + size > end:
        v[0] = 0
        return False
    for j in range(size):
        x = (x << 8) | <uint32_t> buf[p + k + j]
    v[0] = x
    return True


cdef void _bpf_run(
    const int64_t* prog, int64_t nins, int64_t pstride, RecIn* r, const int64_t* sel, int64_t nsel, uint8_t* out,
    int64_t nout
) noexcept nogil:
    cdef uint32_t mem[16]
    cdef const uint8_t* buf = r.buf
    cdef int64_t idx, i, p, end, pc, code, jt, jf, cls, mode, size, op
    cdef uint32_t A, X, k, v, src, b, rv
    cdef int nb
    cdef bint res, ok
    for idx in range(16):
        mem[idx] = 0
    for idx in range(nsel):
        i = sel[idx]
        if i < 0 or i >= r.n or i >= nout:  # (checked before the call, as below)
            continue
        p = r.off[i]
        end = p + r.cap[i]
        if p < 0 or end > r.blen:  # (checked before the call; again here, should out alias an input)
            out[i] = False
            continue
        A = 0
        X = 0
        pc = 0
        res = False
        while pc < nins:
            if pc < 0:  # (a jump backwards: libpcap's compiler never emits one)
                res = False
                break
            code = prog[pc * pstride]
            jt = prog[pc * pstride + 1]
            jf = prog[pc * pstride + 2]
            k = <uint32_t> (prog[pc * pstride + 3] & <int64_t> 0xFFFFFFFF)
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
                    ok = _ld(buf, p, end, <int64_t> k, nb, &v)
                elif mode == 0x40:
                    ok = _ld(buf, p, end, <int64_t> X + <int64_t> k, nb, &v)
                elif mode == 0x60:
                    v = mem[k & 15]
                elif mode == 0x80:
                    v = r.wire[i]
                elif mode == 0xA0:  # MSH: X = 4 * (P[k] & 0xf)
                    ok = _ld(buf, p, end, <int64_t> k, 1, &b)
                    v = (b & 0xF) << 2
                else:
                    ok = False
                    v = 0
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
                    A = A + src
                elif op == 0x10:
                    A = A - src
                elif op == 0x20:
                    A = A * src
                elif op == 0x30:
                    if src == 0:
                        res = False
                        break
                    A = A // src
                elif op == 0x90:
                    if src == 0:
                        res = False
                        break
                    A = A % src
                elif op == 0x40:
                    A = A | src
                elif op == 0x50:
                    A = A & src
                elif op == 0xA0:
                    A = A ^ src
                elif op == 0x60:
                    A = (A << (src & 31)) if src < 32 else 0
                elif op == 0x70:
                    A = (A >> (src & 31)) if src < 32 else 0
                elif op == 0x80:
                    A = 0 - A
            elif cls == 0x05:  # JMP
                op = code & 0xF0
                src = X if (code & 0x08) else k
                if op == 0x00:
                    pc += <int64_t> k
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


def bpf_run(object prog, object rec, object sel, object out):
    """bpf._run: out[i] = whether the program accepts record i, for i in sel."""
    cdef _Bound b = _Bound()
    cdef RecIn r
    cdef const int64_t* pp = <const int64_t*> b.array(prog, "prog", K_INT, 8, False, 2)
    cdef int64_t nins = b.rows, pstride = b.row_stride, nsel, nout, i, bad = -1
    if b.cols != 4:
        raise KernelArgumentError(f"prog: {b.cols} columns, needs 4 (code, jt, jf, k)")
    _bind_records(b, rec, &r, False)
    cdef const int64_t* sp = <const int64_t*> b.array(sel, "sel", K_INT, 8, False, 1)
    nsel = b.rows
    cdef uint8_t* op = <uint8_t*> b.array(out, "out", K_BOOL, 1, True, 1)
    nout = b.rows
    for i in range(nsel):
        if sp[i] < 0 or sp[i] >= r.n or sp[i] >= nout:
            bad = i
            break
    if bad >= 0:
        raise KernelArgumentError(f"sel[{bad}] = {sp[bad]} is not a record of rec and out")
    with nogil:
        _bpf_run(pp, nins, pstride, &r, sp, nsel, op, nout)
