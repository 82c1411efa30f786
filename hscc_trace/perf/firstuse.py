"""First use of a kernel: interpreted while its work is small, compiled when it is large.

numba compiles a kernel on its first call (seconds each; ≈ 100 s for all that ``analyze`` uses)
and caches the machine code; interpreted, the same Python function costs microseconds per item.
The rule, per kernel and argument types (``auto``, the default), by its ``@njit(cost=…)``:

1. compiled in this process, or stamped → compiled;
2. else, while its *rent* (CPU seconds interpreted in this and earlier runs: per call measured
   by ``time.thread_time``, at least items × ``interp_s``) plus this call's expected seconds (items at the rent's rate) stay
   within ``compile_s`` (break-even) → its Python function (the same source, :func:`pure`);
3. else compile now, and stamp (ski rental: at most twice the better choice in hindsight).

numba has no public way to ask its cache, so each compilation writes a *stamp* in the cache
folder's ``compiled/``, named by the kernel, a hash of its install (where the package is: two
installs may share a cache folder), one of its version (source file's mtime and size, its callees' sources,
numba, Python, the machine, numba's cache folder: what numba's cache entry depends on) and one of the
argument types: empty, compiled; before that, the rent (``items seconds``, per :data:`SAVE_S`). A
new stamp removes the same install's stamps of the kernel's other versions and every older format
(:func:`prune`). A stale stamp costs one compilation.
``HSCC_TRACE_FIRST_USE`` (``auto``, ``compile``, ``interpret``) or :func:`mode` force one path;
both give identical results (``tests/perf/test_first_use.py``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import platform
import re
import sys
import time
import types
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

MODE_ENV = "HSCC_TRACE_FIRST_USE"
MODES = ("auto", "compile", "interpret")
_forced: list[str] = []  # innermost :func:`mode` last

#: every :class:`Kernel` made in this process
REGISTRY: list[Kernel] = []
#: ``listener(event, kernel, s)`` (the CLI's notice; the library never prints): ``"interpreted"``
#: before a run as plain Python on work expected to take ``s`` ≥ :data:`NOTICE_S`; ``"compiling"``
#: before a first compiled call for new argument types unless a compilation's stamp says numba's
#: cache holds them; after it ``"compiled"`` (so announced) or ``"loaded"``, ``s`` its time (run too)
LISTENERS: list[Callable[[str, Kernel, float], None]] = []
NOTICE_S = 2.0
SAVE_S = 0.02  #: the stamp is rewritten each time a rent passes a multiple of this (≈ 0.1 ms a write)


def current_mode() -> str:
    """:func:`mode` if active, else ``$HSCC_TRACE_FIRST_USE``, else ``auto``."""
    if _forced:
        return _forced[-1]
    v = os.environ.get(MODE_ENV, "").strip().lower()
    return v if v in MODES else "auto"


@contextlib.contextmanager
def mode(value: str) -> Iterator[None]:
    """Force ``value`` (one of :data:`MODES`) for every kernel while the block runs (process-wide)."""
    if value not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {value!r}")
    _forced.append(value)
    try:
        yield
    finally:
        _forced.pop()


class Kernel:
    """A numba kernel under the first-use rule. ``work(args)`` is the items a call processes,
    ``cost`` its ``(compile_s, interp_s_per_item)``. Inside compiled code it is typed as its
    numba dispatcher (attributes are forwarded), so compiled kernels still call it."""

    def __init__(
        self,
        fn: Callable[..., Any],
        work: Callable[[tuple[Any, ...]], int],
        cost: tuple[float, float],
        options: dict[str, Any] | None = None,
        *,
        name: str | None = None,
        dispatcher: Any = None,
        python: Callable[..., Any] | None = None,
    ) -> None:
        functools.update_wrapper(self, fn)
        self.py_func, self.work = fn, work
        self.options = options or {}
        self.name = name or f"{fn.__module__.removeprefix('hscc_trace.')}.{fn.__name__}"
        self.compile_s, self.interp_s = float(cost[0]), float(cost[1])
        if self.interp_s <= 0:
            raise ValueError(f"{self.name}: a kernel under the first-use rule declares cost=(compile_s, interp_s)")
        self.budget = int(self.compile_s / self.interp_s)  # items interpreted before compiling pays off
        self._dispatcher = dispatcher
        self._python = python
        self._ready: set[tuple[Any, ...]] = set()  # argument types compiled or loaded here
        self._rent: dict[tuple[Any, ...], tuple[int, float]] = {}  # (items, s) interpreted, per types
        self._stamped: dict[tuple[Any, ...], bool] = {}
        self.stats = {"interpreted_calls": 0, "interpreted_items": 0, "interpreted_s": 0.0}
        self.stats.update({"compiled_calls": 0, "first_compiled_s": 0.0})
        REGISTRY.append(self)

    def __call__(self, *args: Any) -> Any:
        key = type_key(args)
        m = current_mode()
        if key in self._ready and m != "interpret":
            self.stats["compiled_calls"] += 1
            return self.dispatcher()(*args)
        return self._first(key, args, m)

    def call_compiled(self, *args: Any) -> Any:
        """Call the compiled code whatever the mode (compiled now if need be, and stamped)."""
        return self._first(type_key(args), args, "compile")

    def _first(self, key: tuple[Any, ...], args: tuple[Any, ...], m: str) -> Any:
        d = self.dispatcher()
        if not hasattr(d, "py_func"):  # NUMBA_DISABLE_JIT: numba gave the function back
            m = "interpret"
        if m == "auto" and not self.is_stamped(key):
            items, rent = self._rent.get(key, (0, 0.0))
            if rent + int(self.work(args)) * (rent / items if items else self.interp_s) <= self.compile_s:
                return self._interpret(args, key)
        if m == "interpret":
            return self._interpret(args)
        new, fresh = key not in self._ready, key not in self._ready and not self.is_stamped(key)
        for listener in list(LISTENERS) if fresh else ():
            listener("compiling", self, 0.0)
        t, cpu = time.perf_counter(), time.thread_time()
        out = d(*args)
        if new:
            self._ready.add(key)
            self.stats["first_compiled_s"] = time.thread_time() - cpu
            took = time.perf_counter() - t
            self._stamp(key)
            for listener in list(LISTENERS):
                listener("compiled" if fresh else "loaded", self, took)
        self.stats["compiled_calls"] += 1
        return out

    def _interpret(self, args: tuple[Any, ...], key: tuple[Any, ...] | None = None) -> Any:
        n = int(self.work(args))
        if n * self.interp_s >= NOTICE_S:
            for listener in list(LISTENERS):
                listener("interpreted", self, n * self.interp_s)
        import numpy as np

        t = time.thread_time()
        # int64 arithmetic wraps silently in compiled code: alike here, without a RuntimeWarning
        with np.errstate(over="ignore"):
            out = self.python()(*args)
        took = time.thread_time() - t
        self.stats["interpreted_calls"] += 1
        self.stats["interpreted_items"] += n
        self.stats["interpreted_s"] += took
        if key is not None:  # (by the rule, not forced)
            items, rent = self._rent.get(key, (0, 0.0))
            self._rent[key] = (items + n, rent + max(took, n * self.interp_s))
            if rent // SAVE_S < self._rent[key][1] // SAVE_S:  # (at each multiple: a run loses < SAVE_S)
                self._stamp(key, "{} {!r}".format(*self._rent[key]))
        return out

    def dispatcher(self) -> Any:
        """The numba dispatcher (numba imported and the dispatcher made on first use)."""
        if self._dispatcher is None:
            from .cache import numba_njit

            self._dispatcher = numba_njit(self.py_func, self.callees, **self.options)
        return self._dispatcher

    @functools.cached_property
    def callees(self) -> str:
        """8 hex digits of the other modules its compiled code is made of and the constants it reads
        (:func:`modules_of`): numba's cache sees edits of the kernel's own file only ("Caching Limitations"
        in numba's docs), so this names its subfolder of numba's cache (:func:`.cache.numba_njit`), and its stamp."""
        names, consts = modules_of(self.py_func, constants=True)
        other = sources_hash(n for n in names if n != self.py_func.__module__)
        return hashlib.sha256(other.encode() + consts).hexdigest()[:8]

    def python(self) -> Callable[..., Any]:
        """The interpreted twin: the same source, calling the interpreted twins of its callees."""
        if self._python is None:
            self._python = pure(self.py_func)
        return self._python

    def __getattr__(self, name: str) -> Any:
        # numba types a global Kernel in compiled code by its dispatcher's _numba_type_ (and reads
        # targetoptions etc.); dunder lookups are not forwarded
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.dispatcher(), name)

    def __repr__(self) -> str:
        return f"<hscc_trace.perf.firstuse.Kernel {self.name}>"

    def stamp_path(self, key: tuple[Any, ...]) -> Path:
        import numba

        from .cache import cache_root

        source = getattr(sys.modules.get(self.py_func.__module__), "__file__", None)
        st = os.stat(source) if source else None  # numba's cache checks its mtime and size
        src = (st.st_mtime_ns, st.st_size, self.callees) if st else None
        numba_dir = os.environ.get("NUMBA_CACHE_DIR") or str(cache_root() / "numba")
        what = (src, numba.__version__, sys.version, platform.machine(), numba_dir, os.environ.get("NUMBA_OPT", ""))
        version = hashlib.sha256(repr(what).encode()).hexdigest()[:8]
        types_ = hashlib.sha256(repr((self.name, key)).encode()).hexdigest()[:12]
        return cache_root() / "compiled" / f"{self.name}-{install_hash()}-{version}-{types_}"

    def is_stamped(self, key: tuple[Any, ...]) -> bool:
        """Compiled into numba's cache for these argument types (an empty stamp)? A rent there counts."""
        if key not in self._stamped:
            with contextlib.suppress(OSError, ValueError, IndexError):
                rent = self.stamp_path(key).read_text().split()
                self._stamped[key] = not rent
                self._rent[key] = (int(rent[0]), float(rent[1]))
        return self._stamped.setdefault(key, False)

    def _stamp(self, key: tuple[Any, ...], rent: str = "") -> None:  # compiled: empty; else the rent
        self._stamped[key] = self._stamped.get(key, False) or not rent
        path = self.stamp_path(key)
        install, version = path.name.split("-")[-3:-1]
        with contextlib.suppress(OSError):  # a read-only cache folder: the next run decides again
            if not path.is_file():  # a new stamp: this install's other versions of the kernel go
                path.parent.mkdir(parents=True, exist_ok=True)
                prune(path.parent, lambda name, i, v: name != self.name or i != install or v == version)
            elif rent and not path.stat().st_size:
                return
            (tmp := path.with_name(f"{path.name}.{os.getpid()}")).write_text(rent)
            os.replace(tmp, path)  # (whole: an empty stamp is never a rent half written)


_STAMP = re.compile(r"(.+)-([0-9a-f]{8})-([0-9a-f]{8})-[0-9a-f]{12}")


@functools.cache
def install_hash() -> str:
    """8 hex digits of the folder holding ``hscc_trace``: the install a stamp belongs to."""
    return hashlib.sha256(str(Path(__file__).resolve().parents[2]).encode()).hexdigest()[:8]


def prune(folder: Path, keep: Callable[[str, str, str], bool]) -> list[str]:
    """Remove from ``folder`` the stamps ``keep(kernel, install, version)`` rejects and every file of
    an older format (``*.json``, ``*.rent``, hashes of another length or number); their names."""
    removed = []
    for f in folder.iterdir():
        m = _STAMP.fullmatch(f.name)
        if m is None or not keep(m[1], m[2], m[3]):
            with contextlib.suppress(OSError):
                f.unlink()
                removed.append(f.name)
    return removed


# ---- argument types ---------------------------------------------------------------------------


def type_key(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """What numba's choice of compiled specialisation depends on, cheaply: per argument the
    array's dtype, dimensions, layout and writeability, or the scalar's kind."""
    return tuple([_key(a) for a in args])


_SCALARS = {int: "i8", float: "f8", bool: "b1"}


def _key(a: Any) -> Any:
    t = type(a)
    s = _SCALARS.get(t)
    if s is not None:
        return s
    dt = getattr(a, "dtype", None)
    if dt is None:
        return (t.__name__, *map(_key, a)) if isinstance(a, tuple) else t.__qualname__
    if a.ndim == 0:  # a numpy scalar: int64 types as int64 whether numpy's or Python's
        return dt.str[1:] if dt.kind in "iufb" else dt.str
    f = a.flags
    return (dt, a.ndim, "C" if f.c_contiguous else "F" if f.f_contiguous else "A", f.writeable)


# ---- the interpreted twin ---------------------------------------------------------------------


def _is_compiled(obj: object) -> bool:
    """A numba dispatcher or a :class:`Kernel` (anything with a Python function behind it)."""
    return isinstance(obj, Kernel) or (hasattr(obj, "py_func") and type(obj).__module__.startswith("numba"))


def _ours(name: str) -> bool:
    return name == "hscc_trace" or name.startswith(("hscc_trace.", "hscc_trace_replay_gen_"))


def pure(fn: Any, _memo: dict[int, Any] | None = None) -> Any:
    """A plain-Python copy of ``fn`` (function, dispatcher or Kernel) whose global references to
    compiled functions — directly or through a module of this project, such as ``R.insert`` —
    are their plain-Python copies too. Runs the same source as the compiled code."""
    memo: dict[int, Any] = {} if _memo is None else _memo
    f = fn.py_func if _is_compiled(fn) else fn
    if not isinstance(f, types.FunctionType):
        return f
    if id(f) in memo:
        return memo[id(f)]
    g: dict[str, Any] = dict(f.__globals__)
    nf = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
    nf.__qualname__, nf.__doc__, nf.__module__ = f.__qualname__, f.__doc__, f.__module__
    memo[id(f)] = nf
    for name in f.__code__.co_names:
        v = g.get(name)
        if _is_compiled(v):
            g[name] = pure(v, memo)
        elif isinstance(v, types.ModuleType) and _ours(v.__name__):
            g[name] = _pure_module(v, memo)
    return nf


def modules_of(*objs: Any, constants: bool = False) -> Any:
    """The modules the compiled code of ``objs`` (functions, dispatchers, Kernels, modules) is made of:
    theirs, every one :func:`pure`'s walk reaches (compiled callees, modules used), those of classes used.
    ``constants``: also the numbers, strings and tuples it reads as globals, frozen in by numba (bytes)."""
    memo: dict[int, Any] = {}
    for o in objs:
        (_pure_module if isinstance(o, types.ModuleType) else pure)(o, memo)
    fns = [v for v in memo.values() if callable(v)]  # (the others: namespaces of the modules reached)
    g = [(n, f.__globals__.get(n)) for f in fns for n in f.__code__.co_names]
    used = {str(getattr(v, "__module__", "")) for _, v in g}
    names = sorted({v.__module__ if callable(v) else v.__name__ for v in memo.values()} | set(filter(_ours, used)))
    consts = repr(sorted({(n, repr(v)) for n, v in g if isinstance(v, (int, float, str, tuple))})).encode()
    return (names, consts) if constants else names


def sources_hash(names: Iterable[str]) -> str:
    """16 hex digits of the source files of the modules ``names``, "" if none has one."""
    files = [(n, getattr(sys.modules.get(n), "__file__", None)) for n in names]
    data = b"".join(n.encode() + Path(f).read_bytes() for n, f in files if f)
    return hashlib.sha256(data).hexdigest()[:16] if data else ""


def _pure_module(mod: types.ModuleType, memo: dict[int, Any]) -> types.SimpleNamespace:
    if id(mod) not in memo:
        ns = memo[id(mod)] = types.SimpleNamespace(__name__=mod.__name__)
        for k, v in vars(mod).items():
            if not k.startswith("__"):
                setattr(ns, k, pure(v, memo) if _is_compiled(v) else v)
    return memo[id(mod)]


def retired_record(module: str, name: str) -> type:
    """A stand-in for a record class (a ``NamedTuple`` kernels take) that ``module`` no longer
    defines, for the module's ``__getattr__``: numba unpickles a kernel's cache index, which names
    its argument classes, before it checks that the index is stale (``numba/core/caching.py``,
    ``_load_index``), so a renamed record crashed the first call instead of being a cache miss."""
    if not name[:1].isupper():
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    from collections import namedtuple

    return namedtuple(name, (), module=module)


def summary() -> list[dict[str, Any]]:
    """Per kernel used in this process: its name, budget, costs and :attr:`Kernel.stats`."""
    return [
        {"kernel": k.name, "budget": k.budget, "compile_s": k.compile_s, "interp_s": k.interp_s, **k.stats}
        for k in REGISTRY
        if k.stats["interpreted_calls"] or k.stats["compiled_calls"]
    ]
