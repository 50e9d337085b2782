"""Inputs and comparisons shared by the reduction, softmax, topk and cumsum tests.

make_pair builds the same values as a magnetron view and a torch tensor in one of the layouts
(contiguous, transposed, sliced with steps, broadcast with stride 0, reversed with a negative
stride, zero-size, rank 0, rank 1).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

import magnetron as mag
import numpy as np
import torch

FLOAT_DTYPES = ["float32", "float16", "bfloat16", "float64"]
INT_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + ["boolean"]

# (rtol, atol) of float results: a few units in the last place of values of magnitude ~10
TOLERANCES = {
    torch.float32: (1e-5, 2e-5),
    torch.float64: (1e-12, 1e-12),
    torch.float16: (2e-3, 2e-2),
    torch.bfloat16: (1.6e-2, 1e-1),
}


def torch_dtype(name: str) -> torch.dtype:
    return torch.bool if name == "boolean" else getattr(torch, name)


def _flip(t: Any, dim: int) -> Any:
    if isinstance(t, torch.Tensor):  # torch cannot flip uint16/32/64: NumPy can
        wide = t.dtype in (torch.uint16, torch.uint32, torch.uint64)
        return torch.from_numpy(np.flip(t.numpy(), dim).copy()) if wide else t.flip(dim)
    n = t.shape[dim]
    return t.view_slice(dim, n - 1, n, -1)


# name -> (shape of the contiguous base, the view taken of it; the same code runs on both libraries)
LAYOUTS: dict[str, tuple[tuple[int, ...], Callable[[Any], Any]]] = {
    "contiguous": ((3, 4, 5), lambda t: t),
    "transposed": ((5, 4, 3), lambda t: t.permute(2, 1, 0)),
    "sliced": ((6, 4, 11), lambda t: t[::2, :, 1::2]),
    "expanded": ((3, 1, 5), lambda t: t.expand(3, 4, 5)),
    "reversed": ((3, 4, 5), lambda t: _flip(t, 2)),
    "zero_size": ((3, 0, 5), lambda t: t),
    "rank0": ((), lambda t: t),
    "rank1": ((40,), lambda t: t[1::3]),
}


def random_values(shape: tuple[int, ...], dtype: str, seed: int, positive: bool = False) -> torch.Tensor:
    """Random data for dtype: normal floats (or in [0.8, 1.25] when positive), small integers, mostly-true booleans."""
    g = torch.Generator().manual_seed(seed)
    td = torch_dtype(dtype)
    if td.is_floating_point:
        v = (
            0.8 + 0.45 * torch.rand(shape, generator=g, dtype=torch.float64)
            if positive
            else torch.randn(shape, generator=g, dtype=torch.float64)
        )
    elif td == torch.bool:
        v = torch.rand(shape, generator=g) < 0.8
    elif dtype.startswith("uint"):
        v = torch.randint(0 if not positive else 1, 10 if not positive else 3, shape, generator=g)
    else:
        v = torch.randint(-9 if not positive else -2, 10 if not positive else 3, shape, generator=g)
    return v.to(td)


def make_pair(layout: str, dtype: str, positive: bool = False, unique: bool = False) -> tuple[mag.Tensor, torch.Tensor]:
    """The same values as (magnetron view, torch tensor). unique: distinct values (a shuffled range)."""
    shape, view = LAYOUTS[layout]
    seed = zlib.crc32(f"{layout}/{dtype}/{positive}".encode())
    if unique:
        n = int(np.prod(shape))
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).reshape(shape)
        base = (perm - n // 3 if not dtype.startswith("uint") else perm).to(torch_dtype(dtype))
    else:
        base = random_values(shape, dtype, seed, positive)
    return view(mag.Tensor.from_dlpack(base.clone())), view(base)


def norm_dims(dim: object, rank: int) -> tuple[int, ...]:
    """The reduced dims, normalised and sorted; None and () mean every dim."""
    if dim is None or dim == ():
        return tuple(range(rank))
    dims = dim if isinstance(dim, tuple) else (dim,)
    return tuple(sorted(d % max(rank, 1) for d in dims)) if rank else ()


def assert_matches(actual: mag.Tensor, expected: torch.Tensor, dtype: str, what: str) -> None:
    """Same shape and dtype; floats within TOLERANCES of the result dtype (NaN equal to NaN), the rest exact."""
    a = torch.from_dlpack(actual)
    where = f"{what} [input {dtype}]"
    assert tuple(a.shape) == tuple(expected.shape), f"{where}: shape {tuple(a.shape)} != {tuple(expected.shape)}"
    assert a.dtype == expected.dtype, f"{where}: dtype {a.dtype} != {expected.dtype}"
    if a.dtype.is_floating_point:
        rtol, atol = TOLERANCES[a.dtype]
        torch.testing.assert_close(a, expected, rtol=rtol, atol=atol, equal_nan=True, msg=lambda m: f"{where}: {m}")
    else:
        assert np.array_equal(a.numpy(), expected.numpy()), f"{where}:\n{a}\n!=\n{expected}"
