"""Say so on stderr while numba compiles (first run only), never a silent minute: one status line,
updated in place (which kernel, how many, how long), per kernel the kernel decorator announces
(:func:`hscc_trace.api.watching_compilation`), or run as plain Python on work expected to take 2 s
or more. Only on a terminal, so that redirected stderr stays the command's own output — except
for ``hscc-trace compile`` (``always``: a line per kernel on any stream).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO


class _Notice:
    """One status line on ``out`` per compilation."""

    def __init__(self, out: TextIO, tty: bool) -> None:
        self.out, self.tty = out, tty
        self.count, self.shown = 0, False
        self.t0: float | None = None
        self.lock = threading.Lock()

    def say(self, text: str, end: str = "") -> None:
        self.out.write(f"\rhscc-trace: {text}\033[K{end}" if self.tty else f"hscc-trace: {text}\n")
        self.out.flush()

    def on_start(self, name: str) -> None:
        with self.lock:
            self.t0 = time.perf_counter() if self.t0 is None else self.t0
            self.count += 1
            took = time.perf_counter() - self.t0
            self.say(f"compiling {name} (first run only; {self.count} kernels, {took:.0f} s so far)")

    def interpreted(self, name: str, expect: float) -> None:
        with self.lock:
            self.say(
                f"running {name} as plain Python (≈ {expect:.0f} s; `hscc-trace compile` compiles it for later runs)"
            )
            self.shown = True

    def finish(self) -> None:
        if self.t0 is not None:
            took = time.perf_counter() - self.t0
            self.say(f"compiled {self.count} kernels in {took:.0f} s (cached for later runs)", "\n")
        elif self.shown and self.tty:  # (end the status line)
            self.out.write("\r\033[K")
            self.out.flush()


@contextlib.contextmanager
def compile_notice(out: TextIO | None = None, *, always: bool = False) -> Iterator[None]:
    """While the block runs, announce kernel compilations on ``out`` (stderr) if it is a terminal
    (a status line updated in place), or with ``always`` on any stream (a line per kernel)."""
    out = out if out is not None else sys.stderr
    if not out.isatty() and not always:
        yield
        return
    from hscc_trace import api

    notice = _Notice(out, out.isatty())
    with api.watching_compilation(notice.on_start, lambda: None, notice.interpreted):
        try:
            yield
        finally:
            notice.finish()
