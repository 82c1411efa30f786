"""Command-line interface: thin wrappers over the library.

Each command lives in its own module and registers itself on :data:`app`. :func:`main` turns
library errors into one line on stderr and exit code 2 — never a traceback.
"""

from __future__ import annotations

import os
import sys

from hscc_trace.errors import HsccError

from .app import app

# Command modules register themselves on import. Keep this list in sync with hscc_trace/cli/.
from . import version_cmd  # noqa: F401,E402
from . import analyze_cmd  # noqa: F401,E402
from . import check_cmd  # noqa: F401,E402
from . import flows_cmd  # noqa: F401,E402
from . import events_cmd  # noqa: F401,E402
from . import replay_cmd  # noqa: F401,E402


def main() -> None:
    try:
        app()
    except HsccError as exc:
        print(f"hscc-trace: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("hscc-trace: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # a bug, not bad input: still one line unless debugging
        if os.environ.get("HSCC_TRACE_DEBUG"):
            raise
        print(f"hscc-trace: internal error: {type(exc).__name__}: {exc} "
              "(set HSCC_TRACE_DEBUG=1 for a traceback, and please report it)", file=sys.stderr)
        sys.exit(70)  # EX_SOFTWARE
