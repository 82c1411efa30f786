"""The handshake's absolute near-side rule, shared by the flow table (:mod:`.tracker`) and the
event streams (:mod:`hscc_trace.events.vantage`).

At the capture point the handshake gives two gaps, SYN → SYN/ACK and SYN/ACK → ACK: the one of
the side the capture is near is that host's own turnaround (its kernel answering a packet:
µs to tens of µs), the other a full round trip. Each caller's fractional rule (the near gap is a
small part of the two) misreads a path whose round trip is itself tens of µs (veth, one LAN
switch), where the turnaround is a third of the total. So a gap also counts as near when it is
under :data:`TURNAROUND_FLOOR_NS` and the other gap is more than :data:`FAR_FACTOR` times it.

:data:`TURNAROUND_FLOOR_NS` was chosen on the tuning split of the samples only
(samples/splits.json): their near-side gaps, the testbed hosts' turnarounds, are 17.6–101.5 µs
(largest bbr-40m), and the floor is twice the largest. :data:`FAR_FACTOR` is not tuned (no tuning
path has a µs round trip): the far gap holds the other host's turnaround and the path's round
trip, so a far gap not even twice the near one says the path adds less than a turnaround —
gaps alike (a loopback capture, where both gaps are turnarounds) stay mid-path.
"""

from __future__ import annotations

from typing import Any

from hscc_trace.perf.jit import njit

#: ns: a handshake gap below this (and below 1 / FAR_FACTOR of the other gap) is the near host's
#: own turnaround (2 × the largest on the tuning split, 101.5 µs)
TURNAROUND_FLOOR_NS = 200_000
#: the other gap must exceed the near one this many times for the floor to apply
FAR_FACTOR = 2


def near_by_floor(gap: Any, other: Any) -> Any:
    """Whether ``gap`` (ns) is a host's turnaround by the floor: numbers, or numpy arrays elementwise."""
    return (gap < TURNAROUND_FLOOR_NS) & (gap * FAR_FACTOR < other)


#: :func:`near_by_floor` for compiled kernels (the flow kernel's vantage step,
#: :func:`hscc_trace.flows.tracker._away`): the same function, whose interpreted twin is
#: :func:`near_by_floor` itself (:func:`hscc_trace.perf.firstuse.pure`). Called from Python it would
#: compile a version per argument type, so Python code calls :func:`near_by_floor`
near_by_floor_compiled = njit(cache=True, inline="always")(near_by_floor)
