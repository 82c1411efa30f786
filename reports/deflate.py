"""The report's gzip streams: each figure's JSON payload and each flow's event store.

The page holds them gzip-compressed and base64-encoded; report.js unpacks them with the browser's
``DecompressionStream("gzip")``, which reads any standard gzip stream, so the compressor and its
settings are free. zlib-ng (the ``zlib-ng`` wheel, a dependency) is used when it imports: level 7
with ``Z_FILTERED`` for the payloads (numbers written out as text: 11 % smaller than zlib's level
4) and level 4 for the stores (varint columns: 40 % less CPU than zlib's level 4, 4 % larger) —
on replica-5M's report a fifth less CPU and a page 0.4 MB smaller; every cheaper setting measured
made the page larger (zlib-ng 5 / 3 by 0.9 MB, past its size budget; isal at any level); the
table of levels is in docs/report.md. Without zlib-ng the standard library's zlib at level 4
writes them (the same content, other bytes).

Same input, same bytes (a new compressor per stream, time stamp 0 in the gzip header); the bytes
depend on the compressor (and may on the platform: zlib-ng picks SIMD variants at run time), which
is why the golden digest (tests/golden/outputs_digest.py) compares the decompressed streams.
"""

from __future__ import annotations

import gzip
from types import ModuleType
from typing import Literal
from zlib import Z_DEFAULT_STRATEGY, Z_FILTERED

_ng: ModuleType | None
try:  # a compiled wheel: on a platform it does not build for, the standard library's zlib
    from zlib_ng import zlib_ng as _ng
except ImportError:  # pragma: no cover - exercised by the tests with _ng set to None
    _ng = None

Kind = Literal["figure", "store"]

#: zlib-ng's (level, strategy) per kind of stream (see the module docstring for the measurements)
NG_SETTINGS: dict[str, tuple[int, int]] = {"figure": (7, Z_FILTERED), "store": (4, Z_DEFAULT_STRATEGY)}
#: the standard library's level when zlib-ng is missing
ZLIB_LEVEL = 4


def backend() -> str:
    """``"zlib-ng"`` or ``"zlib"``: which compressor writes the report's streams."""
    return "zlib" if _ng is None else "zlib-ng"


def gzip_bytes(data: bytes | bytearray | memoryview, kind: Kind) -> bytes:
    """``data`` as one gzip stream (modification time 0), compressed for its ``kind``."""
    if _ng is None:
        return gzip.compress(data, compresslevel=ZLIB_LEVEL, mtime=0)
    level, strategy = NG_SETTINGS[kind]
    # wbits 31: gzip framing (zlib-ng writes a header with time stamp 0), a 32 KB window
    c = _ng.compressobj(level, _ng.DEFLATED, 31, 8, strategy)
    return c.compress(data) + c.flush()
