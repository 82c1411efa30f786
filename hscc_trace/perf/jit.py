"""``@njit`` for the kernels of ``hscc-trace flows``: ahead-of-time compiled when installed so.

The capture reader, the decoder, the BPF interpreter and the flow kernel (the modules in
:data:`hscc_trace.perf.aot.KERNEL_MODULES`) declare their compiled functions with this module's
:func:`njit` instead of numba's. It returns a :class:`Kernel`, which behaves like a numba
dispatcher but resolves on its first call:

- to the function of the same name in the extension module ``hscc_trace._aot_kernels``, which
  ``pip install`` builds from these very functions with numba's ahead-of-time compiler
  (:mod:`hscc_trace.perf.aot`), when the kernel declares an ``aot`` signature, the extension was
  built from the same source (fingerprint check) and ``HSCC_TRACE_NO_AOT`` is not set;
- otherwise to an ordinary numba dispatcher (``numba.njit(**options)``, compiled or loaded from
  numba's cache on first use), exactly as before.

Why: with the ahead-of-time functions, ``hscc-trace flows`` never imports numba. Importing
numba and loading cached kernels is ≈ 0.35 s of single-core start-up on every run, as long
as the whole five-million-packet scan (docs/performance.md).

Safety: numba's ahead-of-time wrappers do not check argument dtypes (an int32 array passed
for int64 reads out of bounds), so every call is checked against the declared signature in
Python first (≈ 0.4 µs per argument, 16 µs for the flow kernel's 42; these kernels run once
per batch of tens of thousands of packets). A
call that does not match exactly goes to the numba dispatcher instead, which compiles a
specialisation as it would have anyway.

Inside compiled code a :class:`Kernel` is typed as its numba dispatcher (``_numba_type_`` and
the other dispatcher attributes are forwarded), so kernels still call each other, and numba's
``inline="always"`` still inlines, whichever module they live in.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable
from typing import Any

#: modules whose ``aot`` kernels are compiled ahead of time; their source files make up the
#: fingerprint, so a kernel may only use constants defined in these modules
KERNEL_MODULES = (
    "hscc_trace.capture.reader",
    "hscc_trace.capture.decode",
    "hscc_trace.capture.bpf",
    "hscc_trace.flows.tracker",
    "hscc_trace.perf.aot",
)


def fingerprint() -> int:
    """A 60-bit hash of the source files of :data:`KERNEL_MODULES` (located without importing them)."""
    import importlib.util

    h = hashlib.sha256()
    for name in KERNEL_MODULES:
        mod = sys.modules.get(name)
        path = getattr(mod, "__file__", None) if mod is not None else None
        if path is None:
            spec = importlib.util.find_spec(name)
            path = spec.origin if spec is not None else None
        if path is None:
            raise ImportError(f"cannot locate {name}")
        with open(path, "rb") as f:
            h.update(name.encode() + b"\0" + f.read() + b"\0")
    return int(h.hexdigest()[:15], 16)


#: name of the extension module :mod:`hscc_trace.perf.aot` builds
AOT_MODULE = "hscc_trace._aot_kernels"
#: set to 1 to ignore the ahead-of-time kernels (tests compare the two; debugging)
NO_AOT_ENV = "HSCC_TRACE_NO_AOT"

#: every Kernel that declares an ``aot`` signature, by export name
REGISTRY: dict[str, Kernel] = {}

_state: dict[str, Any] = {}  # "module": the extension module or None, "why": why not


def njit(*, aot: str | None = None, **options: Any) -> Callable[[Callable[..., Any]], Kernel]:
    """Decorator: ``numba.njit(**options)``, or, with ``aot`` (a numba signature string such as
    ``"int64(uint8[::1], int64)"``), the ahead-of-time compiled function when available."""

    def wrap(fn: Callable[..., Any]) -> Kernel:
        k = Kernel(fn, options, aot)
        if aot is not None:
            REGISTRY[k.export_name] = k
        return k

    return wrap


class Kernel:
    """A numba-compiled function, resolved on first call (see the module docstring)."""

    def __init__(self, fn: Callable[..., Any], options: dict[str, Any], aot: str | None):
        self.py_func = fn
        self.options = options
        self.aot = aot
        self.export_name = export_name(fn.__module__, fn.__name__)
        self._call: Callable[..., Any] | None = None
        self._dispatcher: Any = None
        self._check: Callable[[tuple[Any, ...]], bool] | None = None
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn

    def __call__(self, *args: Any) -> Any:
        call = self._call
        if call is None:
            call = self._resolve()
        check = self._check
        if check is not None and not check(args):
            return self.dispatcher()(*args)
        return call(*args)

    def __getattr__(self, name: str) -> Any:
        # the dispatcher's other attributes: numba's typing (_numba_type_), inlining
        # (targetoptions), signatures, inspect_types … Dunder lookups are not forwarded.
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.dispatcher(), name)

    def __repr__(self) -> str:
        return f"<hscc_trace.perf.jit.Kernel {self.__module__}.{self.__name__}>"

    @property
    def is_aot(self) -> bool:
        """True when calls go to the ahead-of-time compiled function."""
        if self._call is None:
            self._resolve()
        return self._check is not None

    def dispatcher(self) -> Any:
        """The numba dispatcher of this function (numba is imported on first use)."""
        d = self._dispatcher
        if d is None:
            import numba

            d = self._dispatcher = numba.njit(**self.options)(self.py_func)
        return d

    def _resolve(self) -> Callable[..., Any]:
        fn = None
        if self.aot is not None:
            mod = aot_module()
            fn = getattr(mod, self.export_name, None) if mod is not None else None
        if fn is not None:
            self._check = _arg_checker(self.aot)  # type: ignore[arg-type]
            self._call = fn
        else:
            self._call = self.dispatcher()
        return self._call


def export_name(module: str, name: str) -> str:
    """The extension module's name for kernel ``name`` of ``module``: a valid identifier,
    unique across :data:`hscc_trace.perf.aot.KERNEL_MODULES`."""
    short = module.removeprefix("hscc_trace.").replace(".", "_")
    return f"{short}__{name.lstrip('_')}"


def aot_module() -> Any:
    """The ahead-of-time kernels' extension module, or None (then :func:`aot_status` says why)."""
    if "module" in _state:
        return _state["module"]
    mod, why = None, ""
    if os.environ.get(NO_AOT_ENV, "").strip() not in ("", "0", "false", "no"):
        why = f"{NO_AOT_ENV} is set"
    else:
        try:
            import importlib

            mod = importlib.import_module(AOT_MODULE)
        except ImportError as exc:
            why = f"not built ({exc})"
        else:
            if mod.fingerprint() != fingerprint():
                mod, why = None, "built from other sources than these (reinstall to rebuild)"
    _state["module"], _state["why"] = mod, why
    return mod


