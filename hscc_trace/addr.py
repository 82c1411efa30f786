"""IP addresses as two UInt64 halves (schema.PACKETS ``src_hi``/``src_lo``) and back.

IPv4 addresses are stored IPv4-mapped (``::ffff:a.b.c.d``, RFC 4291 §2.5.5.2): hi = 0,
lo = 0x0000_ffff_0000_0000 | address.
"""

from __future__ import annotations

import ipaddress

V4_MAPPED = 0xFFFF_0000_0000


def to_str(hi: int, lo: int, version: int) -> str:
    """Text form of an address: dotted quad for version 4, RFC 5952 compressed for version 6."""
    if version == 4:
        return str(ipaddress.IPv4Address(lo & 0xFFFF_FFFF))
    return str(ipaddress.IPv6Address((hi << 64) | lo))


def from_str(text: str) -> tuple[int, int, int]:
    """(hi, lo, version) of an address in text form; raises ValueError if it is not one."""
    a = ipaddress.ip_address(text)
    if a.version == 4:
        return 0, V4_MAPPED | int(a), 4
    v = int(a)
    return v >> 64, v & 0xFFFF_FFFF_FFFF_FFFF, 6
