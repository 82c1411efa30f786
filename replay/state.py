"""Named algorithm state: one declaration gives a numba record and an interpreted twin.

An algorithm declares its state once, as :class:`Field` rows in ``Algorithm.state``; its
parameters are its ``Algorithm.params``. From them:

* :func:`record` makes a numpy structured scalar (``np.void``) with one typed field each
  (float64, int64 or bool). numba types it as a record and passes it by reference, so a compiled
  hook reads and writes ``st.base_rtt`` in place, at the cost of an array slot read (a load at a
  fixed offset).
* :func:`interp` makes its interpreted twin: the same names on a float64 array (an
  ``ndarray`` subclass with one property per field), because attribute access on numpy's own
  record scalars costs ≈ 2 µs in Python (≈ 30 times an array slot). A bool field reads back as
  a bool and an int field as an int; :func:`write_back` copies the values into the record.

Choice parameters are ints compared with an :class:`enum.IntEnum` declared in the algorithm's
module (``p.recovery_exit == RecoveryExit.NEW_ACK``); :func:`choice_names` lists its members as
the parameter's choices, so the names are declared once.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

#: field kind -> numpy type of the record field
KINDS: dict[str, type] = {"float": np.float64, "int": np.int64, "bool": np.bool_}
#: parameter kind -> field kind (a choice is the index of one of its names)
PARAM_KINDS = {"float": "float", "int": "int", "bool": "bool", "choice": "int"}


@dataclass(frozen=True)
class Field:
    """One state field of an algorithm: its name (``st.<name>``), unit, meaning and kind."""

    name: str
    unit: str
    doc: str
    kind: str = "float"  # float | int | bool


def choice_names(choices: type[enum.IntEnum]) -> tuple[str, ...]:
    """The choice names of a parameter from the IntEnum its hooks compare with (members 0, 1, …
    in order; names lower-cased)."""
    members = list(choices)
    if [int(m) for m in members] != list(range(len(members))):
        raise ValueError(f"{choices.__name__}: members must be numbered 0, 1, … in order")
    return tuple(m.name.lower() for m in members)


def dtype(fields: Iterable[tuple[str, str]]) -> np.dtype:
    """The record type of (name, kind) fields, aligned as a C struct."""
    return np.dtype([(n, KINDS[k]) for n, k in fields], align=True)


def record(fields: tuple[tuple[str, str], ...], values: dict[str, Any] | None = None) -> np.void:
    """A record of ``fields`` (zeros, or ``values`` by name): what compiled hooks receive."""
    a = np.zeros(1, dtype(fields))
    for k, v in (values or {}).items():
        a[0][k] = v
    return a[0]


class Interp(np.ndarray):
    """Interpreted state: a float64 array whose fields are also properties (see :func:`interp`)."""

    FIELDS: tuple[tuple[str, str], ...] = ()


def _setter(i: int) -> Callable[[np.ndarray, Any], None]:
    def put(self: np.ndarray, v: Any) -> None:
        self[i] = v

    return put


def _getter(i: int, kind: str) -> Callable[[np.ndarray], Any]:
    if kind == "float":
        return operator.itemgetter(i)  # (a C getter: as fast as indexing)
    if kind == "bool":
        return lambda self: bool(self[i] != 0.0)
    return lambda self: int(self[i])


@cache
def interp_class(fields: tuple[tuple[str, str], ...]) -> type[Interp]:
    ns: dict[str, Any] = {"FIELDS": fields, "__slots__": ()}
    for i, (n, k) in enumerate(fields):
        ns[n] = property(_getter(i, k), _setter(i))
    return type("InterpState", (Interp,), ns)


def _fields_of(dt: np.dtype) -> tuple[tuple[str, str], ...]:
    kind = {np.dtype(t): k for k, t in KINDS.items()}
    assert dt.names is not None
    return tuple((n, kind[dt.fields[n][0]]) for n in dt.names)  # type: ignore[index]


def interp(rec: Any) -> Any:
    """The interpreted twin of a record (a tuple of them, for a wrapper and its base: each), with
    the record's values; a float64 array (an algorithm without named state) is returned as is."""
    if isinstance(rec, tuple):
        return tuple(interp(r) for r in rec)
    if not isinstance(rec, np.void):
        return rec
    fields = _fields_of(rec.dtype)
    v = np.array([float(rec[n]) for n, _ in fields], dtype=np.float64).view(interp_class(fields))
    return v


def write_back(view: Any, rec: Any) -> None:
    """Copy an interpreted twin's values into its record (each tuple member into its own)."""
    if isinstance(rec, tuple):
        for v, r in zip(view, rec, strict=True):
            write_back(v, r)
        return
    if not isinstance(rec, np.void):
        return
    for n, _ in view.FIELDS:
        rec[n] = getattr(view, n)


def copy(x: Any) -> Any:
    """A copy of a record, a float64 array or a tuple of them (a fresh state per flow)."""
    if isinstance(x, tuple):
        return tuple(copy(v) for v in x)
    if isinstance(x, np.void):
        a = np.empty(1, x.dtype)
        a[0] = x
        return a[0]
    return x.copy()
