"""scapy fallback decoder: whatever the fast path does not know, producing the same columns.

Used for link types and encapsulations outside the fast path (PPP, FDDI, 802.11, C-HDLC, MPLS,
PPPoE, LLC/SNAP, GRE, IP-in-IP, VXLAN, …) and for IP fragments, which are reassembled here
(RFC 791 §3.2 / RFC 8200 §4.5): the TCP row is attributed to the frame that completed the
datagram, as Wireshark does. It is also an independent second dissector for the parity test
(``load_packets(..., force_slow=True)``). Packets scapy cannot decode as TCP are counted by reason.
"""

from __future__ import annotations

import polars as pl

from hscc_trace import schema

_COLS = [c.name for c in schema.PACKETS if c.name not in ("flow_id", "dir")]

R_NOT_IP = "not IP (ARP, LLDP, STP, …)"
R_NOT_TCP = "IP but not TCP (UDP, ICMP, …)"
R_UNKNOWN = "not decodable (unknown link type or encapsulation)"
R_TCP_TRUNC = "TCP header truncated by the snapshot length"
R_FRAG = "IP fragment (datagram never completed)"
R_MALFORMED = "malformed TCP header"


def _fddi(data: bytes):
    """FDDI (LINKTYPE_FDDI 10): 13-byte MAC header (frame control, dst, src), then 802.2 LLC."""
    from scapy.layers.l2 import LLC

    return LLC(data[13:])


def _layer_class(linktype: int):
    import scapy.all  # noqa: F401  (registers every default layer's link type in conf.l2types)
    import scapy.contrib.mpls  # noqa: F401  (binds Ethernet type 0x8847/0x8848)
    from scapy.config import conf

    if linktype == 10:
        return _fddi
    return conf.l2types.get(linktype)


def _ip_tcp(pkt):
    """(innermost IP/IPv6 layer that carries TCP, TCP layer) or (ip, None) / (None, None)."""
    from scapy.layers.inet import IP, TCP
    from scapy.layers.inet6 import IPv6

    tcp = pkt.getlayer(TCP)
    if tcp is None:
        ip = pkt.getlayer(IP) or pkt.getlayer(IPv6)
        return ip, None
    ip = tcp.underlayer
    while ip is not None and not isinstance(ip, (IP, IPv6)):
        ip = ip.underlayer
    return ip, tcp


def decode_records(recs: list[tuple[int, int, int, int, int, bytes]]) -> tuple[pl.DataFrame, dict[str, int]]:
    """Decode (frame, ts_ns, iface, wire_len, linktype, bytes) records with scapy.

    Returns (rows of schema.PACKETS without flow_id/dir, decoder = 1; skip reason -> count).
    """
    import logging

    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
    from scapy.layers.inet import IP, TCP
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrFragment
    from scapy.packet import Raw

    rows: list[dict] = []
    skipped: dict[str, int] = {}
    frags: dict[tuple, dict] = {}

    def skip(reason: str, n: int = 1) -> None:
        skipped[reason] = skipped.get(reason, 0) + n

    for frame, ts, iface, wire, lt, data in recs:
        cls = _layer_class(lt)
        if cls is None:
            skip(f"unsupported link type {lt}")
            continue
        try:
            pkt = cls(data)
        except Exception:  # scapy raises many kinds on garbage
            skip(R_UNKNOWN)
            continue
        ip4 = pkt.getlayer(IP)
        ip6f = pkt.getlayer(IPv6ExtHdrFragment)
        if (
            ip4 is not None
            and (ip4.flags.MF or ip4.frag)
            and pkt.getlayer(TCP) is None
            or (ip4 is not None and (ip4.flags.MF or ip4.frag) and ip4.proto == 6)
        ):
            _collect_v4(frags, frame, ts, iface, wire, len(data), ip4, rows, skip)
            continue
        if ip6f is not None:
            _collect_v6(frags, frame, ts, iface, wire, len(data), ip6f, rows, skip)
            continue
        ip, tcp = _ip_tcp(pkt)
        if tcp is None and isinstance(ip, IPv6) and ip.plen == 0 and ip.nh == 6 and len(ip.original) >= 60:
            tcp = TCP(ip.original[40:])  # BIG TCP / TSO: payload length 0, length from the frame
            tcp.underlayer = ip
        if ip is None:
            skip(R_NOT_IP if not isinstance(pkt.lastlayer(), Raw) or pkt.getlayer(Raw) is not pkt else R_UNKNOWN)
            continue
        if tcp is None:
            if (isinstance(ip, IP) and ip.proto == 6) or (isinstance(ip, IPv6) and _v6_upper(ip) == 6):
                skip(R_TCP_TRUNC)
            else:
                skip(R_NOT_TCP)
            continue
        row = _row(frame, ts, iface, wire, len(data), ip, tcp, wire_ip_len=None)
        if row is None:
            skip(R_MALFORMED)
            continue
        rows.append(row)
    for st in frags.values():
        skip(R_FRAG, st["n"])
    if not rows:
        return schema.empty(schema.PACKETS).select(_COLS), skipped
    df = pl.DataFrame(rows, schema={c.name: c.dtype for c in schema.PACKETS if c.name in _COLS}, orient="row")
    return df.select(_COLS), skipped


