"""Per-algorithm loop modules, generated once and compiled with ``numba.njit(cache=True)``.

Why generate code: numba cannot cache a function that receives other jitted functions as
arguments (first-class function types and closures defeat its cache), and its cache does not
notice when a *called* function in another file changes. So for each algorithm (or
``wrapper+base`` composition) we write a tiny module into the cache directory:

* the text of :mod:`hscc_trace.replay._loop` (the engine's event loop, hooks called by name);
* bindings of those names to the algorithm module's hooks (or to composed wrapper+base hooks
  generated here, or to :mod:`hscc_trace.replay._defaults` for omitted optional hooks);
* ``write_signals``, which writes the algorithm's signals of one ACK into the output matrices,
  each read by name from its state (:func:`hscc_trace.replay.interface.signal_sources`);
* ``run_loop_jit = numba.njit(run_loop, cache=True)``.

The file name carries a hash of the engine's source files, the algorithm's module(s) and every
package module they use, plus the numba and Python versions, so any change to the algorithm, a
helper or the engine yields a new module (and a fresh compilation); unchanged code loads the
machine code from numba's cache on later runs.

Cache directory: ``$HSCC_TRACE_CACHE_DIR`` or ``$XDG_CACHE_HOME/hscc-trace`` (default
``~/.cache/hscc-trace``), subfolder ``replay``; a temporary directory if neither is writable.
Each load touches a ``.used`` marker beside the module; when a new version of a loop is
written, versions of it not loaded for 30 days are removed (:func:`prune`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from . import _jit, _loop
from . import state as S
from .interface import HOOKS, VALUE_HOOKS, Algorithm, signal_sources

_LOCK = threading.Lock()

# hook -> extra arguments after (st, p, tp)
_ARGS = {
    "init": "",
    "ssthresh": "",
    "cong_avoid": ", n",
    "on_ack": "",
    "on_rtt_sample": ", rtt",
    "on_round_end": "",
    "on_recovery_exit": "",
    "on_rto": "",
    "cong_control": ", n",
    "undo_cwnd": "",
}
assert set(_ARGS) == set(HOOKS)


def cache_dir() -> Path:
    """The folder of the generated loop modules (:func:`hscc_trace.perf.cache.writable_dir`)."""
    from hscc_trace.perf.cache import writable_dir

    return writable_dir("replay")


_CORE = ("_loop", "_defaults", "_jit", "tp", "helpers", "compile", "interface", "state")


def _deps(mod: ModuleType, seen: dict[str, ModuleType]) -> None:
    """``mod`` and every module of this package it uses (module aliases, imported functions)."""
    name = mod.__name__
    if name in seen:
        return
    seen[name] = mod
    pkg = __name__.rpartition(".")[0]
    for v in list(vars(mod).values()):
        other: ModuleType | None
        if isinstance(v, ModuleType):
            other = v
        else:
            m = getattr(getattr(v, "py_func", v), "__module__", None)
            other = sys.modules.get(m) if isinstance(m, str) else None
        if other is not None and other.__name__.startswith(pkg) and getattr(other, "__file__", None):
            _deps(other, seen)


@cache
def source_hash(*modules: ModuleType) -> str:
    """Hash of the engine's core files, the given algorithm modules and everything they use from
    this package, plus the numba and Python versions: any change there yields a new loop module
    (a fresh compilation); edits to unrelated algorithms do not invalidate this one's cache.

    Memoised per process (file contents are read once per process anyway): ``engine.run`` asks
    for it on every replay, and walking the module dependencies cost ~3 ms a call."""
    import numba

    seen: dict[str, ModuleType] = {}
    pkg = __name__.rpartition(".")[0]
    for c in _CORE:
        _deps(sys.modules.get(f"{pkg}.{c}") or __import__(f"{pkg}.{c}", fromlist=["_"]), seen)
    for m in modules:
        _deps(m, seen)
    h = hashlib.sha256()
    for name in sorted(seen):
        f = Path(str(seen[name].__file__))
        h.update(name.encode())
        h.update(_file_bytes(str(f)))
    h.update(numba.__version__.encode())
    h.update(sys.version.encode())
    h.update(b"nojit" if _jit.NO_JIT else b"jit")
    return h.hexdigest()[:16]


@cache
def _file_bytes(path: str) -> bytes:
    return Path(path).read_bytes()


def _bindings(base: Algorithm, wrapper: Algorithm | None) -> str:
    bmod = base.module.__name__
    lines = [
        "",
        "# ---- generated bindings (do not edit) " + "-" * 40,
        "import numba as _numba",
        "from hscc_trace.replay._jit import jit as _jit_deco",
        f"import {bmod} as _B",
    ]
    if callable(getattr(base.module, "cong_control", None)):
        lines.append("HAS_CONG_CONTROL = True")
    lines += _signal_writer(base, wrapper)
    if wrapper is None:
        for h in HOOKS:
            if callable(getattr(base.module, h, None)):
                lines.append(f"{h} = _B.{h}")
        return "\n".join(lines) + "\n"
    wmod = wrapper.module.__name__
    lines += [f"import {wmod} as _W"]
    for h in HOOKS:
        a = _ARGS[h]
        pre = callable(getattr(wrapper.module, f"pre_{h}", None))
        post = callable(getattr(wrapper.module, f"post_{h}", None))
        has_base = callable(getattr(base.module, h, None))
        if not (pre or post):
            if has_base:
                lines.append("")
                lines.append("@_jit_deco")
                lines.append(f"def {h}(st, p, tp{a}):")
                lines.append(f"    return _B.{h}(st[1], p[1], tp{a})")
            continue
        call_base = f"_B.{h}(st[1], p[1], tp{a})" if has_base else f"_D_{h}(st[1], p[1], tp{a})"
        if not has_base:
            lines.append(f"from hscc_trace.replay._defaults import {h} as _D_{h}")
        body = ["", "@_jit_deco", f"def {h}(st, p, tp{a}):", "    ws = st[0]", "    wp = p[0]"]
        if h in VALUE_HOOKS:
            if pre:
                body.append(f"    _W.pre_{h}(ws, wp, tp{a})")
            body.append(f"    v = {call_base}")
            if post:
                body.append(f"    v = _W.post_{h}(ws, wp, tp{a}, v)")
            body.append("    return v")
        else:
            if pre:
                body.append(f"    if _W.pre_{h}(ws, wp, tp{a}):")
                body.append(f"        {call_base}")
            else:
                body.append(f"    {call_base}")
            if post:
                body.append(f"    _W.post_{h}(ws, wp, tp{a})")
        lines += body
    return "\n".join(lines) + "\n"


def _signal_writer(base: Algorithm, wrapper: Algorithm | None) -> list[str]:
    """``write_signals``: the signals of row ``i`` into ``out`` (float ones, after cwnd and
    ssthresh) and ``codes`` (enum and bool ones, after the state), each read by name."""
    body = ["", "@_jit_deco", "def write_signals(st, i, out, codes, nans, tops):"]
    k_out, k_code = 2, 1
    for s, expr, kind in signal_sources(base, wrapper):
        v = f"(1.0 if {expr} else 0.0)" if kind == "bool" else (f"float({expr})" if kind == "int" else expr)
        if s.kind in ("enum", "bool"):
            body.append(f"    codes[i, {k_code}] = _label_index({v}, tops[{k_code}])")
            k_code += 1
        else:
            body += [f"    v = {v}", f"    out[i, {k_out}] = v", "    if v != v:", f"        nans[{k_out}] = 1"]
            k_out += 1
    if len(body) == 3:
        body.append("    pass")
    return body


def generated_source(base: Algorithm, wrapper: Algorithm | None) -> str:
    src = Path(_loop.__file__).read_text()
    # the template imports relatively; the generated module lives outside the package
    src = src.replace("\nfrom . import ", "\nfrom hscc_trace.replay import ").replace(
        "\nfrom .", "\nfrom hscc_trace.replay."
    )
    header = (
        f"# Generated by hscc_trace.replay.compile for "
        f"{(wrapper.name + '+') if wrapper else ''}{base.name} — do not edit.\n"
    )
    tail = (
        "\nrun_loop_jit = _numba.njit(run_loop, cache=True, nogil=True, error_model='numpy', boundscheck=False, _nrt=False)\n"
        if not _jit.NO_JIT
        else "\nrun_loop_jit = run_loop\n"
    )
    return header + src + _bindings(base, wrapper) + tail


_MODULES: dict[str, ModuleType] = {}

#: a generated module of a loop is removed, with numba's cache of it, once another version of
#: the same loop is written and it has not been loaded for this long (its sources changed: an
#: upgrade, or a developer's edits) — so the cache folder does not grow with every change
PRUNE_AFTER_S = 30 * 86400  # s (30 days)
_PREFIX = "hscc_trace_replay_gen_"


def _last_used(py: Path) -> float:
    """When a generated module was last loaded: its ``.used`` marker's time (touched at every
    load; the module itself keeps its time, which numba's cache checks), else its own."""
    for f in (py.with_suffix(".used"), py):
        with contextlib.suppress(OSError):
            return f.stat().st_mtime
    return 0.0


