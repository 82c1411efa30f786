"""hscc_trace.analysis.check: verdict logic, baselines, JUnit XML and GitHub Actions outputs.

Works on hand-written results documents (the shape of hscc_trace.analysis.results), one per branch.
"""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hscc_trace.analysis import check
from hscc_trace.analysis.check import ERROR, FAIL, PASS, SKIP
from hscc_trace.config import CheckConfig, Expectation, Tolerance


def fit(
    algo: str, mare: float | None, rank: int, rounds: int = 20, rmse: float = 1.0, corr: float | None = 0.9
) -> dict:
    return {
        "algo": algo,
        "rounds": rounds,
        "mare": mare,
        "rmse_pkts": rmse,
        "corr": corr,
        "goodput_pred_bps": 1e7,
        "goodput_actual_bps": 1e7,
        "rank": rank,
    }


def flow(
    fid: int,
    fits: list[dict],
    *,
    segments: int = 1000,
    limited: int = 20,
    rounds: int = 25,
    goodput: float = 1e7,
    sender_dir: int = 0,
) -> dict:
    best = min(fits, key=lambda r: r["rank"])["algo"] if fits else None
    return {
        "flow_id": fid,
        "src": "10.0.0.1",
        "sport": 40000 + fid,
        "dst": "10.0.0.2",
        "dport": 5201,
        "sender_dir": sender_dir,
        "goodput_bps": goodput,
        "events": {
            "segments": segments,
            "acks": segments,
            "episodes": 1,
            "rounds": rounds,
            "cwnd_limited_rounds": limited,
            "rtt_offset_s": 0.0,
        },
        "fit": sorted(fits, key=lambda r: r["rank"]),
        "best": best,
        "warnings": [],
    }


def capture(path: str, flows: list[dict], sha: str | None = None, error: str | None = None) -> dict:
    return {
        "path": path,
        "name": path.rsplit("/", 1)[-1],
        "blake3": sha,
        "flows": [] if error else flows,
        "error": error,
        "warnings": [],
    }


def document(*caps: dict) -> dict:
    return {"schema_version": "1.0", "algorithms": ["reno", "cubic", "fusion"], "captures": list(caps), "errors": []}


RENO_FLOW = flow(1, [fit("reno", 0.03, 1), fit("cubic", 0.12, 2), fit("fusion", 0.41, 3)])
CONTROL = flow(0, [], segments=0, limited=0, rounds=0)  # iperf3 control connection: nothing to judge
DOC = document(capture("s/reno.pcap", [CONTROL, RENO_FLOW], sha="a" * 64))


def only(verdicts: list[check.Verdict], status: str) -> list[check.Verdict]:
    return [v for v in verdicts if v.status == status]


# --- expectations --------------------------------------------------------------------------------


def test_expected_algorithm_within_bound_passes() -> None:
    vs = check.check_expectations(DOC, CheckConfig(expect="reno", max_error=0.15))
    (p,) = only(vs, PASS)
    assert p.flow_id == 1 and "reno mare 0.030 <= 0.150" in p.message and "rank 1 of 3" in p.message
    assert check.exit_code(vs) == 0


def test_handshake_only_flow_is_skipped_not_passed() -> None:
    vs = check.check_expectations(DOC, CheckConfig(expect="reno"))
    (s,) = only(vs, SKIP)
    assert s.flow_id == 0 and "no data segments" in s.message


def test_expected_algorithm_above_bound_fails_with_numbers() -> None:
    vs = check.check_expectations(DOC, CheckConfig(expect="fusion", max_error=0.05))
    (f,) = only(vs, FAIL)
    # the message carries the measured error, the bound, the rank and the best fit
    assert (
        "fusion mare 0.410 > 0.050" in f.message and "rank 3 of 3" in f.message and "best: reno mare 0.030" in f.message
    )
    assert f.metrics["mare"] == 0.41 and f.metrics["max_error"] == 0.05
    assert check.exit_code(vs) == 1


