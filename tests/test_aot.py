"""The ahead-of-time compiled flows kernels (hscc_trace.perf.aot, hscc_trace.perf.jit).

``pip install`` compiles the kernels of the capture reader, decoder, BPF interpreter and flow
table with numba.pycc into ``hscc_trace._aot_kernels``; :class:`hscc_trace.perf.jit.Kernel` calls
them when the arguments match the declared signature exactly, and numba's JIT otherwise. These
tests pin: the argument check (the pycc wrappers do not check dtypes themselves), the fallbacks,
that ``hscc-trace flows`` then never imports numba, and that both paths give the same flow table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import cannot_run
from test_capture_support import corpus

from hscc_trace.flows.scan import flow_rows
from hscc_trace.perf import aot, jit

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"


def _need_aot() -> None:
    if jit.aot_module() is None:
        cannot_run(jit.aot_status())


# ---- the argument check -----------------------------------------------------------------------


def test_split_args_reads_the_argument_list_after_a_tuple_return_type():
    assert jit._split_args("Tuple((uint64[:, ::1], int64[::1]))(uint64[:, ::1], int64[::1], int64)") == [
        "uint64[:, ::1]",
        "int64[::1]",
        "int64",
    ]
    assert jit._split_args("UniTuple(int64, 3)(uint8[::1], boolean)") == ["uint8[::1]", "boolean"]
    assert jit._split_args("none()") == []


def test_arg_check_accepts_exact_types_only():
    ok = jit._arg_checker("none(int64[::1], uint8[:, ::1], int64, boolean)")
    a, b = np.zeros(4, np.int64), np.zeros((2, 3), np.uint8)
    assert ok((a, b, 3, True))
    assert ok((a, b, np.int64(3), np.bool_(False)))
    assert not ok((a.astype(np.int32), b, 3, True))  # dtype
    assert not ok((a.astype(np.uint64), b, 3, True))  # signedness
    assert not ok((a[::2], b, 3, True))  # not contiguous
    assert not ok((a, b.T, 3, True))  # Fortran order
    assert not ok((a.reshape(2, 2), b, 3, True))  # ndim
    ro = a.copy()
    ro.flags.writeable = False
    assert not ok((ro, b, 3, True))  # read-only
    assert not ok((a, b, True, True))  # bool is not an int64 here
    assert not ok((a, b, 3.0, True))
    assert not ok((a, b, np.int32(3), True))
    assert not ok((a, b, 3, 1))
    assert not ok((a, b, 3))  # arity
    assert not ok((list(a), b, 3, True))


def test_unsupported_signature_argument_is_refused():
    with pytest.raises(ValueError, match="not supported"):
        jit._arg_checker("none(float32)")


def test_mismatched_arguments_run_through_numba_not_the_aot_wrapper():
    """An int32 array where the AOT signature says int64 would be read out of bounds by the
    pycc wrapper (it crashed the interpreter): the call must go to numba's JIT and give the
    same answer as the plain Python function. Run in a subprocess so a crash fails the test."""
    _need_aot()
    code = (
        "import numpy as np\n"
        "from hscc_trace.flows.tracker import _group_stats as g\n"
        "fl = np.array([0, 0, 1, 0, 1], np.int32)\n"  # int32, not int64
        "sd = np.array([0, 0, 0, 1, 0], np.uint8)\n"
        "v = np.array([3.0, 1.0, 5.0, 9.0, 7.0])\n"
        "snd = np.array([0, 0], np.int64)\n"
        "out = [np.full(2, np.nan) for _ in range(3)]\n"
        "g(fl, sd, v, snd, *out)\n"
        "assert g.is_aot and g._dispatcher is not None, 'did not fall back to the JIT'\n"
        # flow 0: samples 3, 1 (9 timed side 1) -> min 1, median (1+3)/2 = 2, max 3;
        # flow 1: samples 5, 7 -> min 5, median 6, max 7
        "print([x.tolist() for x in out])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [[1.0, 5.0], [2.0, 6.0], [3.0, 7.0]]


# ---- resolution and fallbacks -----------------------------------------------------------------


def test_every_aot_kernel_lives_in_a_fingerprinted_module():
    for name in aot.KERNEL_MODULES:
        __import__(name)
    assert jit.REGISTRY, "no kernel declares an aot signature"
    for k in jit.REGISTRY.values():
        assert k.py_func.__module__ in aot.KERNEL_MODULES, k


def test_stale_extension_is_not_used(monkeypatch):
    """Built from other sources (an edited kernel, say): the fingerprints differ and the
    kernels are compiled by numba instead, with the reason in aot_status."""
    monkeypatch.setattr(jit, "_state", {})
    monkeypatch.setattr(jit, "fingerprint", lambda: -1)
    if not _importable(jit.AOT_MODULE):
        pytest.skip(jit.aot_status())
    assert jit.aot_module() is None
    assert "other sources" in jit.aot_status()


def test_no_aot_environment_variable_disables_it(monkeypatch):
    monkeypatch.setattr(jit, "_state", {})
    monkeypatch.setenv(jit.NO_AOT_ENV, "1")
    assert jit.aot_module() is None
    assert jit.NO_AOT_ENV in jit.aot_status()


def test_fingerprint_covers_every_kernel_module_source(tmp_path, monkeypatch):
    """Changing any byte of a kernel module changes the fingerprint."""
    base = aot.fingerprint()
    mod = sys.modules["hscc_trace.flows.tracker"]
    copy = tmp_path / "flows.py"
    copy.write_bytes(Path(mod.__file__).read_bytes() + b"\n# edited\n")
    monkeypatch.setattr(mod, "__file__", str(copy))
    assert aot.fingerprint() != base


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


# ---- the flows command ------------------------------------------------------------------------


def test_flows_never_imports_numba_with_the_aot_kernels():
    """pcap, pcapng, gzip, a BPF filter and a hash table that must grow: every kernel call of
    `hscc-trace flows` goes to the ahead-of-time functions (no dispatcher is ever built)."""
    _need_aot()
    c = corpus()
    if c is None:
        pytest.skip("external capture corpus not present")
    code = f"""
