"""Write an event table to parquet, CSV or JSON, chosen by the file extension."""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

from hscc_trace.errors import InputError

FORMATS = (".parquet", ".csv", ".json")


def write_table(df: pl.DataFrame, out: str) -> None:
    """``out`` = path ending in .parquet/.csv/.json, or ``-`` for CSV on stdout.

    Enum columns are written as strings in CSV/JSON; JSON is an array of row objects.
    """
    if out == "-":
        sys.stdout.write(_plain(df).write_csv())
        return
    ext = Path(out).suffix.lower()
    if ext not in FORMATS:
        raise InputError(f"cannot tell the output format of {out!r}: use .parquet, .csv, .json or '-'")
    from hscc_trace.atomic import write_with

    def write(t: Path) -> None:  # a temporary file next to out, renamed into place (hscc_trace.atomic)
        if ext == ".parquet":
            df.write_parquet(t, compression="zstd")
        elif ext == ".csv":
            _plain(df).write_csv(t)
        else:
            _plain(df).write_json(t)

    write_with(out, write, "the table")


def _plain(df: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns([pl.col(c).cast(pl.String) for c, t in df.schema.items() if isinstance(t, pl.Enum)])
