"""The build step that packages hss-gate's data (hss_gate/common/packaged.py): the default params.yaml,
the reference corpus and production's stored baseline are copied from this folder into the
built package at every build, so the wheel works outside a checkout and git holds one copy."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _packaged():
    """hss_gate/common/packaged.py, loaded by path (the package is not installed yet)."""
    spec = importlib.util.spec_from_file_location("_hss_packaged", HERE / "hss_gate/common/packaged.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildPyWithData(build_py):
    """build_py, then the packaged data into the build's hss_gate/_packaged/."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout's own data/ and params.yaml
        packaged = _packaged()
        target = Path(self.build_lib) / "hss_gate" / packaged.PACKAGE_DIR
        files = packaged.build(HERE, target)
        size = sum(f.stat().st_size for f in files)
        self.announce(f"packaged data: {len(files)} files, {size / 1e6:.1f} MB -> {target}", 2)


setup(cmdclass={"build_py": BuildPyWithData})
