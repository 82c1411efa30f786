"""The report in a real headless browser (Debian's chromium), driven over the DevTools protocol.

Chromium is started with ``--remote-debugging-pipe`` (DevTools protocol on file descriptors 3/4,
NUL-separated JSON), so nothing beyond the standard library is needed. Every request the page
makes is intercepted: only the report's own file:// URL may load, anything else is failed and
counted. The test asserts no console error or uncaught exception, every figure drawn (each
plotly div has an SVG with trace groups), no request left the page, and records the render time
(not asserted here: speed targets live in benchmarks/ — docs/report.md has the measured figures).
Screenshots (the first screen and the first flow section) go to tests/artifacts/ (gitignored).

Skipped, with the reason shown, when no chromium binary is installed (.ci/run installs it).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import IN_CI, cannot_run
from synthetic_analysis import make_analysis

from hscc_trace.reports import write_report

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
CHROMIUM = next(
    (
        p
        for p in (
            os.environ.get("HSCC_CHROMIUM"),
            shutil.which("chromium"),
            "/usr/bin/chromium",
            shutil.which("chromium-browser"),
            shutil.which("google-chrome"),
        )
        if p and Path(p).exists()
    ),
    None,
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
]


class Browser:
    """A minimal DevTools-protocol client over chromium's debugging pipe."""

    def __init__(self, exe: str, width: int = 1400, height: int = 900) -> None:
        self.profile = tempfile.mkdtemp(prefix="hscc-chromium-")
        to_child_r, self._w = os.pipe()
        self._r, from_child_w = os.pipe()

        def child_fds() -> None:  # the protocol pipe must be fds 3 (commands in) and 4 (replies out)
            # copy both ends above 10 first, so neither dup2 can clobber the other, and dup2 (which
            # clears close-on-exec) is never a no-op on an fd that is already 3 or 4
            a = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"],
            preexec_fn=child_fds,
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._id = 0
        self._lock = threading.Lock()
        self._replies: dict[int, dict[str, Any]] = {}
        self._cond = threading.Condition()
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None
        self.handlers: dict[str, Any] = {}
        threading.Thread(target=self._reader, daemon=True).start()
        self.width, self.height = width, height

    def _reader(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._r, 1 << 20)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with self._cond:
                    if "id" in msg:
                        self._replies[msg["id"]] = msg
                    else:
                        self.events.append(msg)
                        h = self.handlers.get(msg.get("method", ""))
                        if h is not None:
                            threading.Thread(target=h, args=(msg.get("params", {}),), daemon=True).start()
                    self._cond.notify_all()

    def send(
        self, method: str, params: dict[str, Any] | None = None, *, session: bool = True, timeout: float = 60.0
    ) -> dict[str, Any]:
        with self._lock:
            self._id += 1
            mid = self._id
        msg: dict[str, Any] = {"id": mid, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cond:
            while mid not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no reply to {method}")
                self._cond.wait(left)
            reply = self._replies.pop(mid)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def attach_page(self) -> None:
        targets = self.send("Target.getTargets", session=False)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.send(
            "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}, session=False
        )["sessionId"]

    def evaluate(self, expr: str, timeout: float = 60.0) -> Any:
        r = self.send(
            "Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True}, timeout=timeout
        )
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluate failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_for(self, expr: str, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = self.evaluate(expr)
            if v:
                return v
            time.sleep(0.05)
        raise TimeoutError(f"timed out waiting for {expr}")

    def screenshot(self, path: Path, *, full: bool) -> None:
        import base64

        params: dict[str, Any] = {"format": "png"}
        if full:
            h = min(int(self.evaluate("document.documentElement.scrollHeight")), 16000)
            self.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": self.width, "height": h, "deviceScaleFactor": 1, "mobile": False},
            )
            time.sleep(0.3)
        data = self.send("Page.captureScreenshot", params)["data"]
        path.write_bytes(base64.b64decode(data))
        if full:
            self.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
            )

    def screenshot_elements(self, selector: str, prefix: Path, limit: int = 40) -> int:
        """One PNG per matching element (clipped from the full page), for looking at figures."""
        import base64

        rects = self.evaluate(f"""Array.from(document.querySelectorAll({json.dumps(selector)})).slice(0, {limit})
            .map(e => {{ const r = e.getBoundingClientRect();
                         return [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height]; }})""")
        for i, (x, y, w, h) in enumerate(rects):
            if w < 1 or h < 1:
                continue
            data = self.send(
                "Page.captureScreenshot",
                {
                    "format": "png",
                    "captureBeyondViewport": True,
                    "clip": {"x": x, "y": y, "width": w, "height": h, "scale": 1},
                },
            )["data"]
            Path(f"{prefix}-{i:02d}.png").write_bytes(base64.b64decode(data))
        return len(rects)

    def close(self) -> None:
        try:
            self.send("Browser.close", session=False, timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)


