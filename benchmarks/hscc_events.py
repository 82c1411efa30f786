#!/usr/bin/env python3
"""The events path, timed as one process: capture → packets → flows → event streams of EVERY flow.

This is what `hscc-trace analyze` does before replay (``hscc_trace.api.all_events``), without the
replay and the report. Prints one JSON line: packets, flows, ACK and segment events, and the
time spent loading (read + decode + flows) and building events (wall; and the events'
CPU time over all threads, with the number of threads the events used).
Usage: hscc_events.py FILE
"""

from __future__ import annotations

import json
import sys
import time

t_start = time.perf_counter()
from hscc_trace import api  # noqa: E402
from hscc_trace.events import all_flow_events, tables  # noqa: E402

t_import = time.perf_counter() - t_start


def main() -> None:
    path = sys.argv[1]
    t0 = time.perf_counter()
    cap = api.load(path)
    t1 = time.perf_counter()
    c1 = time.process_time()
    evs = all_flow_events(cap)
    t2 = time.perf_counter()
    c2 = time.process_time()
    print(
        json.dumps(
            dict(
                packets=cap.meta.packets_total,
                flows=len(evs),
                acks=sum(e.acks.height for e in evs.values()),
                segments=sum(e.segments.height for e in evs.values()),
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
