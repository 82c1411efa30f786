"""Which algorithms a run replays, and with which parameters: names and ``--param`` overrides
validated against the registry (:mod:`.registry`), the default selection, and the labels that
results are keyed by."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hscc_trace.errors import UsageError

from . import registry


def algorithms() -> list[str]:
    """Names of every registered algorithm (wrappers such as ``kyushu`` included), sorted."""
    return list(registry.names())


#: Bases a wrapper algorithm (Kyushu-TCP) is composed over by default: the ones its paper uses.
WRAPPER_BASES = ("highspeed", "cubic")


def default_algorithms() -> list[str]:
    """What `analyze` replays when no algorithm is named: every registered algorithm in its
    default flavor (Linux's, wherever the algorithm has one) but those declared out of the
    default set (``newreno``: its Linux flavor is ``reno``), with each wrapper composed over the
    bases of :data:`WRAPPER_BASES` that are registered (``kyushu+highspeed``, ``kyushu+cubic``)."""
    reg = registry.discover()
    plain = [n for n in sorted(reg) if not reg[n].wraps and reg[n].default_set]
    wrapped = [f"{w}+{b}" for w in sorted(reg) if reg[w].wraps for b in WRAPPER_BASES if b in plain]
    return plain + wrapped


@dataclass(frozen=True)
class Selection:
    """Algorithms to replay, validated: names as requested, the parameter overrides given, the
    labels results are keyed by (name plus non-default parameters, e.g. ``reno[flavor=rfc]``)
    and, per label, every parameter with the value used (defaults filled in)."""

    names: tuple[str, ...]
    overrides: dict[str, dict[str, Any]]
    labels: tuple[str, ...]
    values: dict[str, dict[str, Any]]


def select(names: Iterable[str] | None = None, params: dict[str, dict[str, Any]] | None = None) -> Selection:
    """Validate algorithm names and parameter overrides against the registry.

    ``names`` None means :func:`default_algorithms`. Raises :class:`UsageError` for a parameter
    given for an algorithm that is not selected, and the registry's one-line
    :class:`InputError` for an unknown algorithm or parameter or an invalid value.
    """
    chosen = list(dict.fromkeys(n.strip() for n in names)) if names is not None else default_algorithms()
    if not chosen:
        raise UsageError("no algorithm given (see `hscc-trace algorithms`)")
    params = params or {}
    stray = [a for a in params if a not in chosen]
    if stray:
        raise UsageError(
            f"parameters given for {', '.join(stray)}, which is not among the algorithms run ({', '.join(chosen)})"
        )
    labels: list[str] = []
    values: dict[str, dict[str, Any]] = {}
    for name in chosen:
        r = registry.resolve(name, params.get(name, {}))
        labels.append(r.label)
        values[r.label] = dict(r.values)
    return Selection(
        names=tuple(chosen), overrides={a: dict(p) for a, p in params.items()}, labels=tuple(labels), values=values
    )


def select_params(
    names: Sequence[str] | None, configured: dict[str, dict[str, Any]], given: dict[str, dict[str, Any]] | None = None
) -> dict[str, dict[str, Any]]:
    """Parameter overrides for a run of ``names`` (None = the defaults).

    ``configured`` (from a configuration file) may hold tables for registered algorithms that
    this run does not replay: those are dropped. Tables for names that are not registered at
    all stay, so that :func:`resolve` reports the typo. ``given`` (``--param``) is applied on
    top, name by name, and is never dropped.
    """
    from hscc_trace import config as _config

    chosen = set(names) if names is not None else set(default_algorithms())
    known = set(algorithms()) | set(default_algorithms())
    kept = {a: t for a, t in configured.items() if a in chosen or a not in known}
    return _config.merge_params(kept, given or {})


_MEMO: dict[Any, list] = {}


def resolved(algorithms: Sequence[str] | None, params: dict[str, dict[str, Any]] | None) -> list:
    """The registry's resolved algorithms for a selection; memoised (per process) because
    :func:`hscc_trace.api.replay` runs once per flow and resolving 15 algorithms costs ~0.3 ms — much of a
    short flow's replay. Resolved algorithms are immutable, so sharing them is safe."""
    try:
        key = (
            None if algorithms is None else tuple(algorithms),
            tuple(sorted((a, tuple(sorted(p.items()))) for a, p in (params or {}).items())),
        )
        hash(key)
    except TypeError:  # unhashable parameter values: resolve every time
        key = None
    if key is not None and key in _MEMO:
        return _MEMO[key]
    sel = select(algorithms, params)
    out = [registry.resolve(n, sel.overrides.get(n, {})) for n in sel.names]
    if key is not None and len(_MEMO) < 64:
        _MEMO[key] = out
    return out