def open_report(
    report: Path,
    *,
    shots: str | None = None,
    parts: bool = False,
    timeout: float = 60.0,
    exe: str | None = None,
    script: str | None = None,
) -> dict[str, Any]:
    """Load ``report`` in headless chromium and return what happened (see the module docstring).
    ``script``: a JavaScript expression (a promise is awaited) run once every figure is drawn, before
    the checks of the linked axes and the legend; its value is returned as ``script``."""
    exe = exe or CHROMIUM
    assert exe, "no chromium"
    b = Browser(exe)
    page_url = report.resolve().as_uri()
    requests: list[str] = []
    blocked: list[str] = []
    try:
        b.attach_page()

        def paused(p: dict[str, Any]) -> None:
            url = p["request"]["url"]
            if url == page_url:
                b.send("Fetch.continueRequest", {"requestId": p["requestId"]})
            else:
                blocked.append(url)
                b.send("Fetch.failRequest", {"requestId": p["requestId"], "errorReason": "BlockedByClient"})

        b.handlers["Fetch.requestPaused"] = paused
        b.handlers["Network.requestWillBeSent"] = lambda p: requests.append(p["request"]["url"])
        for dom in ("Page", "Runtime", "Log", "Network", "Performance"):
            b.send(f"{dom}.enable")

        def main_thread_s() -> float:  # CPU time of the page's main thread: robust to other load
            return {m["name"]: m["value"] for m in b.send("Performance.getMetrics")["metrics"]}.get("ThreadTime", 0.0)

        b.send("Fetch.enable", {"patterns": [{"urlPattern": "*"}]})
        b.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": b.width, "height": b.height, "deviceScaleFactor": 1, "mobile": False},
        )
        cpu0 = main_thread_s()
        t_nav = time.monotonic()
        b.send("Page.navigate", {"url": page_url})
        status = b.wait_for(
            "window.hsccStatus && (window.hsccStatus.done || window.hsccStatus.error) && window.hsccStatus", timeout
        )
        wall = time.monotonic() - t_nav
        thread_s = main_thread_s() - cpu0
        # Large reports draw signal panels as they are scrolled to; draw every remaining one now.
        b.evaluate("window.hsccRenderAll ? window.hsccRenderAll() : 0", timeout=timeout)
        scripted = b.evaluate(script, timeout=timeout) if script else None
        status = {
            **b.evaluate("window.hsccStatus"),
            "scheduled_ms": status["ms"],
            "onDemand": status.get("onDemand", 0),
        }
        figs = b.evaluate("""(() => { const d = Array.from(document.querySelectorAll('div.fig'));
            return {divs: d.length,
                    plots: d.filter(x => x.classList.contains('js-plotly-plot')).length,
                    drawn: d.filter(x => x.querySelector('svg.main-svg') &&
                                         x.querySelectorAll('.scatterlayer .trace, .barlayer .trace').length > 0).length,
                    flows: document.querySelectorAll('section.flow').length}; })()""")
        if shots:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            b.screenshot(ARTIFACTS / f"{shots}-top.png", full=False)
            b.screenshot_elements("section.flow", ARTIFACTS / f"{shots}-flow", limit=1)  # the first flow, whole
            if parts:  # one PNG per part of the first flow, for looking at the design
                b.screenshot_elements("section.flow:first-of-type > *:not(.fig), div.fig", ARTIFACTS / f"{shots}-part")
        linked = None
        if figs["drawn"] >= 2 and figs["flows"]:  # (a report; the census has no flow sections)
            # zoom the first figure of the first flow; every figure of that flow must follow
            linked = b.evaluate("""(async () => {
                const divs = Array.from(document.querySelector('section.flow').querySelectorAll('div.fig'));
                const r = divs[0].layout.xaxis.range;
                const want = [r[0] + (r[1] - r[0]) * 0.25, r[0] + (r[1] - r[0]) * 0.5];
                await Plotly.relayout(divs[0], {'xaxis.range': want});
                await new Promise(res => setTimeout(res, 500));
                return divs.map(d => { const rr = d.layout.xaxis.range;
                                       return Math.abs(rr[0] - want[0]) < 1e-9 && Math.abs(rr[1] - want[1]) < 1e-9; });
            })()""")
        legend = None
        if figs["drawn"] and figs["flows"]:
            # the HTML legend beside each figure: one box per panel, an entry per named series; a click
            # on a shown entry hides its series (and a second click shows them again)
            legend = b.evaluate("""(async () => {
                const div = document.querySelector('div.fig');
                const boxes = div.parentNode.querySelectorAll(':scope > .legend');
                const hidden = () => div.data.filter(t => t.visible === false || t.visible === 'legendonly').length;
                const item = Array.from(div.parentNode.querySelectorAll('.legend .item')).find(e => !e.classList.contains('off'));
                const before = hidden();
                item.click();
                await new Promise(res => setTimeout(res, 200));
                const after = hidden(), off = item.classList.contains('off');
                item.click();
                await new Promise(res => setTimeout(res, 200));
                return {boxes: boxes.length, panels: div.parentNode.querySelectorAll('.legend').length,
                        hid: after > before && off, restored: hidden() === before && !item.classList.contains('off')};
            })()""")
        time.sleep(0.1)
        errors = []
        for ev in list(b.events):
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                errors.append(
                    "console: " + " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                )
            elif m == "Runtime.exceptionThrown":
                errors.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:500])
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                errors.append("log: " + p["entry"].get("text", ""))
        return {
            "status": status,
            "wall_s": wall,
            "thread_s": thread_s,
            "figures": figs,
            "errors": errors,
            "linked": linked,
            "legend": legend,
            "requests": [u for u in requests if u != page_url],
            "blocked": blocked,
            "alert": b.evaluate("window.__xss === true"),
            "script": scripted,
        }
    finally:
        b.close()


