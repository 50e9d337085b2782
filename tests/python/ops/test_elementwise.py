"""Unary elementwise ops and clamp against PyTorch: every op x dtype in its mask x layout, in place too."""

from __future__ import annotations

import math

import magnetron as mag
import numpy as np
import pytest
import torch
from ew_helpers import (
    FLOAT_DTYPES,
    MAG_DTYPES,
    OPF_INPLACE,
    OPS,
    TORCH_DTYPES,
    Ref,
    assert_same,
    can_store,
    from_torch,
    op_dtypes,
    reference,
    tensor,
    to_torch,
    tolerance,
    unary_layouts,
    values,
)

F = torch.nn.functional


def _identity(x: np.ndarray) -> np.ndarray:
    return x


# op -> (reference, float input domain); integer inputs draw from [-100, 100] clipped to the dtype
UNARY: dict[str, tuple[Ref, tuple[float, float]]] = {
    "abs": (Ref(torch.abs, np.abs), (-3, 3)),
    "sgn": (Ref(torch.sgn, np.sign), (-3, 3)),
    "neg": (Ref(torch.neg, np.negative), (-3, 3)),
    "sqr": (Ref(torch.square, np.square), (-3, 3)),
    "rcp": (Ref(torch.reciprocal), (-3, 3)),
    "sqrt": (Ref(torch.sqrt), (0.01, 5)),
    "rsqrt": (Ref(torch.rsqrt), (0.01, 5)),
    "log": (Ref(torch.log), (0.01, 5)),
    "log2": (Ref(torch.log2), (0.01, 5)),
    "log10": (Ref(torch.log10), (0.01, 5)),
    "log1p": (Ref(torch.log1p), (-0.9, 5)),
    "exp": (Ref(torch.exp), (-5, 5)),
    "exp2": (Ref(torch.exp2), (-5, 5)),
    "expm1": (Ref(torch.expm1), (-5, 5)),
    "floor": (Ref(torch.floor, _identity), (-3, 3)),
    "ceil": (Ref(torch.ceil, _identity), (-3, 3)),
    "round": (Ref(torch.round, _identity), (-3, 3)),
    "trunc": (Ref(torch.trunc, _identity), (-3, 3)),
    "sin": (Ref(torch.sin), (-3, 3)),
    "cos": (Ref(torch.cos), (-3, 3)),
    "tan": (Ref(torch.tan), (-1.4, 1.4)),
    "asin": (Ref(torch.asin), (-0.99, 0.99)),
    "acos": (Ref(torch.acos), (-0.99, 0.99)),
    "atan": (Ref(torch.atan), (-3, 3)),
    "sinh": (Ref(torch.sinh), (-3, 3)),
    "cosh": (Ref(torch.cosh), (-3, 3)),
    "tanh": (Ref(torch.tanh), (-3, 3)),
    "asinh": (Ref(torch.asinh), (-3, 3)),
    "acosh": (Ref(torch.acosh), (1, 5)),
    "atanh": (Ref(torch.atanh), (-0.99, 0.99)),
    "step": (Ref(lambda x: (x > 0).to(x.dtype), lambda x: (x > 0).astype(x.dtype)), (-3, 3)),
    "erf": (Ref(torch.erf), (-3, 3)),
    "erfc": (Ref(torch.erfc), (-3, 3)),
    "sigmoid": (Ref(torch.sigmoid), (-5, 5)),
    "hard_sigmoid": (Ref(F.hardsigmoid), (-5, 5)),
    "silu": (Ref(F.silu), (-5, 5)),
    "relu": (Ref(torch.relu, lambda x: np.maximum(x, x.dtype.type(0))), (-3, 3)),
    "gelu": (Ref(F.gelu), (-5, 5)),
    "gelu_approx": (Ref(lambda x: F.gelu(x, approximate="tanh")), (-5, 5)),
    "logical_not": (Ref(torch.logical_not, np.logical_not), (-3, 3)),
    "bitwise_not": (Ref(torch.bitwise_not, np.invert), (-3, 3)),
}
CASES = [(op, d) for op in UNARY for d in op_dtypes(op)]


def _maker(d: mag.dtype.DType, dom: tuple[float, float], seed: int):  # noqa: ANN202
    gen = torch.Generator().manual_seed(seed)
    lo, hi = dom if d.is_floating_point else (-100, 100)
    return lambda shape: from_torch(values(d, shape, lo, hi, gen))


def test_every_unary_table_op_is_tested() -> None:
    table = {n for n, r in OPS.items() if r["kind"] in (0, 2) and r["n_inputs"] == 1}
    assert table == set(UNARY)


