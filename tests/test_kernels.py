"""The compiled flows kernels (hscc_trace._kernels, Cython) against their numba reference.

``pip install`` compiles the kernels of the capture reader, decoder, BPF interpreter and flow
table into the extension ``hscc_trace._kernels``; :class:`hscc_trace.perf.jit.Kernel` calls it
when it is built and current, and the numba functions otherwise. These tests pin: identical
results of the two on every sample and external capture (kernel by kernel and end to end), the
extension's argument checks (it must refuse, never crash), the fallbacks, that
``hscc-trace flows`` then never imports numba, and what ``hscc-trace version`` says.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import cannot_run
from test_capture_support import corpus

from hscc_trace.capture import decode, reader
from hscc_trace.capture.bpf import BpfFilter
from hscc_trace.errors import InputError
from hscc_trace.flows import tracker
from hscc_trace.flows.scan import flow_rows
from hscc_trace.perf import jit

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"


def _ext():
    mod = jit.ext_module()
    if mod is None:
        cannot_run(jit.kernels_status())
    return mod


@contextlib.contextmanager
def _numba_only() -> Iterator[None]:
    """Every kernel call goes to numba's dispatcher while the block runs."""
    saved = [(k, k._call, k._arg_error) for k in jit.REGISTRY.values()]
    for k in jit.REGISTRY.values():
        k._call, k._arg_error = k.dispatcher(), jit._NeverRaised
    try:
        yield
    finally:
        for k, call, err in saved:
            k._call, k._arg_error = call, err


def _captures() -> list[Path]:
    caps = sorted(SAMPLES.glob("*/capture.pcap"))
    c = corpus()
    if c is not None:
        caps += sorted(p for p in c.iterdir() if p.suffix in (".pcap", ".pcapng", ".gz", ".cap"))
    return caps


# ---- the same results --------------------------------------------------------------------------

#: filters run on every capture's batches (one program per link type)
FILTERS = ("tcp", "tcp[13] & 2 != 0 or greater 1000", "ip6 or (ip and tcp[4:4] > 0x80000000)")


def _kernel_outputs(path: Path) -> list:
    """Everything the kernels compute for one capture, read in small chunks (many batches, records
    carried over between them): the walkers' records, the full decoder (packed and per record),
    the flows decoder, BPF verdicts, the flow kernel per packet (with tables grown from tiny),
    its state and rows, and the ``hscc-trace flows`` rows."""
    out: list = []
    info = reader.ReadInfo()
    tr = tracker.FlowTracker(flows=1, nodes=2)
    tr.tkeys, tr.tval = tr.tkeys[:2].copy(), tr.tval[:2].copy()
    flts = []
    for expr in FILTERS:
        try:
            flts.append(BpfFilter(expr))
        except InputError:
            pass
    try:
        for batch in reader.iter_batches(str(path), info):
            n = len(batch)
            out += [batch.off.copy(), batch.cap.copy(), batch.wire.copy(), batch.ts_ns.copy(), batch.iface.copy()]
            out.append(batch.linktype.copy())
            for compact in (True, False):
                cols = decode.Columns(*(np.zeros_like(a) for a in decode._alloc(n)))
                k = decode.decode_batch(batch.records(), cols, compact)
                out += [k, *cols]
            cols = decode.Columns(*(np.zeros_like(a) for a in decode._alloc(n)))
            half = n // 2  # in two calls, as the flows scan's two threads do
            decode.decode_batch_flows(batch.records(slice(0, half)), cols.rows(slice(0, half)))
            decode.decode_batch_flows(batch.records(slice(half, n)), cols.rows(slice(half, n)))
            out += list(cols)
            for f in flts:
                try:
                    out.append(f.match(batch))
                except InputError as exc:  # no program for this link type
                    out.append(str(exc))
            c, _status = decode.decode_arrays(batch)
            if len(c["flags"]):
                out += list(tr.feed(c))
    except InputError as exc:
        out.append(f"InputError: {exc}")
    out += [info.format, info.records, sorted(info.problems.items())]
    nf = tr.n_flows
    out += [tr.S[:nf], tr.ADDR[:nf], tr.tkeys, tr.tval, tr.ctl, tr.acc, tr.rtt_acc]
    used = int(tr.rtt_acc[0])
    out += [tr.rtt_flow[:used], tr.rtt_side[:used], tr.rtt_val[:used]]
    out.append(json.dumps(tr.rows()))
    try:
        out.append(json.dumps(flow_rows(path).rows))
    except InputError as exc:
        out.append(f"InputError: {exc}")
    return out


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
        )
    return type(a) is type(b) and a == b


