"""Giving memory back, and the one process setting of hscc-trace kept for its measured effect.

``analyze`` frees a batch of flows' tables before it builds the next: the helpers below return
that memory to the system (:func:`trim`, :func:`dontneed`), in a helper thread where the caller
need not wait (:func:`in_background`). Nothing here changes a value or a result.

The other process tuning this module once did — transparent huge pages off while a capture is
read (numpy's private ``_set_madvise_hugepage``), a cyclic-GC threshold of 10 000, ``gc.freeze``
at exit, jemalloc's decay for polars (``_RJEM_MALLOC_CONF``) — was measured with and without,
interleaved, and none reached 10 % of CPU time or peak memory: removed (docs/performance.md,
"Process settings").
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterable
from typing import Any

# --- giving memory back (glibc) -----------------------------------------------------------------
# ``analyze`` frees a batch of flows' tables before it builds the next (hscc_trace.events
# .flow_event_batches): with glibc, freed blocks stay in its heaps (one per thread that
# allocated) and count as resident until trimmed. The helpers below are the adapter to
# glibc's and the kernel's public calls (malloc_trim(3), madvise(2)); elsewhere
# (another C library, another system) each does nothing. Measured on replica-5M: see
# docs/performance.md, "Memory of analyze".

#: madvise(2)'s advice number (Linux)
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
