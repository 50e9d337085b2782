"""Reductions (sum mean prod min max argmin argmax all any var std logsumexp) against PyTorch.

Table-driven: every op x dtype x layout, each test looping over the dims and keepdim cases.
Where torch has no kernel (min/max/argmin/argmax of uint16/32/64) NumPy is the reference.
The reference reduces by moving the reduced dims last and flattening them, which also defines
argmin/argmax over a tuple of dims (the flat index over the reduced dims, row-major).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import magnetron as mag
import numpy as np
import pytest
import torch
from reduce_cases import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    LAYOUTS,
    assert_matches,
    make_pair,
    norm_dims,
    torch_dtype,
)

# torch warns where var/std divide by max(0, n - correction) == 0; the result (nan/inf) is what is compared
pytestmark = pytest.mark.filterwarnings("ignore:.*degrees of freedom:UserWarning")

UINT_WIDE = {"uint16", "uint32", "uint64"}  # torch lacks min/max/argmin/argmax/topk for these


def _flat(
    t: torch.Tensor, dims: tuple[int, ...], keepdim: bool, fn: Callable[[torch.Tensor], torch.Tensor]
) -> torch.Tensor:
    """fn over the last dim of t with `dims` moved last and flattened."""
    kept = [d for d in range(t.ndim) if d not in dims]
    n_red = math.prod(t.shape[d] for d in dims)
    p = t.permute(kept + list(dims)).reshape(*[t.shape[d] for d in kept], n_red)
    r = fn(p)
    if keepdim:
        r = r.reshape([1 if d in dims else t.shape[d] for d in range(t.ndim)])
    return r


def _np(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda p: torch.from_numpy(np.array(fn(p.numpy())))


def _prod(p: torch.Tensor) -> torch.Tensor:
    """torch multiplies 16-bit floats in their own precision; magnetron (more accurately) in float32."""
    if not p.dtype.is_floating_point:
        return p.prod(-1, dtype=torch.int64)
    return p.prod(-1, dtype=torch.float32).to(p.dtype) if p.element_size() == 2 else p.prod(-1)


def reference(op: str, t: torch.Tensor, dim: object, keepdim: bool, correction: float = 1) -> torch.Tensor:
    dims = norm_dims(dim, t.ndim)
    wide = str(t.dtype).removeprefix("torch.") in UINT_WIDE
    acc = t if t.dtype.is_floating_point or t.dtype == torch.bool else t.to(torch.int64)
    fns: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
        "sum": lambda p: p.sum(-1, dtype=None if p.dtype.is_floating_point else torch.int64),
        "mean": lambda p: p.mean(-1),
        "prod": _prod,
        "min": _np(lambda a: a.min(-1)) if wide else lambda p: p.amin(-1),
        "max": _np(lambda a: a.max(-1)) if wide else lambda p: p.amax(-1),
        "argmin": _np(lambda a: a.argmin(-1)) if wide else lambda p: p.argmin(-1),
        "argmax": _np(lambda a: a.argmax(-1)) if wide else lambda p: p.argmax(-1),
        "all": lambda p: p.all(-1).bool(),
        "any": lambda p: p.any(-1).bool(),
        "var": lambda p: p.var(-1, correction=correction),
        "std": lambda p: p.std(-1, correction=correction),
        "logsumexp": lambda p: p.logsumexp(-1),
    }
    src = acc if op in ("sum", "prod") and wide else t
    return _flat(src, dims, keepdim, fns[op])


OPS = ["sum", "mean", "prod", "min", "max", "argmin", "argmax", "all", "any", "var", "std", "logsumexp"]
FLOAT_ONLY = {"mean", "var", "std"}
NO_BOOL = {"argmin", "argmax"}
NO_IDENTITY = {"min", "max", "argmin", "argmax"}


def dim_cases(rank: int) -> list[object]:
    if rank == 0:
        return [None, 0, -1, ()]
    cases: list[object] = [None, 0, -1, tuple(range(rank)), ()]
    if rank > 1:
        cases.append((0, rank - 1))
    if rank > 2:
        cases += [1, (-1, 0), (1, 2)]
    return cases


def supported(op: str, dtype: str) -> bool:
    return not ((op in FLOAT_ONLY and dtype not in FLOAT_DTYPES) or (op in NO_BOOL and dtype == "boolean"))


def run_case(op: str, x: mag.Tensor, t: torch.Tensor, dim: object, keepdim: bool, dtype: str) -> None:
    try:
        expected = reference(op, t, dim, keepdim)
    except (IndexError, RuntimeError, ValueError):  # reducing an empty dim without an identity
        assert op in NO_IDENTITY
        with pytest.raises(IndexError, match=op):
            getattr(x, op)(dim, keepdim=keepdim)
        return
    actual = getattr(x, op)(dim, keepdim=keepdim)
    assert_matches(actual, expected, dtype, what=f"{op}(dim={dim!r}, keepdim={keepdim}) of {dtype} {tuple(t.shape)}")


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("op,dtype", [(op, dt) for op in OPS for dt in ALL_DTYPES if supported(op, dt)])
def test_reduce_matches_torch(op: str, dtype: str, layout: str) -> None:
    x, t = make_pair(layout, dtype, positive=op == "prod")
    for dim in dim_cases(t.ndim):
        for keepdim in (False, True):
            run_case(op, x, t, dim, keepdim, dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op", ["var", "std"])
def test_var_correction(op: str, dtype: str) -> None:
    x, t = make_pair("transposed", dtype)
    for kwargs, c in [
        ({"unbiased": False}, 0),
        ({"unbiased": True}, 1),
        ({"correction": 0}, 0),
        ({"correction": 2.5}, 2.5),
        ({"correction": 7}, 7),
        ({}, 1),
    ]:
        for dim in (None, 1, (0, 2)):
            expected = reference(op, t, dim, False, correction=c)
            assert_matches(getattr(x, op)(dim, **kwargs), expected, dtype, what=f"{op}({dim}, {kwargs})")
    assert_matches(getattr(x, op)(False), reference(op, t, None, False, correction=0), dtype, what=f"{op}(False)")
    assert_matches(getattr(x, op)(0, True, True), reference(op, t, 0, True), dtype, what=f"{op}(0, True, True)")


@pytest.mark.parametrize("op", OPS)
def test_rejected_dtypes(op: str) -> None:
    for dtype in ALL_DTYPES:
        if supported(op, dtype):
            continue
        x, _ = make_pair("contiguous", dtype)
        with pytest.raises(TypeError, match=rf"{op}: .*{dtype}"):
            getattr(x, op)()


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint64", "boolean"])
def test_mean_with_dtype(dtype: str) -> None:
    x, t = make_pair("sliced", dtype)
    r = x.mean(1, dtype=mag.float64)
    assert_matches(r, t.to(torch.float64).mean(1), "float64", what="mean(dtype=float64)")
    assert_matches(x.sum(0, dtype=mag.int8), t.sum(0, dtype=torch.int8), "int8", what="sum(dtype=int8)")


def test_result_dtypes() -> None:
    expected = {
        "sum": "int64",
        "prod": "int64",
        "all": "boolean",
        "any": "boolean",
        "argmax": "int64",
        "logsumexp": "float32",
        "min": None,
        "max": None,
    }
    for dtype in ALL_DTYPES:
        x, _ = make_pair("contiguous", dtype)
        for op, want in expected.items():
            if not supported(op, dtype):
                continue
            got = getattr(x, op)().dtype.name
            if dtype in FLOAT_DTYPES and op not in ("all", "any", "argmax"):
                want = dtype
            assert got == (want or dtype), f"{op} of {dtype} gave {got}"


# ---- NaN, infinities, empty inputs, rank 0 ----
NAN = float("nan")
INF = float("inf")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_nan_propagation(dtype: str) -> None:
    rows = [[1.0, NAN, 3.0, NAN], [NAN, 2.0, 5.0, 1.0], [4.0, 2.0, -1.0, 0.5], [NAN, NAN, NAN, NAN]]
    t = torch.tensor(rows, dtype=torch_dtype(dtype))
    x = mag.Tensor.from_dlpack(t.clone())
    for op in ("min", "max", "argmin", "argmax", "sum", "mean", "prod", "logsumexp", "var", "all", "any"):
        for dim in (None, 0, 1):
            assert_matches(getattr(x, op)(dim), reference(op, t, dim, False), dtype, what=f"{op}({dim}) with NaN")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_infinities(dtype: str) -> None:
    rows = [[INF, -INF, 1.0], [-INF, -INF, -INF], [INF, INF, 2.0], [1.0, 2.0, 3.0]]
    t = torch.tensor(rows, dtype=torch_dtype(dtype))
    x = mag.Tensor.from_dlpack(t.clone())
    for op in ("logsumexp", "sum", "max", "min", "argmax", "argmin", "mean"):
        assert_matches(getattr(x, op)(1), reference(op, t, 1, False), dtype, what=f"{op} with inf")


def test_empty_reductions() -> None:
    x = mag.Tensor.zeros(0, 3)
    assert x.sum().item() == 0 and x.sum(0).tolist() == [0.0] * 3
    assert x.prod(0).tolist() == [1.0] * 3
    assert math.isnan(x.mean().item()) and math.isnan(x.var().item())
    assert x.logsumexp(0).tolist() == [-INF] * 3
    assert x.all().item() is True and x.any(0).tolist() == [False] * 3
    assert x.max(1).shape == (0,) and x.argmax(1).shape == (0,)
    for op in ("max", "min", "argmax", "argmin"):
        with pytest.raises(IndexError, match=rf"{op}: .*\(0, 3\)"):
            getattr(x, op)()
        with pytest.raises(IndexError, match=op):
            getattr(x, op)(0)


def test_rank0() -> None:
    x = mag.Tensor(2.5)
    for op in ("sum", "mean", "prod", "min", "max", "logsumexp"):
        for dim in (None, 0, -1):
            r = getattr(x, op)(dim)
            assert r.shape == () and r.item() == pytest.approx(2.5), op
    assert x.argmax().item() == 0 and x.argmin(0, keepdim=True).shape == ()
    assert math.isnan(x.var().item()) and x.var(unbiased=False).item() == 0


# ---- bad arguments ----
def test_errors_name_the_op() -> None:
    x = mag.Tensor.zeros(2, 3)
    with pytest.raises(IndexError, match=r"sum: dim 2 is out of range .*\(2, 3\)"):
        x.sum(2)
    with pytest.raises(IndexError, match="argmax: dim -3"):
        x.argmax(-3)
    with pytest.raises(ValueError, match="mean: dim 1 appears more than once"):
        x.mean((1, -1))
    with pytest.raises(TypeError, match="max: dim must be an int"):
        x.max(0.5)
    with pytest.raises(TypeError, match="keepdim must be a bool"):
        x.sum(0, 1)
    with pytest.raises(TypeError, match="var: pass either unbiased or correction"):
        x.var(0, True, correction=1)
    with pytest.raises(TypeError, match=r"mean: expected a floating-point input, got int64 \(shape \(2, 3\)\)"):
        x.cast(mag.int64).mean()
    with pytest.raises(ValueError, match="correction must be finite"):
        x.std(correction=float("inf"))


def test_numpy_ints_as_dims() -> None:
    x, t = make_pair("contiguous", "float32")
    assert_matches(x.sum((np.int64(0), np.int32(-1))), t.sum((0, 2)), "float32", what="numpy dims")
    assert_matches(x.softmax(np.int64(1)), t.softmax(1), "float32", what="numpy dim")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16bit_loads_are_exact(dtype: str) -> None:
    """Every bit pattern (subnormals, infinities, NaN payloads) goes through the reduction loads unchanged."""
    bits = torch.arange(65536, dtype=torch.int32).to(torch.int16).view(torch_dtype(dtype))
    x = mag.Tensor.from_dlpack(bits.clone())
    for r in (x.reshape(65536, 1).max(1), x.reshape(65536, 1).sum(1)):
        same = torch.from_dlpack(r).view(torch.int16) == bits.view(torch.int16)
        # sums of one element are exact too, except that they turn signalling NaNs quiet and -0 + 0 = 0
        ok = same | torch.from_dlpack(r).isnan() & bits.isnan() | (bits == 0)
        assert bool(ok.all()), f"{dtype}: {int((~ok).sum())} patterns changed"


# ---- summation accuracy, big inputs (the chunked path), thread-count independence ----
def test_sum_accuracy() -> None:
    ones = mag.Tensor.ones(10_000_000)
    assert ones.sum().item() == 10_000_000.0
    assert ones.mean().item() == 1.0
    tenths = mag.Tensor.full(1_000_000, fill_value=0.1)
    exact = 1_000_000 * float(np.float32(0.1))
    assert abs(tenths.sum().item() - exact) / exact < 1e-6
    assert mag.Tensor.ones(10_000, dtype=mag.float16).sum().item() == 10_000.0
    assert mag.Tensor.ones(1000, 300, dtype=mag.bfloat16).sum(0).tolist()[0] == 1000.0


@pytest.mark.parametrize(
    "shape,dim", [((200_003,), None), ((70_001, 3), 0), ((3, 2, 40_000), (0, 2)), ((5, 60_000), 1)]
)
def test_big_reductions(shape: tuple[int, ...], dim: object) -> None:
    g = torch.Generator().manual_seed(7)
    t = torch.randn(shape, generator=g)
    t.view(-1)[t.numel() // 2] = 9.0  # a unique max in the middle ...
    t.view(-1)[-5] = 9.0  # ... and a later equal one: argmax must report the first
    x = mag.Tensor.from_dlpack(t)
    for op in ("sum", "mean", "max", "min", "argmax", "argmin", "var", "std", "logsumexp", "all", "any"):
        assert_matches(getattr(x, op)(dim), reference(op, t, dim, False), "float32", what=f"big {op}{shape}")
    tn = t.clone()
    tn.view(-1)[-3] = NAN
    tn.view(-1)[-2] = NAN
    xn = mag.Tensor.from_dlpack(tn)
    for op in ("max", "argmax", "argmin", "sum"):
        assert_matches(getattr(xn, op)(dim), reference(op, tn, dim, False), "float32", what=f"big {op} with NaN")
    ti = (t > 0).to(torch.int32)
    xi = mag.Tensor.from_dlpack(ti)
    for op in ("sum", "prod", "argmax", "all", "any"):
        assert_matches(getattr(xi, op)(dim), reference(op, ti, dim, False), "int32", what=f"big int {op}")


def test_results_do_not_depend_on_thread_count() -> None:
    t = torch.randn(300_001, generator=torch.Generator().manual_seed(3))
    x = mag.Tensor.from_dlpack(t)
    before = mag.context.num_threads
    try:
        results = []
        for n in (1, 2, 3, 5):
            mag.context.num_threads = n
            results.append([x.sum().item(), x.var().item(), x.logsumexp().item(), x.sum(0).item()])
        assert all(r == results[0] for r in results)
    finally:
        mag.context.num_threads = before
