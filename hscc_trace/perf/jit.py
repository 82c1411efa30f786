"""``@njit`` for the kernels of ``hscc-trace flows``: the compiled extension when built, numba otherwise.

The capture reader, the decoder, the BPF interpreter and the flow table declare their compiled
functions with this module's :func:`njit` instead of numba's. Those declared with
``ext="name"`` have a twin of the same behaviour, written in Cython, in the extension module
``hscc_trace._kernels`` (sources: :data:`EXT_SOURCES`), which ``pip install`` compiles when a C
compiler is there (setup.py). :func:`njit` returns a :class:`Kernel`, which behaves like a numba
dispatcher but resolves on its first call:

- to the extension's function ``name``, when the extension imports, was built from the Cython
  sources beside it (:func:`source_hash`: an editable install whose sources changed since it
  was built falls back) and ``HSCC_TRACE_NO_EXT`` is not set;
- otherwise to an ordinary numba dispatcher (``numba.njit(**options)``, compiled or loaded from
  numba's cache on first use). The numba functions are the reference: tests/test_kernels.py
  runs both on every sample and external capture and requires identical results.

Why: with the extension, ``hscc-trace flows`` never imports numba. Importing numba and loading
cached kernels is ≈ 0.35 s of single-core start-up on every run, as long as the whole
five-million-packet scan (docs/performance.md).

Both implementations take the same arguments: a few records (NamedTuples of numpy arrays and
scalars, such as :class:`hscc_trace.capture.reader.Records` or
:class:`hscc_trace.flows.tracker.Packets`), so a call site does not care which one runs. The
extension binds every field it uses to a C pointer after checking its dtype, dimensions,
contiguity, writability and length, and raises ``KernelArgumentError`` (a ``TypeError``) before
touching anything when one does not match; the call then goes to the numba dispatcher, which
compiles a specialisation for those types as it always has.

Inside compiled code a :class:`Kernel` is typed as its numba dispatcher (``_numba_type_`` and
the other dispatcher attributes are forwarded), so kernels still call each other, and numba's
``inline="always"`` still inlines, whichever module they live in.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: the compiled extension's module name
EXT_MODULE = "hscc_trace._kernels"
#: its Cython sources, relative to the hscc_trace package folder: the module, and the kernels of
#: each layer beside that layer's Python modules (included into the one module: one compilation)
EXT_SOURCES = (
    "_kernels.pyx",
    "perf/_buffers.pxi",
    "capture/_reader.pxi",
    "capture/_decode.pxi",
    "capture/_bpf.pxi",
    "flows/_tracker.pxi",
)
#: set to 1 to ignore the compiled extension (tests compare the two; debugging)
NO_EXT_ENV = "HSCC_TRACE_NO_EXT"

#: every Kernel with a twin in the extension, by the twin's name
REGISTRY: dict[str, Kernel] = {}

_state: dict[str, Any] = {}  # "module": the extension module or None, "why": why not

#: the start of :func:`kernels_status`'s reason when the install built no extension (no C compiler)
NOT_BUILT = "the compiled extension was not built at install"


def source_hash(package_dir: str | os.PathLike[str]) -> str:
    """SHA-256 (hex) of the extension's sources under ``package_dir`` (the hscc_trace folder);
    setup.py compiles it into the extension. Raises FileNotFoundError when one is missing."""
    sources = [(rel, (Path(package_dir) / rel).read_bytes()) for rel in EXT_SOURCES]
    import hashlib  # (after the reads: an installed package has no sources, and `flows` no need of it)

    h = hashlib.sha256()
    for rel, data in sources:
        h.update(rel.encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def njit(*, ext: str | None = None, **options: Any) -> Callable[[Callable[..., Any]], Kernel]:
    """Decorator: ``numba.njit(**options)``, or, with ``ext``, the extension's function of that
    name when it is available (see the module docstring)."""

    def wrap(fn: Callable[..., Any]) -> Kernel:
        k = Kernel(fn, options, ext)
        if ext is not None:
            if ext in REGISTRY:
                raise ValueError(f"two kernels name the extension function {ext!r}")
            REGISTRY[ext] = k
        return k

    return wrap


class _NeverRaised(Exception):
    """Stands for the extension's argument error when calls go to numba."""


