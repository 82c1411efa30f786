"""The report's gzip streams: each figure's JSON payload and each flow's event store.

The page holds them gzip-compressed and base64-encoded; report.js unpacks them with the browser's
``DecompressionStream("gzip")``, which reads any standard gzip stream, so the compressor and its
settings are free. zlib-ng (the ``zlib-ng`` wheel, a dependency) is used when it imports, with a
level and strategy per kind of stream chosen by measurement; without it the standard library's
zlib at level 4 writes them, as before zlib-ng (the same content, other bytes).

Measured in the report's worker thread on replica-5M (50 payloads, 34.0 MB of JSON text; 25
stores, 96.3 MB of binary columns; two runs each, load 4.6-7), CPU and compressed size:

=============================  ==================  ==================  =====================
                               payloads            stores              together
=============================  ==================  ==================  =====================
zlib 4 (before; the fallback)  0.89-0.94 s 7.87 MB 1.80-1.93 s 13.81   2.69-2.87 s 21.68 MB
zlib-ng 7 Z_FILTERED / 4       1.12-1.20 s 7.03    1.02-1.10 s 14.36   2.14-2.30 s 21.39
zlib-ng 7 / 5                  0.99-1.00 s 7.32    1.27-1.30 s 14.02   2.27-2.29 s 21.34
zlib-ng 5 / 3                  0.66-0.69 s 7.74    0.93-0.97 s 14.62   1.59-1.66 s 22.36
=============================  ==================  ==================  =====================

The payloads, numbers written out as text, compress best with zlib-ng's level 7 and
``Z_FILTERED`` (short matches given up for literals: 11 % smaller than zlib's level 4, 25 % more
CPU); the stores, varint columns, with its level 4 (40 % less CPU than zlib's level 4, 4 % larger).
Together: a fifth less CPU and a page 0.4 MB smaller. Cheaper settings make the page larger
(zlib-ng 5 / 3 above: 0.9 MB, over the size budget of docs/report.md), as does isal at any of its
levels (its level 3: 15.4 MB of stores). The offline measurements are in docs/report.md.

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
#: the standard library's level when zlib-ng is missing (the report's streams before zlib-ng)
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
