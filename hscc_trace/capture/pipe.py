"""A generator run in a reader thread: the capture pipeline's two-stage hand-over."""

from __future__ import annotations

from typing import Callable, Iterator, TypeVar

T = TypeVar("T")


def in_thread(produce: Callable[[], Iterator[T]], depth: int = 1) -> Iterator[T]:
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
