"""hscc_trace.analysis.results: the versioned JSON document and its JSON Schema.

Built from a small hand-made Analysis (no capture, no replay engine), so the document's shape is
tested independently of the stages; tests/cli/test_cli_e2e.py validates real runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import blake3
import jsonschema
import polars as pl
import pytest

from hscc_trace import schema
from hscc_trace.analysis import results
from hscc_trace.errors import InputError, Warn
from hscc_trace.model import Analysis, CaptureMeta, CaptureResult, FlowEvents, FlowResult

SCHEMA_PATH = Path(results.__file__).with_name(results.SCHEMA_FILE)


def _flow_row(fid: int, **kw: object) -> dict:
    row = {
        "flow_id": fid,
        "src": "10.0.0.1",
        "sport": 40000 + fid,
        "dst": "10.0.0.2",
        "dport": 5201,
        "ip_version": 4,
        "first_ns": 1_700_000_000_000_000_000,
        "last_ns": 1_700_000_002_000_000_000,
        "duration_s": 2.0,
        "pkts_ab": 100,
        "bytes_ab": 150_000,
        "pkts_ba": 50,
        "bytes_ba": 3300,
        "payload_ab": 144_800,
        "payload_ba": 0,
        "sender_dir": 0,
        "goodput_bps": 579_200.0,
        "mss": 1448,
        "wscale_a": 7,
        "wscale_b": 7,
        "sack_ok": True,
        "ts_ok": True,
        "handshake": True,
        "closed": "fin",
        "retrans": 1,
        "out_of_order": 0,
        "rtt_min_s": 0.02,
        "rtt_median_s": 0.025,
        "rtt_max_s": 0.04,
        "rtt_method": "data-ack",
        "vantage": "sender",
    }
    row.update(kw)
    return row


def _events(fid: int, n_rounds: int, limits: list[str]) -> FlowEvents:
    rounds = pl.DataFrame(
        {
            "round": list(range(n_rounds)),
            "start_ns": [i * 10 for i in range(n_rounds)],
            "end_ns": [i * 10 + 9 for i in range(n_rounds)],
            "target_seq": [i * 1448 for i in range(n_rounds)],
            "peak_flight_bytes": [14480] * n_rounds,
            "acked_bytes": [14480] * n_rounds,
            "min_rtt_s": [0.02] * n_rounds,
            "rwnd_bytes": [65535] * n_rounds,
            "limit": limits,
            "in_recovery": [False] * n_rounds,
        }
    )
    return FlowEvents(
        flow_id=fid,
        sender_dir=0,
        mss=1448,
        vantage="sender",
        # two segments; their values do not matter here, only the count
        segments=pl.DataFrame(
            {c.name: [None, None] for c in schema.SEGMENTS}, schema=schema.polars_schema(schema.SEGMENTS)
        ),
        acks=schema.empty(schema.ACKS),
        episodes=schema.empty(schema.EPISODES),
        rounds=schema.conform(rounds, schema.ROUNDS),
        warnings=[Warn("flow 0", "3 ACKs below snd_una", 3)],
    )


def _fit(fid: int, rows: list[tuple[str, int, float, float, float, int]]) -> pl.DataFrame:
    return schema.conform(
        pl.DataFrame(
            {
                "flow_id": [fid] * len(rows),
                "algo": [r[0] for r in rows],
                "rounds": [r[1] for r in rows],
                "mare": [r[2] for r in rows],
                "rmse_pkts": [r[3] for r in rows],
                "corr": [r[4] for r in rows],
                "goodput_pred_bps": [5e5] * len(rows),
                "goodput_actual_bps": [5.8e5] * len(rows),
                "rank": [r[5] for r in rows],
            }
        ),
        schema.FIT_METRICS,
    )


def make_analysis(path: str = "a.pcap") -> Analysis:
    fr = FlowResult(
        flow=_flow_row(0),
        events=_events(0, 5, ["cwnd", "cwnd", "rwnd", "cwnd", "app"]),
        replays={},
        # rank order deliberately not the row order; corr NaN (constant window)
        fit=_fit(0, [("cubic", 3, 0.20, 2.5, float("nan"), 2), ("reno", 3, 0.04, 0.7, 0.9, 1)]),
    )
    empty = FlowResult(
        flow=_flow_row(1, payload_ab=0, goodput_bps=None, rtt_min_s=None),
        events=_events(1, 0, []),
        replays={},
        fit=schema.empty(schema.FIT_METRICS),
    )
    meta = CaptureMeta(
        path=path,
        format="pcap",
        link_types=["EN10MB"],
        snaplen=262144,
        packets_total=160,
        packets_tcp=158,
        first_ns=1_700_000_000_000_000_000,
        last_ns=1_700_000_002_000_000_000,
        skipped={"non-ip": 2},
        decoded_by={"fast": 158},
    )
    flows = schema.conform(pl.DataFrame([fr.flow, empty.flow]), schema.FLOWS)
    cr = CaptureResult(meta=meta, flows=flows, results=[fr, empty], warnings=[Warn(path, "2 records not TCP", 2)])
    return Analysis(
        captures=[cr],
        algorithms=["reno", "cubic"],
        params={"reno": {"flavor": "linux", "iw": 10}, "cubic": {"c": 0.4, "beta": 0.7}},
        version="0.1.0",
        created="2026-01-01T00:00:00Z",
        errors=["missing.pcap: no such file or directory"],
    )


@pytest.fixture(scope="module")
def doc() -> dict:
    return results.to_dict(
        make_analysis(),
        failed={"missing.pcap": "missing.pcap: no such file or directory"},
        order=["missing.pcap", "a.pcap"],
    )


def _structure(node: object) -> object:
    """A JSON Schema without its human descriptions (wording in schema.py may change freely)."""
    if isinstance(node, dict):
        return {k: _structure(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_structure(v) for v in node]
    return node


def test_schema_file_is_generated_from_schema_py() -> None:
    # results.schema.json must be regenerated (python -m hscc_trace.analysis.results > hscc_trace/analysis/results.schema.json)
    # when a column is added, removed or retyped in schema.py
    assert _structure(json.loads(SCHEMA_PATH.read_text())) == _structure(results.schema_document())
    jsonschema.Draft202012Validator.check_schema(results.json_schema())


def test_every_flow_and_fit_column_is_in_the_json_schema() -> None:
    defs = results.json_schema()["$defs"]
    assert set(defs["flow"]["properties"]) >= {c.name for c in schema.FLOWS}
    # required unless added after 1.0 (optional when read so that 1.0 baselines still validate)
    assert set(defs["flow"]["required"]) >= {c.name for c in schema.FLOWS} - set(results.ADDED_SINCE_1_0)
    assert set(defs["fit"]["required"]) == {c.name for c in schema.FIT_METRICS} - {"flow_id"}


def test_document_validates_and_keeps_input_order(doc: dict) -> None:
    results.validate(doc)
    assert doc["schema_version"] == results.SCHEMA_VERSION
    assert doc["tool"] == {"name": "hscc-trace", "version": "0.1.0"}
    assert [c["path"] for c in doc["captures"]] == ["missing.pcap", "a.pcap"]
    assert all(c[results.CAPTURE_DIGEST] is None and "sha256" not in c for c in doc["captures"])  # (no files)
    bad, good = doc["captures"]
    assert bad["error"] == "missing.pcap: no such file or directory" and bad["meta"] is None and bad["flows"] == []
    assert good["error"] is None and good["flows_total"] == 2


def test_flow_entry_counts_ranks_and_best(doc: dict) -> None:
    f0, f1 = doc["captures"][1]["flows"]
    # 5 rounds, of which 3 are cwnd-limited (cwnd, cwnd, rwnd, cwnd, app)
    assert f0["events"] == {
        "segments": 2,
        "acks": 0,
        "episodes": 0,
        "rounds": 5,
        "cwnd_limited_rounds": 3,
        "rtt_offset_s": 0.0,
    }
    assert [r["algo"] for r in f0["fit"]] == ["reno", "cubic"]  # rank 1 first
    assert f0["best"] == "reno"
    assert f0["warnings"] == [{"source": "flow 0", "message": "3 ACKs below snd_una", "count": 3}]
    assert f1["fit"] == [] and f1["best"] is None


def test_non_finite_numbers_become_null(doc: dict) -> None:
    cubic = doc["captures"][1]["flows"][0]["fit"][1]
    assert cubic["algo"] == "cubic" and cubic["corr"] is None
    text = results.dumps(doc)
    assert "NaN" not in text and "Infinity" not in text
    assert results.clean({"a": [float("inf"), 1.5, (2, float("-inf"))]}) == {"a": [None, 1.5, [2, None]]}


def test_write_read_round_trip(tmp_path: Path, doc: dict) -> None:
    p = results.write(doc, tmp_path / "sub" / "r.json")
    back = results.read(p)
    assert back == json.loads(results.dumps(doc))
    assert results.comparable(back) == {k: v for k, v in back.items() if k != "created"}


@pytest.mark.parametrize(
    "mutate, fragment",
    [
        (lambda d: d.pop("captures"), "'captures' is a required property"),
        (lambda d: d["captures"][1]["flows"][0]["fit"][0].update(mare="x"), "captures/1/flows/0/fit/0/mare"),
        (lambda d: d["captures"][1]["flows"][0].update(vantage="moon"), "vantage"),
        (lambda d: d.update(extra=1), "Additional properties"),
    ],
)
def test_invalid_documents_rejected_with_location(doc: dict, mutate, fragment: str) -> None:
    bad = json.loads(results.dumps(doc))
    mutate(bad)
    with pytest.raises(InputError) as info:
        results.validate(bad)
    assert fragment in str(info.value)


def test_version_1_0_document_without_out_of_order_still_reads(doc: dict, tmp_path: Path) -> None:
    old = dict(json.loads(results.dumps(doc)), schema_version="1.0")
    for cap in old["captures"]:
        for f in cap["flows"]:
            assert f.pop("out_of_order") == 0  # written by 1.1
    p = tmp_path / "r.json"
    p.write_text(json.dumps(old))
    assert results.read(p)["schema_version"] == "1.0"


def test_incompatible_major_version_rejected(doc: dict, tmp_path: Path) -> None:
    bad = dict(json.loads(results.dumps(doc)), schema_version="3.0")
    p = tmp_path / "r.json"
    p.write_text(json.dumps(bad))
    with pytest.raises(InputError, match="not compatible"):
        results.read(p)


def test_unreadable_results_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        results.read(tmp_path / "none.json")
    (tmp_path / "x.json").write_text("{oops")
    with pytest.raises(InputError, match="not a JSON results file"):
        results.read(tmp_path / "x.json")


def test_digest_identifies_content(tmp_path: Path) -> None:
    a = tmp_path / "a"
    a.write_bytes(b"abc")
    # BLAKE3("abc"), the reference implementation's; SHA-256("abc") from FIPS 180-2 appendix B.1
    assert results.digest_file(a) == "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
    assert results.sha256_file(a) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert results.digest_file(tmp_path / "missing") is None and results.sha256_file(tmp_path / "missing") is None
    a.write_bytes(b"abc" * 500_000)  # (several read chunks)
    assert results.digest_file(a, chunk=1 << 16) == blake3.blake3(b"abc" * 500_000).hexdigest()


def test_version_1_5_document_with_sha256_still_reads(doc: dict, tmp_path: Path) -> None:
    # before 2.0 a capture carried sha256, not blake3: such a baseline still validates
    old = dict(json.loads(results.dumps(doc)), schema_version="1.5")
    for cap in old["captures"]:
        del cap[results.CAPTURE_DIGEST]
        cap["sha256"] = None
    old["captures"][1]["sha256"] = "ab" * 32
    p = tmp_path / "r.json"
    p.write_text(json.dumps(old))
    assert results.read(p)["captures"][1]["sha256"] == "ab" * 32


def test_cwnd_limited_rounds_counts_the_category_whatever_the_dtype() -> None:
    limits = ["cwnd", "app", None, "cwnd", "rwnd", "cwnd"]  # 3 cwnd-limited; a null is not
    enum = pl.DataFrame({"limit": limits}, schema={"limit": pl.Enum(list(schema.LIMITS))})
    assert enum.schema["limit"] == next(c.dtype for c in schema.ROUNDS if c.name == "limit")
    assert results.cwnd_limited_rounds(enum) == 3
    assert results.cwnd_limited_rounds(enum.cast({"limit": pl.String})) == 3
    other = pl.DataFrame({"limit": ["app", "rwnd"]}, schema={"limit": pl.Enum(["app", "rwnd"])})
    assert results.cwnd_limited_rounds(other) == 0
    assert results.cwnd_limited_rounds(enum.clear()) == 0
