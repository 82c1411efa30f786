"""The registry: the one source of truth for algorithms, their parameters and signals.

Algorithm modules in :mod:`hscc_trace.replay.algorithms` are discovered (every module defining ``ALGORITHMS``) and each
declaration is checked when registered — a missing required hook, a state/parameter slot whose
module constant disagrees with its position, or a signal naming an unknown slot fails loudly
(:class:`RegistrationError`).

``wrapper+base`` (e.g. ``kyushu+highspeed``) composes a wrapper over any base algorithm.
Parameters are overridden with ``algo.name=value`` strings (:func:`parse_overrides`).

``python -m hscc_trace.replay.registry --markdown`` prints the parameter tables of
docs/algorithms.md.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from hscc_trace.errors import InputError

from . import state as S
from .interface import HOOKS, REQUIRED_HOOKS, Algorithm, Param, Signal, common_params
from .state import KINDS, Field

#: the package whose modules are the algorithms (one algorithm module per file; see its docstring)
_PKG = f"{__package__ or 'hscc_trace.replay'}.algorithms"


class RegistrationError(RuntimeError):
    """An algorithm module breaks the interface contract (a programming error, not user input)."""


FLAVORS = ("rfc", "linux")

#: name -> the declaration replayed by default (for an algorithm split by flavor, the module of
#: its default flavor)
_REGISTRY: dict[str, Algorithm] = {}
#: name -> flavor -> declaration, for algorithms whose flavors live in separate modules
_SPLIT: dict[str, dict[str, Algorithm]] = {}
_DISCOVERED = False


def register(algo: Algorithm, module: ModuleType) -> Algorithm:
    """Check ``algo`` against ``module`` and add it to the registry.

    An algorithm may be split by flavor into two modules (``Algorithm.flavor`` set): each
    declares the same name and ``default_flavor`` and one flavor of its own; the declaration of
    the default flavor is what :func:`get` returns, and :func:`resolve` picks the module of the
    flavor a run asks for."""
    name = algo.name
    where = f"algorithm {name!r} ({module.__name__})"
    if not name or any(c in name for c in ".,=+ "):
        raise RegistrationError(f"{where}: names may not contain '.', ',', '=', '+' or spaces")
    if algo.flavor is not None:
        if algo.flavor not in FLAVORS or algo.wraps:
            raise RegistrationError(f"{where}: flavor must be rfc or linux, and a wrapper cannot be split by flavor")
        twins = _SPLIT.get(name, {})
        other = twins.get(algo.flavor)
        if other is not None and other.module is not module:
            raise RegistrationError(f"{where}: flavor {algo.flavor} already registered by {other.module.__name__}")
        if any(t.default_flavor != algo.default_flavor for t in twins.values()):
            raise RegistrationError(f"{where}: the flavors of one algorithm must declare the same default_flavor")
        if name in _REGISTRY and _REGISTRY[name].flavor is None:
            raise RegistrationError(f"{where}: name already registered by {_REGISTRY[name].module.__name__}")
    elif name in _REGISTRY and _REGISTRY[name].module is not module:
        raise RegistrationError(f"{where}: name already registered by {_REGISTRY[name].module.__name__}")
    if algo.wraps:
        hooks = [f"{w}_{h}" for h in HOOKS for w in ("pre", "post")]
        if not any(callable(getattr(module, h, None)) for h in hooks):
            raise RegistrationError(f"{where}: a wrapper must define at least one pre_/post_ hook")
    else:
        missing = [h for h in REQUIRED_HOOKS if not callable(getattr(module, h, None))]
        if missing:
            raise RegistrationError(f"{where}: missing required hook(s): {', '.join(missing)}")
    if algo.named:
        _check_fields(where, module, algo)
    else:
        _check_slots(where, module, "state", list(algo.state_names), "", "NSTATE")
        _check_slots(where, module, "parameter", [p.name for p in algo.params], "P_", "NPARAMS")
    names = [p.name for p in algo.params]
    for c in common_params(algo):
        if c.name in names:
            raise RegistrationError(f"{where}: parameter {c.name!r} is reserved for the engine")
    if len(set(names)) != len(names):
        raise RegistrationError(f"{where}: duplicate parameter names")
    for p in algo.params:
        if not p.source or not p.doc:
            raise RegistrationError(f"{where}: parameter {p.name!r} needs a source and a doc line")
        if p.kind == "choice" and p.default not in p.choices:
            raise RegistrationError(f"{where}: default of {p.name!r} is not one of its choices")
    allp = {p.name: p for p in (*common_params(algo), *algo.params)}
    for k in algo.defaults:
        if k not in allp:
            raise RegistrationError(f"{where}: preset default for unknown parameter {k!r}")
    if algo.default_flavor not in ("rfc", "linux"):
        raise RegistrationError(f"{where}: default_flavor must be rfc or linux")
    for s in algo.signals:
        if s.slot not in algo.state_names:
            raise RegistrationError(f"{where}: signal {s.name!r} names unknown state slot {s.slot!r}")
        if s.kind == "enum" and not s.labels:
            raise RegistrationError(f"{where}: enum signal {s.name!r} has no labels")
    object.__setattr__(algo, "module", module)
    if algo.flavor is None:
        _REGISTRY[name] = algo
    else:
        _SPLIT.setdefault(name, {})[algo.flavor] = algo
        if algo.flavor == algo.default_flavor:
            _REGISTRY[name] = algo
    return algo


def _check_fields(where: str, module: ModuleType, algo: Algorithm) -> None:
    """Named state: every field a Field of a known kind, names unique, and no slot constants
    (each field is declared once, in the declaration)."""
    if not all(isinstance(f, Field) for f in algo.state):
        raise RegistrationError(f"{where}: state mixes Field rows and slot names")
    names = algo.state_names
    if len(set(names)) != len(names) or not all(n.isidentifier() for n in names):
        raise RegistrationError(f"{where}: state field names must be unique identifiers")
    for f in algo.state:
        assert isinstance(f, Field)
        if f.kind not in KINDS:
            raise RegistrationError(f"{where}: state field {f.name!r} has unknown kind {f.kind!r}")
    slots = [n.upper() for n in names] + ["P_" + p.name.upper() for p in algo.params] + ["NSTATE", "NPARAMS"]
    found = [c for c in slots if isinstance(getattr(module, c, None), int)]
    if found:
        raise RegistrationError(f"{where}: named state has no slot constants (found {', '.join(found)})")


def _check_slots(where: str, module: ModuleType, what: str, names: list[str], prefix: str, count: str) -> None:
    for i, s in enumerate(names):
        const = prefix + s.upper()
        v = getattr(module, const, None)
        if v != i or not isinstance(v, int):
            raise RegistrationError(f"{where}: {what} slot {s!r} must be module constant {const} = {i} (found {v!r})")
    n = getattr(module, count, None)
    if n != len(names):
        raise RegistrationError(f"{where}: {count} must be {len(names)} (found {n!r})")


def discover() -> dict[str, Algorithm]:
    """Import every module of :mod:`hscc_trace.replay.algorithms` once; return the registry (name → Algorithm)."""
    global _DISCOVERED
    if not _DISCOVERED:
        pkg = importlib.import_module(_PKG)
        for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
            if info.name.startswith("_") or info.ispkg:
                continue
            mod = importlib.import_module(f"{_PKG}.{info.name}")
            for algo in getattr(mod, "ALGORITHMS", ()):
                register(algo, mod)
        for name, twins in _SPLIT.items():
            if set(twins) != set(FLAVORS):
                raise RegistrationError(
                    f"algorithm {name!r}: split by flavor, but only {', '.join(sorted(twins))} found"
                )
        for name, algo in _REGISTRY.items():
            if algo.reduces_to and (algo.reduces_to not in _REGISTRY or _REGISTRY[algo.reduces_to].wraps):
                raise RegistrationError(f"algorithm {name!r}: reduces_to names no registered base algorithm")
        _DISCOVERED = True
    return dict(_REGISTRY)


def flavors(name: str) -> dict[str, Algorithm]:
    """flavor -> declaration for an algorithm split by flavor into modules; {} otherwise."""
    discover()
    return dict(_SPLIT.get(name, {}))


def names() -> list[str]:
    return sorted(discover())


def get(name: str) -> Algorithm:
    reg = discover()
    if name not in reg:
        raise InputError(
            f"unknown algorithm {name!r} (known: {', '.join(sorted(reg))}; compose a wrapper as wrapper+base)"
        )
    return reg[name]


# --- resolved, runnable algorithms --------------------------------------------------------------


@dataclass(frozen=True)
class Resolved:
    """An algorithm ready to run: declarations, parameter values and their encoded arrays."""

    name: str  # "reno", "kyushu+highspeed"
    base: Algorithm
    wrapper: Algorithm | None
    values: dict[str, Any]  # every parameter (common + wrapper + base) -> value actually used
    changed: dict[str, Any]  # parameters differing from the declared defaults

    @property
    def label(self) -> str:
        """Name plus non-default parameters, e.g. ``reno[flavor=rfc]``."""
        if not self.changed:
            return self.name
        return self.name + "[" + ",".join(f"{k}={_fmt(v)}" for k, v in self.changed.items()) + "]"

    @property
    def params(self) -> tuple[Param, ...]:
        return all_params(self.base, self.wrapper)

    def param_array(self) -> np.ndarray:
        """Wrapper parameters then base parameters as floats (common ones live in tp)."""
        ps = (*(self.wrapper.params if self.wrapper else ()), *self.base.params)
        return np.array([p.encode(self.values[p.name]) for p in ps], dtype=np.float64)

    def new_state(self) -> Any:
        """Fresh (zero) state as the loop receives it: the base's, or (wrapper's, base's) for a
        composition — each a record (named state) or a float64 array (slots)."""
        st = [_state_of(a) for a in self._parts()]
        return tuple(st) if self.wrapper else st[0]

    def new_params(self) -> Any:
        """The parameters as the loop receives them, shaped as :meth:`new_state`."""
        ps = [self._params_of(a) for a in self._parts()]
        return tuple(ps) if self.wrapper else ps[0]

    def signals(self) -> list[Signal]:
        """The signals in declaration order, wrapper's first."""
        return [s for a in self._parts() for s in a.signals]

    def _parts(self) -> list[Algorithm]:
        return [self.wrapper, self.base] if self.wrapper else [self.base]

    def _params_of(self, a: Algorithm) -> Any:
        if a.named:
            return S.record(a.param_fields, {p.name: p.typed(self.values[p.name]) for p in a.params})
        return np.array([p.encode(self.values[p.name]) for p in a.params], dtype=np.float64)