def test_rank_first_fails_a_good_fit_that_is_not_best() -> None:
    # cubic fits within 0.15 (0.12) but reno fits better: passes without, fails with --rank-first
    assert check.exit_code(check.check_expectations(DOC, CheckConfig(expect="cubic", max_error=0.15))) == 0
    vs = check.check_expectations(DOC, CheckConfig(expect="cubic", max_error=0.15, rank_first=True))
    (f,) = only(vs, FAIL)
    assert "cubic ranks 2, not 1" in f.message


def test_too_few_cwnd_limited_rounds_is_skipped() -> None:
    d = document(capture("s/rwnd.pcap", [flow(1, [fit("reno", 0.5, 1, rounds=2)], limited=2, rounds=40)]))
    vs = check.check_expectations(d, CheckConfig(expect="reno", max_error=0.15, min_rounds=4))
    assert [v.status for v in vs] == [SKIP]
    assert "2 cwnd-limited rounds of 40 (need >= 4)" in vs[0].message
    # ... and a run where nothing could be judged does not pass silently
    assert check.exit_code(vs) == 1
    assert check.terminal_lines(vs)[-1].endswith("nothing could be verified: that is a failure")


def test_undefined_error_fails() -> None:
    d = document(capture("s/x.pcap", [flow(1, [fit("reno", None, 1)])]))
    (f,) = only(check.check_expectations(d, CheckConfig(expect="reno")), FAIL)
    assert "mare undefined" in f.message


def test_algorithm_not_replayed_is_an_error() -> None:
    vs = check.check_expectations(DOC, CheckConfig(expect="vegas"))
    (e,) = only(vs, ERROR)
    assert "vegas was not replayed" in e.message and check.exit_code(vs) == 2


def test_unreadable_capture_is_an_error_verdict_exit_2() -> None:
    d = document(capture("s/bad.pcap", [], error="s/bad.pcap: not a capture file"), DOC["captures"][0])
    vs = check.check_expectations(d, CheckConfig(expect="reno"))
    assert vs[0].status == ERROR and vs[0].message == "s/bad.pcap: not a capture file"
    assert check.exit_code(vs) == 2  # input errors outrank failures


def test_flow_selection_and_missing_flow() -> None:
    vs = check.check_expectations(DOC, CheckConfig(expect="reno"), flows=[1])
    assert [(v.flow_id, v.status) for v in vs] == [(1, PASS)]
    vs = check.check_expectations(DOC, CheckConfig(expect="reno"), flows=[7])
    (f,) = vs
    assert f.status == FAIL and "flow 7 not found" in f.message


def test_per_capture_expectations_by_glob() -> None:
    d = document(capture("s/reno-bdp/capture.pcap", [RENO_FLOW]), capture("s/other.pcap", [RENO_FLOW]))
    cfg = CheckConfig(expectations=(Expectation(match="s/reno-*/*.pcap", expect="reno", max_error=0.1),))
    vs = check.check_expectations(d, cfg)
    assert [(v.capture, v.status) for v in vs] == [("s/reno-bdp/capture.pcap", PASS), ("s/other.pcap", SKIP)]
    assert "no expectation matches" in vs[1].message


def test_label_puts_the_data_sender_first_and_brackets_ipv6() -> None:
    f = flow(3, [], sender_dir=1)
    f.update(src="2001:db8::1", dst="2001:db8::2", sport=5201, dport=40000)
    assert check.flow_label(f) == "flow 3 [2001:db8::2]:40000 → [2001:db8::1]:5201"


# --- baselines -----------------------------------------------------------------------------------


def test_baseline_identical_passes() -> None:
    vs = check.check_baseline(DOC, copy.deepcopy(DOC), Tolerance())
    assert [v.status for v in vs] == [SKIP, PASS]
    assert "3 algorithm fit(s) within tolerance" in vs[1].message


