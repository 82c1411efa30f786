"""Synthetic ACK streams conforming to schema.ACKS, for hand-worked replay tests.

MSS = 1000 bytes so that every expectation can be worked out by hand in packets. A stream is
described ACK by ACK (:func:`stream`): packets newly acknowledged cumulatively, packets newly
SACKed, packets outstanding after the ACK, state, congestion event… and the builder fills the
cumulative ACK, snd_max (= ack + outstanding), times and rounds.

Remember how the engine reads it (replay/engine.py ``prepare``): the flight *before* ACK i is
``pipe(i−1) + sent(i)`` with ``sent(i) = snd_max(i) − snd_max(i−1)``; with a constant
outstanding F and ACKs of a packets each that is ``F + a`` — so F ≥ cwnd makes a cwnd-limited
sender and a small F an application-limited one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from hscc_trace import schema

MSS = 1000
RTT = 0.1  # s

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"


def ack(**kw: Any) -> dict[str, Any]:
    """One ACK row with neutral defaults (override any schema.ACKS column).

    ``ca_rtt_s`` (the sample flavor linux gives congestion control) is ``rtt_s`` unless given,
    as the events stage sets it on an ACK that newly SACKs nothing and whose sample is not a
    retransmission's timestamp echo (docs/events.md): without it the column would be null after
    :func:`frame` conforms the rows, and flavor linux would see no RTT sample at all."""
    row: dict[str, Any] = {
        "frame": 0,
        "ts_ns": 0,
        "ack": 0,
        "acked_bytes": MSS,
        "sacked_bytes": 0,
        "dupack": 0,
        "rwnd_bytes": 10_000_000,
        "rwnd_scale_known": True,
        "ece": False,
        "rtt_s": RTT,
        "rtt_source": "seq",
        "snd_max": 0,
        "outstanding": 0,
        "pipe": None,
        "round": 0,
        "round_end": False,
        "state": "open",
        "cong_event": None,
        "spurious_undo": False,
    }
    row.update(kw)
    row.setdefault("ca_rtt_s", row["rtt_s"])
    return row


def frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Fill frame numbers and times (1 ms apart unless given) and conform to schema.ACKS."""
    out = []
    for i, r in enumerate(rows):
        r = dict(r)
        if not r.get("ts_ns"):
            r["ts_ns"] = 1_000_000_000 + i * 1_000_000
        r["frame"] = i + 1
        out.append(r)
    return schema.conform(pl.DataFrame(out, schema=schema.polars_schema(schema.ACKS), strict=False), schema.ACKS)


def stream(specs: list[dict[str, Any]], *, flight: float = 100, start_ack: int = 1) -> pl.DataFrame:
    """ACK rows from per-ACK specs (all in packets): ``a`` newly cumulatively acked (default 1),
    ``s`` newly SACKed (0), ``F`` outstanding after the ACK (default ``flight``), ``pipe``
    (default None = outstanding), ``state`` ("open"), ``event`` (None), ``undo`` (False),
    ``rtt`` (RTT s, None = no sample), ``t`` (s since start; default 1 ms per ACK),
    ``round_end`` (False; rounds are numbered by round_end flags), ``ece`` (False)."""
    rows = []
    cum = start_ack
    rnd = 0
    for i, sp in enumerate(specs):
        a = int(sp.get("a", 1))
        cum += a * MSS
        f = float(sp.get("F", flight))
        pipe = sp.get("pipe")
        t = sp.get("t", i * 0.001)
        rows.append(
            ack(
                ts_ns=1_000_000_000 + int(round(t * 1e9)),
                ack=cum,
                acked_bytes=a * MSS,
                sacked_bytes=int(sp.get("s", 0) * MSS),
                dupack=0 if a else 1,
                rtt_s=sp.get("rtt", RTT),
                snd_max=cum + int(f * MSS),
                outstanding=int(f * MSS),
                pipe=None if pipe is None else int(pipe * MSS),
                round=rnd,
                round_end=bool(sp.get("round_end", False)),
                state=sp.get("state", "open"),
                cong_event=sp.get("event"),
                spurious_undo=bool(sp.get("undo", False)),
                ece=bool(sp.get("ece", False)),
            )
        )
        if sp.get("round_end"):
            rnd += 1
    return frame(rows)


