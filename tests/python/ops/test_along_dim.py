"""softmax, log_softmax, cumsum and topk against PyTorch: every dtype x layout x dim.

topk values must match exactly; its indices must point at those values, and must equal
torch's where the values are distinct (ties leave torch's order unspecified). Where torch has
no topk kernel (uint16/32/64) NumPy is the reference.
"""

from __future__ import annotations

import magnetron as mag
import numpy as np
import pytest
import torch
from reduce_cases import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, LAYOUTS, assert_matches, make_pair, torch_dtype

NAN = float("nan")
INF = float("inf")


def dims_of(rank: int) -> list[int]:
    return [0, -1] if rank == 0 else [*range(rank), -1, -rank]


# ---- softmax / log_softmax ----
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_matches_torch(op: str, dtype: str, layout: str) -> None:
    x, t = make_pair(layout, dtype)
    for dim in dims_of(t.ndim):
        expected = getattr(torch, op)(t, dim)
        assert_matches(getattr(x, op)(dim), expected, dtype, what=f"{op}(dim={dim}) of {layout}")
    assert_matches(getattr(x, op)(), getattr(torch, op)(t, -1), dtype, what=f"{op}() defaults to dim=-1")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_is_stable(op: str, dtype: str) -> None:
    rows = [
        [1000.0, 1001.0, 999.0, -1000.0],  # exp would overflow without the max shift
        [-1000.0, -1001.0, -999.0, -1002.0],  # ... or underflow to 0 / 0
        [-INF, 0.0, 1.0, -INF],
        [-INF, -INF, -INF, -INF],  # torch: nan
        [INF, 1.0, 2.0, 3.0],  # torch: nan
        [NAN, 1.0, 2.0, 3.0],  # torch: nan
    ]
    big = dtype in ("float32", "float64", "bfloat16")  # float16 cannot hold 1000 exactly enough: scale it
    t = torch.tensor(rows if big else [[v / 100 for v in r] for r in rows], dtype=torch_dtype(dtype))
    x = mag.Tensor.from_dlpack(t.clone())
    for dim in (1, 0):
        assert_matches(getattr(x, op)(dim), getattr(torch, op)(t, dim), dtype, what=f"{op}(dim={dim}) extremes")


def test_softmax_dtype_and_errors() -> None:
    t = torch.randn(3, 5, dtype=torch.float32)
    x = mag.Tensor.from_dlpack(t)
    assert_matches(x.softmax(0, dtype=mag.float64), t.softmax(0, dtype=torch.float64), "float32", what="dtype=")
    for dtype in INT_DTYPES + ["boolean"]:
        xi = x.cast(getattr(mag, dtype))
        for op in ("softmax", "log_softmax"):
            with pytest.raises(
                TypeError, match=rf"{op}: expected a floating-point input, got {dtype} \(shape \(3, 5\)\)"
            ):
                getattr(xi, op)(0)
    with pytest.raises(IndexError, match="softmax: dimension 2 is out of range"):
        x.softmax(2)
    with pytest.raises(TypeError, match="log_softmax: dim must be an int"):
        x.log_softmax((0,))


# ---- cumsum ----
def cumsum_reference(t: torch.Tensor, dim: int) -> torch.Tensor:
    if t.dtype in (torch.float16, torch.bfloat16):  # both accumulate in float32, torch rounds the same way
        return t.float().cumsum(dim).to(t.dtype)
    return t.cumsum(dim)


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cumsum_matches_torch(dtype: str, layout: str) -> None:
    x, t = make_pair(layout, dtype)
    for dim in dims_of(t.ndim):
        assert_matches(x.cumsum(dim), cumsum_reference(t, dim), dtype, what=f"cumsum(dim={dim}) of {layout}")


def test_cumsum_wraps_and_casts() -> None:
    big = torch.tensor([2**62, 2**62, 2**62, 5], dtype=torch.int64)
    assert_matches(mag.Tensor.from_dlpack(big).cumsum(0), big.cumsum(0), "int64", what="int64 overflow wraps")
    t = torch.tensor([100, 100, 100], dtype=torch.int8)
    x = mag.Tensor.from_dlpack(t)
    assert_matches(x.cumsum(0), t.cumsum(0), "int8", what="int8 -> int64")
    assert_matches(x.cumsum(0, dtype=mag.int8), t.cumsum(0, dtype=torch.int8), "int8", what="dtype=int8")
    with pytest.raises(TypeError):
        x.cumsum()  # dim is required, as in torch
    with pytest.raises(IndexError, match="cumsum: dimension -2"):
        x.cumsum(-2)