#: skips without chromium, except under CI, where the test runs and fails (conftest.cannot_run)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None and not IN_CI,
    reason="no chromium binary (apt-get install chromium; .ci/run installs it) — the browser test cannot run",
)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    # Two flows, 40 k ACKs each: enough to be decimated, small enough to stay fast. The file
    # name carries markup that must come out as text (and the page sets window.__xss if not).
    a = make_analysis(
        n_flows=2, n_acks=40_000, path='<img src=x onerror="window.__xss=true"><script>window.__xss=true</script>.pcap'
    )
    path = tmp_path_factory.mktemp("browser") / "report.html"
    return path, write_report(a, path)


@pytest.mark.browser
@needs_chromium
def test_report_renders_offline_in_chromium(report: tuple[Path, Any]) -> None:
    if CHROMIUM is None:
        cannot_run("no chromium binary (apt-get install chromium; .ci/run installs it)")
    path, info = report
    res = open_report(path, shots="synthetic")
    st = res["status"]
    assert st["error"] is None, st["error"]
    assert res["errors"] == []
    assert res["requests"] == [] and res["blocked"] == []
    assert res["figures"]["divs"] == info.figures == st["expected"]
    assert res["figures"]["plots"] == info.figures
    assert res["figures"]["drawn"] == info.figures
    assert st["rendered"] == info.figures
    assert res["alert"] is False
    assert res["linked"] and all(res["linked"]), res["linked"]  # zooming one figure moved every figure of the flow
    assert res["legend"] == {"boxes": 4, "panels": 4, "hid": True, "restored": True}, res[
        "legend"
    ]  # main figure: 4 panels
    print(
        f"\nreport {info.size / 1e6:.2f} MB, {info.figures} figures drawn in {st['ms'] / 1000:.2f} s "
        f"(page load to last figure {st['sinceNavigation'] / 1000:.2f} s)"
    )


