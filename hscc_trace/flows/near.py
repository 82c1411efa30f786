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

When both gaps are under the floor (:func:`both_turnarounds`) either may be a turnaround: at a
receiver over veth its own SYN → SYN/ACK turnaround is as long as the path and the sender's
turnaround together, so no rule on the two gaps can name that end. There, and where there is no
handshake at all (whose data rule reads host delays more than the path at such round trips), the
IP TTLs decide when they tell (:func:`ttl_near`): a packet leaves its host with the host's initial
TTL (64 for Linux, BSD and macOS, 128 for Windows, 255 for others: :data:`INITIAL_TTLS`) and every
router lowers it by one, so a capture that sees one side's packets at an initial value and the
other's below it is on the first side's host or its link — no router between. Otherwise the
handshake's answer stands (or the data rule's, without one). No threshold is tuned here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hscc_trace.perf.jit import njit

#: ns: a handshake gap below this (and below 1 / FAR_FACTOR of the other gap) is the near host's
#: own turnaround (2 × the largest on the tuning split, 101.5 µs)
TURNAROUND_FLOOR_NS = 200_000
#: the other gap must exceed the near one this many times for the floor to apply
FAR_FACTOR = 2
#: the hosts' initial IPv4 TTL / IPv6 hop limit (Linux ``net.ipv4.ip_default_ttl`` and BSD/macOS:
#: 64; Windows: 128; Solaris and network equipment: 255)
INITIAL_TTLS = (64, 128, 255)


def near_by_floor(gap: Any, other: Any) -> Any:
    """Whether ``gap`` (ns) is a host's turnaround by the floor: numbers, or numpy arrays elementwise."""
    return (gap < TURNAROUND_FLOOR_NS) & (gap * FAR_FACTOR < other)


def both_turnarounds(g1: Any, g2: Any) -> Any:
    """Whether both handshake gaps (ns) are under the floor: then either may be a host's own
    turnaround, and the handshake cannot tell which side the capture is near (at a receiver over
    veth its SYN → SYN/ACK turnaround is as long as the rest of the round trip); the flow's data
    decide instead. Numbers, or numpy arrays elementwise."""
    return (g1 < TURNAROUND_FLOOR_NS) & (g2 < TURNAROUND_FLOOR_NS)


#: :func:`both_turnarounds` for compiled kernels (as :data:`near_by_floor_compiled`)
both_turnarounds_compiled = njit(cache=True, inline="always")(both_turnarounds)


#: :func:`near_by_floor` for compiled kernels (the flow kernel's vantage step,
#: :func:`hscc_trace.flows.tracker._away`): the same function, whose interpreted twin is
#: :func:`near_by_floor` itself (:func:`hscc_trace.perf.firstuse.pure`). Called from Python it would
#: compile a version per argument type, so Python code calls :func:`near_by_floor`
near_by_floor_compiled = njit(cache=True, inline="always")(near_by_floor)


def ttl_near(lo_p: Any, hi_p: Any, lo_q: Any, hi_q: Any) -> Any:
    """Whether the capture is on side P's host or its link by the TTLs: every packet of P seen
    with one initial TTL (``lo_p == hi_p`` in :data:`INITIAL_TTLS`) and every packet of Q with one
    TTL that is not (``lo`` / ``hi``: the smallest and largest TTL seen per side; no packet: hi < 0).
    Numbers, or numpy arrays elementwise."""
    initial = np.isin(hi_p, INITIAL_TTLS) & (lo_p == hi_p)
    below = (hi_q > 0) & (lo_q == hi_q) & ~np.isin(hi_q, INITIAL_TTLS)
    return initial & below
