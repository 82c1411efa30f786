"""The first-use rule (hscc_trace/perf/firstuse.py): interpreted while the work is small, compiled
when it is large or cached — and both paths give the same results, on real samples."""

from __future__ import annotations

import json
import sys

import numpy as np
import polars as pl
import pytest
from conftest import REPO

from hscc_trace import api
from hscc_trace.perf import firstuse
from hscc_trace.perf.firstuse import Kernel


def _count_up(a, out):  # a tiny kernel for the rule's own tests
    for i in range(len(a)):
        out[i] = a[i] + 1
    return len(a)


def _kernel(budget_items: int) -> Kernel:
    # cache=False keeps numba's files out of the source tree; the stamp stands for the cache
    return Kernel(_count_up, lambda a: len(a[0]), (float(budget_items), 1.0), {"cache": False}, name="tests._count_up")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HSCC_TRACE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(firstuse.MODE_ENV, raising=False)
    return tmp_path


def test_small_work_is_interpreted_until_the_budget_then_compiled_and_stamped(cache_dir):
    """Declared 1 s an item, compiled in 100 s. Working: call 1, 40 items: rent 0 + 40 · 1 s = 40 s
    ≤ 100 → interpreted, rent 40 s (the measured µs are under the floor of 40 items × 1 s), in the
    stamp as "40 40.0" (it passed a multiple of SAVE_S); call 2: 40 + 40 = 80 ≤ 100 → interpreted,
    "80 80.0"; call 3: 80 + 40 · (80 s / 80 items) = 120 > 100 → compiled, the stamp emptied."""
    k = _kernel(100)
    a = np.arange(40, dtype=np.int64)
    out = np.empty_like(a)
    assert k(a, out) == 40 and (out == a + 1).all()
    assert k.stats["interpreted_calls"] == 1 and k.stats["compiled_calls"] == 0
    stamp = k.stamp_path(firstuse.type_key((a, out)))
    assert stamp.read_text() == "40 40.0"
    assert k(a, out) == 40
    assert k.stats["interpreted_calls"] == 2 and k.stats["compiled_calls"] == 0
    assert stamp.read_text() == "80 80.0"
    assert k(a, out) == 40
    assert k.stats["interpreted_calls"] == 2 and k.stats["compiled_calls"] == 1
    assert k.signatures, "numba compiled it"
    assert stamp.read_text() == ""
    # another process (a new Kernel) finds the empty stamp: compiled from the first call, however small
    k2 = _kernel(100)
    k2(a[:1], out[:1])
    assert k2.stats["compiled_calls"] == 1 and k2.stats["interpreted_calls"] == 0
    assert list(stamp.parent.iterdir()) == [stamp]  # (no temporary file left)


def test_the_rent_of_earlier_runs_counts_until_the_break_even_then_the_run_compiles(cache_dir):
    """Run 1 (a Kernel) pays 40 s of a 100 s compilation; run 2 starts from the stamp's 40 s:
    40 + 40 = 80 ≤ 100 → interpreted, "80 80.0"; run 3: 80 + 40 · (80 s / 80 items) = 120 > 100 →
    compiled at its first call, which a run of its own (≤ 100 s) would have interpreted."""
    a = np.arange(40, dtype=np.int64)
    stamp = _kernel(100).stamp_path(firstuse.type_key((a, a)))
    runs = []
    for _ in range(3):
        k = _kernel(100)
        k(a, np.empty_like(a))
        runs.append((k.stats["interpreted_calls"], k.stats["compiled_calls"], stamp.read_text()))
    assert runs == [(1, 0, "40 40.0"), (1, 0, "80 80.0"), (0, 1, "")]


def test_a_rent_under_a_multiple_of_save_s_is_not_written(cache_dir):
    """Declared 1 µs an item: 10 items are ≥ 10 µs (measured: µs), under SAVE_S (0.02 s) → no stamp;
    the process keeps its rent (the next run starts from 0 again: it loses < SAVE_S)."""
    k = Kernel(_count_up, lambda a: len(a[0]), (1.0, 1e-6), {"cache": False}, name="tests._count_up")
    a = np.arange(10, dtype=np.int64)
    k(a, np.empty_like(a))
    key = firstuse.type_key((a, a))
    assert k.stats["interpreted_calls"] == 1 and not k.stamp_path(key).exists()
    assert k._rent[key][0] == 10 and 1e-5 <= k._rent[key][1] < firstuse.SAVE_S


