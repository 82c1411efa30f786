"""A synthetic :class:`~hscc_trace.model.Analysis` that follows hscc_trace.schema exactly.

Used by the report tests (a test helper, not part of the package): it lets
the report be built and measured at any size (up to many millions of ACKs) without a capture or
the replay engine. The flow is a loss-driven sawtooth: the sender grows its window by one packet
per round, a loss every ``period_s`` halves it (a fast-retransmit episode, with one
retransmitted segment), and RTT rises with the queue. Replays are shaped variants of that window
carrying plausible signals named as the replay registry names them; nothing here is a model of
any algorithm.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import numpy as np
import polars as pl

from hscc_trace import schema
from hscc_trace.model import Analysis, CaptureMeta, CaptureResult, FlowEvents, FlowResult

MSS = 1448
T0_NS = 1_700_000_000_000_000_000


def _conform(df: pl.DataFrame, cols: tuple[schema.Column, ...], **defaults: Any) -> pl.DataFrame:
    """schema.conform, with columns the schema has gained since this module was written filled
    from ``defaults`` (an expression or value) or as nulls, so the generator tracks the contract."""
    add = [
        (defaults[c.name] if isinstance(defaults.get(c.name), pl.Expr) else pl.lit(defaults.get(c.name)))
        .cast(c.dtype)
        .alias(c.name)
        for c in cols
        if c.name not in df.columns
    ]
    return schema.conform(df.with_columns(add) if add else df, cols)


def _sawtooth(t: np.ndarray, period: float, lo: float, hi: float) -> np.ndarray:
    return lo + (hi - lo) * ((t % period) / period)


def _replay(
    t_ns: np.ndarray, cwnd: np.ndarray, state: np.ndarray, signals: dict[str, Any], frame: np.ndarray
) -> pl.DataFrame:
    base = pl.DataFrame(
        {
            "frame": frame,
            "ts_ns": t_ns,
            "cwnd": cwnd,
            "ssthresh": np.maximum(cwnd * 0.7, 2.0),
            "state": pl.Series(state, dtype=pl.String),
        }
    )
    return schema.conform(base.hstack(pl.DataFrame(signals)), schema.REPLAY_BASE, extra=True)


def make_flow(
    flow_id: int = 0,
    *,
    n_acks: int = 20_000,
    duration_s: float = 20.0,
    period_s: float = 4.0,
    base_rtt_s: float = 0.040,
    src: str = "10.0.0.1",
    dst: str = "10.0.0.2",
    seed: int = 1,
) -> FlowResult:
    """One synthetic flow with ``n_acks`` ACKs spread over ``duration_s`` seconds."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, duration_s, n_acks))
    t_ns = T0_NS + (t * 1e9).astype(np.int64)
    lo, hi = 40.0, 100.0
    flight = np.floor(_sawtooth(t, period_s, lo, hi))
    loss_t = np.arange(period_s, duration_s, period_s)
    rtt = base_rtt_s * (1.0 + 0.5 * (flight - lo) / (hi - lo)) + rng.exponential(0.001, n_acks)
    rtt_s = np.where(rng.uniform(size=n_acks) < 0.5, rtt, np.nan)  # half the ACKs form a sample
    in_rec = np.zeros(n_acks, dtype=bool)
    for lt in loss_t:
        in_rec |= (t >= lt) & (t < lt + base_rtt_s * 1.5)
    state = np.where(in_rec, "recovery", "open")
    ack = np.cumsum(np.full(n_acks, MSS, dtype=np.int64)) + 1
    outstanding = (flight * MSS).astype(np.int64)
    rounds_of = (t / base_rtt_s).astype(np.int64)
    round_idx = np.unique(rounds_of, return_inverse=True)[1].astype(np.uint32)
    round_end = np.concatenate((round_idx[1:] != round_idx[:-1], [True]))
    first_loss = np.searchsorted(t, loss_t)
    cong = np.full(n_acks, None, dtype=object)
    cong[first_loss[first_loss < n_acks]] = "fast_retransmit"
    acks = _conform(
        pl.DataFrame(
            {
                "frame": np.arange(n_acks, dtype=np.uint64) * 2 + 2,
                "ts_ns": t_ns,
                "ack": ack,
                "acked_bytes": np.full(n_acks, MSS, dtype=np.int64),
                "sacked_bytes": np.where(in_rec, MSS, 0).astype(np.int64),
                "dupack": np.where(in_rec, 1, 0).astype(np.uint32),
                "rwnd_bytes": np.full(n_acks, 150 * MSS, dtype=np.int64),
                "rwnd_scale_known": np.ones(n_acks, dtype=bool),
                "ece": np.zeros(n_acks, dtype=bool),
                "rtt_s": rtt_s,
                "rtt_source": pl.Series([None if np.isnan(x) else "ts" for x in rtt_s], dtype=pl.String),
                "snd_max": ack + outstanding,
                "outstanding": outstanding,
                "pipe": outstanding - np.where(in_rec, 3 * MSS, 0),
                "round": round_idx,
                "round_end": round_end,
                "state": pl.Series(state, dtype=pl.String),
                "cong_event": pl.Series(cong.tolist(), dtype=pl.String),
                "spurious_undo": np.zeros(n_acks, dtype=bool),
            }
        ),
        schema.ACKS,
        dsack_bytes=0,
        rtt_raw_s=pl.col("rtt_s"),
        ca_rtt_s=pl.col("rtt_s"),
    )

    # Segments: one new segment per ACK, sent one RTT earlier, plus a retransmission per loss.
    seg_t_ns = t_ns - (base_rtt_s * 1e9 / 2)
    seg_seq = ack + outstanding - MSS
    n_rtx = len(first_loss)
    rtx_pos = np.clip(first_loss, 0, n_acks - 1)
    seg = pl.DataFrame(
        {
            "frame": np.concatenate(
                (np.arange(n_acks, dtype=np.uint64) * 2 + 1, np.arange(n_rtx, dtype=np.uint64) * 2 + 10**9)
            ),
            "ts_ns": np.concatenate((seg_t_ns, t_ns[rtx_pos] + 1000)).astype(np.int64),
            "seq": np.concatenate((seg_seq, ack[rtx_pos])),
            "len": np.full(n_acks + n_rtx, MSS, dtype=np.uint32),
            "kind": pl.Series(["new"] * n_acks + ["fast_retransmission"] * n_rtx, dtype=pl.String),
            "ip_ecn": np.zeros(n_acks + n_rtx, dtype=np.uint8),
        }
    ).sort("ts_ns")
    segments = _conform(
        seg,
        schema.SEGMENTS,
        end_seq=pl.col("seq") + pl.col("len"),
        probe="none",
        rexmit=pl.col("kind") != "new",
        outstanding=pl.lit(None),
    )

    ep_start = t_ns[rtx_pos]
    episodes = _conform(
        pl.DataFrame(
            {
                "episode": np.arange(n_rtx, dtype=np.uint32),
                "kind": pl.Series(["fast_retransmit"] * n_rtx, dtype=pl.String),
                "start_ns": ep_start,
                "end_ns": ep_start + int(base_rtt_s * 1.5e9),
                "start_frame": np.arange(n_rtx, dtype=np.uint64),
                "flight_bytes": outstanding[np.clip(rtx_pos - 1, 0, None)],
                "retrans_bytes": np.full(n_rtx, MSS, dtype=np.int64),
                "recovery_point": ack[rtx_pos] + outstanding[rtx_pos],
            }
        ),
        schema.EPISODES,
        spurious=False,
    )

    rnd = acks.group_by("round", maintain_order=True).agg(
        pl.col("ts_ns").first().alias("start_ns"),
        pl.col("ts_ns").last().alias("end_ns"),
        pl.col("snd_max").first().alias("target_seq"),
        pl.col("outstanding").max().alias("peak_flight_bytes"),
        pl.col("acked_bytes").sum().alias("acked_bytes"),
        pl.col("rtt_s").min().alias("min_rtt_s"),
        pl.col("rwnd_bytes").min().alias("rwnd_bytes"),
        (pl.col("state") != "open").any().alias("in_recovery"),
    )
    nr = rnd.height
    limit = np.where(np.arange(nr) % 17 == 5, "rwnd", np.where(np.arange(nr) % 23 == 7, "app", "cwnd"))
    rounds = _conform(rnd.with_columns(pl.Series("limit", limit, dtype=pl.String)), schema.ROUNDS)

    events = FlowEvents(
        flow_id=flow_id,
        sender_dir=0,
        mss=MSS,
        vantage="sender",
        segments=segments,
        acks=acks,
        episodes=episodes,
        rounds=rounds,
    )

    rtt_f = np.where(np.isnan(rtt_s), rtt, rtt_s)
    diff = flight * (rtt_f - base_rtt_s) / rtt_f
    alpha = flight * 0.004 / rtt_f
    phase = np.where(diff < alpha, "increase", np.where(diff > 3 * alpha, "decrease", "steady"))
    cubic_w = _sawtooth(t, period_s, 0.7 * hi, hi) + 3 * np.sin(t)
    hs_w = _sawtooth(t, period_s, 0.6 * hi, hi * 1.05)
    dwnd = np.maximum(0.0, 30 * np.sin(np.pi * (t % period_s) / period_s))
    loss_part = _sawtooth(t, period_s, lo, hi * 0.8)
    w2 = np.maximum.accumulate(np.where(in_rec, 0.9 * hi, 0.0))
    fa = acks["frame"].to_numpy()  # each replay row answers one ACK: its frame is the join key
    replays = {
        "reno": _replay(t_ns, flight + rng.normal(0, 1, n_acks), state, {}, fa),
        "cubic": _replay(t_ns, cubic_w, state, {"w_max": np.full(n_acks, hi), "k": np.full(n_acks, 2.1)}, fa),
        "highspeed": _replay(t_ns, hs_w, state, {"a_w": 1 + hs_w / 100, "b_w": 0.5 - hs_w / 1000}, fa),
        "fusion": _replay(
            t_ns,
            flight * 1.05,
            state,
            {
                "diff": diff,
                "alpha": alpha,
                "alpha3": 3 * alpha,
                "w_inc": np.full(n_acks, 8.3),
                "phase": pl.Series(phase, dtype=pl.String),
                "reno_cwnd": flight * 0.8,
            },
            fa,
        ),
        "ctcp": _replay(
            t_ns,
            loss_part + dwnd,
            state,
            {
                "lwnd": loss_part,
                "dwnd": dwnd,
                "win": loss_part + dwnd,
                "diff": diff * 0.9,
                "gamma": np.full(n_acks, 30.0),
            },
            fa,
        ),
        "hrf": _replay(
            t_ns,
            flight * 0.95,
            state,
            {
                "mode": pl.Series(np.where(diff < 1.0, "CR", "CI"), dtype=pl.String),
                "k": np.full(n_acks, 625.0),
                "k_prime": 1 / (0.04 + rtt_f - base_rtt_s),
            },
            fa,
        ),
        "kyushu-highspeed": _replay(
            t_ns,
            np.minimum(hs_w, np.where(w2 > 0, w2, np.inf)),
            state,
            {
                "w1": np.full(n_acks, hi),
                "w2": w2,
                "tc": np.floor(t / period_s),
                "non_aggressive": (hs_w > w2) & (w2 > 0),
            },
            fa,
        ),
    }
    fits = []
    for i, algo in enumerate(replays):
        fits.append(
            {
                "flow_id": flow_id,
                "algo": algo,
                "rounds": nr,
                "mare": 0.02 + 0.05 * i,
                "rmse_pkts": 1.0 + 3 * i,
                "corr": 0.99 - 0.07 * i,
                "goodput_pred_bps": 20e6 * (1 + 0.05 * i),
                "goodput_actual_bps": 20e6,
                "rank": i + 1,
            }
        )
    fit = _conform(pl.DataFrame(fits), schema.FIT_METRICS)
    rtt_valid = rtt_s[~np.isnan(rtt_s)]
    flow = {
        "flow_id": flow_id,
        "src": src,
        "sport": 40000 + flow_id,
        "dst": dst,
        "dport": 5201,
        "ip_version": 4,
        "first_ns": int(t_ns[0]),
        "last_ns": int(t_ns[-1]),
        "duration_s": float(t[-1] - t[0]),
        "pkts_ab": n_acks + n_rtx,
        "bytes_ab": (n_acks + n_rtx) * (MSS + 66),
        "pkts_ba": n_acks,
        "bytes_ba": n_acks * 66,
        "payload_ab": (n_acks + n_rtx) * MSS,
        "payload_ba": 0,
        "sender_dir": 0,
        "goodput_bps": n_acks * MSS * 8 / duration_s,
        "mss": MSS,
        "wscale_a": 7,
        "wscale_b": 7,
        "sack_ok": True,
        "ts_ok": True,
        "handshake": True,
        "closed": "fin",
        "retrans": n_rtx,
        "out_of_order": 0,
        "rtt_min_s": float(rtt_valid.min()),
        "rtt_median_s": float(np.median(rtt_valid)),
        "rtt_max_s": float(rtt_valid.max()),
        "rtt_method": "data-ack",
        "vantage": "sender",
    }
    return FlowResult(flow=flow, events=events, replays=replays, fit=fit)