def _v6_upper(ip6) -> int:
    from scapy.layers.inet6 import IPv6ExtHdrDestOpt, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting

    layer = ip6
    nh = ip6.nh
    while True:
        pl_ = layer.payload
        if isinstance(pl_, (IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, IPv6ExtHdrDestOpt)):
            nh = pl_.nh
            layer = pl_
            continue
        return nh


def _row(frame, ts, iface, wire, cap, ip, tcp, wire_ip_len):
    from scapy.layers.inet import IP

    from hscc_trace.addr import from_str

    thl = (tcp.dataofs or 5) * 4
    if thl < 20:
        return None
    if isinstance(ip, IP):
        ver = 4
        ihl = ip.ihl * 4
        tot = ip.len if wire_ip_len is None else wire_ip_len
        if tot == 0:  # TSO / BIG TCP: length from the frame
            tot = wire - (cap - len(ip.original))
        plen = tot - ihl - thl
        ipid, ttl, ecn = ip.id, ip.ttl, ip.tos & 3
    else:
        ver = 6
        ext = _v6_ext_len(ip)
        pl_ = ip.plen if wire_ip_len is None else wire_ip_len
        if pl_ == 0:
            pl_ = _jumbo(ip)
            if pl_ is None:
                pl_ = wire - (cap - len(ip.original)) - 40
        plen = pl_ - ext - thl
        ipid, ttl, ecn = None, ip.hlim, ip.tc & 3
    if plen < 0:
        return None
    sh, sl, _ = from_str(ip.src)
    dh, dl, _ = from_str(ip.dst)
    mss = ws = tsv = tse = None
    sackp = False
    sacks: list[int] = []
    for opt in tcp.options:
        name, val = opt if isinstance(opt, tuple) and len(opt) == 2 else (opt, None)
        # An option of the wrong length gives scapy's raw bytes (b'' for an MSS option of
        # length 2) instead of a number: ignored, as the fast decoder ignores an MSS option whose
        # length is not 4 or a window-scale option whose length is not 3 (RFC 9293 §3.2,
        # RFC 7323 §2.2).
        if name == "MSS":
            if _uint(val, 0xFFFF):
                mss = val
        elif name == "WScale":
            if _uint(val, 0xFF):
                ws = val
        elif name == "SAckOK":
            sackp = True
        elif name == "SAck" and isinstance(val, tuple) and all(_uint(v, 0xFFFFFFFF) for v in val):
            sacks.extend(val)
        elif (
            name == "Timestamp" and isinstance(val, tuple) and len(val) == 2 and all(_uint(v, 0xFFFFFFFF) for v in val)
        ):
            tsv, tse = val
    nsack = min(len(sacks) // 2, 4)
    tcp_cap = len(tcp.original) if getattr(tcp, "original", None) is not None else len(bytes(tcp))
    row = {
        "frame": frame,
        "ts_ns": ts,
        "iface": iface,
        "wire_len": wire,
        "cap_len": cap,
        "ip_version": ver,
        "src_hi": sh,
        "src_lo": sl,
        "dst_hi": dh,
        "dst_lo": dl,
        "ip_id": ipid,
        "ip_ttl": ttl,
        "ip_ecn": ecn,
        "sport": tcp.sport,
        "dport": tcp.dport,
        "seq": tcp.seq,
        "ack": tcp.ack,
        "flags": int(tcp.flags),
        "win": tcp.window,
        "tcp_hlen": thl,
        "payload_len": plen,
        "truncated": tcp_cap < thl + plen,
        "opt_mss": mss,
        "opt_wscale": ws,
        "opt_sack_perm": sackp,
        "opt_tsval": tsv,
        "opt_tsecr": tse,
        "sack_n": nsack,
    }
    for b in range(4):
        row[f"sack_l{b}"] = sacks[2 * b] if b < nsack else None
        row[f"sack_r{b}"] = sacks[2 * b + 1] if b < nsack else None
    row["decoder"] = 1
    return row


def _uint(v: object, top: int) -> bool:
    """Whether scapy decoded an option field as a number in 0..top (not raw bytes)."""
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= top


def _v6_ext_len(ip6) -> int:
    from scapy.layers.inet6 import IPv6ExtHdrDestOpt, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting

    n = 0
    layer = ip6.payload
    while isinstance(layer, (IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, IPv6ExtHdrDestOpt)):
        n += (layer.len + 1) * 8 if layer.len is not None else len(bytes(layer)) - len(bytes(layer.payload))
        layer = layer.payload
    return n


def _jumbo(ip6) -> int | None:
    from scapy.layers.inet6 import IPv6ExtHdrHopByHop, Jumbo

    hbh = ip6.getlayer(IPv6ExtHdrHopByHop)
    if hbh is None:
        return None
    for o in hbh.options:
        if isinstance(o, Jumbo):
            return o.jumboplen
    return None


def _collect_v4(frags, frame, ts, iface, wire, cap, ip4, rows, skip) -> None:
    """Gather IPv4 fragments; when the datagram is complete, decode its TCP segment."""
    from scapy.layers.inet import IP, TCP

    key = (4, ip4.src, ip4.dst, ip4.id, ip4.proto)
    st = frags.setdefault(key, {"parts": {}, "total": None, "n": 0, "hdr": None})
    st["n"] += 1
    payload = bytes(ip4.payload)[: max(0, ip4.len - ip4.ihl * 4)]
    off = ip4.frag * 8
    st["parts"][off] = payload
    if ip4.frag == 0:
        st["hdr"] = ip4
    if not ip4.flags.MF:
        st["total"] = off + len(payload)
    if _complete(st):
        del frags[key]
        data = _assemble(st)
        if ip4.proto != 6:
            skip(R_NOT_TCP, st["n"])
            return
        skip("IP fragment (reassembled into a later frame)", st["n"] - 1)
        hdr = st["hdr"]
        full = IP(src=hdr.src, dst=hdr.dst, id=hdr.id, ttl=hdr.ttl, tos=hdr.tos, proto=6, ihl=5) / TCP(data)
        full.len = 20 + len(data)
        tcp = full[TCP]
        row = _row(frame, ts, iface, wire, cap, full, tcp, wire_ip_len=20 + len(data))
        if row is None:
            skip(R_MALFORMED)
        else:
            row["truncated"] = False
            rows.append(row)


def _collect_v6(frags, frame, ts, iface, wire, cap, fh, rows, skip) -> None:
    from scapy.layers.inet import TCP
    from scapy.layers.inet6 import IPv6

    ip6 = fh.underlayer
    while ip6 is not None and not isinstance(ip6, IPv6):
        ip6 = ip6.underlayer
    assert ip6 is not None  # (a fragment header always sits inside an IPv6 packet)
    key = (6, ip6.src, ip6.dst, fh.id, fh.nh)
    st = frags.setdefault(key, {"parts": {}, "total": None, "n": 0, "hdr": None})
    st["n"] += 1
    payload = bytes(fh.payload)
    off = fh.offset * 8
    st["parts"][off] = payload
    if fh.offset == 0:
        st["hdr"] = ip6
    if not fh.m:
        st["total"] = off + len(payload)
    if _complete(st):
        del frags[key]
        data = _assemble(st)
        if fh.nh != 6:
            skip(R_NOT_TCP, st["n"])
            return
        skip("IP fragment (reassembled into a later frame)", st["n"] - 1)
        hdr = st["hdr"]
        full = IPv6(src=hdr.src, dst=hdr.dst, hlim=hdr.hlim, tc=hdr.tc, nh=6, plen=len(data)) / TCP(data)
        row = _row(frame, ts, iface, wire, cap, full, full[TCP], wire_ip_len=len(data))
        if row is None:
            skip(R_MALFORMED)
        else:
            row["truncated"] = False
            rows.append(row)


def _complete(st) -> bool:
    if st["total"] is None or st["hdr"] is None:
        return False
    have = 0
    for off in sorted(st["parts"]):
        if off > have:
            return False
        have = max(have, off + len(st["parts"][off]))
    return have >= st["total"]


def _assemble(st) -> bytes:
    out = bytearray(st["total"])
    for off in sorted(st["parts"]):
        p = st["parts"][off]
        out[off : off + len(p)] = p[: max(0, st["total"] - off)]
    return bytes(out)
