"""Named algorithm state (replay/state.py): records, their interpreted twins, the registry's checks."""

from __future__ import annotations

import enum
import inspect
import re
import types
from pathlib import Path

import numpy as np
import pytest

from hscc_trace.replay import registry
from hscc_trace.replay import state as S
from hscc_trace.replay import tp as tp_module
from hscc_trace.replay.interface import Algorithm, Param, Signal
from hscc_trace.replay.registry import RegistrationError
from hscc_trace.replay.state import Field

FIELDS = (("x", "float"), ("n", "int"), ("on", "bool"))


def test_record_fields_are_typed_and_interp_round_trips():
    rec = S.record(FIELDS, {"x": 1.5, "n": 3, "on": True})
    assert rec.dtype["x"] == np.float64 and rec.dtype["n"] == np.int64 and rec.dtype["on"] == np.bool_
    v = S.interp(rec)
    assert (v.x, v.n, v.on) == (1.5, 3, True)
    assert type(v.n) is int and type(v.on) is bool
    v.x = v.x * 2
    v.n += 1
    v.on = not v.on
    assert rec["x"] == 1.5  # the twin is a copy until written back
    S.write_back(v, rec)
    assert (float(rec["x"]), int(rec["n"]), bool(rec["on"])) == (3.0, 4, False)


def test_interp_of_a_composition_and_of_slot_arrays():
    arr = np.zeros(2)
    rec = S.record(FIELDS)
    w, b = S.interp((rec, arr))
    assert b is arr and w.FIELDS == FIELDS
    c = S.copy((rec, arr))
    c[0]["n"] = 7
    c[1][0] = 1.0
    assert rec["n"] == 0 and arr[0] == 0.0


def test_choice_names_need_members_numbered_in_order():
    class Ok(enum.IntEnum):
        FULL_ACK = 0
        NEW_ACK = 1

    class Gap(enum.IntEnum):
        A = 0
        B = 2

    assert S.choice_names(Ok) == ("full_ack", "new_ack")
    with pytest.raises(ValueError, match="numbered"):
        S.choice_names(Gap)


def _named(**kw) -> Algorithm:
    base = dict(
        name="fake_named",
        summary="s",
        citation="c",
        state=(Field("x", "packets", "doc"),),
        params=(Param("k", "packets", 1.0, "src", "doc"),),
        signals=(Signal("x", "x", "packets", "doc"),),
    )
    base.update(kw)
    return Algorithm(**base)


def _module(**attrs) -> types.ModuleType:
    m = types.ModuleType("hscc_trace.replay.fake_named_for_test")
    for h in ("init", "ssthresh", "cong_avoid"):
        setattr(m, h, lambda *a: None)
    for k, v in attrs.items():
        setattr(m, k, v)
    return m


def test_named_state_is_declared_once():
    with pytest.raises(RegistrationError, match="no slot constants.*X"):
        registry.register(_named(), _module(X=0))
    with pytest.raises(RegistrationError, match="no slot constants.*P_K"):
        registry.register(_named(), _module(P_K=0))
    with pytest.raises(RegistrationError, match="unknown kind"):
        registry.register(_named(state=(Field("x", "", "d", "complex"),)), _module())
    with pytest.raises(RegistrationError, match="mixes"):
        registry.register(_named(state=(Field("x", "", "d"), "y")), _module())
    with pytest.raises(RegistrationError, match="unknown state slot 'nope'"):
        registry.register(_named(signals=(Signal("y", "nope", "", "d"),)), _module())
    assert "fake_named" not in registry.discover()


_BARE = re.compile(r"\b(?:st|ws|bs|p|wp)\[")


def test_no_named_algorithm_hook_indexes_its_state_or_parameters():
    named = {a.module for a in registry.discover().values() if a.named}
    converted = {"vegas", "reno", "highspeed", "kyushu", "compound", "cubic_linux", "bbr"}
    assert {m.__name__.rpartition(".")[2] for m in named} >= converted
    for mod in named:
        src = inspect.getsource(mod)
        assert not _BARE.search(src), f"{mod.__name__}: {_BARE.search(src)}"


def test_no_hook_or_helper_indexes_the_transport_state():
    # tp is a record (replay/tp.py FIELDS): hooks read tp.cwnd, never tp[CWND]; only the engine,
    # which fills the slots, and tp.py, which declares them, index the array
    replay = Path(inspect.getfile(tp_module)).parent
    bare = re.compile(r"\btp\[")
    sources = [
        *sorted((replay / "algorithms").glob("*.py")),
        *(replay / n for n in ("helpers.py", "_loop.py", "_defaults.py", "interface.py")),
    ]
    assert len(sources) >= 15
    for f in sources:
        m = bare.search(f.read_text())
        assert m is None, f"{f.name}: indexes tp[ at {m.start() if m else 0}"
    assert bare.search("x = tp[CWND]")  # (the pattern finds what it is for)
