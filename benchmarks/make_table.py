#!/usr/bin/env python3
"""The table of docs/performance.md, rendered from the latest result of each benchmark.

Every benchmark script writes ``benchmarks/results/<UTC stamp>[-name].json``. This script reads
them all, sorts each into its benchmark (``kind``: from the document's shape, not its name),
and writes one table — each figure from the latest result that measured it, with the run it
comes from — between the markers in docs/performance.md, as samples/testbed/make_index.py
does for samples/README.md::

    python benchmarks/make_table.py               # rewrite the table in docs/performance.md
    python benchmarks/make_table.py --check       # exit 1 if the page is not what it would write
    python benchmarks/make_table.py --prune       # fold older results into history.csv, remove them

``--prune`` appends the figures of every result the table no longer draws on (of a benchmark
:func:`kind` knows: any other result is left alone) to
``benchmarks/results/history.csv`` (one row per figure: stamp, benchmark, metric, value,
limit, result) and deletes the file and its ``.md``; git keeps the files themselves.
run.py, corpus_bench.py and clean_machine.py call :func:`update_doc` with ``--docs``.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"
HISTORY = RESULTS / "history.csv"
DOC = REPO / "docs" / "performance.md"
BEGIN, END = "<!-- BEGIN GENERATED: make_table.py -->", "<!-- END GENERATED -->"
FIELDS = ("stamp", "benchmark", "metric", "value", "limit", "result")

#: run.py targets a newer, dedicated benchmark measures instead (their rows would only repeat
#: an older figure): the events path's memory (analyze_memory.py --large), the report's render
#: time (report_render.py), and the report's size under its former name
SUPERSEDED = {
    "peak memory of hscc-trace events path (all flows) ≤ capture size",
    "report renders < 3 s",
    "report < 10 MB",
}


def kind(doc: dict[str, Any]) -> str:
    """Which benchmark wrote ``doc``: the script and, for run.py and analyze_memory.py, the variant."""
    if "targets" in doc:  # benchmarks/run.py
        caps = list(doc.get("params", {}).get("captures") or doc.get("captures", {}))
        return "run.py" if len(caps) >= 3 else "run.py " + ",".join(caps)
    if "summary" in doc and "census" in doc:
        return "corpus_bench.py"
    if "documented_kb_per_flow" in doc:
        return "analyze_memory.py" if doc.get("slope") else "analyze_memory.py --large"
    if "floor_ratio" in (doc.get("median") or {}):
        return "cpu_floor.py"
    if "first_flow_s" in (doc.get("median") or {}):
        return "report_render.py"
    if "readme_s" in doc:
        return "clean_machine.py"
    return "?"


def figures(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The key figures of one result: metric, value, limit (text) and result (pass/FAIL/"")."""

    def verdict(ok: bool | None) -> str:
        return "" if ok is None else ("pass" if ok else "FAIL")

    k = kind(doc)
    if k.startswith("run.py"):
        # a run on other captures than the replicas (e.g. the big flows of make_bigflow.py) is
        # a figure of its own, named by its captures, not a newer value of the replica-5M one
        caps = k.removeprefix("run.py").strip()
        prefix = f"{caps}: " if caps and "replica-5M" not in caps.split(",") else ""
        for t in doc["targets"]:
            if t["value"] is None:
                continue
            big = t["limit"] >= 1e6
            yield dict(
                metric=prefix + t["target"],
                value=f"{t['value'] / 1e6:.1f} M/s" if big else f"{t['value']:.2f}",
                limit=f"{t['limit'] / 1e6:.0f} M/s" if big else f"{t['op']} {t['limit']:g}",
                result=verdict(t["passed"]),
            )
    elif k == "corpus_bench.py":
        for t in doc["summary"]["targets"]:
            v = t["value"]
            yield dict(metric=f"corpus: {t['name']}", value=str(v), limit=t["target"], result=verdict(t["pass"]))
    elif k.startswith("analyze_memory.py"):
        s = doc.get("slope")
        if s:
            lim = doc["documented_kb_per_flow"]
            yield dict(
                metric="peak memory per flow of ~50 packets (50 000 − 10 000 connections), KB",
                value=f"{s['kb_per_flow']:.1f}",
                limit=f"<= {lim:g}",
                result=verdict(s["kb_per_flow"] <= lim),
            )
        for name, c in doc["cases"].items():
            size = doc["sizes"].get(name.split(" ", 1)[1])
            if not size or c.get("rc"):
                continue
            r = c["rss_mib"] * 2**20 / size
            target = name.startswith(("analyze replica-5M", "events-stream", "events-cmd"))
            if not target and "replica-5M" not in name:
                continue  # (the flow captures' ratio says nothing: their figure is the slope)
            yield dict(
                metric=f"peak RSS / file: {name}",
                value=f"{r:.2f}",
                limit="<= 1" if target else "",
                result=verdict(r <= 1.0) if target else "",
            )
    elif k == "report_render.py":
        m = doc["median"]
        yield dict(
            metric="report of replica-2.3M: size / budget, MB",
            value=f"{doc['size'] / 1e6:.2f} / {doc['budget'] / 1e6:.2f}",
            limit="within",
            result=verdict(doc["size"] <= doc["budget"]),
        )
        yield dict(
            metric="report: first flow drawn, s",
            value=f"{m['first_flow_s']:.2f}",
            limit="< 3",
            result=verdict(m["first_flow_s"] < 3),
        )
        yield dict(
            metric="report: every flow's main figure drawn, s",
            value=f"{m['all_main_s']:.2f}",
            limit="< 3",
            result=verdict(m["all_main_s"] < 3),
        )
    elif k == "cpu_floor.py":
        m = doc["median"]
        yield dict(
            metric=f"floor: analyze's compiled CPU / cores / tcptrace -lr (analyze itself {m['ratio']:.2f})",
            value=f"{m['floor_ratio']:.2f}",
            limit="",
            result="",
        )
    elif k == "clean_machine.py":
        yield dict(
            metric="README command 1 on a clean machine, s",
            value=f"{doc['readme_s']:.1f}",
            limit="<= 60",
            result=verdict(doc["readme_s"] <= 60),
        )
        yield dict(
            metric="its first analyze, s",
            value=f"{doc['analyze_s']:.1f}",
            limit="<= 15",
            result=verdict(doc["analyze_s"] <= 15),
        )


