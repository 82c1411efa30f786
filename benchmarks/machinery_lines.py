#!/usr/bin/env python3
"""Count the lines of the machinery: the code that decides how and when kernels are compiled,
loaded and tuned, not the kernels themselves (issue #39). Its baseline was 4,488 lines; the
target is at most a quarter of it. ``tests/perf/test_machinery_lines.py`` keeps it there.

    python benchmarks/machinery_lines.py
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: what the count covers (globs from the repository's root; parity tests of compiled against
#: another backend were counted too: none is left)
FILES = (
    "hscc_trace/perf/*.py",
    "replay/_jit.py",
    "replay/compile.py",
    "hscc_trace/cli/compiling.py",
    "hscc_trace/cli/compile_cmd.py",
    "setup.py",
)
BASELINE = 4488  # lines, issue #39
TARGET = BASELINE // 4  # at most 25 % of the baseline: 1,122 lines


def count() -> dict[str, int]:
    """Lines per file of :data:`FILES`."""
    paths = sorted({p for pattern in FILES for p in REPO.glob(pattern)})
    return {str(p.relative_to(REPO)): len(p.read_text().splitlines()) for p in paths}


def main() -> int:
    lines = count()
    for name, n in sorted(lines.items(), key=lambda kv: -kv[1]):
        print(f"{n:6d}  {name}")
    total = sum(lines.values())
    print(f"{total:6d}  total: {100 * total / BASELINE:.1f} % of the {BASELINE:,} of issue #39 (target ≤ {TARGET:,})")
    return 0 if total <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
