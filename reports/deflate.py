"""The report's gzip streams: each figure's JSON payload and each flow's event store.

The page holds them gzip-compressed and base64-encoded; report.js unpacks them with the browser's
``DecompressionStream("gzip")``, which reads any standard gzip stream, so the compressor and its
settings are free. zlib-ng (the ``zlib-ng`` wheel, a dependency) is used when it imports, with a
level and strategy per kind of stream chosen by measurement; without it the standard library's
zlib at level 4, as before. On the uncompressed streams of one replica-5M report (51 figure
payloads, 35.2 MB; 25 stores, 96.3 MB), CPU seconds and compressed MB on this machine:

=========================  ===============  ================
                           figures          stores
=========================  ===============  ================
zlib level 4 (fallback)    0.65-0.86 / 8.28 1.50-1.97 / 13.81
zlib-ng 4                  0.57 / 8.39      0.69-1.01 / 14.36
zlib-ng 5 (= 6 in size)    0.48-0.61 / 8.14 0.87-1.06 / 14.02
zlib-ng 7                  0.70-0.88 / 7.72 1.78 / 13.33
zlib-ng 7, Z_FILTERED      0.85-0.97 / 7.45 1.61-1.68 / 13.80
isal 3 (fastest level)     0.21-0.30 / 8.75 0.46 / 15.36
=========================  ===============  ================

The figures are text (numbers written out), where zlib-ng's level 7 with ``Z_FILTERED`` (short
matches dropped in favour of literals) is 10 % smaller than zlib's level 4 for about the same CPU;
the stores are binary columns, where zlib-ng's level 4 takes half of zlib's time for 4 % more.
Together 21.81 MB against 22.09 (the page is not larger) in 1.6-1.8 s of CPU against 2.2-2.6 s.
isal is faster still, but its streams are larger at every level (the page would outgrow its
budget).

Same input, same bytes (a new compressor per stream, no time stamp in the header); the bytes
depend on the compressor (and may on the platform: zlib-ng picks SIMD variants at run time), which
is why the golden digest (tests/golden/outputs_digest.py) compares the decompressed streams.
"""

from __future__ import annotations

import gzip
from typing import Literal
from zlib import Z_DEFAULT_STRATEGY, Z_FILTERED

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
