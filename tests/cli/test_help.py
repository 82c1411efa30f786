"""Every help text renders whole: Typer's rich markup must not eat a bracketed word such as
``[tool.hscc-trace]`` or ``[check]`` (it takes ``[word]`` for a style tag and drops it)."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from hscc_trace.cli import app


def _commands() -> dict:
    return dict(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def _words(text: str) -> str:
    return re.sub(r"[\s│╭╮╰╯─]+", " ", text)


@pytest.mark.parametrize("name", sorted(_commands()))
def test_help_keeps_every_bracketed_word(name: str) -> None:
    cmd = _commands()[name]
    out = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "300", "NO_COLOR": "1"})
    assert out.exit_code == 0, out.output
    shown = _words(out.output)
    texts = [getattr(p, "help", None) or "" for p in cmd.params]
    texts.append(cmd.help or "")
    for text in texts:
        for word in re.findall(r"\\?\[([\w.\-]+)\]", text):
            if word in ("cyan", "bold", "dim", "italic"):  # our own style tags
                continue
            assert f"[{word}]" in shown, f"hscc-trace {name} --help drops [{word}] from: {text!r}"