# ---- topk ----
def topk_reference(t: torch.Tensor, k: int, dim: int, largest: bool) -> torch.Tensor:
    """The expected values."""
    if t.dtype not in (torch.uint16, torch.uint32, torch.uint64):
        return t.topk(k, dim, largest=largest).values
    if t.ndim == 0:
        return t.clone()
    a = np.sort(t.numpy(), axis=dim)
    if largest:
        a = np.flip(a, dim)
    return torch.from_numpy(np.take(a, np.arange(k), axis=dim))


def ks_for(size: int) -> list[int]:
    return sorted({0, 1, size // 2, size} & set(range(size + 1)))


def check_topk(x: mag.Tensor, t: torch.Tensor, k: int, dim: int, largest: bool, unique: bool, what: str) -> None:
    values, indices = x.topk(k, dim, largest=largest)
    assert_matches(values, topk_reference(t, k, dim, largest), str(t.dtype), what=f"{what} values")
    idx = torch.from_dlpack(indices)
    assert idx.dtype == torch.int64
    if t.ndim:  # every index points at its value
        picked = np.take_along_axis(t.numpy() if t.dtype != torch.bfloat16 else t.float().numpy(), idx.numpy(), dim)
        want = torch.from_dlpack(values)
        want = want.float() if want.dtype == torch.bfloat16 else want
        assert np.array_equal(picked, want.numpy(), equal_nan=t.dtype.is_floating_point), f"{what}: indices"
    if unique and t.dtype not in (torch.uint16, torch.uint32, torch.uint64):
        assert torch.equal(idx, t.topk(k, dim, largest=largest).indices), f"{what}: indices differ from torch"


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES)
def test_topk_matches_torch(dtype: str, layout: str) -> None:
    for unique in (False, True) if layout != "expanded" else (False,):  # broadcast lanes repeat values
        if unique and dtype in ("int8", "uint8", "float16", "bfloat16") and layout in ("sliced", "rank1"):
            continue  # the shuffled range of the base does not fit these dtypes exactly
        x, t = make_pair(layout, dtype, unique=unique)
        for dim in dims_of(t.ndim):
            size = t.shape[dim] if t.ndim else 1
            for k in ks_for(size):
                for largest in (True, False):
                    what = f"topk(k={k}, dim={dim}, largest={largest}) of {dtype} {layout} unique={unique}"
                    check_topk(x, t, k, dim, largest, unique, what)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_topk_nan_counts_as_largest(dtype: str) -> None:
    t = torch.tensor([[1.0, NAN, 3.0, -INF, NAN, 2.0]], dtype=torch_dtype(dtype))
    x = mag.Tensor.from_dlpack(t.clone())
    for largest in (True, False):
        for k in range(7):
            values, indices = x.topk(k, largest=largest)
            ref = t.topk(k, largest=largest)
            assert_matches(values, ref.values, dtype, what=f"topk({k}, largest={largest}) with NaN")
            if largest and k <= 2:  # the NaNs: first NaN first (torch agrees)
                assert torch.from_dlpack(indices).tolist() == ref.indices.tolist()


def test_topk_api_and_errors() -> None:
    x = mag.Tensor.from_dlpack(torch.tensor([[3, 1, 2], [6, 5, 4]], dtype=torch.int32))
    r = x.topk(2)
    values, indices = r
    assert r.values is values and r.indices is indices
    assert values.tolist() == [[3, 2], [6, 5]] and indices.tolist() == [[0, 2], [0, 1]]
    assert x.topk(1, dim=0, largest=False, sorted=False).values.tolist() == [[3, 1, 2]]
    with pytest.raises(ValueError, match=r"topk: k = 4 is out of range for dimension 1 of size 3 \(shape \(2, 3\)\)"):
        x.topk(4)
    with pytest.raises(ValueError, match="topk: k = -1"):
        x.topk(-1)
    with pytest.raises(IndexError, match="topk: dim 2 is out of range"):
        x.topk(1, 2)
    with pytest.raises(TypeError, match="topk: boolean input"):
        x.cast(mag.boolean).topk(1)
    s = mag.Tensor(7.0)
    assert s.topk(1).values.item() == 7.0 and s.topk(0).indices.item() == 0  # rank 0: torch returns the element


def test_big_lanes() -> None:
    """Long lanes and many lanes, split across threads."""
    g = torch.Generator().manual_seed(11)
    t = torch.randn(64, 5000, generator=g)
    x = mag.Tensor.from_dlpack(t)
    assert_matches(x.softmax(1), t.softmax(1), "float32", what="softmax big")
    assert_matches(x.log_softmax(0), t.log_softmax(0), "float32", what="log_softmax big dim 0")
    assert_matches(x.cumsum(1), t.cumsum(1), "float32", what="cumsum big")
    check_topk(x, t, 50, 1, True, True, "topk big")
    check_topk(x, t, 64, 0, False, True, "topk big dim 0")
