"""The Python API the docs show is importable from the package root, from its home module, and
`import hss_gate` loads none of it (nothing at import time)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import hss_gate

pytestmark = pytest.mark.unit


def test_every_root_name_is_its_home_modules_object():
    for name, home in hss_gate._API.items():
        module = __import__(home, fromlist=[name])
        assert getattr(hss_gate, name) is getattr(module, name), name


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_thing"):
        hss_gate.no_such_thing  # noqa: B018


def test_importing_the_package_loads_no_api_module():
    code = "import sys, hss_gate; print(sorted(m for m in sys.modules if m.startswith('hss_gate')))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert loaded.stdout.strip() == "['hss_gate']"
