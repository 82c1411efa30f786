"""Errors and warnings that reach the user.

Library code raises :class:`InputError` for bad input (exit code 2 at the CLI, one line, no
traceback) and collects :class:`Warn` records for partial results (counts, never silent drops).
Library code never prints.
"""

from __future__ import annotations

from dataclasses import dataclass

#: set to a non-empty value, an internal error shows its traceback instead of one line
DEBUG_ENV = "HSCC_TRACE_DEBUG"


class HsccError(Exception):
    """Base class for every error hscc-trace reports to the user as one line."""

    exit_code = 2


class InputError(HsccError):
    """The input (file, flow id, option value) cannot be used."""


class UsageError(HsccError):
    """The command line or configuration is inconsistent."""


def require_extra(extra: str, modules: tuple[str, ...], purpose: str) -> None:
    """Raise :class:`UsageError` — one line naming what is missing and the extra of pyproject.toml
    that installs it — when a module of ``modules`` cannot be imported; ``purpose`` says what
    needed them. For the optional dependencies the base install leaves out (``corpus``,
    ``notebook``)."""
    import importlib

    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        they = "they come" if len(missing) > 1 else "it comes"
        raise UsageError(
            f"{purpose} needs {', '.join(missing)}, not installed: "
            f"{they} with the {extra} extra (pip install 'hscc-trace[{extra}]')"
        )


class InternalError(HsccError):
    """A bug, not bad input: an unexpected exception turned into one line (exit code 70,
    EX_SOFTWARE; ``HSCC_TRACE_DEBUG=1`` shows the traceback instead)."""

    exit_code = 70


class InternalMessage(str):
    """A one-line error message (a ``str``) that reports an internal error, not bad input: the
    pipeline files these with the input errors of a run, and the CLI exits 70 when one is there."""


@dataclass(frozen=True)
class Warn:
    """A problem that did not stop the work: what happened and how often."""

    source: str  # file or component the warning is about
    message: str  # one line, no trailing period
    count: int = 1
    #: the capture was only partly read: data after the problem was not read (its message says
    #: how much); ``hscc-trace check --strict`` fails such a capture
    partial: bool = False
    lost_bytes: int | None = None  # bytes not read (None: cannot be known)
    lost_records: int | None = None  # estimate of the records not read (None: cannot be known)

    def __str__(self) -> str:
        n = f" ({self.count}×)" if self.count != 1 else ""
        return f"{self.source}: {self.message}{n}"


def exit_code_of(errors: list[str], otherwise: int) -> int:
    """70 when any of a run's one-line errors is an internal error (a bug, an
    :class:`InternalMessage`), else 2 when there is any error (bad input), else ``otherwise``
    (docs/exit-codes.md)."""
    if any(isinstance(e, InternalMessage) for e in errors):
        return InternalError.exit_code
    return 2 if errors else otherwise
