"""``@njit``: the one decorator of a compiled kernel (numba is the one backend).

- ``@njit(work=…, cost=…, **options)`` — a kernel called from Python: ``numba.njit(**options)``
  under the first-use rule (:class:`.firstuse.Kernel`). ``work(args)`` is the number of items
  (records, bytes, packets, rows, ACKs) a call processes; ``cost`` is ``(compile_s,
  interp_s_per_item)``, measured by ``benchmarks/first_use.py`` (docs/performance.md).
- ``@njit(**options)`` — a kernel only called from compiled code: a numba dispatcher cached in
  the hscc-trace cache folder (:func:`.cache.numba_njit`), whose interpreted twin comes with its
  callers' (:func:`.firstuse.pure`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def njit(
    *, work: Callable[[tuple[Any, ...]], int] | None = None, cost: tuple[float, float] = (0.0, 0.0), **options: Any
) -> Callable[[Callable[..., Any]], Any]:
    """Decorator: a kernel under the first-use rule (``work`` and ``cost`` given) or a numba dispatcher."""

    def wrap(fn: Callable[..., Any]) -> Any:
        if work is None:
            from .cache import numba_njit

            return numba_njit(fn, **options)
        from .firstuse import Kernel

        return Kernel(fn, work, cost, options)

    return wrap
