"""The QUIC report page (reports/quic_html.py) in Debian's headless chromium, as the capture
report's browser test (test_report_browser.py) drives it: the page renders with its SVG chart."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import cannot_run
from test_report_browser import CHROMIUM, FLAGS

from hscc_trace import api

QUIC = Path(__file__).resolve().parents[2] / "samples" / "quic"


@pytest.mark.browser
def test_quic_report_renders_in_chromium(tmp_path: Path) -> None:
    if CHROMIUM is None:
        cannot_run("no chromium binary (apt-get install chromium; .ci/run installs it)")
    q = str(QUIC / "aioquic-cubic-loss.qlog.gz")
    doc = api.qlog_summary(q, ("cubic",), ("aioquic",))
    page = api.qlog_report([(q, doc, None)], tmp_path / "q.html", ["cubic"])
    r = subprocess.run(
        [
            str(CHROMIUM),
            *(f for f in FLAGS if f != "--remote-debugging-pipe"),
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    dom = r.stdout
    # the browser parsed the page: the logged window and the 2 replays (cubic, aioquic and rfc) drawn
    assert dom.count("<polyline") == 3 and 'class="logged"' in dom
    assert "vantage: server" in dom and "open-loop" in dom
