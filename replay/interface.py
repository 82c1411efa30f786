"""The algorithm interface (in the spirit of Linux ``struct tcp_congestion_ops``).

An algorithm is ONE small module (e.g. ``replay/algorithms/reno.py``) that defines

* hook functions decorated with :func:`hscc_trace.replay._jit.jit` — see :data:`HOOKS`;
* ``ALGORITHMS``: a tuple of :class:`Algorithm` declarations (usually one; presets of the same
  hooks with different parameter defaults may add more, e.g. HRF's comparison rows), whose
  ``state`` lists the algorithm's state fields (:class:`~hscc_trace.replay.state.Field`: name,
  unit, meaning, kind) and ``params`` its parameters — each declared there once.

Named state (:mod:`hscc_trace.replay.state`): every hook receives ``st``, a record with one typed
field per state field (``st.base_rtt``), and ``p``, a record with one field per parameter
(``p.alpha``; a choice is the int index of its name, compared with the module's IntEnum, a bool
is a bool). Older modules declare ``state`` as slot names instead, with integer constants naming
the slots (``W_MAX = 0``, ``P_C = 0``) and ``NSTATE`` / ``NPARAMS``; their ``st`` and ``p`` are
float64 arrays indexed by those constants.

Where an algorithm's two flavors differ in most hooks, each flavor is its own module declaring
the same name with ``flavor=`` set (``cubic_rfc.py``, ``cubic_linux.py``); the registry picks the
module of the flavor a run asks for. Otherwise one module serves both and reads ``tp.flavor``.

Every hook receives ``st`` (the algorithm's private state), ``p`` (its parameters) and ``tp``
(the engine's context, slots in :mod:`hscc_trace.replay.tp`). Windows are packets, times seconds. Hooks change the window by
writing ``tp.cwnd`` (and ``tp.cwnd_cnt``), exactly as Linux modules write ``tp->snd_cwnd``.

Composition (Kyushu-TCP over HighSpeed/CUBIC/…): a module whose declaration has
``wraps=True`` is a *wrapper*. Instead of the plain hooks it may define ``pre_<hook>`` and
``post_<hook>`` for any hook; the engine composes ``wrapper+base`` as

    pre_<hook>(ws, wp, tp, …) -> bool   # False skips the base hook (not for ssthresh/undo_cwnd)
    <base hook>(bs, bp, tp, …)
    post_<hook>(ws, wp, tp, …)          # ssthresh/undo_cwnd: post_<hook>(ws, wp, tp, value) -> value

where the engine passes ``st = (ws, bs)`` and ``p = (wp, bp)``: the wrapper's hooks see only
their own state and parameters; the base runs unchanged on its own. A wrapper's
``init`` is ``pre_init``/``post_init``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from hscc_trace.errors import InputError

from .state import PARAM_KINDS, Field

#: hook name -> (required, signature, contract)
HOOKS: dict[str, tuple[bool, str, str]] = {
    "init": (True, "init(st, p, tp)", "once before the first ACK; the engine has set cwnd = iw and ssthresh = inf"),
    "ssthresh": (
        True,
        "ssthresh(st, p, tp) -> float",
        "congestion event (entry into recovery, RTO from open, ECN): return the new "
        "ssthresh (packets); cwnd is still the pre-event window, tp.event says which",
    ),
    "cong_avoid": (
        True,
        "cong_avoid(st, p, tp, n)",
        "ACK newly acknowledging data outside recovery: grow tp.cwnd for n newly "
        "acked + SACKed packets (slow start and congestion avoidance)",
    ),
    "on_ack": (
        False,
        "on_ack(st, p, tp)",
        "every ACK, after the RTT update and before the state machine (measurements)",
    ),
    "on_rtt_sample": (
        False,
        "on_rtt_sample(st, p, tp, rtt)",
        "each RTT sample (s), after the engine updated min RTT / srtt / round min",
    ),
    "on_round_end": (
        False,
        "on_round_end(st, p, tp)",
        "the ACK that closes an RTT round; tp.round_min_rtt and tp.round_samples describe the round just completed",
    ),
    "on_recovery_exit": (
        False,
        "on_recovery_exit(st, p, tp)",
        "recovery ended; the engine already set cwnd = ssthresh",
    ),
    "on_rto": (
        False,
        "on_rto(st, p, tp)",
        "retransmission timeout; the engine already set ssthresh (hook) and cwnd = 1",
    ),
    "cwnd_event": (
        False,
        "cwnd_event(st, p, tp, event)",
        "flavor linux, the sender transmits with nothing in flight (Linux ca_ops->cwnd_event): "
        "event tp.CA_EVENT_CWND_RESTART after an idle period longer than the RTO (before the "
        "engine restarts the window), then tp.CA_EVENT_TX_START; tp.idle is now − lsndtime (s)",
    ),
    "cong_control": (
        False,
        "cong_control(st, p, tp, n)",
        "every ACK, INSTEAD of the engine's PRR and cong_avoid (Linux "
        "tcp_congestion_ops.cong_control, e.g. BBR): set tp.cwnd from the model; n = "
        "newly acked + SACKed packets; tp.rs_* hold the ACK's delivery-rate sample; the "
        "engine no longer sets cwnd at recovery entry/exit or ECN",
    ),
    "undo_cwnd": (
        False,
        "undo_cwnd(st, p, tp) -> float",
        "the trace proved the reduction spurious: return the restored cwnd "
        "(default max(cwnd, prior_cwnd), Linux tcp_reno_undo_cwnd)",
    ),
}
REQUIRED_HOOKS = tuple(h for h, (req, _, _) in HOOKS.items() if req)
#: hooks whose composed form returns a value (post_<hook> receives and returns it)
VALUE_HOOKS = ("ssthresh", "undo_cwnd")

KINDS = ("float", "int", "bool", "choice")


@dataclass(frozen=True)
class Param:
    """One documented parameter: ``name`` (as in ``algo.name=value``), unit, default, source."""

    name: str
    unit: str
    default: float | int | bool | str
    source: str  # paper section / RFC / Linux file the default comes from
    doc: str
    kind: str = "float"  # float | int | bool | choice
    choices: tuple[str, ...] = ()
    lo: float | None = None  # inclusive bounds for numeric kinds
    hi: float | None = None

    def encode(self, value: Any) -> float:
        """The float stored in the parameter array (choice → index, bool → 0/1)."""
        if self.kind == "choice":
            return float(self.choices.index(value))
        if self.kind == "bool":
            return 1.0 if value else 0.0
        return float(value)

    def typed(self, value: Any) -> float | int | bool:
        """The value of the parameter record's field (choice → index, bool, int or float)."""
        if self.kind == "choice":
            return self.choices.index(value)
        if self.kind == "bool":
            return bool(value)
        return int(value) if self.kind == "int" else float(value)

    def parse(self, text: str, algo: str) -> float | int | bool | str:
        """Parse a command-line value; InputError with the accepted form otherwise."""
        where = f"parameter {algo}.{self.name}"
        t = text.strip()
        if self.kind == "choice":
            if t not in self.choices:
                raise InputError(f"{where}: {t!r} is not one of {', '.join(self.choices)}")
            return t
        if self.kind == "bool":
            low = t.lower()
            if low in ("1", "true", "on", "yes"):
                return True
            if low in ("0", "false", "off", "no"):
                return False
            raise InputError(f"{where}: {t!r} is not a boolean (on/off, true/false, 1/0)")
        try:
            v: float | int = int(t) if self.kind == "int" else float(t)
        except ValueError:
            raise InputError(
                f"{where}: {t!r} is not {'an integer' if self.kind == 'int' else 'a number'} ({self.unit or 'no unit'})"
            ) from None
        if v != v or v in (float("inf"), float("-inf")):
            raise InputError(f"{where}: {t!r} is not a finite number")
        if self.lo is not None and v < self.lo:
            raise InputError(f"{where}: {t} is below the minimum {self.lo:g}")
        if self.hi is not None and v > self.hi:
            raise InputError(f"{where}: {t} is above the maximum {self.hi:g}")
        return v

    def describe_default(self) -> str:
        if self.kind == "bool":
            return "on" if self.default else "off"
        return str(self.default)


