"""The records the arena kernels take (:mod:`.arena`): named tuples of arrays, one argument
each instead of a dozen positional arrays (as :mod:`hscc_trace.events.records` for the event
kernels)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: The arena's ``flags`` column packs, beside the TCP flags (the decoder's 9 bits, ``FLAGS``), the
#: four one-byte columns the events read: the packet's direction (1 bit: the tracker's side while
#: reading, the direction from :meth:`.arena.Arena.finish` on), whether it had the timestamp
#: option (1 bit), its IP ECN field (2 bits) and how many SACK blocks it carried (3 bits, ≤ 4):
#: 2 bytes a packet for what took 6. :func:`hscc_trace.events.prep.prep_flows` unpacks them.
FLAGS = 0x1FF
DIR_SHIFT = 9
TS_SHIFT = 10
ECN_SHIFT = 11
SACK_SHIFT = 13


class Columns(NamedTuple):
    """A decoded batch's columns the arena keeps, one row per packet (capture order; ``dir`` is the
    tracker's side), or a packet table's (:meth:`.arena.Arena.table`), as one kernel argument."""

    frame: np.ndarray
    ts: np.ndarray
    dir: np.ndarray
    seq: np.ndarray
    ack: np.ndarray
    flags: np.ndarray
    win: np.ndarray
    plen: np.ndarray
    ecn: np.ndarray
    sack_n: np.ndarray
    tsval: np.ndarray
    tsecr: np.ndarray
    has_ts: np.ndarray


class Stored(NamedTuple):
    """The arena's own columns (:data:`.arena._ARENA`, in that order): :class:`Columns` with the
    one-byte columns packed into ``flags`` (:data:`FLAGS` …)."""

    frame: np.ndarray
    ts: np.ndarray
    seq: np.ndarray
    ack: np.ndarray
    flags: np.ndarray
    win: np.ndarray
    plen: np.ndarray
    tsval: np.ndarray
    tsecr: np.ndarray


class Connection(NamedTuple):
    """Per packet-table row: its connection, addresses and ports (what :func:`_unplace` adds)."""

    flow: np.ndarray
    src_hi: np.ndarray
    src_lo: np.ndarray
    dst_hi: np.ndarray
    dst_lo: np.ndarray
    sport: np.ndarray
    dport: np.ndarray


def __getattr__(name: str) -> type:
    # a record class an older or newer version named, asked for by numba's cache index
    # (hscc_trace.perf.firstuse.retired_record says why)
    from hscc_trace.perf.firstuse import retired_record

    return retired_record(__name__, name)


__all__ = ["Columns", "Stored", "Connection", "FLAGS", "DIR_SHIFT", "TS_SHIFT", "ECN_SHIFT", "SACK_SHIFT"]
