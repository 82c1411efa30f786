"""Flow table (hscc_trace.flows.tracker) on hand-built connections; expected values worked out by hand.

Conventions in the comments: A = 10.0.0.1:40000 (client), B = 10.0.0.2:80; times in seconds;
"seq" is relative to the sender's ISN (the SYN occupies relative 0, data starts at 1).
"""

from __future__ import annotations

import pytest
from polars.testing import assert_frame_equal
from test_capture_support import need_corpus, pcap_bytes

from hscc_trace.flows import load, load_flows
from hscc_trace.flows.tracker import KIND_KEEPALIVE, KIND_NONE, KIND_OOO, KIND_RETRANS, build_flows, segment_kinds

S = pytest.importorskip("scapy.all")
T0 = 1_700_000_000 * 10**9
A, B, PA, PB = "10.0.0.1", "10.0.0.2", 40000, 80
ISN_A, ISN_B = 1000, 5000


def a2b(t, flags="A", seq=0, ack=0, data=b"", **kw):
    """A→B packet at t seconds; seq/ack relative (to ISN_A / ISN_B)."""
    return (
        t,
        S.Ether()
        / S.IP(src=A, dst=B)
        / S.TCP(sport=PA, dport=PB, flags=flags, seq=(ISN_A + seq) % 2**32, ack=(ISN_B + ack) % 2**32, **kw)
        / data,
    )


def b2a(t, flags="A", seq=0, ack=0, data=b"", **kw):
    return (
        t,
        S.Ether()
        / S.IP(src=B, dst=A)
        / S.TCP(sport=PB, dport=PA, flags=flags, seq=(ISN_B + seq) % 2**32, ack=(ISN_A + ack) % 2**32, **kw)
        / data,
    )


def cap(tmp_path, pkts, name="t.pcap"):
    p = tmp_path / name
    p.write_bytes(pcap_bytes([(T0 + round(t * 1e9), bytes(x)) for t, x in pkts], nsec=True))
    return load(p)


def handshake(t_syn=0.0, t_synack=0.030, t_ack=0.031, **opts):
    return [
        a2b(t_syn, "S", 0, 0, options=opts.get("a", [])),
        b2a(t_synack, "SA", 0, 1, options=opts.get("b", [])),
        a2b(t_ack, "A", 1, 1),
    ]


def test_handshake_counts_bytes_and_goodput(tmp_path):
    # 10 segments of 1000 bytes from A at t = 1.0, 1.1, …, 1.9, each ACKed 50 ms later
    pkts = handshake()
    for k in range(10):
        pkts.append(a2b(1.0 + k / 10, "PA", 1 + 1000 * k, 1, b"d" * 1000))
        pkts.append(b2a(1.05 + k / 10, "A", 1, 1 + 1000 * (k + 1)))
    c = cap(tmp_path, pkts)
    f = c.flows.row(0, named=True)
    assert (f["src"], f["sport"], f["dst"], f["dport"]) == (A, PA, B, PB)
    # A→B: SYN + ACK + 10 data = 12 packets; frame bytes 14+20+20 = 54 (no options), data 1054
    assert (f["pkts_ab"], f["bytes_ab"]) == (12, 2 * 54 + 10 * 1054)
    # B→A: SYN/ACK + 10 ACKs, 54 bytes each (Ethernet frames below 60 are not padded by scapy)
    assert (f["pkts_ba"], f["bytes_ba"]) == (11, 11 * 54)
    assert (f["payload_ab"], f["payload_ba"]) == (10000, 0)
    assert f["sender_dir"] == 0 and f["handshake"] and f["closed"] == "open" and f["retrans"] == 0
    # goodput = unique bytes · 8 / (last − first data segment) = 10000 · 8 / 0.9 s
    assert f["goodput_bps"] == pytest.approx(80000 / 0.9)
    assert f["duration_s"] == pytest.approx(1.95)
    # the largest segment seen: no MSS option announced by B
    assert f["mss"] == 1000
    assert c.packets["dir"].to_list()[:3] == [0, 1, 0]


