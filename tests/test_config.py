"""hscc_trace.config: discovery, parsing, validation and command-line overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from hscc_trace import config
from hscc_trace.config import Config, Tolerance
from hscc_trace.errors import UsageError

FULL = """
algorithms = ["reno", "cubic"]
filter = "tcp port 5201"
jobs = 2

[params.fusion]
dmin_ms = 4
rtt_source = "srtt"

[check]
expect = "reno"
max_error = 0.1
rank_first = true
min_rounds = 6
baseline = "ci/baseline.json"

[check.tolerance]
mare = 0.03
goodput = 0.2

[[check.expectations]]
match = "samples/cubic-*/*.pcap"
expect = "cubic"
max_error = 0.25
flows = [1]
"""


def test_defaults_when_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = config.load()
    assert cfg == Config()
    assert cfg.algorithms is None and cfg.jobs == 1 and cfg.source is None
    assert cfg.check.max_error is None  # the verdict's own threshold (DEFAULT_MAX_ERROR for results without verdicts)
    assert cfg.check.min_rounds == config.DEFAULT_MIN_ROUNDS


def test_full_file_parsed(tmp_path: Path) -> None:
    f = tmp_path / "hscc-trace.toml"
    f.write_text(FULL)
    cfg = config.load(f)
    assert cfg.algorithms == ("reno", "cubic")
    assert cfg.filter == "tcp port 5201" and cfg.jobs == 2
    assert cfg.params == {"fusion": {"dmin_ms": 4, "rtt_source": "srtt"}}
    c = cfg.check
    assert (c.expect, c.max_error, c.rank_first, c.min_rounds) == ("reno", 0.1, True, 6)
    # relative paths in the file are relative to the file's folder, not the cwd
    assert Path(c.baseline) == tmp_path / "ci" / "baseline.json"
    assert c.tolerance == Tolerance(mare=0.03, rmse_pkts=1.0, corr=0.05, goodput=0.2)
    (e,) = c.expectations
    assert (e.match, e.expect, e.max_error, e.flows) == ("samples/cubic-*/*.pcap", "cubic", 0.25, (1,))
    # an expectation inherits rank_first from [check] when it does not say
    assert e.rank_first is True


def test_pyproject_tool_table_found_from_subdirectory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.hscc-trace]\nalgorithms = ["vegas"]\n')
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert config.find() == tmp_path / "pyproject.toml"
    cfg = config.load()
    assert cfg.algorithms == ("vegas",)
    assert "[tool.hscc-trace]" in cfg.source


def test_own_file_wins_over_pyproject_in_same_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.hscc-trace]\nalgorithms = ["vegas"]\n')
    (tmp_path / "hscc-trace.toml").write_text('algorithms = ["reno"]\n')
    monkeypatch.chdir(tmp_path)
    assert config.load().algorithms == ("reno",)


def test_pyproject_without_tool_table_is_not_a_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    monkeypatch.chdir(tmp_path)
    assert config.find(tmp_path) is None
    assert config.load() == Config()


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("algoritms = ['reno']", "unknown key in the configuration: algoritms"),
        ("jobs = 0", "jobs must be >= 1"),
        ("jobs = 'two'", "jobs must be an integer"),
        ("[check]\nmax_eror = 0.1", "unknown key in [check]: max_eror"),
        ("[check]\nmax_error = -1", "max_error must be >= 0.0"),
        ("[check]\nrank_first = 1", "rank_first must be true or false"),
        ("[check.tolerance]\nmaer = 0.1", "unknown key in check.tolerance: maer"),
        ("[[check.expectations]]\nmatch = '*'", "needs expect"),
        ("[params]\nfusion = 3", "params.fusion must be a table"),
        ("algorithms = [", "invalid TOML"),
    ],
)
def test_bad_configuration_is_a_one_line_usage_error(tmp_path: Path, text: str, fragment: str) -> None:
    f = tmp_path / "hscc-trace.toml"
    f.write_text(text)
    with pytest.raises(UsageError) as info:
        config.load(f)
    msg = str(info.value)
    assert fragment in msg and str(f) in msg and "\n" not in msg.strip()


def test_missing_explicit_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="configuration file not found"):
        config.load(tmp_path / "nope.toml")


def test_cli_overrides_file(tmp_path: Path) -> None:
    f = tmp_path / "hscc-trace.toml"
    f.write_text(FULL)
    cfg = config.with_overrides(
        config.load(f),
        algorithms="fusion, ctcp",
        params=["fusion.dmin_ms=2", "ctcp.gamma_tuning=off"],
        bpf="tcp",
        jobs=3,
    )
    assert cfg.algorithms == ("fusion", "ctcp")
    # a --param replaces one name and keeps the file's others
    assert cfg.params == {"fusion": {"dmin_ms": 2, "rtt_source": "srtt"}, "ctcp": {"gamma_tuning": "off"}}
    assert (cfg.filter, cfg.jobs) == ("tcp", 3)
    # no override given: the file's values stay
    same = config.with_overrides(config.load(f))
    assert same.algorithms == ("reno", "cubic") and same.jobs == 2


@pytest.mark.parametrize(
    "text, value",
    [("4", 4), ("0.5", 0.5), ("true", True), ("linux", "linux"), ('"a b"', "a b"), ("1e-7", 1e-7)],
)
def test_param_values_use_toml_scalars(text: str, value: object) -> None:
    assert config.parse_value(text) == value
    assert type(config.parse_value(text)) is type(value)


@pytest.mark.parametrize("bad", ["fusion", "fusion=3", ".x=1", "fusion.=1"])
def test_malformed_param_rejected(bad: str) -> None:
    with pytest.raises(UsageError, match="ALGO.NAME=VALUE"):
        config.parse_param_overrides([bad])


def test_algo_all_means_every_registered() -> None:
    assert config.parse_algorithms("all") is None
    assert config.parse_algorithms(None) is None
    assert config.parse_algorithms("reno,,cubic") == ("reno", "cubic")


def test_tolerance_overrides_and_disables() -> None:
    t = config.parse_tolerance("mare=0.05, corr=none", Tolerance())
    assert t == Tolerance(mare=0.05, rmse_pkts=1.0, corr=None, goodput=None)
    with pytest.raises(UsageError, match="NAME one of"):
        config.parse_tolerance("speed=1", Tolerance())
    with pytest.raises(UsageError, match="not a number"):
        config.parse_tolerance("mare=x", Tolerance())


def test_jobs_override_validated() -> None:
    with pytest.raises(UsageError, match="--jobs"):
        config.with_overrides(Config(), jobs=0)


def test_expectations_for_path_globs() -> None:
    exp = (
        config.Expectation(match="samples/cubic-*/*.pcap", expect="cubic"),
        config.Expectation(match="*.pcapng", expect="reno"),
    )
    c = config.CheckConfig(expectations=exp)
    assert [e.expect for e in c.expectations_for("samples/cubic-loss/capture.pcap")] == ["cubic"]
    assert [e.expect for e in c.expectations_for("x/y.pcapng")] == ["reno"]
    assert c.expectations_for("samples/reno-bdp/capture.pcap") == []
    # a global expect overrides the per-capture table
    g = config.CheckConfig(expect="vegas", max_error=0.3, expectations=exp)
    (e,) = g.expectations_for("samples/cubic-loss/capture.pcap")
    assert (e.expect, e.max_error) == ("vegas", 0.3)
