"""Corpus scale: analyze many captures on Dask distributed into a Parquet dataset (issue 21).

Unit of work = one capture. A worker analyzes it through :mod:`hscc_trace.api`, writes one Parquet
file per table for that capture (``<dataset>/<table>/<sha256>.parquet``) and returns a small
summary, so memory does not grow with the corpus and an interrupted run loses at most the captures
in flight. Nothing here prints.
"""