def prune(folder: Path, key: str, keep: str, now: float | None = None) -> list[str]:
    """Remove the generated modules of loop ``key`` other than ``keep`` (a module name) last
    loaded more than :data:`PRUNE_AFTER_S` ago: the source, its ``.used`` marker and numba's
    cache files of it. Returns the names removed. Another process still running one keeps it
    (Linux unlinks open files without harm; it is written again if used again)."""
    now = time.time() if now is None else now
    removed = []
    for py in folder.glob(f"{_PREFIX}{key}_*.py"):
        name = py.stem
        if name == keep or not re.fullmatch(r"[0-9a-f]{16}", name.removeprefix(f"{_PREFIX}{key}_")):
            continue  # this version, or another loop whose key starts with this one's
        if now - _last_used(py) <= PRUNE_AFTER_S:
            continue
        for f in (py, py.with_suffix(".used"), *(folder / "__pycache__").glob(f"{name}.*")):
            with contextlib.suppress(OSError):
                f.unlink()
        removed.append(name)
    return removed


def loop_module(base: Algorithm, wrapper: Algorithm | None = None) -> ModuleType:
    """The generated loop module for ``base`` (optionally wrapped); written and imported once."""
    key = (wrapper.module.__name__.rpartition(".")[2] + "_" if wrapper else "") + base.module.__name__.rpartition(".")[
        2
    ]
    mods = (base.module, wrapper.module) if wrapper else (base.module,)
    modname = f"{_PREFIX}{key}_{source_hash(*mods)}"
    with _LOCK:
        if modname in _MODULES:
            return _MODULES[modname]
        path = cache_dir() / f"{modname}.py"
        text = generated_source(base, wrapper)
        if not path.exists() or path.read_text() != text:
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(text)
            os.replace(tmp, path)
            prune(path.parent, key, modname)  # a new version: old ones unused for long go
        with contextlib.suppress(OSError):
            path.with_suffix(".used").touch()
        spec = importlib.util.spec_from_file_location(modname, path)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[modname] = mod
        from hscc_trace.perf.cache import numba_settings_lock

        with numba_settings_lock:  # (its njit(cache=True) must see numba's own cache rule)
            spec.loader.exec_module(mod)
        _MODULES[modname] = mod
        return mod