def test_a_rent_never_overwrites_the_stamp_of_a_compilation(cache_dir):
    """Two runs at once: one compiles (empty stamp) while the other still interprets by its own
    rent (40 s, then 80 s ≤ 100): its rent is not written over the compilation's stamp."""
    a = np.arange(40, dtype=np.int64)
    k1 = _kernel(100)
    k1(a, np.empty_like(a))
    stamp = k1.stamp_path(firstuse.type_key((a, a)))
    assert stamp.read_text() == "40 40.0"
    _kernel(100).call_compiled(a, np.empty_like(a))
    assert stamp.read_text() == ""
    k1(a, np.empty_like(a))
    assert k1.stats["interpreted_calls"] == 2 and stamp.read_text() == ""


def test_an_unreadable_stamp_is_no_rent_and_no_compilation(cache_dir):
    """A stamp that holds neither nothing nor ``items seconds`` counts as absent: 40 items at 1 s
    (40 ≤ 100) are interpreted, and the stamp becomes the rent."""
    a = np.arange(40, dtype=np.int64)
    k = _kernel(100)
    stamp = k.stamp_path(firstuse.type_key((a, a)))
    stamp.parent.mkdir(parents=True)
    stamp.write_text("half")
    k(a, np.empty_like(a))
    assert k.stats["interpreted_calls"] == 1 and stamp.read_text() == "40 40.0"


def _burn(seconds: float) -> None:
    import time

    t = time.thread_time()
    while time.thread_time() - t < seconds:
        pass


@pytest.mark.parametrize("busy", [True, False])
def test_the_rent_is_the_threads_cpu_time_at_least_the_declared_cost(cache_dir, busy):
    """Declared 6 items × 10 µs = 60 µs, compiled in 0.3 s. Busy: the call takes 0.2 s of CPU →
    rent 0.2 s; the next call expects 6 items at 0.2 s / 6 → 0.2 + 0.2 = 0.4 > 0.3 → compiled, and
    a new run (Kernel) reads "6 0.2…" → 0.4 > 0.3 → compiled at once. Asleep 0.2 s: no CPU → the
    rent is the declared 60 µs (the floor) → interpreted again: the machine's load is no cost."""
    import time

    def slow(a, out):
        _burn(0.2) if busy else time.sleep(0.2)
        return _count_up(a, out)

    def kernel() -> Kernel:
        return Kernel(_count_up, lambda a: len(a[0]), (0.3, 1e-5), {"cache": False}, name="tests._slow", python=slow)

    k = kernel()
    a = np.arange(6, dtype=np.int64)
    k(a, np.empty_like(a))
    key = firstuse.type_key((a, a))
    assert k.stats["interpreted_calls"] == 1
    if not busy:
        assert k._rent[key][1] < 0.01 and not k.stamp_path(key).exists()
        k(a, np.empty_like(a))
        assert k.stats["interpreted_calls"] == 2 and k.stats["compiled_calls"] == 0
        return
    assert 0.2 <= k._rent[key][1] < 0.3 and k.stamp_path(key).read_text().startswith("6 0.2")
    k(a, np.empty_like(a))
    assert k.stats["interpreted_calls"] == 1 and k.stats["compiled_calls"] == 1
    k2 = kernel()  # the next run
    k2(a, np.empty_like(a))
    assert k2.stats["compiled_calls"] == 1 and k2.stats["interpreted_calls"] == 0


def test_forced_interpretation_pays_no_rent_and_writes_no_stamp(cache_dir):
    k = _kernel(10)
    a = np.arange(50, dtype=np.int64)
    with firstuse.mode("interpret"):
        k(a, np.empty_like(a))
    assert not list(cache_dir.rglob("tests._count_up-*")) and not k._rent


