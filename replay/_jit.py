"""One decorator for every hook and helper, and the plain-Python twin of compiled code.

``@jit`` turns a function into a lazily compiled numba dispatcher (``njit``; compiled only when a
replay loop that calls it is compiled). Hooks and helpers are *not* cached individually: only the
generated per-algorithm loop is (see :mod:`hscc_trace.replay.compile`), because numba's cache
does not notice when a called function in another file changes.

``HSCC_TRACE_NO_JIT=1`` in the environment (read at import) makes ``@jit`` the identity, so the
whole library runs as plain Python (breakpoints, prints). Without it, :func:`pure` rebuilds any
dispatcher as a plain-Python function whose global references to other dispatchers (directly or
through a module alias such as ``H.slow_start``) are rebuilt the same way — this is how
``compiled=False`` runs the *same source* in-process for parity tests.
"""

from __future__ import annotations

import os
import types
from collections.abc import Callable
from typing import Any

NO_JIT = os.environ.get("HSCC_TRACE_NO_JIT", "").strip() not in ("", "0", "false", "no")

_PKG = __name__.rpartition(".")[0]  # hscc_trace.replay


def jit(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark ``fn`` as replay code: a numba ``njit`` dispatcher, or ``fn`` itself under NO_JIT.

    Compiled with ``inline="always"`` (numba-level inlining into the loop) and without numba's
    reference counting (``_nrt=False``): replay code never allocates — it only reads and writes
    arrays the engine passes in (and takes views of them for wrapper composition) — so the
    atomic incref/decref calls numba would otherwise emit around every hook call are pure
    overhead (they made the loop 3-5x slower). Code that needs to allocate cannot be a hook.
    """
    if NO_JIT:
        return fn
    import numba

    # (_nrt is numba's documented-internal switch for reference counting, not in its type stubs)
    return numba.njit(fn, cache=False, nogil=True, fastmath=False, error_model="numpy", inline="always", _nrt=False)  # type: ignore[call-overload]


def _is_dispatcher(obj: object) -> bool:
    return hasattr(obj, "py_func") and type(obj).__module__.startswith("numba")


def _is_ours(mod: types.ModuleType) -> bool:
    name = getattr(mod, "__name__", "")
    return name.startswith(_PKG) or name.startswith("hscc_trace_replay_gen")


def pure(fn: Any, _memo: dict[int, Any] | None = None) -> Any:
    """A plain-Python copy of ``fn`` (dispatcher or function) calling plain-Python callees."""
    memo: dict[int, Any] = {} if _memo is None else _memo
    f = fn.py_func if _is_dispatcher(fn) else fn
    if not isinstance(f, types.FunctionType):
        return f
    key = id(f)
    if key in memo:
        return memo[key]
    g: dict[str, Any] = dict(f.__globals__)
    nf = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
    nf.__qualname__ = f.__qualname__
    nf.__doc__ = f.__doc__
    memo[key] = nf
    for name in f.__code__.co_names:
        v = g.get(name)
        if v is None:
            continue
        if _is_dispatcher(v):
            g[name] = pure(v, memo)
        elif isinstance(v, types.ModuleType) and _is_ours(v):
            g[name] = _pure_module(v, memo)
    return nf


def _pure_module(mod: types.ModuleType, memo: dict[int, Any]) -> types.SimpleNamespace:
    key = id(mod)
    if key in memo:
        return memo[key]
    ns = types.SimpleNamespace()
    memo[key] = ns
    for k, v in vars(mod).items():
        if k.startswith("__"):
            continue
        if _is_dispatcher(v):
            v = pure(v, memo)
        setattr(ns, k, v)
    return ns