def test_compiled_and_numba_kernels_give_identical_results(monkeypatch):
    """Every sample and external capture: every output of every kernel, and the flow rows of
    ``hscc-trace flows``, from the compiled extension equal those of the numba functions."""
    _ext()
    monkeypatch.setattr(reader, "CHUNK", 1 << 16)  # many batches per capture
    caps = _captures()
    assert len(caps) >= 20
    compared = 0
    for path in caps:
        compiled = _kernel_outputs(path)
        with _numba_only():
            reference = _kernel_outputs(path)
        assert len(compiled) == len(reference), path.name
        for i, (a, b) in enumerate(zip(compiled, reference)):
            assert _same(a, b), (path.name, i, a, b)
        compared += isinstance(compiled[-1], str) and compiled[-1].startswith("[")
    assert compared >= 20  # most of them are real flow tables


def test_filtered_flow_rows_are_identical():
    _ext()
    jobs = [
        (SAMPLES / "reno-loss" / "capture.pcap", "tcp[13] & 16 != 0"),
        (SAMPLES / "reno-vs-cubic" / "capture.pcap", "tcp port 5002"),
    ]
    for p, f in jobs:
        a = flow_rows(p, bpf=f).rows
        with _numba_only():
            b = flow_rows(p, bpf=f).rows
        assert a == b and a, (p, f)


def test_bpf_arithmetic_wraps_at_32_bits_as_libpcap():
    """libpcap's bpf_filter keeps A and X in u_int32: 0x80000000 + 0x80000000 is 0, and a left
    shift drops the high bits. Hand-made programs, run by both implementations."""
    from hscc_trace.capture.bpf import _run

    def prog(*ins):
        return np.array(ins, np.int64)

    ret_a_eq = [(0x15, 0, 1, 0), (0x06, 0, 0, 1), (0x06, 0, 0, 0)]  # jeq #0 → accept, else reject
    cases = {
        "add wraps": prog((0x00, 0, 0, 0x80000000), (0x04, 0, 0, 0x80000000), *ret_a_eq),
        "mul wraps": prog((0x00, 0, 0, 0x10000), (0x24, 0, 0, 0x10000), *ret_a_eq),
        "lsh drops": prog((0x00, 0, 0, 0x80000000), (0x64, 0, 0, 1), *ret_a_eq),
        "neg wraps": prog((0x00, 0, 0, 0), (0x84, 0, 0, 0), *ret_a_eq),
        "sub wraps": prog((0x00, 0, 0, 1), (0x14, 0, 0, 2), (0x15, 0, 1, 0xFFFFFFFF), (0x06, 0, 0, 1), (0x06, 0, 0, 0)),
    }
    want = {"add wraps": True, "mul wraps": True, "lsh drops": True, "neg wraps": True, "sub wraps": True}
    buf = np.zeros(64, np.uint8)
    rec = reader.Records(
        buf, np.zeros(1, np.int64), np.full(1, 60, np.uint32), np.full(1, 60, np.uint32), np.ones(1, np.uint16)
    )
    sel = np.zeros(1, np.int64)
    for impl in ("compiled", "numba"):
        with contextlib.nullcontext() if impl == "compiled" else _numba_only():
            for name, p in cases.items():
                out = np.zeros(1, np.bool_)
                _run(p, rec, sel, out)
                assert bool(out[0]) == want[name], (impl, name)


def test_constants_match_the_flow_kernel():
    """The compiled flow kernel hard-codes the state's column numbers and the kernel's constants;
    they must be tracker.py's (else it would read the wrong columns)."""
    mod = _ext()
    ours = {name: getattr(tracker, name) for name in mod.FLOW_CONSTANTS}
    assert mod.FLOW_CONSTANTS == ours
    assert {n for n in dir(tracker) if n.startswith("C_")} <= set(mod.FLOW_CONSTANTS)


# ---- the argument checks -----------------------------------------------------------------------

