"""Process-level memory settings of hscc-trace (switched on by :func:`hscc_trace.perf.activate`).

**Reading a capture without transparent huge pages** (:func:`small_pages`). numpy asks the
kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on every array of 4 MB or more.
On the virtual machines this project is measured on, memory touched for the first time is far
more expensive in 2 MB pages than in 4 kB pages, and huge pages make the load arena's sparsely
written reservations resident 2 MB at a time; the compiled replay loops, on the other hand, run
faster over arrays in huge pages (the measurements: docs/performance.md, "Process settings").
So the advice is switched off only while a capture is read (``flows.load``) and restored
afterwards; numpy's own switch ``NUMPY_MADVISE_HUGEPAGE`` is left to the user. Only the
kernel's page-size advice changes; no value, no array and no result does.

**No full garbage collection at interpreter exit.** An analysis process holds several hundred
thousand Python objects that live until the end — numba's compiler and typing tables, numpy,
polars, llvmlite — and when the interpreter shuts down, CPython runs full cyclic collections
that walk all of them once more before the process ends (a noticeable part of a short run:
docs/performance.md, "Process settings"). An :mod:`atexit` hook calls :func:`gc.freeze`
instead, so those final collections find nothing to walk; the memory goes back to the
operating system with the process, as it would anyway.

Why this is safe: the hook runs only when the interpreter is already exiting (after the main
program and after the atexit hooks registered later, e.g. by numba or polars), it frees nothing
and changes no object. The only difference is that objects in reference cycles that are still
uncollected at exit do not get their ``__del__`` run then — which CPython does not promise
either ("It is not guaranteed that ``__del__()`` methods are called for objects that still
exist when the interpreter exits", Python reference, Data model §3.3.1); standard streams are
flushed by the interpreter regardless. Processes that end with ``os._exit`` (the CLI's fast
paths) never get here.

Override: set the environment variable ``HSCC_TRACE_EXIT_GC=1`` to keep CPython's normal exit
collections (read when the CLI starts).
"""

from __future__ import annotations

import atexit
import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager

#: environment variable: "1" keeps the normal full collections at interpreter exit
EXIT_GC_ENV = "HSCC_TRACE_EXIT_GC"


@contextmanager
def small_pages() -> Iterator[None]:
    """numpy allocates without huge-page advice inside this block (restored on exit; a no-op when
    this numpy has no such switch). Not thread-safe against another thread toggling it.

    The adapter around numpy's private ``_set_madvise_hugepage`` (its only public control is the
    ``NUMPY_MADVISE_HUGEPAGE`` environment variable, read once at import): this is its only use,
    and it goes when numpy offers a public runtime switch. Tested in tests/test_events_source.py."""
    try:
        from numpy._core.multiarray import _set_madvise_hugepage as switch  # type: ignore[attr-defined]
    except ImportError:  # (older or newer numpy without the private switch: nothing to do)
        yield
        return
    before = switch(False)
    try:
        yield
    finally:
        switch(before)


def _freeze_at_exit() -> None:
    gc.freeze()


def freeze_at_exit() -> None:
    """Register the exit-time :func:`gc.freeze` (above) unless ``HSCC_TRACE_EXIT_GC=1``. Called
    by :func:`hscc_trace.perf.activate` (the CLI entry point), never on import."""
    if os.environ.get(EXIT_GC_ENV, "").strip() != "1":
        atexit.register(_freeze_at_exit)
