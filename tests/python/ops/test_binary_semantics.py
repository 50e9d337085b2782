"""Edge semantics of the binary ops, like PyTorch: IEEE special values, integer division by zero,
wrapping overflow, integer powers, boolean rules, promotion and in-place casting, errors."""

from __future__ import annotations

import itertools
import math

import magnetron as mag
import pytest
import torch
from ew_helpers import (
    FLOAT_DTYPES,
    INT_DTYPES,
    TORCH_DTYPES,
    assert_same,
    from_torch,
    tensor,
    to_torch,
)

SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 2.5, -0.5, 3.0, 1e-30, 1e30]
FLOAT_OPS = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "floordiv": torch.floor_divide,
    "mod": torch.remainder,
    "pow": torch.pow,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "eq": torch.eq,
    "lt": torch.lt,
    "ge": torch.ge,
    "logical_and": torch.logical_and,
    "logical_xor": torch.logical_xor,
}


# PyTorch's float32 remainder computes a - b * floor(a / b) and gives NaN when a / b overflows; ours is fmod-exact.
IEEE_SKIP = {"mod": {(1e30, 1e-30)}}
# PyTorch's maximum/minimum order -0.0 and +0.0 differently in its vector lanes and its scalar tail;
# ours follow IEEE 754-2019 (test_maximum_minimum_order_signed_zeros).
IEEE_ANY_ZERO_SIGN = {"maximum", "minimum"}


