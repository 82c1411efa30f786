"""Plotly figures and the self-contained HTML report (installed as hscc_trace.reports).

Public API (imported lazily so that ``import hscc_trace.reports`` stays light):

* :func:`write_report` ``(analysis, path, *, max_points=2000, max_flows=25, budget_points=1_700_000,
  full_resolution=True, full_resolution_events=10_000_000, detail_points=5000, row_class=…) -> ReportInfo``
* :func:`flow_figures` ``(flow_result) -> dict[str, plotly Figure]`` for notebooks (one per panel);
  it needs plotly's Python package, the ``notebook`` extra (else a one-line usage error) — the HTML
  report does not: it inlines the plotly.js bundle vendored beside this file
* :class:`ReportInfo`
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["write_report", "flow_figures", "ReportInfo"]

if TYPE_CHECKING:  # pragma: no cover
    from .figures import flow_figures
    from .html import ReportInfo, write_report


def __getattr__(name: str) -> Any:
    if name in ("write_report", "ReportInfo"):
        from . import html

        return getattr(html, name)
    if name == "flow_figures":
        from .figures import flow_figures

        return flow_figures
    raise AttributeError(f"module 'hscc_trace.reports' has no attribute {name!r}")
