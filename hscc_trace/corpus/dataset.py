"""The corpus Parquet dataset: one folder per table, one file per capture per table,
``<dataset>/<table>/<sha256>.parquet`` (partitioned by capture content hash, so a capture's rows are
written, replaced or skipped as one unit). Read it with ``polars.scan_parquet(f"{d}/flows/*.parquet")``
or DuckDB ``read_parquet('d/flows/*.parquet', union_by_name=true)`` (docs/corpus.md).

Tables (columns: ``sha256`` + ``capture`` + the schema module's columns where one exists):
``captures`` (one row per analyzed capture; written last, it marks the capture complete),
``flows`` (schema.FLOWS + best, best_mare), ``fits`` (schema.FIT_METRICS), ``episodes``
(flow_id + schema.EPISODES), ``rounds`` (one summary row per flow), ``errors`` (one row per capture
that failed: reason + message). New per-flow columns (e.g. a ``verdict``) are added to ``flows``;
readers use ``union_by_name`` / ``how="diagonal_relaxed"`` so old and new files mix.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

TABLES = ("captures", "flows", "fits", "episodes", "rounds", "errors")

#: Columns that measure the run rather than the capture (left out when comparing runs).
TIMING_COLUMNS = ("seconds", "created")

#: Error reasons recorded in the ``errors`` table.
ERROR_REASONS = ("unreadable", "worker_died", "timeout", "internal")


def path(dataset: str | Path, table: str, sha: str) -> Path:
    return Path(dataset) / table / f"{sha}.parquet"


def write_part(dataset: str | Path, table: str, sha: str, df: Any) -> None:
    """Write one capture's rows of one table atomically (temporary file, then rename)."""
    out = path(dataset, table, sha)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    df.write_parquet(tmp)
    os.replace(tmp, out)


def done(dataset: str | Path) -> set[str]:
    """Content hashes of the captures the dataset already holds (analyzed or recorded as errors)."""
    d = Path(dataset)
    return {p.stem for t in ("captures", "errors") for p in (d / t).glob("*.parquet")}


def read(dataset: str | Path, table: str):
    """One table of the dataset as a polars DataFrame (empty frame when it has no file)."""
    import polars as pl

    files = sorted((Path(dataset) / table).glob("*.parquet"))
    if not files:
        return pl.DataFrame()
    return pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")
