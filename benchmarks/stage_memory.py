#!/usr/bin/env python3
"""Where ``hscc-trace analyze``'s memory goes, stage by stage, on one capture (issue 39).

Runs ``hscc-trace analyze FILE -o report.html --json results.json -q`` in this process with the
pipeline's stages wrapped: each wrapper records the process's resident memory (``VmRSS`` of
/proc/self/status) on entry and exit, and a sampling thread (every 10 ms) the highest RSS seen
while the stage ran. Stages, in the order a flow meets them:

* ``read``       capture → packet arena and flow table (``pipeline.open_capture``);
* ``events``     one batch of event tables (``events.flow_event_batches``, per batch);
* ``sack``       the report's SACK blocks (``events.sack.with_sack_blocks``);
* ``observe``    verdict evidence (``analysis.evidence.observe``);
* ``replay``     every algorithm's per-ACK outputs (``replay.engine.replay_flow``);
* ``fit``        ``replay.metrics.fit``;  ``judge``  ``analysis.verdict.judge``;
* ``stream``     the flow's JSON entry and its report section (``Stream.done``: points, store);
* ``report``     ``api.report`` (the HTML page);  ``json``  ``analysis.results.write``.

Besides RSS, the sizes of what a stage returns: the event tables (polars ``estimated_size``), the
replays (per algorithm), both divided by the largest flow's packets. Prints one JSON document.

    .venv/bin/python benchmarks/stage_memory.py benchmarks/data/cubic10M.pcap
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any


def rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


class Probe:
    def __init__(self) -> None:
        self.stage = "start"
        self.peak = 0
        self.rows: list[dict[str, Any]] = []
        self.sizes: dict[str, Any] = {}
        self._stop = False
        self.t0 = time.perf_counter()
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while not self._stop:
            self.peak = max(self.peak, rss())
            time.sleep(0.01)

    @contextlib.contextmanager
    def at(self, stage: str) -> Any:
        before, outer, outer_peak = rss(), self.stage, self.peak
        self.stage, self.peak = stage, before
        t = time.perf_counter()
        try:
            yield
        finally:
            after = rss()
            self.rows.append(
                dict(
                    stage=stage,
                    t_s=round(t - self.t0, 2),
                    wall_s=round(time.perf_counter() - t, 2),
                    rss_in_mib=round(before / 2**20),
                    rss_out_mib=round(after / 2**20),
                    peak_mib=round(max(self.peak, after) / 2**20),
                )
            )
            self.stage, self.peak = outer, max(outer_peak, self.peak, after)

    def wrap(self, mod: Any, name: str, stage: str, sizes: Any = None) -> None:
        fn = getattr(mod, name)

        @functools.wraps(fn)
        def wrapped(*a: Any, **k: Any) -> Any:
            with self.at(stage):
                out = fn(*a, **k)
            if sizes is not None:
                sizes(self, out)
            return out

        setattr(mod, name, wrapped)

    def wrap_gen(self, mod: Any, name: str, stage: str) -> None:
        fn = getattr(mod, name)

        @functools.wraps(fn)
        def wrapped(*a: Any, **k: Any) -> Any:
            it = iter(fn(*a, **k))
            while True:
                with self.at(stage):
                    try:
                        item = next(it)
                    except StopIteration:
                        return
                yield item

        setattr(mod, name, wrapped)


def _size(x: Any) -> int:
    if x is None:
        return 0
    if hasattr(x, "estimated_size"):
        return int(x.estimated_size())
    if hasattr(x, "nbytes"):
        return int(x.nbytes)
    return 0


def _events_sizes(p: Probe, batch: Any) -> None:
    for _i, _row, ev in batch:
        p.sizes.setdefault("events", []).append(
            dict(
                flow_id=ev.flow_id,
                acks_rows=ev.acks.height,
                segments_rows=ev.segments.height,
                acks=_size(ev.acks),
                segments=_size(ev.segments),
                episodes=_size(ev.episodes),
                rounds=_size(ev.rounds),
                sack_blocks=_size(ev.sack_blocks),
            )
        )


def _replay_sizes(p: Probe, out: dict[str, Any]) -> None:
    p.sizes.setdefault("replays", []).append({k: _size(v) for k, v in out.items()})


def main(argv: list[str]) -> int:
    pcap = Path(argv[0])
    sys.argv = ["hscc-trace", "analyze", str(pcap), "-q"]
    tmp = Path(tempfile.mkdtemp(prefix="hscc-stage-mem-"))
    sys.argv += ["-o", str(tmp / "report.html"), "--json", str(tmp / "results.json")]
    p = Probe()
    from hscc_trace import api, events, perf
    from hscc_trace.analysis import evidence, pipeline, results, stream, verdict
    from hscc_trace.events import sack
    from hscc_trace.replay import engine, metrics

    perf.activate()
    p.wrap(pipeline, "open_capture", "read")
    p.wrap_gen(events, "flow_event_batches", "events")
    p.wrap(sack, "with_sack_blocks", "sack", lambda p, evs: _events_sizes(p, [(0, 0, e) for e in evs if e]))
    p.wrap(evidence, "observe", "observe")
    p.wrap(engine, "replay_flow", "replay", _replay_sizes)
    p.wrap(metrics, "fit", "fit")
    p.wrap(verdict, "judge", "judge")
    p.wrap(stream.Stream, "done", "stream")
    p.wrap(api, "report", "report")
    p.wrap(results, "write", "json")
    from hscc_trace.cli import _main

    rc = 0
    with p.at("analyze (whole run)"):
        try:
            _main()
        except SystemExit as exc:
            rc = int(exc.code or 0)
    p._stop = True
    hwm = next(
        int(ln.split()[1]) * 1024
        for ln in Path("/proc/self/status").read_text().splitlines()
        if ln.startswith("VmHWM:")
    )
    print(json.dumps(dict(capture=str(pcap), rc=rc, vm_hwm_mib=round(hwm / 2**20), stages=p.rows, sizes=p.sizes)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
