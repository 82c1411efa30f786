"""The records the event kernels take: a few named tuples of arrays instead of dozens of
positional arrays.

numba types a ``NamedTuple`` of arrays as one argument (a ``NamedTuple`` type, each field its
own array type), caches kernels that take them like any other, and compiles field access to a
plain load; interpreted (:mod:`hscc_trace.perf.firstuse`) they are ordinary tuples. The kernels
read the fields by name (``src.frame``) or unpack them on entry into the local names their loops
use, so a field is named once, here.

Row arrays are per packet row of a batch of flows (in flow order, each flow in frame order);
flow arrays per flow of the batch; episode rows are ``rows + flows`` long (each flow's episodes
start at its first row + its index).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Source(NamedTuple):
    """The packets' columns the events read, in frame order (:func:`.prep.source_columns`, or
    the arena's columns): per row, then the SACK rows and blocks, the timestamp option, and the
    SYN rows' options. ``packed`` (the arena's): ``dir``, ``ecn``, ``sack_n`` and ``has_ts``
    are empty and ``flags`` holds them beside the TCP flags
    (:data:`hscc_trace.flows.records.FLAGS` …)."""

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
    sack_rows: np.ndarray
    l0: np.ndarray
    r0: np.ndarray
    l1: np.ndarray
    r1: np.ndarray
    l2: np.ndarray
    r2: np.ndarray
    l3: np.ndarray
    r3: np.ndarray
    tsval: np.ndarray
    tsecr: np.ndarray
    has_ts: np.ndarray
    syn_rows: np.ndarray
    opt_mss: np.ndarray
    opt_ws: np.ndarray
    opt_sack_perm: np.ndarray
    packed: bool


class Rows(NamedTuple):
    """Per row, as :func:`.prep.prep_flows` writes them (sequence numbers unwrapped, int64)."""

    frame: np.ndarray
    snd: np.ndarray
    ts: np.ndarray
    seq: np.ndarray
    ack: np.ndarray
    plen: np.ndarray
    flags: np.ndarray
    win: np.ndarray
    tsv: np.ndarray
    tse: np.ndarray
    rtsv: np.ndarray
    sl: np.ndarray
    sr: np.ndarray
    sn: np.ndarray
    ecn: np.ndarray


class FlowFacts(NamedTuple):
    """Per flow, what the flows table tells (-1 / 0 unknown): the sender direction, the MSS, the
    window scales of A and B, the end its vantage names (0 sender, 1 receiver; -1 neither)."""

    sdir: np.ndarray
    mss: np.ndarray
    wsa: np.ndarray
    wsb: np.ndarray
    end: np.ndarray


class FlowInfo(NamedTuple):
    """Per flow, as :func:`.prep.prep_flows` finds them (handshake times, options)."""

    sdir: np.ndarray
    mss: np.ndarray
    shift: np.ndarray
    known: np.ndarray
    sack: np.ndarray
    tsflow: np.ndarray
    seen: np.ndarray
    syn: np.ndarray
    synack: np.ndarray
    ack3: np.ndarray
    irtt: np.ndarray


class FlowParams(NamedTuple):
    """Per flow, what the state machine is run with."""

    mss: np.ndarray
    shift: np.ndarray
    sack: np.ndarray
    known: np.ndarray
    clock: np.ndarray
    ooo: np.ndarray
    at_sender: np.ndarray


class SenderView(NamedTuple):
    """Per row, the sender's view away from it (:func:`.vantage.sender_view`): the RTT part on
    the sender's side, snd_max ahead of the capture point, the releasing ACK; and the flight
    after each segment as the sender saw it."""

    off: np.ndarray
    ahead: np.ndarray
    rel: np.ndarray
    peak: np.ndarray


class PacketOut(NamedTuple):
    """Per row, what the state machine (:func:`.core.analyze`) says of it."""

    kind: np.ndarray
    probe: np.ndarray
    rexmit: np.ndarray
    seg_out: np.ndarray
    seg_round: np.ndarray
    isack: np.ndarray
    ackrel: np.ndarray
    acked: np.ndarray
    sacked: np.ndarray
    dsack: np.ndarray
    dup: np.ndarray
    rwnd: np.ndarray
    rtt: np.ndarray
    rtt_src: np.ndarray
    snd_max: np.ndarray
    out: np.ndarray
    pipe: np.ndarray
    round: np.ndarray
    round_end: np.ndarray
    tgt: np.ndarray
    state: np.ndarray
    cong: np.ndarray
    undo: np.ndarray
    ca_rtt: np.ndarray
    rtx: np.ndarray


class Episodes(NamedTuple):
    """Per episode row (``rows + flows`` long): the congestion episodes."""

    kind: np.ndarray
    start_t: np.ndarray
    end_t: np.ndarray
    start_i: np.ndarray
    end_i: np.ndarray
    flight: np.ndarray
    retx: np.ndarray
    rp: np.ndarray
    spur: np.ndarray


class Segments(NamedTuple):
    """The segments table's columns (schema.SEGMENTS order), one row per data segment."""

    frame: np.ndarray
    ts: np.ndarray
    seq: np.ndarray
    len: np.ndarray
    kind: np.ndarray
    ecn: np.ndarray
    end: np.ndarray
    probe: np.ndarray
    rexmit: np.ndarray
    out: np.ndarray
    round: np.ndarray


class Acks(NamedTuple):
    """The ACKs table's columns (schema.ACKS order), one row per ACK."""

    frame: np.ndarray
    ts: np.ndarray
    ack: np.ndarray
    acked: np.ndarray
    sacked: np.ndarray
    dup: np.ndarray
    rwnd: np.ndarray
    known: np.ndarray
    ece: np.ndarray
    rtt: np.ndarray
    src: np.ndarray
    snd_max: np.ndarray
    out: np.ndarray
    pipe: np.ndarray
    round: np.ndarray
    rend: np.ndarray
    state: np.ndarray
    cong: np.ndarray
    undo: np.ndarray
    dsack: np.ndarray
    rtt_raw: np.ndarray
    ca_rtt: np.ndarray
    rtx: np.ndarray


class Rounds(NamedTuple):
    """The rounds table's columns, one row per RTT round."""

    id: np.ndarray
    start: np.ndarray
    end: np.ndarray
    target: np.ndarray
    peak: np.ndarray
    acked: np.ndarray
    minrtt: np.ndarray
    rwnd: np.ndarray
    rec: np.ndarray
    limit: np.ndarray


class Counts(NamedTuple):
    """Per flow: warning counters (``flows × N_WARN``), episodes, segments, ACKs, rounds."""

    warn: np.ndarray
    n_ep: np.ndarray
    n_seg: np.ndarray
    n_ack: np.ndarray
    n_rounds: np.ndarray


def __getattr__(name: str) -> type:
    # a record class an older or newer version named, asked for by numba's cache index
    # (hscc_trace.perf.firstuse.retired_record says why)
    from hscc_trace.perf.firstuse import retired_record

    return retired_record(__name__, name)


__all__ = [
    "Acks",
    "Counts",
    "Episodes",
    "FlowFacts",
    "FlowInfo",
    "FlowParams",
    "PacketOut",
    "Rounds",
    "Rows",
    "Segments",
    "SenderView",
    "Source",
]
