# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# cython: embedsignature=False, binding=False
"""The compiled kernels of ``hscc-trace flows``: Cython twins of the numba kernels of
hscc_trace/capture/reader.py, decode.py, bpf.py and hscc_trace/flows/tracker.py.

One extension module (one compilation at ``pip install``, setup.py), built from the kernels of
each layer, which live beside that layer's Python modules and are included here:
capture/_reader.pxi, capture/_decode.pxi, capture/_bpf.pxi, flows/_tracker.pxi, with the
argument binding of perf/_buffers.pxi. hscc_trace.perf.jit calls these functions when the
module is built and current, the numba functions otherwise; both take the same records
(NamedTuples of numpy arrays) and give the same results (tests/test_kernels.py). Every function
releases the GIL while its kernel runs.
"""

from libc.stdint cimport INT64_MIN, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

cdef extern from *:
    """
    #ifndef HSCC_KERNELS_SOURCE_HASH
    #define HSCC_KERNELS_SOURCE_HASH ""
    #endif
    """
    const char* HSCC_KERNELS_SOURCE_HASH

#: hscc_trace.perf.jit.source_hash() of the sources this module was built from (setup.py)
SOURCE_HASH = (<bytes> HSCC_KERNELS_SOURCE_HASH).decode("ascii")

include "perf/_buffers.pxi"
include "capture/_reader.pxi"
include "capture/_decode.pxi"
include "capture/_bpf.pxi"
include "flows/_tracker.pxi"
