"""The first-run compile notice of the CLI (hscc_trace/cli/compiling.py)."""

from __future__ import annotations

import io

import numba

from hscc_trace.cli.compiling import compile_notice


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_compilation_is_announced_on_a_terminal_with_a_count_and_a_final_line() -> None:
    @numba.njit(cache=False)
    def _first_run_kernel(x):  # compiled on its first call, inside the block
        return x + 1

    out = _Terminal()
    with compile_notice(out):
        assert _first_run_kernel(41) == 42
    text = out.getvalue()
    assert "compiling test_compiling._first_run_kernel (first run only; 1 kernels" in text
    assert text.rstrip().endswith("(cached for later runs)\x1b[K") and text.count("\n") == 1


def test_nothing_is_written_when_nothing_compiles_or_stderr_is_not_a_terminal() -> None:
    @numba.njit(cache=False)
    def _kernel(x):
        return x * 2

    assert _kernel(2) == 4  # compiled before the block
    quiet = _Terminal()
    with compile_notice(quiet):
        assert _kernel(3) == 6
    assert quiet.getvalue() == ""

    @numba.njit(cache=False)
    def _other(x):
        return x - 1

    log = io.StringIO()  # a file or pipe, not a terminal
    with compile_notice(log):
        assert _other(1) == 0
    assert log.getvalue() == ""
