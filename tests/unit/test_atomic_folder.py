"""hss_gate.common.io.atomic_folder: a folder a library writes itself (Great Expectations' Data
Docs)
replaces its target whole, or not at all."""

from __future__ import annotations

import pytest

from hss_gate.common.io import atomic_folder

pytestmark = pytest.mark.unit


def test_a_built_folder_replaces_the_target_whole(tmp_path):
    target = tmp_path / "out" / "data_docs"
    target.mkdir(parents=True)
    (target / "stale.html").write_text("old")
    with atomic_folder(target) as built:
        assert built.parent == target.parent and not any(built.iterdir())
        (built / "index.html").write_text("new")
    assert sorted(p.name for p in target.iterdir()) == ["index.html"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["data_docs"]  # nothing left over


def test_a_failed_build_leaves_the_target_and_no_temporary_folder(tmp_path):
    target = tmp_path / "data_docs"
    target.mkdir()
    (target / "index.html").write_text("old")
    with pytest.raises(RuntimeError), atomic_folder(target) as built:
        (built / "index.html").write_text("half")
        raise RuntimeError("the library failed")
    assert (target / "index.html").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data_docs"]