import sys
import numpy as np
import hscc_trace.flows.tracker as F
from hscc_trace.perf import jit
from hscc_trace.flows.scan import flow_rows

init = F.FlowTracker.__init__
def small(self, *a, **k):  # an 8-slot table: the fourth conversation makes it rehash
    init(self, *a, **k)
    self.tkeys, self.tval = self.tkeys[:8].copy(), self.tval[:8].copy()
F.FlowTracker.__init__ = small
calls = []
rehash = F._rehash
def counted(*a):
    calls.append(1)
    return rehash(*a)
F._rehash = counted
for p, bpf in [({str(SAMPLES / "reno-vs-cubic" / "capture.pcap")!r}, None),
               ({str(SAMPLES / "reno-bdp" / "capture.pcap")!r}, 'tcp and greater 100'),
               ({str(c / "pcapplusplus__many_interfaces-1.pcapng")!r}, None),
               ({str(c / "mlab-etl__ndt-m6znc_1632401351_000000000005B9EA.pcap.gz")!r}, None),
               ({str(c / "tcptrace__discard.solaris.pcap")!r}, None)]:
    assert flow_rows(p, bpf=bpf).rows
assert calls, "the table never grew"
assert all(k._dispatcher is None and k.is_aot for k in jit.REGISTRY.values()), \\
    [k for k in jit.REGISTRY.values() if k._dispatcher is not None]
assert "numba" not in sys.modules
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]


def _captures() -> list[Path]:
    caps = sorted(SAMPLES.glob("*/capture.pcap"))
    c = corpus()
    if c is not None:
        caps += sorted(p for p in c.iterdir() if p.suffix in (".pcap", ".pcapng", ".gz"))
    return caps


def _rows(path: Path, bpf: str | None = None) -> str:
    try:
        return json.dumps(flow_rows(path, bpf=bpf).rows)
    except Exception as exc:  # bad captures: the same error both ways
        return f"{type(exc).__name__}: {exc}"


def test_aot_and_jit_kernels_give_the_same_flow_tables(monkeypatch):
    """Every sample and external capture (and two filters): the flow rows from the ahead-of-time
    kernels equal those from numba's JIT compilation of the same source."""
    _need_aot()
    caps = _captures()
    jobs = [(p, None) for p in caps] + [
        (SAMPLES / "reno-loss" / "capture.pcap", "tcp[13] & 16 != 0"),
        (SAMPLES / "reno-vs-cubic" / "capture.pcap", "tcp port 5201"),
    ]
    with_aot = [_rows(p, f) for p, f in jobs]
    for k in jit.REGISTRY.values():
        monkeypatch.setattr(k, "_call", k.dispatcher())
        monkeypatch.setattr(k, "_check", None)
    with_jit = [_rows(p, f) for p, f in jobs]
    assert len(jobs) >= 12
    for (p, f), a, b in zip(jobs, with_aot, with_jit):
        assert a == b, (p.name, f)
    assert sum(a.startswith("[") for a in with_aot) >= 10  # most of them are real flow tables


def test_version_reports_which_kernels_are_in_use():
    env = dict(os.environ, **{jit.NO_AOT_ENV: "1"})
    out = subprocess.run(
        [sys.executable, "-m", "hscc_trace", "version"], capture_output=True, text=True, cwd=REPO, env=env
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "0.1.0"
    assert lines[1] == f"flows kernels: compiled by numba at run time: ahead-of-time kernels {jit.NO_AOT_ENV} is set"
