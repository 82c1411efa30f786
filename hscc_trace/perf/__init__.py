"""Performance machinery: the kernel decorator (:mod:`.jit`) and its first-use rule
(:mod:`.firstuse`), the capture ``hscc-trace compile`` runs (:mod:`.warmup`), the cache folder
(:mod:`.cache`) and giving memory back (:mod:`.memory`). Importing it changes nothing in the
process; the CLI entry point calls :func:`activate`.
"""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """The cores this process may run on (its CPU affinity where the platform tells)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def activate() -> None:
    """The one process setting of the ``hscc-trace`` command: numba's cache in the user's cache
    folder (a ``NUMBA_CACHE_DIR`` the user set wins), before anything imports numba. No allocator,
    huge-page, thread-pool or GC tuning: none reached 10 % (docs/performance.md, "Process settings")."""
    from .cache import cache_root

    os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_root() / "numba"))
