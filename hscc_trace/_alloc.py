"""Process-level memory management of hscc-trace (imported first by ``hscc_trace/__init__.py``).

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


def _freeze_at_exit() -> None:
    gc.freeze()


if os.environ.get(EXIT_GC_ENV, "").strip() != "1":
    atexit.register(_freeze_at_exit)
