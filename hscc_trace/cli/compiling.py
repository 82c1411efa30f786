"""Say so on the terminal while numba compiles (first run only), never a silent minute.

numba compiles a kernel the first time it runs and keeps the machine code in its cache
(``~/.cache/hscc-trace``: :mod:`hscc_trace.perf.cache`); later runs load it. numba's event API
(``numba.core.event``, documented in numba's developer guide "Notes on Numba's event API")
announces every real compilation — a cache hit raises no event — so this module listens to it
(:func:`hscc_trace.api.watching_compilation`) and writes one status line to stderr, updated in place: which kernel, how many so far, how long.
Only on a terminal: redirected stderr (logs, tests) stays exactly the command's own output —
except for ``hscc-trace compile``, whose output this is (``always``: one line per kernel).

Kernels that are not compiled yet may not compile at all: under the first-use rule
(:mod:`hscc_trace.perf.firstuse`) a kernel given little work runs interpreted instead, for at
most about as long as compiling it would take; when that is expected to take 2 s or more the
status line says so too ("running … as plain Python").
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO


class _Notice:
    """A numba listener: one status line on ``out`` per outermost compilation."""

    def __init__(self, out: TextIO, tty: bool = True) -> None:
        self.out = out
        self.tty = tty
        self.depth = 0
        self.count = 0
        self.t0: float | None = None
        self.shown = False
        self.lock = threading.Lock()

    def on_start(self, name: str) -> None:
        with self.lock:
            self.depth += 1
            if self.depth > 1:  # a callee compiled as part of the kernel already announced
                return
            if self.t0 is None:
                self.t0 = time.perf_counter()
            self.count += 1
            took = time.perf_counter() - self.t0
            text = f"compiling {name} (first run only; {self.count} kernels, {took:.0f} s so far)"
            self.out.write(f"\rhscc-trace: {text}\033[K" if self.tty else f"hscc-trace: {text}\n")
            self.out.flush()

    def interpreted(self, name: str, expect: float) -> None:
        """A kernel not compiled yet runs as plain Python on work expected to take ``expect`` s."""
        with self.lock:
            text = f"running {name} as plain Python (≈ {expect:.0f} s; `hscc-trace compile` compiles it for later runs)"
            self.out.write(f"\rhscc-trace: {text}\033[K" if self.tty else f"hscc-trace: {text}\n")
            self.out.flush()
            self.shown = True

    def on_end(self) -> None:
        with self.lock:
            self.depth = max(0, self.depth - 1)

    def finish(self) -> None:
        if self.t0 is None and self.shown and self.tty:  # (end the status line)
            self.out.write("\r\033[K")
            self.out.flush()
        if self.t0 is not None:
            took = time.perf_counter() - self.t0
            text = f"compiled {self.count} kernels in {took:.0f} s (cached for later runs)"
            self.out.write(f"\rhscc-trace: {text}\033[K\n" if self.tty else f"hscc-trace: {text}\n")
            self.out.flush()


@contextlib.contextmanager
def compile_notice(out: TextIO | None = None, *, always: bool = False) -> Iterator[None]:
    """While the block runs, announce numba compilations on ``out`` (stderr) if it is a terminal
    (a status line updated in place), or with ``always`` on any stream (a line per kernel)."""
    out = out if out is not None else sys.stderr
    tty = out.isatty()
    if not tty and not always:
        yield
        return
    from hscc_trace import api

    notice = _Notice(out, tty)
    with api.watching_compilation(notice.on_start, notice.on_end, notice.interpreted):
        try:
            yield
        finally:
            notice.finish()