def test_baseline_regression_beyond_tolerance_fails() -> None:
    cur = copy.deepcopy(DOC)
    reno = cur["captures"][0]["flows"][1]["fit"][0]
    reno["mare"] = 0.06  # +0.03 > 0.02
    reno["corr"] = 0.87  # -0.03 <= 0.05: fine
    vs = check.check_baseline(cur, DOC, Tolerance(mare=0.02, corr=0.05))
    (f,) = only(vs, FAIL)
    assert "1 regression(s)" in f.message and "reno mare 0.030 → 0.060 (+0.030 > tolerance 0.020)" in f.message


def test_baseline_improvement_is_not_a_regression() -> None:
    cur = copy.deepcopy(DOC)
    cur["captures"][0]["flows"][1]["fit"][0]["mare"] = 0.001
    assert check.exit_code(check.check_baseline(cur, DOC, Tolerance())) == 0


def test_baseline_goodput_drop_checked_only_when_asked() -> None:
    cur = copy.deepcopy(DOC)
    cur["captures"][0]["flows"][1]["goodput_bps"] = 8e6  # -20 %
    assert check.exit_code(check.check_baseline(cur, DOC, Tolerance())) == 0
    vs = check.check_baseline(cur, DOC, Tolerance(goodput=0.1))
    (f,) = only(vs, FAIL)
    assert "goodput 10.00 → 8.00 Mbit/s (-20.0% > tolerance 10.0%)" in f.message


def test_baseline_matches_by_content_then_path_then_name() -> None:
    base = document(capture("old/place/reno.pcap", [RENO_FLOW], sha="a" * 64))
    assert check.match_capture(DOC["captures"][0], base) is base["captures"][0]  # same blake3
    moved = document(capture("s/reno.pcap", [RENO_FLOW], sha="b" * 64))
    assert check.match_capture(DOC["captures"][0], moved) is moved["captures"][0]  # same path
    vs = check.check_baseline(DOC, document(capture("s/other.pcap", [RENO_FLOW], sha="c" * 64)), Tolerance())
    (f,) = vs
    assert f.status == FAIL and "no entry for this capture in the baseline" in f.message


def test_baseline_of_schema_1_5_matches_by_sha256_of_the_file(tmp_path: Path) -> None:
    # a baseline of schema 1.x identifies captures by SHA-256: the capture's is computed
    # from its file, and only against a baseline entry of the same size
    f = tmp_path / "moved.pcap"
    f.write_bytes(b"abc")
    sha = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # SHA-256("abc")
    cap = dict(capture(str(f), [RENO_FLOW], sha="d" * 64), size_bytes=3)

    def old(path: str, sha256: str, size: int) -> dict:
        entry = capture(path, [RENO_FLOW])
        del entry["blake3"]
        return dict(entry, sha256=sha256, size_bytes=size)

    base = document(old("elsewhere/other.pcap", "e" * 64, 3), old("elsewhere/x.pcap", sha, 3))
    assert check.match_capture(cap, base) is base["captures"][1]
    other_size = document(old("elsewhere/x.pcap", sha, 4))
    assert check.match_capture(cap, other_size) is None  # (not hashed: no entry of its size)
    assert check.match_capture(dict(cap, sha256=sha), document(old("a/b.pcap", sha, 3))) is not None


def test_baseline_restricted_to_expected_algorithm() -> None:
    cur = copy.deepcopy(DOC)
    cur["captures"][0]["flows"][1]["fit"][2]["mare"] = 0.9  # fusion got much worse
    assert check.exit_code(check.check_baseline(cur, DOC, Tolerance(), algorithms=["reno"])) == 0
    assert check.exit_code(check.check_baseline(cur, DOC, Tolerance())) == 1


# --- outputs -------------------------------------------------------------------------------------


@pytest.fixture()
def mixed() -> list[check.Verdict]:
    d = document(capture("s/bad.pcap", [], error="s/bad.pcap: truncated file"), DOC["captures"][0])
    return check.check_expectations(d, CheckConfig(expect="fusion", max_error=0.05))


