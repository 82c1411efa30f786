#!/usr/bin/env python3
"""The events path, timed as one process: capture → packets → flows → event streams of EVERY flow.

This is what `hscc-trace analyze` does before replay (``hscc_trace.api.all_events``), without the
replay and the report. Prints one JSON line: packets, flows, ACK and segment events, and the
time spent loading (read + decode + flows) and building events (wall; and the events'
CPU time over all threads, with the number of threads the events used).
Usage: hscc_events.py FILE [--stream]

``--stream``: the events as ``analyze`` builds them since issue #20 — a batch of flows at a time
(``events.flow_event_batches(release=True)``), each batch dropped before the next is built and the
load arena's pages given back as it goes — instead of every flow's tables held at once
(``all_flow_events``, the default, what ``api.all_events`` returns). Same tables, same work.
"""

from __future__ import annotations

import json
import sys
import time

t_start = time.perf_counter()
from hscc_trace import api  # noqa: E402
from hscc_trace.events import all_flow_events, flow_event_batches, tables  # noqa: E402

t_import = time.perf_counter() - t_start


def main() -> None:
    path = sys.argv[1]
    stream = "--stream" in sys.argv[2:]
    t0 = time.perf_counter()
    cap = api.load(path)
    t1 = time.perf_counter()
    c1 = time.process_time()
    if stream:
        flows = acks = segments = 0
        for batch in flow_event_batches(cap, release=True):
            flows += len(batch)
            acks += sum(e.acks.height for _, e in batch)
            segments += sum(e.segments.height for _, e in batch)
            del batch
    else:
        evs = all_flow_events(cap)
        flows, acks = len(evs), sum(e.acks.height for e in evs.values())
        segments = sum(e.segments.height for e in evs.values())
    t2 = time.perf_counter()
    c2 = time.process_time()
    print(
        json.dumps(
            dict(
                packets=cap.meta.packets_total,
                flows=flows,
                acks=acks,
                segments=segments,
                stream=stream,
                import_s=t_import,
                load_s=t1 - t0,
                events_s=t2 - t1,
                events_cpu_s=c2 - c1,
                events_threads=tables.THREADS,
            )
        )
    )


if __name__ == "__main__":
    main()