def _state_of(a: Algorithm) -> Any:
    if a.named:
        return S.record(a.state_fields)
    return np.zeros(len(a.state), dtype=np.float64)


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def all_params(base: Algorithm, wrapper: Algorithm | None = None) -> tuple[Param, ...]:
    return (*common_params(base), *(wrapper.params if wrapper else ()), *base.params)


def _defaults(base: Algorithm, wrapper: Algorithm | None) -> dict[str, Any]:
    vals = {p.name: p.default for p in all_params(base, wrapper)}
    if wrapper:
        vals.update(wrapper.defaults)
    vals.update(base.defaults)
    return vals


def resolve(name: str, overrides: dict[str, Any] | None = None) -> Resolved:
    """Look up ``name`` (``algo`` or ``wrapper+base``) and apply ``overrides``.

    Override values may be strings (parsed and validated) or already-typed values.
    """
    name = name.strip()
    if "+" in name:
        wname, _, bname = name.partition("+")
        wrapper, base = get(wname.strip()), get(bname.strip())
        if not wrapper.wraps:
            raise InputError(f"{wname!r} is not a wrapper algorithm; only wrappers compose as wrapper+base")
        if base.wraps:
            raise InputError(f"{bname!r} is a wrapper and cannot be a base algorithm")
        name = f"{wrapper.name}+{base.name}"
        clash = {p.name for p in wrapper.params} & {p.name for p in (*base.params, *common_params(base))}
        if clash:
            raise InputError(f"{name}: parameter name clash between wrapper and base: {', '.join(sorted(clash))}")
    else:
        base, wrapper = get(name), None
        if base.wraps:
            raise InputError(f"{name!r} is a wrapper: compose it over a base, e.g. {name}+highspeed")
    twins = flavors(base.name)
    flavor = base.defaults.get("flavor", base.default_flavor)
    if twins and "flavor" in (overrides or {}):
        v = overrides["flavor"]  # type: ignore[index]
        fp = common_params(base)[0]
        flavor = fp.parse(v, name) if isinstance(v, str) else fp.parse(_fmt(v), name)
        base = twins[str(flavor)]
    declared = _defaults(base, wrapper)
    values = dict(declared)
    byname = {p.name: p for p in all_params(base, wrapper)}
    for k, v in (overrides or {}).items():
        if k not in byname:
            other = [f for f, a in twins.items() if f != flavor and any(p.name == k for p in a.params)]
            if other:
                raise InputError(
                    f"parameter {name}.{k} applies to flavor {other[0]} only (this replay uses flavor {flavor})"
                )
            raise InputError(f"unknown parameter {name}.{k} (parameters: {', '.join(sorted(byname))})")
        p = byname[k]
        values[k] = p.parse(v, name) if isinstance(v, str) else p.parse(_fmt(v), name)
    changed = {k: v for k, v in values.items() if v != declared[k]}
    return Resolved(name=name, base=base, wrapper=wrapper, values=values, changed=changed)


