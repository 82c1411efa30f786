"""Performance machinery, in one place: compiled kernels and process settings.

- :mod:`.jit` — ``njit``, the one decorator of a numba kernel;
- :mod:`.firstuse` — the kernels called from Python (reading, decoding, BPF, flow table,
  events, arena, replay, report) and the replay loops: interpreted while their work is small,
  compiled when it is large or when the cache holds them already (stamps);
- :mod:`.warmup` — the generated capture ``hscc-trace compile`` runs everything over;
- :mod:`.cache` — the one user cache folder of everything compiled;
- :mod:`.memory` — giving freed memory back (glibc's ``malloc_trim``, ``madvise``) in a helper
  thread.

Nothing here changes the process when imported. The CLI entry point calls :func:`activate`;
a notebook or script that imports the library keeps its interpreter as it was.
"""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """The cores this process may run on (its CPU affinity where the platform tells, else the
    machine's count): what decides whether a helper thread can overlap the calling thread."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def activate() -> None:
    """The process setting of one run of the ``hscc-trace`` command (never called by the library):
    numba's cache of compiled kernels goes to the user's cache folder, never beside the installed
    modules (:mod:`.cache`; ``NUMBA_CACHE_DIR`` as the user set it wins). Set here, before
    anything imports numba, which reads it once.

    No allocator, huge-page, thread-pool or garbage-collector tuning: each was measured with and
    without, interleaved, below 10 % of CPU time and of peak memory (docs/performance.md,
    "Process settings").
    """
    from .cache import cache_root

    os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_root() / "numba"))
