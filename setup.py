"""Package mapping (metadata: pyproject.toml): replay/ and reports/ install as hscc_trace.replay and
hscc_trace.reports, never as top-level modules (tests/test_install.py)."""

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