@dataclass(frozen=True)
class Signal:
    """A named output column: the value of state slot ``slot`` after each ACK."""

    name: str
    slot: str  # state slot name (module constant ``slot.upper()``)
    unit: str
    doc: str
    kind: str = "float"  # float | bool | enum
    labels: tuple[str, ...] = ()  # enum: value i ↦ labels[i]


@dataclass(frozen=True)
class Algorithm:
    """The declaration of one algorithm (one row of ``hscc-trace algorithms``)."""

    name: str
    summary: str
    citation: str  # the paper section / RFC the module implements
    state: tuple[Field, ...] | tuple[str, ...]  # the state fields (or, unnamed, slot names in slot order)
    params: tuple[Param, ...] = ()
    signals: tuple[Signal, ...] = ()
    default_flavor: str = "rfc"  # value of the common `flavor` parameter
    flavor_doc: str = "rfc: the paper/RFC model; linux: the same algorithm in the Linux TCP core model"
    # the simpler algorithm this one equals while its own mechanism does not engage (HighSpeed
    # below Low_Window is Reno); the verdict names this one only when its replay fits the sender
    # significantly better than the simpler one's (docs/verdicts.md). A wrapper reduces to its base.
    reduces_to: str = ""
    # replayed when no algorithm is named (selection.default_algorithms); False for a declaration
    # whose default-set flavor would repeat another algorithm (newreno's Linux flavor is Linux reno)
    default_set: bool = True
    # the one flavor this declaration implements, when the algorithm's flavors differ in most
    # hooks and live in separate modules (cubic_rfc.py, cubic_linux.py: one declaration each,
    # same name and default_flavor); None: the module implements both and reads tp.flavor
    flavor: str | None = None
    wraps: bool = False  # a wrapper (composed as name+base)
    defaults: dict[str, Any] = field(default_factory=dict)  # preset overrides of param defaults
    doc_page: str = ""  # docs page for this algorithm (relative to docs/)
    module: ModuleType = None  # type: ignore[assignment]  # set by registry.register, never None after it

    @property
    def named(self) -> bool:
        """Whether the state and parameters are records with named fields (``st.base_rtt``)."""
        return any(isinstance(f, Field) for f in self.state)

    @property
    def state_names(self) -> tuple[str, ...]:
        return tuple(f.name if isinstance(f, Field) else f for f in self.state)

    @property
    def state_fields(self) -> tuple[tuple[str, str], ...]:
        """(name, kind) of each state field (named state only)."""
        return tuple((f.name, f.kind) for f in self.state if isinstance(f, Field))

    @property
    def param_fields(self) -> tuple[tuple[str, str], ...]:
        """(name, kind) of each parameter's record field (named state only)."""
        return tuple((p.name, PARAM_KINDS[p.kind]) for p in self.params)