def test_junit_one_suite_per_capture_with_numbers(mixed: list[check.Verdict]) -> None:
    root = ET.fromstring(check.junit_xml(mixed, time_s=1.5))
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("3", "1", "1", "1")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["s/bad.pcap", "s/reno.pcap"]
    assert suites[0].find("testcase/error").get("message") == "s/bad.pcap: truncated file"
    cases = suites[1].findall("testcase")
    assert [c.get("name") for c in cases] == [
        "flow 0 10.0.0.1:40000 → 10.0.0.2:5201: expect fusion (mare <= 0.050)",
        "flow 1 10.0.0.1:40001 → 10.0.0.2:5201: expect fusion (mare <= 0.050)",
    ]
    assert cases[0].find("skipped") is not None
    failure = cases[1].find("failure")
    assert "fusion mare 0.410 > 0.050" in failure.get("message")


def test_github_annotations_escape_and_cover_failures(mixed: list[check.Verdict]) -> None:
    lines = check.github_annotations(mixed)
    errors = [l for l in lines if l.startswith("::error ")]
    notices = [l for l in lines if l.startswith("::notice ")]
    assert len(errors) == 2 and len(notices) == 2
    assert errors[1].startswith("::error file=s/reno.pcap,title=hscc-trace check%3A expect fusion (mare <= 0.050)::")
    assert "0 passed, 1 failed, 1 skipped, 0 errors" in notices[1]
    # workflow-command data escaping: %, CR, LF
    v = check.Verdict("a,b:c.pcap", None, "", "t", FAIL, "100% bad\nline")
    (err, _) = check.github_annotations([v])
    assert err == "::error file=a%2Cb%3Ac.pcap,title=hscc-trace check%3A t::100%25 bad%0Aline"


def test_markdown_summary_table(mixed: list[check.Verdict]) -> None:
    md = check.markdown_summary(mixed)
    assert "**0 passed, 1 failed, 1 skipped, 1 errors** — exit code 2" in md
    assert md.count("\n| `s/") == 3 and "❌ fail" in md and "⏭️ skip" in md


def test_in_github_actions() -> None:
    assert check.in_github_actions({"GITHUB_ACTIONS": "true"})
    assert not check.in_github_actions({})


def test_rank_not_quoted_when_only_one_algorithm_was_replayed() -> None:
    d = document(capture("s/x.pcap", [flow(1, [fit("reno", 0.01, 1)])]))
    (p,) = check.check_expectations(d, CheckConfig(expect="reno"))
    assert p.status == PASS and "rank" not in p.message and "20 rounds" in p.message


def test_expected_name_matches_a_label_with_parameters() -> None:
    d = document(capture("s/c.pcap", [flow(1, [fit("cubic[flavor=linux]", 0.0, 1), fit("reno", 0.07, 2)])]))
    (p,) = check.check_expectations(d, CheckConfig(expect="cubic", rank_first=True))
    assert (
        p.status == PASS
        and p.message.startswith("cubic[flavor=linux] mare 0.000 <= 0.100")
        and "best:" not in p.message
    )


# --- judging on the verdict (results 1.3) -------------------------------------------------------------


def with_verdict(f: dict, cls: str, name: str | None = None, candidates=(), equivalent=(), basis="window") -> dict:
    g = copy.deepcopy(f)
    g["verdict"] = {
        "class": cls,
        "name": name,
        "candidates": list(candidates or ((name,) if name else ())),
        "equivalent": list(equivalent),
        "error": 0.03,
        "threshold": 0.15,
        "basis": basis,
        "reason": f"{cls} reason in plain words",
    }
    return g


def verdicts_for(f: dict, **cfg) -> list[check.Verdict]:
    return check.check_expectations(document(capture("s/x.pcap", [f])), CheckConfig(**cfg))


