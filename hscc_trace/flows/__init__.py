"""Flows: decoded TCP rows → connections (the flow table) and packets grouped by connection.

- :mod:`.tracker` — the flow tracker and table (Wireshark's ``tcp.stream`` numbering);
- :mod:`.arena` — the event builder's input columns, grouped by flow while reading;
- :mod:`.ingest` — :func:`load`: a capture file → :class:`~hscc_trace.model.Capture`;
- :mod:`.scan` — :func:`load_flows`: the flow table alone, without building the packet table
  (the fast path of ``hscc-trace flows``).

This package imports only :mod:`hscc_trace.capture` and the base modules (errors, schema, model);
the names below load lazily, so ``hscc-trace flows`` imports no more than it needs.
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "load": "ingest",
    "load_flows": "scan",
    "flow_rows": "scan",
    "FlowTracker": "tracker",
    "build_flows": "tracker",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)
