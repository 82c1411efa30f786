"""Plotly figures and the self-contained HTML report (installed as hscc_trace.reports)."""
