#!/usr/bin/env python3
"""Clean-machine benchmark: the README's first command on a fresh clone with empty caches.

What a new user (or a fresh CI runner) pays before the first result, measured end to end:

1. ``git clone`` of this repository's committed HEAD (``--ref`` for another commit) into a new
   temporary folder — uncommitted changes are not measured;
2. with an empty ``PIP_CACHE_DIR``, an empty ``HSCC_TRACE_CACHE_DIR`` and an empty
   ``XDG_CACHE_HOME`` (nothing from earlier runs: every wheel is downloaded, everything compiled
   is compiled), ``NUMBA_CACHE_DIR``, ``VIRTUAL_ENV``, ``PYTHONPATH`` and (unless
   ``--local-wheels``) ``PIP_FIND_LINKS`` removed, README command 1
   in that clone, timed in two parts:

   - install: ``python3 -m venv .venv && . .venv/bin/activate && pip install -q .``
   - analyze: ``hscc-trace analyze samples/reno-bdp/capture.pcap -o report.html --json results.json``
     (every default algorithm), its stderr kept;

3. then, in the same clone: the same ``analyze`` again (caches as the first run left them), and
   the CI figures of docs/ci.md: a pinned-commit install (``pip install "hscc-trace @
   git+file://CLONE@COMMIT"``, pip's cache and the hscc-trace cache empty, in a second venv),
   ``hscc-trace check samples/reno-bdp/`` right after it, ``hscc-trace compile`` (what the
   workflow runs on a cache miss), the same ``check`` again (a cached run) and the README's
   ``analyze`` in that venv.

Prints a Markdown table with the load average before and after and writes it, with every figure,
to ``benchmarks/results/<UTC stamp>-clean-machine.json`` and ``.md``; ``--docs`` then renders the
table of docs/performance.md (``benchmarks/make_table.py``). The machine should be otherwise
idle; a shared machine's load average is printed beside the figures.

    python benchmarks/clean_machine.py [--ref COMMIT] [--docs] [--no-ci]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLE = "samples/reno-bdp/capture.pcap"
INSTALL = "python3 -m venv .venv && . .venv/bin/activate && pip install -q ."
ANALYZE = f"hscc-trace analyze {SAMPLE} -o report.html --json results.json"
RESULTS = REPO / "benchmarks" / "results"


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def du(path: Path) -> int:
    """Megabytes under ``path``."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) >> 20


