"""benchmarks/make_table.py: docs/performance.md's table is the one rendered from the committed
results, each figure comes from the newest result that measured it, and pruning folds the
results the table no longer draws on into history.csv (once) before removing them."""

from __future__ import annotations

import csv
import importlib.util
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"


def _mt():
    spec = importlib.util.spec_from_file_location("bench_make_table", BENCH / "make_table.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _run(stamp: str, caps: list[str], targets: list[tuple[str, float | None, bool | None]]) -> dict:
    """A run.py results document of ``targets`` (name, value, passed), limit 1.0."""
    return dict(
        date=stamp,
        params=dict(captures=caps),
        captures={c: {} for c in caps},
        targets=[dict(target=n, value=v, op="<=", limit=1.0, passed=ok, detail="") for n, v, ok in targets],
    )


def test_the_page_shows_the_table_of_the_committed_results() -> None:
    mt = _mt()
    page = (REPO / "docs" / "performance.md").read_text()
    assert mt.rendered(page) == page, "run: python benchmarks/make_table.py"
    assert len(page.splitlines()) <= 200
    # every result kept in benchmarks/results of a benchmark make_table knows is one the table
    # draws on (python benchmarks/make_table.py --prune folds the others into history.csv)
    kept = {p for _, p, _ in mt.current()}
    assert {p for _, k, p, _ in mt.results() if k != "?"} == kept


def test_each_figure_from_the_newest_result_that_measured_it(tmp_path: Path) -> None:
    mt = _mt()
    full = ["replica-0.1M", "replica-1M", "replica-5M"]
    docs = {
        # a full run: two targets; a later run of replica-5M alone measures one of them again
        "2026-01-01T0000Z.json": _run("a", full, [("flows", 0.5, True), ("replay", 0.9, True)]),
        "2026-01-02T0000Z-5M.json": _run("b", ["replica-5M"], [("flows", 1.5, False), ("replay", None, None)]),
        # superseded by the newer run of the same figure: nothing of it is shown any more
        "2025-12-31T0000Z-5M.json": _run("c", ["replica-5M"], [("flows", 0.4, True)]),
    }
    for name, d in docs.items():
        (tmp_path / name).write_text(json.dumps(d))
        (tmp_path / name).with_suffix(".md").write_text("tables")
    assert mt.kind(docs["2026-01-01T0000Z.json"]) == "run.py"
    assert mt.kind(docs["2026-01-02T0000Z-5M.json"]) == "run.py replica-5M"
    rows = [(p.name, f["metric"], f["value"], f["result"]) for _, p, f in mt.current(tmp_path)]
    # "flows" from the newest run (1.5, FAIL); "replay" was not measured there (None): the full run's
    assert rows == [
        ("2026-01-02T0000Z-5M.json", "flows", "1.50", "FAIL"),
        ("2026-01-01T0000Z.json", "replay", "0.90", "pass"),
    ]
    t = mt.table(tmp_path)
    assert "| flows | 1.50 | <= 1 | **FAIL** | 2026-01-02 00:00 `2026-01-02T0000Z-5M.json` |" in t

    (tmp_path / "2025-01-01T0000Z-new.json").write_text(json.dumps({"something": "else"}))  # unknown: kept
    removed = mt.prune(tmp_path)
    assert [p.name for p in removed] == ["2025-12-31T0000Z-5M.json"]
    assert not (tmp_path / "2025-12-31T0000Z-5M.md").exists()
    assert (tmp_path / "2026-01-01T0000Z.json").exists() and (tmp_path / "2026-01-02T0000Z-5M.json").exists()
    assert (tmp_path / "2025-01-01T0000Z-new.json").exists()
    with (tmp_path / "history.csv").open() as fh:
        hist = list(csv.DictReader(fh))
    assert hist == [
        dict(
            stamp="2025-12-31T0000Z",
            benchmark="run.py replica-5M",
            metric="flows",
            value="0.40",
            limit="<= 1",
            result="pass",
        )
    ]
    # a newer full run supersedes both: pruning again appends their rows once, keeps the header once
    (tmp_path / "2026-01-03T0000Z.json").write_text(
        json.dumps(_run("d", full, [("flows", 0.3, True), ("replay", 0.8, True)]))
    )
    shutil.copy(tmp_path / "history.csv", tmp_path / "before.csv")
    assert sorted(p.name for p in mt.prune(tmp_path)) == ["2026-01-01T0000Z.json", "2026-01-02T0000Z-5M.json"]
    text = (tmp_path / "history.csv").read_text()
    assert text.startswith((tmp_path / "before.csv").read_text()) and text.count("stamp,benchmark") == 1
    assert [r["stamp"] for r in csv.DictReader(text.splitlines())] == [
        "2025-12-31T0000Z",
        "2026-01-01T0000Z",
        "2026-01-01T0000Z",
        "2026-01-02T0000Z",
    ]