def loop_function(
    base: Algorithm, wrapper: Algorithm | None = None, compiled: bool | None = None
) -> Callable[..., Any]:
    """``run_loop(ev, tp, st, p, tops, out, codes, nans)``: compiled (``True``), the same source as plain
    Python (``False``), or by the first-use rule (``None``, :mod:`hscc_trace.perf.firstuse`):
    compiled when numba's cache holds it, else interpreted until the ACKs replayed by this loop
    in this process outgrow what compiling it costs."""
    mod = loop_module(base, wrapper)
    if compiled is False or _jit.NO_JIT:
        return _pure_loop(mod.__name__)
    k = _policy_loop(mod.__name__)
    return k.call_compiled if compiled else k


@cache
def _policy_loop(modname: str) -> Any:
    from hscc_trace.perf import firstuse

    label = modname.removeprefix(_PREFIX).rsplit("_", 1)[0]
    mod = sys.modules[modname]
    return firstuse.wrap(
        mod.run_loop_jit,
        python=_pure_loop(modname),
        work=lambda a: len(a[0]),
        name=f"replay loop of {label}",
        # the name hashes the sources; numba's cache also wants the same file (mtime and size)
        source_key=f"{modname}:{firstuse.file_stamp(str(mod.__file__))}",
    )


@cache
def _pure_loop(modname: str) -> Callable[..., Any]:
    """The loop as plain Python; named state and parameters run on their interpreted twins
    (:func:`hscc_trace.replay.state.interp`), the state copied back into its record after."""
    loop = _jit.pure(sys.modules[modname].run_loop)

    def run_loop(ev: Any, tp: Any, st: Any, p: Any, *rest: Any) -> Any:
        sv, tv = S.interp(st), S.interp(tp)
        n = loop(ev, tv, sv, S.interp(p), *rest)
        S.write_back(sv, st)
        S.write_back(tv, tp)
        return n

    return run_loop
