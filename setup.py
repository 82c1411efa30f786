"""Package mapping and the compiled kernels; all metadata lives in pyproject.toml.

replay/ and reports/ sit at the top of the repository (the design card's layout) but are
installed *under* the hscc_trace namespace as hscc_trace.replay and hscc_trace.reports, so a
user's site-packages never gains generic top-level modules named `replay` or `reports`.
tests/test_install.py proves that both a regular and an editable install import correctly.

The kernels of `hscc-trace flows` (capture reader, decoder, BPF interpreter, flow table) are
also compiled into one C extension, ``hscc_trace._kernels``: Cython (a build requirement in
pyproject.toml) translates hscc_trace/_kernels.pyx, which includes each layer's kernels
(hscc_trace/capture/*.pxi, hscc_trace/flows/*.pxi), to C in the build folder, and the platform's
C compiler builds it (-O1, no debug information: ≈ 2.5 s on one core, docs/design.md). The
extension is optional: without a C compiler (or without Cython, in a build without isolation)
pip prints a warning, installs without it, and the same kernels run through numba's JIT
instead, slower to start (``hscc-trace version`` tells which is in use).
"""

import importlib.util
import os

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError

HERE = os.path.dirname(os.path.abspath(__file__))
#: the compiled kernels (hscc_trace/perf/jit.py calls them)
KERNELS = "hscc_trace._kernels"

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


def _source_hash() -> str:
    """hscc_trace.perf.jit.source_hash of the sources (jit.py loaded by path: it imports only the
    standard library, and the package's dependencies need not be installed to build)."""
    spec = importlib.util.spec_from_file_location("_hscc_trace_jit", os.path.join(HERE, "hscc_trace", "perf", "jit.py"))
    jit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(jit)
    return jit.source_hash(os.path.join(HERE, "hscc_trace"))


class BuildExt(build_ext):
    """build_ext that translates :data:`KERNELS` with Cython first (into the build folder, never
    the source tree); any failure is a warning (the extension is optional)."""

    def build_extension(self, ext: Extension) -> None:
        if ext.name != KERNELS:
            super().build_extension(ext)
            return
        target = self.get_ext_fullpath(ext.name)
        try:
            self._build_kernels(ext)
        except CompileError:
            if os.path.exists(target):  # an earlier build's: never ship or run a stale one
                os.remove(target)
            raise

    def _build_kernels(self, ext: Extension) -> None:
        try:
            from Cython.Build import cythonize
        except ImportError as exc:
            raise CompileError(
                f"hscc-trace: compiled kernels not built (Cython is not installed: {exc}); "
                "numba will compile them on first use instead"
            ) from None
        try:
            (cext,) = cythonize(
                [Extension(ext.name, ext.sources)],
                build_dir=os.path.join(self.build_temp, "cython"),
                quiet=True,
                language_level=3,
                force=True,
            )
        except Exception as exc:  # Cython's CompileError: a syntax or type error in the sources
            raise CompileError(
                f"hscc-trace: compiled kernels not built (Cython: {exc}); numba will compile them on first use instead"
            ) from None
        ext.sources = cext.sources  # the generated C file
        ext.define_macros = [*ext.define_macros, ("HSCC_KERNELS_SOURCE_HASH", f'"{_source_hash()}"')]
        if self.compiler.compiler_type == "unix":  # gcc, clang
            # -O1 (the interpreter's own flags say -O3 -g): the kernels run as fast as at -O2 or
            # -O3 and compile in 40-60 % of -O2's time (docs/design.md); no debug information;
            # signed overflow wraps as in numba (-fwrapv, also in Python's flags) and no fused
            # multiply-add, so results equal numba's bit for bit
            ext.extra_compile_args = [*ext.extra_compile_args, "-O1", "-g0", "-fwrapv", "-ffp-contract=off"]
        try:
            super().build_extension(ext)
        except Exception as exc:
            raise CompileError(
                f"hscc-trace: compiled kernels not built ({exc}); numba will compile them on first use instead"
            ) from None


_pkgs, _dirs = _packages()
setup(
    packages=_pkgs,
    package_dir=_dirs,
    ext_modules=[Extension(KERNELS, sources=["hscc_trace/_kernels.pyx"], optional=True)],
    cmdclass={"build_ext": BuildExt},
)