def make_analysis(
    *,
    n_flows: int = 1,
    n_acks: int = 20_000,
    duration_s: float = 20.0,
    path: str = "synthetic.pcap",
    src: str = "10.0.0.1",
) -> Analysis:
    """An Analysis with one capture of ``n_flows`` synthetic flows of ``n_acks`` ACKs each."""
    results = [make_flow(i, n_acks=n_acks, duration_s=duration_s, src=src, seed=i + 1) for i in range(n_flows)]
    flows = _conform(pl.DataFrame([r.flow for r in results]), schema.FLOWS)
    n_pkts = sum(r.events.segments.height + r.events.acks.height for r in results)
    first = min(r.flow["first_ns"] for r in results)
    last = max(r.flow["last_ns"] for r in results)
    meta = CaptureMeta(
        path=path,
        format="pcap",
        link_types=["EN10MB"],
        snaplen=262144,
        packets_total=n_pkts + 3,
        packets_tcp=n_pkts,
        first_ns=first,
        last_ns=last,
        skipped={"non-ip": 3},
        decoded_by={"fast": n_pkts},
    )
    algos = list(results[0].replays)
    params: dict[str, dict[str, Any]] = {a: {} for a in algos}
    params["fusion"] = {"dmin_s": 0.004, "dwinc_s": 0.001, "rtt_source": "round_min"}
    params["ctcp"] = {
        "alpha": 0.125,
        "beta": 0.5,
        "k": 0.75,
        "zeta": 1.0,
        "gamma": 30.0,
        "gamma_tuning": "on",
        "low_window": 41,
    }
    params["cubic"] = {"c": 0.4, "beta": 0.7, "flavor": "rfc"}
    return Analysis(
        captures=[CaptureResult(meta=meta, flows=flows, results=results)],
        algorithms=algos,
        params=params,
        version="0.1.0",
        created=_dt.datetime(2026, 1, 1, tzinfo=_dt.UTC).isoformat(),
    )
