#!/usr/bin/env python3
"""Compare two corpus datasets table by table, whatever their file layout: every Parquet file
of each table is read (polars, no hscc-trace code), the timing columns dropped, the rows sorted
by every column, and the frames compared exactly (same columns, dtypes, rows and values; nulls
and NaNs equal). Prints one line per table; exit status 1 when any table differs.

Usage: python benchmarks/compare_datasets.py DATASET_A DATASET_B
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

TABLES = ("captures", "flows", "fits", "episodes", "rounds", "groups", "errors")
TIMING = ("seconds",)


def table(dataset: Path, name: str) -> pl.DataFrame | None:
    files = sorted((dataset / name).glob("*.parquet"))
    if not files:
        return None
    df = pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")
    df = df.drop([c for c in TIMING if c in df.columns])
    df = df.select(sorted(df.columns))
    sortable = [c for c, t in df.schema.items() if not isinstance(t, (pl.List, pl.Struct, pl.Array))]
    return df.sort(sortable, nulls_last=True)


def main(argv: list[str]) -> int:
    a, b = Path(argv[0]), Path(argv[1])
    bad = 0
    for t in TABLES:
        x, y = table(a, t), table(b, t)
        if x is None or y is None:
            same = x is None and y is None or (x if y is None else y).height == 0
            rows = 0 if x is None and y is None else (x if x is not None else y).height
        else:
            same, rows = x.equals(y, null_equal=True), x.height
            if x.schema != y.schema:
                same = False
        files = (len(list((a / t).glob("*.parquet"))), len(list((b / t).glob("*.parquet"))))
        print(f"{t:9s} {'same' if same else 'DIFFERENT'}: {rows} rows; files {files[0]} / {files[1]}")
        bad += not same
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