@pytest.mark.parametrize("dt", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("op", FLOAT_OPS)
def test_ieee_special_value_grid(op: str, dt: mag.dtype.DType) -> None:
    """Every pair of inf, nan, signed zeros, tiny and huge values, signs of zero included."""
    pairs = [p for p in itertools.product(SPECIALS, repeat=2) if p not in IEEE_SKIP.get(op, ())]
    ta = torch.tensor([p[0] for p in pairs], dtype=torch.float64).to(TORCH_DTYPES[dt])
    tb = torch.tensor([p[1] for p in pairs], dtype=torch.float64).to(TORCH_DTYPES[dt])
    a, b = from_torch(ta), from_torch(tb)
    expected = FLOAT_OPS[op](ta, tb)
    assert_same(getattr(a, op)(b), expected, f"{op} {dt} specials", signed_zeros=op not in IEEE_ANY_ZERO_SIGN)


def test_maximum_minimum_order_signed_zeros() -> None:
    z, nz = mag.Tensor([0.0, -0.0, -0.0, 0.0]), mag.Tensor([-0.0, 0.0, -0.0, 0.0])
    for a, b in ((z, nz), (nz, z)):
        assert [math.copysign(1, v) for v in a.maximum(b).tolist()] == [1, 1, -1, 1]
        assert [math.copysign(1, v) for v in a.minimum(b).tolist()] == [-1, -1, -1, 1]


@pytest.mark.parametrize("dt", INT_DTYPES, ids=str)
def test_integer_division_by_zero_raises(dt: mag.dtype.DType) -> None:
    a, zero = tensor([7, 1, 0], dt), tensor([1, 0, 2], dt)
    for op in ("floordiv", "mod"):
        with pytest.raises(ZeroDivisionError, match=f"{op}: integer division or modulo by zero \\(dtype {dt}"):
            getattr(a, op)(zero)
        with pytest.raises(ZeroDivisionError):
            getattr(a, op)(0)
        with pytest.raises(ZeroDivisionError):
            getattr(a, "_r" + op)(5)  # 5 // a, and a holds a zero
        c = a.clone()
        with pytest.raises(ZeroDivisionError):
            getattr(c, op + "_")(zero)
    with pytest.raises(ZeroDivisionError):
        a // 0  # noqa: B018
    with pytest.raises(ZeroDivisionError):
        a % 0  # noqa: B018
    assert (a // 2).tolist() == [3, 0, 0]  # the process lives on and the op works


def test_division_by_zero_in_a_large_multithreaded_op() -> None:
    t = torch.arange(1, 400_001, dtype=torch.int32)
    t[123_456] = 0
    before = mag.context.num_threads
    try:
        mag.context.num_threads = 2
        with pytest.raises(ZeroDivisionError, match=r"result shape \(400000,\)"):
            from_torch(torch.ones_like(t)).floordiv(from_torch(t))
    finally:
        mag.context.num_threads = before


def test_float_and_int_true_division_by_zero_is_ieee() -> None:
    assert_same(tensor([1, -1, 0], mag.int32) / 0, torch.tensor([1, -1, 0]) / 0, "int / 0 -> float32")
    t = torch.tensor([1.0, -1.0, 0.0, -0.0])
    z = torch.tensor([0.0, 0.0, -0.0, 0.0])
    for op in ("div", "floordiv", "mod"):
        ref = {"div": torch.div, "floordiv": torch.floor_divide, "mod": torch.remainder}[op]
        assert_same(getattr(from_torch(t), op)(from_torch(z)), ref(t, z), f"float {op} by zero", signed_zeros=True)


@pytest.mark.parametrize("dt", [d for d in INT_DTYPES if d.is_signed_integer], ids=str)
def test_int_min_by_minus_one_wraps_like_torch(dt: mag.dtype.DType) -> None:
    t = torch.tensor([int(dt.min), int(dt.min), 7, -7], dtype=TORCH_DTYPES[dt])
    m = torch.tensor([-1, 1, -1, -1], dtype=TORCH_DTYPES[dt])
    a, b = from_torch(t), from_torch(m)
    assert_same(a // b, torch.floor_divide(t, m), f"{dt} // -1")
    assert_same(a % b, torch.remainder(t, m), f"{dt} % -1")
    assert_same(a * b, t * m, f"{dt} * -1")


@pytest.mark.parametrize("dt", INT_DTYPES, ids=str)
def test_integer_overflow_wraps(dt: mag.dtype.DType) -> None:
    hi, lo = int(dt.max), int(dt.min)
    a, b = tensor([hi, lo, hi, lo], dt), tensor([1, 1, 2, 3], dt)
    bits = 8 * dt.size

    def wrap(v: int) -> int:
        v %= 1 << bits
        return v - (1 << bits) if dt.is_signed_integer and v >= 1 << (bits - 1) else v

    assert (a + b).tolist() == [wrap(x + y) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    assert (a - b).tolist() == [wrap(x - y) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    assert (a * b).tolist() == [wrap(x * y) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    assert (a**b).tolist() == [wrap(x**y) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    assert a.sqr().tolist() == [wrap(x * x) for x in a.tolist()]


def test_integer_powers() -> None:
    t = torch.tensor([2, -3, 1, -1, 0, -1], dtype=torch.int32)
    e = torch.tensor([-1, -2, -5, -3, -1, -4], dtype=torch.int32)
    assert_same(from_torch(t).pow(from_torch(e)), torch.pow(t, e), "tensor negative exponents")
    assert_same(from_torch(t) ** 0, t**0, "x ** 0")
    assert_same(2 ** from_torch(e), 2**e, "2 ** negative tensor")
    x = from_torch(t)
    for bad in (lambda: x**-1, lambda: x.pow(-2), lambda: x.pow_(-1), lambda: tensor([True], mag.boolean) ** -1):
        with pytest.raises(ValueError, match="integers to negative integer powers"):
            bad()


def test_integer_powers_into_int_destination_reject_float_results() -> None:
    x = tensor([2, 3], mag.int32)
    with pytest.raises(TypeError, match="float32 cannot be written into a destination of type int32"):
        x **= 0.5
    assert_same(x**0.5, torch.tensor([2, 3], dtype=torch.int32) ** 0.5, "int ** float -> float32")


def test_boolean_arithmetic_like_torch() -> None:
    tb, tc = torch.tensor([True, False, True, False]), torch.tensor([True, True, False, False])
    b, c = from_torch(tb), from_torch(tc)
    for op, ref in (("add", torch.add), ("mul", torch.mul), ("maximum", torch.maximum), ("div", torch.div)):
        assert_same(getattr(b, op)(c), ref(tb, tc), f"bool {op}")
    assert_same(b + 2, tb + 2, "bool + int -> int64")
    assert_same(b * 2.5, tb * 2.5, "bool * float -> float32")
    assert_same(b & c, tb & tc, "bool &")
    for op in ("sub", "floordiv", "mod", "pow", "lshift", "rshift"):
        with pytest.raises(TypeError, match=f"{op}: unsupported dtypes boolean and boolean"):
            getattr(b, op)(c)
    with pytest.raises(TypeError, match="bitwise_and: unsupported dtypes float32 and float32"):
        mag.Tensor([1.0]) & mag.Tensor([2.0])


PROMOTION_PAIRS = [
    (mag.int32, mag.float16),
    (mag.uint8, mag.int8),
    (mag.boolean, mag.int16),
    (mag.bfloat16, mag.float16),
    (mag.float32, mag.float64),
    (mag.int64, mag.bfloat16),
    (mag.int8, mag.int64),
    (mag.uint8, mag.boolean),
]


@pytest.mark.parametrize(("da", "db"), PROMOTION_PAIRS, ids=[f"{a}-{b}" for a, b in PROMOTION_PAIRS])
def test_mixed_dtype_promotion_like_torch(da: mag.dtype.DType, db: mag.dtype.DType) -> None:
    ta = torch.tensor([[1, 0, 3], [4, 5, 1]]).to(TORCH_DTYPES[da])
    tb = torch.tensor([2, 1, 1]).to(TORCH_DTYPES[db])
    a, b = from_torch(ta), from_torch(tb)
    for op, fn in (("add", torch.add), ("mul", torch.mul), ("maximum", torch.maximum), ("lt", torch.lt)):
        assert_same(getattr(a, op)(b), fn(ta, tb), f"{op} {da} {db}")
        assert_same(getattr(b, op)(a), fn(tb, ta), f"{op} {db} {da}")


def test_weak_python_scalars_like_torch() -> None:
    ti, tf = torch.tensor([1, 2], dtype=torch.int32), torch.tensor([0.1, 3.0])
    th = torch.tensor([0.1], dtype=torch.bfloat16)
    i, f, h = from_torch(ti), from_torch(tf), from_torch(th)
    assert_same(i + 2.5, ti + 2.5, "int32 + float -> float32")
    assert_same(i * True, ti * True, "int32 * bool -> int32")
    assert_same(h * 0.1, th * 0.1, "bfloat16 * float stays bfloat16")
    assert_same(f + 1, tf + 1, "float32 + int stays float32")
    assert_same(tensor([200], mag.uint8) + 100, torch.tensor([200], dtype=torch.uint8) + 100, "uint8 wraps")
    assert_same(i < 1.5, ti < 1.5, "int32 < float")


def test_in_place_keeps_the_destination_dtype() -> None:
    i = tensor([1, 2], mag.int32)
    for bad in (lambda: i.add_(1.5), lambda: i.div_(2), lambda: i.sqrt_(), lambda: i.mul_(mag.Tensor([1.0]))):
        with pytest.raises(TypeError, match="cannot be written into a destination of type int32"):
            bad()
    assert i.tolist() == [1, 2]
    with pytest.raises(TypeError, match="int64 cannot be written into a destination of type boolean"):
        tensor([True], mag.boolean).add_(1)
    assert i.mul_(True).tolist() == [1, 2]
    assert i.add_(tensor([2**31 - 1, 0], mag.int64)).tolist() == [-(2**31), 2]  # int64 result, cast into int32
    h = tensor([1.0, 2.0], mag.float16)
    assert h.add_(mag.Tensor([0.5, 0.25])) is h and h.dtype == mag.float16 and h.tolist() == [1.5, 2.25]
    f = mag.Tensor([1.0, 2.0])
    assert f.lt_(1.5).tolist() == [1.0, 0.0] and f.dtype == mag.float32
    assert f.logical_not_().tolist() == [0.0, 1.0]


def test_shape_and_operand_errors() -> None:
    a, b = mag.Tensor([[1.0, 2.0, 3.0]]), mag.Tensor([1.0, 2.0])
    with pytest.raises(ValueError, match=r"add: shapes \(1, 3\) and \(2,\) cannot be broadcast"):
        a + b  # noqa: B018
    with pytest.raises(ValueError, match=r"destination of shape \(1, 3\) does not match the result shape \(2, 3\)"):
        a.add_(mag.Tensor([[1.0], [2.0]]))
    with pytest.raises(TypeError, match="mul"):
        a.mul(None)
    with pytest.raises(TypeError, match="mul: unsupported operand type list"):
        a.mul([1.0])


def test_results_alias_nothing() -> None:
    a = mag.Tensor([1.0, 2.0])
    for r in (a + 0, a.abs(), a.maximum(a), a.clamp(0.0), a.floor(), a == a):
        assert r.data_ptr != a.data_ptr and not r.is_view
    assert to_torch(a).tolist() == [1.0, 2.0]
