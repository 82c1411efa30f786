"""The qlog importer (hscc_trace.qlog): containers, layouts, RFC 9002 definitions, bad input.

Hand-made traces check the definitions with values worked out by hand; the aioquic samples
(samples/quic/, made by samples/quic/make_traces.py) check the whole path against the stack's
own logged values.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from hscc_trace.errors import InputError
from hscc_trace.qlog import connections, read, summary
from hscc_trace.qlog.streams import kind_of

REPO = Path(__file__).resolve().parents[2]
QUIC = REPO / "samples" / "quic"


def _ev(t: float, name: str, data: dict) -> dict:
    return {"time": t, "name": name, "data": data}


def _sent(t: float, pn: int, size: int = 1200, frames: list | None = None, ptype: str = "1RTT") -> dict:
    return _ev(
        t,
        "transport:packet_sent",
        {
            "header": {"packet_number": pn, "packet_type": ptype},
            "raw": {"length": size},
            "frames": frames if frames is not None else [{"frame_type": "stream"}],
        },
    )


def _ack(t: float, ranges: list, delay_ms: float = 0.0, pn: int = 0, **extra: object) -> dict:
    return _ev(
        t,
        "transport:packet_received",
        {
            "header": {"packet_number": pn, "packet_type": "1RTT"},
            "raw": {"length": 50},
            "frames": [{"frame_type": "ack", "acked_ranges": ranges, "ack_delay": delay_ms, **extra}],
        },
    )


def _doc(events: list, vantage: str = "server") -> dict:
    return {"qlog_version": "0.3", "traces": [{"vantage_point": {"type": vantage}, "events": events}]}


def _write(tmp: Path, name: str, doc: dict) -> Path:
    p = tmp / name
    p.write_text(json.dumps(doc))
    return p


# --- definitions, worked by hand ------------------------------------------------------------------


def test_rtt_samples_follow_rfc9002_section5(tmp_path: Path) -> None:
    # pn 0,1,2 sent at 0, 10, 20 ms; an ACK of 0-2 at 100 ms (ack_delay 5 ms): the largest (2) is
    # newly acked and ack-eliciting → latest_rtt = 100 − 20 = 80 ms; first sample: min = srtt = 80,
    # rttvar = 40 (§5.3). pn 3 sent at 110 ms, acked at 200 ms with ack_delay 10 ms: latest = 90,
    # min stays 80; 90 ≥ 80 + 10 → adjusted = 80; rttvar = 0.75·40 + 0.25·|80 − 80| = 30;
    # srtt = 0.875·80 + 0.125·80 = 80. A third ACK (pn 4 sent at 210, acked at 320, ack_delay 40 ms,
    # above max_ack_delay 25 ms): latest 110, the delay capped at 25; 110 ≥ 80 + 25 → adjusted 85;
    # rttvar = 0.75·30 + 0.25·|80 − 85| = 23.75; srtt = 0.875·80 + 0.125·85 = 80.625.
    evs = [_sent(0, 0), _sent(10, 1), _sent(20, 2), _ack(100, [[0, 2]], 5.0)]
    evs += [_sent(110, 3), _ack(200, [[0, 3]], 10.0), _sent(210, 4), _ack(320, [[0, 4]], 40.0)]
    (c,), _ = connections(str(_write(tmp_path, "rtt.qlog", _doc(evs))))
    a = c.acks
    assert a["rtt_sample_s"].to_list() == pytest.approx([0.080, 0.090, 0.110])
    assert a["adjusted_rtt_s"].to_list() == pytest.approx([0.080, 0.080, 0.085])
    assert a["min_rtt_s"].to_list() == pytest.approx([0.080, 0.080, 0.080])
    assert a["smoothed_rtt_s"].to_list() == pytest.approx([0.080, 0.080, 0.080625])
    assert a["rttvar_s"].to_list() == pytest.approx([0.040, 0.030, 0.02375])
    assert a["newly_acked"].to_list() == [3, 1, 1]
    assert a["newly_acked_bytes"].to_list() == [3600, 1200, 1200]
    assert c.is_sender and c.vantage == "server" and c.data_sender == "server"


def test_no_rtt_sample_unless_the_largest_is_newly_acked(tmp_path: Path) -> None:
    # the second ACK acknowledges nothing new (a duplicate of [0, 1]) → no sample (§5.1); an ACK
    # whose only newly acknowledged packet is not ack-eliciting (ACK-only packet) → no sample
    evs = [_sent(0, 0), _sent(0, 1), _ack(50, [[0, 1]]), _ack(60, [[0, 1]])]
    evs += [_sent(70, 2, 40, [{"frame_type": "ack", "acked_ranges": [[0, 0]]}]), _ack(120, [[0, 2]])]
    (c,), _ = connections(str(_write(tmp_path, "dup.qlog", _doc(evs))))
    assert c.acks["rtt_sample_s"].to_list() == pytest.approx([0.050, None, None], nan_ok=True)
    sent = c.sent
    assert sent["ack_eliciting"].to_list() == [True, True, False]
    assert sent["in_flight"].to_list() == [True, True, False]


def test_loss_detection_packet_and_time_threshold(tmp_path: Path) -> None:
    # pn 0-5 sent at 0..5 ms; an ACK of [4, 5] at 100 ms: latest_rtt = 100 − 5 = 95 ms = srtt.
    # Packet threshold 3: pn 0, 1, 2 (5 ≥ pn + 3) lost at once; pn 3 (5 < 6) waits for the time
    # threshold: loss_delay = 9/8 · 95 = 106.875 ms after its send time 3 ms → lost at 109.875 ms,
    # fired by the loss timer before the next event (at 200 ms).
    evs = [_sent(i, i) for i in range(6)] + [_ack(100, [[4, 5]]), _sent(200, 6)]
    evs += [
        _ev(100, "recovery:packet_lost", {"header": {"packet_number": n, "packet_type": "1RTT"}}) for n in (0, 1, 2)
    ]
    (c,), _ = connections(str(_write(tmp_path, "loss.qlog", _doc(evs))))
    d = c.detected
    assert d["pn"].to_list() == [0, 1, 2, 3]
    assert d["rule"].to_list() == ["packet", "packet", "packet", "time_timer"]
    assert d["t_s"].to_list() == pytest.approx([0.1, 0.1, 0.1, 0.109875])
    lc = c.loss_check()
    assert (lc["stack"], lc["ours"], lc["both"], lc["ours_only"], lc["stack_only"]) == (3, 4, 3, 1, 0)


def test_layouts_and_renames(tmp_path: Path) -> None:
    # draft-01: event_fields arrays, relative times in µs, string packet numbers, cwnd in
    # recovery:metrics_updated; the IETF names: quic:packet_sent, quic:recovery_metrics_updated
    # with congestion_window, logged only when it changes (forward-filled)
    draft = {
        "qlog_version": "draft-01",
        "traces": [
            {
                "vantage_point": {"type": "client"},
                "configuration": {"time_units": "us"},
                "common_fields": {"reference_time": "1600000000000"},
                "event_fields": ["relative_time", "category", "event", "data"],
                "events": [
                    [
                        0,
                        "transport",
                        "packet_sent",
                        {
                            "header": {"packet_number": "0", "packet_type": "1RTT", "packet_size": 1000},
                            "frames": [{"frame_type": "stream"}],
                        },
                    ],
                    [
                        30000,
                        "transport",
                        "packet_received",
                        {
                            "header": {"packet_number": "0", "packet_type": "1RTT"},
                            "frames": [{"frame_type": "ack", "acked_ranges": [["0", "0"]], "ack_delay": "0"}],
                        },
                    ],
                    [30000, "recovery", "metrics_updated", {"cwnd": 14000, "bytes_in_flight": 0}],
                ],
            }
        ],
    }
    (c,), _ = connections(str(_write(tmp_path, "d01.qlog", draft)))
    assert c.vantage == "client" and c.sent["size"].to_list() == [1000]
    assert c.acks["rtt_sample_s"].to_list() == pytest.approx([0.030])
    assert c.metrics["cwnd"].to_list() == [14000.0]
    new = _doc(
        [
            _ev(
                0,
                "quic:packet_sent",
                {
                    "header": {"packet_number": 0, "packet_type": "1RTT"},
                    "raw": {"length": 1200},
                    "frames": [{"frame_type": "stream"}],
                },
            ),
            _ev(1, "quic:recovery_metrics_updated", {"congestion_window": 12000, "bytes_in_flight": 1200}),
            _ev(
                20,
                "quic:packet_received",
                {
                    "header": {"packet_number": 0, "packet_type": "1RTT"},
                    "frames": [{"frame_type": "ack", "acked_ranges": [[0]], "ect0": 1, "ce": 0}],
                },
            ),
            _ev(20, "quic:recovery_metrics_updated", {"bytes_in_flight": 0}),
        ]
    )
    (c,), _ = connections(str(_write(tmp_path, "ietf.qlog", new)))
    assert c.metrics["cwnd"].to_list() == [12000.0, 12000.0]  # not logged again: forward-filled
    assert c.metrics["bytes_in_flight"].to_list() == [1200.0, 0.0]
    assert c.acks["ect0"].to_list() == [1] and c.acks["ce"].to_list() == [0]
    assert kind_of("recovery:metric_update") == kind_of("quic:recovery_metrics_updated") == "metrics_updated"


def test_containers_json_seq_ndjson_gzip(tmp_path: Path) -> None:
    header = {"qlog_version": "0.4", "qlog_format": "JSON-SEQ", "trace": {"vantage_point": {"type": "server"}}}
    evs = [_sent(0, 0), _ack(25, [[0, 0]], 0.0)]
    seq = b"".join(b"\x1e" + json.dumps(r).encode() + b"\n" for r in [header, *evs])
    nd = b"".join(json.dumps(r).encode() + b"\n" for r in [header, *evs])
    for name, raw in [
        ("a.sqlog", seq),
        ("a.ndqlog", nd),
        ("a.sqlog.gz", gzip.compress(seq)),
        ("a.qlog.gz", gzip.compress(json.dumps(_doc(evs)).encode())),
    ]:
        (tmp_path / name).write_bytes(raw)
        qf = read(tmp_path / name)
        assert (
            qf.container
            == {"a.sqlog": "json-seq", "a.ndqlog": "ndjson", "a.sqlog.gz": "json-seq", "a.qlog.gz": "json"}[name]
        )
        (c,), w = connections(str(tmp_path / name))
        assert c.acks["rtt_sample_s"].to_list() == pytest.approx([0.025]) and not w


def test_ack_delay_exponent_from_parameters_set(tmp_path: Path) -> None:
    # a raw (encoded) ack delay of 1250 with the peer's exponent 4: 1250 · 2⁴ µs = 20 ms; the
    # peer's max_ack_delay 30 ms. latest = 100 − 0 = 100, first sample (min_rtt 100); the second
    # ACK (pn 1 sent at 100, acked at 230, raw 1250 → 20 ms ≤ 30): latest 130 ≥ 100 + 20 →
    # adjusted = 130 − 20 = 110
    evs = [
        _ev(0, "transport:parameters_set", {"owner": "remote", "ack_delay_exponent": 4, "max_ack_delay": 30}),
        _sent(0, 0),
        _ack(100, [[0, 0]]),
        _sent(100, 1),
        _ev(
            230,
            "transport:packet_received",
            {
                "header": {"packet_number": 1, "packet_type": "1RTT"},
                "frames": [{"frame_type": "ack", "acked_ranges": [[0, 1]], "raw_ack_delay": 1250}],
            },
        ),
    ]
    (c,), _ = connections(str(_write(tmp_path, "exp.qlog", _doc(evs))))
    assert c.peer_ack_delay_exponent == 4 and c.peer_max_ack_delay_s == pytest.approx(0.030)
    assert c.acks["ack_delay_s"].to_list() == pytest.approx([0.0, 0.020])
    assert c.acks["rtt_sample_s"].to_list() == pytest.approx([0.100, 0.130])
    assert c.acks["adjusted_rtt_s"].to_list() == pytest.approx([0.100, 0.110])


# --- bad input ---------------------------------------------------------------------------------


def test_truncated_json_gives_partial_results_and_a_warning(tmp_path: Path) -> None:
    evs = [_sent(i, i) for i in range(10)] + [_ack(50, [[0, 9]])] + [_sent(60 + i, 10 + i) for i in range(5)]
    text = json.dumps(_doc(evs))
    cut = text[: text.index('"packet_number": 12')]  # in the middle of the 13th sent packet
    p = tmp_path / "cut.qlog"
    p.write_text(cut)
    (c,), w = connections(str(p))
    assert c.sent.height == 12 and c.acks.height == 1
    assert any(x.partial and "cut short" in x.message for x in w)
    gz = tmp_path / "cut.qlog.gz"
    gz.write_bytes(gzip.compress(text.encode())[:-40])  # the gzip stream cut short as well
    (c2,), w2 = connections(str(gz))
    assert c2.sent.height >= 10 and any(x.partial for x in w2)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not json at all",
        b"[1, 2, 3]",
        b'{"qlog_version": "0.3"}',
        b'{"traces": [{"events": []}]}',
        b"\x1e{bad\n\x1e{also bad",
    ],
)
def test_bad_qlog_is_one_input_error(tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "bad.qlog"
    p.write_bytes(content)
    with pytest.raises(InputError) as e:
        connections(str(p))
    assert "\n" not in str(e.value)


def test_cli_bad_qlog_exits_2_with_one_line(tmp_path: Path) -> None:
    p = tmp_path / "bad.qlog"
    p.write_bytes(b'{"traces": [{"events": [{"time": 0, "name": "transport:packet_sent", "data": {}}]')
    r = subprocess.run([sys.executable, "-m", "hscc_trace", "qlog", str(p)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) >= 1


# --- aioquic samples: the logged window as truth -------------------------------------------------


@pytest.fixture(scope="module")
def aioquic() -> dict[str, object]:
    return {n: connections(str(QUIC / f"aioquic-{n}.qlog.gz"))[0][0] for n in ("reno-loss", "cubic-loss")}


def test_aioquic_sample_streams(aioquic: dict) -> None:
    for name, c in aioquic.items():
        assert c.vantage == "server" and c.is_sender, name
        assert c.max_datagram_size == 1200 and c.peer_ack_delay_exponent == 3
        lc = c.loss_check()
        # every loss aioquic declared, our RFC 9002 §6.1 detection declared too, and no other
        assert lc["stack"] > 0 and lc["both"] == lc["stack"] == lc["ours"], (name, lc)
        # our bytes in flight is the stack's own at the ACKs
        from hscc_trace.qlog import checks

        assert checks(c)["bytes_in_flight_equal"] > 0.99, name


def test_aioquic_replay_reproduces_the_logged_window(aioquic: dict) -> None:
    from hscc_trace.qlog.replay import agreement, replay

    for name, c in aioquic.items():
        algo = name.split("-")[0]
        a = agreement(replay(c, algo, "aioquic", "stack"))
        assert a["acks"] > 4000 and a["exact"] == 1.0, (name, a)
        rfc = agreement(replay(c, algo, "rfc", "stack"))
        assert rfc["median"] > 0.001, (name, rfc)  # the RFC as written is not what aioquic does


def test_live_aioquic_run_is_read(tmp_path: Path) -> None:
    """A short aioquic transfer made now (sans-I/O, simulated link): read without a warning, and
    its own algorithm's replay equals its logged window."""
    pytest.importorskip("aioquic")
    out = tmp_path / "live.qlog"
    r = subprocess.run(
        [
            sys.executable,
            str(QUIC / "make_traces.py"),
            "--cc",
            "cubic",
            "--seconds",
            "0.6",
            "--queue",
            "10",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    doc = summary(str(out), ("cubic",), ("aioquic",))
    (c,) = doc["connections"]
    assert not doc["warnings"] and c["logs_the_sender"]
    assert c["replays"][0]["exact"] == 1.0, c["replays"]


def test_capture_commands_point_a_qlog_to_the_qlog_command() -> None:
    from hscc_trace.flows import load

    with pytest.raises(InputError, match="hscc-trace qlog"):
        load(QUIC / "aioquic-reno-loss.qlog.gz")


def test_reno_replay_by_hand(tmp_path: Path) -> None:
    # RFC 9002 §7 in bytes, mds 1200: initial window min(10·1200, max(14720, 2·1200)) = 12000.
    # pn 0-9 sent at 0-9 ms, all acked at 100 ms: slow start adds 10·1200 → 24000. pn 10-13 sent
    # at 110 ms, ACK of 11-13 at 200 ms: slow start first (+3600 → 27600), then pn 10 is lost
    # (13 ≥ 10 + 3; the stack logs it too): sent after the (empty) recovery period → a congestion
    # event at 200 ms, ssthresh = cwnd = 27600 · 0.5 = 13800. pn 14 sent at 210 ms (after the
    # recovery start), acked at 300 ms: congestion avoidance, + 1200 · 1200 / 13800 → 13904.35.
    # With RFC 9002 §7.8's test (the rfc default) the second ACK comes with 4800 bytes in
    # flight, far below 24000: no growth there, so the event halves 24000 → 12000, and pn 14
    # (1200 in flight) does not grow it either.
    from hscc_trace.qlog.replay import replay

    evs = [_sent(i, i) for i in range(10)] + [_ack(100, [[0, 9]])]
    evs += [_sent(110, n) for n in range(10, 14)] + [_ack(200, [[0, 9], [11, 13]])]
    evs += [_ev(200, "recovery:packet_lost", {"header": {"packet_number": 10, "packet_type": "1RTT"}})]
    evs += [_sent(210, 14), _ack(300, [[0, 9], [11, 14]])]
    (c,), _ = connections(str(_write(tmp_path, "reno.qlog", _doc(evs))))
    grown = replay(c, "reno", "rfc", cwnd_limited=False).table
    assert grown["cwnd"].to_list() == pytest.approx([24000, 13800, 13800 + 1200 * 1200 / 13800])
    assert grown["ssthresh"].to_list() == pytest.approx([None, 13800, 13800], nan_ok=True)
    held = replay(c, "reno", "rfc").table
    assert held["cwnd"].to_list() == pytest.approx([24000, 12000, 12000])


def test_departures_and_the_verdict_name_what_aioquic_cubic_does(aioquic: dict) -> None:
    from hscc_trace.qlog import _verdict
    from hscc_trace.qlog.replay import agreement, departures, replay

    c = aioquic["cubic-loss"]
    deps = departures(c, "cubic")
    worse = {d["parameter"]: d["switched_back"]["median"] for d in deps if d["switched_back"]["median"] > 0.01}
    # α = 1, the reduction from the bytes in flight, growth in recovery (docs/quic.md)
    assert set(worse) == {"alpha", "reduce_from", "recovery_gate"}, worse
    best = {"algorithm": "cubic", "flavor": "aioquic", **agreement(replay(c, "cubic", "aioquic"))}
    v = _verdict(best, deps)
    assert v.startswith("follows cubic[aioquic] (median 0.00 %")
    # the largest departure first: α (RFC 9438 §4.3)
    assert v.index("alpha=one") < v.index("reduce_from=flight") < v.index("recovery_gate=False")


def test_any_cut_of_a_qlog_is_partial_results_or_one_input_error(tmp_path: Path) -> None:
    """A trace cut at every 7th byte, in each container: never anything but a warning with
    partial results or one InputError (a crash of a stack leaves such files)."""
    evs = [_sent(i, i) for i in range(6)] + [_ack(50, [[0, 3]], 1.0)]
    evs += [_ev(50, "recovery:metrics_updated", {"cwnd": 12000})]
    header = {"qlog_version": "0.4", "trace": {"vantage_point": {"type": "server"}}}
    forms = {
        "j.qlog": json.dumps(_doc(evs)).encode(),
        "s.sqlog": b"".join(b"\x1e" + json.dumps(r).encode() + b"\n" for r in [header, *evs]),
        "n.ndqlog": b"".join(json.dumps(r).encode() + b"\n" for r in [header, *evs]),
    }
    for name, raw in forms.items():
        for cut in range(0, len(raw), 7):
            p = tmp_path / name
            p.write_bytes(raw[:cut])
            try:
                conns, _ = connections(str(p))
            except InputError as exc:
                assert "\n" not in str(exc)
                continue
            assert all(c.sent.height <= 6 for c in conns)


def test_analyze_takes_qlog_files(tmp_path: Path) -> None:
    out = tmp_path / "q.json"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "hscc_trace",
            "analyze",
            str(QUIC / "aioquic-reno-loss.qlog.gz"),
            "--algo",
            "reno",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "verdict: follows reno[aioquic] (median 0.00 %" in r.stdout
    (doc,) = json.loads(out.read_text())["quic"]  # the results document's qlog entries (docs/results.md)
    (c,) = doc["connections"]
    assert c["best"] == "reno[aioquic]" and c["losses"]["both"] == 30
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "hscc_trace",
            "analyze",
            str(QUIC / "aioquic-reno-loss.qlog.gz"),
            "--flow",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "docs/quic.md" in r.stderr


def test_ecn_ce_is_a_congestion_event_by_hand(tmp_path: Path) -> None:
    # RFC 9002 §7.5: pn 0-9 acked at 100 ms (slow start: 12000 → 24000, ce 0); pn 10, 11 sent at
    # 110 ms, acked at 200 ms with ce = 1: slow start first (+2400 → 26400), then the CE count rose,
    # the largest acknowledged (pn 11) was sent at 110 ms, after the (empty) recovery period → one
    # congestion event: 26400 · 0.5 = 13200. A second ACK (pn 12 sent at 150 ms, before the
    # recovery start at 200 ms) with ce = 2 at 250 ms: inside the recovery period, no second event
    # and no growth. aioquic ignores the counts (its flavor: 24000 + 2400 + 1200 = 27600).
    from hscc_trace.qlog.replay import replay

    evs = [_sent(i, i) for i in range(10)] + [_ack(100, [[0, 9]], ce=0, ect0=10)]
    evs += [_sent(110, 10), _sent(110, 11), _sent(150, 12), _ack(200, [[0, 11]], ce=1, ect0=11)]
    evs += [_ack(250, [[0, 12]], ce=2, ect0=11)]
    (c,), _ = connections(str(_write(tmp_path, "ecn.qlog", _doc(evs))))
    assert c.acks["ce"].to_list() == [0, 1, 2]
    rfc = replay(c, "reno", "rfc", cwnd_limited=False).table
    assert rfc["cwnd"].to_list() == pytest.approx([24000, 13200, 13200])
    aio = replay(c, "reno", "aioquic").table
    assert aio["cwnd"].to_list() == pytest.approx([24000, 26400, 27600])


def test_the_receivers_trace_names_the_sender_and_is_not_replayed() -> None:
    from hscc_trace.qlog.replay import replay

    (c,), _ = connections(str(QUIC / "aioquic-reno-loss-client.qlog.gz"))
    assert c.vantage == "client" and not c.is_sender and c.data_sender == "server"
    assert c.bytes_received > 10 * c.bytes_sent  # 5.95 MB of data against 0.18 MB of ACK packets
    with pytest.raises(InputError, match="data receiver"):
        replay(c, "reno")
