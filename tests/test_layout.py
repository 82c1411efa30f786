"""The map of the house (docs/design.md) is true: imports go one way along the data path.

Layers, lowest first — a module may import its own layer and the layers below, never above:

    base      hscc_trace (the package), errors, schema, model, addr, config, atomic, names, perf/
    reading   capture/      file formats, BPF, decoders
    flows     flows/        connections, per-flow packet arena, ingestion (load)
    events    events/       segments, ACKs, episodes, rounds, SACK blocks
    quic      qlog/         QUIC connections from qlog files, their RFC 9002 streams and replays
    replay    replay/       engine, registry, selection; replay/algorithms/ (one file each)
    analysis  analysis/     the analyze pipeline, JSON results, check, table exports
    report    reports/      figures and the HTML report
    api       api.py        the library facade
    corpus    corpus/       many captures on Dask: a Parquet dataset, the census report
    cli       cli/, __main__

Every import counts, including those inside functions and under ``TYPE_CHECKING``. Inside one
layer there must be no cycle. The table of layers in docs/design.md is checked against this one.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: installed package name → folder in the repository (setup.py's mapping)
ROOTS = {
    "hscc_trace": REPO / "hscc_trace",
    "hscc_trace.replay": REPO / "replay",
    "hscc_trace.reports": REPO / "reports",
}
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "base",
        (
            "hscc_trace",
            "hscc_trace.errors",
            "hscc_trace.schema",
            "hscc_trace.model",
            "hscc_trace.addr",
            "hscc_trace.config",
            "hscc_trace.atomic",
            "hscc_trace.names",
            "hscc_trace.perf*",
        ),
    ),
    ("reading", ("hscc_trace.capture*",)),
    ("flows", ("hscc_trace.flows*",)),
    ("events", ("hscc_trace.events*",)),
    ("quic", ("hscc_trace.qlog*",)),
    ("replay", ("hscc_trace.replay*",)),
    ("analysis", ("hscc_trace.analysis*",)),
    ("report", ("hscc_trace.reports*",)),
    ("api", ("hscc_trace.api",)),
    ("corpus", ("hscc_trace.corpus*",)),
    ("cli", ("hscc_trace.cli*", "hscc_trace.__main__")),
]


def modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pkg, folder in ROOTS.items():
        for p in folder.rglob("*.py"):
            rel = p.relative_to(folder).with_suffix("")
            parts = [x for x in rel.parts if x != "__init__"]
            out[".".join([pkg, *parts])] = p
    return out


def layer_of(name: str) -> int:
    for k, (_, pats) in enumerate(LAYERS):
        for pat in pats:
            if name == pat or (pat.endswith("*") and (name == pat[:-1] or name.startswith(pat[:-1] + "."))):
                return k
    raise AssertionError(f"{name} is in no layer: add it to LAYERS (and to docs/design.md)")


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package modules ``name`` imports (``from X import y`` counts X.y when that is a module)."""
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = (
                ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
                if node.level
                else (node.module or "")
            )
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in node.names]
        for t in targets:
            if t.startswith("hscc_trace") and t != name:
                out.add(t)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {n: imports(n, p, known) for n, p in known.items()}


def test_every_module_is_in_a_layer() -> None:
    names = modules()
    assert len(names) > 50  # the package itself was found
    assert all(0 <= layer_of(name) < len(LAYERS) for name in names)  # layer_of raises for a stray module


def test_no_import_goes_up_the_data_path() -> None:
    upward = [
        f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
        for a, deps in graph().items()
        for b in deps
        if layer_of(b) > layer_of(a)
    ]
    assert not upward, "\n".join(upward)


def test_no_import_cycle() -> None:
    g = graph()
    state: dict[str, int] = {}
    cycles: list[str] = []

    def visit(n: str, path: list[str]) -> None:
        state[n] = 1
        for m in sorted(g.get(n, ())):
            if m not in g:
                continue
            if state.get(m) == 1:
                cycles.append(" -> ".join(path[path.index(m) :] + [m]) if m in path else f"{n} -> {m}")
            elif m not in state:
                visit(m, path + [m])
        state[n] = 2

    for n in sorted(g):
        if n not in state:
            visit(n, [n])
    assert not cycles, "\n".join(cycles)


def test_the_map_in_design_md_lists_these_layers() -> None:
    text = (REPO / "docs" / "design.md").read_text()
    table = re.findall(r"^\| (\w+) \| `([^`]+)`", text, flags=re.M)
    assert [t[0] for t in table] == [name for name, _ in LAYERS], table


def test_an_algorithm_module_holds_no_engine_plumbing() -> None:
    """replay/algorithms/ imports only the algorithm interface (interface, state, tp, helpers, _jit) and
    other algorithms, never the engine, the registry or anything outside replay/."""
    allowed = {
        "hscc_trace.replay.interface",
        "hscc_trace.replay.state",
        "hscc_trace.replay.tp",
        "hscc_trace.replay.helpers",
        "hscc_trace.replay._jit",
    }
    bad = [
        f"{a} imports {b}"
        for a, deps in graph().items()
        if a.startswith("hscc_trace.replay.algorithms.")
        for b in deps
        if b not in allowed and not b.startswith("hscc_trace.replay.algorithms")
    ]
    assert not bad, "\n".join(bad)


#: notes that live outside the repository; the project's code and docs must not lean on them
_OUTSIDE = re.compile(r"ALGORITHMS\.md|DESIGN\.md|IDENTIFICATION\.md|/work/")