def parse_overrides(items: Iterable[str], algos: Iterable[str]) -> dict[str, dict[str, str]]:
    """``["cubic.c=0.5", "reno.flavor=rfc"]`` → ``{"cubic": {"c": "0.5"}, "reno": {...}}``.

    ``algos`` are the requested algorithm names; a parameter for any other name is an error.
    """
    wanted = [a.strip() for a in algos]
    out: dict[str, dict[str, str]] = {a: {} for a in wanted}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not value.strip():
            raise InputError(f"--param {item!r}: expected algo.name=value")
        algo, dot, pname = key.strip().rpartition(".")
        if not dot or not algo or not pname:
            raise InputError(f"--param {item!r}: expected algo.name=value")
        if algo not in out:
            raise InputError(f"--param {item!r}: algorithm {algo!r} is not among --algo ({', '.join(wanted)})")
        out[algo][pname] = value
    return out


def resolve_many(algos: Iterable[str], params: Iterable[str] = ()) -> list[Resolved]:
    """``--algo a,b`` and ``--param algo.name=value`` lists → resolved algorithms (validated)."""
    wanted = [a.strip() for a in algos if a.strip()]
    if not wanted:
        raise InputError("no algorithm given (see `hscc-trace algorithms`)")
    ov = parse_overrides(params, wanted)
    return [resolve(a, ov[a]) for a in wanted]


