"""Corpus scale: analyze many captures on Dask distributed into a Parquet dataset (issue 21).

Unit of work = a batch of captures. A worker analyzes each through :mod:`hscc_trace.api`, writes
the batch's rows as one Parquet file per table (a *part*, ``<dataset>/<table>/<part>.parquet``:
:mod:`hscc_trace.corpus.dataset`) and returns small summaries, so memory does not grow with the
corpus and an interrupted run loses at most the batches in flight. Nothing here prints.
"""

from __future__ import annotations

#: what a corpus run needs beyond the base install — Dask distributed for the workers, fsspec
#: (with aiohttp) for inputs given as URLs: the ``corpus`` extra, ``pip install 'hscc-trace[corpus]'``
#: (pyproject.toml). Left out of the base install, which analyzes captures without them: they are
#: ≈ 25 packages, 13–19 s of a fresh ``pip install .`` on a 2-core machine (docs/performance.md).
NEEDS = ("dask", "distributed", "fsspec")


def require() -> None:
    """:class:`hscc_trace.errors.UsageError` (one line, naming the extra to install) when a
    module of :data:`NEEDS` cannot be imported."""
    from hscc_trace.errors import require_extra

    require_extra("corpus", NEEDS, "a corpus run (--dataset)")
