"""Build the ahead-of-time compiled kernels of ``hscc-trace flows`` (``hscc_trace._aot_kernels``).

``pip install`` runs ``python -m hscc_trace.perf.aot OUTPUT`` (setup.py's ``build_ext``). It imports
:data:`KERNEL_MODULES`, takes every kernel that declares an ``aot`` signature
(:func:`hscc_trace.perf.jit.njit`) and compiles them with numba's ahead-of-time compiler
(``numba.pycc``) into one extension module that needs neither numba nor LLVM at run time. The
same Python source is compiled either way; tests compare the two paths' outputs.

Two changes to numba.pycc's defaults:

- the Python wrappers release the GIL, as ``nogil=True`` dispatchers do (the flows scan runs the
  reader and the flow kernel on two threads);
- the module exports ``fingerprint()``, a hash of the kernel modules' source files
  (:func:`fingerprint`); :mod:`hscc_trace.perf.jit` uses the extension only when it matches, so an
  edited kernel is never run from a stale build (it falls back to numba's JIT).

Without a C compiler (numba.pycc links with the platform's compiler) the build fails, setup.py
warns and installs without the extension; everything then runs through numba's JIT.
"""

from __future__ import annotations

import importlib
import os
import sys

from .jit import KERNEL_MODULES, fingerprint


def build(output: str) -> str:
    """Compile the kernels into the extension module file ``output`` (a path ending in the
    platform's extension suffix); returns ``output``."""
    import tempfile

    from numba.pycc import CC
    from numba.pycc import compiler as pycc_compiler

    from hscc_trace.perf import jit

    for name in KERNEL_MODULES:
        importlib.import_module(name)
    kernels = sorted(jit.REGISTRY.items())
    for _export, k in kernels:
        if k.py_func.__module__ not in KERNEL_MODULES:
            raise RuntimeError(
                f"{k.py_func.__module__}.{k.__name__} declares an aot signature but its "
                "module is not in hscc_trace.perf.aot.KERNEL_MODULES (the fingerprint would miss it)"
            )

    basename = jit.AOT_MODULE.rsplit(".", 1)[1]
    saved = pycc_compiler.compile_extra

    def compile_extra(typingctx, targetctx, func, args, return_type, flags, *rest, **kwargs):
        # The one private-API adapter of the build (numba.pycc.compiler.compile_extra, patched
        # for the duration of this build only). numba.pycc compiles every export with one Flags
        # object, which a compilation may change (after a kernel with inline="always" callees,
        # the next one fails to type): give each its own copy, with wrappers that release the
        # GIL (as nogil=True does). It would go if pycc copied Flags per export and took a
        # nogil option; tests/test_aot.py builds through it.
        flags = flags.copy()
        flags.release_gil = True
        return saved(typingctx, targetctx, func, args, return_type, flags, *rest, **kwargs)

    pycc_compiler.compile_extra = compile_extra
    try:
        cc = CC(basename, source_module="hscc_trace.perf.aot")  # (imported above, also under -m)
        with tempfile.TemporaryDirectory(prefix="hscc-aot-") as tmp:
            cc.output_dir = tmp
            cc.output_file = os.path.basename(output)
            cc.verbose = False
            for export, k in kernels:
                cc.export(export, k.aot)(k.py_func)
            ns: dict[str, object] = {}
            exec(f"def fingerprint():\n    return {fingerprint()}\n", ns)
            cc.export("fingerprint", "int64()")(ns["fingerprint"])
            cc.compile()
            os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
            os.replace(os.path.join(tmp, cc.output_file), output)
    finally:
        pycc_compiler.compile_extra = saved
    return output


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m hscc_trace.perf.aot OUTPUT_FILE\n")
        return 2
    build(argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
