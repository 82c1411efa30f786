"""Digest of every user-visible output, to prove a refactoring changed no behaviour.

Runs the installed ``hscc-trace`` on every bundled sample and every external capture
(``../shared/captures/external`` beside the repository, when present) and records a SHA-256 of
each output with creation timestamps and the paths of the repository and of the external
captures blanked:

- ``flows FILE --json`` (stdout);
- ``analyze FILE --json R --export DIR --export-format csv -o REPORT`` (the JSON results, every
  exported table, the HTML report);
- ``replay FILE --flow 0 --algo reno,cubic -o R.csv`` and ``events FILE --flow 0 --kind K -o -``
  on the samples (the single-flow commands).

Use it around a change that must not alter outputs::

    python tests/golden/outputs_digest.py before.json      # on the old code
    python tests/golden/outputs_digest.py after.json       # on the new code
    python tests/golden/outputs_digest.py --compare before.json after.json

``--compare`` exits 1 and lists every output that differs, is missing or is new.

A report is digested over its decoded content: each base64 gzip stream it inlines (plotly.js,
the figures' payloads, the event stores) is replaced by the SHA-256 of its decompressed bytes, and
the size the page gives for its stores ("N.NN MB of this page") is blanked — compressed bytes
depend on the compressor and its settings (reports/deflate.py), what they decode to must not.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXTERNAL = next(  # (beside the repository, or beside the folder of worktrees it is in: as tests/conftest.py)
    (
        d
        for d in (
            REPO.parent / "shared" / "captures" / "external",
            REPO.parents[1] / "shared" / "captures" / "external",
        )
        if d.is_dir()
    ),
    REPO.parent / "shared" / "captures" / "external",
)
#: ISO-8601 creation stamps written into results and reports
_STAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


#: a report's inlined binary streams (base64 of gzip)
_STREAM = re.compile(rb'(<script type="application/octet-stream"[^>]*>)([A-Za-z0-9+/=]*)(</script>)')
#: the size of a report's event stores, as the page gives it (compressed: not content)
_STORE_MB = re.compile(rb"\d+\.\d\d MB of this page")


def _blank(data: bytes) -> bytes:
    # (the external captures' folder first: from a worktree it is found beside the folder of
    # worktrees, outside the repository, and its path would differ between two checkouts)
    data = data.replace(str(EXTERNAL).encode(), b"<external>")
    return _STAMP.sub(b"<created>", data).replace(str(REPO).encode(), b"<repo>")


def _digest(data: bytes) -> str:
    """SHA-256 with creation stamps and the repository's own path blanked (two checkouts of
    different commits sit in different folders)."""
    return hashlib.sha256(_blank(data)).hexdigest()


def _decoded(page: bytes) -> bytes:
    """A report with each base64 gzip stream replaced by the SHA-256 of what it decompresses to
    (blanked like the page) and its stores' compressed size blanked."""

    def stream(m: re.Match[bytes]) -> bytes:
        raw = base64.b64decode(m.group(2))
        if raw[:2] != b"\x1f\x8b":
            return m.group(0)
        return m.group(1) + b"gzip:" + _digest(gzip.decompress(raw)).encode() + m.group(3)

    return _STORE_MB.sub(b"<size> MB of this page", _STREAM.sub(stream, page))


def _run(args: list[str], cwd: Path) -> tuple[int, bytes]:
    proc = subprocess.run(["hscc-trace", *args], cwd=cwd, capture_output=True)
    return proc.returncode, proc.stdout


def captures() -> list[tuple[str, Path]]:
    out = [(f"samples/{p.parent.name}", p) for p in sorted(REPO.glob("samples/*/capture.pcap"))]
    if EXTERNAL.is_dir():
        out += [
            (f"external/{p.name}", p) for p in sorted(EXTERNAL.iterdir()) if p.is_file() and p.name != "PROVENANCE.md"
        ]
    return out


def collect() -> dict[str, str]:
    result: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for label, path in captures():
            rc, out = _run(["flows", str(path), "--json"], work)
            result[f"{label} flows"] = f"rc={rc} {_digest(out)}"
            res, rep, exp = work / "r.json", work / "r.html", work / "exp"
            rc, _ = _run(
                [
                    "analyze",
                    str(path),
                    "-q",
                    "--json",
                    str(res),
                    "-o",
                    str(rep),
                    "--export",
                    str(exp),
                    "--export-format",
                    "csv",
                ],
                work,
            )
            result[f"{label} analyze rc"] = str(rc)
            for f in (res, rep):
                if f.exists():
                    data = f.read_bytes()
                    result[f"{label} analyze {f.suffix}"] = _digest(_decoded(data) if f.suffix == ".html" else data)
                    f.unlink()
            if exp.exists():
                for f in sorted(exp.rglob("*")):
                    if f.is_file():
                        result[f"{label} export {f.relative_to(exp)}"] = _digest(f.read_bytes())
                subprocess.run(["rm", "-rf", str(exp)], check=True)
            if label.startswith("samples/"):
                rep_csv = work / "replay.csv"
                rc, _ = _run(["replay", str(path), "--flow", "0", "--algo", "reno,cubic", "-o", str(rep_csv)], work)
                result[f"{label} replay"] = f"rc={rc} " + (_digest(rep_csv.read_bytes()) if rep_csv.exists() else "-")
                rep_csv.unlink(missing_ok=True)
                for kind in ("segments", "acks", "episodes", "rounds"):
                    rc, out = _run(["events", str(path), "--flow", "0", "--kind", kind, "-o", "-"], work)
                    result[f"{label} events {kind}"] = f"rc={rc} {_digest(out)}"
            print(f"{label}: done", file=sys.stderr)
    return result


def compare(a: Path, b: Path) -> int:
    old, new = json.loads(a.read_text()), json.loads(b.read_text())
    bad = [f"differs: {k}" for k in old if k in new and old[k] != new[k]]
    bad += [f"missing: {k}" for k in old if k not in new] + [f"new: {k}" for k in new if k not in old]
    for line in bad:
        print(line)
    print(f"{len(old)} outputs before, {len(new)} after, {len(bad)} differences")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", type=Path, help="write the digests here (JSON)")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    if not args.out:
        ap.error("give OUT.json or --compare BEFORE AFTER")
    args.out.write_text(json.dumps(collect(), indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