def test_a_new_stamp_prunes_the_kernels_other_versions_and_older_formats(cache_dir):
    """Stamps are ``<kernel>-<install>-<version>-<types>``: a new one removes the same install's
    stamps of the kernel's other versions (an older source file, numba, Python) and every file of
    an older format (``.json``, ``.rent``, one 20-digit hash, ``<kernel>-<version>-<types>``);
    other kernels' stamps, its own other argument types' and another install's (a second venv
    sharing the cache folder) stay. ``hscc-trace compile`` also removes this install's stamps of
    kernels that are no more."""
    folder = cache_dir / "compiled"
    folder.mkdir()
    k = _kernel(10)
    a = np.arange(3, dtype=np.int64)
    b = a.astype(np.int32)
    mine = k.stamp_path(firstuse.type_key((b, b)))
    install, version = mine.name.split("-")[-3:-1]
    assert install == firstuse.install_hash()
    other = "0" * 8 if version != "0" * 8 else "1" * 8
    other_install = "2" * 8 if install != "2" * 8 else "3" * 8
    other_version = f"tests._count_up-{install}-{other}-{'a' * 12}"
    old = [
        "tests._count_up-0123456789abcdef0123",
        "tests._count_up-0123456789abcdef0123.rent",
        "x.json",
        f"tests._count_up-{version}-{'a' * 12}",  # (no install)
    ]
    stay = [
        mine.name,
        f"events.tables._run_flows-{install}-{'b' * 8}-{'c' * 12}",
        f"tests._count_up-{other_install}-{other}-{'a' * 12}",  # another install's version stays
    ]
    for name in [other_version, *old, *stay]:
        (folder / name).touch()
    k.call_compiled(a, np.empty_like(a))
    assert sorted(p.name for p in folder.iterdir()) == sorted([*stay, k.stamp_path(firstuse.type_key((a, a))).name])
    assert firstuse.prune(folder, lambda name, *_: name != "events.tables._run_flows") == [stay[1]]


def test_a_stamp_goes_stale_with_its_source_file(cache_dir, monkeypatch):
    """numba's cache holds a kernel for its source file's mtime and size: so does the stamp."""
    (cache_dir / "stampmod.py").write_text("def f(a, out):\n    out[0] = a[0]\n    return 1\n")
    monkeypatch.syspath_prepend(str(cache_dir))
    monkeypatch.delitem(sys.modules, "stampmod", raising=False)
    import stampmod

    def kernel() -> Kernel:
        return Kernel(stampmod.f, lambda a: 1, (1.0, 1.0), {"cache": False}, name="tests.stampmod")

    a = np.arange(3, dtype=np.int64)
    key = firstuse.type_key((a, a))
    kernel().call_compiled(a, a.copy())
    assert kernel().is_stamped(key)
    (cache_dir / "stampmod.py").write_text("def f(a, out):\n    out[0] = a[0]\n    return 1  # edited\n")
    assert not kernel().is_stamped(key)


def _scale(a, out):  # int64 products that leave the int64 range on purpose
    for i in range(len(a)):
        out[i] = a[i] * 10
    return len(a)


def test_interpreted_twin_wraps_int64_like_the_compiled_code_without_a_warning(cache_dir):
    """Compiled, numba's int64 arithmetic wraps silently; the Python twin on numpy scalars would
    warn ("overflow encountered in scalar multiply") on stderr — hostile captures found it in
    events/core.py. Interpreted it runs under np.errstate(over="ignore"): same values, no warning.
    Working: 2^62 · 10 = 10 · 2^62 mod 2^64 read as int64 = 2^63 + 2^62 − 2^64 … = −2^63 (10 · 2^62
    = 2^65 + 2^63; mod 2^64: 2^63; as signed: −2^63)."""
    import warnings

    k = Kernel(_scale, lambda a: len(a[0]), (1e9, 1.0), {"cache": False}, name="tests._scale")
    a = np.array([2**62, 3], dtype=np.int64)
    got = []
    for mode in ("interpret", "compile"):
        out = np.zeros_like(a)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            (k if mode == "interpret" else k.call_compiled)(a, out)
        got.append(out.tolist())
    assert k.stats["interpreted_calls"] == 1 and k.stats["compiled_calls"] == 1
    assert got[0] == got[1] == [-(2**63), 30]


