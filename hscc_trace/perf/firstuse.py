"""First use of a compiled kernel: interpreted while the work is small, compiled when it is large.

numba compiles a kernel the first time it is called (seconds each; ≈ 100 s for everything
``analyze`` uses) and keeps the machine code in its cache, from which later runs load it in
milliseconds. Interpreted, the same Python function costs microseconds per packet or ACK: for
the bundled sample, the whole ``analyze`` runs in ≈ 5 s interpreted against ≈ 100 s compiling.
So a kernel that is not compiled yet runs its Python function while the work is small, and is
compiled (numba's event API makes the CLI say so, :mod:`hscc_trace.cli.compiling`) once the
work it has been given in this process outgrows what its compilation costs.

The rule, per kernel and per argument types (``auto``, the default):

1. compiled code already cached (a stamp, below) or already compiled in this process → compiled;
2. otherwise, if the items interpreted so far — in this process and in earlier runs — plus this
   call's stay within the kernel's *budget* → its Python function (the same source,
   :func:`pure`);
3. otherwise compile now, and stamp.

The items earlier runs interpreted are counted in a *rent* file beside the stamp (same name,
``.rent``; written after every :data:`RENT_SAVE_S` interpreted seconds), so a user who analyzes
a mid-sized capture again and again does not pay its interpreted cost on every run: once the
runs together have interpreted the budget, the next one compiles.

The budget of a kernel is ``compile_s / interp_s_per_item``: the number of items whose
interpreted cost equals the cost of compiling — the break-even rule of renting against buying,
which never costs more than twice the better choice made in hindsight. The two figures of each
kernel are measured (``benchmarks/first_use.py``, docs/performance.md) and kept in :data:`COSTS`.

Whether a kernel is already compiled in the cache is not asked of numba (its cache index is
private): after each compilation this module writes a *stamp* file into the hscc-trace cache
folder (``compiled/``, :mod:`.cache`), named by a hash of everything that makes numba's cached
code valid or not: the kernel, the source files it is made of (contents, modification times and
sizes: numba's cache is keyed on the latter, so a reinstall invalidates it), the argument types,
numba's and Python's versions, the machine, and numba's cache folder. A stamp whose cache entry has since
gone (a cleaned numba folder) costs one compilation, announced as usual, and nothing else.

``HSCC_TRACE_FIRST_USE`` (``auto``, ``compile`` or ``interpret``) or :func:`mode` force one
path; ``hscc-trace compile`` compiles everything ahead (``compile`` mode over a generated
capture, :func:`hscc_trace.api.compile_kernels`). Both paths give identical results
(``tests/perf/test_first_use.py``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

#: environment variable that forces one path for every kernel
MODE_ENV = "HSCC_TRACE_FIRST_USE"
MODES = ("auto", "compile", "interpret")

_forced: list[str] = []  # innermost :func:`mode` last
_lock = threading.Lock()

#: every kernel declared with ``@njit(work=…)`` (:mod:`.jit`) and every replay loop wrapped by :func:`wrap`
REGISTRY: list[Kernel] = []

#: called as ``listener(kernel, expected_seconds)`` before a kernel runs interpreted on work
#: expected to take at least :data:`NOTICE_S` (the CLI says so on the terminal; library code
#: never prints)
LISTENERS: list[Callable[[Kernel, float], None]] = []
NOTICE_S = 2.0


def current_mode() -> str:
    """``auto``, ``compile`` or ``interpret``: :func:`mode` if active, else ``$HSCC_TRACE_FIRST_USE``."""
    if _forced:
        return _forced[-1]
    v = os.environ.get(MODE_ENV, "").strip().lower() or "auto"
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


#: interpreted seconds of one kernel (per argument types) after which the items interpreted so
#: far are written to its rent file: the rent of a run's last fraction of a second may be lost,
#: and a run of thousands of tiny calls writes a few files, not thousands
RENT_SAVE_S = 0.25

#: measured by ``benchmarks/first_use.py`` (docs/performance.md, "First use"): per kernel,
#: (seconds to compile, interpreted seconds per item); "replay loop": the median over the
#: default algorithms' loops (bbr's compiles in 23 s, reno's in 2 s)
COSTS: dict[str, tuple[float, float]] = {
    # (the reading and flow-table kernels: benchmarks/first_use.py over samples/reno-bdp and
    # samples/cubic-loss, load average ≈ 3-5; items are bytes for the record walkers, records,
    # packets or samples for the others)
    "capture.reader._walk_pcap": (0.88, 1.8e-07),
    "capture.decode.decode_batch": (6.93, 4.57e-05),
    "capture.decode.decode_batch_flows": (12.12, 3.43e-05),
    "capture.bpf._run": (1.07, 2.83e-05),
    "flows.tracker._flow_kernel": (8.01, 3.2e-05),
    "flows.tracker._group_stats": (4.77, 1.53e-06),
    # (not reached by the benchmark's captures: measured alone the same way, load average ≈ 10;
    # _walk_pcapng over a 12 MB pcapng of 100 000 records, _rehash growing tiny tables)
    "capture.reader._walk_pcapng": (4.4, 2.54e-07),
    "flows.tracker._rehash": (3.05, 7.03e-06),
    "events.prep.group_rows": (0.25, 6.51e-07),
    # (measured alone: 200 000 SACK entries, empty numba cache, load average ≈ 4.9)
    "events.sack._flow_blocks": (3.37, 4.85e-05),
    "events.prep.prep_flows": (3.32, 1.31e-05),
    "events.tables._run_flows": (26.88, 1.29e-05),
    "events.vantage.sender_view": (2.39, 4.33e-06),
    "flows.arena._chains": (0.14, 3.24e-07),
    # (measured alone: 1.28 M arena rows, empty numba cache, load average ≈ 4)
    "flows.arena._drop_rows": (1.81, 1.17e-06),
    "flows.arena._fill": (0.45, 2.16e-06),
    "flows.arena._page_rows": (0.49, 6.13e-07),
    "flows.arena._place": (0.2, 7.31e-07),
    "flows.arena._sparse": (0.26, 6.62e-07),
    # (not reached by the benchmark, which reads regular files: measured alone, reno-bdp's packets
    # table built from the arena, load average ≈ 6)
    "flows.arena._unplace": (2.1, 7.28e-06),
    # (measured alone: 200 000 ACKs — 15 replays × 2 000 rounds for _pairs, 15 ×
    # 200 000 ACK windows for _group —, empty numba cache, load average ≈ 8)
    "analysis.evidence._queue_counts": (3.44, 8.17e-06),
    "analysis.verdict._duel_counts": (1.74, 2.19e-06),
    "analysis.verdict._group": (2.99, 7.04e-06),
    "analysis.verdict._pairs": (4.57, 4.13e-06),
    "replay.metrics._judged_acks": (2.45, 5.75e-06),
    "replay.engine._rate_samples": (0.73, 3.7e-06),
    # (measured alone, load ≈ 1: compiled with an empty numba
    # cache, twice; interpreted three times over samples/reno-bdp's largest flow, 4 677 ACKs)
    "replay.engine._fill_inputs": (0.74, 9.3e-06),
    "reports.decimate._m4_kernel": (0.32, 1.45e-06),
    # (measured alone: 200 000 samples, empty numba cache, load average ≈ 4)
    "reports.decimate._line_kernel": (1.61, 2.57e-06),
    # (not measured by benchmarks/first_use.py: _line_kernel's, the same pass over each series)
    "reports.decimate._lines_kernel": (1.61, 2.57e-06),
    "reports.decimate._runs_kernel": (0.35, 2.01e-06),
    # (measured alone as a batch of 16 columns, load ≈ 0.8:
    # 200 000 values in 16 columns, compiled twice with an empty numba cache, interpreted twice)
    "reports.store._encode_kernel": (0.82, 4.18e-06),
    # (measured alone: 200 000 values, empty numba cache, load average ≈ 4)
    "reports.store._absmax_kernel": (0.29, 1.37e-06),
    # (measured alone: 200 000 values of 3 and 6 decimals, empty numba cache, load
    # average ≈ 4.5)
    "reports.html._text_kernel": (1.65, 1.82e-05),
    "replay loop": (4.79, 8.63e-06),
}


def wrap(
    dispatcher: Any,
    *,
    python: Callable[..., Any],
    work: Callable[[tuple[Any, ...]], int],
    name: str,
    source_key: str,
) -> Kernel:
    """A :class:`Kernel` over an existing numba dispatcher (the generated replay loops), with
    ``python`` as its interpreted twin and ``source_key`` standing for its sources in the stamp."""
    return Kernel(
        dispatcher.py_func, dispatcher, {}, work, COSTS["replay loop"], name, python=python, source_key=source_key
    )


class Kernel:
    """A numba kernel under the first-use rule (module docstring). Inside compiled code it is
    typed as its numba dispatcher (attributes such as ``_numba_type_`` are forwarded), so
    compiled kernels still call it."""

    def __init__(
        self,
        fn: Callable[..., Any],
        dispatcher: Any,
        options: dict[str, Any],
        work: Callable[[tuple[Any, ...]], int],
        cost: tuple[float, float],
        name: str,
        *,
        python: Callable[..., Any] | None = None,
        source_key: str | None = None,
    ) -> None:
        self.py_func = fn
        self.options = options
        self.work = work
        self.compile_s, self.interp_s = float(cost[0]), float(cost[1])
        #: items (per argument types) interpreted before compiling pays off
        self.budget = int(self.compile_s / self.interp_s) if self.interp_s > 0 else 0
        self.name = name
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        self._dispatcher = dispatcher
        self._python = python
        self._source_key = source_key
        self._ready: set[tuple[Any, ...]] = set()  # argument types compiled or loaded here
        self._stamped: dict[Path, bool] = {}  # stamp file → exists
        self._done: dict[tuple[Any, ...], int] = {}  # items interpreted, per argument types
        self._unsaved: dict[tuple[Any, ...], float] = {}  # interpreted seconds not yet in the rent file
        #: what happened in this process: calls and items and seconds on each path
        self.stats = {"interpreted_calls": 0, "interpreted_items": 0, "interpreted_s": 0.0}
        self.stats.update({"compiled_calls": 0, "first_compiled_s": 0.0})
        REGISTRY.append(self)

    # ---- calling --------------------------------------------------------------------------------

    def __call__(self, *args: Any) -> Any:
        key = type_key(args)
        m = current_mode()
        if key in self._ready and m != "interpret":
            if m == "compile":  # (`hscc-trace compile`: the cache folder may be another one now)
                self._stamp(key, 0.0, only_if_missing=True)
            self.stats["compiled_calls"] += 1
            d = self._dispatcher
            return (d if d is not None else self.dispatcher())(*args)
        return self._first(key, args, m)

    def call_compiled(self, *args: Any) -> Any:
        """Call the compiled code whatever the mode (compiled now if need be, and stamped)."""
        key = type_key(args)
        if key in self._ready:
            self.stats["compiled_calls"] += 1
            return self.dispatcher()(*args)
        return self._first(key, args, "compile")

    def _first(self, key: tuple[Any, ...], args: tuple[Any, ...], m: str) -> Any:
        d = self.dispatcher()
        if not hasattr(d, "py_func"):  # NUMBA_DISABLE_JIT: numba gave the function back
            m = "interpret"
        if m == "auto" and self.is_cached(key):
            m = "compile"
        rent = False
        if m == "auto":
            n = int(self.work(args))
            done = self._done.get(key)
            if done is None:  # the first call with these types here: what earlier runs paid
                done = self._rent_paid(key)
            if done + n <= self.budget:
                self._done[key] = done + n
                m, rent = "interpret", True
        if m == "interpret":
            expect = self.work(args) * self.interp_s
            if expect >= NOTICE_S:
                for listener in list(LISTENERS):
                    listener(self, expect)
            import numpy as np

            t = time.perf_counter()
            # int64 arithmetic wraps in the compiled code without a word; its Python twin must give
            # the same results the same way, not a RuntimeWarning on stderr (hostile captures)
            with np.errstate(over="ignore"):
                out = self.python()(*args)
            took = time.perf_counter() - t
            self.stats["interpreted_calls"] += 1
            self.stats["interpreted_items"] += int(self.work(args))
            self.stats["interpreted_s"] += took
            if rent:
                self._unsaved[key] = self._unsaved.get(key, 0.0) + took
                if self._unsaved[key] >= RENT_SAVE_S:
                    self._unsaved[key] = 0.0
                    self._save_rent(key, self._done[key])
            return out
        t = time.perf_counter()
        out = d(*args)
        took = time.perf_counter() - t
        with _lock:
            if key not in self._ready:
                self._ready.add(key)
                self.stats["first_compiled_s"] = took
                self._stamp(key, took)
        self.stats["compiled_calls"] += 1
        return out

    # ---- the two implementations ------------------------------------------------------------------

    def dispatcher(self) -> Any:
        """The numba dispatcher (numba imported and the dispatcher made on first use)."""
        d = self._dispatcher
        if d is None:
            from .cache import numba_njit

            d = self._dispatcher = numba_njit(self.py_func, **self.options)
        return d

    def python(self) -> Callable[..., Any]:
        """The interpreted twin: the same source, calling the interpreted twins of its callees."""
        p = self._python
        if p is None:
            p = self._python = pure(self.py_func)
        return p

    def __getattr__(self, name: str) -> Any:
        # numba types a global Kernel in compiled code by its dispatcher's _numba_type_ (and reads
        # targetoptions etc.); dunder lookups are not forwarded
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.dispatcher(), name)

    def __repr__(self) -> str:
        return f"<hscc_trace.perf.firstuse.Kernel {self.name}>"

    # ---- stamps ---------------------------------------------------------------------------------

    def stamp_path(self, key: tuple[Any, ...]) -> Path:
        from .cache import cache_root

        h = hashlib.sha256(repr((self.name, self.sources(), key, _environment())).encode())
        return cache_root() / "compiled" / f"{self.name}-{h.hexdigest()[:20]}.json"

    def is_cached(self, key: tuple[Any, ...]) -> bool:
        """Was this kernel compiled for these argument types into numba's cache (a stamp exists)?"""
        path = self.stamp_path(key)
        hit = self._stamped.get(path)
        if hit is None:
            hit = self._stamped[path] = path.is_file()
        return hit

    def rent_path(self, key: tuple[Any, ...]) -> Path:
        """The file counting the items earlier runs interpreted with these argument types (the
        rent paid so far, kept beside the stamp it leads to)."""
        return self.stamp_path(key).with_suffix(".rent")

    def _rent_paid(self, key: tuple[Any, ...]) -> int:
        try:
            return max(0, int(self.rent_path(key).read_text().strip() or 0))
        except (OSError, ValueError):  # none yet, or unreadable: start from nothing
            return 0

    def _save_rent(self, key: tuple[Any, ...], items: int) -> None:
        if not self.options.get("cache", True) and self._source_key is None:
            return
        _cache_write(self.rent_path(key), str(items))  # (not written: each run decides alone)

    def _stamp(self, key: tuple[Any, ...], took: float, only_if_missing: bool = False) -> None:
        if not self.options.get("cache", True) and self._source_key is None:
            return
        if only_if_missing and self.is_cached(key):
            return
        path = self.stamp_path(key)
        self._stamped[path] = True
        # (not written: the next run decides again)
        _cache_write(path, json.dumps({"kernel": self.name, "types": repr(key), "first_call_s": round(took, 3)}))

    def sources(self) -> str:
        """What the compiled code is made of: the source files of the kernel's module and of every
        module of this project its globals refer to (a hash), or the given source key."""
        if self._source_key is None:
            self._source_key = _source_hash(self.py_func)
        return self._source_key