@pytest.mark.parametrize(("op", "dt"), CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_unary(op: str, dt: mag.dtype.DType) -> None:
    ref, dom = UNARY[op]
    inplace = OPS[op]["flags"] & OPF_INPLACE
    for layout, x in unary_layouts(_maker(dt, dom, 0)):
        what = f"{op} {dt} {layout}"
        expected = reference(op, ref, to_torch(x))
        assert_same(getattr(x, op)(), expected, what, tol=tolerance(op, dt))
        if not inplace:
            continue
        if layout == "broadcast":  # two elements share one address: not a valid destination
            with pytest.raises(RuntimeError, match="clone"):
                getattr(x, op + "_")()
        elif can_store(MAG_DTYPES[expected.dtype], dt):
            assert getattr(x, op + "_")() is x
            assert_same(x, expected.to(TORCH_DTYPES[dt]), what + " in place", tol=tolerance(op, dt))
        else:
            with pytest.raises(TypeError, match=op):
                getattr(x, op + "_")()


SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 1e-30, -1e-30, 1e30, -1e30, 3.0]
# PyTorch's vectorised gelu gives NaN for +inf (1e30 in float16 too); its limit is +inf, which we return.
# Its AVX2 kernel also drops the sign of zero (gelu(-0) = +0; its AVX-512 one keeps -0): x * Phi(x) is -0
# at -0 and for large negative x.
IEEE_LIMITS = {"gelu": {math.inf: math.inf, -0.0: -0.0, -1e30: -0.0}}


@pytest.mark.parametrize("dt", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("op", [op for op in UNARY if mag.float32 in op_dtypes(op)])
def test_unary_ieee(op: str, dt: mag.dtype.DType) -> None:
    """inf, nan, signed zeros, subnormals and overflow like PyTorch, signs of zero included."""
    t = torch.tensor(SPECIALS, dtype=torch.float64).to(TORCH_DTYPES[dt])
    expected = reference(op, UNARY[op][0], t)
    for x, limit in IEEE_LIMITS.get(op, {}).items():
        same = (t == x) & (t.signbit() == (math.copysign(1.0, x) < 0)) & (t.isinf() == math.isinf(x))
        expected[same] = limit  # signs of zero told apart; a value that overflows t's dtype is not x
    assert_same(getattr(from_torch(t), op)(), expected, f"{op} {dt} specials", signed_zeros=True)


def test_round_is_half_to_even() -> None:
    for d in FLOAT_DTYPES:
        x = from_torch(torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 1e30], dtype=TORCH_DTYPES[d]))
        assert x.round().tolist() == [0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 4.0, to_torch(x)[-1].item()]
    big = 2.0**52 + 1  # already integral, beyond the rounding trick's range
    assert tensor([big, -big, 0.49999999999999994], mag.float64).round().tolist() == [big, -big, 0.0]


def test_step_is_heaviside_at_zero() -> None:
    x = torch.tensor([-2.0, -0.0, 0.0, 1e-30, 3.0, math.nan, math.inf])
    assert from_torch(x).step().tolist() == torch.heaviside(x.nan_to_num(0.0), torch.tensor(0.0)).tolist()
    assert mag.Tensor([-3, 0, 4]).step().tolist() == [0, 0, 1]


def test_integer_edges_wrap_like_torch() -> None:
    for d in (mag.int8, mag.int16, mag.int32, mag.int64):
        lo = int(d.min)
        x = torch.tensor([lo, lo + 1, -1, 0, int(d.max)], dtype=TORCH_DTYPES[d])
        for op, fn in (("abs", torch.abs), ("neg", torch.neg), ("sqr", torch.square), ("sgn", torch.sgn)):
            assert_same(getattr(from_torch(x), op)(), fn(x), f"{op} {d} edges")
    assert tensor([1, 2], mag.uint8).neg().tolist() == [255, 254]


def test_aliases_and_dunders() -> None:
    x = from_torch(torch.tensor([-2.0, 0.5, 4.0]))
    t = to_torch(x)
    assert_same(x.reciprocal(), torch.reciprocal(t), "reciprocal")
    assert_same(x.hardsigmoid(), F.hardsigmoid(t), "hardsigmoid")
    assert_same(-x, -t, "__neg__")
    assert_same(abs(x), abs(t), "__abs__")
    i = tensor([1, -2, 0], mag.int32)
    assert (~i).tolist() == [-2, 1, -1]
    assert (~mag.Tensor([True, False])).tolist() == [False, True]
    y = x.clone()
    assert y.reciprocal_() is y and y.hardsigmoid_() is y
    assert_same(y, F.hardsigmoid(torch.reciprocal(t)), "in-place aliases")


