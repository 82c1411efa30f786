"""Shared test paths and the rule for tests that cannot run.

The external captures nobody here wrote live beside the repository, in
``<repo>/../shared/captures/external`` (see its PROVENANCE.md); tests find them there and
nowhere else. Absent, their tests skip with that reason. A test that cannot run for another
reason — the folder is there but the files a parity test compares are not, a tool is missing —
fails instead of skipping when ``CI`` is set, so a CI run never goes green by checking nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXTERNAL = REPO.parent / "shared" / "captures" / "external"
IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def cannot_run(reason: str) -> None:
    """Skip with ``reason``; fail with it under CI."""
    if IN_CI:
        pytest.fail(f"{reason} (CI is set: a test that cannot run fails rather than skips)")
    pytest.skip(reason)


def external(*names: str) -> Path:
    """The external capture folder, after checking ``names`` exist in it: skip when the folder is
    absent; when it is present but a named file is not, :func:`cannot_run`."""
    if not EXTERNAL.is_dir():
        pytest.skip(f"external captures not present ({EXTERNAL})")
    missing = [n for n in names if not (EXTERNAL / n).exists()]
    if missing:
        cannot_run(f"external capture(s) missing from {EXTERNAL}: {', '.join(missing)}")
    return EXTERNAL


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long tests (``@pytest.mark.xdist_group("long")``: minutes of one core in a child
    process) go first, so that under pytest-xdist (``-n auto --dist loadgroup`` in pyproject.toml)
    one worker starts them at once while the other workers take the rest of the suite, instead of
    one of them starting last and running alone at the end."""
    first = [it for it in items if any(m.args == ("long",) for m in it.iter_markers("xdist_group"))]
    if first:
        items[:] = first + [it for it in items if it not in first]