# --- documentation --------------------------------------------------------------------------


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def variants(a: Algorithm) -> list[tuple[str | None, Algorithm]]:
    """(flavor, declaration) per module of an algorithm: one (None, a) unless it is split by
    flavor, then the default flavor first."""
    twins = _SPLIT.get(a.name)
    if not twins:
        return [(None, a)]
    return sorted(twins.items(), key=lambda kv: kv[0] != a.default_flavor)


def param_rows(a: Algorithm) -> list[tuple[Param, Any]]:
    """(parameter, documented default) of one declaration, as the docs and `algorithms` list them."""
    if a.wraps:
        return [(p, p.default) for p in a.params]
    vals = _defaults(a, None)
    return [(p, vals[p.name]) for p in all_params(a)]


def markdown() -> str:
    """The generated part of docs/algorithms.md: an index and, per algorithm, its parameters
    (unit, default, source) and signals — straight from the declarations."""
    reg = discover()
    lines = ["| algorithm | what it is | implements | default flavor | details |", "|---|---|---|---|---|"]
    for name in sorted(reg):
        a = reg[name]
        kind = f" Wrapper: compose as `{name}+base`." if a.wraps else ""
        details = f"[{a.doc_page}]({a.doc_page})" if a.doc_page else "[below](#building-blocks)"
        lines.append(
            f"| [`{name}`](#{name}) | {_cell(a.summary)}.{kind} | {_cell(a.citation)} | "
            f"{'—' if a.wraps else a.default_flavor} | {details} |"
        )
    lines.append("")
    for name in sorted(reg):
        a = reg[name]
        lines += [
            f"### {name}",
            "",
            f"{a.summary}. Implements: {a.citation}."
            + (f" Details: [{a.doc_page}]({a.doc_page})." if a.doc_page else ""),
            "",
        ]
        if a.defaults:
            lines += [
                "Preset of module `"
                + a.module.__name__.rpartition(".")[2]
                + "` with "
                + ", ".join(f"`{k}={_fmt(v)}`" for k, v in a.defaults.items())
                + ".",
                "",
            ]
        for flavor, decl in variants(a):
            if flavor is not None:
                mod = decl.module.__name__.rpartition(".")[2]
                default = " (the default)" if flavor == a.default_flavor else ""
                lines += [f"Flavor `{flavor}`{default}: module `{mod}`.", ""]
            lines += ["| parameter | unit | default | source | meaning |", "|---|---|---|---|---|"]
            for p, d in param_rows(decl):
                choices = f" (one of {', '.join(p.choices)})" if p.kind == "choice" else ""
                lines.append(
                    f"| `{p.name}` | {p.unit or '—'} | {_fmt(d)} | {_cell(p.source)} | {_cell(p.doc)}{choices} |"
                )
            lines.append("")
        if a.signals:
            lines += ["| signal | unit | meaning |", "|---|---|---|"]
            for sg in a.signals:
                extra = f" ({', '.join(f'{lab}' for lab in sg.labels)})" if sg.labels else ""
                lines.append(f"| `{sg.name}` | {sg.unit or '—'} | {_cell(sg.doc)}{extra} |")
            lines.append("")
    return "\n".join(lines)


