"""`hscc-trace algorithms` and `hscc-trace replay` end to end (in-process Typer runner)."""

from __future__ import annotations

import json

import polars as pl
import pytest
from replay_synth import SAMPLES
from typer.testing import CliRunner

from hscc_trace.cli import app, main

runner = CliRunner()
CAP = SAMPLES / "reno-loss" / "capture.pcap"


def run_main(args, capsys):
    """Through hscc_trace.cli.main (errors → one line, exit code 2)."""
    import sys

    old = sys.argv
    sys.argv = ["hscc-trace", *args]
    try:
        with pytest.raises(SystemExit) as exc:
            main()
    finally:
        sys.argv = old
    return exc.value.code, capsys.readouterr()


def test_algorithms_lists_params_units_defaults_sources_and_signals():
    res = runner.invoke(app, ["algorithms"])
    assert res.exit_code == 0, res.output
    for needle in (
        "reno — ",
        "cubic.C=0.4",
        "packets/s³",
        "RFC 9438 §5.1",
        "signals: W_max [packets]",
        "highspeed.low_window=38.0",
        "vegas.alpha=2.0",
        "newreno.recovery_exit=full_ack",
        "reno.flavor=linux [rfc|linux]",
    ):
        assert needle in res.output, needle
    res = runner.invoke(app, ["algorithms", "--json"])
    rows = json.loads(res.output)
    assert {"algorithm": "cubic", "parameter": "beta"}.items() <= next(
        r for r in rows if r["algorithm"] == "cubic" and r["parameter"] == "beta"
    ).items()
    res = runner.invoke(app, ["algorithms", "--markdown"])
    assert "| `C` | packets/s³ | 0.4 | RFC 9438 §5.1 |" in res.output


@pytest.mark.skipif(not CAP.exists(), reason="sample missing")
@pytest.mark.parametrize("ext", ["parquet", "csv", "json"])
def test_replay_writes_one_row_per_ack_and_algorithm(tmp_path, ext, capsys):
    out = tmp_path / f"r.{ext}"
    code, io = run_main(
        ["replay", str(CAP), "--flow", "0", "--algo", "reno,cubic", "--param", "cubic.flavor=linux", "-o", str(out)],
        capsys,
    )
    assert code in (0, None), io.err
    df = (
        pl.read_parquet(out)
        if ext == "parquet"
        else pl.read_csv(out, infer_schema_length=None)
        if ext == "csv"
        else pl.read_json(out, infer_schema_length=None)
    )
    assert df.columns[:6] == ["algo", "frame", "ts_ns", "cwnd", "ssthresh", "state"]
    assert set(df["algo"].unique()) == {"reno", "cubic"}
    n = df.filter(pl.col("algo") == "reno").height
    assert n > 1000 and df.height == 2 * n
    assert "1. reno" in io.err and "mare" in io.err


@pytest.mark.parametrize(
    "args,msg",
    [
        (["--algo", "nosuch"], "unknown algorithm 'nosuch'"),
        (["--algo", "reno", "--param", "reno.L=x"], "parameter reno.L: 'x' is not a number"),
        (["--algo", "reno", "--param", "cubic.C=1"], "algorithm 'cubic' is not among --algo"),
        (["--algo", "kyushu"], "is a wrapper"),
    ],
)
def test_replay_bad_input_is_one_line_exit_2(args, msg, capsys):
    code, io = run_main(["replay", str(CAP), "--flow", "0", *args, "-o", "/tmp/never.parquet"], capsys)
    assert code == 2
    assert io.err.startswith("hscc-trace: error: ") and msg in io.err and io.err.count("\n") == 1
    assert "Traceback" not in io.err
