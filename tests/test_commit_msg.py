"""The commit-msg hook (.ci/commit_msg.py, .pre-commit-config.yaml): a subject over 72 characters
is refused with one line on stderr and exit 1; a short one, and the subjects git writes itself or
a rebase folds away (merge, revert, fixup!/squash!/amend!), pass whatever their length."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HOOK = REPO / ".ci" / "commit_msg.py"
_spec = importlib.util.spec_from_file_location("commit_msg", HOOK)
commit_msg = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(commit_msg)


def run(tmp_path: Path, message: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The hook's exit code and stderr on ``message`` (in process: what git runs is below)."""
    f = tmp_path / "COMMIT_EDITMSG"
    f.write_text(message)
    rc = commit_msg.main([str(f)])
    return rc, capsys.readouterr().err


LONG = "Add " + "x" * 69  # 73 characters


@pytest.mark.parametrize(
    "message",
    [
        "Add group metrics to results JSON\n\nmeasured: 0.41 s → 0.38 s on replica-5M\n",
        "A" * 72 + "\n",  # exactly the limit
        "# Please enter the commit message (a comment git strips)\n\nFix the reader\n",
        f"Merge branch 'h-house' into main; {LONG}\n",
        f'Revert "{LONG}"\n',
        f"fixup! {LONG}\n",
        f"squash! {LONG}\n",
        f"amend! {LONG}\n",
    ],
)
def test_accepted(tmp_path: Path, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(tmp_path, message, capsys) == (0, "")


def test_a_long_subject_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert len(LONG) == 73
    rc, err = run(tmp_path, f"\n{LONG}\n\nthe body may be as long as it likes " + "y" * 200 + "\n", capsys)
    assert rc == 1 and err.count("\n") == 1 and "73 characters, at most 72" in err


def test_the_script_as_git_runs_it(tmp_path: Path) -> None:
    """A process, as git's hook runs it: the bad message exits 1, the good one 0."""
    bad, good = tmp_path / "bad", tmp_path / "good"
    bad.write_text(LONG + "\n")
    good.write_text("Fix the reader\n")
    rcs = [subprocess.run([sys.executable, str(HOOK), str(f)], capture_output=True).returncode for f in (bad, good)]
    assert rcs == [1, 0]


def test_an_unreadable_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = commit_msg.main([str(tmp_path / "missing")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "missing" in err


def test_the_hook_is_declared_for_the_commit_msg_stage() -> None:
    cfg = (REPO / ".pre-commit-config.yaml").read_text()
    assert "entry: python3 .ci/commit_msg.py" in cfg and "stages: [commit-msg]" in cfg
    assert "default_install_hook_types: [pre-commit, commit-msg]" in cfg
