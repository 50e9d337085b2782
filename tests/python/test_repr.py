"""repr like PyTorch's: the same layout as the same torch tensor, with ``Tensor(`` and the dtype always named."""

from __future__ import annotations

import math
import re

import magnetron as mag
import numpy as np
import pytest
import torch
from mag_testing import ALL_DTYPES, DTYPES, TORCH_TO_MAG
from magnetron import _repr

T = mag.Tensor


def _from_torch(t: torch.Tensor) -> mag.Tensor:
    if t.dtype == torch.bfloat16:  # exact through DLPack, whatever the values
        return T.from_dlpack(t.contiguous()).clone()
    if t.dtype == torch.uint64:
        return T(t.view(torch.int64).numpy().view(np.uint64))
    return T(t.tolist(), dtype=TORCH_TO_MAG[t.dtype]).reshape(tuple(t.shape))


def _expected(t: torch.Tensor) -> str:
    """torch's repr with our prefix and our suffixes (size for empty tensors not of rank 1, then the dtype)."""
    body = re.sub(r"(,\s+(size=\([^)]*\)|dtype=torch\.\w+))+\)$", ")", repr(t))[:-1]
    body = "Tensor(" + body[len("tensor(") :]
    suffixes = [f"size={tuple(t.shape)}"] if t.numel() == 0 and t.dim() != 1 else []
    return _repr._with_suffixes(body, [*suffixes, f"dtype={TORCH_TO_MAG[t.dtype].name}"], 7)


def _check(t: torch.Tensor) -> None:
    assert repr(_from_torch(t)) == _expected(t)


NAN, INF = math.nan, math.inf
FLOAT_CASES = [
    [[1.0, 2.0], [3.0, 4.0]], [1.0, 2000.0], [0.1, 0.123456789], [1e-5, 1.0], [NAN, 1.0, -INF], [0.0, 0.0],
    [-0.0, 1.0], [1.5] * 30, [-1.5, 2.25, 100.0], [1e10, 1e-10], [1e8, 1.0], [123456789.0], [1e-4, 0.5],
    [0.5, 999.0], [0.5, 1001.0], [NAN, NAN], [INF, -INF, 0.0], [-3.0, NAN, 7.0], [3.14159], [-1e-300, 1e300],
    [[1e5, -2.5], [0.001, 7.0]], [65504.0, -65504.0], [1.0, 100.0, 1000.0], [0.001, 0.01], [2.5, -0.0],
]


@pytest.mark.parametrize("values", FLOAT_CASES, ids=[repr(v)[:30] for v in FLOAT_CASES])
def test_float_layout_matches_torch(values: list) -> None:
    _check(torch.tensor(values, dtype=torch.float64))
    _check(torch.tensor(values, dtype=torch.float32))


@pytest.mark.parametrize("d", ALL_DTYPES, ids=[d.name for d in ALL_DTYPES])
def test_every_dtype_matches_torch(d: mag.dtype.DType) -> None:
    tdt = DTYPES[d][0]
    if d is mag.boolean:
        cases = [torch.tensor([True, False]), torch.tensor([[True], [True]]), torch.tensor(False)]
    elif d.is_floating_point:
        cases = [torch.tensor([0.5, -1.25, 3.0], dtype=tdt), torch.tensor([[1.0, 2.0]], dtype=tdt),
                 torch.tensor(2.5, dtype=tdt), torch.tensor([NAN, 1e-3], dtype=tdt)]
    else:
        lo, hi = d.min, d.max
        vals = [lo, 0, 1, hi] if d is not mag.uint64 else [0, 1, 2**63 - 1]
        cases = [torch.tensor(vals, dtype=torch.int64).to(tdt) if d is not mag.uint64 else
                 torch.tensor(vals, dtype=torch.int64).view(torch.uint64), torch.tensor(7, dtype=tdt)]
    for t in cases:
        _check(t)
    assert repr(T.zeros(2, dtype=d)).endswith(f"dtype={d.name})")