def test_rtt_min_median_max_with_karn(tmp_path):
    pkts = handshake()  # SYN/ACK at 0.030 ACKs A's SYN: sample 0.030 for A's data
    pkts += [
        a2b(1.0, "PA", 1, 1, b"x" * 1000),  # seg1 [1, 1001)
        a2b(1.1, "PA", 1001, 1, b"x" * 1000),  # seg2 [1001, 2001)
        b2a(1.05, "A", 1, 1001),  # covers seg1 (sent 1.0): sample 0.05
        b2a(1.3, "A", 1, 2001),  # covers seg2 (sent 1.1, newest covered): sample 0.2
        a2b(1.4, "PA", 2001, 1, b"x" * 1000),  # seg3 [2001, 3001)
        a2b(2.4, "PA", 2001, 1, b"x" * 1000),  # seg3 again, 1 s later (> initial RTT 0.031): retransmission
        b2a(2.45, "A", 1, 3001),  # ambiguous (Karn): no sample
    ]
    pkts.sort(key=lambda p: p[0])
    f = cap(tmp_path, pkts).flows.row(0, named=True)
    assert f["retrans"] == 1
    # A's samples: 0.030, 0.05, 0.2
    assert (f["rtt_min_s"], f["rtt_median_s"], f["rtt_max_s"]) == pytest.approx((0.030, 0.05, 0.2))


def test_segment_kinds_follow_wireshark(tmp_path):
    """Wireshark 4.x tcp_analyze_sequence_number order: keep-alive, spurious, fast retrans, out-of-order, retrans.

    Initial RTT (SYN → first ACK) = 0.031 s is the out-of-order threshold."""
    pkts = handshake() + [
        a2b(1.000, "PA", 1001, 1, b"y" * 1000),  # 3: [1001,2001) arrives first: new (hole below)
        a2b(1.001, "PA", 1, 1, b"y" * 1000),  # 4: [1,1001) 1 ms later, below highest, < 31 ms: out-of-order
        b2a(1.050, "A", 1, 2001),  # 5: ACK all
        a2b(1.100, "PA", 1, 1, b"y" * 1000),  # 6: already ACKed: spurious retransmission
        a2b(1.200, "PA", 2001, 1, b"y" * 1000),  # 7: [2001,3001) new
        a2b(1.201, "PA", 3001, 1, b"y" * 1000),  # 8: [3001,4001) new
        b2a(1.250, "A", 1, 2001),  # 9: dup ACK #1 (ack 2001, same window, no data)
        b2a(1.251, "A", 1, 2001),  # 10: dup ACK #2
        a2b(1.260, "PA", 2001, 1, b"y" * 1000),  # 11: = last ACK, ≥ 2 dup ACKs, < 20 ms: fast retransmission
        b2a(1.300, "A", 1, 4001),  # 12
        a2b(1.400, "A", 4000, 1, b"k"),  # 13: 1 byte at next_seq − 1: keep-alive
        a2b(5.000, "PA", 3001, 1, b"y" * 1000),  # 14: below highest, 3.6 s later: retransmission
    ]
    c = cap(tmp_path, pkts)
    kinds = segment_kinds(c.packets).tolist()
    assert kinds == [KIND_NONE] * 3 + [
        KIND_NONE,
        KIND_OOO,
        KIND_NONE,
        KIND_RETRANS,
        KIND_NONE,
        KIND_NONE,
        KIND_NONE,
        KIND_NONE,
        KIND_RETRANS,
        KIND_NONE,
        KIND_KEEPALIVE,
        KIND_RETRANS,
    ]
    # spurious + fast + plain = 3 retransmitted data segments by the sender A
    assert c.flows["retrans"].to_list() == [3]
    # frame 4 is the one out-of-order data segment (the keep-alive, frame 13, is neither)
    assert c.flows["out_of_order"].to_list() == [1]


def test_port_reuse_starts_a_new_connection(tmp_path):
    pkts = handshake()
    pkts.insert(1, a2b(0.001, "S", 0, 0))  # SYN retransmitted with the same ISN: same connection
    pkts += [a2b(0.5, "FA", 1, 1), b2a(0.51, "FA", 1, 2), a2b(0.52, "A", 2, 2)]
    # same 5-tuple, new ISN: new connection (Wireshark: SYN with seq != base_seq)
    pkts += [
        (t, p)
        for t, p in [
            (1.0, S.Ether() / S.IP(src=A, dst=B) / S.TCP(sport=PA, dport=PB, flags="S", seq=777)),
            (1.03, S.Ether() / S.IP(src=B, dst=A) / S.TCP(sport=PB, dport=PA, flags="SA", seq=888, ack=778)),
        ]
    ]
    c = cap(tmp_path, pkts)
    assert c.flows.height == 2
    assert c.packets["flow_id"].to_list() == [0] * 7 + [1, 1]
    assert c.flows["closed"].to_list() == ["fin", "open"]
    assert c.flows["handshake"].to_list() == [True, True]
    assert (c.flows["pkts_ab"].to_list(), c.flows["pkts_ba"].to_list()) == ([5, 1], [2, 1])