BEGIN = "<!-- BEGIN GENERATED: python -m hscc_trace.replay.registry --update docs/algorithms.md -->"
END = "<!-- END GENERATED -->"


def update_doc(path: str | Path) -> bool:
    """Replace the generated block of ``path`` (between BEGIN/END markers); True if it changed."""
    p = Path(path)
    text = p.read_text()
    if BEGIN not in text or END not in text:
        raise RuntimeError(f"{p}: generated-block markers not found")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    new = head + BEGIN + "\n\n" + markdown() + "\n" + END + tail
    if new != text:
        p.write_text(new)
        return True
    return False


def generated_block(path: str | Path) -> str:
    """The generated block currently in ``path`` (for the up-to-date test)."""
    text = Path(path).read_text()
    return text.partition(BEGIN)[2].partition(END)[0].strip("\n")


def table_rows() -> list[dict[str, Any]]:
    """One dict per (algorithm, parameter) for `hscc-trace algorithms --json`; ``flavor`` names
    the flavor a row applies to when the algorithm's flavors are separate modules (else null)."""
    rows = []
    for name, a in sorted(discover().items()):
        for flavor, decl in variants(a):
            for p, d in param_rows(decl):
                rows.append(
                    {
                        "algorithm": name,
                        "flavor": flavor,
                        "parameter": p.name,
                        "unit": p.unit,
                        "default": d,
                        "choices": list(p.choices),
                        "source": p.source,
                        "doc": p.doc,
                    }
                )
    return rows


if __name__ == "__main__":  # pragma: no cover - doc generator
    if "--markdown" in sys.argv[1:]:
        sys.stdout.write(markdown() + "\n")
    elif "--update" in sys.argv[1:]:
        target = sys.argv[sys.argv.index("--update") + 1]
        sys.stdout.write(("updated " if update_doc(target) else "up to date ") + target + "\n")
    else:
        for n in names():
            sys.stdout.write(n + "\n")
