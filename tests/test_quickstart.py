"""The README's quick start, as a new user runs it: command 1 then command 2, in one fresh clone.

Slow (two installs, a first analysis and part of the suite): marked ``quickstart``, left out of the
default run and run by ``.ci/run`` as its own step. Command 2's final ``python -m pytest`` is
narrowed to a few test files (the whole suite is what .ci/run itself runs); everything else is
the README's text, verbatim.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SMOKE = "tests/test_install.py tests/test_layout.py tests/cli/test_cli_main.py"

pytestmark = pytest.mark.quickstart


def readme_commands() -> list[str]:
    """The shell lines of the README's quick start block (comments dropped)."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"## Quick start\n.*?```sh\n(.*?)```", text, flags=re.S)
    assert block, "README.md has no ```sh block under '## Quick start'"
    return [ln for ln in block.group(1).splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def _env(home: Path) -> dict[str, str]:
    """The caller's environment without its virtual environment, with an empty hscc-trace cache."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "NUMBA_CACHE_DIR")}
    venv = os.environ.get("VIRTUAL_ENV")
    if venv:
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(venv))
    env["HSCC_TRACE_CACHE_DIR"] = str(home / "hscc-cache")
    return env


def test_readme_commands_work_one_after_the_other_in_one_clone(tmp_path: Path) -> None:
    cmds = readme_commands()
    assert len(cmds) == 2 and "hscc-trace analyze" in cmds[0] and cmds[1].rstrip().endswith("python -m pytest")
    if shutil.which("git") is None:
        pytest.fail("git is needed to clone the repository")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
    env = _env(tmp_path)

    first = subprocess.run(["bash", "-c", cmds[0]], cwd=clone, env=env, capture_output=True, text=True, timeout=1800)
    assert first.returncode == 0, first.stderr[-3000:]
    assert (clone / "report.html").stat().st_size > 100_000 and (clone / "results.json").exists()
    flow = json.loads((clone / "results.json").read_text())["captures"][0]["flows"][0]
    # Reno's window is also TCP-LP's, DCTCP's, H-TCP's and CDG's while their own signal is absent
    assert flow["verdict"]["class"] == "behaves as" and flow["verdict"]["name"] == "reno", flow["verdict"]
    # the first run of a small capture does not wait for the event kernels and replay loops to
    # compile (the first-use rule runs them interpreted): none of them was stamped as compiled
    stamps = [p.name for p in (tmp_path / "hscc-cache" / "compiled").glob("*.json")]
    assert not [n for n in stamps if n.startswith(("events.", "replay loop"))], stamps
    # nothing compiled was left inside the installed package (it would shadow the next install)
    site = list((clone / ".venv" / "lib").glob("python3*/site-packages/hscc_trace"))
    left = [p for s in site for p in s.rglob("*") if p.suffix in (".nbi", ".nbc")]
    assert not left, left[:5]

    second = cmds[1].rstrip().removesuffix("python -m pytest") + f"python -m pytest -q -p no:cacheprovider {SMOKE}"
    run = subprocess.run(["bash", "-c", second], cwd=clone, env=env, capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, (run.stdout[-3000:], run.stderr[-3000:])
    assert re.search(r"\d+ passed", run.stdout), run.stdout[-2000:]