def test_nothing_cites_a_file_outside_the_repository() -> None:
    """Code, docs and scripts cite only what a reader of the repository can open (the
    external captures are located relative to the repository, through tests/conftest.py)."""
    folders = ("hscc_trace", "replay", "reports", "docs", "tests", "benchmarks", "fuzz", "samples")
    files = [REPO / "README.md"] + [
        f
        for d in folders
        for f in (REPO / d).rglob("*")
        if f.suffix in (".py", ".md", ".sh", ".toml", ".c") and "results" not in f.parts
    ]
    assert len(files) > 100
    offenders = [
        f"{f.relative_to(REPO)}:{i}: {line.strip()[:80]}"
        for f in files
        if f.name != "test_layout.py"
        for i, line in enumerate(f.read_text(errors="replace").splitlines(), 1)
        if _OUTSIDE.search(line)
    ]
    assert offenders == []


#: what the CLI may import from the package: the library's API and its errors, no exception (the
#: corpus commands reach hscc_trace.corpus through api.corpus_run / api.census)
CLI_MAY_IMPORT = ("hscc_trace.api", "hscc_trace.errors")


def test_the_cli_imports_only_the_api_and_the_errors() -> None:
    past = []
    for name, deps in graph().items():
        if layer_of(name) != len(LAYERS) - 1:
            continue
        for dep in sorted(deps):
            if dep.startswith("hscc_trace.cli") or dep == "hscc_trace.__main__":
                continue
            if not any(dep == a or dep.startswith(a + ".") for a in CLI_MAY_IMPORT):
                past.append(f"{name} imports {dep}")
    assert not past, "\n".join(past)


def test_no_helper_of_the_cli_or_the_api_takes_more_than_8_parameters() -> None:
    # a Typer command is the grammar (one parameter per option) and builds one options object;
    # every other function takes an options object instead of a long list
    known: set[str] = set()
    long = []
    for name, path in modules().items():
        if not (name == "hscc_trace.api" or name.startswith("hscc_trace.cli")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            a = node.args
            n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
            command = any(
                isinstance(d, ast.Call) and getattr(d.func, "attr", "") == "command" for d in node.decorator_list
            )
            if n > 8 and not command and f"{name}.{node.name}" not in known:
                long.append(f"{name}.{node.name}: {n} parameters")
    assert not long, "\n".join(long)


def _size(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, int]:
    """(lines of the body, parameters) of a function; a Typer command's options are its grammar
    and do not count as parameters."""
    a = node.args
    n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
    if any(isinstance(d, ast.Call) and getattr(d.func, "attr", "") == "command" for d in node.decorator_list):
        n = 0
    return (node.end_lineno or node.lineno) - node.body[0].lineno + 1, n


#: functions longer than 150 lines or taking more than 8 parameters (issue #39: kernels as named
#: steps, state in named records), with their size when this list was made. The list only
#: shrinks: a function on it may not grow, and one that fits again must leave it.
LONG_FUNCTIONS: dict[str, tuple[int, int]] = {
    "hscc_trace.analysis.annotate.annotate": (66, 9),
    "hscc_trace.capture.decode._decode": (319, 4),
    "hscc_trace.capture.reader._pcap_batches": (62, 9),
    "hscc_trace.capture.slow._collect_v4": (30, 9),
    "hscc_trace.capture.slow._collect_v6": (32, 9),
    "hscc_trace.corpus.runner.run": (136, 10),
    "hscc_trace.events.core.analyze_rows": (79, 10),
    "hscc_trace.events.sack._flow_blocks": (54, 16),
    "hscc_trace.events.tables._compact": (110, 10),
    "hscc_trace.events.tables._limits": (23, 9),
    "hscc_trace.events.tables._rounds_flow": (127, 16),
    "hscc_trace.events.tables._run_flows": (102, 14),
    "hscc_trace.events.tables.build_flow_events": (70, 10),
    "hscc_trace.events.vantage.sender_view": (214, 10),
    "hscc_trace.flows.arena._chains": (23, 9),
    "hscc_trace.flows.arena._place": (45, 14),
    "hscc_trace.flows.arena._sparse": (30, 19),
    "hscc_trace.flows.arena._unplace": (43, 9),
    "hscc_trace.flows.tracker._flow_kernel": (375, 7),
    "hscc_trace.perf.warmup._frame": (18, 9),
    "hscc_trace.qlog.streams._connection": (356, 4),
    "hscc_trace.replay._loop.run_loop": (239, 8),
    "hscc_trace.replay.engine._rate_samples": (121, 15),
    "hscc_trace.replay.engine.replay": (54, 9),
    "hscc_trace.reports.figures._band": (25, 13),
    "hscc_trace.reports.figures.line": (17, 11),
    "hscc_trace.reports.html.write_report": (148, 9),
    "hscc_trace.reports.store._encode_kernel": (25, 12),
}


def test_no_function_is_longer_than_150_lines_or_takes_more_than_8_parameters() -> None:
    sizes: dict[str, tuple[int, int]] = {}  # (the largest of two functions of one name)
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                key = f"{name}.{node.name}"
                lines, params = _size(node)
                was = sizes.get(key, (0, 0))
                sizes[key] = (max(lines, was[0]), max(params, was[1]))
    bad = []
    for key, (lines, params) in sorted(sizes.items()):
        listed = LONG_FUNCTIONS.get(key)
        if listed is None and (lines > 150 or params > 8):
            bad.append(f"{key}: {lines} lines, {params} parameters")
        elif listed is not None and (lines > max(listed[0], 150) or params > max(listed[1], 8)):
            bad.append(f"{key}: {lines} lines, {params} parameters (listed at {listed})")
        elif listed is not None and lines <= 150 and params <= 8:
            bad.append(f"{key} fits now ({lines} lines, {params} parameters): take it off LONG_FUNCTIONS")
    bad += [f"{key}: listed in LONG_FUNCTIONS, gone" for key in sorted(set(LONG_FUNCTIONS) - set(sizes))]
    assert not bad, "\n".join(bad)
