"""Package mapping only; all metadata lives in pyproject.toml.

replay/ and reports/ sit at the top of the repository (the design card's layout) but are
installed *under* the hscc_trace namespace as hscc_trace.replay and hscc_trace.reports, so a
user's site-packages never gains generic top-level modules named `replay` or `reports`.
tests/test_install.py proves that both a regular and an editable install import correctly.
"""

import os
import re
import subprocess
import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError

HERE = os.path.dirname(os.path.abspath(__file__))
#: the ahead-of-time compiled kernels of `hscc-trace flows` (hscc_trace/perf/aot.py builds them)
AOT_EXTENSION = "hscc_trace._aot_kernels"

_MAPPED = {"hscc_trace": "hscc_trace", "hscc_trace.replay": "replay", "hscc_trace.reports": "reports"}


def _packages() -> tuple[list[str], dict[str, str]]:
    packages: list[str] = []
    package_dir: dict[str, str] = {}
    for name, folder in _MAPPED.items():
        packages.append(name)
        package_dir[name] = folder
        for sub in find_packages(where=folder):
            packages.append(f"{name}.{sub}")
            package_dir[f"{name}.{sub}"] = f"{folder}/{sub.replace('.', '/')}"
    return packages, package_dir


class BuildExt(build_ext):
    """build_ext that builds :data:`AOT_EXTENSION` with numba's ahead-of-time compiler.

    ``python -m hscc_trace.perf.aot FILE`` compiles the numba kernels of hscc_trace/capture and
    hscc_trace/flows/tracker.py into an extension module (numba and numpy are build requirements; the
    link step needs the platform's C compiler). The extension is optional: if the build fails
    (no compiler, say), pip prints a warning and installs without it, and the same kernels are
    compiled by numba at run time instead (``hscc-trace version`` tells which is in use).
    """

    def build_extension(self, ext: Extension) -> None:
        if ext.name != AOT_EXTENSION:
            super().build_extension(ext)
            return
        out = os.path.abspath(self.get_ext_fullpath(ext.name))
        proc = subprocess.run(
            [sys.executable, "-m", "hscc_trace.perf.aot", out], cwd=HERE, capture_output=True, text=True
        )
        if proc.returncode != 0:
            lines = (proc.stderr or proc.stdout).strip().splitlines()
            errors = [ln for ln in lines if re.match(r"[\w.]+(Error|Exception): ", ln)]  # the raised one
            why = (errors or lines or ["no output"])[-1]
            raise CompileError(
                f"hscc-trace: ahead-of-time kernels not built ({why}); numba will compile them on first use instead"
            )


_pkgs, _dirs = _packages()
setup(
    packages=_pkgs,
    package_dir=_dirs,
    ext_modules=[Extension(AOT_EXTENSION, sources=[], optional=True)],
    cmdclass={"build_ext": BuildExt},
)
