"""The SIMD paths of the reduction kernels, at the sizes where they change behaviour.

Dense rows (the reduced dim contiguous) run in 64-byte vectors, RED_BLOCK (1024) elements per
step; tiles (a strided reduced dim) reduce up to 1024 outputs side by side, 4 rows at a time in
blocks of 16. The shapes straddle those boundaries; NaN, ties and extreme integers sit in the
vector lanes, in the tails and at block edges.
"""

from __future__ import annotations

import magnetron as mag
import pytest
import torch
from reduce_cases import FLOAT_DTYPES, assert_matches, torch_dtype
from test_reduce import reference

OPS = ("sum", "mean", "max", "min", "argmax", "argmin", "var", "logsumexp")
# (rows, cols): cols straddle the lane counts and RED_BLOCK, rows straddle the 4-row groups and 16-row blocks
SHAPES = [(3, 33), (5, 64), (2, 1025), (17, 100), (7, 1023), (33, 1024), (21, 2500), (2, 5000)]


def _data(shape: tuple[int, ...], dtype: str, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(torch_dtype(dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_rows_and_tiles(shape: tuple[int, int], dtype: str) -> None:
    t = _data(shape, dtype, seed=shape[0] * 7919 + shape[1])
    x = mag.Tensor.from_dlpack(t.clone())
    for op in OPS:
        for dim in (1, 0, None):
            assert_matches(getattr(x, op)(dim), reference(op, t, dim, False), dtype, what=f"{op}({dim}) {shape}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("pos", [0, 5, 15, 16, 31, 1023, 1024, 1030, 2047])
def test_nan_anywhere(dtype: str, pos: int) -> None:
    """One NaN in a row of 2050 (lane, tail or block edge) or in a column of 2050 rows: max/min/argmax see it."""
    t = _data((2050, 3), dtype, seed=pos)
    t[pos, 1] = float("nan")
    for tt in (t, t.T.contiguous()):
        x = mag.Tensor.from_dlpack(tt.clone())
        for op in ("max", "min", "argmax", "argmin", "sum"):
            for dim in (0, 1, None):
                assert_matches(getattr(x, op)(dim), reference(op, tt, dim, False), dtype, what=f"{op}({dim}) NaN@{pos}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_argmax_ties_take_the_first(dtype: str) -> None:
    """Equal maxima in different lanes, blocks and tails: the smallest index wins, along rows and columns."""
    for n in (40, 1100, 3000):
        for first in (3, 17, n // 2):
            t = torch.zeros(4, n, dtype=torch_dtype(dtype))
            for k in range(first, n, 13):
                t[:, k] = 2.0
                t[:, n - 1 - k] = -2.0
            x = mag.Tensor.from_dlpack(t.clone())
            xt = mag.Tensor.from_dlpack(t.T.contiguous())
            assert x.argmax(1).tolist() == [first] * 4 and x.argmax().item() == first
            assert xt.argmax(0).tolist() == [first] * 4
            assert x.argmin(1).tolist() == t.argmin(1).tolist() and xt.argmin(0).tolist() == t.argmin(1).tolist()


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "uint64"])
def test_integer_extremes(dtype: str) -> None:
    """The SIMD min/max of integers compare with the dtype's signedness (e.g. uint8 200 > 100)."""
    info = torch.iinfo(torch_dtype(dtype)) if dtype != "uint64" else None
    lo, hi = (info.min, info.max) if info else (0, 2**63 - 1)
    g = torch.Generator().manual_seed(11)
    t = torch.randint(-100 if lo < 0 else 0, 100, (9, 700), generator=g).to(torch_dtype(dtype))
    t[3, 500], t[5, 17] = hi, lo
    x = mag.Tensor.from_dlpack(t.clone())
    for dim in (1, 0, None):
        for op in ("max", "min"):
            assert_matches(getattr(x, op)(dim), reference(op, t, dim, False), dtype, what=f"{op}({dim})")


def test_column_sums_stay_accurate() -> None:
    """float32 columns of 100000 ones and 0.1s sum like pairwise summation (blocks of 16 rows, then a cascade)."""
    ones = mag.Tensor.ones(100_000, 40)
    assert ones.sum(0).tolist() == [100_000.0] * 40
    tenths = mag.Tensor.full(100_000, 20, fill_value=0.1)
    exact = 100_000 * 0.1
    assert max(abs(v - exact) / exact for v in tenths.sum(0).tolist()) < 1e-6