def test_uint64_beyond_int64() -> None:
    x = T([0, 2**64 - 1], dtype=mag.uint64)
    assert repr(x) == "Tensor([                   0, 18446744073709551615], dtype=uint64)"


def test_contract_examples() -> None:
    assert repr(T([[1.0, 2.0], [3.0, 4.0]])) == "Tensor([[1., 2.],\n        [3., 4.]], dtype=float32)"
    assert repr(T(3.5)) == "Tensor(3.5000, dtype=float32)"
    assert repr(T(7)) == "Tensor(7, dtype=int64)"
    assert repr(T(True)) == "Tensor(True, dtype=boolean)"
    assert repr(T([-1, 10])) == "Tensor([-1, 10], dtype=int64)"
    assert str(T([1.0])) == repr(T([1.0]))


def test_rank0_matches_torch() -> None:
    for v in [0.0, -2.5, 1e-7, 3e9, NAN, -INF, 12345.678]:
        _check(torch.tensor(v))
    _check(torch.tensor(-3))


def test_zero_size() -> None:
    assert repr(T.zeros(0)) == "Tensor([], dtype=float32)"
    assert repr(T.zeros(2, 0)) == "Tensor([], size=(2, 0), dtype=float32)"
    assert repr(T.zeros(0, 3, 1, dtype=mag.int8)) == "Tensor([], size=(0, 3, 1), dtype=int8)"
    for shape in [(0,), (3, 0), (0, 2, 2)]:
        _check(torch.zeros(shape))
        _check(torch.zeros(shape, dtype=torch.int32))


@pytest.mark.parametrize("shape", [(2000,), (1001,), (40, 30), (3, 500), (500, 3), (10, 10, 11), (2,) * 10])
def test_summarised_large_tensors_match_torch(shape: tuple[int, ...]) -> None:
    n = math.prod(shape)
    _check(torch.arange(n, dtype=torch.float32).reshape(shape))
    _check(torch.arange(n, dtype=torch.int64).reshape(shape) - n // 2)
    g = torch.Generator().manual_seed(0)
    _check(torch.randn(shape, generator=g))
    assert "..." in repr(T.zeros(*shape)) or min(shape) <= 6


def test_not_summarised_at_threshold() -> None:
    assert "..." not in repr(T.zeros(1000))
    assert "..." in repr(T.zeros(1001))
    _check(torch.arange(1000.0))


def test_long_rows_wrap_like_torch() -> None:
    for n in [12, 13, 20, 37, 100]:
        _check(torch.arange(n, dtype=torch.float32) * 1.5)
        _check(torch.arange(n) * 100003)
        _check(torch.ones(2, n, dtype=torch.bool))


def test_random_values_match_torch() -> None:
    g = torch.Generator().manual_seed(3)
    for scale in [1e-6, 1e-3, 1.0, 1e3, 1e7, 1e9]:
        t = torch.randn(4, 5, generator=g) * scale
        _check(t)
        _check(t.round())
        _check(t.to(torch.float16) if scale < 1e4 else t)
        _check(t.to(torch.bfloat16))


def test_views_print_their_own_elements() -> None:
    t = torch.arange(24.0).reshape(2, 3, 4)
    x = T.arange(24, dtype=mag.float32).view(2, 3, 4)
    assert repr(x.transpose(0, 2)) == _expected(t.transpose(0, 2))
    assert repr(x[:, 1, ::2]) == _expected(t[:, 1, ::2])
    assert repr(x.view_slice(2, 3, 2, -2)) == _expected(t[:, :, [3, 1]])
    assert repr(x[:1, :1].expand(3, 2, 4)) == _expected(t[:1, :1].expand(3, 2, 4))


def test_dtype_suffix_wraps_past_80_columns() -> None:
    # the dtype goes on its own line when the last line would pass 80 columns (PyTorch's rule for suffixes)
    x = T([1.5] * 9)
    text = repr(x)
    assert text.endswith(",\n       dtype=float32)")
    assert all(len(line) <= 80 for line in text.splitlines())
    assert repr(T([1.5, 2.5])).endswith("], dtype=float32)")
