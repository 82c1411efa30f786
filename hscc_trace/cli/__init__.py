"""Command-line interface: thin wrappers over the library.

Each command lives in its own module and registers itself on :data:`app`. :func:`main` turns
library errors into one line on stderr and exit code 2 — never a traceback.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from hscc_trace.errors import DEBUG_ENV, HsccError

#: Command modules, in the order of ``hscc-trace --help``. Each registers itself on :data:`app`
#: when imported. Keep in sync with hscc_trace/cli/. They are imported on first use of
#: :data:`app` (module ``__getattr__``), not when this package is imported.
_COMMANDS = (
    "version_cmd",
    "analyze_cmd",
    "check_cmd",
    "compare_cmd",
    "flows_cmd",
    "events_cmd",
    "replay_cmd",
    "qlog_cmd",
    "annotate_cmd",
    "corpus_cmd",
    "compile_cmd",
)


def _load_app():
    """The Typer application with every command registered (imported once, then a module global)."""
    import importlib

    from .typer_app import app

    for name in _COMMANDS:
        importlib.import_module(f"{__name__}.{name}")
    globals()["app"] = app
    return app


def __getattr__(name: str):
    if name == "app":  # ``from hscc_trace.cli import app``, ``cli.app``
        return _load_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """The ``hscc-trace`` entry point: run the command, exit with its code.

    Run as the process's entry point (the console script or ``python -m hscc_trace``), it first
    switches on the process settings of :func:`hscc_trace.perf.activate` (never done by
    importing the library), and the process then ends without the interpreter's module
    teardown (:func:`_exit_now`): with numba and polars loaded that teardown costs as long as a
    short command. Called from Python (tests) it raises SystemExit as usual.
    """
    _names_on_stdout()
    if _entry_point():
        from hscc_trace import api

        api.activate()
    try:
        _main()
    except SystemExit as exc:
        if _entry_point():
            _exit_now(exc.code)
        raise
    if _entry_point():
        _exit_now(0)


def _names_on_stdout() -> None:
    """A file name that is not valid UTF-8 (held with surrogateescape) is printed on stdout as
    its bytes, as ``ls`` and tcpdump print it, instead of failing to encode (stdout is strict
    unless Python runs in UTF-8 mode; stderr already escapes)."""
    out = sys.stdout
    if getattr(out, "errors", None) == "strict" and hasattr(out, "reconfigure"):
        try:
            out.reconfigure(errors="surrogateescape")
        except (ValueError, OSError):  # (a stream that cannot change now)
            pass


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


#: Exit codes of every command (docs/exit-codes.md; README links it).
EXIT_OK, EXIT_CHECK_FAILED, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 70


def one_line(text: object) -> str:
    """``text`` as one line: line breaks (polars' messages run to several lines) become " · ",
    blank lines and surrounding space are dropped."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return " · ".join(lines)


def _main() -> None:
    try:
        _run_app(globals().get("app") or _load_app())
    except HsccError as exc:
        print(f"hscc-trace: error: {one_line(exc)}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("hscc-trace: interrupted", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:
        # the reader of our output went away (`hscc-trace flows x | head`): exit 1 without a
        # message, and send what is left to /dev/null so the final flush cannot fail again (the
        # Python documentation's recipe for SIGPIPE, library "signal")
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(EXIT_CHECK_FAILED)
    except Exception as exc:  # a bug, not bad input: still one line unless debugging
        if os.environ.get(DEBUG_ENV):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(
            f"hscc-trace: internal error: {type(exc).__name__}: {first} "
            "(set HSCC_TRACE_DEBUG=1 for a traceback, and please report it)",
            file=sys.stderr,
        )
        sys.exit(EXIT_INTERNAL)  # EX_SOFTWARE


def _run_app(app) -> None:
    """Run the Typer app without Click's standalone mode, so that a usage error is one line
    (``hscc-trace: error: No such option: --bogus (see 'hscc-trace flows --help')``, exit code
    2) instead of Typer's usage box; ``--help`` and a bare ``hscc-trace`` print help as before."""
    import typer

    ClickException = _click_exception(typer)
    Abort = typer.Abort
    if not isinstance(app, typer.Typer):  # (a stand-in, e.g. in tests)
        app()
        return
    try:
        rv = app(prog_name="hscc-trace", standalone_mode=False)
    except ClickException as err:
        exc: Any = err  # (click's ClickException: format_message(), exit_code, ctx)
        if type(exc).__name__ == "NoArgsIsHelpError":  # the help text itself (no arguments)
            msg = exc.format_message()
            if msg.strip():
                print(msg, file=sys.stderr)
            sys.exit(EXIT_INPUT)
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        print(f"hscc-trace: error: {one_line(exc.format_message())}{hint}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except Abort:
        print("hscc-trace: aborted", file=sys.stderr)
        sys.exit(EXIT_CHECK_FAILED)
    # a command returns None; typer.Exit(code) (and Ctrl-C: 130) come back as the code
    sys.exit(rv if isinstance(rv, int) else EXIT_OK)


def _click_exception(typer) -> type[Exception]:
    """Click's ``ClickException`` (base of every usage error), found through Typer's public
    ``typer.BadParameter``: Typer ≥ 0.16 ships its own copy of Click (``typer._click``, a private
    module) while older versions use the ``click`` package, and the class is in either one's
    ancestry. Would go if Typer exported its usage-error base class publicly."""
    for cls in typer.BadParameter.__mro__:
        if cls.__name__ == "ClickException":
            return cls
    return Exception  # (not reached with any Typer that has BadParameter)
