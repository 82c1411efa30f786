"""``@jit`` for every hook and helper: the one kernel decorator (:func:`hscc_trace.perf.jit.njit`)
with the options of replay code. Hooks are compiled only inside a generated replay loop
(:mod:`hscc_trace.replay.compile`), never cached on their own; their plain-Python twins are
:func:`pure`'s. ``HSCC_TRACE_NO_JIT=1`` (read at import) makes ``@jit`` the identity: the whole
replay runs as plain Python (breakpoints, prints).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from hscc_trace.perf.firstuse import pure
from hscc_trace.perf.jit import njit

NO_JIT = os.environ.get("HSCC_TRACE_NO_JIT", "").strip() not in ("", "0", "false", "no")

#: inlined into the loop, and without numba's reference counting (``_nrt=False``): replay code
#: never allocates, only reads and writes the engine's arrays (and views of them), so the
#: incref/decref around every hook call would be pure overhead (they made the loop 3-5x slower)
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