class Kernel:
    """A numba-compiled function, or its twin in the extension; resolved on first call."""

    def __init__(self, fn: Callable[..., Any], options: dict[str, Any], ext: str | None):
        self.py_func = fn
        self.options = options
        self.ext = ext
        self._call: Callable[..., Any] | None = None
        self._dispatcher: Any = None
        self._arg_error: type[BaseException] = _NeverRaised
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn

    def __call__(self, *args: Any) -> Any:
        call = self._call
        if call is None:
            call = self._resolve()
        try:
            return call(*args)
        except self._arg_error:  # the extension refused the arguments (and changed nothing)
            return self.dispatcher()(*args)

    def __getattr__(self, name: str) -> Any:
        # the dispatcher's other attributes: numba's typing (_numba_type_), inlining
        # (targetoptions), signatures, inspect_types … Dunder lookups are not forwarded.
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.dispatcher(), name)

    def __repr__(self) -> str:
        return f"<hscc_trace.perf.jit.Kernel {self.__module__}.{self.__name__}>"

    @property
    def is_ext(self) -> bool:
        """True when calls go to the compiled extension."""
        if self._call is None:
            self._resolve()
        return self._arg_error is not _NeverRaised

    def dispatcher(self) -> Any:
        """The numba dispatcher of this function (numba is imported on first use)."""
        d = self._dispatcher
        if d is None:
            from .cache import numba_njit

            d = self._dispatcher = numba_njit(self.py_func, **self.options)
        return d

    def _resolve(self) -> Callable[..., Any]:
        fn = None
        if self.ext is not None:
            mod = ext_module()
            fn = getattr(mod, self.ext, None) if mod is not None else None
        if fn is not None:
            self._arg_error = mod.KernelArgumentError
            self._call = fn
        else:
            self._call = self.dispatcher()
        return self._call


def ext_module() -> Any:
    """The compiled extension module, or None (then :func:`kernels_status` says why)."""
    if "module" in _state:
        return _state["module"]
    mod, why = None, ""
    if os.environ.get(NO_EXT_ENV, "").strip() not in ("", "0", "false", "no"):
        why = f"{NO_EXT_ENV} is set"
    else:
        try:
            import importlib

            mod = importlib.import_module(EXT_MODULE)
        except ImportError as exc:
            why = f"{NOT_BUILT} ({exc})"
        else:
            pkg = Path(str(mod.__file__)).resolve().parent
            try:
                current = source_hash(pkg)
            except FileNotFoundError:
                current = None  # a regular install: the sources are not installed, the build is
            if current is not None and current != mod.SOURCE_HASH:
                mod, why = None, "the compiled extension was built from other sources than these (reinstall to rebuild)"
    _state["module"], _state["why"] = mod, why
    return mod


def not_built() -> str | None:
    """Why the extension is missing when the install did not build it (no C compiler, no
    Cython), else None — also None when it was skipped on purpose (:data:`NO_EXT_ENV`) or is
    stale (an editable install whose sources changed)."""
    if ext_module() is not None:
        return None
    why = str(_state.get("why", ""))
    return why if why.startswith(NOT_BUILT) else None


def kernels_status() -> str:
    """One line: which implementation runs the flows kernels, and if not the compiled one why."""
    mod = ext_module()
    if mod is not None:
        return f"compiled extension ({mod.__file__})"
    return f"numba JIT: {_state['why']}"


__all__ = [
    "njit",
    "Kernel",
    "ext_module",
    "kernels_status",
    "not_built",
    "NOT_BUILT",
    "source_hash",
    "REGISTRY",
    "NO_EXT_ENV",
    "EXT_MODULE",
]
