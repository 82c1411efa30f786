"""numba's cache of the project's kernels goes to the user cache folder, also when the library is
imported by a program (not only from the ``hscc-trace`` command): never beside the installed
modules, where it would outlive an uninstall and shadow a later install (issue 16)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import hscc_trace

PKG = Path(hscc_trace.__file__).resolve().parent

# compiles (and caches) one module-level kernel of the events code, then reports numba's setting
CODE = """
import numpy as np, numba
from hscc_trace.events import ranges
L = np.zeros(4, np.int64); R = np.zeros(4, np.int64)
print(ranges.insert(L, R, 0, 10, 20), repr(numba.config.CACHE_DIR))
"""


def _run(tmp_path: Path, numba_dir: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["HSCC_TRACE_CACHE_DIR"] = str(tmp_path / "cache")
    if numba_dir is not None:
        env["NUMBA_CACHE_DIR"] = numba_dir
    return subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, timeout=600)


def _written_beside_sources(since: float) -> list[Path]:
    return [p for p in PKG.rglob("__pycache__/*.nb[ic]") if p.stat().st_mtime >= since]


def test_a_program_importing_the_library_caches_in_the_user_cache_folder(tmp_path):
    start = time.time() - 1
    run = _run(tmp_path, None)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["(1,", "10)", "''"]  # one range added, 10 bytes; setting put back
    cached = list((tmp_path / "cache" / "numba").rglob("ranges.insert-*.nbi"))
    assert cached, sorted(p.name for p in (tmp_path / "cache").rglob("*"))
    assert _written_beside_sources(start) == []


def test_numba_cache_dir_set_by_the_user_wins(tmp_path):
    user = tmp_path / "mine"
    run = _run(tmp_path, str(user))
    assert run.returncode == 0, run.stderr[-2000:]
    assert list(user.rglob("ranges.insert-*.nbi"))
    assert not (tmp_path / "cache" / "numba").exists()
