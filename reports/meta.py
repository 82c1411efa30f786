"""What the replay registry says about an algorithm label: its signals and parameters.

The report uses this to title signal rows with their units, shade boolean and enumerated
signals correctly, and document every parameter (unit, default, source). Labels are the
registry's (``reno``, ``reno[flavor=rfc]``, ``kyushu+highspeed``); a label the registry does not
know (or a registry that cannot be imported) gives empty answers and the report falls back to
what the replay DataFrame itself shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any


@dataclass(frozen=True)
class SignalInfo:
    name: str
    unit: str
    doc: str
    kind: str = "float"  # float | bool | enum
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class ParamInfo:
    name: str
    unit: str
    default: Any
    source: str
    doc: str


def base_name(label: str) -> str:
    """``reno[flavor=rfc]`` → ``reno``."""
    return label.split("[", 1)[0].strip()


@lru_cache(maxsize=256)
def _resolved(label: str) -> Any:
    try:
        from hscc_trace.replay import registry
    except Exception:  # registry missing or broken: the report still renders from the data
        return None
    try:
        return registry.resolve(base_name(label))
    except Exception:
        return None


def signals(label: str) -> dict[str, SignalInfo]:
    """Signal name → unit, doc and kind, as declared by the algorithm (empty when unknown)."""
    r = _resolved(label)
    if r is None:
        return {}
    out = {}
    for s in r.signals():
        out[s.name] = SignalInfo(s.name, s.unit, s.doc, getattr(s, "kind", "float"), tuple(getattr(s, "labels", ())))
    return out


def params(label: str) -> dict[str, ParamInfo]:
    """Parameter name → unit, default, source and doc (empty when unknown)."""
    r = _resolved(label)
    if r is None:
        return {}
    return {p.name: ParamInfo(p.name, p.unit, p.default, p.source, p.doc) for p in r.params}


def summary(label: str) -> str:
    """One line naming the algorithm and where it comes from (paper section / RFC)."""
    r = _resolved(label)
    if r is None:
        return ""
    parts = []
    for a in ([r.wrapper] if r.wrapper else []) + [r.base]:
        parts.append(
            f"{a.name}: {a.summary} ({a.citation})" if getattr(a, "citation", "") else f"{a.name}: {a.summary}"
        )
    return "; ".join(parts)