def _cache_write(path: Path, text: str) -> None:
    """Write a stamp or rent file atomically (:func:`hscc_trace.atomic.write_text`); a cache
    folder that cannot be written (read-only) leaves it unwritten, never fails the run."""
    from hscc_trace.atomic import write_text
    from hscc_trace.errors import InputError

    try:
        write_text(path, text, "the compile cache")
    except InputError:
        pass


# ---- numba's set-up, ahead of the first kernel ------------------------------------------------

_warming: list[threading.Thread] = []


def _one(x: int) -> int:
    return x + 1


def _warm(modules: tuple[str, ...] = ()) -> None:
    import importlib

    from .cache import cache_root, numba_njit

    use = current_mode() != "interpret"  # (else nothing will be compiled or loaded)
    if use and current_mode() == "auto":  # only when the reading kernels are in the cache (stamped)
        try:
            with os.scandir(cache_root() / "compiled") as it:
                use = any(e.name.startswith("flows.arena.") for e in it)
        except OSError:
            use = False
    if use:
        with contextlib.suppress(Exception):  # advice only: the first real kernel does it otherwise
            numba_njit(_one, cache=True)(1)
    for name in modules:
        with contextlib.suppress(Exception):  # (an import that fails fails again where it is used)
            importlib.import_module(name)


