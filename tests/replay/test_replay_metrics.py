"""Fit metrics against the actual sender, worked by hand on a five-round flow."""

from __future__ import annotations

import math

import polars as pl
import pytest

from hscc_trace import schema
from hscc_trace.model import FlowEvents
from hscc_trace.replay import metrics

MSS = 1000
MS = 1_000_000


def rounds() -> pl.DataFrame:
    # five rounds of 100 ms; round 3 is receive-window-limited, round 4 in recovery: both unused.
    rows = [
        # round, start, end, peak flight (packets), acked (packets), limit, in_recovery
        (0, 0, 100, 10, 10, "cwnd", False),
        (1, 100, 200, 20, 20, "cwnd", False),
        (2, 200, 300, 40, 40, "cwnd", False),
        (3, 300, 400, 5, 5, "rwnd", False),
        (4, 400, 500, 30, 30, "cwnd", True),
    ]
    df = pl.DataFrame(
        [
            {
                "round": r,
                "start_ns": s * MS,
                "end_ns": e * MS,
                "target_seq": 0,
                "peak_flight_bytes": f * MSS,
                "acked_bytes": a * MSS,
                "min_rtt_s": 0.1,
                "rwnd_bytes": 10**7,
                "limit": lim,
                "in_recovery": rec,
            }
            for r, s, e, f, a, lim, rec in rows
        ],
        schema=schema.polars_schema(schema.ROUNDS),
    )
    return df


def replay(values: list[float]) -> pl.DataFrame:
    # a replay row every 50 ms: the ACK at 50 ms into each round leaves the round's window, the
    # ACK that closes the round (at its end) a decoy of 99 packets that the rule must ignore —
    # the replayed window of a round is the one in force when its last segments were sent,
    # after the last ACK but one (what the sender sends after the closing ACK is the next round's).
    ts, cw = [], []
    for k, v in enumerate(values):
        ts += [(k * 100 + 50) * MS, (k * 100 + 100) * MS]
        cw += [v, 99.0]
    n = len(ts)
    return pl.DataFrame(
        {"frame": list(range(1, n + 1)), "ts_ns": ts, "cwnd": cw, "ssthresh": [None] * n, "state": ["open"] * n},
        schema=schema.polars_schema(schema.REPLAY_BASE),
    )


def events() -> FlowEvents:
    return FlowEvents(
        flow_id=3,
        sender_dir=0,
        mss=MSS,
        vantage="sender",
        segments=schema.empty(schema.SEGMENTS),
        acks=schema.empty(schema.ACKS),
        episodes=schema.empty(schema.EPISODES),
        rounds=rounds(),
    )


def test_fit_metrics_by_hand():
    # Usable rounds 0..2: actual 10, 20, 40; replay A at round ends 11, 20, 30 (round 3 rwnd, 4 recovery).
    # relative errors 0.1, 0, 0.25 → mare (median) 0.1
    # RMSE = √((1² + 0² + 10²)/3) = √33.667 = 5.8023
    # Pearson: means 23.333 / 20.333; Σdadr = 286.67, Σda² = 466.67, Σdr² = 180.67
    #   → 286.667/√(466.667·180.667) = 286.667/290.364 = 0.98727
    # goodput predicted = mean(11, 20, 30)·1000 B·8/0.1 s = mean(0.88, 1.6, 2.4) Mbit/s = 1.62667 Mbit/s
    # goodput actual = (10 + 20 + 40)·1000·8 bit / 0.3 s = 1.86667 Mbit/s
    # replay B equals the actual windows: mare 0 → rank 1.
    fit = metrics.fit(events(), {"A": replay([11, 20, 30, 5, 1]), "B": replay([10, 20, 40, 1, 1])})
    assert fit.columns == [c.name for c in schema.FIT_METRICS]
    a = fit.filter(pl.col("algo") == "A").row(0, named=True)
    b = fit.filter(pl.col("algo") == "B").row(0, named=True)
    assert a["rounds"] == 3 and a["flow_id"] == 3
    assert a["mare"] == pytest.approx(0.1)
    assert a["rmse_pkts"] == pytest.approx(math.sqrt(101 / 3))
    assert a["corr"] == pytest.approx(0.98727, abs=1e-5)
    assert a["goodput_pred_bps"] == pytest.approx(1_626_666.67, abs=0.01)
    assert a["goodput_actual_bps"] == pytest.approx(1_866_666.67, abs=0.01)
    assert (b["mare"], b["rmse_pkts"], b["rank"], a["rank"]) == (0.0, 0.0, 1, 2)
    assert fit["algo"].to_list() == ["B", "A"]


def test_fit_without_usable_rounds_ranks_last():
    ev = events()
    ev.rounds = ev.rounds.with_columns(pl.lit("app").cast(schema.Limit).alias("limit"))
    fit = metrics.fit(ev, {"A": replay([1, 2, 3, 4, 5])})
    row = fit.row(0, named=True)
    assert row["rounds"] == 0 and row["mare"] is None and row["rank"] == 1


def test_truth_alignment_uses_snd_una():
    # ACKs at 10, 20, 30 ms acking 1000, 2000, 3000. Probes fire before their ACK is processed
    # (snd_una = the previous ACK) and their clock is 0.2 ms late: the probe at 20.2 ms with
    # snd_una 1000 reflects ACK 0; the one at 30.2 ms ACK 1; a probe whose snd_una matches
    # nothing is dropped (−1).
    acks = pl.DataFrame({"ts_ns": [10 * MS, 20 * MS, 30 * MS], "ack": [1000, 2000, 3000]})
    truth = pl.DataFrame(
        {"ts_ns": [20 * MS + 200_000, 30 * MS + 200_000, 30 * MS + 300_000], "snd_una": [1000, 2000, 777]}
    )
    assert metrics.truth_alignment(acks, truth).tolist() == [0, 1, -1]