def common_params(algo: Algorithm) -> tuple[Param, ...]:
    """Parameters every algorithm has; the engine reads them (tp.flavor, tp.iw)."""
    return (
        Param(
            "flavor",
            "",
            algo.default_flavor,
            "docs/algorithms.md (flavors)",
            algo.flavor_doc,
            kind="choice",
            choices=("rfc", "linux"),
        ),
        Param(
            "iw",
            "packets",
            10.0,
            "RFC 6928 §2; Linux TCP_INIT_CWND",
            "initial window; 0 = the trace's own first flight",
            lo=0.0,
            hi=1e6,
        ),
    )


#: The parameter ``tick_phase`` of every replay that counts jiffies (cubic flavor linux, westwood,
#: fusion): where the sender's kernel tick falls on the capture's clock (docs/replay.md#jiffies).
TICK_PHASE = Param(
    "tick_phase",
    "s",
    0.0,
    "docs/replay.md#jiffies (Linux aligns its tick to multiples of 1/HZ of CLOCK_MONOTONIC)",
    "where the sender's tick falls on the capture's clock: jiffies = ⌊(t + tick_phase)·HZ⌋ with t "
    "the time since the flow's first ACK; ((first ACK's capture time − (CLOCK_REALTIME − "
    "CLOCK_MONOTONIC of the sender)) mod 1/HZ), 0 when unknown (the tick at the first ACK)",
    lo=0.0,
    hi=1.0,
)


def signal_sources(base: Algorithm, wrapper: Algorithm | None = None) -> list[tuple[Signal, str, str]]:
    """(signal, the Python expression reading it from the loop's ``st``, the kind of what it
    reads: float, int or bool) of every signal, wrapper's first, ordered as the loop writes them:
    the float signals, then the enum ones, then the bool ones (declaration order within each).

    ``st`` is the base's state, or ``(wrapper state, base state)`` for a composition; a named
    state is read by field (``st.diff``), an unnamed one by slot (``st[3]``)."""
    rows: list[tuple[Signal, str, str]] = []
    for at, a in [(0, wrapper), (1, base)] if wrapper else [(-1, base)]:
        assert a is not None
        where = "st" if at < 0 else f"st[{at}]"
        kinds = dict(a.state_fields)
        for s in a.signals:
            if a.named:
                rows.append((s, f"{where}.{s.slot}", kinds[s.slot]))
            else:
                rows.append((s, f"{where}[{a.state_names.index(s.slot)}]", "float"))
    order = {"float": 0, "enum": 1, "bool": 2}
    return sorted(rows, key=lambda r: order.get(r[0].kind, 0))  # (stable: declaration order within)