def test_large_first_call_compiles_at_once(cache_dir):
    k = _kernel(10)
    a = np.arange(11, dtype=np.int64)
    k(a, np.empty_like(a))
    assert k.stats["compiled_calls"] == 1 and k.stats["interpreted_calls"] == 0


def test_other_argument_types_are_decided_on_their_own(cache_dir):
    k = _kernel(10)
    a = np.arange(11, dtype=np.int64)
    k(a, np.empty_like(a))  # compiled for int64
    b = np.arange(3, dtype=np.int32)
    k(b, np.empty_like(b))  # int32: not compiled yet, small → interpreted
    assert k.stats["interpreted_calls"] == 1


def test_forced_modes(cache_dir, monkeypatch):
    a = np.arange(5, dtype=np.int64)
    k = _kernel(1000)
    with firstuse.mode("compile"):
        k(a, np.empty_like(a))
    assert k.stats["compiled_calls"] == 1
    with firstuse.mode("interpret"):  # even when compiled already
        k(a, np.empty_like(a))
    assert k.stats["interpreted_calls"] == 1
    monkeypatch.setenv(firstuse.MODE_ENV, "interpret")
    k3 = _kernel(0)  # stamped by k, budget 0: still interpreted
    k3(a, np.empty_like(a))
    assert k3.stats["interpreted_calls"] == 1 and k3.stats["compiled_calls"] == 0
    with pytest.raises(ValueError):
        with firstuse.mode("sometimes"):
            pass


def test_type_key_matches_numba_typing():
    # Python ints and numpy int64 scalars type alike in numba: one key
    assert firstuse.type_key((1, 2.0, True)) == firstuse.type_key((np.int64(1), np.float64(2.0), np.bool_(True)))
    a = np.zeros((4, 3))
    assert firstuse.type_key((a,)) != firstuse.type_key((a.T,))  # C vs F layout
    assert firstuse.type_key((a,)) != firstuse.type_key((a.astype(np.float32),))
    ro = a.copy()
    ro.flags.writeable = False
    assert firstuse.type_key((a,)) != firstuse.type_key((ro,))


def test_every_kernel_has_measured_costs():
    import hscc_trace.analysis.verdict  # noqa: F401  (declare the kernels)
    import hscc_trace.capture.bpf  # noqa: F401
    import hscc_trace.capture.decode  # noqa: F401
    import hscc_trace.capture.reader  # noqa: F401
    import hscc_trace.events.sack  # noqa: F401
    import hscc_trace.events.tables  # noqa: F401
    import hscc_trace.flows.arena  # noqa: F401
    import hscc_trace.flows.tracker  # noqa: F401
    import hscc_trace.replay.engine  # noqa: F401
    import hscc_trace.reports.decimate  # noqa: F401
    import hscc_trace.reports.html  # noqa: F401
    import hscc_trace.reports.store  # noqa: F401

    kernels = [k for k in firstuse.REGISTRY if not k.name.startswith("tests.")]
    assert len(kernels) >= 30  # (@njit(work=…) without cost=… raises at import)
    assert all(k.compile_s > 0 and k.budget > 0 for k in kernels), kernels


# ---- both paths give the same results -------------------------------------------------------

SAMPLES = [
    "samples/reno-bdp/capture.pcap",  # sender side, Reno
    "samples/reno-bdp-receiver/capture.pcap",  # receiver side: the sender view kernel
    "samples/bbr-loss/capture.pcap",  # BBR: rate samples
    "samples/cubic-loss-rtt100/capture.pcap",
    "samples/synthetic/rto.pcap",  # hand-made: an RTO
    "samples/synthetic/dsack.pcap",
]


