"""The records the arena kernels take (:mod:`.arena`): named tuples of arrays, one argument
each instead of a dozen positional arrays (as :mod:`hscc_trace.events.records` for the event
kernels)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Columns(NamedTuple):
    """The arena's columns (:data:`.arena._ARENA`, in that order), as one kernel argument."""

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


__all__ = ["Columns", "Connection"]
