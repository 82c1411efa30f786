"""Performance machinery, in one place: compiled kernels and process settings.

- :mod:`.jit` — ``njit``, the one decorator of a numba kernel;
- :mod:`.firstuse` — the kernels called from Python (reading, decoding, BPF, flow table,
  events, arena, replay, report) and the replay loops: interpreted while their work is small,
  compiled when it is large or when the cache holds them already (stamps);
- :mod:`.warmup` — the generated capture ``hscc-trace compile`` runs everything over;
- :mod:`.cache` — the one user cache folder of everything compiled;
- :mod:`.memory` — huge-page advice off while a capture is read, ``gc.freeze`` at exit, and
  giving freed memory back (glibc: two malloc arenas, ``malloc_trim``, ``madvise``; polars' jemalloc:
  a short decay delay).

Nothing here changes the process when imported. The CLI entry point calls :func:`activate`;
a notebook or script that imports the library keeps its interpreter as it was.
"""

from __future__ import annotations

import os

#: net allocations between two collections of the youngest generation, per command (Python's
#: default is 700): see :func:`activate`
GC_THRESHOLD = 10_000
GC_THRESHOLD_FLOWS = 100_000


def usable_cpus() -> int:
    """The cores this process may run on (its CPU affinity where the platform tells, else the
    machine's count): what decides whether a helper thread can overlap the calling thread."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def activate(*, flows_only: bool = False) -> None:
    """Process settings for one run of the ``hscc-trace`` command (never called by the library).

    - numba's cache of compiled kernels goes to the user's cache folder, never beside the
      installed modules (:mod:`.cache`; ``NUMBA_CACHE_DIR`` as the user set it wins). Set here,
      before anything imports numba, which reads it once.
    - No full garbage collection at interpreter exit (:func:`.memory.freeze_at_exit`; override
      with ``HSCC_TRACE_EXIT_GC=1``).
    - Except for ``flows_only``: at most two glibc malloc arenas (:func:`.memory.few_malloc_arenas`),
      and polars' allocator (jemalloc) gives freed pages back within 0.2 s
      (:func:`.memory.polars_frees_at_once`).
    - The cyclic garbage collector runs after :data:`GC_THRESHOLD` net allocations (``flows_only``:
      :data:`GC_THRESHOLD_FLOWS`) instead of Python's 700. Importing numpy, polars and numba
      creates hundreds of thousands of objects, and ``analyze`` creates many small ones per flow
      (report traces, JSON entries): at 700 a replica-5M ``analyze`` ran ≈ 325 collections, 0.2–0.9 s
      of the calling thread; at 10 000, 18–26 collections and 0.08–0.14 s, the peak memory within
      run-to-run noise (docs/performance.md, "Process settings"). ``flows`` itself creates few objects:
      switching the collector off measured no faster, and a capture that needs scapy still gets
      its cycles collected.
    - ``flows_only`` (a process that runs only ``hscc-trace flows``): OpenBLAS (loaded by numpy;
      never called there) starts no thread pool: its idle threads otherwise spin on the CPU the
      reader and flow threads need.
    """
    from .cache import cache_root
    from .memory import freeze_at_exit

    os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_root() / "numba"))
    freeze_at_exit()
    if not flows_only:  # (analyze, check, events …: threads that free each other's arrays)
        from .memory import few_malloc_arenas, polars_frees_at_once

        few_malloc_arenas()
        polars_frees_at_once()
    import gc

    gc.set_threshold(GC_THRESHOLD_FLOWS if flows_only else GC_THRESHOLD, 10, 10)
    if flows_only:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
