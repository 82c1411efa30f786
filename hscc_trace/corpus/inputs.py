"""Corpus inputs: local paths and globs, fsspec URLs (``s3://``, ``gs://``, ``https://``, incl.
``.pcap.gz``), and lists of inputs read from a file (one per line, ``#`` comments)."""

from __future__ import annotations

import glob
import threading
from collections.abc import Iterable
from pathlib import Path

from hscc_trace.errors import InputError

CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap", ".dmp", ".pcap.gz", ".pcapng.gz", ".cap.gz")


def is_url(s: str) -> bool:
    return "://" in s and not s.startswith("file://")


def read_list(path: str | Path) -> list[str]:
    """Inputs listed in a file, one per line; blank lines and ``#`` comments ignored."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the input list ({exc.strerror or exc})") from None
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def expand(items: Iterable[str]) -> list[str]:
    """Expand directories (recursively, capture suffixes only), globs and URL globs, in order,
    without duplicates. A path that matches nothing raises :class:`InputError`."""
    out: list[str] = []
    for item in items:
        item = str(item)
        if item.startswith("file://"):
            item = item[len("file://") :]
        if is_url(item):
            if any(ch in item for ch in "*?["):
                import fsspec

                fs, _, paths = fsspec.get_fs_token_paths(item)
                proto = item.split("://", 1)[0]
                out += [p if "://" in p else f"{proto}://{p}" for p in sorted(paths)]
            else:
                out.append(item)
            continue
        p = Path(item)
        if p.is_dir():
            out += sorted(str(f) for f in p.rglob("*") if f.is_file() and f.name.lower().endswith(CAPTURE_SUFFIXES))
        elif p.exists():
            out.append(str(p))
        else:
            hits = sorted(glob.glob(item, recursive=True))
            if not hits:
                raise InputError(f"{item}: no such file, directory or glob match")
            out += [h for h in hits if Path(h).is_file()]
    return list(dict.fromkeys(out))


def check_protocols(items: Iterable[str]) -> None:
    """Raise :class:`InputError` (one line) for the first URL whose protocol this installation
    cannot read: fsspec knows ``s3://`` and ``gs://`` but needs ``s3fs`` / ``gcsfs`` installed."""
    seen: set[str] = set()
    for item in items:
        if not is_url(item):
            continue
        proto = item.split("://", 1)[0].lower()
        if proto in seen:
            continue
        seen.add(proto)
        import fsspec

        try:
            fsspec.get_filesystem_class(proto)
        except (ImportError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(f"{item}: cannot read {proto}:// URLs with this installation ({first})") from None


def name_key(item: str) -> str:
    """The key of an input whose bytes could not be read (so it has no content hash): BLAKE3 of
    ``"input:" + item``."""
    import blake3

    return blake3.blake3(("input:" + item).encode()).hexdigest()


_buffers = threading.local()  # each thread's read buffer of content_hash


def content_hash(path: str) -> str:
    """BLAKE3 of a local file's bytes (as stored: a .gz file is hashed compressed), the digest of
    the results document (:func:`hscc_trace.analysis.results.digest_file`). Read into one buffer
    per thread, kept: a new 1 MiB block per read (``f.read``) cost as much CPU as the hash (a
    corpus capture of ≈ 1 MB: 0.69 → 0.36 ms)."""
    import blake3

    buf = getattr(_buffers, "buf", None)
    if buf is None:
        buf = _buffers.buf = bytearray(1 << 20)
    view = memoryview(buf)
    h = blake3.blake3()
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            h.update(view[:n])
    return h.hexdigest()


def fetch_local(item: str, tmpdir: str) -> str:
    """A local path for an input: itself, or a copy of a URL in ``tmpdir`` (same file name, so
    ``.gz`` decompression by the capture reader still applies)."""
    if not is_url(item):
        return item
    import fsspec

    dest = Path(tmpdir) / (Path(item.split("?", 1)[0]).name or "capture")
    with fsspec.open(item, "rb") as src, open(dest, "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
    return str(dest)
