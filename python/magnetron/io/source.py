"""What every importer provides: tensor specs in file order, metadata, and data on demand."""

from __future__ import annotations

import mmap
from typing import Any, BinaryIO

from .. import dtype as _dt
from .._C import FormatError
from .._tensor import Tensor
from .mag import TensorSpec


class Source:
    """Tensors to import. ``tensor(spec)`` returns data of ``spec``'s dtype and shape; it may
    point into a mapped file (zero copy), so callers use one tensor at a time."""

    format = "?"

    def __init__(self) -> None:
        self.specs: list[TensorSpec] = []
        self.metadata: dict[str, Any] = {}

    def tensor(self, spec: TensorSpec) -> Tensor:
        raise NotImplementedError


def map_readonly(f: BinaryIO, size: int) -> mmap.mmap | bytes:
    """The whole file mapped read-only (b"" when empty), with transparent huge pages asked for: decoding
    streams every weight once per token, and 2 MiB pages spare the TLB misses of 4 KiB ones."""
    if not size:
        return b""
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if hasattr(mmap, "MADV_HUGEPAGE"):  # Linux only; advice the kernel may ignore
        m.madvise(mmap.MADV_HUGEPAGE)
    return m


def check_shape(path: str, name: str, shape: Any) -> tuple[int, ...]:
    """A shape from a foreign header: a list of non-negative ints, at most 16 of them."""
    ok = isinstance(shape, (list, tuple)) and len(shape) <= 16
    ok = ok and all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2**63 for s in shape)
    if not ok:
        raise FormatError(f"'{path}': tensor '{name}' has an invalid shape {shape!r}")
    return tuple(shape)


def numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def spec(path: str, name: str, dtype: _dt.DType, shape: Any) -> TensorSpec:
    return TensorSpec(name, dtype, check_shape(path, name, shape))