def test_endpoint_a_without_syn_is_the_synack_receiver(tmp_path):
    c = cap(tmp_path, [b2a(0.0, "SA", 0, 1), a2b(0.01, "A", 1, 1), b2a(0.1, "PA", 1, 1, b"z" * 10)])
    f = c.flows.row(0, named=True)
    assert (f["src"], f["dst"], f["handshake"], f["sender_dir"]) == (A, B, False, 1)
    assert c.packets["dir"].to_list() == [1, 0, 1]


def test_endpoint_a_without_handshake_is_the_first_source(tmp_path):
    c = cap(tmp_path, [b2a(0.0, "PA", 1, 1, b"z" * 10), a2b(0.01, "A", 1, 11)])
    f = c.flows.row(0, named=True)
    assert (f["src"], f["sport"], f["handshake"], f["vantage"]) == (B, PB, False, "unknown")
    assert c.packets["dir"].to_list() == [0, 1] and f["sender_dir"] == 0


def test_flow_ids_follow_first_packet_order(tmp_path):
    other = lambda t, sp: (t, S.Ether() / S.IP(src="10.9.9.9", dst=B) / S.TCP(sport=sp, dport=PB, flags="S"))  # noqa: E731
    c = cap(tmp_path, [other(0.0, 1), a2b(0.1, "S"), other(0.2, 2), other(0.3, 1)])
    assert c.packets["flow_id"].to_list() == [0, 1, 2, 0]
    assert c.flows["sport"].to_list() == [1, PA, 2]


@pytest.mark.parametrize(
    "gaps,sender_is_a,want",
    [
        ((0.100, 0.0001), True, "sender"),  # SYN→SYN/ACK = RTT, SYN/ACK→ACK tiny: capture beside A
        ((0.0001, 0.100), True, "receiver"),  # the reverse: beside B
        ((0.050, 0.050), True, "mid-path"),
        ((0.100, 0.0001), False, "receiver"),  # beside A, but B sends the data
        ((0.0001, 0.100), False, "sender"),
    ],
)
def test_vantage_from_handshake_gaps(tmp_path, gaps, sender_is_a, want):
    g1, g2 = gaps
    pkts = handshake(0.0, g1, g1 + g2)
    pkts.append(a2b(1.0, "PA", 1, 1, b"q" * 500) if sender_is_a else b2a(1.0, "PA", 1, 1, b"q" * 500))
    assert cap(tmp_path, pkts).flows["vantage"].to_list() == [want]


def _ttl_packets(gaps, ttl_a, ttl_b, handshake_seen=True):
    """A sends 20 segments to B (each ACKed); with ``handshake_seen`` after a handshake with
    gaps ``gaps`` (s). A's packets carry IP TTL ``ttl_a``, B's ``ttl_b``."""

    def pkt(t, a_side, flags, seq, ack, data=b""):
        src, dst, sp, dp, ttl = (A, B, PA, PB, ttl_a) if a_side else (B, A, PB, PA, ttl_b)
        isn, iack = (ISN_A, ISN_B) if a_side else (ISN_B, ISN_A)
        ip = S.IP(src=src, dst=dst, ttl=ttl)
        tcp = S.TCP(sport=sp, dport=dp, flags=flags, seq=(isn + seq) % 2**32, ack=(iack + ack) % 2**32)
        return t, S.Ether() / ip / tcp / data

    g1, g2 = gaps
    out = (
        [pkt(0.0, True, "S", 0, 0), pkt(g1, False, "SA", 0, 1), pkt(g1 + g2, True, "A", 1, 1)] if handshake_seen else []
    )
    for k in range(20):
        t = 0.001 + k * 0.0001
        out += [pkt(t, True, "PA", 1 + 100 * k, 1, b"d" * 100), pkt(t + 0.00005, False, "A", 1, 101 + 100 * k)]
    return out