def _flows_command(path: str) -> dict[str, object]:
    """What ``hscc-trace flows`` prints (its own scan: reader, decoder, flow table), unfiltered
    and through the BPF interpreter."""
    from hscc_trace.flows.scan import flow_rows

    out: dict[str, object] = {}
    for bpf in (None, BPF):
        res = flow_rows(path, bpf=bpf)
        out[f"flow_rows {bpf}"] = json.dumps([res.rows, res.packets_total, res.packets_tcp, res.warnings], default=str)
    return out


#: a filter that keeps some packets of every sample and drops others (the handshakes, pure ACKs)
BPF = "tcp and greater 100"


def _everything(path: str) -> dict[str, object]:
    """Flows, packets, every flow's event streams, every default algorithm's replay, results."""
    from hscc_trace.model import Capture
    from hscc_trace.reports import decimate, store

    cap = api.load(path)
    out: dict[str, object] = {"flows": cap.flows, "packets": cap.packets, **_flows_command(path)}
    filtered = api.load(path, bpf=BPF)
    out["bpf flows"], out["bpf packets"] = filtered.flows, filtered.packets
    evs = api.all_events(cap)
    # the packets-table path (group_rows) must agree with the decoder's
    evs2 = api.all_events(Capture(cap.meta, cap.packets, cap.flows))
    for fid, ev in evs.items():
        for kind in ("segments", "acks", "episodes", "rounds"):
            out[f"{fid}.{kind}"] = getattr(ev, kind)
            assert getattr(evs2[fid], kind).equals(getattr(ev, kind), null_equal=True), (path, fid, kind)
        for label, df in api.replay(ev, api.default_algorithms()).items():
            out[f"{fid}.replay.{label}"] = df
        acks = ev.acks
        if acks.height:
            t = acks.get_column("ts_ns").to_numpy().astype(np.float64)
            y = acks.get_column("outstanding").to_numpy().astype(np.float64)
            out[f"{fid}.m4"] = decimate.m4_indices(t, y, max(1, len(t) // 50))
            out[f"{fid}.varint"] = store.varint(np.diff(acks.get_column("ack").to_numpy()) % (1 << 30))
    res = api.results(api.analyze(path).analysis)
    res.pop("created", None)
    out["results"] = json.dumps(res, sort_keys=True, default=str)
    return out


def _equal(a: object, b: object) -> bool:
    if isinstance(a, pl.DataFrame):
        return isinstance(b, pl.DataFrame) and a.equals(b, null_equal=True)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    return a == b


@pytest.mark.parametrize("sample", SAMPLES)
def test_interpreted_and_compiled_give_identical_outputs(sample):
    path = str(REPO / sample)
    with firstuse.mode("compile"):
        compiled = _everything(path)
    with firstuse.mode("interpret"):
        interpreted = _everything(path)
    assert compiled.keys() == interpreted.keys()
    differ = [k for k in compiled if not _equal(compiled[k], interpreted[k])]
    assert not differ, f"{sample}: interpreted differs from compiled in {differ}"


#: captures of the other shapes the flows kernels read: pcapng with several interfaces, a
#: big-endian nanosecond pcap, Linux cooked capture, and enough conversations to grow the table
EXTERNAL_SHAPES = [
    "pcapplusplus__many_interfaces-1.pcapng",
    "pcapplusplus__nanosecs_big_endian.pcap",
    "pcapplusplus__sll.pcap",
]


@pytest.mark.parametrize("name", EXTERNAL_SHAPES)
def test_the_flows_kernels_interpreted_and_compiled_agree_on_other_capture_shapes(name):
    from conftest import external

    path = str(external(name) / name)
    with firstuse.mode("compile"):
        compiled = _flows_command(path)
    with firstuse.mode("interpret"):
        interpreted = _flows_command(path)
    assert compiled == interpreted


def test_the_flow_table_grows_alike_interpreted_and_compiled():
    """A tracker started tiny grows its connections, conversation table and segment nodes
    (the kernel's ST_GROW_* returns, _rehash) the same way on both paths."""
    from hscc_trace.flows import tracker

    packets = api.load(str(REPO / "samples/reno-vs-cubic/capture.pcap")).packets
    got = []
    for mode in ("compile", "interpret"):
        tr = tracker.FlowTracker(flows=1, nodes=2)
        tr.tkeys, tr.tval = tr.tkeys[:1], tr.tval[:1]  # one slot: the first conversation grows it
        with firstuse.mode(mode):
            per_packet = tr.feed(tracker._columns(packets))
            got.append((per_packet, tr.table(), tr.tkeys, tr.tval))
    (pc, tc, kc, vc), (pi, ti, ki, vi) = got
    assert all(_equal(a, b) for a, b in zip(pc, pi)) and tc.equals(ti, null_equal=True)
    assert _equal(kc, ki) and _equal(vc, vi) and len(vc) > 1


@pytest.mark.parametrize("mode", ["interpret", "compile"])
def test_packets_table_from_the_arena_equals_the_file_reread(mode, monkeypatch):
    """A capture that cannot be read again gets its packets table from the arena
    (arena._unplace); it equals the table built by reading the file again, on both paths."""
    from hscc_trace.flows import ingest

    path = str(REPO / "samples/reno-loss/capture.pcap")
    reread = api.load(path).packets
    monkeypatch.setattr(ingest, "_file_id", lambda p: None)
    with firstuse.mode(mode):
        kept = api.load(path).packets
    assert kept.equals(reread, null_equal=True)


def test_a_cache_index_naming_a_retired_record_class_is_a_miss_not_a_crash(tmp_path):
    """numba unpickles a kernel's cache index before it checks that it is stale; a record class
    that the index names and the module no longer defines must not crash the first call
    (firstuse.retired_record, the records modules' __getattr__)."""
    import subprocess
    import textwrap

    def module(record: str, fallback: bool) -> str:
        return textwrap.dedent(f"""
            from typing import NamedTuple
            import numba
            import numpy as np

            class {record}(NamedTuple):
                a: np.ndarray

            @numba.njit(cache=True)
            def total(r):
                return r.a.sum()
            """) + (
            "\ndef __getattr__(name):\n    from hscc_trace.perf.firstuse import retired_record\n"
            "    return retired_record(__name__, name)\n"
            if fallback
            else ""
        )

    def call(record: str) -> subprocess.CompletedProcess:
        code = f"import numpy as np, recmod; print(recmod.total(recmod.{record}(np.arange(4.0))))"
        env = {k: v for k, v in __import__("os").environ.items() if k != "NUMBA_CACHE_DIR"}
        return subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )

    src = tmp_path / "recmod.py"
    for fallback in (False, True):
        src.write_text(module("Old", fallback))
        assert call("Old").stdout.strip() == "6.0"  # compiled and cached with Old in the index
        src.write_text(module("New", fallback))  # Old renamed: the cached index names a class gone
        run = call("New")
        if fallback:
            assert run.returncode == 0 and run.stdout.strip() == "6.0", run.stderr[-2000:]
        else:  # what the fallback is for (if numba stops failing here, the adapter can go)
            assert run.returncode != 0 and "Old" in run.stderr, run.stderr[-2000:]


def _kernmod_runner(tmp_path):
    """A function that runs ``kernmod.k(np.arange(3))`` of ``tmp_path`` in a fresh process (its own
    caches there, every kernel compiled) and returns its result and the kernel decorator's events."""
    import os
    import subprocess

    code = (
        "import numpy as np, kernmod\nfrom hscc_trace.perf import firstuse\nevents = []\n"
        "firstuse.LISTENERS.append(lambda e, k, s: events.append(e))\nprint(kernmod.k(np.arange(3)), *events)"
    )
    env = dict(os.environ, HSCC_TRACE_CACHE_DIR=str(tmp_path / "cache"), NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    env[firstuse.MODE_ENV] = "compile"

    def run() -> str:
        p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr[-3000:]
        return p.stdout.strip()

    return run


def test_an_edit_of_a_callee_in_another_module_compiles_the_kernel_again(tmp_path):
    """numba's cache of a kernel sees edits of the kernel's own file only (numba's docs, "Caching
    Limitations"): the flow kernel inlines ``near_by_floor`` from flows/near.py. So a kernel is
    cached in the subfolder of numba's folder named by its callees' sources (Kernel.callees), and
    its stamp keys on them. Here, in fresh processes: the callee's module alone is edited, and the
    next run computes with the new callee and announces a compilation (before: 1, ``loaded``)."""
    (tmp_path / "calleemod.py").write_text(
        "from hscc_trace.perf.jit import njit\nLIMIT = 1\n\n\ndef bump(x):\n    return x + LIMIT\n\n\n"
        'bump_compiled = njit(cache=True, inline="always")(bump)\n'
    )
    (tmp_path / "kernmod.py").write_text(
        "from calleemod import bump_compiled\nfrom hscc_trace.perf.jit import njit\n\n\n"
        "@njit(work=lambda a: 1, cost=(1.0, 1.0), cache=True)\ndef k(a):\n    return bump_compiled(a[0])\n"
    )
    run = _kernmod_runner(tmp_path)

    assert run() == "1 compiling compiled"  # a[0] + LIMIT = 0 + 1, compiled into numba's cache
    assert run() == "1 loaded"  # the next process loads it
    kernel_file = (tmp_path / "kernmod.py").stat()
    (tmp_path / "calleemod.py").write_text((tmp_path / "calleemod.py").read_text().replace("LIMIT = 1", "LIMIT = 50"))
    assert run() == "50 compiling compiled"  # 0 + 50: not the cached kernel of LIMIT = 1
    assert run() == "50 loaded"
    assert (tmp_path / "kernmod.py").stat().st_mtime_ns == kernel_file.st_mtime_ns  # (the kernel's file untouched)
    assert len(list((tmp_path / "numba").glob("callees-*"))) == 2  # one folder per version of the callees


def test_an_edit_of_a_constant_imported_by_value_compiles_the_kernel_again(tmp_path):
    """numba freezes a global constant into the machine code. A kernel that imports one by value
    (``from calleemod import LIMIT``) and calls nothing of that module reaches no other module's
    source, so only the constants' values in Kernel.callees tell the edit apart (before: the
    kernel of LIMIT = 1 was loaded, and returned 1)."""
    (tmp_path / "calleemod.py").write_text("LIMIT = 1\n")
    (tmp_path / "kernmod.py").write_text(
        "from calleemod import LIMIT\nfrom hscc_trace.perf.jit import njit\n\n\n"
        "@njit(work=lambda a: 1, cost=(1.0, 1.0), cache=True)\ndef k(a):\n    return a[0] + LIMIT\n"
    )
    run = _kernmod_runner(tmp_path)

    assert run() == "1 compiling compiled"  # 0 + LIMIT = 1
    assert run() == "1 loaded"
    (tmp_path / "calleemod.py").write_text("LIMIT = 50\n")
    assert run() == "50 compiling compiled"  # 0 + 50, not the cached kernel of LIMIT = 1
    assert run() == "50 loaded"


def test_the_flow_kernels_callees_and_stamp_follow_flows_near(tmp_path, monkeypatch):
    """The flow kernel's callees hash covers flows/near.py: another text of it (a copy standing in
    for an edit) gives another hash, and so another stamp and numba cache folder."""
    from pathlib import Path

    from hscc_trace.flows import near, tracker

    k = tracker._flow_kernel
    key = ("types",)
    before = (k.callees, k.stamp_path(key))
    assert k.callees and "hscc_trace.flows.near" in firstuse.modules_of(k.py_func)
    copy = tmp_path / "near.py"
    copy.write_text(Path(near.__file__).read_text().replace("TURNAROUND_FLOOR_NS = 200_000", "TURNAROUND_FLOOR_NS = 1"))
    monkeypatch.setattr(near, "__file__", str(copy))
    monkeypatch.delitem(k.__dict__, "callees")  # (computed once per process; restored after the test)
    assert k.callees != before[0] and k.stamp_path(key) != before[1]
