"""Atomic output files: every file hscc-trace writes (JSON results, the HTML report, JUnit XML,
exported and event tables) is written to a temporary file in the target's folder and renamed
into place (``os.replace``, atomic on POSIX within one file system). A failure — a full disk, an
exception while writing, Ctrl-C — leaves the previous file (or none) and never a truncated or
empty one; the temporary file is removed.

A target that exists and is not a regular file (``/dev/stdout``, a named pipe) is written
directly: renaming over it would replace the device or the pipe.

Errors are :class:`~hscc_trace.errors.InputError` with one line naming the file, e.g.
``out/report.html: cannot write the report (No space left on device)``.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from hscc_trace.errors import InputError
from hscc_trace.names import display


def _mode_for(target: str) -> int:
    """Permission bits for a new file at ``target``: the existing file's, else 0666 minus the
    umask (what ``open(target, "w")`` would give; mkstemp's files are 0600)."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _fail(path: str | os.PathLike, what: str, exc: OSError) -> InputError:
    return InputError(f"{display(path)}: cannot write {what} ({exc.strerror or exc})")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, what: str = "the output", *, parents: bool = True) -> Iterator[Path]:
    """Yield a temporary path next to ``path`` to write to; on a normal exit it is renamed to
    ``path``, on an exception removed. Missing parent folders are created unless not
    ``parents``. ``what`` names the output in error messages ("the report", "JUnit XML" …)."""
    target = os.fspath(path)
    try:
        st = os.stat(target)
        special = not stat.S_ISREG(st.st_mode)
    except OSError:
        special = False
    if special:  # /dev/stdout, a FIFO …: write in place
        try:
            yield Path(target)
        except OSError as exc:
            raise _fail(path, what, exc) from None
        return
    real = os.path.realpath(target) if os.path.islink(target) else target
    folder = os.path.dirname(real) or "."
    try:
        if parents:
            os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".hscc-trace-", suffix=".tmp")
        os.close(fd)
    except OSError as exc:
        raise _fail(path, what, exc) from None
    try:
        try:
            yield Path(tmp)
            os.chmod(tmp, _mode_for(real))
            os.replace(tmp, real)
        except OSError as exc:
            raise _fail(path, what, exc) from None
    finally:
        with contextlib.suppress(OSError):
            if os.path.exists(tmp):
                os.unlink(tmp)


#: :func:`write_text` encodes and writes a long text this many characters at a time: never a
#: second copy of the whole text in memory (the report of replica-5M: 30 MB of UTF-8)
TEXT_CHUNK = 1 << 20


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace").encode("utf-8")


def write_text(path: str | os.PathLike, text: str, what: str = "the output", *, parents: bool = True) -> Path:
    """Write ``text`` as UTF-8, atomically. Lone surrogates (from a file name that is not valid
    UTF-8, decoded by Python with ``surrogateescape``) are written as U+FFFD instead of failing.
    A long text is encoded and written a piece at a time (:func:`write_texts`), the same bytes."""
    if len(text) <= TEXT_CHUNK:
        data = _utf8(text)
        return write_with(path, lambda p: p.write_bytes(data), what, parents=parents)
    return write_texts(path, [text], what, parents=parents)


def write_texts(path: str | os.PathLike, texts: list[str], what: str = "the output", *, parents: bool = True) -> Path:
    """:func:`write_text` of ``"".join(texts)`` — the same bytes — without joining them or encoding
    the whole at once: each text is encoded and written :data:`TEXT_CHUNK` characters at a time
    (the HTML report of replica-5M is 30 MB of UTF-8, 60 MB as a Python string). From the first
    piece with a lone surrogate on, the rest is converted at once: what precedes it is whole
    UTF-8 characters, so converting it separately changes nothing."""

    def writer(p: Path) -> None:
        with open(p, "wb") as f:
            for i, text in enumerate(texts):
                for k in range(0, len(text), TEXT_CHUNK):
                    try:
                        f.write(text[k : k + TEXT_CHUNK].encode("utf-8"))
                    except UnicodeEncodeError:
                        f.write(_utf8(text[k:] + "".join(texts[i + 1 :])))
                        return

    return write_with(path, writer, what, parents=parents)


def write_with(
    path: str | os.PathLike, writer: Callable[[Path], object], what: str = "the output", *, parents: bool = True
) -> Path:
    """Atomically write ``path`` by calling ``writer(temporary path)``."""
    with atomic_path(path, what, parents=parents) as tmp:
        writer(tmp)
    return Path(path)