@pytest.mark.parametrize(
    "gaps,ttl_a,ttl_b,seen,want,events_want",
    [
        # a µs round trip (gaps 10 / 11 µs, alike and under the floor: either may be a host's
        # turnaround, so the timing says unknown); A sends the data
        ((10e-6, 11e-6), 63, 64, True, "receiver", "receiver"),  # A's packets crossed a router, B's did not
        ((10e-6, 11e-6), 64, 63, True, "sender", "sender"),  # the reverse: at A
        ((10e-6, 11e-6), 64, 64, True, "unknown", "unknown"),  # no router between (loopback, one link)
        ((10e-6, 11e-6), 128, 52, True, "sender", "sender"),  # a Windows sender, 76 hops from B
        ((10e-6, 11e-6), 60, 63, True, "unknown", "unknown"),  # 60 is no initial TTL: the TTLs do not tell
        # gaps above the floor: the timing decides and the TTLs are not read (50 ms vs 0.1 ms: at A)
        ((0.050, 0.0001), 63, 64, True, "sender", "sender"),
        # no handshake: the TTLs, when they tell; else the table says unknown
        (None, 63, 64, False, "receiver", "receiver"),
        (None, 64, 64, False, "unknown", None),
    ],
)
def test_vantage_from_ttls_where_the_timing_cannot_tell(tmp_path, gaps, ttl_a, ttl_b, seen, want, events_want):
    """.near.ttl_near: where both handshake gaps are under the 200 µs floor, or there is no
    handshake, one side's packets at an initial TTL (64, 128, 255) and the other's below it put the
    capture on the first side's host or link. ``events_want`` None: the data rule's (not checked)."""
    from hscc_trace.events import flow_events

    c = cap(tmp_path, _ttl_packets(gaps or (0.0, 0.0), ttl_a, ttl_b, seen))
    assert c.flows["vantage"].cast(str).to_list() == [want]
    if events_want is not None:
        assert flow_events(c, 0).vantage == events_want


def test_options_negotiated_in_the_syns(tmp_path):
    a = [("MSS", 1460), ("WScale", 7), ("SAckOK", b""), ("Timestamp", (1, 0))]
    b = [("MSS", 1400), ("WScale", 9), ("Timestamp", (2, 1))]
    pkts = handshake(a=a, b=b) + [a2b(1.0, "PA", 1, 1, b"m" * 1388)]
    f = cap(tmp_path, pkts).flows.row(0, named=True)
    assert (f["wscale_a"], f["wscale_b"], f["sack_ok"], f["ts_ok"]) == (7, 9, False, True)
    # A sends: MSS = min(B's announced 1400, largest segment 1388)
    assert f["mss"] == 1388


def test_no_options_means_unknown_wscale(tmp_path):
    f = cap(tmp_path, handshake()).flows.row(0, named=True)
    assert (f["wscale_a"], f["wscale_b"], f["sack_ok"], f["ts_ok"], f["mss"]) == (-1, -1, False, False, None)
    assert f["goodput_bps"] is None and f["retrans"] == 0


def test_sequence_numbers_wrap_around(tmp_path):
    global ISN_A
    old, ISN_A = ISN_A, 2**32 - 500
    try:
        pkts = handshake()
        for k in range(5):  # 5 × 300 bytes across the 2^32 boundary
            pkts.append(a2b(1.0 + k / 100, "PA", 1 + 300 * k, 1, b"w" * 300))
        pkts.append(b2a(1.2, "A", 1, 1501))
        f = cap(tmp_path, pkts).flows.row(0, named=True)
    finally:
        ISN_A = old
    assert f["retrans"] == 0 and f["goodput_bps"] == pytest.approx(1500 * 8 / 0.04)
    assert f["rtt_max_s"] == pytest.approx(1.2 - 1.04)  # newest segment covered was sent at 1.04


def test_rst_is_reported(tmp_path):
    assert cap(tmp_path, handshake() + [b2a(0.2, "R", 1, 0)]).flows["closed"].to_list() == ["rst"]