def warm_in_background(*modules: str) -> None:
    """Start numba's one-time set-up in a helper thread (once per process), then import
    ``modules`` there: loading a kernel from numba's cache first sets up numba's CPU target (its
    typing and lowering registries: imports of numba's modules, ≈ 0.2 s of CPU), whichever kernel
    comes first. ``analyze`` calls this before it reads a capture, so that the set-up, and the
    import of the event modules its first batch needs, run while the reader thread reads and the
    compiled flow tracker and arena kernels (which hold no GIL) place the packets, instead of inside
    the load arena's first kernel call and the first batch; that call then finds numba ready (or
    waits for the helper: numba's compiler lock). The set-up is done only when compiled kernels
    will be used: not in ``interpret`` mode, and in ``auto`` mode only when the arena's kernels have
    stamps (a run that interprets everything never sets numba up). Changes no result."""
    with _lock:
        if _warming:
            return
        t = threading.Thread(target=_warm, args=(modules,), name="hscc-numba-setup", daemon=True)
        _warming.append(t)
    t.start()


# ---- argument types ---------------------------------------------------------------------------


def type_key(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """What numba's choice of compiled specialisation depends on, cheaply: per argument the
    array's dtype, dimensions, layout and writeability, or the scalar's kind.

    A numpy array (nearly every argument) is keyed inline, by attribute reads and one lookup,
    without a function call: a run calls its kernels thousands of times with ~8 arrays each,
    and the calls of the general form (:func:`_one_key`) were a sixth of the Python calls of
    ``analyze``'s per-flow analysis."""
    at = _ARRAY_TYPE
    return tuple(
        [
            _ARRAY_KEYS[(a.dtype, a.ndim, a.flags.c_contiguous, a.flags.f_contiguous, a.flags.writeable)]
            if a.__class__ is at
            else _one_key(a)
            for a in args
        ]
    )


_SCALARS = {int: "i8", float: "f8", bool: "b1"}


class _ArrayKeys(dict):  # type: ignore[type-arg]
    """An array's key by (dtype, ndim, C-contiguous, F-contiguous, writeable), made on first
    use: ``dtype.str`` builds a new string on each call, a third of what the key of an array
    cost (a report calls its kernels ≈ 10 000 times)."""

    def __missing__(self, k: tuple[Any, ...]) -> Any:
        dt, nd, c, f, w = k
        if nd == 0:  # a 0-d array: as a numpy scalar (int64 types as int64 whether numpy's or Python's)
            v = dt.str[1:] if dt.kind in "iufb" else dt.str
        else:
            v = (dt.str, nd, "C" if c else "F" if f else "A", bool(w))
        self[k] = v
        return v


_ARRAY_KEYS = _ArrayKeys()
#: ``numpy.ndarray`` once an argument was one (this module does not import numpy): the type
#: :func:`type_key` keys inline
_ARRAY_TYPE: Any = None


def _one_key(a: Any) -> Any:
    global _ARRAY_TYPE
    t = type(a)
    s = _SCALARS.get(t)
    if s is not None:
        return s
    dt = getattr(a, "dtype", None)
    if dt is not None:
        nd = getattr(a, "ndim", 0)
        if nd == 0:  # a numpy scalar: int64 types as int64 whether numpy's or Python's
            return dt.str[1:] if dt.kind in "iufb" else dt.str
        if _ARRAY_TYPE is None and t.__name__ == "ndarray" and t.__module__ == "numpy":
            _ARRAY_TYPE = t
        f = a.flags
        return _ARRAY_KEYS[(dt, nd, f.c_contiguous, f.f_contiguous, f.writeable)]
    if isinstance(a, tuple):
        return (t.__name__, *(_one_key(x) for x in a))
    return t.__qualname__


# ---- stamps: what makes cached code valid -------------------------------------------------------


def _environment() -> tuple[str, ...]:
    import numba

    from .cache import cache_root

    return (
        numba.__version__,
        sys.version,
        platform.machine(),
        # the folder numba caches the project's kernels in (perf.cache.numba_njit)
        os.environ.get("NUMBA_CACHE_DIR") or str(cache_root() / "numba"),
        os.environ.get("NUMBA_OPT", ""),
    )


_PROJECT = ("hscc_trace", "hscc_trace_replay_gen_")


def _ours(name: str) -> bool:
    return name == "hscc_trace" or name.startswith("hscc_trace.") or name.startswith(_PROJECT[1])


def _source_hash(fn: Callable[..., Any]) -> str:
    """sha256 of the source files the compiled code of ``fn`` is made of: its module's, and those
    of every compiled function its code calls (by global name or through a module of this
    project, such as ``core.analyze``), recursively, and of those modules. Follows the code's
    own names only, so the result does not depend on what else the process has imported."""
    files: set[str] = set()
    seen: set[int] = set()

    def add(mod: Any) -> None:
        path = getattr(mod, "__file__", None)
        if path:
            files.add(path)

    def names(code: types.CodeType) -> set[str]:
        out = set(code.co_names)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                out |= names(c)
        return out

    def visit(f: Any) -> None:
        f = getattr(f, "py_func", f)
        if not isinstance(f, types.FunctionType) or id(f) in seen:
            return
        seen.add(id(f))
        add(sys.modules.get(f.__module__))
        used = names(f.__code__)
        for n in used:
            v = f.__globals__.get(n)
            if _is_compiled(v):
                visit(v)
            elif isinstance(v, types.ModuleType) and _ours(v.__name__):
                add(v)
                for attr in used:
                    w = getattr(v, attr, None)
                    if _is_compiled(w):
                        visit(w)

    visit(fn)
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(path.encode() + b"\0" + file_stamp(path).encode() + b"\0")
        with contextlib.suppress(OSError):
            h.update(Path(path).read_bytes())
    return h.hexdigest()[:20]


def file_stamp(path: str | Path) -> str:
    """A file's modification time and size: numba's cache holds a kernel's machine code only for
    the same (mtime, size) of its source file, so a reinstall of the same sources (new mtimes)
    finds nothing cached; the stamps must not claim otherwise."""
    try:
        st = os.stat(path)
    except OSError:
        return ""
    return f"{st.st_mtime_ns}:{st.st_size}"


# ---- the interpreted twin ---------------------------------------------------------------------


def _is_compiled(obj: object) -> bool:
    """A numba dispatcher or a :class:`Kernel` (anything with a Python function behind it)."""
    return isinstance(obj, Kernel) or (hasattr(obj, "py_func") and type(obj).__module__.startswith("numba"))


def pure(fn: Any, _memo: dict[int, Any] | None = None) -> Any:
    """A plain-Python copy of ``fn`` (function, dispatcher or Kernel) whose global references to
    compiled functions — directly or through a module of this project, such as ``R.insert`` —
    are their plain-Python copies too. Runs the same source as the compiled code."""
    memo: dict[int, Any] = {} if _memo is None else _memo
    f = fn.py_func if _is_compiled(fn) else fn
    if not isinstance(f, types.FunctionType):
        return f
    key = id(f)
    if key in memo:
        return memo[key]
    g: dict[str, Any] = dict(f.__globals__)
    nf = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
    nf.__qualname__ = f.__qualname__
    nf.__doc__ = f.__doc__
    nf.__module__ = f.__module__
    memo[key] = nf
    for name in f.__code__.co_names:
        v = g.get(name)
        if v is None:
            continue
        if _is_compiled(v):
            g[name] = pure(v, memo)
        elif isinstance(v, types.ModuleType) and _ours(v.__name__):
            g[name] = _pure_module(v, memo)
    return nf


def _pure_module(mod: types.ModuleType, memo: dict[int, Any]) -> types.SimpleNamespace:
    key = id(mod)
    if key in memo:
        return memo[key]
    ns = types.SimpleNamespace()
    memo[key] = ns
    for k, v in vars(mod).items():
        if k.startswith("__"):
            continue
        setattr(ns, k, pure(v, memo) if _is_compiled(v) else v)
    return ns


def retired_record(module: str, name: str) -> type:
    """A stand-in for a record class (a ``NamedTuple`` kernels take) that ``module`` no longer
    defines, for the module's ``__getattr__``.

    Why: numba's cache index of a kernel holds its compiled signatures, pickled, and a
    ``NamedTuple`` argument type pickles its class by reference. numba unpickles an index before
    it checks that the source file is unchanged (``numba/core/caching.py``, ``_load_index``), so an
    index written by a version whose record class was since renamed or removed raised an
    ``AttributeError`` — a crash on the kernel's first call — instead of counting as stale. With
    the stand-in the index unpickles, its stamp or signatures do not match, and numba compiles
    anew. Would go if numba checked the stamp before unpickling the signatures (or took an
    unpickling error for a cache miss)."""
    if not name[:1].isupper():
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    from collections import namedtuple

    return namedtuple(name, (), module=module)


def snapshot() -> dict[int, dict[str, Any]]:
    """Every kernel's :attr:`Kernel.stats` now (for :func:`summary`'s ``since``)."""
    return {id(k): dict(k.stats) for k in REGISTRY}


def summary(since: dict[int, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Per kernel used in this process (or since a :func:`snapshot`): its name, budget and what
    happened (:attr:`Kernel.stats`; counts and interpreted seconds as differences)."""
    out = []
    for k in REGISTRY:
        st = dict(k.stats)
        old = (since or {}).get(id(k))
        if old is not None:
            for name in ("interpreted_calls", "interpreted_items", "interpreted_s", "compiled_calls"):
                st[name] -= old[name]
        if st["interpreted_calls"] or st["compiled_calls"]:
            out.append({"kernel": k.name, "budget": k.budget, "compile_s": k.compile_s, "interp_s": k.interp_s, **st})
    return out


__all__ = [
    "MODE_ENV",
    "MODES",
    "REGISTRY",
    "Kernel",
    "current_mode",
    "mode",
    "pure",
    "summary",
    "type_key",
    "warm_in_background",
    "wrap",
]
