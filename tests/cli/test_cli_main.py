"""hscc_trace.cli.main: errors become one line on stderr with a defined exit code."""

from __future__ import annotations

import sys

import pytest

from hscc_trace import cli
from hscc_trace.errors import InputError


def _run_main(monkeypatch, exc: BaseException) -> None:
    def boom() -> None:
        raise exc

    monkeypatch.setattr(cli, "app", boom)
    cli.main()


def test_input_error_is_one_line_exit_2(monkeypatch, capsys):
    with pytest.raises(SystemExit) as ei:
        _run_main(monkeypatch, InputError("x.pcap: not a capture file"))
    assert ei.value.code == 2
    err = capsys.readouterr().err
    assert err == "hscc-trace: error: x.pcap: not a capture file\n"


def test_unexpected_exception_is_one_line_exit_70(monkeypatch, capsys):
    monkeypatch.delenv("HSCC_TRACE_DEBUG", raising=False)
    with pytest.raises(SystemExit) as ei:
        _run_main(monkeypatch, ZeroDivisionError("division by zero"))
    assert ei.value.code == 70
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "internal error: ZeroDivisionError: division by zero" in err


def test_unexpected_exception_propagates_when_debugging(monkeypatch):
    monkeypatch.setenv("HSCC_TRACE_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        _run_main(monkeypatch, ZeroDivisionError("division by zero"))


def test_closed_output_pipe_exits_1_without_a_message():
    """`hscc-trace flows FILE | head -1`: the reader leaves after one line; the command ends
    with exit code 1 and nothing on stderr (as Click's standalone mode and tcpdump do), in every
    command, not only `flows`."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    cap = Path(__file__).resolve().parents[2] / "samples" / "reno-bdp" / "capture.pcap"
    r, w = os.pipe()
    os.close(r)  # the reader is gone before the command writes anything: every write fails (EPIPE)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "hscc_trace", "events", str(cap), "--flow", "0", "--kind", "acks", "-o", "-"],
            stdout=w,
            stderr=subprocess.PIPE,
            timeout=300,
        )
    finally:
        os.close(w)
    assert proc.returncode == 1
    assert proc.stderr == b""


def test_usage_error_class_found_through_public_typer():
    import typer

    cls = cli._click_exception(typer)
    assert cls.__name__ == "ClickException" and issubclass(typer.BadParameter, cls)


def test_main_runs_after_a_command_module_was_imported(monkeypatch, capsys):
    # importing a command module (here cli.corpus_cmd, as a test or a script may) imports the
    # module that holds the Typer object; `cli.app` must still be the Typer application (it was
    # the submodule of that name, once), and main() must run it
    import typer

    import hscc_trace.cli.corpus_cmd  # noqa: F401
    from hscc_trace import cli
    from hscc_trace.cli import app

    assert isinstance(app, typer.Typer) and cli.app is app

    monkeypatch.setattr(sys, "argv", ["hscc-trace", "version"])
    with pytest.raises(SystemExit) as ei:
        cli.main()
    assert ei.value.code in (0, None), capsys.readouterr().err
    assert "kernels: numba " in capsys.readouterr().out  # what `hscc-trace version` prints


def test_flows_goes_through_the_one_grammar(monkeypatch):
    """`hscc-trace flows FILE` through main() is parsed by the Typer application like every
    other command (one argument grammar): the options reach the command as Typer parsed them."""
    from hscc_trace.cli import flows_cmd

    got: list[tuple] = []
    monkeypatch.setattr(flows_cmd, "run", lambda *a: got.append(a))
    monkeypatch.setattr(sys, "argv", ["hscc-trace", "flows", "--filter=tcp", "--json", "x.pcap"])
    with pytest.raises(SystemExit) as ei:
        cli.main()
    assert ei.value.code == 0 and got == [("x.pcap", "tcp", True)]
