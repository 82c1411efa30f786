"""The one user cache folder of everything hscc-trace compiles, never the installed package:
``$HSCC_TRACE_CACHE_DIR``, else ``$XDG_CACHE_HOME/hscc-trace``, else ``~/.cache/hscc-trace``.
``replay/`` holds the generated loop modules and their numba cache, ``numba/`` numba's cache of
every other kernel, ``compiled/`` the first-use rule's stamps. Left to itself numba would cache
beside the sources: in ``site-packages``, outliving an uninstall and shadowing a later install.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: held while :func:`numba_njit` changes ``numba.config.CACHE_DIR`` (and by replay.compile)
numba_settings_lock = threading.Lock()


def cache_root() -> Path:
    """The cache folder (not created)."""
    env = os.environ.get("HSCC_TRACE_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "hscc-trace"


def writable_dir(name: str) -> Path:
    """``cache_root()/name``, created; under the system's temporary folder if not writable."""
    d = cache_root() / name
    with contextlib.suppress(OSError):
        d.mkdir(parents=True, exist_ok=True)
        if os.access(d, os.W_OK | os.X_OK):
            return d
    import tempfile  # (only here: importing it costs every run of `flows` a few ms)

    d = Path(tempfile.gettempdir()) / f"hscc-trace-{os.getuid()}" / name
    d.mkdir(parents=True, exist_ok=True)
    return d


def numba_njit(fn: Callable[..., Any], callees: str = "", **options: Any) -> Any:
    """``numba.njit(**options)(fn)``, numba's cache of ``fn`` in ``cache_root()/numba`` (or the user's or
    :func:`hscc_trace.perf.activate`'s ``NUMBA_CACHE_DIR``), subfolder ``callees-<callees>`` if given
    (:meth:`.firstuse.Kernel.callees`). numba reads ``numba.config.CACHE_DIR`` once, when the
    dispatcher is made, so it is set for that moment only (numba has no per-function option)."""
    import numba

    user = os.environ.get("NUMBA_CACHE_DIR")
    if not options.get("cache") or (user and not callees):
        return numba.njit(**options)(fn)
    folder = os.path.join(user or str(writable_dir("numba")), f"callees-{callees}" if callees else "")
    config: Any = numba.config  # (its settings are set from the environment: not in its stubs)
    with numba_settings_lock:
        before, config.CACHE_DIR = config.CACHE_DIR, folder
        try:
            return numba.njit(**options)(fn)
        finally:
            config.CACHE_DIR = before
