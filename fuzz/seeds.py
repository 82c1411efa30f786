"""The fuzzer's seed corpus: small real captures, written into a corpus folder on first use.

- every regression input of ``tests/fuzz_corpus`` (inputs that once crashed hscc-trace);
- of every ``samples/*/capture.pcap``: the file header and the first records, up to
  :data:`MAX_SEED` bytes (a handshake, slow start and, in the loss samples, nothing more — the
  fuzzer mutates from there);
- every capture of ``../shared/captures/external`` (relative to the repository) of at most
  :data:`MAX_SEED` bytes as it is, and the first records of the larger pcap files.

Only pcap files are cut (at record boundaries); larger pcapng and gzip files are left out.
"""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REGRESSION = REPO / "tests" / "fuzz_corpus"
EXTERNAL = REPO.parent / "shared" / "captures" / "external"
#: largest seed and, by default, largest input the fuzzer makes [bytes]
MAX_SEED = 16384


def head_of_pcap(data: bytes, limit: int = MAX_SEED) -> bytes | None:
    """The pcap file header and the whole records that fit in ``limit`` bytes (None: not a pcap)."""
    if len(data) < 24:
        return None
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        order = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        order = ">"
    else:
        return None
    pos = 24
    while pos + 16 <= len(data):
        (cap,) = struct.unpack(order + "I", data[pos + 8 : pos + 12])
        end = pos + 16 + cap
        if end > limit or end > len(data):
            break
        pos = end
    return data[:pos] if pos > 24 else None


def seed_inputs() -> list[tuple[str, bytes]]:
    """(name, bytes) of every seed."""
    out: list[tuple[str, bytes]] = []
    for f in sorted(REGRESSION.glob("*")):
        if f.is_file() and f.suffix != ".md":  # (the folder's README says what each input is)
            out.append((f"regression-{f.name}", f.read_bytes()))
    sources = sorted(REPO.glob("samples/*/capture.pcap"))
    if EXTERNAL.is_dir():
        sources += sorted(f for f in EXTERNAL.iterdir() if f.is_file() and not f.name.endswith(".md"))
    for f in sources:
        data = f.read_bytes()
        tag = f"{f.parent.name}-{f.name}" if f.parent.parent.name == "samples" else f.name
        if len(data) <= MAX_SEED:
            out.append((tag, data))
        else:
            head = head_of_pcap(data)
            if head is not None:
                out.append((f"head-{tag}", head))
    return out


def build(corpus: Path) -> int:
    """Write the seeds into ``corpus`` (named by content, so rebuilding adds nothing twice);
    returns how many seeds there are."""
    corpus.mkdir(parents=True, exist_ok=True)
    seeds = seed_inputs()
    for _name, data in seeds:
        target = corpus / hashlib.sha1(data).hexdigest()
        if not target.exists():
            target.write_bytes(data)
    return len(seeds)


if __name__ == "__main__":
    import sys

    n = build(Path(sys.argv[1] if len(sys.argv) > 1 else REPO / "fuzz" / "corpus"))
    print(f"{n} seeds")
