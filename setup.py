"""Package mapping; all metadata lives in pyproject.toml.

replay/ and reports/ sit at the top of the repository (the design card's layout) but are
installed *under* the hscc_trace namespace as hscc_trace.replay and hscc_trace.reports, so a
user's site-packages never gains generic top-level modules named `replay` or `reports`.
tests/test_install.py proves that both a regular and an editable install import correctly.
"""

from setuptools import find_packages, setup

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


_pkgs, _dirs = _packages()
setup(packages=_pkgs, package_dir=_dirs)
