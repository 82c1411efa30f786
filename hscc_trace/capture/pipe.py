"""The capture pipeline's threads: a generator run in a reader thread, and the background import of the table modules."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from typing import TypeVar

T = TypeVar("T")


def in_thread(produce: Callable[[], Iterator[T]], depth: int = 1) -> Generator[T, None, None]:
    """Run the generator ``produce()`` in a reader thread, yielding its items here, in order.

    At most ``depth`` items wait between the threads (plus one being produced and the one the
    caller holds). An exception in the reader is re-raised here; closing this generator early
    (or an exception here) stops the reader and waits for it.
    """
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def run() -> None:
        try:
            for item in produce():
                if stop.is_set():
                    return
                q.put(("item", item))
            q.put(("end", None))
        except BaseException as exc:  # handed to the consumer, re-raised there
            q.put(("error", exc))

    worker = threading.Thread(target=run, name="hscc-capture-reader", daemon=True)
    worker.start()
    try:
        while True:
            kind, val = q.get()
            if kind == "end":
                return
            if kind == "error":
                raise val
            yield val
    finally:
        stop.set()
        _drain(q, worker)


def _drain(q, worker) -> None:
    """Let a stopped reader thread finish (it may be blocked handing over a batch)."""
    import queue

    while worker.is_alive():
        try:
            q.get(timeout=0.05)
        except queue.Empty:
            pass
    worker.join()


_TABLE_MODULES = ("polars", "hscc_trace.schema", "hscc_trace.model")


def tables_imported() -> bool:
    """Whether :func:`import_tables` has nothing left to import."""
    import sys

    return all(m in sys.modules for m in _TABLE_MODULES)


def import_tables() -> None:
    """Import polars and the table modules (schema, model) — run in a thread while the reader's
    and the flow kernel's compiled loops hold no GIL (``load`` and ``load_flows``).

    Importing is Python code holding the GIL; the loops' threads need it only briefly between
    compiled calls, so the switch interval is shortened meanwhile (default 5 ms: each of those
    brief needs could otherwise wait that long).
    """
    if tables_imported():
        return
    import sys

    old = sys.getswitchinterval()
    sys.setswitchinterval(min(old, 2e-4))
    try:
        import polars  # noqa: F401

        from hscc_trace import model, schema  # noqa: F401
    finally:
        sys.setswitchinterval(old)