@pytest.mark.browser
@needs_chromium
def test_report_blocks_a_request_that_a_page_would_make(tmp_path: Path) -> None:
    """The harness itself: a page that fetches an image is caught (so a pass above means something)."""
    if CHROMIUM is None:
        cannot_run("no chromium binary (apt-get install chromium; .ci/run installs it)")
    page = tmp_path / "leak.html"
    page.write_text(
        '<!DOCTYPE html><html><body><img src="http://192.0.2.1/x.png">'
        "<script>window.hsccStatus={done:true,error:null,rendered:0,expected:0,ms:0,sinceNavigation:0}"
        "</script></body></html>"
    )
    res = open_report(page)
    assert any(u.startswith("http://192.0.2.1/") for u in res["requests"] + res["blocked"])


SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "reno-bdp" / "capture.pcap"

# Zoom the main figure of the first flow to [A, B] and wait until every figure of the flow has been
# re-drawn; then, per trace of the window panel (the figure's first legend), the points drawn inside
# the window (SVG markers, one per event once few enough) and their frame numbers (the hover's
# customdata); the segment bars inside the window; the rows of the packet list.
ZOOM_JS = r"""(async () => {
  const div = document.querySelector('section.flow div.fig[data-panel="main"]');
  const [A, B] = [%r, %r];
  const before = window.hsccStatus.zooms;
  await Plotly.relayout(div, {'xaxis.range': [A, B]});
  const t0 = performance.now();
  while (window.hsccStatus.zooms === before && performance.now() - t0 < 30000) await new Promise(r => setTimeout(r, 50));
  await new Promise(r => setTimeout(r, 100));
  const traces = {};
  for (const g of div.querySelectorAll('.scatterlayer .trace')) {
    const cd = g.__data__, tr = cd && cd[0] && cd[0].trace;
    if (!tr || tr.legend !== 'legend' || tr.visible !== true) continue;
    const pts = Array.from(g.querySelectorAll('path.point')).filter(p => p.__data__ && p.__data__.x >= A && p.__data__.x <= B);
    const data = div.data[tr.index];
    const frames = [], ys = [], bytes = [];
    for (let i = 0; i < data.x.length; i++) {
      if (!(data.x[i] >= A && data.x[i] <= B)) continue;
      const c = data.customdata && data.customdata[i];
      frames.push(Array.isArray(c) ? c[0] : c);
      bytes.push(Array.isArray(c) ? c[1] : null);
      ys.push(data.y[i]);
    }
    traces[tr.name] = {points: pts.length, inWindow: frames.length, frames, ys, bytes, mode: data.mode};
  }
  const bars = {};
  for (const tr of div.data) {
    if (!/^(data segment|retransmission|fast retransmission|spurious retransmission|out of order|SACK block)$/.test(tr.name)) continue;
    let n = 0;
    for (let i = 0; i < tr.x.length; i++) if (tr.x[i] >= A && tr.x[i] <= B) n++;
    bars[tr.name] = n / 2;  // each bar: its bottom and top at one time, then a gap
  }
  // Compound TCP's stack in the signals figure: the loss-based part, dwnd and win at the same ACKs
  const sig = document.querySelector('section.flow div.fig[data-panel="signals"]');
  const stack = {};
  for (const tr of (sig ? sig.data : [])) {
    if (/^(cwnd_loss \(loss-based part\)|dwnd \(delay-based part, stacked on it\)|win)$/.test(tr.name))
      stack[tr.name] = {x: Array.from(tr.x).filter(x => x >= A && x <= B), y: Array.from(tr.y).filter((_, i) => tr.x[i] >= A && tr.x[i] <= B)};
  }
  // a series hidden at first, shown from the legend while zoomed in, is drawn in detail too
  const item = Array.from(div.parentNode.querySelectorAll('.legend .item')).find(e => e.textContent === 'actual: SACK-aware pipe');
  const z0 = window.hsccStatus.zooms;
  item.click();
  while (window.hsccStatus.zooms === z0 && performance.now() - t0 < 30000) await new Promise(r => setTimeout(r, 50));
  const pipe = div.data.find(t => t.name === 'actual: SACK-aware pipe');
  let pipeIn = 0;
  for (let i = 0; i < pipe.x.length; i++) if (pipe.x[i] >= A && pipe.x[i] <= B) pipeIn++;
  const rows = Array.from(document.querySelectorAll('section.flow .packets table.packet-list tbody tr'))
    .map(r => Number(r.cells[0].textContent));
  return {zooms: z0 - before, range: div.layout.xaxis.range, traces, bars, rows, stack, pipeIn,
          others: Array.from(document.querySelectorAll('section.flow div.fig')).map(d => d.layout.xaxis.range)};
})()"""


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Any]:
    """The report of the bundled sample samples/reno-bdp (Linux Reno at the BDP, losses from queue
    overflow), with three algorithms: small enough to be quick, Compound TCP for its stacked windows."""
    from hscc_trace import api

    a = api.analyze([SAMPLE], api.AnalyzeOptions(["reno", "cubic", "compound"])).analysis
    path = tmp_path_factory.mktemp("sample") / "report.html"
    return path, write_report(a, path), a


