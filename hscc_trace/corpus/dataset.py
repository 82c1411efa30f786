"""The corpus Parquet dataset: one folder per table, one file per *part* per table,
``<dataset>/<table>/<part>.parquet``. A part holds the rows of one or more captures (a worker
writes the captures of a task together: :class:`PartWriter`), and is named by the content hash
(BLAKE3) of its first capture, so a part of one capture is ``<blake3>.parquet``. The ``captures``
file of a part is written last: a part is complete, and every capture in it, once its
``captures`` file exists; a part file of another table without it (a worker that died while
writing the part) is no part of the dataset (:func:`read` leaves it out, a run removes it). The
``errors`` table has one file per failed capture, ``errors/<blake3>.parquet``. Read it with ``polars.scan_parquet(f"{d}/flows/*.parquet")`` or DuckDB
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


#: A worker writes its buffered parts once they hold this many rows of episodes and rounds
#: (besides at the end of every task), so a task's buffer stays small whatever its captures.
FLUSH_ROWS = 1 << 18


def path(dataset: str | Path, table: str, sha: str) -> Path:
    """The file of part (or error) ``sha`` of ``table``."""
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


class PartWriter:
    """The rows of several captures, written as one part per table (:func:`write_part`, the
    ``captures`` file last) by :meth:`flush`: a worker's task buffers its captures here, so the
    fixed cost of a Parquet write (≈ 1.4 ms a file) is paid once per task instead of six times
    per capture. A capture is complete only once its part is flushed; :meth:`flush` leaves out a
    capture another process completed meanwhile (inputs of the same content)."""

    def __init__(self, dataset: str | Path) -> None:
        self.dataset = dataset
        self._reset()

    def _reset(self) -> None:
        self.rows: dict[str, list[Any]] = {t: [] for t in TABLES if t != "errors"}
        self.shas: list[str] = []
        self.after: list[Path] = []  # files to remove once the part is complete
        self.events = 0

    def add(self, sha: str, tables: dict[str, Any], remove: Path | None = None) -> None:
        """Buffer one capture's rows of every table (``tables``: table name → frame, conformed
        here); ``remove``: a file to delete once they are written (its earlier error row)."""
        for t, df in tables.items():
            self.rows[t].append(schema.conform(df, schema.CORPUS_TABLES[t], extra=t == "flows"))
        self.shas.append(sha)
        if remove is not None:
            self.after.append(remove)
        self.events += tables["episodes"].height + tables["rounds"].height

    def __contains__(self, sha: str) -> bool:
        return sha in self.shas

    def flush(self) -> None:
        """Write the buffered captures as one part (nothing when none is buffered)."""
        if not self.shas:
            return
        done = complete(self.dataset)
        keep = [i for i, s in enumerate(self.shas) if s not in done]
        if keep:
            name = self.shas[keep[0]]
            for t in (*[t for t in self.rows if t != "captures"], "captures"):  # captures last
                write_part(self.dataset, t, name, _stacked([self.rows[t][i] for i in keep]), extra=t == "flows")
        for p in self.after:
            p.unlink(missing_ok=True)
        self._reset()


def _stacked(parts: list[Any]) -> Any:
    """``pl.concat(parts, how="diagonal_relaxed")``; parts of one schema (those :meth:`PartWriter.add`
    conformed: all but a ``flows`` part with a column of its own) stacked eagerly, without the
    query a relaxed concat plans (≈ 0.7 ms against ≈ 0.08 ms for 16 parts)."""
    import polars as pl

    if len(parts) == 1:
        return parts[0]
    first = parts[0].schema
    if any(p.schema != first for p in parts[1:]):
        return pl.concat(parts, how="diagonal_relaxed")
    out = parts[0]
    for p in parts[1:]:
        out = out.vstack(p)
    return out


_complete: dict[str, dict[str, frozenset[str]]] = {}  # dataset -> {captures part: its hashes}


def complete(dataset: str | Path) -> set[str]:
    """Content hashes of the captures the dataset holds as analyzed (in a complete part). The
    parts read before are remembered in this process: a look costs a listing of ``captures/``
    and a read of the new parts' ``blake3`` column."""
    import polars as pl

    d = Path(dataset) / "captures"
    seen = _complete.setdefault(str(Path(dataset).resolve()), {})
    try:
        names = {e.name[: -len(".parquet")] for e in os.scandir(d) if e.name.endswith(".parquet")}
    except FileNotFoundError:
        names = set()
    for gone in set(seen) - names:
        del seen[gone]
    for n in names - set(seen):
        seen[n] = frozenset(pl.read_parquet(d / f"{n}.parquet", columns=["blake3"])["blake3"].to_list())
    return set().union(*seen.values()) if seen else set()


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
    """Remove the temporary files of writes a killed run left half done, and the part files of
    parts never completed (no ``captures`` file: a worker died while writing them); returns how
    many. (One run writes a dataset at a time: a second run at once would lose its files in
    flight.)"""
    n = 0
    parts = _parts(dataset)
    for t in TABLES:
        for p in (Path(dataset) / t).glob("*.tmp*"):
            p.unlink(missing_ok=True)
            n += 1
        if t not in ("captures", "errors"):
            for p in (Path(dataset) / t).glob("*.parquet"):
                if p.stem not in parts:
                    p.unlink(missing_ok=True)
                    n += 1
    return n


def _parts(dataset: str | Path) -> set[str]:
    """Names of the complete parts (those with a ``captures`` file)."""
    return {p.stem for p in (Path(dataset) / "captures").glob("*.parquet")}


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
    return complete(dataset) | {p.stem for p in (Path(dataset) / "errors").glob("*.parquet")}


def read(dataset: str | Path, table: str):
    """One table of the dataset as a polars DataFrame (an empty frame with the table's columns
    when it has no file); the files of parts not complete are left out."""
    import polars as pl

    files = sorted((Path(dataset) / table).glob("*.parquet"))
    if table not in ("captures", "errors"):
        parts = _parts(dataset)
        files = [f for f in files if f.stem in parts]
    if not files:
        return schema.empty(schema.CORPUS_TABLES[table])
    try:  # one multi-file read (every file conformed to the schema: the usual case)
        return pl.read_parquet(files)
    except pl.exceptions.PolarsError:  # files of different versions (a column added): file by file
        return pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")