def test_build_flows_is_idempotent_and_load_flows_equals_load():
    c = need_corpus()
    for name in (
        "tcptrace__discard.solaris.pcap",
        "zeek__206_example_b.pcap",
        "tcptrace__urgent.pcap",
        "mlab-etl__ndt-4dh2l_1591894023_0000000000363A84.pcap",
        "zeek__irc-dcc-send.pcapng",
    ):
        cap_ = load(c / name)
        pk2, fl2 = build_flows(cap_.packets.sample(fraction=1.0, shuffle=True, seed=1))
        assert_frame_equal(pk2, cap_.packets)
        assert_frame_equal(fl2, cap_.flows)
        fl3, meta, _ = load_flows(c / name)
        assert_frame_equal(fl3, cap_.flows)
        assert meta.packets_tcp == cap_.packets.height


def test_load_flows_falls_back_to_full_load_for_scapy_records():
    c = need_corpus()
    fl, meta, _ = load_flows(c / "tcptrace__ppp_encap.pcap")
    assert meta.decoded_by == {"scapy": 25} and fl.height == 1


def test_docs_list_every_flow_field():
    from pathlib import Path

    from hscc_trace import schema

    doc = (Path(__file__).resolve().parents[2] / "docs" / "flows.md").read_text()
    for c in schema.FLOWS:
        assert f"| `{c.name}` |" in doc, c.name


def _sender_side_samples() -> list[tuple[str, list[dict]]]:
    import json
    from pathlib import Path

    idx = json.loads((Path(__file__).resolve().parents[2] / "samples" / "index.json").read_text())
    return [(e["capture"], e["flows"]) for e in idx["samples"] if e["capture_point"] == "sender"]


@pytest.mark.parametrize(
    "capture,truth", _sender_side_samples(), ids=[c.split("/")[1] for c, _ in _sender_side_samples()]
)
def test_retrans_plus_out_of_order_is_the_kernels_count_at_the_sender(capture, truth):
    """At a sender-side capture nothing is reordered before the tap, so every segment below the
    highest sequence is a retransmission: retrans + out_of_order equals the kernel's
    tcp_retransmit_skb count (samples/index.json, from the testbed's tracepoints). Measured:
    reno-bdp 56 + 19 = 75, cubic-longrtt 3 + 53 = 56, bbr 12 + 30 = 42, reno-vs-cubic
    24 + 39 = 63 and 28 + 17 = 45."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    fl, _meta, _ = load_flows(root / capture)
    for t in truth:
        f = fl.filter(fl["sport"] == t["sport"]).row(0, named=True)  # matched by the sender's port
        assert f["retrans"] + f["out_of_order"] == t["retransmitted_segments"], (capture, t["sport"], f["retrans"])


def test_rtt_stats_min_median_max_per_flow_and_sender_side():
    """_group_stats on hand-made samples (flow row, side whose data the sample timed, seconds).

    Flow 0, data sender side 0: samples 0.003, 0.001, 0.002 → sorted 1, 2, 3 ms: min 1, median
    the middle one 2, max 3 ms; its side-1 sample 0.050 times the receiver's data and is left out.
    Flow 1, sender side 1: 0.004, 0.001, 0.003, 0.002 → sorted 1, 2, 3, 4 ms: an even count, so
    the median is the mean of the two middle values (2 + 3) / 2 = 2.5 ms. Flow 2: no sample → NaN.
    """
    import numpy as np

    from hscc_trace.flows.tracker import Stats, _group_stats

    fl = np.array([0, 1, 0, 1, 0, 1, 1, 0], np.int64)
    sd = np.array([0, 1, 0, 1, 0, 1, 1, 1], np.uint8)
    v = np.array([0.003, 0.004, 0.001, 0.001, 0.002, 0.003, 0.002, 0.050])
    rmin, rmed, rmax = np.full(3, np.nan), np.full(3, np.nan), np.full(3, np.nan)
    _group_stats(fl, sd, v, np.array([0, 1, 0], np.int64), Stats(rmin, rmed, rmax))
    assert rmin[:2].tolist() == [0.001, 0.001] and rmax[:2].tolist() == [0.003, 0.004]
    assert rmed[0] == 0.002 and rmed[1] == pytest.approx(0.0025, abs=0)
    assert np.isnan([rmin[2], rmed[2], rmax[2]]).all()


def test_load_flows_equals_load_with_non_tcp_records_across_many_batches(tmp_path, monkeypatch):
    """The fast path skips non-TCP records by decoder status inside the flow kernel (no column
    copies); with ARP, UDP and truncated frames between the TCP ones and a read chunk of a few
    records, every batch mixes statuses — the flow table, TCP count, first/last time and skip
    counts must still equal load()'s."""
    from hscc_trace.capture import reader

    monkeypatch.setattr(reader, "CHUNK", 600)  # read buffer CHUNK + 2 × MAX_CAPLEN: a few records per batch
    monkeypatch.setattr(reader, "MAX_CAPLEN", 100)
    tcp = (
        handshake()
        + [a2b(0.040 + 0.001 * i, "A", 1 + 100 * i, 1, data=b"x" * 100) for i in range(20)]
        + [b2a(0.080 + 0.001 * i, "A", 1, 1 + 100 * (i + 1)) for i in range(20)]
    )
    other = (
        [(0.035 + 0.002 * i, S.Ether() / S.ARP(pdst=B)) for i in range(10)]
        + [(0.036 + 0.002 * i, S.Ether() / S.IP(src=A, dst=B) / S.UDP(sport=53, dport=53) / b"q") for i in range(10)]
        + [(0.050, S.Ether(bytes(S.Ether() / S.IP(src=A, dst=B) / S.TCP())[:20]))]
    )
    pkts = sorted(tcp + other, key=lambda x: x[0])
    p = tmp_path / "mixed.pcap"
    p.write_bytes(pcap_bytes([(T0 + round(t * 1e9), bytes(x)) for t, x in pkts], nsec=True))
    assert len(list(reader.iter_batches(str(p), reader.ReadInfo()))) >= 8
    full = load(p)
    fl, meta, warnings = load_flows(p)
    assert_frame_equal(fl, full.flows)
    assert (meta.packets_tcp, meta.first_ns, meta.last_ns) == (
        full.meta.packets_tcp,
        full.meta.first_ns,
        full.meta.last_ns,
    )
    assert meta.packets_tcp == len(tcp) and meta.skipped == full.meta.skipped and len(meta.skipped) == 3
    assert [str(w) for w in warnings] == [str(w) for w in full.warnings]