BAD_CALLS = r"""
import numpy as np
from hscc_trace.capture import decode, reader
from hscc_trace.flows import tracker
from hscc_trace.perf import jit

mod = jit.ext_module()
E = mod.KernelArgumentError
n = 4
buf = np.zeros(256, np.uint8)
rec = reader.Records(buf, np.arange(n, dtype=np.int64) * 60, np.full(n, 60, np.uint32),
                     np.full(n, 60, np.uint32), np.ones(n, np.uint16))
cols = decode._alloc(n)
refused = []

def refuses(what, fn, *args):
    try:
        fn(*args)
    except E as exc:
        refused.append(what)
        return
    raise AssertionError(f"{what}: accepted")

ro = rec.off.copy(); ro.flags.writeable = False
refuses("int32 offsets", mod.decode_batch, rec._replace(off=rec.off.astype(np.int32)), cols, True)
refuses("unsigned offsets", mod.decode_batch, rec._replace(off=rec.off.astype(np.uint64)), cols, True)
refuses("strided offsets", mod.decode_batch, rec._replace(off=np.arange(2 * n, dtype=np.int64)[::2]), cols, True)
refuses("2-D offsets", mod.decode_batch, rec._replace(off=rec.off.reshape(2, 2)), cols, True)
refuses("short cap", mod.decode_batch, rec._replace(cap=rec.cap[:2]), cols, True)
refuses("record outside buf", mod.decode_batch, rec._replace(cap=np.full(n, 100, np.uint32)), cols, True)
refuses("negative offset", mod.decode_batch, rec._replace(off=rec.off - 1), cols, True)
refuses("a list", mod.decode_batch, rec._replace(off=list(rec.off)), cols, True)
c2 = cols._replace(ipv=np.zeros(n, np.uint8)); c2.ipv.flags.writeable = False
refuses("read-only ipv", mod.decode_batch, rec, c2, True)
refuses("bool as uint8", mod.decode_batch, rec, cols._replace(has_ts=np.zeros(n, np.uint8)), True)
refuses("short sack", mod.decode_batch, rec, cols._replace(sack=np.zeros((4, n), np.uint32)), True)
refuses("Fortran sack", mod.decode_batch, rec, cols._replace(sack=np.zeros((n, 8), np.uint32).T), True)
refuses("missing field", mod.decode_batch, rec, tuple(cols), True)
refuses("bpf program shape", mod.bpf_run, np.zeros((3, 3), np.int64), rec, np.arange(n), np.zeros(n, bool))
refuses("bpf selection", mod.bpf_run, np.zeros((1, 4), np.int64), rec, np.array([n]), np.zeros(n, bool))
refuses("walk n beyond buf", mod.walk_pcap, buf, 1000, reader.PcapLayout(False, False, 16, 1 << 18), reader.Walked.empty(4))
refuses("walk float out", mod.walk_pcap, buf, 10, reader.PcapLayout(False, False, 16, 1 << 18),
        reader.Walked.empty(4)._replace(ts=np.zeros(4)))
tr = tracker.FlowTracker()
dt = dict(shi=np.uint64, slo=np.uint64, dhi=np.uint64, dlo=np.uint64, sport=np.uint16, dport=np.uint16,
          flags=np.uint16, seq=np.uint32, ack=np.uint32, win=np.uint16, plen=np.uint32, wire=np.uint32,
          ts=np.int64, mss=np.uint16, has_mss=bool, ws=np.uint8, has_ws=bool, sackp=bool, has_ts=bool,
          tsval=np.uint32, tsecr=np.uint32, ipv=np.uint8)
pk = tracker.Packets(**{f: np.zeros(n, t) for f, t in dt.items()}, status=np.zeros(0, np.uint8))
tab = tracker.Table(tr.S, tr.ADDR, tracker._DEFAULT, tr.tkeys, tr.tval, tr.ctl, tr.acc)
nodes = tracker.Nodes(tr.n_end, tr.n_ts, tr.n_flag, tr.n_next, tr.n_rel, tr.n_rk)
smp = tracker.Samples(np.zeros(5 * n, np.int64), np.zeros(5 * n, np.uint8), np.zeros(5 * n), np.zeros(1, np.int64))
out = tracker._NO_OUT
assert mod.flow_kernel(0, pk, tab, nodes, smp, False, out) == (n, 0)  # (four packets of a zero 5-tuple)
refuses("no room for samples", mod.flow_kernel, 0, pk, tab, nodes, smp._replace(val=np.zeros(3)), False, out)
refuses("state columns", mod.flow_kernel, 0, pk, tab._replace(S=np.zeros((4, 99), np.int64)), nodes, smp, False, out)
refuses("table not a power of two", mod.flow_kernel, 0, pk,
        tab._replace(tkeys=np.zeros((6, 5), np.uint64), tval=np.full(6, -1, np.int64)), nodes, smp, False, out)
refuses("ctl beyond the arrays", mod.flow_kernel, 0, pk, tab._replace(ctl=np.array([10**6, -1, 0, 0])), nodes, smp, False, out)
refuses("short per-packet output", mod.flow_kernel, 0, pk, tab, nodes, smp, True, tracker._NO_OUT)
refuses("int32 flags", mod.flow_kernel, 0, pk._replace(flags=pk.flags.astype(np.int32)), tab, nodes, smp, False, out)
refuses("i0 beyond", mod.flow_kernel, 9, pk, tab, nodes, smp, False, out)
refuses("stats flow index", mod.group_stats, np.array([0, 5]), np.zeros(2, np.uint8), np.ones(2),
        np.zeros(2, np.int64), tracker.Stats(np.zeros(2), np.zeros(2), np.zeros(2)))
refuses("rehash size", mod.rehash, tr.tkeys, tr.tval, 100)
print(len(refused))
"""


