"""Where hscc-trace keeps what it compiles: one user cache folder, never the installed package.

``$HSCC_TRACE_CACHE_DIR``, else ``$XDG_CACHE_HOME/hscc-trace``, else ``~/.cache/hscc-trace``:

- ``replay/`` — the generated per-algorithm loop modules and their numba cache
  (:mod:`hscc_trace.replay.compile`; a version of a loop not loaded for 30 days is removed when
  a newer one is written);
- ``numba/`` — numba's cache of every other compiled kernel, from the ``hscc-trace`` command
  and from a program that imports the library alike: each of the project's dispatchers is made
  by :func:`numba_njit`, which points numba's cache at this folder for that one function (a
  ``NUMBA_CACHE_DIR`` the user set wins). Left to itself numba writes its cache beside the
  module sources: inside ``site-packages`` for a regular install, where the folders it creates
  outlive an uninstall and shadow a later editable install of the same package, or inside the
  source tree of a checkout.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: held while :func:`numba_njit` changes ``numba.config.CACHE_DIR``; code that makes numba
#: dispatchers with numba's own cache rule (replay.compile's generated loop modules) holds it too
numba_settings_lock = threading.Lock()


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


def numba_njit(fn: Callable[..., Any], **options: Any) -> Any:
    """``numba.njit(**options)(fn)``, with numba's cache of ``fn`` (``cache=True``) in
    ``cache_root()/numba`` instead of beside the module's source.

    numba picks a function's cache folder once, when the dispatcher is made, from
    ``numba.config.CACHE_DIR`` (its ``NUMBA_CACHE_DIR``); the setting is changed for that moment
    only and put back, so other numba code in the same process keeps numba's own rule. This is
    the one place that sets it (an adapter: numba has no per-function cache-folder option; one
    would make it unnecessary). ``NUMBA_CACHE_DIR`` set by the user, or already set for the
    ``hscc-trace`` command by :func:`hscc_trace.perf.activate`, is left to numba.
    """
    import numba

    if not options.get("cache") or os.environ.get("NUMBA_CACHE_DIR"):
        return numba.njit(**options)(fn)
    folder = str(writable_dir("numba"))
    config: Any = numba.config  # (its settings are set from the environment: not in its stubs)
    with numba_settings_lock:
        before = config.CACHE_DIR
        config.CACHE_DIR = folder
        try:
            return numba.njit(**options)(fn)
        finally:
            config.CACHE_DIR = before
