"""``@jit`` for every hook and helper: the one kernel decorator (:func:`hscc_trace.perf.jit.njit`)
with the options of replay code, and the plain-Python twin of compiled code.

Hooks and helpers are compiled only as part of a replay loop that calls them, and are *not*
cached individually: only the generated per-algorithm loop is (see
:mod:`hscc_trace.replay.compile`), because numba's cache does not notice when a called function
in another file changes.

``HSCC_TRACE_NO_JIT=1`` in the environment (read at import) makes ``@jit`` the identity, so the
whole replay runs as plain Python (breakpoints, prints). Without it, :func:`pure`
(:func:`hscc_trace.perf.firstuse.pure`) rebuilds any dispatcher as a plain-Python function whose
global references to other dispatchers (directly or through a module alias such as
``H.slow_start``) are rebuilt the same way — this is how ``compiled=False`` runs the *same
source* in-process for parity tests.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from hscc_trace.perf.firstuse import pure
from hscc_trace.perf.jit import njit

NO_JIT = os.environ.get("HSCC_TRACE_NO_JIT", "").strip() not in ("", "0", "false", "no")

#: inlined into the loop (numba-level ``inline="always"``), not cached on their own, and without
#: numba's reference counting (``_nrt=False``, numba's documented-internal switch): replay code
#: never allocates — it only reads and writes arrays the engine passes in (and takes views of
#: them for wrapper composition) — so the atomic incref/decref calls numba would otherwise emit
#: around every hook call are pure overhead (they made the loop 3-5x slower). Code that needs
#: to allocate cannot be a hook.
OPTIONS: dict[str, Any] = {
    "cache": False,
    "nogil": True,
    "fastmath": False,
    "error_model": "numpy",
    "inline": "always",
    "_nrt": False,
}


def jit(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark ``fn`` as replay code: ``njit(**OPTIONS)``, or ``fn`` itself under NO_JIT."""
    return fn if NO_JIT else njit(**OPTIONS)(fn)


__all__ = ["NO_JIT", "OPTIONS", "jit", "pure"]
