"""Helpers shared by the tensor tests: dtype maps and comparisons against NumPy / PyTorch."""

from __future__ import annotations

from typing import Any

import magnetron as mag
import numpy as np
import torch

# magnetron dtype -> (torch dtype, numpy dtype or None where NumPy has none)
DTYPES: dict[mag.dtype.DType, tuple[torch.dtype, Any]] = {
    mag.float32: (torch.float32, np.float32),
    mag.float16: (torch.float16, np.float16),
    mag.bfloat16: (torch.bfloat16, None),
    mag.float64: (torch.float64, np.float64),
    mag.boolean: (torch.bool, np.bool_),
    mag.int8: (torch.int8, np.int8),
    mag.uint8: (torch.uint8, np.uint8),
    mag.int16: (torch.int16, np.int16),
    mag.uint16: (torch.uint16, np.uint16),
    mag.int32: (torch.int32, np.int32),
    mag.uint32: (torch.uint32, np.uint32),
    mag.int64: (torch.int64, np.int64),
    mag.uint64: (torch.uint64, np.uint64),
}
ALL_DTYPES = list(DTYPES)
TORCH_TO_MAG = {t: m for m, (t, _) in DTYPES.items()}


def to_numpy(t: mag.Tensor) -> np.ndarray:
    """The values of t as a NumPy array (bfloat16 widened to float32), read element by element."""
    if t.dtype is mag.bfloat16:
        t = t.cast(mag.float32)
    return np.array(t.tolist(), dtype=DTYPES[t.dtype][1]).reshape(t.shape)


def to_torch(t: mag.Tensor) -> torch.Tensor:
    return torch.tensor(t.tolist(), dtype=DTYPES[t.dtype][0]).reshape(t.shape)


def from_torch(t: torch.Tensor) -> mag.Tensor:
    """A magnetron copy of a torch tensor (values only; contiguous)."""
    return mag.Tensor(t.tolist(), dtype=TORCH_TO_MAG[t.dtype]).reshape(tuple(t.shape))


def assert_like_numpy(got: mag.Tensor, want: np.ndarray, check_strides: bool = True) -> None:
    """Same shape and values; for views also the same strides (NumPy counts bytes, we count elements)."""
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(to_numpy(got), want)
    if check_strides and want.size > 1:
        es = want.itemsize
        for n, s, ws in zip(got.shape, got.strides, want.strides, strict=True):
            if n > 1:
                assert s * es == ws, (got.strides, want.strides)


def assert_like_torch(got: mag.Tensor, want: torch.Tensor, check_strides: bool = True) -> None:
    assert got.shape == tuple(want.shape), (got.shape, tuple(want.shape))
    assert got.dtype is TORCH_TO_MAG[want.dtype], (got.dtype, want.dtype)
    torch.testing.assert_close(to_torch(got), want, rtol=0, atol=0, equal_nan=True)
    if check_strides:
        for n, s, ws in zip(got.shape, got.strides, want.stride(), strict=True):
            if n > 1:
                assert s == ws, (got.strides, want.stride())


def arange_pair(*shape: int) -> tuple[mag.Tensor, np.ndarray]:
    """The same float32 values 0..n-1 as a magnetron tensor and a NumPy array."""
    n = int(np.prod(shape, dtype=np.int64))
    return mag.Tensor.arange(n, dtype=mag.float32).reshape(*shape), np.arange(n, dtype=np.float32).reshape(shape)


def shares_storage(a: mag.Tensor, b: mag.Tensor) -> bool:
    return a._storage_id == b._storage_id
