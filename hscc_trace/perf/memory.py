"""Giving memory back: ``analyze`` frees a batch of flows' tables before it builds the next, and
with glibc freed blocks stay resident until trimmed. The adapter to glibc's and the kernel's
public calls (malloc_trim(3), madvise(2); elsewhere each does nothing), run in a helper thread
where the caller need not wait (:func:`in_background`). Changes no value or result; measured in
docs/performance.md, "Memory of analyze".
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
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
_POOL: list[ThreadPoolExecutor] = []
_POOL_LOCK = threading.Lock()


def _run(fn: Callable[..., Any], args: tuple[Any, ...], keep: Any) -> None:
    fn(*args)  # (a failure is advice lost: its future keeps it, the thread lives on)


def in_background(fn: Callable[..., Any], *args: Any, keep: Any = None) -> None:
    """Run ``fn(*args)`` (:func:`trim`, :func:`dontneed_all`: advice, never a value) in the memory
    thread, after the calls queued before it. ``args`` and ``keep`` stay referenced until it has
    run: give as ``keep`` the arrays whose pages are given back (not freed and reused before)."""
    if not _POOL:
        with _POOL_LOCK:
            if not _POOL:
                _POOL.append(ThreadPoolExecutor(1, thread_name_prefix="hscc-memory"))
    _POOL[0].submit(_run, fn, args, keep)


def wait_background() -> None:
    """Wait until the memory thread has run every call queued so far (none: returns at once)."""
    if _POOL:
        _POOL[0].submit(int).result()