def test_identified_as_expected_passes_within_the_verdict_threshold() -> None:
    # no --max-error: the verdict named reno, so it fits within its threshold (0.15) already
    (v,) = verdicts_for(with_verdict(RENO_FLOW, "identified", "reno"), expect="reno")
    assert v.status == PASS and v.test == "expect reno (within the verdict's threshold)"
    assert v.message.startswith("identified as reno, reno mare 0.030 within its threshold 0.150")
    # --max-error tightens it: 0.03 > 0.02 fails although named
    (v,) = verdicts_for(with_verdict(RENO_FLOW, "identified", "reno"), expect="reno", max_error=0.02)
    assert v.status == FAIL and v.test == "expect reno (mare <= 0.020)" and "reno mare 0.030 > 0.020" in v.message


def test_behaves_as_expected_passes_and_says_behaves_as() -> None:
    # a window Reno's and also what senders outside the library set (verdict class "behaves as"):
    # the expectation of reno holds, within the verdict's threshold, in those words
    (v,) = verdicts_for(with_verdict(RENO_FLOW, "behaves as", "reno"), expect="reno")
    assert v.status == PASS and v.message.startswith("behaves as reno, reno mare 0.030 within its threshold 0.150")


def test_behaves_as_another_algorithm_fails_naming_it() -> None:
    (v,) = verdicts_for(with_verdict(RENO_FLOW, "behaves as", "reno"), expect="cubic")
    assert v.status == FAIL and v.message.startswith("the sender behaves as reno, not cubic")


def test_check_reads_the_verdicts_naming_classes() -> None:
    from hscc_trace.analysis import verdict

    assert check.NAMED == verdict.NAMED


def test_identified_as_another_algorithm_fails_naming_it() -> None:
    (v,) = verdicts_for(with_verdict(RENO_FLOW, "identified", "cubic"), expect="reno")
    assert v.status == FAIL and v.message.startswith("the sender was identified as cubic, not reno")


def test_ambiguous_fails_unless_allowed_and_listed() -> None:
    f = with_verdict(RENO_FLOW, "ambiguous", candidates=("reno", "cubic"))
    (v,) = verdicts_for(f, expect="reno")
    assert v.status == FAIL and "ambiguous between reno, cubic: reno is not shown to fit best" in v.message
    assert "--allow-ambiguous" in v.message
    (v,) = verdicts_for(f, expect="reno", allow_ambiguous=True)
    assert v.status == PASS and "ambiguous between reno, cubic (allowed)" in v.message
    # allowed, but the expected algorithm is not among the candidates: still a failure
    (v,) = verdicts_for(
        with_verdict(RENO_FLOW, "ambiguous", candidates=("cubic", "fusion")), expect="reno", allow_ambiguous=True
    )
    assert v.status == FAIL and "which does not include reno" in v.message


def test_unknown_fails_unless_allowed_then_max_error_decides() -> None:
    f = with_verdict(RENO_FLOW, "unknown")
    (v,) = verdicts_for(f, expect="reno")
    assert v.status == FAIL and "verdict unknown — unknown reason in plain words" in v.message
    (v,) = verdicts_for(f, expect="reno", allow_unknown=True)  # reno 0.03 <= 0.10 (DEFAULT_MAX_ERROR)
    assert v.status == PASS and "verdict unknown (allowed" in v.message
    (v,) = verdicts_for(f, expect="fusion", allow_unknown=True)  # fusion 0.41 > 0.10
    assert v.status == FAIL and "fusion mare 0.410 > 0.100" in v.message


def test_not_enough_data_is_skipped_with_its_reason_and_alone_fails_the_run() -> None:
    vs = verdicts_for(with_verdict(RENO_FLOW, "not enough data"), expect="reno")
    assert [v.status for v in vs] == [SKIP] and vs[0].test == "expect reno"
    assert vs[0].message == "not enough data: not enough data reason in plain words"
    assert check.exit_code(vs) == 1  # nothing verified at all


