"""The algorithm interface, registry, composition, compilation cache and compiled/plain parity."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs
from replay_synth import MSS, rich, stream

from hscc_trace import schema
from hscc_trace.errors import InputError
from hscc_trace.perf import firstuse
from hscc_trace.replay import _jit, engine, registry
from hscc_trace.replay import compile as C
from hscc_trace.replay.interface import Algorithm, Param, Signal
from hscc_trace.replay.registry import RegistrationError

ROOT = Path(__file__).resolve().parents[2]


def all_algorithms() -> list[str]:
    reg = registry.discover()
    plain = sorted(n for n, a in reg.items() if not a.wraps)
    wrapped = [f"{w}+{b}" for w, a in sorted(reg.items()) if a.wraps for b in ("highspeed", "cubic", "reno")]
    return plain + wrapped


# --- registration --------------------------------------------------------------------------------


def _fake_module(**attrs) -> types.ModuleType:
    m = types.ModuleType("hscc_trace.replay.fake_for_test")
    m.NSTATE = 1
    m.NPARAMS = 1
    m.X = 0
    m.P_K = 0
    for h in ("init", "ssthresh", "cong_avoid"):
        setattr(m, h, lambda *a: None)
    for k, v in attrs.items():
        if v is None:
            delattr(m, k)
        else:
            setattr(m, k, v)
    return m


def _algo(**kw) -> Algorithm:
    base = dict(
        name="fake",
        summary="s",
        citation="c",
        state=("x",),
        params=(Param("k", "packets", 1.0, "src", "doc"),),
        signals=(Signal("x", "x", "packets", "doc"),),
    )
    base.update(kw)
    return Algorithm(**base)


def test_registration_missing_required_hook_fails_loudly():
    with pytest.raises(RegistrationError, match="missing required hook.*cong_avoid"):
        registry.register(_algo(), _fake_module(cong_avoid=None))


def test_registration_state_constant_mismatch_fails():
    with pytest.raises(RegistrationError, match="state slot 'x' must be module constant X = 0"):
        registry.register(_algo(), _fake_module(X=3))
    with pytest.raises(RegistrationError, match="NSTATE must be 1"):
        registry.register(_algo(), _fake_module(NSTATE=2))


def test_registration_param_and_signal_checks():
    with pytest.raises(RegistrationError, match="parameter slot 'k' must be module constant P_K"):
        registry.register(_algo(), _fake_module(P_K=None))
    with pytest.raises(RegistrationError, match="unknown state slot 'nope'"):
        registry.register(_algo(signals=(Signal("y", "nope", "", "d"),)), _fake_module())
    with pytest.raises(RegistrationError, match="reserved for the engine"):
        registry.register(_algo(params=(Param("flavor", "", 1.0, "s", "d"),)), _fake_module(P_FLAVOR=0, P_K=None))
    with pytest.raises(RegistrationError, match="needs a source"):
        registry.register(_algo(params=(Param("k", "packets", 1.0, "", "doc"),)), _fake_module())
    with pytest.raises(RegistrationError, match="may not contain"):
        registry.register(_algo(name="a.b"), _fake_module())
    assert "fake" not in registry.discover()


def test_every_registered_algorithm_documents_params_and_signals():
    reg = registry.discover()
    for name in ("reno", "newreno", "westwood", "vegas", "highspeed", "cubic"):
        a = reg[name]
        assert a.citation and a.module.__doc__ and len(a.module.__doc__) > 200
        for p in registry.all_params(a):
            assert p.source and p.doc


# --- parameters ------------------------------------------------------------------------------------


def test_param_override_parsing_and_labels():
    r = registry.resolve("cubic", {"flavor": "linux", "hystart": "off", "HZ": "1000"})
    assert r.values["flavor"] == "linux" and r.values["hystart"] is False and r.values["HZ"] == 1000.0
    assert r.label == "cubic[hystart=off,HZ=1000]"  # flavor linux is the default: not in the label
    assert r.base.module.__name__.endswith("cubic_linux") and "C" not in r.values
    p = r.param_array()
    assert p[2] == 0.0 and p[3] == 1000.0  # hystart (bool → 0), HZ
    r = registry.resolve("cubic", {"flavor": "rfc", "C": "0.5"})
    assert r.base.module.__name__.endswith("cubic_rfc") and r.values["C"] == 0.5 and "HZ" not in r.values
    assert r.label == "cubic[flavor=rfc,C=0.5]"
    assert r.param_array()[0] == 0.5
    assert registry.resolve("reno").label == "reno"
    assert registry.resolve("newreno").values["recovery_exit"] == "full_ack"


def test_split_flavor_rejects_a_parameter_of_the_other_flavor():
    with pytest.raises(
        InputError, match=r"parameter cubic.C applies to flavor rfc only \(this replay uses flavor linux\)"
    ):
        registry.resolve("cubic", {"flavor": "linux", "C": "0.5"})
    with pytest.raises(InputError, match="parameter cubic.HZ applies to flavor linux only"):
        registry.resolve("cubic", {"flavor": "rfc", "HZ": "100"})
    assert set(registry.flavors("cubic")) == {"rfc", "linux"} and registry.flavors("reno") == {}


@pytest.mark.parametrize(
    "items,msg",
    [
        (["cubic.flavor=rfc", "cubic.C=abc"], "parameter cubic.C: 'abc' is not a number"),
        (["cubic.flavor=bsd"], "not one of rfc, linux"),
        (["cubic.nope=1"], "unknown parameter cubic.nope"),
        (["reno.L=1"], "algorithm 'reno' is not among --algo"),
        (["cubic.C"], "expected algo.name=value"),
        (["cubic.flavor=rfc", "cubic.beta=2"], "above the maximum 1"),
        (["cubic.hystart=maybe"], "not a boolean"),
        (["cubic.flavor=rfc", "cubic.C=nan"], "not a finite number"),
    ],
)
def test_param_errors_are_one_line_input_errors(items, msg):
    with pytest.raises(InputError, match=msg):
        registry.resolve_many(["cubic"], items)


def test_unknown_algorithm_and_bad_composition():
    with pytest.raises(InputError, match="unknown algorithm 'foo'"):
        registry.resolve("foo")
    with pytest.raises(InputError, match="not a wrapper"):
        registry.resolve("reno+cubic")


# --- composition (wrapper+base) -----------------------------------------------------------------------


WRAPPER_SRC = '''
"""Test wrapper: caps the base's window at `cap` packets and counts ssthresh calls."""
from hscc_trace.replay._jit import jit
from hscc_trace.replay.interface import Algorithm, Param, Signal
from hscc_trace.replay.tp import CWND

