"""Fixtures: reference checkpoints built once per session in a temporary folder (see reference.py)."""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

import pytest

sys.path.insert(0, os.path.dirname(__file__))

# The references need transformers + torch; without them these tests are not collected at all.
MISSING = [m for m in ("torch", "transformers", "tokenizers", "jinja2", "numpy") if importlib.util.find_spec(m) is None]
if MISSING:
    collect_ignore_glob = ["test_*.py"]


class Checkpoints:
    """Builds each (name, dtype) checkpoint on first use."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.built: dict[tuple[str, Any], str] = {}

    def __call__(self, name: str, dtype: Any = None) -> str:
        import reference
        import torch

        dtype = torch.float32 if dtype is None else dtype
        key = (name, dtype)
        if key not in self.built:
            spec = reference.TINY.get(name) or reference.BIG[name]
            folder = os.path.join(self.root, f"{name}-{str(dtype).removeprefix('torch.')}")
            self.built[key] = reference.build(spec, folder, dtype)
        return self.built[key]


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Checkpoints:
    import torch

    torch.set_num_threads(2)
    return Checkpoints(str(tmp_path_factory.mktemp("checkpoints")))
