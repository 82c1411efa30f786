"""Giving memory back: ``analyze`` frees a batch of flows' tables before it builds the next, and
with glibc freed blocks stay resident until trimmed. The adapter to glibc's and the kernel's
public calls (malloc_trim(3), madvise(2); elsewhere each does nothing), run in a helper thread
where the caller need not wait (:func:`in_background`). Changes no value or result; measured in
docs/performance.md, "Memory of analyze".
"""

from __future__ import annotations

import functools
import os
import queue
import threading
from collections.abc import Callable, Iterable
from typing import Any

_MADV_DONTNEED = 4  # madvise(2)'s advice number (Linux)


@functools.cache
def _libc() -> Any:
    """glibc through ctypes, or None (not Linux/glibc)."""
    try:
        import ctypes
        import ctypes.util

        name = ctypes.util.find_library("c")
        if name and hasattr(os, "confstr") and "glibc" in (os.confstr("CS_GNU_LIBC_VERSION") or ""):
            lib = ctypes.CDLL(name, use_errno=True)
            lib.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            lib.malloc_trim.argtypes = [ctypes.c_size_t]
            return lib
    except (OSError, ValueError, AttributeError):
        pass
    return None


def trim() -> None:
    """Return the free memory of the C heaps to the system (``malloc_trim(0)``; a few ms)."""
    lib = _libc()
    if lib is not None:
        lib.malloc_trim(0)


def dontneed(address: int, length: int) -> bool:
    """``madvise(MADV_DONTNEED)`` of the page-aligned ``[address, address + length)``: they read as
    zeros if touched again, so only for memory never read again. False when not done."""
    lib = _libc()
    if lib is None or length <= 0:
        return False
    return bool(lib.madvise(int(address), int(length), _MADV_DONTNEED) == 0)


def dontneed_all(ranges: Iterable[tuple[int, int]]) -> int:
    """:func:`dontneed` of every ``(address, length)`` range; the number done."""
    return sum(dontneed(a, n) for a, n in ranges)


# --- the memory thread: the calls are system time and release the GIL (ctypes) ---------------------

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
    """Run ``fn(*args)`` (:func:`trim`, :func:`dontneed_all`: advice, never a value) in the memory
    thread, after the calls queued before it. ``args`` and ``keep`` stay referenced until it has
    run: give as ``keep`` the arrays whose pages are given back (not freed and reused before)."""
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
