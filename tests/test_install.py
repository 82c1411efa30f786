"""replay/ and reports/ install under the hscc_trace namespace, never as top-level modules.

Both a regular (wheel-style) and an editable install are made into throw-away virtualenvs with
no dependencies (the packages' __init__ modules import nothing heavy) and imported from a
directory outside the repository.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROBE = (
    "import importlib.util, hscc_trace, hscc_trace.replay, hscc_trace.reports;"
    "assert importlib.util.find_spec('replay') is None, 'top-level replay installed';"
    "assert importlib.util.find_spec('reports') is None, 'top-level reports installed';"
    "print(hscc_trace.replay.__file__)"
)


def _make_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(path)
    return path / "bin" / "python"


def _pip(py: Path, *args: str) -> None:
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", *args],
        check=True,
        cwd=REPO,
        capture_output=True,
        text=True,
    )


@pytest.fixture(scope="module")
def has_setuptools() -> None:
    pytest.importorskip("setuptools")


@pytest.mark.parametrize("editable", [False, True], ids=["regular", "editable"])
def test_install_imports_under_namespace(tmp_path: Path, editable: bool) -> None:
    py = _make_venv(tmp_path / "venv")
    # The build backend (pyproject.toml's build requirement) must be importable inside the fresh venv.
    import tomllib

    backend = [
        r
        for r in tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"]
        if r.startswith("setuptools")
    ]
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", *backend, "wheel"], check=True, capture_output=True, text=True
    )
    _pip(py, *(["-e", "."] if editable else ["."]))
    out = subprocess.run([str(py), "-c", PROBE], check=True, cwd=tmp_path, capture_output=True, text=True)
    replay_file = Path(out.stdout.strip())
    if editable:
        assert replay_file == REPO / "replay" / "__init__.py"
    else:
        assert "site-packages" in replay_file.parts
        assert replay_file.parent.name == "replay" and replay_file.parent.parent.name == "hscc_trace"
        site = replay_file.parents[2]
        assert not (site / "replay").exists() and not (site / "reports").exists()


def test_python_version() -> None:
    assert sys.version_info >= (3, 11)
