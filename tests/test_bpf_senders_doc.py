"""docs/bpf-senders.md cites code by line: every citation must still quote its line.

A citation is ``[file:N](../path#LN) `code` `` — the line N of ``path`` must contain ``code``
(whitespace-normalised; ``\\|`` in the Markdown table stands for ``|``). After an edit moves
lines, ``python tests/test_bpf_senders_doc.py --fix`` moves each stale citation to the occurrence
of its code nearest to the old line (and fails on code that no longer exists).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "bpf-senders.md"
CITE = re.compile(r"\[([\w.+-]+):(\d+)\]\(\.\./([\w./+-]+)#L(\d+)\) `((?:[^`\\]|\\.)+)`")


def _norm(s: str) -> str:
    return " ".join(s.split())


def citations(text: str) -> list[re.Match]:
    return list(CITE.finditer(text))


def _check(m: re.Match) -> str | None:
    name, n1, path, n2, code = m.groups()
    code = code.replace("\\|", "|")
    f = ROOT / path
    if not f.exists():
        return f"{path}: no such file"
    if name != f.name or n1 != n2:
        return f"{m.group(0)}: label and link disagree"
    lines = f.read_text().splitlines()
    n = int(n1)
    if not (1 <= n <= len(lines)) or _norm(code) not in _norm(lines[n - 1]):
        return f"{path}:{n} does not contain `{code}`"
    return None


def test_every_citation_quotes_its_line():
    text = DOC.read_text()
    cs = citations(text)
    assert len(cs) > 100
    bad = [e for e in map(_check, cs) if e]
    assert not bad, "\n".join(bad) + "\n(run: python tests/test_bpf_senders_doc.py --fix)"


def test_every_sender_source_and_replay_module_is_reviewed():
    cited = {m.group(3) for m in citations(DOC.read_text())}
    cc = ROOT / "samples" / "testbed" / "cc"
    sources = {f"samples/testbed/cc/{p.name}" for p in cc.iterdir() if p.suffix in (".c", ".h")}
    missing = sources - cited
    assert not missing, sorted(missing)
    for mod in ("vegas", "westwood", "highspeed", "compound", "fusion", "hrf", "kyushu"):
        assert f"replay/algorithms/{mod}.py" in cited, mod


def _fix() -> int:
    text = DOC.read_text()
    out, pos, bad = [], 0, 0
    for m in citations(text):
        out.append(text[pos : m.start()])
        pos = m.end()
        if _check(m) is None:
            out.append(m.group(0))
            continue
        name, n1, path, _, code = m.groups()
        lines = (ROOT / path).read_text().splitlines()
        want = _norm(code.replace("\\|", "|"))
        hits = [i + 1 for i, ln in enumerate(lines) if want in _norm(ln)]
        if not hits:
            print(f"gone: {path}: `{code}`", file=sys.stderr)
            bad += 1
            out.append(m.group(0))
            continue
        n = min(hits, key=lambda h: abs(h - int(n1)))
        out.append(f"[{name}:{n}](../{path}#L{n}) `{code}`")
    out.append(text[pos:])
    DOC.write_text("".join(out))
    return 1 if bad else 0


if __name__ == "__main__" and "--fix" in sys.argv:
    sys.exit(_fix())