@pytest.fixture(scope="module")
def census_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A census of a small real dataset, built without a cluster (each capture analyzed by the
    corpus task function in this process): three samples, one capture whose file name carries
    markup, and a file that is not a capture (an error row)."""
    from hscc_trace.corpus import census, runner

    tmp = tmp_path_factory.mktemp("census")
    repo = Path(__file__).resolve().parents[2]
    items = []
    for name, src in (
        ("reno-bdp.pcap", "reno-bdp"),
        ("cubic-loss.pcap", "cubic-loss"),
        ('<img src=x onerror="window.__xss=true">.pcap', "bbr-vs-cubic"),
    ):
        shutil.copy(repo / "samples" / src / "capture.pcap", tmp / name)
        items.append(str(tmp / name))
    (tmp / "junk.pcap").write_bytes(b"not a capture\n")
    items.append(str(tmp / "junk.pcap"))
    for it in items:
        runner.analyze_capture(it, str(tmp / "ds"), ["reno", "cubic"], None)
    return census.write(tmp / "ds", tmp / "census.html")


@pytest.mark.browser
@needs_chromium
def test_zoom_to_50_ms_around_a_loss_draws_every_event(sample_report: tuple[Path, Any, Any]) -> None:
    if CHROMIUM is None:
        cannot_run("no chromium binary (apt-get install chromium; .ci/run installs it)")
    import numpy as np

    from hscc_trace.reports.figures import flow_t0

    path, info, a = sample_report
    fr = a.captures[0].results[0]
    ev = fr.events
    t0 = flow_t0(fr)
    assert info.full_resolution_flows == 1 and ev.episodes.height >= 1
    # a 50 ms window starting 20 ms before the second loss episode began (the first retransmission),
    # nudged so that no event lies within 2 µs of an edge (times are drawn to 1 µs)
    ta = (ev.acks["ts_ns"].to_numpy() - t0) / 1e9
    ts = (ev.segments["ts_ns"].to_numpy() - t0) / 1e9
    every = np.concatenate((ta, ts))
    start = (int(ev.episodes["start_ns"][1]) - t0) / 1e9 - 0.020
    while np.any(np.abs(every - start) < 2e-6) or np.any(np.abs(every - start - 0.05) < 2e-6):
        start += 5e-6
    A, B = start, start + 0.050
    acks_in = np.flatnonzero((ta >= A) & (ta <= B))
    frames_in = sorted(ev.acks["frame"].to_numpy()[acks_in].tolist())
    kinds = ev.segments["kind"].cast(pl.String).to_numpy()
    segs_in = (ts >= A) & (ts <= B)
    assert 20 <= len(acks_in) <= 400 and (segs_in & (kinds != "new")).any()  # the window holds a retransmission

    res = open_report(path, script=ZOOM_JS % (A, B))
    assert res["status"]["error"] is None and res["errors"] == []
    assert res["requests"] == [] and res["blocked"] == []  # no network request, zoomed in included
    z = res["script"]
    assert z["zooms"] == 1 and z["range"] == [A, B]
    assert all(r == [A, B] for r in z["others"])  # the flow's other figure followed
    tr = z["traces"]
    ack_series = ["actual: bytes in flight", "reno cwnd (behaves as)", "reno cwnd", "cubic cwnd", "compound cwnd"]
    ack_series = [n for n in ack_series if n in tr] + [n for n in tr if n.endswith(" cwnd") and n not in ack_series]
    assert "actual: bytes in flight" in tr and len(ack_series) >= 4, sorted(tr)
    for name in ack_series:
        # one point drawn (an SVG marker) per ACK in the window, each traced to that ACK's frame
        assert tr[name]["points"] == len(acks_in), (name, tr[name]["points"], len(acks_in))
        assert sorted(tr[name]["frames"]) == frames_in, name
    n_pipe = int(ev.acks["pipe"].is_not_null().to_numpy()[acks_in].sum())
    assert z["pipeIn"] == n_pipe > 0  # shown after the zoom, drawn event by event all the same
    # the values drawn are the events': bytes in flight in packets (to 0.01), and exactly in the hover
    mss = ev.mss
    out_of = dict(zip(ev.acks["frame"].to_list(), ev.acks["outstanding"].to_list()))
    act = tr["actual: bytes in flight"]
    assert act["bytes"] == [out_of[f] for f in act["frames"]]
    assert np.allclose(act["ys"], [out_of[f] / mss for f in act["frames"]], atol=0.01)
    st = z["stack"]  # Compound TCP zoomed in: cwnd_loss + dwnd = win at every ACK of the window
    assert set(st) == {"cwnd_loss (loss-based part)", "dwnd (delay-based part, stacked on it)", "win"}
    xs = [v["x"] for v in st.values()]
    assert xs[0] == xs[1] == xs[2] and len(xs[0]) == len(acks_in)
    loss, dwnd = st["cwnd_loss (loss-based part)"]["y"], st["dwnd (delay-based part, stacked on it)"]["y"]
    assert np.allclose(np.add(loss, dwnd), st["win"]["y"], atol=0.02)
    for kind in set(kinds[segs_in]):  # one bar per data segment in the window, of each kind
        name = "data segment" if kind == "new" else kind.replace("_", " ")
        assert z["bars"][name] == int((segs_in & (kinds == kind)).sum()), (name, z["bars"])
    # the packet list follows the zoom: every ACK and data segment of the window, by frame
    seg_frames = ev.segments["frame"].to_numpy()[segs_in].tolist()
    assert z["rows"] == sorted(frames_in + seg_frames)


@pytest.mark.browser
@needs_chromium
def test_census_renders_offline_in_chromium(census_page: Path) -> None:
    if CHROMIUM is None:
        cannot_run("no chromium binary (apt-get install chromium; .ci/run installs it)")
    res = open_report(census_page, shots="census")
    st = res["status"]
    assert st["error"] is None and st["done"] is True, st
    assert res["errors"] == []
    assert res["requests"] == [] and res["blocked"] == []
    # five figures: verdict counts, goodput, RTT, episodes per minute and Jain's index of the
    # bottleneck groups (bbr-vs-cubic's two flows) — each drawn with its bars
    assert res["figures"]["divs"] == st["expected"] == st["rendered"] == 5
    assert res["figures"]["plots"] == res["figures"]["drawn"] == 5
    assert res["alert"] is False
    print(f"\ncensus {census_page.stat().st_size / 1e6:.2f} MB drawn in {st['ms'] / 1000:.2f} s")


def _measure(argv: list[str]) -> None:  # pragma: no cover - run by hand for docs/report.md
    """``python tests/reports/test_report_browser.py FLOWS ACKS DURATION_S [RUNS]``: size and render time
    of the report of a synthetic capture (each flow has ACKS ACKs and as many data segments)."""
    import statistics
    import sys

    n_flows, n_acks, dur = int(argv[0]), int(argv[1]), float(argv[2])
    runs = int(argv[3]) if len(argv) > 3 else 3
    a = make_analysis(n_flows=n_flows, n_acks=n_acks, duration_s=dur)
    path = Path(tempfile.mkdtemp()) / "report.html"
    t = time.monotonic()
    info = write_report(a, path)
    t_write = time.monotonic() - t
    first, full = [], []
    for _ in range(runs):
        res = open_report(path)
        assert not res["errors"] and not res["requests"] and res["status"]["error"] is None, res
        assert res["figures"]["drawn"] == info.figures
        first.append(res["status"]["firstScreenMs"] / 1000)
        full.append(res["status"]["sinceNavigation"] / 1000)
    load = os.getloadavg()[0]
    sys.stdout.write(
        f"| {n_flows} × {n_acks:,} ACKs | {a.captures[0].meta.packets_total:,} | {info.size / 1e6:.2f} MB | "
        f"{info.points_in:,} → {info.points_out:,} | {t_write:.1f} s | {info.figures} | "
        f"{statistics.median(first):.2f} s | {statistics.median(full):.2f} s | {load:.1f} |\n"
    )


if __name__ == "__main__":  # pragma: no cover
    import sys

    _measure(sys.argv[1:])


@pytest.fixture(scope="module")
def groups_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of the bundled two-flow sample reno-vs-cubic (Reno and CUBIC sharing 10 Mbit/s),
    replaying only those two: its bottleneck-group section (docs/groups.md) before the flows."""
    from hscc_trace import api

    a = api.analyze(
        [Path(__file__).resolve().parents[2] / "samples/reno-vs-cubic/capture.pcap"],
        api.AnalyzeOptions(["reno", "cubic"]),
    ).analysis
    path = tmp_path_factory.mktemp("groups") / "report.html"
    write_report(a, path)
    return path