def results(folder: Path = RESULTS) -> list[tuple[str, str, Path, dict[str, Any]]]:
    """(stamp, benchmark, path, document) of every result JSON, oldest first."""
    out = []
    for p in sorted(folder.glob("*.json")):
        doc = json.loads(p.read_text())
        out.append((p.name[:16], kind(doc), p, doc))
    return out


def current(folder: Path = RESULTS) -> list[tuple[str, Path, dict[str, Any]]]:
    """Every figure with the run it comes from, newest run first: each metric once, from the
    newest result that measured it (a run of part of a benchmark — one capture, one case —
    leaves the other figures to the last run that measured them)."""
    out, seen = [], set()
    for stamp, k, p, doc in reversed(results(folder)):
        for f in figures(doc):
            if f["metric"] in seen or (k.startswith("run.py") and f["metric"] in SUPERSEDED):
                continue
            seen.add(f["metric"])
            out.append((stamp, p, f))
    return out


def table(folder: Path = RESULTS) -> str:
    """The Markdown table of :func:`current`."""
    rows = [
        "| figure | measured | target | result | run |",
        "|---|---:|---:|---|---|",
    ]
    for stamp, p, f in current(folder):
        res = f"**{f['result']}**" if f["result"] == "FAIL" else f["result"]
        run = f"{stamp[:10]} {stamp[11:13]}:{stamp[13:15]} `{p.name}`"
        rows.append(f"| {f['metric']} | {f['value']} | {f['limit']} | {res} | {run} |")
    return "\n".join(rows)


def rendered(text: str, folder: Path = RESULTS) -> str:
    """``text`` (the page) with the table between the markers replaced."""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"make_table: {DOC.relative_to(REPO)} has no {BEGIN} … {END} markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + BEGIN + "\n" + table(folder) + "\n" + END + tail


def update_doc(doc: Path = DOC, folder: Path = RESULTS) -> None:
    """Rewrite the generated table of ``doc`` from the results in ``folder``."""
    doc.write_text(rendered(doc.read_text(), folder))


def prune(folder: Path = RESULTS, history: Path | None = None) -> list[Path]:
    """Append each result the table no longer shows a figure of to the history file (once), and
    remove it with its ``.md``; returns the removed JSON files."""
    history = history or folder / HISTORY.name
    keep = {p for _, p, _ in current(folder)}
    keep |= {p for _, k, p, _ in results(folder) if k == "?"}  # a benchmark this script does not know yet
    seen: set[tuple[str, str]] = set()
    if history.exists():
        with history.open(newline="") as fh:
            seen = {(r["stamp"], r["benchmark"]) for r in csv.DictReader(fh)}
    new = not history.exists()
    removed = []
    with history.open("a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS, lineterminator="\n")
        if new:
            w.writeheader()
        for stamp, k, p, doc in results(folder):
            if p in keep:
                continue
            if (stamp, k) not in seen:
                for f in figures(doc):
                    w.writerow(dict(stamp=stamp, benchmark=k, **f))
                seen.add((stamp, k))
            p.unlink()
            p.with_suffix(".md").unlink(missing_ok=True)
            removed.append(p)
    return removed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the page's table is out of date")
    ap.add_argument("--prune", action="store_true", help="fold older results into history.csv and remove them")
    a = ap.parse_args(argv)
    if a.prune:
        for p in prune():
            print(f"folded into {HISTORY.name} and removed: {p.name}")
    if a.check:
        if rendered(DOC.read_text()) != DOC.read_text():
            print(f"make_table: the table in {DOC.relative_to(REPO)} is out of date", file=sys.stderr)
            return 1
        return 0
    update_doc()
    return 0


if __name__ == "__main__":
    sys.exit(main())
