"""The benchmark's own logic (benchmarks/), without peer tools and without timing anything.

* make_capture: a replication of crafted full-payload captures (IPv4 and IPv6) keeps every
  checksum valid after the client address is shifted (RFC 1624 incremental update), makes each
  copy a distinct connection, shifts each copy by exactly k · stagger and keeps every copy's
  packet order and inter-packet times.
* run.py: the target verdicts and ratios computed from a results document, its markdown, and
  the process measurement (exit code, peak RSS from wait4) on a tiny Python child.
* analyze_memory.py: the per-flow slope and its verdict against the figure the docs document.
* cpu_floor.py: the floor's arithmetic, and its instrumented child on a bundled sample (every
  wrapped call counted once: no part negative, the parts within the process's CPU time).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up here
    sys.path.insert(0, str(BENCH))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(BENCH))
    return mod


@pytest.fixture(scope="module")
def mc():
    return _load("make_capture")


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """Two tiny full-payload captures (so that tools can verify the TCP checksum): IPv4 and IPv6."""
    from scapy.layers.inet import IP, TCP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap

    d = tmp_path_factory.mktemp("src")
    out = []
    for fam, cli, srv in ((IP, "10.1.255.254", "192.0.2.1"), (IPv6, "2001:db8::1:fffe", "2001:db8:ff::1")):
        e = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        pk = [
            e / fam(src=cli, dst=srv) / TCP(sport=40000, dport=5201, flags="S", seq=100),
            e / fam(src=srv, dst=cli) / TCP(sport=5201, dport=40000, flags="SA", seq=900, ack=101),
            e / fam(src=cli, dst=srv) / TCP(sport=40000, dport=5201, flags="A", seq=101, ack=901),
            e / fam(src=cli, dst=srv) / TCP(sport=40000, dport=5201, flags="PA", seq=101, ack=901) / (b"x" * 20),
            e / fam(src=srv, dst=cli) / TCP(sport=5201, dport=40000, flags="A", seq=901, ack=121),
        ]
        pkts = [Ether(bytes(p)) for p in pk]  # bytes(): checksums computed
        for i, p in enumerate(pkts):  # the IPv6 source starts later in absolute time: irrelevant
            p.time = 1_700_000_000 + 0.001 * i + (7.0 if fam is IPv6 else 0.0)
        path = d / f"v{4 if fam is IP else 6}.pcap"
        wrpcap(str(path), pkts)
        out.append(path)
    return out


def test_replica_checksums_addresses_and_times(mc, sources, tmp_path):
    from scapy.layers.inet import IP, TCP
    from scapy.layers.inet6 import IPv6
    from scapy.utils import rdpcap

    m = mc.make("t", None, 0.25, None, 4, sources, out_dir=tmp_path)
    assert m["packets"] == 4 * 5 and m["flows"] == 4
    pk = rdpcap(m["file"])
    assert len(pk) == 20
    clients = []
    for p in pk:
        fam = IP if IP in p else IPv6
        # scapy recomputes a checksum when the field is deleted: the written one must equal it
        t = p[TCP]
        got = t.chksum
        q = p.copy()
        del q[TCP].chksum
        if fam is IP:
            del q[IP].chksum
            assert p[IP].chksum == fam(bytes(q[fam]))[IP].chksum
        assert got == fam(bytes(q[fam]))[TCP].chksum
        cl = p[fam].src if t.sport == 40000 else p[fam].dst
        clients.append(cl)
    # copy k = source k mod 2, client + k: IPv4 10.1.255.254 + 0, +2 (wraps inside the /16);
    # IPv6 ...:1:fffe + 1, + 3 (low 32 bits: 0x0001fffe + 3 = 0x00020001)
    assert set(clients) == {"10.1.255.254", "10.1.0.0", "2001:db8::1:ffff", "2001:db8::2:1"}
    # each copy: 5 packets, original order and spacing, started at k · 0.25 s
    by = {}
    for p in pk:
        fam = IP if IP in p else IPv6
        by.setdefault(p[fam].src if p[TCP].sport == 40000 else p[fam].dst, []).append(p)
    starts = {}
    for cl, ps in by.items():
        assert [str(p[TCP].flags) for p in ps] == ["S", "SA", "A", "PA", "A"]
        gaps = [round(float(b.time - a.time), 6) for a, b in zip(ps, ps[1:])]
        assert gaps == [0.001] * 4
        starts[cl] = round(float(ps[0].time) - 1_700_000_000, 6)
    # (copies are placed relative to source 0's first packet, each at its own offset 0)
    assert starts == {"10.1.255.254": 0.0, "2001:db8::1:ffff": 0.25, "10.1.0.0": 0.5, "2001:db8::2:1": 0.75}
    # merged stream is in time order
    ts = [float(p.time) for p in pk]
    assert ts == sorted(ts)


def test_replica_prefix_and_packet_cut(mc, sources, tmp_path):
    m = mc.make("p", None, 1.0, 2, 3, sources, out_dir=tmp_path)  # 3 copies × first 2 packets
    assert m["packets"] == 6
    m2 = mc.make("n", 7, 0.0, None, None, sources, out_dir=tmp_path)  # copies until ≥ 7, cut at 7
    assert m2["packets"] == 7 and m2["flows"] == 2
    # deterministic: same parameters → same bytes
    m3 = mc.make("n", 7, 0.0, None, None, sources, out_dir=tmp_path, force=True)
    assert m3["sha256"] == m2["sha256"]


def test_non_tcp_source_is_refused(mc, tmp_path):
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap

    f = tmp_path / "udp.pcap"
    wrpcap(str(f), [Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP()])
    with pytest.raises(SystemExit, match="not Ethernet/IPv4\\|IPv6/TCP"):
        mc.read_source(f)


def _doc(run, tcptrace_s, flows_s, tshark_s, analyze_s, events_s, rss, loop_eps):
    def case(label, wall, rss_mib=10.0):
        return dict(
            label=label,
            wall_s=wall,
            cpu_s=wall,
            rss_mib=rss_mib,
            n=3,
            n_ok=3,
            pkts_per_s=1e6 / wall,
            x_hscc_flows=wall / flows_s,
            x_hscc_analyze=wall / analyze_s,
        )

    caps = {}
    for name, n, scale in (
        ("replica-0.1M", 100_000, 0.1),
        ("replica-1M", 1_000_000, 1.0),
        ("replica-5M", 5_000_000, 5.0),
    ):
        caps[name] = dict(
            packets=n,
            flows=5,
            bytes=100 * 2**20 * scale,
            sha256="x",
            cases=dict(
                hscc_flows=case("hscc-trace flows", flows_s * scale, rss * scale),
                hscc_events=case("hscc-trace events", events_s * scale, rss * scale),
                hscc_analyze=case("hscc-trace analyze", analyze_s * scale, rss * scale),
                tcptrace=case("tcptrace -l", tcptrace_s * scale),
                tshark_conv=case("tshark conv", tshark_s * scale),
            ),
        )
    return dict(
        date="2026-01-01 00:00",
        params=dict(runs=3, max_repeat_s=60.0),
        machine=dict(
            nproc=2,
            cpu_model="cpu",
            mem_gib=1,
            kernel="k",
            loadavg_start=["0", "0", "0"],
            **{
                k: "v"
                for k in ("hscc_trace", "tshark", "tcptrace", "python", "polars", "numba", "numpy", "dpkt", "scapy")
            },
        ),
        captures=caps,
        replay=dict(
            capture="replica-1M",
            warm=dict(
                ack_events=10,
                flows=1,
                repeat=1,
                algorithms={
                    "reno": dict(loop_events_per_s=loop_eps * 2, run_events_per_s=1e6, first_run_s=0.1),
                    "cubic": dict(loop_events_per_s=loop_eps, run_events_per_s=1e6, first_run_s=0.1),
                },
            ),
        ),
    )


def test_targets_pass_and_fail_from_ratios():
    run = _load("run")
    # flows 0.8 s vs tcptrace 1.0 s (0.8×, pass); tshark 30 s = 37.5× flows (< 50×, fail);
    # analyze 1.9 s (1.9×, pass); events 1.6 s (1.6×, fail); rss 50 MiB/5M-capture of 500 MiB (0.1, pass)
    doc = _doc(run, tcptrace_s=1.0, flows_s=0.8, tshark_s=30.0, analyze_s=1.9, events_s=1.6, rss=10.0, loop_eps=15e6)
    t = {x["target"]: x for x in run.targets(doc)}
    assert t["flows ≤ 1.0× tcptrace -l"]["value"] == pytest.approx(0.8) and t["flows ≤ 1.0× tcptrace -l"]["passed"]
    ts = t["flows ≥ 50× faster than tshark conv"]
    assert ts["value"] == pytest.approx(37.5) and ts["passed"] is False
    assert t["analyze (all algorithms + report) ≤ 2.0× tcptrace -l"]["passed"] is True
    assert t["events path ≤ 1.5× tcptrace -l"]["passed"] is False
    mem = t["peak memory of hscc-trace flows ≤ capture size"]
    assert mem["value"] == pytest.approx(50 / 500) and mem["passed"]
    # every time scales exactly with packets (startup 0): marginal cost ratio 1.0 → linear
    lin = t["hscc flows: time linear in packets"]
    assert lin["value"] == pytest.approx(1.0) and lin["passed"]
    rp = t["replay ≥ 20 M ACK events/s per algorithm per core, on the replica's flows (slowest algorithm)"]
    assert rp["value"] == 15e6 and rp["passed"] is False and "cubic" in rp["detail"]
    md = run.markdown(dict(doc, targets=list(t.values())))
    assert "| flows ≤ 1.0× tcptrace -l | 0.80 | <= 1 | **pass** |" in md
    assert "| flows ≥ 50× faster than tshark conv | 37.50 | >= 50 | **FAIL** |" in md
    assert "| cubic | 15.0 | 1.0 |" in md


def test_one_flow_linearity_fails_a_cost_quadratic_in_the_flow(tmp_path):
    run = _load("run")
    # linear: 1 µs a packet plus 2 s start-up over 1M / 2M / 4M packets → marginal 1.0 then 1.0 µs
    pts = [dict(packets=n, cpu_s=2 + n * 1e-6, rss_mib=0, rc=0) for n in (1_000_000, 2_000_000, 4_000_000)]
    doc = dict(captures={}, flow_linearity=dict(capture="one", points=pts))
    t = {x["target"]: x for x in run.targets(doc)}["one flow (one): analyze time linear in packets"]
    assert t["value"] == pytest.approx(1.0) and t["passed"]
    # quadratic: c · n² with c = 1e-12 s → 1, 4, 16 s: marginal (4 − 1) / 1M = 3 µs, then (16 − 4) / 2M
    # = 6 µs: ratio 2.0 > 1.25
    for p, c in zip(pts, (1.0, 4.0, 16.0)):
        p["cpu_s"] = c
    t = {x["target"]: x for x in run.targets(doc)}["one flow (one): analyze time linear in packets"]
    assert t["value"] == pytest.approx(2.0) and t["passed"] is False
    # the prefix writer: the global header and the first k records, each header + its bytes
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether
    from scapy.utils import rdpcap, wrpcap

    src = tmp_path / "all.pcap"
    wrpcap(str(src), [Ether() / IP() / TCP(seq=i) / (b"x" * i) for i in range(5)])
    assert run._pcap_prefix(src, tmp_path / "p.pcap", 3)
    got = rdpcap(str(tmp_path / "p.pcap"))
    assert [pk[TCP].seq for pk in got] == [0, 1, 2] and len(got[2][TCP].payload) == 2
    assert run._pcap_prefix(src, tmp_path / "q.pcap", 99) and len(rdpcap(str(tmp_path / "q.pcap"))) == 5
    (tmp_path / "x.pcapng").write_bytes(b"\x0a\x0d\x0d\x0a" + bytes(40))
    assert not run._pcap_prefix(tmp_path / "x.pcapng", tmp_path / "r.pcap", 3)


def test_measure_reports_exit_code_and_peak_memory():
    run = _load("run")
    # A child that holds ~200 MiB: ru_maxrss must see it; exit code passed through.
    # Linux carries the parent's RSS high-water mark into a vfork+exec'd child's ru_maxrss, so
    # measure() is called from a small fresh interpreter (as benchmarks/run.py is), not from
    # this pytest process, which may hold hundreds of MiB by now.
    child = "b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096]); raise SystemExit(3)"
    probe = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import run; "
        "print(json.dumps(run.measure([sys.executable, '-c', sys.argv[2]], timeout_s=60)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(BENCH), child], check=True, capture_output=True, text=True, timeout=120
    )
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["rc"] == 3 and not r["timeout"]
    assert 200 <= r["rss_mib"] < 400
    s = run.summarize([dict(r, rc=0, wall_s=w) for w in (3.0, 1.0, 2.0)])
    assert s["wall_s"] == 2.0 and s["n_ok"] == 3


# --- the corpus benchmark (benchmarks/make_corpus.py, benchmarks/corpus_bench.py) -----------------


@pytest.fixture(scope="module")
def mk():
    return _load("make_corpus")


@pytest.fixture(scope="module")
def raw_sources(tmp_path_factory):
    """Two tiny full-payload captures like the samples (link type RAW, no Ethernet): IPv4 and
    IPv6, so that every checksum can be verified after the rewrite."""
    from scapy.layers.inet import IP, TCP
    from scapy.layers.inet6 import IPv6
    from scapy.utils import wrpcap

    d = tmp_path_factory.mktemp("raw")
    out = []
    for fam, cli, srv in ((IP, "10.1.255.254", "192.0.2.1"), (IPv6, "2001:db8::1:fffe", "2001:db8:ff::1")):
        pk = [
            fam(src=cli, dst=srv) / TCP(sport=40000, dport=5201, flags="S", seq=100),
            fam(src=srv, dst=cli) / TCP(sport=5201, dport=40000, flags="SA", seq=900, ack=101),
            fam(src=cli, dst=srv) / TCP(sport=40000, dport=5201, flags="PA", seq=101, ack=901) / (b"x" * 20),
            fam(src=srv, dst=cli) / TCP(sport=5201, dport=40000, flags="A", seq=901, ack=121),
        ]
        pkts = [fam(bytes(p)) for p in pk]  # bytes(): checksums computed
        for i, p in enumerate(pkts):
            p.time = 1_700_000_000 + 0.001 * i
        path = d / f"raw{4 if fam is IP else 6}.pcap"
        wrpcap(str(path), pkts, linktype=101)
        out.append(path)
    return out


def test_corpus_copies_rewrite_addresses_times_and_checksums(mk, raw_sources, tmp_path):
    from scapy.layers.inet import IP, TCP
    from scapy.layers.inet6 import IPv6
    from scapy.utils import rdpcap

    m = mk.make(4, tmp_path / "c", stagger_s=600, source_paths=raw_sources)
    assert m["files"] == ["c00000-raw4.pcap", "c00001-raw6.pcap", "c00002-raw4.pcap", "c00003-raw6.pcap"]
    seen = {}
    for k, name in enumerate(m["files"]):
        pk = rdpcap(str(tmp_path / "c" / name))
        assert len(pk) == 4
        for p in pk:
            fam = IP if IP in p else IPv6
            q = p.copy()  # scapy recomputes a deleted checksum: the written one must equal it
            del q[TCP].chksum
            if fam is IP:
                del q[IP].chksum
                assert p[IP].chksum == IP(bytes(q[IP])).chksum
            assert p[TCP].chksum == fam(bytes(q[fam]))[TCP].chksum
        p0 = pk[0][IP if IP in pk[0] else IPv6]
        seen[k] = (p0.src, p0.dst, round(float(pk[0].time) - 1_700_000_000, 6), [str(p[TCP].flags) for p in pk])
    # copy k: both addresses' low 16 bits + (k + 1) mod 2^16, times + k · 600 s:
    # k=0: 10.1.255.254 → .255.255, 192.0.2.1 → 192.0.2.2; k=2: 0xfffe + 3 = 0x10001 → 10.1.0.1 (wraps
    # inside the /16), 192.0.2.4; IPv6 k=1: ...:1:fffe + 2 → ...:1:0 (the low 16 bits only), ff::1 + 2 = ff::3
    assert seen[0][:3] == ("10.1.255.255", "192.0.2.2", 0.0)
    assert seen[1][:3] == ("2001:db8::1:0", "2001:db8:ff::3", 600.0)
    assert seen[2][:3] == ("10.1.0.1", "192.0.2.4", 1200.0)
    assert seen[3][:3] == ("2001:db8::1:2", "2001:db8:ff::5", 1800.0)
    assert all(v[3] == ["S", "SA", "PA", "A"] for v in seen.values())  # order and flags kept
    # made the same way again: reused as it is
    assert mk.make(4, tmp_path / "c", stagger_s=600, source_paths=raw_sources) == m


def test_corpus_copy_analyzes_like_its_sample(mk, tmp_path):
    # a real sample and its copy k = 30: the same flows, fits and episodes, except addresses and times
    from hscc_trace import api

    src = REPO / "samples" / "reno-loss" / "capture.pcap"
    out = tmp_path / "c30.pcap"
    out.write_bytes(mk.copy_bytes(mk.read_source(src), 30, 600))
    a, b = (api.analyze(p, api.AnalyzeOptions(["reno", "cubic"])).analysis for p in (src, out))
    fa, fb = api.flow_table(a), api.flow_table(b)
    assert fa["src"][0] == "10.77.0.1" and fb["src"][0] == "10.77.0.32"  # + 31
    assert (fb["first_ns"] - fa["first_ns"]).to_list() == [30 * 600 * 10**9]
    same = [c for c in fa.columns if c not in ("capture", "src", "dst", "first_ns", "last_ns")]
    assert fa.select(same).equals(fb.select(same))
    assert api.fit_table(a).drop("capture").equals(api.fit_table(b).drop("capture"))
    ea, eb = (x.captures[0].results[0].events.episodes for x in (a, b))
    assert ea.height > 0 and ea.drop("start_ns", "end_ns").equals(eb.drop("start_ns", "end_ns"))
    assert (eb["start_ns"] - ea["start_ns"]).unique().to_list() == [30 * 600 * 10**9]


def _corpus_record(hscc_cases: dict, render) -> dict:
    """A corpus_bench record of 2,000 captures (half 1,000) with these hscc cases and the
    tcptrace loop at 18.0 s of CPU (9.0 ms a capture), before ``summarize``."""
    return {
        "stamp": "t",
        "captures": 2000,
        "half": 1000,
        "runs": 1,
        "sources": 25,
        "corpus_mib": 1900.0,
        "machine": {"cpu": "x", "cores": 2},
        "load": {"before": 0.1, "after": 0.2, "max": 0.3},
        "cases": {
            **hscc_cases,
            "tcptrace loop": [dict(wall_s=20.0, cpu_s=18.0, rate=100.0, steady_rate=None)],
            "tcptrace ×2": [dict(wall_s=11.0, cpu_s=18.0, rate=181.8, steady_rate=None)],
        },
        "census": {"build_s": 2.0, "bytes": 1_300_000, "render": render},
    }


def test_corpus_bench_targets_and_markdown():
    cb = _load("corpus_bench")

    def hscc(rate, steady, workers):
        return dict(wall_s=100.0, cpu_s=100.0, rate=rate, steady_rate=steady, workers_mib=workers, client_mib=150.0)

    def res(w1, w2, w1s, w2s, mem_all, mem_half, render):
        r = _corpus_record(
            {
                "hscc w1": [hscc(w1, w1s, [300.0])],
                "hscc w2": [hscc(w2, w2s, mem_all)],
                "hscc w2 half": [hscc(w2 / 2, w2s, mem_half)],
            },
            render,
        )
        r["summary"] = cb.summarize(r)
        return r

    ok = {"wall_s": 0.8, "errors": [], "requests": [], "figures": {"drawn": 4}}
    # 20 → 37 captures/s = 1.85× (pass); steady 21 → 40 = 1.90×; memory 320 vs 300 MiB = 1.067 (pass)
    r = res(20.0, 37.0, 21.0, 40.0, [320.0, 310.0], [300.0, 290.0], ok)
    t = {x["name"]: (x["value"], x["pass"]) for x in r["summary"]["targets"]}
    assert t["captures/s, 2 workers vs 1 (whole run)"] == (1.85, True)
    assert t["captures/s, 2 workers vs 1 (steady)"] == (1.9, True)
    assert t["peak memory per worker, 2000 vs 1000 captures"] == (1.067, True)
    assert t["census render (navigation to last figure)"] == (0.8, True)
    assert t["census: console errors / requests"] == ("0 / 0", True)
    assert "| hscc w2 |  | 100.0 s | 37.0 | 40.0 |" in cb.markdown(r)  # (no load recorded here)
    # 20 → 30 = 1.5× (fail); 340 vs 300 = 1.133 (fail); render 3.2 s (fail); one console error (fail)
    bad = {"wall_s": 3.2, "errors": ["console: x"], "requests": [], "figures": {"drawn": 4}}
    r = res(20.0, 30.0, 21.0, 30.0, [340.0], [300.0], bad)
    assert [x["pass"] for x in r["summary"]["targets"]] == [False, False, False, False, False]
    assert cb.markdown(r).count("**FAIL**") == 5


def test_corpus_bench_says_why_the_census_has_no_figure(tmp_path, monkeypatch):
    # a render that failed gives its reason in both census rows and the markdown, never a bare
    # None; the helper it borrows is where the report tests keep it (it once moved away unseen)
    cb = _load("corpus_bench")
    assert cb.BROWSER_HELPER.is_file()
    hscc = dict(wall_s=100.0, cpu_s=100.0, rate=20.0, steady_rate=20.0, workers_mib=[300.0], client_mib=150.0)
    r = _corpus_record({k: [hscc] for k in ("hscc w1", "hscc w2", "hscc w2 half")}, {"error": "no chromium found"})
    r["summary"] = cb.summarize(r)
    t = {x["name"]: (x["value"], x["pass"]) for x in r["summary"]["targets"]}
    why = "not drawn: no chromium found"
    assert t["census render (navigation to last figure)"] == (why, False)
    assert t["census: console errors / requests"] == (why, False)
    assert f"1.30 MB, {why}." in cb.markdown(r)
    # a page that never says it is done: the status it reached
    r["census"]["render"] = {"status": {"done": False}}
    assert cb.summarize(r)["targets"][3]["value"] == "not drawn: status {'done': False}"
    monkeypatch.setattr(cb, "BROWSER_HELPER", tmp_path / "gone.py")
    assert cb.render(tmp_path / "census.html") == {"error": f"no browser helper at {tmp_path / 'gone.py'}"}


def test_corpus_bench_puts_the_baseline_beside_each_case():
    # --baseline: cases "hscc w1 baseline" and "hscc w2 baseline" are tabled after their own, and
    # the steady worker CPU per capture of all four is given over the tcptrace loop's:
    # 18.0 s / 2000 captures = 9.0 ms; 36 / 9 = 4.0×, 45 / 9 = 5.0×, 54 / 9 = 6.0×, 63 / 9 = 7.0×
    cb = _load("corpus_bench")

    def hscc(steady_ms):
        return dict(
            wall_s=100.0,
            cpu_s=100.0,
            rate=20.0,
            steady_rate=21.0,
            workers_mib=[300.0],
            client_mib=150.0,
            workers_cpu_s=80.0,
            client_cpu_s=5.0,
            steady_worker_cpu_ms=steady_ms,
        )

    r = _corpus_record(
        {
            "hscc w1": [hscc(36.0)],
            "hscc w1 baseline": [hscc(45.0)],
            "hscc w2": [hscc(54.0)],
            "hscc w2 baseline": [hscc(63.0)],
            "hscc w2 half": [hscc(54.0)],
        },
        None,
    )
    r["summary"] = cb.summarize(r)
    md = cb.markdown(r)
    rows = [ln.split(" | ")[0].lstrip("| ") for ln in md.splitlines() if ln.startswith("| hscc")]
    assert rows == ["hscc w1", "hscc w1 baseline", "hscc w2", "hscc w2 baseline", "hscc w2 half"]
    assert (
        "tcptrace -lr loop 9.0 ms per capture (hscc w1 / loop: 4.0×, hscc w1 baseline / loop: 5.0×, "
        "hscc w2 / loop: 6.0×, hscc w2 baseline / loop: 7.0×, target ≤ 3×)"
    ) in md
    # without a baseline, the line gives hscc w2's ratio alone
    del r["cases"]["hscc w1 baseline"], r["cases"]["hscc w2 baseline"]
    r["summary"] = cb.summarize(r)
    assert "(hscc w2 / loop: 6.0×, target ≤ 3×)" in cb.markdown(r)


def test_analyze_memory_reports_the_per_flow_slope_beside_the_documented_figure() -> None:
    # benchmarks/analyze_memory.py (issue #20): the per-flow cost is the difference of the peaks
    # of the 50 000- and 10 000-connection runs over the 40 000 flows between them, printed beside
    # the figure docs/performance.md documents (the same number in both places)
    am = _load("analyze_memory")

    def case(rss: float, wall: float, rc: int = 0) -> dict:
        return dict(runs=[], rc=rc, wall_s=wall, cpu_s=wall, rss_mib=rss, load=[1.0, 1.0])

    res = dict(
        stamp="T",
        command="python benchmarks/analyze_memory.py",
        load_start=[1.0, 1.0, 1.0],
        sizes={"replica-flows10k-p50": 50 << 20, "replica-flows50k-p50": 250 << 20},
        cases={
            "analyze replica-flows10k-p50": case(300.0, 80.0),
            "analyze replica-flows50k-p50": case(500.0, 400.0),
        },
    )
    s = am.slopes(res)
    assert s is not None and abs(s["kb_per_flow"] - 200 * 1024 / 40000) < 1e-9 and abs(s["ms_per_flow"] - 8.0) < 1e-9
    res["slope"] = s
    md = am.markdown(res)
    assert "5.1 KB" in md and "within" in md and "pass" in md
    res["cases"]["analyze replica-flows50k-p50"] = case(2000.0, 400.0)
    res["slope"] = am.slopes(res)
    md = am.markdown(res)
    assert "**above**" in md and "**FAIL**" in md
    res["cases"]["analyze replica-flows50k-p50"] = case(500.0, 400.0, rc=134)  # a crash has no slope
    assert am.slopes(res) is None
    doc = (REPO / "docs" / "performance.md").read_text()
    assert f"≤ {am.DOCUMENTED_KB_PER_FLOW:g} KB of peak memory per flow" in doc


def test_cpu_floor_splits_cpu_into_compiled_loading_and_glue() -> None:
    cf = _load("cpu_floor")
    doc = {
        "wall_s": 7.0,
        "cpu_s": 10.0,
        "threads": {"MainThread": 6.0},
        "compiled": {"kernel:a": 3.0, "digest": 1.0, "gzip": 0.5, "load:a": 0.5},
        "main_compiled_s": 2.0,
        "main_load_s": 0.5,
    }
    s = cf.summarize(doc, cores=2)
    # compiled 3 + 1 + 0.5 = 4.5 s; loading 0.5 s; glue 10 − 4.5 − 0.5 = 5 s; floor 4.5 / 2 cores
    assert s["compiled_s"] == pytest.approx(4.5) and s["load_s"] == pytest.approx(0.5)
    assert s["glue_s"] == pytest.approx(5.0) and s["floor_s"] == pytest.approx(2.25)
    assert s["main_thread_s"] == 6.0 and s["wall_s"] == 7.0
    assert s["main_compiled_s"] == 2.0 and s["main_glue_s"] == pytest.approx(3.5)  # 6 − 2 − 0.5


def test_cpu_floor_child_counts_every_wrapped_call_once(tmp_path: Path) -> None:
    cf = _load("cpu_floor")
    # (a first call that compiles counts whole as loading, its run included: a first run fills
    # numba's cache, as the benchmark's figures are taken on a warm cache)
    cf._analyze_once(REPO / "samples" / "reno-bdp" / "capture.pcap", tmp_path)
    doc = cf._analyze_once(REPO / "samples" / "reno-bdp" / "capture.pcap", tmp_path)
    assert (tmp_path / "report.html").stat().st_size > 0 and (tmp_path / "results.json").exists()
    parts = doc["compiled"]
    assert parts["digest"] > 0 and parts["gzip"] > 0  # (the JSON's input digest, the report's streams)
    assert any(k.startswith("kernel:events.") for k in parts) and any(k.startswith("kernel:replay loop") for k in parts)
    assert min(parts.values()) >= 0  # (a nested call's time is taken out of its caller's, once)
    # every part is CPU time of some thread of this process: together within the process's total
    assert sum(parts.values()) <= doc["cpu_s"] + 0.05
    assert doc["threads"]["MainThread"] <= doc["cpu_s"] + 0.05
    assert 0 < doc["main_compiled_s"] + doc["main_load_s"] <= doc["threads"]["MainThread"] + 0.05
