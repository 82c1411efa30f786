"""Replay engine and congestion-control algorithm library (installed as hscc_trace.replay).

Nothing heavy is imported here (the install test imports this package without dependencies);
the public names load lazily:

* :func:`replay` / :func:`replay_flow` / :func:`prepare` / :func:`run` — :mod:`.engine`;
* :func:`resolve`, :func:`resolve_many`, :func:`names` — :mod:`.registry`;
* :func:`fit` — :mod:`.metrics`.

See docs/replay.md for the engine and the algorithm interface, docs/algorithms.md for the
algorithms, parameters and signals.
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "replay": "engine",
    "replay_flow": "engine",
    "prepare": "engine",
    "run": "engine",
    "resolve": "registry",
    "resolve_many": "registry",
    "names": "registry",
    "fit": "metrics",
}


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)
