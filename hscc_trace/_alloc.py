"""Process-level memory management of hscc-trace (imported first by ``hscc_trace/__init__.py``).

**numpy without transparent huge pages.** numpy asks the kernel for transparent huge pages
(``madvise(MADV_HUGEPAGE)``) on every array of 4 MB or more. On the virtual machines this project
is measured on, memory touched for the first time is far more expensive in 2 MB pages than in
4 kB pages: filling a fresh 400 MB array cost 0.66–1.05 s of system time with huge pages,
and ``capture.load`` of replica-5M spent 0.54–0.87 s in the kernel with them against
0.31–0.36 s without (4 interleaved pairs, 2026-11-22, THP in ``madvise`` mode, same number of
bytes touched). Huge pages also make sparsely written arrays resident 2 MB at a time (the
load arena reserves more than it writes). So ``NUMPY_MADVISE_HUGEPAGE=0`` is set in the
environment before numpy is imported — unless the variable is already set (``1`` restores
numpy's default), and without effect if numpy was imported before hscc_trace. Only the kernel's
page-size advice changes; no value, no array and no result does.

**No full garbage collection at interpreter exit.** An analysis process holds several hundred
thousand Python objects that live until the end — numba's compiler and typing tables, numpy,
polars, llvmlite — and when the interpreter shuts down, CPython runs full cyclic collections
that walk all of them once more before the process ends: ≈ 0.3 s of a 2 s run of
``benchmarks/hscc_events.py`` on replica-5M (measured 2026-11-22: 0.56–0.62 s from the end of
``main()`` to process exit, 0.23–0.30 s with this setting). An :mod:`atexit` hook calls
:func:`gc.freeze` instead, so those final collections find nothing to walk; the memory goes
back to the operating system with the process, as it would anyway.

Why this is safe: the hook runs only when the interpreter is already exiting (after the main
program and after the atexit hooks registered later, e.g. by numba or polars), it frees nothing
and changes no object. The only difference is that objects in reference cycles that are still
uncollected at exit do not get their ``__del__`` run then — which CPython does not promise
either ("It is not guaranteed that ``__del__()`` methods are called for objects that still
exist when the interpreter exits", Python reference, Data model §3.3.1); standard streams are
flushed by the interpreter regardless. Processes that end with ``os._exit`` (the CLI's fast
paths, pipeline workers) never get here.

Override: set the environment variable ``HSCC_TRACE_EXIT_GC=1`` to keep CPython's normal exit
collections (read when hscc_trace is first imported).
"""

from __future__ import annotations

import atexit
import gc
import os

#: environment variable: "1" keeps the normal full collections at interpreter exit
EXIT_GC_ENV = "HSCC_TRACE_EXIT_GC"
#: numpy's own switch (read when numpy is imported): "0" = no madvise(MADV_HUGEPAGE)
NUMPY_HUGEPAGE_ENV = "NUMPY_MADVISE_HUGEPAGE"

os.environ.setdefault(NUMPY_HUGEPAGE_ENV, "0")


def _freeze_at_exit() -> None:
    gc.freeze()


if os.environ.get(EXIT_GC_ENV, "").strip() != "1":
    atexit.register(_freeze_at_exit)
