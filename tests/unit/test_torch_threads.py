"""Torch's threads while in-process generation keeps the cores busy (hss_gate.models.embedding)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from hss_gate.models import embedding
from hss_gate.scoring.pipeline import _cores_left

pytestmark = pytest.mark.unit


def test_an_in_process_summarizer_leaves_torch_the_cores_it_does_not_use(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert _cores_left(SimpleNamespace(local_threads=2)) == 6
    assert _cores_left(SimpleNamespace(local_threads=8)) == 1  # never fewer than one
    assert _cores_left(SimpleNamespace(local_threads=16)) == 1
    assert _cores_left(SimpleNamespace(workers=4)) is None  # remote or torch's own: untouched


def test_torch_threads_apply_inside_and_restore_the_default_after():
    torch = pytest.importorskip("torch")
    default = torch.get_num_threads()
    with embedding.torch_threads(1):
        embedding._apply_torch_threads(default)
        assert torch.get_num_threads() == 1
        with embedding.torch_threads(None):  # None changes nothing
            embedding._apply_torch_threads(default)
            assert torch.get_num_threads() == 1
    embedding._apply_torch_threads(default)
    assert torch.get_num_threads() == default
    assert embedding._TORCH_THREADS == []
