"""Command-line interface: thin wrappers over the library.

Each command lives in its own module and registers itself on :data:`app`. :func:`main` turns
library errors into one line on stderr and exit code 2 — never a traceback.
"""

from __future__ import annotations

import os
import sys

from hscc_trace.errors import HsccError

from .app import app

# Command modules register themselves on import. Keep this list in sync with hscc_trace/cli/.
from . import version_cmd  # noqa: F401,E402
from . import analyze_cmd  # noqa: F401,E402
from . import check_cmd  # noqa: F401,E402
from . import flows_cmd  # noqa: F401,E402
from . import events_cmd  # noqa: F401,E402
from . import replay_cmd  # noqa: F401,E402


def main() -> None:
    """The ``hscc-trace`` entry point: run the command, exit with its code.

    Run as the process's entry point (the console script or ``python -m hscc_trace``), the
    process then ends without the interpreter's module teardown (:func:`_exit_now`): with numba
    and polars loaded that teardown costs ~0.25 s, as long as ``hscc-trace flows`` on a 100 k
    packet capture. Called from Python (tests) it raises SystemExit as usual.
    """
    try:
        _main()
    except SystemExit as exc:
        if _entry_point():
            _exit_now(exc.code)
        raise
    if _entry_point():
        _exit_now(0)


def _entry_point() -> bool:
    """True when this module's :func:`main` is what the ``__main__`` module runs."""
    return getattr(sys.modules.get("__main__"), "main", None) is main


def _exit_now(code: object) -> None:
    """Flush stdout/stderr and end the process at once (``os._exit``), skipping the teardown of
    every loaded module. Falls back to the normal exit (returns) if a flush fails or anything
    that a normal exit would wait for is still running: another non-daemon thread or a child
    process."""
    import threading

    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        return  # a message for SystemExit to print: leave it to the interpreter
    if any(t is not threading.main_thread() and not t.daemon and t.is_alive() for t in threading.enumerate()):
        return
    mp = sys.modules.get("multiprocessing")
    if mp is not None and mp.active_children():
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # e.g. a closed pipe: let the interpreter report it as it normally does
        return
    os._exit(status)


def _main() -> None:
    try:
        app()
    except HsccError as exc:
        print(f"hscc-trace: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("hscc-trace: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # a bug, not bad input: still one line unless debugging
        if os.environ.get("HSCC_TRACE_DEBUG"):
            raise
        print(f"hscc-trace: internal error: {type(exc).__name__}: {exc} "
              "(set HSCC_TRACE_DEBUG=1 for a traceback, and please report it)", file=sys.stderr)
        sys.exit(70)  # EX_SOFTWARE
