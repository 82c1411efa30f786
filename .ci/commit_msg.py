#!/usr/bin/env python3
"""commit-msg hook: a commit's subject is at most 72 characters (CONTRIBUTING.md).

    python3 .ci/commit_msg.py MESSAGE_FILE

Git passes the file of the message being written. The subject is its first line that is not
blank and not a comment (``#``, which git strips). A subject git writes itself or a rebase will
fold away is let through whatever its length: ``Merge …``, ``Revert "…"``, ``fixup! …``,
``squash! …``, ``amend! …``. Exit 0 when the message is accepted; 1, with one line on stderr,
when the subject is too long; 2 when the file cannot be read.
"""

from __future__ import annotations

import sys
from pathlib import Path

MAX_SUBJECT = 72
#: subjects written by git (merges, reverts) or meant for ``git rebase --autosquash``
EXEMPT = ("Merge ", 'Revert "', "fixup! ", "squash! ", "amend! ")


def subject(message: str) -> str:
    """The first line of ``message`` that is neither blank nor a comment, without its line end."""
    for line in message.splitlines():
        if line.strip() and not line.startswith("#"):
            return line.rstrip()
    return ""


def problem(message: str) -> str | None:
    """Why ``message`` is refused, or None."""
    s = subject(message)
    if s.startswith(EXEMPT) or len(s) <= MAX_SUBJECT:
        return None
    return (
        f"commit subject is {len(s)} characters, at most {MAX_SUBJECT}: put measurements and "
        f"reasons in the body, after a blank line ({s[:40]!r}…)"
    )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: commit_msg.py MESSAGE_FILE", file=sys.stderr)
        return 2
    try:
        text = Path(args[0]).read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        print(f"commit_msg.py: {args[0]}: {e.strerror or e}", file=sys.stderr)
        return 2
    why = problem(text)
    if why:
        print(why, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