def test_an_equivalent_algorithm_needs_allow_ambiguous() -> None:
    # named cubic; kyushu+cubic replayed identically on this flow: the data cannot tell them apart
    f = flow(1, [fit("cubic", 0.0, 1), fit("kyushu+cubic", 0.0, 2)])
    f = with_verdict(f, "identified", "cubic", equivalent=("kyushu+cubic",))
    (v,) = verdicts_for(f, expect="kyushu+cubic")
    assert v.status == FAIL and "cannot be told apart" in v.message
    (v,) = verdicts_for(f, expect="kyushu+cubic", allow_ambiguous=True)
    assert v.status == PASS and "indistinguishable from kyushu+cubic" in v.message


def test_a_label_with_parameters_matches_by_name() -> None:
    f = flow(1, [fit("cubic[flavor=rfc]", 0.02, 1)])
    (v,) = verdicts_for(with_verdict(f, "identified", "cubic[flavor=rfc]"), expect="cubic")
    assert v.status == PASS


def test_folder_expectations_are_taken_relative_to_the_folder(tmp_path) -> None:
    from hscc_trace import config

    (tmp_path / "hscc-trace.toml").write_text(
        '[[check.expectations]]\nmatch = "reno-*/capture.pcap"\nexpect = "reno"\n\n'
        '[[check.expectations]]\nmatch = "mix/capture.pcap"\nexpect = "cubic"\nflows = [1]\n'
    )
    exps = config.folder_expectations(tmp_path)
    assert [(e.match, e.expect, e.flows) for e in exps] == [
        (str(tmp_path / "reno-*/capture.pcap"), "reno", None),
        (str(tmp_path / "mix/capture.pcap"), "cubic", (1,)),
    ]
    assert exps[0].applies_to(str(tmp_path / "reno-bdp" / "capture.pcap"))
    assert not exps[0].applies_to(str(tmp_path / "cubic-4bdp" / "capture.pcap"))
    assert config.folder_expectations(tmp_path / "nothing-here") == ()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "hscc-trace.toml").write_text("[[check.expectations]]\nexpect = 3\n")
    with pytest.raises(Exception, match="expect must be a non-empty string"):
        config.folder_expectations(tmp_path / "bad")


def test_a_flow_outside_the_validated_range_is_skipped_unless_allowed() -> None:
    # results 1.5: the verdict says where the flow lies outside the conditions it was validated
    # on; check does not count such a flow as verified (skip, with the reason) unless allowed
    f = with_verdict(RENO_FLOW, "identified", "reno")
    f["verdict"]["outside_range"] = ["1.37 Gbit/s: beyond the validated 2–50 Mbit/s"]
    (v,) = verdicts_for(f, expect="reno")
    assert v.status == SKIP and "outside the range the verdict was validated on" in v.message
    assert "1.37 Gbit/s" in v.message and "--allow-outside-range" in v.message
    (v,) = verdicts_for(f, expect="reno", allow_outside_range=True)
    assert v.status == PASS
    # a wrong name outside the range is not verified either way: skipped, or failed when allowed
    g = with_verdict(RENO_FLOW, "identified", "bbr")
    g["verdict"]["outside_range"] = ["1.37 Gbit/s: beyond the validated 2–50 Mbit/s"]
    assert verdicts_for(g, expect="cubic")[0].status == SKIP
    assert verdicts_for(g, expect="cubic", allow_outside_range=True)[0].status == FAIL


def test_verdict_of_bound_passes_fails_or_skips():
    # ok True → pass, False → fail (both keep the metrics), None → skip without metrics: the
    # bound could not be evaluated and the message is the reason
    args = ("x.pcap", 1, "flow 1", "min-jain 0.9")
    good = check.Verdict.of_bound(*args, True, "Jain's index 0.95 >= 0.9", {"jain": 0.95})
    bad = check.Verdict.of_bound(*args, False, "Jain's index 0.8 < 0.9", {"jain": 0.8})
    none = check.Verdict.of_bound(*args, None, "no Jain's index (no goodput)", {"jain": None})
    assert (good.status, good.metrics) == (PASS, {"jain": 0.95})
    assert (bad.status, bad.metrics) == (FAIL, {"jain": 0.8})
    assert (none.status, none.metrics, none.message) == (SKIP, {}, "no Jain's index (no goodput)")
