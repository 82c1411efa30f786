"""Where hscc-trace keeps what it compiles: one user cache folder, never the installed package.

``$HSCC_TRACE_CACHE_DIR``, else ``$XDG_CACHE_HOME/hscc-trace``, else ``~/.cache/hscc-trace``:

- ``replay/`` — the generated per-algorithm loop modules and their numba cache
  (:mod:`hscc_trace.replay.compile`; a version of a loop not loaded for 30 days is removed when
  a newer one is written);
- ``numba/`` — numba's cache of every other compiled kernel when run from the ``hscc-trace``
  command (:func:`hscc_trace.perf.activate` sets ``NUMBA_CACHE_DIR`` to it unless the user set
  it). Without it numba writes its cache beside the module sources: inside ``site-packages``
  for a regular install, where the folders it creates outlive an uninstall and shadow a later
  editable install of the same package.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The cache folder (not created)."""
    env = os.environ.get("HSCC_TRACE_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "hscc-trace"


def writable_dir(name: str) -> Path:
    """``cache_root()/name``, created; a folder under the system's temporary directory if that
    cannot be written."""
    d = cache_root() / name
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = d / f".w{os.getpid()}"
        probe.write_text("")
        probe.unlink()
        return d
    except OSError:
        import tempfile  # (only here: importing it costs every run of `flows` a few ms)

        d = Path(tempfile.gettempdir()) / f"hscc-trace-{os.getuid()}" / name
        d.mkdir(parents=True, exist_ok=True)
        return d