def saturating(n_acks: int, *, cwnd0: float = 10, mss: int = MSS, rtt: float = RTT) -> pl.DataFrame:
    """A sender whose flight stays at ``cwnd0`` packets, one packet per ACK, rounds of ``cwnd0`` ACKs."""
    rows = []
    acked = 0
    flight = int(cwnd0)
    for i in range(n_acks):
        acked += mss
        rows.append(
            ack(
                ack=acked,
                acked_bytes=mss,
                snd_max=acked + (flight - 1) * mss,
                outstanding=(flight - 1) * mss,
                rtt_s=rtt,
                round=i // int(cwnd0),
                round_end=(i % int(cwnd0)) == int(cwnd0) - 1,
            )
        )
    return frame(rows)


def rich(n_rounds: int = 40, seed: int = 7) -> pl.DataFrame:
    """A longer stream exercising every engine branch: slow start, congestion avoidance, SACK
    recovery with PRR, an RTO, an ECN echo, a spurious episode (undo), application-limited
    stretches and RTT variation (queue build-up). Deterministic for a given seed."""
    rng = np.random.default_rng(seed)
    specs: list[dict[str, Any]] = []
    t = 0.0
    flight = 10.0
    for r in range(n_rounds):
        per = max(int(flight), 2)
        qdelay = 0.002 * (r % 8)
        kind = r % 13
        for k in range(per):
            t += 0.1 / per
            sp: dict[str, Any] = {"t": t, "rtt": 0.1 + qdelay + float(rng.uniform(0, 0.002)), "F": flight}
            if kind == 5 and k == 0:
                sp.update(event="sack_recovery", state="recovery", a=0, s=1, pipe=flight - 2)
            elif kind == 5 and k < per - 1:
                sp.update(state="recovery", a=0 if k % 3 else 1, s=1, pipe=flight - 2)
            elif kind == 9 and k == 0:
                sp.update(event="rto", state="loss", rtt=None)
            elif kind == 9 and k < per // 2:
                sp.update(state="loss")
            elif kind == 11 and k == 0:
                sp.update(event="ecn", ece=True)
            elif kind == 7 and k == 0:
                sp.update(event="fast_retransmit", state="recovery", a=0)
            elif kind == 7 and k == 1:
                sp.update(undo=True)
            if kind == 3:
                sp["F"] = 2.0  # application-limited round
            if k == per - 1:
                sp["round_end"] = True
            specs.append(sp)
        flight = min(flight * 1.3 + 1, 120.0) if kind not in (5, 9) else max(flight / 2, 2.0)
    return stream(specs)


def load_sample(name: str, flow: int = 0):
    """(FlowEvents, truth_probe, truth_ca_state) of a sample, truth filtered to the flow's port."""
    from hscc_trace import events
    from hscc_trace import flows as capture

    meta = json.loads((SAMPLES / name / "meta.json").read_text())
    cap = capture.load(str(SAMPLES / name / meta["capture"].get("file", "capture.pcap")))  # .pcap or .pcap.gz
    fe = events.flow_events(cap, flow)
    sport = cap.flows.row(flow, named=True)["sport"]
    tr = pl.read_parquet(SAMPLES / name / "truth_probe.parquet")
    cs = pl.read_parquet(SAMPLES / name / "truth_ca_state.parquet")
    if "sport" in tr.columns:
        tr = tr.filter(pl.col("sport") == sport)
    if "sport" in cs.columns:
        cs = cs.filter(pl.col("sport") == sport)
    return fe, tr, cs