def test_unsupported_dtypes_raise_type_error() -> None:
    b = mag.Tensor([True, False])
    for op in ("neg", "abs", "sqr", "floor", "relu", "step"):
        with pytest.raises(TypeError, match=f"{op}: unsupported dtype boolean"):
            getattr(b, op)()
    with pytest.raises(TypeError, match="bitwise_not: unsupported dtype float32"):
        mag.Tensor([1.0]).bitwise_not()


def test_large_tensor_runs_multithreaded_like_single() -> None:
    t = torch.linspace(-4, 4, 300_001)
    x = from_torch(t)
    before = mag.context.num_threads
    try:
        for op, ref in (("exp", torch.exp), ("tanh", torch.tanh), ("gelu", F.gelu)):
            results = []
            for n in (1, 2):
                mag.context.num_threads = n
                results.append(to_torch(getattr(x, op)()))
            assert torch.equal(results[0], results[1]), op
            # atol: PyTorch's vectorised gelu is a few 1e-6 off near x = -3.3, where the result is tiny
            torch.testing.assert_close(results[0], ref(t), rtol=2e-5, atol=1e-5)
    finally:
        mag.context.num_threads = before


# ---- clamp ----
def _clamp_ref(x: torch.Tensor, lo: object, hi: object) -> torch.Tensor:
    try:
        return torch.clamp(x, lo, hi)
    except (NotImplementedError, RuntimeError):
        return torch.from_numpy(np.asarray(np.clip(x.numpy(), lo, hi)))


CLAMP_CASES = [(d, b) for d in op_dtypes("clamp") for b in ((1, 5), (None, 7), (3, None), (6, 2))]


@pytest.mark.parametrize(("dt", "bounds"), CLAMP_CASES, ids=[f"{d}-{b}" for d, b in CLAMP_CASES])
def test_clamp(dt: mag.dtype.DType, bounds: tuple[int | None, int | None]) -> None:
    lo, hi = (None if v is None else (float(v) if dt.is_floating_point else v) for v in bounds)
    for layout, x in unary_layouts(_maker(dt, (0, 8), 1)):
        what = f"clamp{bounds} {dt} {layout}"
        expected = _clamp_ref(to_torch(x), lo, hi)
        assert_same(x.clamp(lo, hi), expected, what)
        if layout != "broadcast":
            assert x.clamp_(min=lo, max=hi) is x
            assert_same(x, expected, what + " in place")


def test_clamp_semantics() -> None:
    t = torch.tensor([-1.0, 0.0, -0.0, 2.0, math.nan, math.inf, -math.inf])
    x = from_torch(t)
    for lo, hi in ((0.0, 1.0), (None, 0.0), (-0.0, None), (math.nan, None), (None, math.nan), (2.0, -1.0)):
        assert_same(x.clamp(lo, hi), torch.clamp(t, lo, hi), f"clamp({lo}, {hi})", signed_zeros=True)
    i = torch.tensor([-5, 0, 5], dtype=torch.int32)
    assert_same(from_torch(i).clamp(0.5, 2.5), torch.clamp(i, 0.5, 2.5), "int clamped to floats -> float32")
    assert_same(from_torch(i).clamp(min=-1), torch.clamp(i, min=-1), "int bounds keep int32")
    lo_t, hi_t = torch.tensor([[0.0], [1.0]]), torch.tensor([0.5, 3.0, math.nan, 1.0, 1.0, 1.0, 1.0])
    assert_same(x.clamp(from_torch(lo_t), from_torch(hi_t)), torch.clamp(t, lo_t, hi_t), "tensor bounds")
    assert_same(x.clamp(0.0, from_torch(hi_t)), torch.clamp(t, torch.tensor(0.0), hi_t), "mixed bounds")


def test_clamp_errors() -> None:
    x = tensor([1, 2, 3], mag.int8)
    with pytest.raises(ValueError, match="at least one"):
        x.clamp()
    with pytest.raises(ValueError, match="min 1000 does not fit in int8"):
        x.clamp(min=1000)
    with pytest.raises(ValueError, match="max -1 does not fit in uint8"):
        tensor([1], mag.uint8).clamp(max=-1)
    with pytest.raises(TypeError, match="float32 cannot be written into a destination of type int8"):
        x.clamp_(0.5)
    assert x.tolist() == [1, 2, 3]
    with pytest.raises(TypeError, match="clamp: unsupported dtype boolean"):
        mag.Tensor([True]).clamp(min=False)
    assert tensor([5], mag.uint64).clamp(max=2**64 - 1).tolist() == [5]
