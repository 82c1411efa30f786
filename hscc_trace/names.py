"""File names that are not text: Linux file names are bytes, and Python hands a name that is not
valid UTF-8 over as a ``str`` with lone surrogates (PEP 383 ``surrogateescape``). Such a string
opens the file fine but cannot be encoded as UTF-8: JSON, HTML and XML outputs must show it with
U+FFFD replacement characters (:func:`display`) and keep the exact bytes in hexadecimal
(:func:`raw_hex`) so the file can still be identified.
"""

from __future__ import annotations

import os


def raw_bytes(path: str | os.PathLike) -> bytes:
    """The name's bytes as the file system has them."""
    return os.fsencode(path)


def is_text(path: str | os.PathLike) -> bool:
    """Whether the name is valid UTF-8 (it can be written as text as it is)."""
    try:
        raw_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def display(path: str | os.PathLike) -> str:
    """The name as text: bytes that are not UTF-8 become U+FFFD."""
    return raw_bytes(path).decode("utf-8", "replace")


def os_error(path: str | os.PathLike, exc: OSError) -> str:
    """A one-line message for an OSError about ``path`` (``stat``, ``open``): the name as text,
    then why; a name too long for the file system says which limit it broke."""
    import errno

    name = display(path)
    if exc.errno == errno.ENAMETOOLONG:
        parts = [len(p) for p in raw_bytes(path).split(b"/")]
        longest = max(parts, default=0)
        if longest > 255:
            return f"{name}: file name too long ({longest} bytes in one name; file systems allow 255)"
        return f"{name}: path too long ({len(raw_bytes(path))} bytes; the limit is 4095)"
    if exc.errno == errno.ENOENT:
        return f"{name}: no such file"
    return f"{name}: {exc.strerror or exc}"


def raw_hex(path: str | os.PathLike) -> str | None:
    """The name's bytes in hexadecimal when it is not valid UTF-8, else None."""
    return None if is_text(path) else raw_bytes(path).hex()
