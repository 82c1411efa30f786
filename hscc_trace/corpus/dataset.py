"""The corpus Parquet dataset: one folder per table, one file per capture per table,
``<dataset>/<table>/<blake3>.parquet`` (partitioned by the capture's content hash, so a capture's
rows are written, replaced or skipped as one unit, and memory never holds more than the captures
in flight). Read it with ``polars.scan_parquet(f"{d}/flows/*.parquet")`` or DuckDB
``read_parquet('d/flows/*.parquet', union_by_name=true)`` (docs/corpus.md).

The tables and their columns are :data:`hscc_trace.schema.CORPUS_TABLES` (docs/schema.md): every
file is conformed to them when written, so every file of a table has the same columns and dtypes
(a capture whose flows were all unfitted still writes ``best`` as a string column). The flows
table also keeps any per-flow column the analysis adds after the schema's, and readers mix old
and new files with ``union_by_name`` / ``how="diagonal_relaxed"``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hscc_trace import schema

TABLES = tuple(schema.CORPUS_TABLES)

#: Columns that measure the run rather than the capture (left out when comparing runs).
TIMING_COLUMNS = ("seconds",)

#: Error reasons recorded in the ``errors`` table.
ERROR_REASONS = schema.CORPUS_ERROR_REASONS


def path(dataset: str | Path, table: str, sha: str) -> Path:
    return Path(dataset) / table / f"{sha}.parquet"


def empty_part(table: str) -> Any:
    """An empty frame with the table's columns."""
    return schema.empty(schema.CORPUS_TABLES[table])


def write_part(dataset: str | Path, table: str, sha: str, df: Any, *, extra: bool = False) -> None:
    """Write one capture's rows of one table atomically (temporary file, then rename), conformed
    to the table's schema; with ``extra``, columns beyond it are kept after it (``flows``: a
    per-flow column the analysis adds reaches the dataset without a change here)."""
    df = schema.conform(df, schema.CORPUS_TABLES[table], extra=extra)
    out = path(dataset, table, sha)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    df.write_parquet(tmp)
    os.replace(tmp, out)


def write_error(dataset: str | Path, sha: str, capture: str, reason: str, message: str) -> None:
    """Record a failed capture: its ``errors`` row, after removing any rows of the other tables a
    worker wrote for it before it failed (so a capture is either analyzed or an error, never both
    half)."""
    import polars as pl

    if reason not in ERROR_REASONS:
        raise ValueError(f"unknown error reason {reason!r}")
    for t in TABLES:
        if t != "errors":
            path(dataset, t, sha).unlink(missing_ok=True)
    row = {"blake3": [sha], "capture": [capture], "reason": [reason], "message": [message]}
    write_part(dataset, "errors", sha, pl.DataFrame(row, schema=schema.polars_schema(schema.CORPUS_ERRORS)))


def remove_partial_writes(dataset: str | Path) -> int:
    """Remove the temporary files of writes a killed run left half done; returns how many. (One
    run writes a dataset at a time: a second run at once would lose its files in flight.)"""
    n = 0
    for t in TABLES:
        for p in (Path(dataset) / t).glob("*.tmp*"):
            p.unlink(missing_ok=True)
            n += 1
    return n


def check_key(dataset: str | Path) -> None:
    """Raise :class:`~hscc_trace.errors.InputError` for a dataset an older version wrote, keyed by
    SHA-256 (a ``sha256`` column; BLAKE3 since results schema 2.0): this version would not find
    its captures and would add each again under another name."""
    import polars as pl

    from hscc_trace.errors import InputError

    for t in ("captures", "errors"):
        for p in (Path(dataset) / t).glob("*.parquet"):
            if "sha256" in pl.read_parquet_schema(p):
                raise InputError(
                    f"{dataset}: a dataset keyed by SHA-256, written by an older hscc-trace (now BLAKE3): "
                    "write this run to a new folder"
                )
            return


def done(dataset: str | Path) -> set[str]:
    """Content hashes of the captures the dataset already holds (analyzed or recorded as errors)."""
    d = Path(dataset)
    return {p.stem for t in ("captures", "errors") for p in (d / t).glob("*.parquet")}


def read(dataset: str | Path, table: str):
    """One table of the dataset as a polars DataFrame (an empty frame with the table's columns
    when it has no file)."""
    import polars as pl

    files = sorted((Path(dataset) / table).glob("*.parquet"))
    if not files:
        return schema.empty(schema.CORPUS_TABLES[table])
    try:  # one multi-file read (every file conformed to the schema: the usual case)
        return pl.read_parquet(files)
    except pl.exceptions.PolarsError:  # files of different versions (a column added): file by file
        return pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")