def test_the_extension_refuses_bad_arguments_and_never_crashes():
    """Wrong dtypes, signedness, layouts, dimensions, read-only outputs, short arrays, records
    outside the buffer, indices outside the arrays: KernelArgumentError, never a crash (run in a
    subprocess so that a crash fails the test instead of the test run)."""
    _ext()
    out = subprocess.run([sys.executable, "-c", BAD_CALLS], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr[-3000:]
    assert int(out.stdout) == BAD_CALLS.count("\nrefuses(") >= 25


def test_refused_arguments_run_through_numba_instead():
    """Through the Kernel, a call the extension refuses (int32 flow rows here) goes to numba's
    dispatcher and gives the answer the numba function gives."""
    _ext()
    code = (
        "import numpy as np\n"
        "from hscc_trace.flows.tracker import Stats, _group_stats as g\n"
        "fl = np.array([0, 0, 1, 0, 1], np.int32)\n"  # int32, not int64
        "sd = np.array([0, 0, 0, 1, 0], np.uint8)\n"
        "v = np.array([3.0, 1.0, 5.0, 9.0, 7.0])\n"
        "snd = np.array([0, 0], np.int64)\n"
        "out = Stats(*(np.full(2, np.nan) for _ in range(3)))\n"
        "g(fl, sd, v, snd, out)\n"
        "assert g.is_ext and g._dispatcher is not None, 'did not fall back to numba'\n"
        # flow 0: samples 3, 1 (9 timed side 1) -> min 1, median (1+3)/2 = 2, max 3;
        # flow 1: samples 5, 7 -> min 5, median 6, max 7
        "print([x.tolist() for x in out])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [[1.0, 5.0], [2.0, 6.0], [3.0, 7.0]]


def test_median_selection_on_adversarial_orders():
    """group_stats' selection (quickselect, sorting after too many rounds) gives np.median's
    value on orders that defeat a median-of-three pivot, on ties and on one value."""
    mod = _ext()
    rng = np.random.default_rng(7)
    for m in (1, 2, 3, 4, 5, 10, 101, 1000, 4096):
        k = np.arange(m, dtype=np.float64)
        for v in (k, k[::-1], np.zeros(m), rng.integers(0, 3, m).astype(float), np.roll(k, m // 2), rng.random(m)):
            v = np.ascontiguousarray(v)
            out = tracker.Stats(np.full(1, np.nan), np.full(1, np.nan), np.full(1, np.nan))
            mod.group_stats(np.zeros(m, np.int64), np.zeros(m, np.uint8), v.copy(), np.zeros(1, np.int64), out)
            assert out.median[0] == np.median(v) and out.min[0] == v.min() and out.max[0] == v.max(), (m, v[:8])


# ---- resolution and fallbacks -----------------------------------------------------------------


def test_every_kernel_with_a_twin_is_in_the_extension():
    mod = _ext()
    for name in (
        "hscc_trace.capture.reader",
        "hscc_trace.capture.decode",
        "hscc_trace.capture.bpf",
        "hscc_trace.flows.tracker",
    ):
        __import__(name)
    assert len(jit.REGISTRY) == 8
    for name, k in jit.REGISTRY.items():
        assert callable(getattr(mod, name, None)), name
        assert k.is_ext


def test_stale_extension_is_not_used(monkeypatch):
    """Built from other sources (an edited .pxi in an editable install, say): the source hashes
    differ and the kernels run through numba instead, with the reason in kernels_status."""
    _ext()
    monkeypatch.setattr(jit, "_state", {})
    monkeypatch.setattr(jit, "source_hash", lambda d: "0" * 64)
    assert jit.ext_module() is None
    assert "other sources" in jit.kernels_status()


def test_source_hash_covers_every_source(tmp_path):
    pkg = REPO / "hscc_trace"
    base = jit.source_hash(pkg)
    for rel in jit.EXT_SOURCES:
        copy = tmp_path / "pkg"
        for r in jit.EXT_SOURCES:
            (copy / r).parent.mkdir(parents=True, exist_ok=True)
            (copy / r).write_bytes((pkg / r).read_bytes() + (b"\n# edited\n" if r == rel else b""))
        assert jit.source_hash(copy) != base, rel
    # and the sources are what the module includes
    text = (pkg / "_kernels.pyx").read_text()
    assert ["_kernels.pyx"] + [ln.split('"')[1] for ln in text.splitlines() if ln.startswith("include ")] == list(
        jit.EXT_SOURCES
    )


def test_no_ext_environment_variable_disables_it(monkeypatch):
    monkeypatch.setattr(jit, "_state", {})
    monkeypatch.setenv(jit.NO_EXT_ENV, "1")
    assert jit.ext_module() is None
    assert jit.NO_EXT_ENV in jit.kernels_status()


# ---- the flows command ------------------------------------------------------------------------


def test_flows_never_imports_numba_with_the_extension():
    """pcap, pcapng, gzip, a BPF filter and a hash table that must grow: every kernel call of
    `hscc-trace flows` goes to the extension (no dispatcher is ever built)."""
    _ext()
    c = corpus()
    if c is None:
        pytest.skip("external capture corpus not present")
    code = f"""
import sys
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
assert all(k._dispatcher is None and k.is_ext for k in jit.REGISTRY.values()), \\
    [k for k in jit.REGISTRY.values() if k._dispatcher is not None]
assert "numba" not in sys.modules
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]


def _version(**env: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != jit.NO_EXT_ENV} | env
    out = subprocess.run(
        [sys.executable, "-m", "hscc_trace", "version"], capture_output=True, text=True, cwd=REPO, env=env
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_version_reports_which_kernels_are_in_use():
    lines = _version(**{jit.NO_EXT_ENV: "1"})
    assert lines[0] == "0.1.0"
    assert lines[1] == f"flows kernels: numba JIT: {jit.NO_EXT_ENV} is set"
    mod = _ext()
    assert _version()[1] == f"flows kernels: compiled extension ({mod.__file__})"


# ---- the build ---------------------------------------------------------------------------------


def _wheel(tmp: Path, **env: str) -> tuple[list[str], str]:
    """Build the project's wheel the way ``pip install .`` builds it (isolated build environment:
    setuptools and Cython from pyproject.toml), from a copy of the sources (no earlier build
    folder); its file names and pip's verbose log."""
    import shutil
    import zipfile

    src, out = tmp / "src", tmp / "wheel"
    for name in ("hscc_trace", "replay", "reports"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
    for name in ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md"):
        shutil.copy(REPO / name, src / name)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(out), str(src)],
        capture_output=True,
        text=True,
        env=dict(os.environ, **env),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (whl,) = out.glob("hscc_trace-*.whl")
    return zipfile.ZipFile(whl).namelist(), proc.stdout + proc.stderr


@pytest.mark.slow
def test_wheel_holds_the_compiled_kernels_not_their_sources(tmp_path):
    """The wheel has the extension and not its sources, and the build (setuptools, Cython, our
    setup.py) gives no deprecation warning with every DeprecationWarning shown."""
    names, log = _wheel(tmp_path, PYTHONWARNINGS="always::DeprecationWarning")
    assert [n for n in names if n.startswith("hscc_trace/_kernels.") and n.endswith((".so", ".pyd"))], names
    assert not [n for n in names if n.endswith((".pyx", ".pxi", ".c"))]
    assert "not built" not in log
    warned = [ln for ln in log.splitlines() if "Deprecat" in ln and "/pip/" not in ln]  # (pip's own: not the build)
    assert not warned, warned


@pytest.mark.slow
def test_without_a_c_compiler_the_build_warns_and_succeeds(tmp_path):
    """No working C compiler (CC=false): the wheel is built without the extension, and the build
    log says why and what happens instead."""
    names, log = _wheel(tmp_path, CC="false")
    assert not [n for n in names if n.startswith("hscc_trace/_kernels.")], names
    assert "hscc-trace: compiled kernels not built" in log and "numba will compile them on first use instead" in log