GROUPS_JS = """(() => {
  const g = document.querySelector('#groups'), f = document.querySelector('section.flow');
  const charts = Array.from(document.querySelectorAll('svg.gchart'));
  return {groupsTop: g ? g.getBoundingClientRect().top : null, flowTop: f ? f.getBoundingClientRect().top : null,
          charts: charts.length, drawn: charts.filter(s => s.querySelector('polyline, polygon')).length,
          paramsOpen: document.querySelector('details#algorithms').open,
          rows: document.querySelectorAll('#groups ~ table tbody tr').length};
})()"""


@pytest.mark.browser
@needs_chromium
def test_group_section_renders_in_chromium(groups_report: Path) -> None:
    if CHROMIUM is None:
        cannot_run("no chromium binary (apt-get install chromium; .ci/run installs it)")
    res = open_report(groups_report, shots="groups", script=GROUPS_JS)
    st = res["status"]
    assert st["error"] is None and st["done"] is True, st
    assert res["errors"] == [] and res["requests"] == [] and res["blocked"] == []
    g = res["script"]
    # four charts (goodput stacked, shares, Jain, windows), each drawn; the section comes before the
    # flows' figures, and the algorithms' parameter table is folded away
    assert g["charts"] == g["drawn"] == 4
    assert g["groupsTop"] is not None and g["groupsTop"] < g["flowTop"]
    assert g["paramsOpen"] is False
