#!/usr/bin/env python3
"""Generate tshark's answers for the flow-table tests (run once by hand; the JSON is committed).

For every capture in the shared external corpus that tshark reads, store under
tests/golden/tshark_conv/<file>.json:

* ``conv``: the conversations of ``tshark -q -z conv,tcp`` (endpoints and frames each way; the
  byte column is printed rounded to kB there, so exact bytes come from the per-frame fields);
* ``streams``: per ``tcp.stream``: endpoint A/B (A = source of the stream's first frame, as in
  tshark's conversation table "Address A" is the first seen), frames and frame bytes
  (``frame.len``) each way — aggregated from ``tshark -T fields``;
* ``retrans``/``ooo``: frame numbers tshark flags ``tcp.analysis.retransmission`` (incl. fast and
  spurious) and ``tcp.analysis.out_of_order`` on segments with payload;
* ``libpcap_opens``: whether libpcap 1.9.1 (pcapy-ng) opens the file.

Usage: python tests/golden/make_tshark_conv.py [CAPTURE_DIR]   (default: ../shared/captures/external)
tshark is needed only here, never by the tests. Version used is stored in each file.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "tshark_conv"


def corpus_dir() -> Path:
    repo = HERE.parent.parent
    for cand in (repo.parent / "shared" / "captures" / "external",):
        if cand.is_dir():
            return cand
    raise SystemExit("external capture corpus not found")


def tshark(*args: str) -> str:
    r = subprocess.run(["tshark", "-n", *args], capture_output=True, text=True)
    if r.returncode != 0 and not r.stdout:
        raise RuntimeError(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"tshark rc {r.returncode}")
    return r.stdout


def libpcap_opens(path: Path) -> bool:
    try:
        import pcapy

        pcapy.open_offline(str(path))
        return True
    except Exception:
        return False


CONV_RE = re.compile(r"^(\S+):(\d+)\s+<->\s+(\S+):(\d+)\s+(\d+)\s+.+?\s+(\d+)\s+.+?\s+(\d+)\s+")


def parse_conv(text: str) -> list[dict]:
    """Rows of `-z conv,tcp`: A, B, frames B→A ("<-" column), frames A→B ("->" column)."""
    out = []
    for line in text.splitlines():
        m = CONV_RE.match(line.strip())
        if m:
            a, pa, b, pb, f_ba, f_ab, f_tot = m.groups()
            out.append(
                {
                    "a": a,
                    "a_port": int(pa),
                    "b": b,
                    "b_port": int(pb),
                    "frames_ba": int(f_ba),
                    "frames_ab": int(f_ab),
                    "frames": int(f_tot),
                }
            )
    return out


def streams(path: Path) -> dict[int, dict]:
    # frames whose TCP header is longer than the segment ("Short segment") get a tcp.stream but
    # are not counted by the conv,tcp tap; leave them out so the two views agree
    text = tshark(
        "-r",
        str(path),
        "-Y",
        'tcp and not _ws.expert.message contains "Short segment"',
        "-T",
        "fields",
        "-E",
        "occurrence=l",
        "-E",
        "separator=\t",
        "-e",
        "frame.number",
        "-e",
        "tcp.stream",
        "-e",
        "ip.src",
        "-e",
        "ipv6.src",
        "-e",
        "tcp.srcport",
        "-e",
        "ip.dst",
        "-e",
        "ipv6.dst",
        "-e",
        "tcp.dstport",
        "-e",
        "frame.len",
    )
    st: dict[int, dict] = {}
    for line in text.splitlines():
        p = line.split("\t")
        if len(p) < 9 or not p[1]:
            continue
        sid = int(p[1])
        src = p[3] or p[2]
        dst = p[6] or p[5]
        # with IPv6-in-IPv4 or IPv4-in-IPv6 the innermost header is the one that carries TCP
        if p[2] and p[3]:
            src, dst = (p[3], p[6]) if ":" in (p[6] or "") else (p[2], p[5])
        s = (src, int(p[4]))
        d = (dst, int(p[7]))
        e = st.setdefault(
            sid,
            {
                "stream": sid,
                "a": src,
                "a_port": s[1],
                "b": dst,
                "b_port": d[1],
                "frames_ab": 0,
                "bytes_ab": 0,
                "frames_ba": 0,
                "bytes_ba": 0,
                "first_frame": int(p[0]),
            },
        )
        k = "ab" if (src, s[1]) == (e["a"], e["a_port"]) else "ba"
        e[f"frames_{k}"] += 1
        e[f"bytes_{k}"] += int(p[8])
    return st


def flagged(path: Path, expr: str) -> list[int]:
    text = tshark("-r", str(path), "-Y", f"tcp.len > 0 and ({expr})", "-T", "fields", "-e", "frame.number")
    return [int(x) for x in text.split()]


def main() -> None:
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else corpus_dir()
    OUT.mkdir(exist_ok=True)
    version = tshark("--version").splitlines()[0]
    for path in sorted(src.iterdir()):
        if path.suffix == ".md" or not path.is_file():
            continue
        try:
            conv = parse_conv(tshark("-r", str(path), "-q", "-z", "conv,tcp"))
            st = streams(path)
            retrans = flagged(path, "tcp.analysis.retransmission or tcp.analysis.spurious_retransmission")
            ooo = flagged(path, "tcp.analysis.out_of_order")
        except RuntimeError as exc:
            print(f"skip {path.name}: tshark cannot read it ({exc})")
            continue
        by_ep = {(c["a"], c["a_port"], c["b"], c["b_port"]): c for c in conv}
        for e in st.values():
            c = by_ep.get((e["a"], e["a_port"], e["b"], e["b_port"])) or by_ep.get(
                (e["b"], e["b_port"], e["a"], e["a_port"])
            )
            tot = e["frames_ab"] + e["frames_ba"]
            if (
                c is None
                or sum(
                    x["frames"]
                    for x in conv
                    if x is c
                    or (x["a"], x["a_port"], x["b"], x["b_port"]) == (c["a"], c["a_port"], c["b"], c["b_port"])
                )
                < tot
            ):
                print(f"  note {path.name}: stream {e['stream']} has {tot} frames, conv,tcp row {c}")
        doc = {
            "file": path.name,
            "tshark": version,
            "libpcap_opens": libpcap_opens(path),
            "conv": conv,
            "streams": [st[k] for k in sorted(st)],
            "retrans": retrans,
            "ooo": ooo,
        }
        (OUT / f"{path.name}.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(f"{path.name}: {len(st)} streams, {len(retrans)} retrans, {len(ooo)} ooo")


if __name__ == "__main__":
    main()