def timed(cmd: str, cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    """Wall seconds of ``bash -c cmd`` and its stderr; raises if it fails."""
    t = time.perf_counter()
    p = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t
    print(f"{took:7.1f} s  {cmd}", file=sys.stderr, flush=True)
    if p.returncode != 0:
        raise SystemExit(f"{cmd!r} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}")
    return took, p.stderr


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", default="HEAD", help="commit to clone (default: HEAD of this repository)")
    ap.add_argument("--docs", action="store_true", help="also render the table of docs/performance.md")
    ap.add_argument(
        "--local-wheels",
        action="store_true",
        help="keep PIP_FIND_LINKS (a local wheel folder) instead of downloading every wheel from the index",
    )
    ap.add_argument("--no-ci", action="store_true", help="skip the pinned-commit install and compile (step 3)")
    args = ap.parse_args(argv)
    commit = subprocess.run(
        ["git", "rev-parse", args.ref], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="hscc-clean-") as tmp:
        root = Path(tmp)
        clone = root / "hscc-trace"
        subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(clone)], check=True)
        subprocess.run(["git", "checkout", "-q", commit], cwd=clone, check=True)
        caches = {k: root / k.lower() for k in ("PIP_CACHE_DIR", "HSCC_TRACE_CACHE_DIR", "XDG_CACHE_HOME")}
        for d in caches.values():
            d.mkdir()
        drop = ("NUMBA_CACHE_DIR", "VIRTUAL_ENV", "PYTHONPATH") + (() if args.local_wheels else ("PIP_FIND_LINKS",))
        env = {k: v for k, v in os.environ.items() if k not in drop}
        env.update({k: str(v) for k, v in caches.items()})
        env.pop("HSCC_TRACE_FIRST_USE", None)
        before = load()
        t_install, _ = timed(INSTALL, clone, env)
        t_analyze, err = timed(f". .venv/bin/activate && {ANALYZE}", clone, env)
        after = load()
        t_again, _ = timed(f". .venv/bin/activate && {ANALYZE}", clone, env)
        rows += [
            ("install: `" + INSTALL + "`", f"{t_install:.1f}"),
            ("first `analyze` (15 algorithms, report, JSON)", f"{t_analyze:.1f}"),
            ("**README command 1 in all**", f"**{t_install + t_analyze:.1f}**"),
            ("the same `analyze` again", f"{t_again:.1f}"),
        ]
        notices = [ln for ln in err.replace("\r", "\n").splitlines() if "compil" in ln]
        if not args.no_ci:
            pip2 = root / "pip2"
            pip2.mkdir()
            hc2 = root / "hscc2"
            env2 = dict(env, PIP_CACHE_DIR=str(pip2), HSCC_TRACE_CACHE_DIR=str(hc2))
            url = f"hscc-trace @ git+file://localhost{clone}@{commit}"  # (pip wants a host in a git+file URL)
            t_pin, _ = timed(
                f"python3 -m venv {root}/ci-venv && {root}/ci-venv/bin/pip install -q {shlex.quote(url)}", root, env2
            )
            check = f"{root}/ci-venv/bin/hscc-trace check {clone}/samples/reno-bdp/ --expect reno --junit {root}/c.xml"
            t_check0, _ = timed(check, root, env2)
            t_comp, _ = timed(f"{root}/ci-venv/bin/hscc-trace compile", root, env2)
            t_check, _ = timed(check, root, env2)
            t_an2, _ = timed(f"{root}/ci-venv/bin/{ANALYZE}", clone, env2)
            rows += [
                (
                    'CI: pinned-commit install (`pip install "hscc-trace @ git+…@COMMIT"`, pip\'s cache empty)',
                    f"{t_pin:.1f}",
                ),
                (
                    "CI: `hscc-trace check samples/reno-bdp/ --expect reno` right after it (first-use rule)",
                    f"{t_check0:.1f}",
                ),
                ("CI: `hscc-trace compile` (what the workflow runs on a cache miss)", f"{t_comp:.1f}"),
                (
                    "CI: the same `check` after it = a cached run (venv and cache restored; restore time not included)",
                    f"{t_check:.1f}",
                ),
                ("README's `analyze` in that venv after `hscc-trace compile`", f"{t_an2:.1f}"),
                ("**CI first run** as in docs/ci.md: install + compile + check", f"**{t_pin + t_comp + t_check:.1f}**"),
                ("CI first run without the compile step: install + check", f"{t_pin + t_check0:.1f}"),
                (
                    "what the CI caches hold: the venv / the hscc-trace cache folder / pip's cache",
                    f"{du(root / 'ci-venv')} / {du(hc2)} / {du(pip2)} MB",
                ),
            ]
    now = datetime.now(UTC)
    stamp = now.strftime("%Y-%m-%d %H:%M UTC")
    cpu = next(
        (ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines() if "model name" in ln),
        "?",
    )
    lines = [
        f"Run of {stamp}, commit `{commit[:12]}`, {os.cpu_count()} cores ({cpu}), Python "
        f"{sys.version.split()[0]}; wheels {'from a local folder' if args.local_wheels else 'downloaded'}; load average (1/5/15 min) {before} before, {after} after the first analyze.",
        "Command: `python benchmarks/clean_machine.py --docs`.",
        "",
        "| step | wall s |",
        "|---|---:|",
        *(f"| {a} | {b} |" for a, b in rows),
        "",
        "What the first `analyze` printed about compiling (stderr is not a terminal here, so only "
        "what is not a status line): " + ("; ".join(notices) if notices else "nothing") + ".",
    ]
    text = "\n".join(lines)
    print(text)
    out = RESULTS / f"{now:%Y-%m-%dT%H%MZ}-clean-machine.json"
    doc = dict(
        stamp=stamp,
        commit=commit,
        cores=os.cpu_count(),
        cpu=cpu,
        load_before=before,
        load_after=after,
        install_s=round(t_install, 1),
        analyze_s=round(t_analyze, 1),
        readme_s=round(t_install + t_analyze, 1),
        again_s=round(t_again, 1),
        steps=dict(rows),
        compile_notices=notices,
    )
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    out.with_suffix(".md").write_text(text + "\n")
    if args.docs:
        sys.path.insert(0, str(REPO / "benchmarks"))
        import make_table

        make_table.update_doc()
    return 0


if __name__ == "__main__":
    sys.exit(main())
