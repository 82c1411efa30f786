"""Performance machinery, in one place: compiled kernels and process settings.

- :mod:`.jit` — ``njit``: numba kernels, and for those of ``hscc-trace flows`` their Cython
  twins in the extension ``hscc_trace._kernels`` (built at install, used when current);
- :mod:`.firstuse` — the numba kernels of the event, arena, replay and report code and the
  replay loops: interpreted while their work is small, compiled when it is large or when the
  cache holds them already (stamps);
- :mod:`.warmup` — the generated capture ``hscc-trace compile`` runs everything over;
- :mod:`.cache` — the one user cache folder of everything compiled;
- :mod:`.memory` — huge-page advice off while a capture is read, ``gc.freeze`` at exit, and
  giving freed memory back (glibc: two malloc arenas, ``malloc_trim``, ``madvise``; polars' jemalloc:
  no decay delay).

Nothing here changes the process when imported. The CLI entry point calls :func:`activate`;
a notebook or script that imports the library keeps its interpreter as it was.
"""

from __future__ import annotations

import os


def activate(*, flows_only: bool = False) -> None:
    """Process settings for one run of the ``hscc-trace`` command (never called by the library).

    - numba's cache of compiled kernels goes to the user's cache folder, never beside the
      installed modules (:mod:`.cache`; ``NUMBA_CACHE_DIR`` as the user set it wins). Set here,
      before anything imports numba, which reads it once.
    - No full garbage collection at interpreter exit (:func:`.memory.freeze_at_exit`; override
      with ``HSCC_TRACE_EXIT_GC=1``).
    - Except for ``flows_only``: at most two glibc malloc arenas (:func:`.memory.few_malloc_arenas`),
      and polars' allocator (jemalloc) gives freed pages back at once
      (:func:`.memory.polars_frees_at_once`).
    - ``flows_only`` (a process that runs only ``hscc-trace flows``): the cyclic garbage
      collector runs after 100 000 net allocations instead of 700 — the command itself creates
      few objects, but importing numpy and numba creates hundreds of thousands, and collecting
      every 700 of them costs ≈ 0.1 s of CPU (switching it off measured no faster; a capture that
      needs scapy still gets its cycles collected) — and OpenBLAS (loaded by numpy; never called
      there) starts no thread pool: its idle threads otherwise spin on the CPU the reader and
      flow threads need.
    """
    from .cache import cache_root
    from .memory import freeze_at_exit

    os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_root() / "numba"))
    freeze_at_exit()
    if not flows_only:  # (analyze, check, events …: threads that free each other's arrays)
        from .memory import few_malloc_arenas, polars_frees_at_once

        few_malloc_arenas()
        polars_frees_at_once()
    if flows_only:
        import gc

        gc.set_threshold(100_000, 10, 10)
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
