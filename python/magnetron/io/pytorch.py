"""PyTorch checkpoints (.bin, .pt, .pth), read with ``torch.load(weights_only=True)``.

Nothing but tensors and plain containers is unpickled. Nested dicts are flattened with dotted
names (so ``{"model": state_dict, "step": 3}`` works); tensors come over through DLPack,
without copying.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._C import FormatError
from .._tensor import Tensor
from .mag import TensorSpec
from .source import Source, spec


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise RuntimeError("importing a PyTorch checkpoint needs PyTorch (pip install torch)") from None
    return torch


def _load(torch: Any, path: Path) -> Any:
    try:
        try:
            return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as e:
            if "mmap" not in str(e):
                raise
            return torch.load(path, map_location="cpu", weights_only=True)  # legacy format: cannot be mapped
    except Exception as e:  # the restricted unpickler refuses anything but tensors and containers
        raise FormatError(f"'{path}': not a loadable PyTorch checkpoint ({type(e).__name__}: {e})") from None


def _flatten(obj: Any, prefix: str, out: dict[str, Any], torch: Any) -> None:
    if isinstance(obj, torch.Tensor):
        out[prefix] = obj
    elif isinstance(obj, Mapping):
        for k, v in obj.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out, torch)


class TorchSource(Source):
    format = "pytorch"

    def __init__(self, files: list[Path]) -> None:
        super().__init__()
        from .. import dtype as _dt

        torch = _torch()
        self._tensors: dict[str, Any] = {}
        for path in files:
            found: dict[str, Any] = {}
            _flatten(_load(torch, path), "", found, torch)
            for name, t in found.items():
                dtype = getattr(_dt, str(t.dtype).removeprefix("torch."), None)
                if dtype is None and t.dtype == torch.bool:
                    dtype = _dt.boolean
                if not isinstance(dtype, _dt.DType):
                    raise TypeError(f"'{path}': tensor '{name}' has dtype {t.dtype}, which magnetron does not have")
                self._tensors[name] = t
                self.specs.append(spec(str(path), name, dtype, list(t.shape)))
        if not self._tensors:
            raise FormatError(f"'{files[0]}': the checkpoint holds no tensors")

    def tensor(self, s: TensorSpec) -> Tensor:
        return Tensor.from_dlpack(self._tensors[s.name].detach())
