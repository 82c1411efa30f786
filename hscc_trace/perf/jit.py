"""``@njit``: the one decorator of a compiled kernel (numba is the one backend).

- ``@njit(work=…, **options)`` — a kernel called from Python: ``numba.njit(**options)`` under
  the first-use rule (:class:`.firstuse.Kernel`: interpreted while the work given it is small,
  compiled when it is large or already in the cache). ``work(args)`` is the number of items
  (records, bytes, packets, rows, ACKs) a call processes; the kernel's measured costs are in
  :data:`.firstuse.COSTS` under its name (``module.function`` without the ``hscc_trace.``
  prefix).
- ``@njit(**options)`` — a kernel only called from compiled code: a plain numba dispatcher
  (:func:`.cache.numba_njit`: cached in the hscc-trace cache folder), whose interpreted twin
  comes with its callers' (:func:`.firstuse.pure`).

The replay hooks and helpers are this decorator too, with fixed options
(:func:`hscc_trace.replay._jit.jit`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def njit(
    *, work: Callable[[tuple[Any, ...]], int] | None = None, **options: Any
) -> Callable[[Callable[..., Any]], Any]:
    """Decorator: a kernel under the first-use rule (``work`` given) or a numba dispatcher."""

    def wrap(fn: Callable[..., Any]) -> Any:
        if work is None:
            from .cache import numba_njit

            return numba_njit(fn, **options)
        from .firstuse import COSTS, Kernel

        name = f"{fn.__module__.removeprefix('hscc_trace.')}.{fn.__name__}"
        return Kernel(fn, None, options, work, COSTS[name], name)

    return wrap


__all__ = ["njit"]