CALLS = 0  # ssthresh calls seen
NSTATE = 1
P_CAP = 0  # packets
NPARAMS = 1


@jit
def post_cong_avoid(st, p, tp, n):
    if tp[CWND] > p[P_CAP]:
        tp[CWND] = p[P_CAP]


@jit
def pre_ssthresh(st, p, tp):
    st[CALLS] += 1.0


@jit
def post_ssthresh(st, p, tp, v):
    return v - 1.0


ALGORITHMS = (Algorithm(name="capper", summary="cap", citation="test", state=("calls",),
                        params=(Param("cap", "packets", 12.0, "test", "cap"),),
                        signals=(Signal("calls", "calls", "", "ssthresh calls"),), wraps=True),)
'''


@pytest.fixture(scope="module")
def capper_module(tmp_path_factory):
    d = tmp_path_factory.mktemp("wrapmod")
    (d / "capper_wrap_test.py").write_text(WRAPPER_SRC)
    sys.path.insert(0, str(d))
    import capper_wrap_test

    yield capper_wrap_test
    sys.path.remove(str(d))


@pytest.fixture
def capper(capper_module):
    # registered only for the test using it (the registry is process-wide)
    registry.register(capper_module.ALGORITHMS[0], capper_module)
    yield capper_module
    registry._REGISTRY.pop("capper", None)


def test_wrapper_composes_over_base(capper):
    # Reno (linux) slow start from 10: 11, 12, then capped at 12 by the wrapper's post hook.
    # At the loss (ACK3): the base's ssthresh = 12 >> 1 = 6, the wrapper's post hook subtracts 1 → 5;
    # the wrapper's own state counted one call; its signal comes first, then the base's.
    specs = [{}, {}, {}, {"a": 0, "state": "recovery", "event": "fast_retransmit"}]
    out = engine.replay(stream(specs), MSS, ["capper+reno"])["capper+reno"]
    assert out["cwnd"].to_list()[:3] == [11.0, 12.0, 12.0]
    assert out["ssthresh"][3] == 5.0
    assert out["calls"].to_list() == [0.0, 0.0, 0.0, 1.0]
    assert out.columns[len(schema.REPLAY_BASE) :] == ["calls", "cwnd_limited", "phase"]
    r = registry.resolve("capper+reno", {"cap": "11", "flavor": "rfc"})
    assert r.label == "capper+reno[flavor=rfc,cap=11]"
    assert list(r.param_array()) == [11.0, 2.0, 1.0]  # wrapper params first, then the base's
    pure_out = engine.replay(stream(specs), MSS, ["capper+reno"], compiled=False)["capper+reno"]
    assert pure_out.equals(out)


def test_wrapper_cannot_run_alone(capper):
    with pytest.raises(InputError, match="is a wrapper"):
        registry.resolve("capper")


# --- compilation cache ---------------------------------------------------------------------------


def test_generated_loop_module_is_cached_and_keyed_by_source_hash():
    r = registry.resolve("reno")
    mod = C.loop_module(r.base)
    path = Path(mod.__file__)
    assert path.parent == C.cache_dir() and C.source_hash(r.base.module) in path.name
    # the hash covers the engine core and what the algorithm uses, not unrelated algorithms
    assert C.source_hash(r.base.module) != C.source_hash(registry.get("cubic").module)
    assert "run_loop_jit = _numba.njit(run_loop, cache=True" in path.read_text()
    assert C.loop_module(r.base) is mod
    if not _jit.NO_JIT:
        # compiled on purpose: under the first-use rule this one-ACK replay would run interpreted
        # (and write no numba cache) whenever no earlier test has compiled this loop version
        with firstuse.mode("compile"):
            engine.run(r, engine.prepare(stream([{}]), MSS))
        # numba's cache: beside the module, or under NUMBA_CACHE_DIR when it is set (in a folder
        # named after the module's folder)
        user = os.environ.get("NUMBA_CACHE_DIR")
        where = Path(user).rglob if user else (path.parent / "__pycache__").glob
        cached = list(where(path.stem + ".run_loop-*.nbi"))
        assert cached, "numba cache index missing"


def test_old_versions_of_a_loop_written_30_days_ago_are_pruned(tmp_path):
    """When a version of a loop is written, the other versions of the same loop written more than
    PRUNE_AFTER_S (30 days) ago go with numba's cache files; a recent one, the current one and
    another loop's module (its key starting with this one's) stay."""
    now = 1_000_000_000.0
    old, recent, current = (f"{C._PREFIX}reno_{h * 16}" for h in "abc")
    other = f"{C._PREFIX}reno_x_{'d' * 16}"  # key "reno_x", not "reno"
    (tmp_path / "__pycache__").mkdir()
    for name, days in ((old, 31), (recent, 29), (current, 40), (other, 40)):
        (tmp_path / f"{name}.py").write_text("")
        (tmp_path / "__pycache__" / f"{name}.run_loop-143.py311.nbi").write_text("")
        os.utime(tmp_path / f"{name}.py", (0, now - days * 86400))
    assert C.prune(tmp_path, "reno", current, now=now) == [old]
    left = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert not [n for n in left if n.startswith(old)]
    assert {f"{recent}.py", f"{current}.py", f"{other}.py"} <= set(left)
    assert len([n for n in left if n.endswith(".nbi")]) == 3


def test_no_jit_environment_runs_plain_python(tmp_path):
    # HSCC_TRACE_NO_JIT=1 from process start: everything is plain Python; results equal compiled.
    code = textwrap.dedent("""
        import sys, polars as pl
        sys.path.insert(0, %r)
        from replay_synth import rich, MSS
        from hscc_trace.replay import engine, _jit
        assert _jit.NO_JIT
        out = engine.replay(rich(12), MSS, ["reno", "cubic"], ["cubic.flavor=linux"])
        pl.concat([df.select("cwnd", "ssthresh") for df in out.values()]).write_parquet(%r)
    """) % (str(ROOT / "tests" / "replay"), str(tmp_path / "nojit.parquet"))
    env = dict(os.environ, HSCC_TRACE_NO_JIT="1")
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT, timeout=300)
    out = engine.replay(rich(12), MSS, ["reno", "cubic"], ["cubic.flavor=linux"], compiled=True)
    ref = pl.concat([df.select("cwnd", "ssthresh") for df in out.values()])
    assert pl.read_parquet(tmp_path / "nojit.parquet").equals(ref)


# --- parity: compiled and plain Python give identical outputs ----------------------------------------


@pytest.fixture(scope="module")
def rich_prep():
    return engine.prepare(rich(40), MSS)


@pytest.mark.parametrize("flavor", ["rfc", "linux"])
def test_parity_compiled_vs_python_every_algorithm(rich_prep, flavor):
    for name in all_algorithms():
        r = registry.resolve(name, {"flavor": flavor})
        fast = engine.run(r, rich_prep, compiled=True)
        slow = engine.run(r, rich_prep, compiled=False)
        assert fast.equals(slow), f"{r.label}: compiled and plain-Python replays differ"
        assert fast.height == len(rich_prep)
        assert fast["cwnd"].is_finite().all() and (fast["cwnd"] > 0).all(), r.label


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    hs.lists(
        hs.fixed_dictionaries(
            {
                "a": hs.integers(0, 4),
                "s": hs.integers(0, 2),
                "F": hs.integers(1, 60),
                "rtt": hs.one_of(hs.none(), hs.floats(0.01, 0.3)),
                "state": hs.sampled_from(["open", "open", "open", "recovery", "loss"]),
                "round_end": hs.booleans(),
            }
        ),
        min_size=1,
        max_size=60,
    ),
    hs.sampled_from(["reno", "cubic", "vegas", "highspeed", "westwood"]),
    hs.sampled_from(["rfc", "linux"]),
)
def test_property_parity_and_sane_windows(specs, name, flavor):
    prep = engine.prepare(stream(specs), MSS)
    r = registry.resolve(name, {"flavor": flavor})
    fast = engine.run(r, prep, compiled=True)
    assert fast.equals(engine.run(r, prep, compiled=False))
    cw = fast["cwnd"].to_numpy()
    assert np.all(np.isfinite(cw)) and np.all(cw >= 1.0)
    ss = fast["ssthresh"].drop_nulls().to_numpy()
    assert np.all(ss >= 1.0)


def _handshake_segments(rows: list[tuple[int, int, float]]) -> pl.DataFrame:
    """schema.SEGMENTS rows (seq, len, capture time s since the first ACK at 1 s): len 0 at seq 0 is a SYN."""
    return schema.conform(
        pl.DataFrame(
            [
                {
                    "frame": k + 1,
                    "ts_ns": 1_000_000_000 + int(round(t * 1e9)),
                    "seq": seq,
                    "len": n,
                    "kind": "new" if k == 0 or n else "retransmission",
                    "end_seq": seq + n + (1 if n == 0 else 0),
                    "rexmit": False,
                }
                for k, (seq, n, t) in enumerate(rows)
            ],
            schema=schema.polars_schema(schema.SEGMENTS),
            strict=False,
        ),
        schema.SEGMENTS,
    )


def test_ca_init_is_the_synack_time_at_a_capture_at_the_sender():
    # A SYN at −1.2 s, retransmitted at −0.2 s (the SYN/ACK answers the last one), data from −0.1 s;
    # handshake RTT 0.05 s → the SYN/ACK came at −0.2 + 0.05 = −0.15 s: tcp_init_congestion_control
    # ran then (tp.ca_init). Only at the sender (elsewhere the SYN's capture time is not the
    # sender's); no handshake RTT or no SYN captured → nan.
    acks = stream([{}, {}])
    seg = _handshake_segments([(0, 0, -1.2), (0, 0, -0.2), (1, MSS, -0.1), (1 + MSS, MSS, -0.1)])
    assert engine.prepare(acks, MSS, seg, 0.05, at_sender=True).ca_init == pytest.approx(-0.15)
    assert math.isnan(engine.prepare(acks, MSS, seg, 0.05).ca_init)
    assert math.isnan(engine.prepare(acks, MSS, seg, None, at_sender=True).ca_init)
    no_syn = _handshake_segments([(1, MSS, -0.1), (1 + MSS, MSS, -0.1)])
    assert math.isnan(engine.prepare(acks, MSS, no_syn, 0.05, at_sender=True).ca_init)


def test_empty_and_malformed_streams():
    empty = stream([{}]).head(0)
    res = engine.replay(empty, MSS, ["reno", "cubic"])
    assert all(df.height == 0 for df in res.values())
    with pytest.raises(InputError, match="lacks column"):
        engine.prepare(stream([{}]).drop("pipe"), MSS)
    with pytest.raises(InputError, match="MSS must be a positive"):
        engine.prepare(stream([{}]), 0)
    with pytest.raises(InputError, match="requested twice"):
        engine.replay(stream([{}]), MSS, ["reno", "reno"])


def test_algorithms_doc_is_generated_from_registry():
    # docs/algorithms.md's tables come from the declarations; regenerate with
    # `python -m hscc_trace.replay.registry --update docs/algorithms.md`.
    assert registry.generated_block(ROOT / "docs" / "algorithms.md") == registry.markdown().strip("\n")


def test_prepare_unknown_window_scale_means_no_receive_window_limit():
    # Mid-flow capture: the raw window 512 cannot be scaled, so it is no limit (inf), while a
    # known-scale window of 20 000 B with MSS 1000 B is 20 packets.
    acks = stream([{"a": 1}, {"a": 1}])
    acks = acks.with_columns(
        pl.Series("rwnd_bytes", [512, 20_000], dtype=pl.Int64),
        pl.Series("rwnd_scale_known", [False, True]),
    )
    prep = engine.prepare(acks, MSS)
    from hscc_trace.replay import tp as T

    assert prep.ev[0, T.E_RWND] == np.inf
    assert prep.ev[1, T.E_RWND] == 20.0


def test_loops_run_ahead_in_a_thread_give_the_serial_tables(rich_prep, monkeypatch):
    # engine.replay runs the loops of a long flow ahead in a helper thread while it builds the
    # tables: the tables must be those of one engine.run after the other, in the given order
    names = ["reno", "cubic", "bbr", "vegas", "kyushu+cubic"]
    acks = rich(40)
    serial = {n: engine.run(registry.resolve(n), engine.prepare(acks, MSS)) for n in names}
    monkeypatch.setattr(engine, "AHEAD_MIN_ACKS", 1)
    monkeypatch.setattr(engine, "_CPUS", 2)
    ahead = engine.replay(acks, MSS, names)
    assert list(ahead) == [registry.resolve(n).label for n in names]
    for n in names:
        assert ahead[registry.resolve(n).label].equals(serial[n]), n
    with pytest.raises(InputError, match="requested twice"):
        engine.replay(acks, MSS, ["reno", "cubic", "reno"])


def test_meanwhile_runs_once_in_the_calling_thread_while_the_loops_run(monkeypatch):
    # engine.replay's ``meanwhile`` is called once, in the calling thread, before any table is
    # built: after the loops were handed to the helper thread (long flows), or before the loops
    # (serial); the tables are the same either way
    import threading

    names = ["reno", "cubic", "bbr"]
    acks = rich(40)
    serial = engine.replay(acks, MSS, names)
    built = []
    monkeypatch.setattr(engine, "_frame", lambda *a, _f=engine._frame: built.append(1) or _f(*a))
    for ahead in (False, True):
        if ahead:
            monkeypatch.setattr(engine, "AHEAD_MIN_ACKS", 1)
            monkeypatch.setattr(engine, "_CPUS", 2)
        calls: list = []
        built.clear()

        def meanwhile(calls: list = calls) -> None:
            calls.append((threading.current_thread(), len(built)))

        got = engine.replay(acks, MSS, names, meanwhile=meanwhile)
        assert calls == [(threading.current_thread(), 0)], ahead
        assert all(got[k].equals(serial[k]) for k in serial), ahead


def test_a_loop_taken_back_from_the_helper_fails_at_its_own_turn(monkeypatch):
    # the calling thread runs the helper's last not-started loops rather than wait: when the
    # first loop (still in the helper) and a taken-back later one both fail, the first one's
    # error is raised, as when the loops ran in order
    import threading

    names = ["reno", "cubic", "bbr"]
    acks = rich(40)
    monkeypatch.setattr(engine, "AHEAD_MIN_ACKS", 1)
    monkeypatch.setattr(engine, "_CPUS", 2)
    release = threading.Event()
    setup, n = engine._setup, [0]

    def failing(r, prep, compiled):
        loop, plan = setup(r, prep, compiled)
        k = n[0]
        n[0] += 1

        def run(*m):
            if k == 0:  # the helper's first loop: slow, then fails
                assert release.wait(30)
                raise RuntimeError("first")
            if k == 2:  # the last loop, taken back by the calling thread: fails at once
                release.set()
                raise RuntimeError("last")
            loop(*m)

        return run, plan

    monkeypatch.setattr(engine, "_setup", failing)
    with pytest.raises(RuntimeError, match="first"):
        engine.replay(acks, MSS, names)
    assert release.is_set()  # (the last loop did run in the calling thread, and failed)


def test_a_flows_tables_share_keys_and_equal_enum_columns_but_equal_unshared_tables(monkeypatch):
    # engine.replay builds a flow's frame/ts_ns Series once and reuses an Enum column whose codes
    # equal the previous one of its name (the state, mostly): every table must still equal the
    # one engine.run builds alone, including where two algorithms' enum codes differ (cubic's
    # and kyushu+cubic's region, reno's and fusion's phase), serial and with the loops ahead
    names = ["reno", "cubic", "fusion", "kyushu+cubic", "bbr", "highspeed", "hrf"]
    acks = rich(40)
    alone = {n: engine.run(registry.resolve(n), engine.prepare(acks, MSS)) for n in names}
    for ahead in (False, True):
        if ahead:
            monkeypatch.setattr(engine, "AHEAD_MIN_ACKS", 1)
            monkeypatch.setattr(engine, "_CPUS", 2)
        together = engine.replay(acks, MSS, names)
        for n in names:
            got = together[registry.resolve(n).label]
            assert got.equals(alone[n]) and got.schema == alone[n].schema, (n, ahead)


def test_code_slots_become_clamped_label_indices():
    # the loop writes enum slots as label indices: nan and negative codes → the first label,
    # codes past the last label → the last, fractions truncated; bool slots: 1 where non-zero
    from hscc_trace.replay import _loop

    codes = [0.0, 1.0, 2.0, math.nan, -1.0, 7.0, 1.9, math.inf, -math.inf, -0.0]
    assert [_loop._label_index(v, 2.0) for v in codes] == [0, 1, 2, 0, 0, 2, 1, 2, 0, 0]
    assert [_loop._label_index(v, 0.0) for v in codes] == [0] * 10
    assert [_loop._label_index(v, -1.0) for v in codes] == [0, 1, 1, 1, 1, 1, 1, 1, 1, 0]


def test_a_table_is_views_of_the_float_output_and_nans_become_nulls(rich_prep):
    # float columns are zero-copy views of the loop's float output; a column the loop flagged
    # as holding a nan has nulls there (ssthresh before the first loss: infinite → null), an
    # unflagged one is the array as is; each column equals the public constructor's Series
    r = registry.resolve("cubic")
    loop, plan = engine._setup(r, rich_prep, None)
    ((out, codes, nans),) = engine._outputs(len(rich_prep), [plan])
    loop(out, codes, nans)
    table = engine._frame(rich_prep.ts_ns, out, codes, nans, plan, rich_prep.frame)
    assert np.shares_memory(table["cwnd"].to_numpy(), out)
    assert nans[1] and table["ssthresh"].null_count() == int(np.isnan(out[:, 1]).sum()) > 0
    floats = ["cwnd", "ssthresh"] + [name for name, kind, _, _ in plan.columns if kind == "float"]
    for j, name in enumerate(floats):
        assert bool(nans[j]) == bool(np.isnan(out[:, j]).any()), name
        want = pl.Series(name, out[:, j], dtype=pl.Float64, nan_to_null=True)
        assert table[name].equals(want) and table[name].null_count() == want.null_count(), name


def test_an_enum_column_is_reused_only_for_equal_codes():
    shared: dict = {}
    labels = ("a", "b", "c")
    idx = np.array([0, 1, 2, 0, 0, 2], dtype=np.uint32)
    first = engine._enum("m", labels, idx, shared)
    assert first.to_list() == ["a", "b", "c", "a", "a", "c"] and first.dtype == pl.Enum(list(labels))
    assert engine._enum("m", labels, idx.copy(), shared) is first
    idx[1] = 2  # the cache holds a copy of the indices, not the caller's array
    assert engine._enum("m", labels, idx, shared).to_list() == ["a", "c", "c", "a", "a", "c"]
    assert engine._enum("n", labels, np.zeros(6, np.uint32), shared).to_list() == ["a"] * 6  # another name
    assert engine._enum("m", ("x", "y"), np.ones(6, np.uint32), shared).to_list() == ["y"] * 6  # other labels


def test_label_codes_of_an_enum_are_those_of_its_strings():
    # engine._codes maps an Enum column through its physical codes (nulls and unmapped labels
    # to the default), a String column through its strings: the same codes either way
    code = {"open": 0.0, "recovery": 1.0, "loss": 2.0}
    values = ["loss", None, "open", "cwr", None, "recovery", "cwr"]
    enum = pl.Series("state", values, dtype=pl.Enum(["open", "recovery", "loss", "cwr"]))
    want = [2.0, 7.0, 0.0, 7.0, 7.0, 1.0, 7.0]
    assert engine._codes(enum, code, 7.0).tolist() == want
    assert engine._codes(pl.Series("state", values), code, 7.0).tolist() == want
    assert engine._codes(enum.fill_null("open"), code, 7.0).tolist() == [2.0, 0.0, 0.0, 7.0, 0.0, 1.0, 7.0]
    assert engine._codes(pl.Series("state", [None, None], dtype=enum.dtype), code, 7.0).tolist() == [7.0, 7.0]