def test_flows_command_prints_plain_columns_when_not_a_terminal(tmp_path):
    """Piped or redirected, `hscc-trace flows` prints the plain aligned table (no rich box
    drawing, no cell cut short with "…" however long the addresses are)."""
    from typer.testing import CliRunner

    from hscc_trace.cli import app

    p = tmp_path / "t.pcap"
    long_a, long_b = "2600:1700:42d0:67b0:71e7:d89:1d89:950f", "2001:668:1f:1c::203"
    pk = [
        (t, S.Ether() / S.IPv6(src=s, dst=d) / S.TCP(sport=sp, dport=dp, flags=f, seq=sq, ack=ak))
        for t, s, d, sp, dp, f, sq, ak in (
            (0.0, long_a, long_b, 49319, 443, "S", 10, 0),
            (0.01, long_b, long_a, 443, 49319, "SA", 70, 11),
            (0.011, long_a, long_b, 49319, 443, "A", 11, 71),
        )
    ]
    p.write_bytes(pcap_bytes([(T0 + round(t * 1e9), bytes(x)) for t, x in pk], nsec=True))
    res = CliRunner().invoke(app, ["flows", str(p)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[1].split()[:4] == ["id", "A", "→", "B"] and set(lines[2].replace(" ", "")) == {"-"}
    assert f"[{long_a}]:49319 ⇒ [{long_b}]:443" in lines[3] and "…" not in res.output and "┃" not in res.output


def test_flow_table_addresses_are_formatted_as_addr_to_str():
    """The flow table formats IPv4 dotted quads itself (fast path); it must match addr.to_str
    (ipaddress) exactly — edge values, no leading zeros — and defer to it for IPv6."""
    import random

    import numpy as np

    from hscc_trace.addr import from_str, to_str
    from hscc_trace.flows.tracker import _addr_strings

    r = random.Random(7)
    texts = ["0.0.0.0", "255.255.255.255", "10.0.0.1", "1.2.3.40", "2001:db8::1", "::1", "::ffff:1.2.3.4"]
    texts += [".".join(str(r.randrange(256)) for _ in range(4)) for _ in range(500)]
    hi, lo, v = (np.array(x, dt) for x, dt in zip(zip(*map(from_str, texts)), (np.uint64, np.uint64, np.int64)))
    assert _addr_strings(hi, lo, v) == [to_str(int(a), int(b), int(c)) for a, b, c in zip(hi, lo, v)]
    assert _addr_strings(hi, lo, v)[:4] == texts[:4]


def _rows_json(rows: list[dict]) -> str:
    """JSON as `hscc-trace flows --json` prints it: tells 1448 from 1448.0 and None from NaN."""
    import json

    return json.dumps(rows, indent=1)


def test_flow_rows_equal_load_flows_table_rows_without_polars_types_and_all():
    """flow_rows (what `hscc-trace flows` prints, built without polars) gives exactly the rows
    of load_flows' DataFrame: same keys in schema order, same Python types (ints stay ints,
    missing MSS / RTT / goodput are None), same values — on IPv4 and IPv6, with and without
    handshakes, RTT samples, retransmissions; and the same title-line numbers and warnings."""
    import polars as pl

    from hscc_trace import schema
    from hscc_trace.flows.scan import flow_rows

    c = need_corpus()
    names = [
        "tcptrace__discard.solaris.pcap",
        "zeek__206_example_b.pcap",
        "tcptrace__urgent.pcap",
        "mlab-etl__ndt-4dh2l_1591894023_0000000000363A84.pcap",
        "zeek__irc-dcc-send.pcapng",
        "tcpdump__bigtcp-ipv6.pcap",
        "ODD__mlab-packet-headers__v6-cut-short.pcap",
        "pcapplusplus__many_interfaces-1.pcapng",
        "tcptrace__ppp_encap.pcap",
    ]
    nulls = 0
    for name in names:
        fl, meta, warnings = load_flows(c / name)
        want = fl.with_columns(pl.col("vantage").cast(str)).to_dicts()
        res = flow_rows(c / name)
        assert _rows_json(res.rows) == _rows_json(want), name
        assert [list(r) for r in res.rows] == [[col.name for col in schema.FLOWS]] * len(want)
        assert [[type(v) for v in r.values()] for r in res.rows] == [[type(v) for v in r.values()] for r in want]
        assert (res.format, res.link_types, res.packets_total, res.packets_tcp) == (
            meta.format,
            meta.link_types,
            meta.packets_total,
            meta.packets_tcp,
        ), name
        assert [str(w) for w in res.warnings] == [str(w) for w in warnings], name
        nulls += sum(v is None for r in res.rows for v in r.values())
    assert nulls > 0  # the None paths (no MSS, no RTT sample) were exercised


def test_flow_rows_errors_like_load_flows():
    """A capture without TCP and a filter that matches nothing: the same one-line InputError."""
    from hscc_trace.errors import InputError
    from hscc_trace.flows.scan import flow_rows

    c = need_corpus()
    for name, bpf in (("suricata-verify__filecontainer-smb.pcap", "udp"), ("ODD__ndpi__fuzz-2021-10-13.pcap", None)):
        with pytest.raises(InputError) as e1:
            load_flows(c / name, bpf=bpf)
        with pytest.raises(InputError) as e2:
            flow_rows(c / name, bpf=bpf)
        assert str(e1.value) == str(e2.value)


def test_flows_entry_point_prints_what_the_typer_command_prints(tmp_path):
    """`python -m hscc_trace flows …` (the entry point, with its process settings and fast exit)
    and the Typer command run in-process (CliRunner) print the same bytes, for the plain table,
    --json and a warning."""
    import subprocess
    import sys

    from typer.testing import CliRunner

    from hscc_trace.cli import app

    c = need_corpus()
    cases = [
        ["flows", str(c / "tcptrace__discard.solaris.pcap")],
        ["flows", "--json", str(c / "zeek__206_example_b.pcap"), "--filter", "tcp"],
        ["flows", str(c / "ODD__mlab-packet-headers__v6-cut-short.pcap"), "--json"],
    ]
    for args in cases:
        fast = subprocess.run([sys.executable, "-m", "hscc_trace", *args], capture_output=True, text=True, timeout=120)
        typer_ = CliRunner().invoke(app, args)
        assert fast.returncode == typer_.exit_code == 0
        assert fast.stdout == typer_.stdout and fast.stdout
        assert fast.stderr == typer_.stderr
