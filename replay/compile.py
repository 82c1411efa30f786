"""Per-algorithm loop modules, generated once and compiled with ``numba.njit(cache=True)``.

numba cannot cache a function that receives other jitted functions as arguments, and its cache
does not notice when a *called* function in another file changes. So for each algorithm (or
``wrapper+base`` composition) a module is written into the cache folder's ``replay/``: the text
of :mod:`hscc_trace.replay._loop` (the event loop, hooks called by name), bindings of those
names to the algorithm's hooks (composed wrapper+base hooks, or :mod:`hscc_trace.replay._defaults`),
``write_signals`` (the algorithm's signals of one ACK into the output matrices) and
``run_loop_jit = numba.njit(run_loop, cache=True)``. Its name carries a hash of every source it
is made of and of numba's and Python's versions: a change yields a new module and a fresh
compilation; versions of a loop written over 30 days before a new one go (:func:`prune`).
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
_ARGS = dict.fromkeys(("init", "ssthresh", "on_ack", "on_round_end", "on_recovery_exit", "on_rto", "undo_cwnd"), "")
_ARGS.update(cong_avoid=", n", on_rtt_sample=", rtt", cwnd_event=", event", cong_control=", n")
assert set(_ARGS) == set(HOOKS)


def cache_dir() -> Path:
    """The folder of the generated loop modules (:func:`hscc_trace.perf.cache.writable_dir`)."""
    from hscc_trace.perf.cache import writable_dir

    return writable_dir("replay")


_CORE = ("_loop", "_defaults", "_jit", "tp", "helpers", "compile", "interface", "state")


@cache
def source_hash(*modules: ModuleType) -> str:
    """Hash of the engine's core, the algorithm modules, every module their compiled code is made of
    (:func:`hscc_trace.perf.firstuse.modules_of`), numba's and Python's versions (memoised)."""
    import numba

    from hscc_trace.perf.firstuse import modules_of, sources_hash

    pkg = __name__.rpartition(".")[0]
    core = [sys.modules.get(f"{pkg}.{c}") or __import__(f"{pkg}.{c}", fromlist=["_"]) for c in _CORE]
    names, constants = modules_of(*core, *modules, constants=True)
    h = hashlib.sha256(sources_hash(names).encode() + constants)
    h.update(numba.__version__.encode())
    h.update(sys.version.encode())
    h.update(b"nojit" if _jit.NO_JIT else b"jit")
    return h.hexdigest()[:16]


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
                lines += ["", "@_jit_deco", f"def {h}(st, p, tp{a}):", f"    return _B.{h}(st[1], p[1], tp{a})"]
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
    # the template imports relatively; the generated module lives outside the package
    src = Path(_loop.__file__).read_text().replace("\nfrom . import ", "\nfrom hscc_trace.replay import ")
    src = src.replace("\nfrom .", "\nfrom hscc_trace.replay.")
    label = f"{wrapper.name}+{base.name}" if wrapper else base.name
    header = f"# Generated by hscc_trace.replay.compile for {label} — do not edit.\n"
    njit = "_numba.njit(run_loop, cache=True, nogil=True, error_model='numpy', boundscheck=False, _nrt=False)"
    return header + src + _bindings(base, wrapper) + f"\nrun_loop_jit = {'run_loop' if _jit.NO_JIT else njit}\n"


_MODULES: dict[str, ModuleType] = {}

#: when a version of a loop is written, the others written more than this long ago go
PRUNE_AFTER_S = 30 * 86400  # s (30 days)
_PREFIX = "hscc_trace_replay_gen_"


def prune(folder: Path, key: str, keep: str, now: float | None = None) -> list[str]:
    """Remove the versions of loop ``key`` but ``keep`` written more than :data:`PRUNE_AFTER_S`
    ago, with numba's cache files of them (a version still in use is written again); their names."""
    now = time.time() if now is None else now
    removed = []
    for py in folder.glob(f"{_PREFIX}{key}_*.py"):
        name = py.stem
        if name == keep or not re.fullmatch(r"[0-9a-f]{16}", name.removeprefix(f"{_PREFIX}{key}_")):
            continue  # this version, or another loop whose key starts with this one's
        with contextlib.suppress(OSError):
            if now - py.stat().st_mtime > PRUNE_AFTER_S:
                for f in (py, *(folder / "__pycache__").glob(f"{name}.*")):
                    f.unlink()
                removed.append(name)
    return removed


def loop_module(base: Algorithm, wrapper: Algorithm | None = None) -> ModuleType:
    """The generated loop module for ``base`` (optionally wrapped); written and imported once."""
    key = "_".join(a.module.__name__.rpartition(".")[2] for a in (wrapper, base) if a is not None)
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
            prune(path.parent, key, modname)
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
    """``run_loop(ev, tp, st, p, tops, out, codes, nans)``: compiled (``True``), the same source as
    plain Python (``False``), or by the first-use rule (``None``, :mod:`hscc_trace.perf.firstuse`)."""
    mod = loop_module(base, wrapper)
    if compiled is False or _jit.NO_JIT:
        return _pure_loop(mod.__name__)
    k = _policy_loop(mod.__name__)
    return k.call_compiled if compiled else k


#: the replay loops' (compile_s, interp_s per ACK): medians over the default algorithms' loops by
#: benchmarks/first_use.py, in CPU seconds (bbr's: 27.5 s and 70 µs, reno's: 3.9 s and 23 µs)
LOOP_COST = (6.0, 2.87e-05)


@cache
def _policy_loop(modname: str) -> Any:
    from hscc_trace.perf.firstuse import Kernel

    label = modname.removeprefix(_PREFIX).rsplit("_", 1)[0]
    d = sys.modules[modname].run_loop_jit
    name, python = f"replay loop of {label}", _pure_loop(modname)
    return Kernel(d.py_func, lambda a: len(a[0]), LOOP_COST, name=name, dispatcher=d, python=python)


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
