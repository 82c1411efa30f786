"""Kernel ground truth beside a capture: the sender's real window and its algorithm's own state.

The project's samples (``samples/<name>/``, docs/testbed.md) keep what the sending kernel did
beside each capture, on the capture's clock:

- ``truth_probe.parquet`` (:data:`hscc_trace.schema.TRUTH_PROBE`): one ``tcp:tcp_probe`` row per
  ACK the sender processed, with ``snd_cwnd`` — the window the kernel really used, whatever
  module set it;
- ``truth_signals.parquet`` (BPF senders and BBR): the congestion control's own variables
  (``dwnd``, ``diff``, ``phase``, ``w2`` …, named as the replay's signals where they are the same
  quantity), written by the program itself (samples/README.md);
- ``meta.json``: which algorithm each flow's sender ran (``flows[].algo``, else ``flows[].cc``),
  by the data sender's port.

When they are there, ``analyze`` attaches them to the flow (:class:`~hscc_trace.model.KernelTruth`)
and the report draws them over the replays, so the replayed and the kernel's values can be read
together. Anyone can provide the same files for their own captures (the schemas are in
docs/schema.md); nothing else is read.

Alignment: a probe fires at the top of the kernel's ACK processing, so it shows the state left
by the ACK before it; :func:`hscc_trace.replay.metrics.truth_alignment` finds that ACK in the
capture (matching ``snd_una`` with the ACK number after a clock-offset search). A signal line is
written while the kernel processes an ACK: the ACK after the probe just before it.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from hscc_trace.model import FlowEvents, KernelTruth

PROBE = "truth_probe.parquet"
SIGNALS = "truth_signals.parquet"
META = "meta.json"
#: share of the probes that must find their ACK for the truth to be drawn: the probes are taken
#: at the sender, and away from it (a receiver-side capture) the ACKs are seen a one-way delay
#: earlier than the ±3 ms clock search of truth_alignment reaches
MIN_MATCHED = 0.5
#: truth_signals columns that are not the algorithm's variables
_NOT_SIGNALS = ("ts_ns", "sport", "event", "event_code", "snd_cwnd", "ssthresh")


def truth_dir(capture: str | Path) -> Path | None:
    """The folder of ``capture`` when it holds kernel truth (``truth_probe.parquet``), else None
    (and None for standard input, ``-``)."""
    if str(capture) == "-":
        return None
    folder = Path(capture).parent
    try:
        return folder if (folder / PROBE).is_file() else None
    except OSError:
        return None


@functools.lru_cache(maxsize=2)  # (a capture's probe and signals: its flows are analyzed together)
def _read_cached(path: str, mtime_ns: int) -> dict[int | None, pl.DataFrame] | None:
    """The file's rows by sender port (``None``: every row, for a file without ``sport``), in the
    file's order: split once, so that a capture's flows do not each filter the whole file."""
    try:
        df = pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError):
        return None
    if "sport" not in df.columns:
        return {None: df}
    if not df.schema["sport"].is_integer():  # (a bad file: the flow's warning names it, the overlay is not drawn)
        raise pl.exceptions.ComputeError(f"{Path(path).name}: column sport is {df.schema['sport']}, not a port number")
    df = df.filter(pl.col("sport").is_not_null())  # (rows of no flow, as the filter by port dropped them)
    return {int(k[0]): part for k, part in df.partition_by("sport", as_dict=True, maintain_order=True).items()}


def _read(path: Path, sport: int) -> pl.DataFrame | None:
    """The rows of a truth file for the flow whose data sender has port ``sport`` (a file without
    ``sport`` holds one flow: all of it); None when unreadable. Read once per run for all of a
    capture's flows."""
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        return None
    parts = _read_cached(str(path), mtime)
    if parts is None:
        return None
    if None in parts:
        return parts[None]
    return parts.get(sport, _EMPTY)


#: no row for this flow (a truth file of other connections)
_EMPTY = pl.DataFrame()


def _sender_port(flow: dict[str, Any], ev: FlowEvents) -> int:
    return int(flow["sport"] if ev.sender_dir == 0 else flow["dport"])


def _algo(folder: Path, sport: int) -> str | None:
    try:
        meta = json.loads((folder / META).read_text())
    except (OSError, ValueError):
        return None
    for f in meta.get("flows", []) if isinstance(meta, dict) else []:
        if isinstance(f, dict) and f.get("sport") == sport:
            algo = f.get("algo") or f.get("cc")
            return str(algo) if algo else None
    return None


def flow_truth(folder: Path, flow: dict[str, Any], ev: FlowEvents) -> KernelTruth | None:
    """The kernel truth of one flow, aligned to its ACKs; None when the folder has none for it
    (another connection, no matching probe, unreadable files)."""
    from hscc_trace.replay.metrics import truth_alignment

    sport = _sender_port(flow, ev)
    probe = _read(folder / PROBE, sport)
    if probe is None or probe.height == 0 or ev.acks.height == 0:
        return None
    if not {"ts_ns", "snd_una", "snd_cwnd"} <= set(probe.columns):
        return None
    probe = probe.sort("ts_ns")
    idx = truth_alignment(ev.acks, probe)
    ok = idx >= 0
    if ok.mean() < MIN_MATCHED:
        return None
    ack_frame = ev.acks.get_column("frame").to_numpy()
    ack_ts = ev.acks.get_column("ts_ns").to_numpy()
    window = pl.DataFrame(
        {
            "frame": ack_frame[idx[ok]],
            "ts_ns": ack_ts[idx[ok]],
            "snd_cwnd": probe.get_column("snd_cwnd").cast(pl.Float64).to_numpy()[ok],
        }
    ).sort("ts_ns", maintain_order=True)
    signals = None
    if (folder / SIGNALS).is_file():
        sig = _read(folder / SIGNALS, sport)
        if sig is not None and "ts_ns" not in sig.columns:
            sig = None
        if sig is not None and sig.height:
            # the ACK whose processing wrote the line: the one after the probe just before it
            pts = probe.get_column("ts_ns").to_numpy()
            j = np.searchsorted(pts, sig.get_column("ts_ns").to_numpy(), side="right") - 1
            k = np.where(j >= 0, idx[np.maximum(j, 0)], -1)
            keep = (k >= 0) & (k + 1 < ack_frame.shape[0])
            k = k[keep] + 1
            values = [c for c in sig.columns if c not in _NOT_SIGNALS and sig.schema[c].is_numeric()]
            signals = (
                pl.DataFrame({"frame": ack_frame[k], "ts_ns": ack_ts[k]})
                .hstack(sig.filter(pl.Series(keep)).select(values))
                .sort("ts_ns", maintain_order=True)
            )
    return KernelTruth(source=str(folder), algo=_algo(folder, sport), window=window, signals=signals)
