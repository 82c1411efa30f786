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
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

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


# --- giving memory back (glibc) -----------------------------------------------------------------
# ``analyze`` frees a batch of flows' tables before it builds the next (hscc_trace.events
# .flow_event_batches): with glibc, freed blocks stay in its heaps (one per thread that
# allocated) and count as resident until trimmed. The helpers below are the adapter to
# glibc's and the kernel's public calls (malloc_trim(3), mallopt(3), madvise(2)); elsewhere
# (another C library, another system) each does nothing. Measured on replica-5M: see
# docs/performance.md, "Memory of analyze".

#: glibc's mallopt parameter numbers (malloc.h)
_M_ARENA_MAX = -8
_MADV_DONTNEED = 4
_LIBC: list[Any] = []


def _libc() -> Any:
    """glibc through ctypes, or None (not Linux/glibc)."""
    if not _LIBC:
        lib = None
        try:
            import ctypes
            import ctypes.util

            name = ctypes.util.find_library("c")
            if name and hasattr(os, "confstr") and "glibc" in (os.confstr("CS_GNU_LIBC_VERSION") or ""):
                lib = ctypes.CDLL(name, use_errno=True)
                lib.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
                lib.malloc_trim.argtypes = [ctypes.c_size_t]
                lib.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        except (OSError, ValueError, AttributeError):
            lib = None
        _LIBC.append(lib)
    return _LIBC[0]


def trim() -> None:
    """Return the free memory of the C heaps to the system (``malloc_trim(0)``: whole free pages,
    also inside the heaps). Changes no value; a few milliseconds."""
    lib = _libc()
    if lib is not None:
        lib.malloc_trim(0)


def few_malloc_arenas(n: int = 2) -> None:
    """At most ``n`` glibc malloc arenas (``mallopt(M_ARENA_MAX)``; by default 8 per core): the
    threads that build event batches and replay flows allocate arrays that other threads free,
    and every arena keeps its own free blocks resident. A process setting: called by
    :func:`hscc_trace.perf.activate` for the commands that analyze. glibc's own
    ``MALLOC_ARENA_MAX`` environment variable, when set, wins."""
    lib = _libc()
    if lib is not None and "MALLOC_ARENA_MAX" not in os.environ:
        lib.mallopt(_M_ARENA_MAX, int(n))


#: jemalloc's options for polars' allocator (``opt.dirty_decay_ms``, ``opt.muzzy_decay_ms``):
#: freed pages go back to the system within 0.2 s instead of 10 s (:func:`polars_frees_at_once`)
POLARS_MALLOC_CONF = "dirty_decay_ms:200,muzzy_decay_ms:0"
#: the variable the jemalloc bundled in polars reads its options from, once, when polars' library
#: first allocates (jemalloc's ``MALLOC_CONF`` with the ``_rjem_`` prefix of Rust's
#: tikv-jemallocator); another allocator ignores it
_RJEM_MALLOC_CONF = "_RJEM_MALLOC_CONF"


def polars_frees_at_once() -> None:
    """polars' allocator returns freed memory to the system within 0.2 s (:data:`POLARS_MALLOC_CONF`)
    instead of keeping it resident for ten seconds (jemalloc's default decay): ``analyze`` builds
    and drops a batch of flows' polars tables every fraction of a second, and the copies of the
    previous batches otherwise stay in its peak. Not at once (a decay of 0):
    then every table, replay frame and report column polars makes is memory touched for the first
    time, paid in page faults (replica-5M ``analyze``: 0.43–0.46 M minor faults against
    0.34–0.38 M with 0.2 s, the same peak; docs/performance.md, "Process settings"). A process
    setting: effective only when set before polars is imported (the CLI entry point). The user's
    ``_RJEM_MALLOC_CONF``, when set, wins; another build of polars (another allocator) ignores it."""
    os.environ.setdefault(_RJEM_MALLOC_CONF, POLARS_MALLOC_CONF)


def dontneed(address: int, length: int) -> bool:
    """Drop the pages ``[address, address + length)`` (page-aligned) of this process's private
    memory (``madvise(MADV_DONTNEED)``): they read as zeros if ever touched again. Only for memory
    that is never read again (a packet arena's rows whose events are built). False when not done."""
    lib = _libc()
    if lib is None or length <= 0:
        return False
    return bool(lib.madvise(int(address), int(length), _MADV_DONTNEED) == 0)


def dontneed_all(ranges: Iterable[tuple[int, int]]) -> int:
    """:func:`dontneed` of every ``(address, length)`` range; the number done."""
    return sum(dontneed(a, n) for a, n in ranges)


# --- the memory thread ----------------------------------------------------------------------------
# Giving memory back is system time (madvise, malloc_trim: the kernel unmaps and frees the pages)
# that the caller need not wait for; the calls release the GIL (ctypes), so one helper thread
# does them while the caller goes on.

_QUEUE: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...], Any] | threading.Event] = queue.SimpleQueue()
_THREAD: list[threading.Thread] = []
_THREAD_LOCK = threading.Lock()


def _serve() -> None:
    while True:
        job = _QUEUE.get()
        if isinstance(job, threading.Event):
            job.set()
            continue
        fn, args, keep = job
        try:
            fn(*args)
        except BaseException:  # noqa: BLE001, S110 - giving memory back is advice: a failure changes no
            pass  # result, and the thread must live on (else the queued jobs' arrays are held for good)
        del job, fn, args, keep


def in_background(fn: Callable[..., Any], *args: Any, keep: Any = None) -> None:
    """Run ``fn(*args)`` in the memory thread (a daemon, started on first use), after the calls
    queued before it. Only for calls that give memory back (:func:`trim`, :func:`dontneed_all`):
    their effect is advice, never a value. ``args`` and ``keep`` stay referenced until ``fn`` has
    run — give as ``keep`` the arrays whose pages are given back, so that they cannot be freed
    (and their addresses reused) before."""
    if not _THREAD:
        with _THREAD_LOCK:
            if not _THREAD:
                t = threading.Thread(target=_serve, name="hscc-memory", daemon=True)
                t.start()
                _THREAD.append(t)
    _QUEUE.put((fn, args, keep))


def wait_background() -> None:
    """Wait until the memory thread has run every call queued so far (none: returns at once)."""
    if _THREAD:
        done = threading.Event()
        _QUEUE.put(done)
        done.wait()
