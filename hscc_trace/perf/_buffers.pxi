# Binding numpy arrays (or any buffer) to C pointers, with every check a kernel needs.
#
# Included into hscc_trace/_kernels.pyx. A kernel's Python-facing function binds each array it
# uses with a _Bound (the buffer protocol: PyObject_GetBuffer), checking dtype kind and item
# size, dimensions, contiguity, writability and length, and raises KernelArgumentError before
# anything is written when one does not match. Typed memoryviews would check the same, but
# their support code is ~22 000 lines of C that take seconds to compile at every install; the
# kernels need contiguous arrays only (2-D: contiguous rows at any row stride).

from cpython.buffer cimport PyBUF_FORMAT, PyBUF_STRIDES, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer


class KernelArgumentError(TypeError):
    """An argument of a compiled kernel does not have the dtype, shape, layout or length the
    kernel needs. Raised before the kernel changes anything (hscc_trace.perf.jit then runs the
    numba function instead)."""


cdef enum:
    MAX_VIEWS = 48  # arrays one kernel call binds (the flow kernel: 44)

# dtype kinds, as numpy's dtype.kind
cdef enum:
    K_INT = 105  # 'i'
    K_UINT = 117  # 'u'
    K_BOOL = 98  # 'b'
    K_FLOAT = 102  # 'f'

cdef char _ZERO[8]  # the pointer bound to an empty buffer that has none (never dereferenced)


cdef bint _little_endian() noexcept:
    cdef uint16_t one = 1
    return (<uint8_t*> &one)[0] == 1


cdef bint _LITTLE_ENDIAN = _little_endian()


cdef int _kind_of(const char* fmt) noexcept:
    """The dtype kind of a single-item struct format string in native byte order, or 0."""
    cdef char c
    if fmt == NULL:
        return K_UINT  # "unsigned bytes" (PEP 3118: no format means 'B')
    if fmt[0] == b'@' or fmt[0] == b'=':
        fmt += 1
    elif fmt[0] == b'<' or fmt[0] == b'>' or fmt[0] == b'!':
        if (fmt[0] == b'<') != _LITTLE_ENDIAN:
            return 0
        fmt += 1
    if fmt[0] == 0 or fmt[1] != 0:
        return 0
    c = fmt[0]
    if c == b'b' or c == b'h' or c == b'i' or c == b'l' or c == b'q' or c == b'n':
        return K_INT
    if c == b'B' or c == b'H' or c == b'I' or c == b'L' or c == b'Q' or c == b'N':
        return K_UINT
    if c == b'?':
        return K_BOOL
    if c == b'e' or c == b'f' or c == b'd':
        return K_FLOAT
    return 0


cdef str _dtype_name(int kind, int size):
    if kind == K_BOOL:
        return "bool"
    return ("int" if kind == K_INT else "uint" if kind == K_UINT else "float") + str(8 * size)


cdef class _Bound:
    """The buffers bound for one kernel call; released when the call is done (or fails)."""

    cdef Py_buffer views[MAX_VIEWS]
    cdef int n
    #: shape of the array bound last: rows (1-D: its length), columns and row stride in items (2-D)
    cdef Py_ssize_t rows, cols, row_stride

    def __cinit__(self):
        self.n = 0

    def __dealloc__(self):
        cdef int i
        for i in range(self.n):
            PyBuffer_Release(&self.views[i])

    cdef void* array(self, object a, str what, int kind, int size, bint writable, int ndim) except NULL:
        """Bind array ``a`` (``what`` names it in errors): dtype of ``kind`` and item ``size``
        bytes, ``ndim`` dimensions, contiguous (2-D: each row contiguous), writable if asked."""
        cdef Py_buffer* v
        cdef Py_ssize_t inner
        if self.n >= MAX_VIEWS:
            raise RuntimeError("too many arrays bound for one kernel call")
        v = &self.views[self.n]
        try:
            PyObject_GetBuffer(a, v, PyBUF_FORMAT | PyBUF_STRIDES | (PyBUF_WRITABLE if writable else 0))
        except Exception as exc:  # not a buffer, read-only, …
            raise KernelArgumentError(f"{what}: {exc}") from None
        self.n += 1
        if _kind_of(v.format) != kind or v.itemsize != size:
            fmt = (<bytes> v.format).decode("ascii", "replace") if v.format != NULL else "B"
            raise KernelArgumentError(
                f"{what}: needs {_dtype_name(kind, size)}, not format {fmt!r} of {v.itemsize}-byte items"
            )
        if v.ndim != ndim:
            raise KernelArgumentError(f"{what}: needs {ndim} dimension(s), not {v.ndim}")
        if ndim == 1:
            self.rows, self.cols, self.row_stride = v.shape[0], 1, 1
            if v.shape[0] > 1 and v.strides[0] != size:
                raise KernelArgumentError(f"{what}: not contiguous")
        else:
            self.rows, self.cols = v.shape[0], v.shape[1]
            inner = v.strides[1]
            if (self.cols > 1 and inner != size) or v.strides[0] % size != 0 or v.strides[0] < 0:
                raise KernelArgumentError(f"{what}: rows not contiguous")
            self.row_stride = v.strides[0] // size
            if self.rows > 1 and self.row_stride < self.cols:
                raise KernelArgumentError(f"{what}: rows overlap")
        if v.buf == NULL:
            return <void*> _ZERO
        return v.buf

    cdef void* field(self, object rec, str name, int kind, int size, bint writable, int ndim=1) except NULL:
        """Bind ``rec.name`` (a record's field) as :meth:`array` does."""
        try:
            a = getattr(rec, name)
        except AttributeError:
            raise KernelArgumentError(f"{type(rec).__name__} has no field {name!r}") from None
        return self.array(a, f"{type(rec).__name__}.{name}", kind, size, writable, ndim)

    cdef Py_ssize_t at_least(self, str what, Py_ssize_t need) except -1:
        """Check that the array bound last has at least ``need`` rows; return its rows."""
        if self.rows < need:
            raise KernelArgumentError(f"{what}: {self.rows} rows, needs {need}")
        return self.rows