def aot_status() -> str:
    """One line: whether the flows kernels run ahead-of-time compiled, and if not why."""
    mod = aot_module()
    if mod is not None:
        return f"ahead-of-time compiled ({mod.__file__})"
    return f"compiled by numba at run time: ahead-of-time kernels {_state['why']}"


# ---- argument checks -----------------------------------------------------------------------


def _arg_checker(sig: str) -> Callable[[tuple[Any, ...]], bool]:
    """A predicate: do these arguments have exactly the types of ``sig``'s arguments?

    Argument types are parsed from the signature string without numba: ``T[::1]`` / ``T[:, ::1]``
    (C-contiguous, writeable array of dtype T), ``int64`` (a Python int or numpy int64),
    ``boolean`` (a Python or numpy bool)."""
    import numpy as np

    args = _split_args(sig)
    tests: list[Callable[[Any], bool]] = []
    for a in args:
        if "[" in a:
            base, dims = a.split("[", 1)
            ndim = dims.count(",") + 1
            dt = np.dtype(_DTYPES[base.strip()])
            tests.append(_array_test(dt, ndim))
        elif a == "int64":
            tests.append(lambda x: type(x) is int or type(x) is np.int64)
        elif a == "boolean":
            tests.append(lambda x: type(x) is bool or type(x) is np.bool_)
        else:
            raise ValueError(f"aot signature argument {a!r} is not supported (arrays, int64, boolean)")
    n = len(tests)

    def check(values: tuple[Any, ...]) -> bool:
        if len(values) != n:
            return False
        for t, v in zip(tests, values):
            if not t(v):
                return False
        return True

    return check


def _array_test(dt: Any, ndim: int) -> Callable[[Any], bool]:
    import numpy as np

    def test(x: Any) -> bool:
        return (
            type(x) is np.ndarray
            and x.dtype == dt
            and x.ndim == ndim
            and x.flags.c_contiguous
            and x.flags.writeable
            and x.flags.aligned
        )

    return test


_DTYPES = {
    "uint8": "u1",
    "uint16": "u2",
    "uint32": "u4",
    "uint64": "u8",
    "int8": "i1",
    "int16": "i2",
    "int32": "i4",
    "int64": "i8",
    "float32": "f4",
    "float64": "f8",
    "boolean": "?",
}


def _split_args(sig: str) -> list[str]:
    """The argument types of ``ret(a, b[:, ::1], …)`` as strings: the top-level items of the
    last parenthesised group (the return type before it may hold parentheses too)."""
    end = sig.rindex(")")
    depth = 0
    start = end
    for i in range(end, -1, -1):
        depth += 1 if sig[i] in ")]" else -1 if sig[i] in "([" else 0
        if depth == 0:
            start = i
            break
    out, depth, cur = [], 0, ""
    for ch in sig[start + 1 : end]:
        depth += 1 if ch in "([" else -1 if ch in ")]" else 0
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


__all__ = ["njit", "Kernel", "aot_module", "aot_status", "export_name", "REGISTRY", "NO_AOT_ENV", "AOT_MODULE"]
