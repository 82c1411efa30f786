"""Exports through polars: event streams, replays and fit tables to parquet, CSV or JSON.

The format follows the file extension:

============  ====================================================================
``.parquet``  Apache Parquet (zstd), dtypes kept exactly (Enums, UInt64 …)
``.csv``      comma-separated with a header; Enums as text, nulls as empty fields
``.json``     one JSON array of row objects
``.ndjson``   one JSON object per line (also ``.jsonl``)
============  ====================================================================

Column names, dtypes and units are those of :mod:`hscc_trace.schema` (docs/schema.md).
Replays of several algorithms are written as one long table with an ``algo`` column first;
columns an algorithm does not have (another's signals) are null, and enumerations (``state``,
phases, modes) are written as text.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import polars as pl

from hscc_trace.errors import UsageError
from hscc_trace.model import Analysis, FlowEvents, FlowResult

FORMATS = {".parquet": "parquet", ".csv": "csv", ".json": "json", ".ndjson": "ndjson", ".jsonl": "ndjson"}
EVENT_TABLES = ("segments", "acks", "episodes", "rounds")


def format_of(path: str | Path) -> str:
    """``parquet``, ``csv``, ``json`` or ``ndjson`` from the extension; UsageError otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise UsageError(
            f"{path}: unknown output format {suffix or '(no extension)'!r} "
            f"(use {', '.join(FORMATS)}, or - for CSV on standard output)"
        )
    return FORMATS[suffix]


def _csv_ready(df: pl.DataFrame) -> pl.DataFrame:
    """CSV has no nested types: lists and structs become JSON text."""
    nested = [c for c, t in df.schema.items() if isinstance(t, (pl.List, pl.Array, pl.Struct))]
    if not nested:
        return df
    return df.with_columns(
        [pl.col(c).map_elements(lambda v: None if v is None else str(v), return_dtype=pl.String) for c in nested]
    )


def write_table(df: pl.DataFrame, path: str | Path) -> Path | None:
    """Write one DataFrame, the one table writer of every command: the format follows the
    extension (:data:`FORMATS`), ``-`` is CSV on standard output (returns None then). Enum
    columns are written as their strings (polars does so in every text format); nested columns
    as JSON text in CSV.
    Files are written to a temporary file beside the target and renamed into place
    (:mod:`hscc_trace.atomic`). Raises UsageError for an unknown extension."""
    if str(path) == "-":
        sys.stdout.write(_csv_ready(df).write_csv())
        return None
    from hscc_trace.atomic import write_with

    p = Path(path)
    fmt = format_of(p)

    def write(t: Path) -> None:  # a temporary file next to p, renamed into place (hscc_trace.atomic)
        if fmt == "parquet":
            df.write_parquet(t, compression="zstd")
        elif fmt == "csv":
            _csv_ready(df).write_csv(t)
        elif fmt == "json":
            df.write_json(t)
        else:
            df.write_ndjson(t)

    write_with(p, write, "the table")
    return p


def replays_long(replays: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Replays of several algorithms as one table: ``algo`` + schema.REPLAY_BASE + every signal."""
    # Enum columns of different algorithms (state, phase, mode …) have different categories:
    # as text they concatenate; a single replay keeps its Enums
    if len(replays) == 1:
        ((name, df),) = replays.items()
        return df.with_columns(pl.lit(name).alias("algo")).select(["algo", *df.columns])
    frames = [
        df.with_columns(
            pl.lit(name).alias("algo"),
            *[pl.col(c).cast(pl.String) for c, t in df.schema.items() if isinstance(t, pl.Enum)],
        ).select(["algo", *df.columns])
        for name, df in replays.items()
    ]
    if not frames:
        return pl.DataFrame(schema={"algo": pl.String})
    return pl.concat(frames, how="diagonal_relaxed")


def write(obj: Any, path: str | Path, *, table: str | None = None) -> Path | None:
    """Write a DataFrame, a :class:`FlowEvents` table (``table`` = segments/acks/episodes/rounds,
    default acks), a ``{label: replay}`` dict (long format) or a :class:`FlowResult`'s replays."""
    if isinstance(obj, pl.DataFrame):
        return write_table(obj, path)
    if isinstance(obj, FlowEvents):
        name = table or "acks"
        if name not in EVENT_TABLES:
            raise UsageError(f"unknown event table {name!r} (use {', '.join(EVENT_TABLES)})")
        return write_table(getattr(obj, name), path)
    if isinstance(obj, FlowResult):
        return write_table(replays_long(obj.replays) if table in (None, "replay") else getattr(obj.events, table), path)
    if isinstance(obj, dict) and all(isinstance(v, pl.DataFrame) for v in obj.values()):
        return write_table(replays_long(obj), path)
    raise UsageError(f"cannot export a {type(obj).__name__}")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "capture"


def capture_stems(names: list[str]) -> list[str]:
    """The folder of each capture's tables under an export folder, from the captures' file names
    in order: the name, or ``<index>-<name>`` when two captures share it."""
    return [_slug(n) if names.count(n) == 1 else f"{i:03d}-{_slug(n)}" for i, n in enumerate(names)]


TABLES = (*EVENT_TABLES, "replay", "fit")


def flow_tables(fr: FlowResult, tables: Iterable[str] = TABLES) -> Iterator[tuple[str, pl.DataFrame]]:
    """``(table name, DataFrame)`` of one analyzed flow: its event tables, its replays (long
    format) and its fit."""
    for t in tables:
        if t in EVENT_TABLES:
            yield t, getattr(fr.events, t)
        elif t == "replay":
            yield t, replays_long(fr.replays)
        elif t == "fit":
            yield t, fr.fit
        else:
            raise UsageError(f"unknown table {t!r} (use {', '.join(TABLES)})")


def export_flow(fr: FlowResult, folder: str | Path, ext: str, tables: Iterable[str] = TABLES) -> list[Path]:
    """One flow's tables (:func:`flow_tables`) as ``folder/flow<ID>.<table><ext>``; returns the files."""
    fid = int(fr.flow["flow_id"])
    out = []
    for t, df in flow_tables(fr, tables):
        dest = Path(folder) / f"flow{fid}.{t}{ext}"
        write_table(df, dest)
        out.append(dest)
    return out


def export_analysis(
    analysis: Analysis,
    folder: str | Path,
    fmt: str = "parquet",
    tables: Iterable[str] = TABLES,
) -> list[Path]:
    """Every analyzed flow's tables under ``folder``: ``<capture>/flow<ID>.<table>.<fmt>``.

    ``<capture>`` is the capture's file name (its index is prefixed when two captures share a
    name). Returns the files written, in order. (``hscc-trace analyze --export`` writes the same
    files as each flow finishes: :class:`hscc_trace.analysis.stream.Stream`.) A streamed run's
    kept flows are written whole (:meth:`~hscc_trace.model.FlowResult.restored`: replayed, or
    read and analyzed again from the capture, one at a time), never as their emptied tables.
    """
    ext = "." + fmt.lower().lstrip(".")
    format_of(f"x{ext}")
    out: list[Path] = []
    stems = capture_stems([Path(cr.meta.path).name for cr in analysis.captures])
    for stem, cr in zip(stems, analysis.captures):
        for fr in cr.results:
            out += export_flow(fr.restored(), Path(folder) / stem, ext, tables)
    return out
