"""Fixtures: reference checkpoints built once per session in a temporary folder (see reference.py)."""

from __future__ import annotations

import os
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

sys.path.insert(0, os.path.dirname(__file__))

import reference  # noqa: E402
import torch  # noqa: E402


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--models-big", action="store_true", default=False, help="run GPT-2 124M / Qwen3-0.6B shape tests")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--models-big"):
        return
    skip = pytest.mark.skip(reason="full-size model shapes: run with --models-big")
    for item in items:
        if "models_big" in item.keywords:
            item.add_marker(skip)


class Checkpoints:
    """Builds each (name, dtype) checkpoint on first use."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.built: dict[tuple[str, torch.dtype], str] = {}

    def __call__(self, name: str, dtype: torch.dtype = torch.float32) -> str:
        key = (name, dtype)
        if key not in self.built:
            spec = reference.TINY.get(name) or reference.BIG[name]
            folder = os.path.join(self.root, f"{name}-{str(dtype).removeprefix('torch.')}")
            self.built[key] = reference.build(spec, folder, dtype)
        return self.built[key]


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Checkpoints:
    torch.set_num_threads(2)
    return Checkpoints(str(tmp_path_factory.mktemp("checkpoints")))
