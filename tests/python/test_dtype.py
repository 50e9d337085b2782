"""DType objects (API.md section 1): properties, identity, promotion against PyTorch and NumPy."""

from __future__ import annotations

import itertools
import pickle

import magnetron as mag
import numpy as np
import pytest
import torch
from magnetron import dtype as D

# (magnetron dtype, torch dtype, numpy dtype or None)
TABLE = [
    (mag.float32, torch.float32, np.float32),
    (mag.float16, torch.float16, np.float16),
    (mag.bfloat16, torch.bfloat16, None),
    (mag.float64, torch.float64, np.float64),
    (mag.boolean, torch.bool, np.bool_),
    (mag.int8, torch.int8, np.int8),
    (mag.uint8, torch.uint8, np.uint8),
    (mag.int16, torch.int16, np.int16),
    (mag.uint16, torch.uint16, np.uint16),
    (mag.int32, torch.int32, np.int32),
    (mag.uint32, torch.uint32, np.uint32),
    (mag.int64, torch.int64, np.int64),
    (mag.uint64, torch.uint64, np.uint64),
]
ALL = [m for m, _, _ in TABLE]
TORCH = {m: t for m, t, _ in TABLE}
NUMPY = {m: n for m, _, n in TABLE}
NAMES = ["float32", "float16", "bfloat16", "float64", "boolean", "int8", "uint8", "int16", "uint16", "int32",
         "uint32", "int64", "uint64"]


def test_every_dtype_is_exported_by_name() -> None:
    for name in NAMES:
        d = getattr(mag, name)
        assert d is getattr(mag.dtype, name)
        assert isinstance(d, mag.dtype.DType)
        assert d.name == name
        assert repr(d) == name
        assert str(d) == name
    assert set(NAMES) <= set(mag.__all__)
    ns: dict = {}
    exec("from magnetron import *", ns)
    for name in [*NAMES, "Tensor", "dtype", "no_grad"]:
        assert name in ns, name


@pytest.mark.parametrize("d", ALL, ids=NAMES)
def test_properties_match_torch(d: D.DType) -> None:
    t = TORCH[d]
    assert d.size == t.itemsize
    assert d.is_floating_point == t.is_floating_point
    is_int = not t.is_floating_point and t != torch.bool
    assert d.is_integer == is_int
    assert d.is_signed_integer == (is_int and t.is_signed)
    assert d.is_unsigned_integer == (is_int and not t.is_signed)
    assert d.is_integral == (not t.is_floating_point)
    assert d.is_numeric == (t != torch.bool)
    # properties, not methods
    for prop in ("name", "size", "is_floating_point", "is_integer", "is_signed_integer", "is_unsigned_integer",
                 "is_integral", "is_numeric", "min", "max"):
        assert isinstance(getattr(type(d), prop), property), prop


@pytest.mark.parametrize("d", ALL, ids=NAMES)
def test_min_max(d: D.DType) -> None:
    t = TORCH[d]
    if t == torch.bool:
        assert (d.min, d.max) == (0, 1)
    elif t.is_floating_point:
        info = torch.finfo(t)
        assert d.min == info.min and d.max == info.max
        assert isinstance(d.min, float)
    else:
        info = np.iinfo(NUMPY[d])
        assert d.min == int(info.min) and d.max == int(info.max)
        assert isinstance(d.min, int) and isinstance(d.max, int)  # exact, also for 64-bit


def test_equality_and_hash() -> None:
    for a, b in itertools.product(ALL, ALL):
        assert (a == b) == (a is b)
        assert (a != b) == (a is not b)
    assert len({hash(d) for d in ALL}) == len(ALL)
    assert {mag.float32: 1}[mag.dtype.float32] == 1
    assert mag.float32 != "float32"
    assert mag.float32 != torch.float32
    assert mag.int64 != 7
    assert mag.float32 == pickle.loads(pickle.dumps(mag.float32))


def test_as_dtype() -> None:
    assert D.as_dtype("bfloat16") is mag.bfloat16
    with pytest.raises(TypeError, match="dtype"):
        D.as_dtype(torch.float32)
    with pytest.raises(TypeError, match="dtype"):
        D.as_dtype("float128")


def _torch_promote(a: D.DType, b: D.DType) -> torch.dtype | None:
    try:
        return torch.promote_types(TORCH[a], TORCH[b])
    except RuntimeError:  # PyTorch refuses most mixes with uint16/32/64
        return None


def test_promotion_matches_torch_where_defined() -> None:
    checked = 0
    for a, b in itertools.product(ALL, ALL):
        want = _torch_promote(a, b)
        got = D.promote_types(a, b)
        assert D.promote_types(b, a) is got  # symmetric
        if want is not None:
            assert TORCH[got] == want, (a, b, got, want)
            checked += 1
    assert checked >= 120


def test_promotion_follows_numpy_where_torch_refuses() -> None:
    refused = [(a, b) for a, b in itertools.product(ALL, ALL) if _torch_promote(a, b) is None]
    assert refused
    for a, b in refused:
        assert NUMPY[a] is not None and NUMPY[b] is not None
        want = np.promote_types(NUMPY[a], NUMPY[b])
        assert NUMPY[D.promote_types(a, b)] == want, (a, b)


def test_promotion_rules_named_in_the_contract() -> None:
    assert D.promote_types(mag.int32, mag.float16) is mag.float16
    assert D.promote_types(mag.int64, mag.float32) is mag.float32
    assert D.promote_types(mag.bfloat16, mag.float32) is mag.float32
    assert D.promote_types(mag.bfloat16, mag.float16) is mag.float32
    assert D.promote_types(mag.boolean, mag.uint8) is mag.uint8


def test_binary_ops_promote_tensor_dtypes() -> None:
    pairs = [(mag.int32, mag.float16), (mag.bfloat16, mag.float32), (mag.uint8, mag.int8), (mag.boolean, mag.int16)]
    for a, b in pairs:
        x, y = mag.Tensor.ones(2, dtype=a), mag.Tensor.ones(2, dtype=b)
        assert (x + y).dtype is D.promote_types(a, b)
        assert (x == y).dtype is mag.boolean


@pytest.mark.parametrize(
    ("dt", "scalar", "want"),
    [
        (mag.bfloat16, 0.5, mag.bfloat16),
        (mag.float16, 2, mag.float16),
        (mag.float64, 0.5, mag.float64),
        (mag.int32, 1.5, mag.float32),
        (mag.int8, 3, mag.int8),
        (mag.uint8, 3, mag.uint8),
        (mag.int16, True, mag.int16),
        (mag.boolean, 1, mag.int64),
        (mag.boolean, 1.0, mag.float32),
        (mag.boolean, True, mag.boolean),
    ],
)
def test_python_scalars_are_weak(dt: D.DType, scalar: bool | int | float, want: D.DType) -> None:
    x = mag.Tensor.ones(3, dtype=dt)
    assert (x * scalar).dtype is want
    assert (scalar * x).dtype is want
    assert (x + scalar).dtype is want
    tx = torch.ones(3, dtype=TORCH[dt])
    assert TORCH[want] == (tx * scalar).dtype  # the same rule as PyTorch


def test_python_scalar_values_through_weak_promotion() -> None:
    x = mag.Tensor([1.0, 2.0, 3.0], dtype=mag.bfloat16)
    assert (x * 0.5).tolist() == [0.5, 1.0, 1.5]
    assert (mag.Tensor([1, 2], dtype=mag.int32) + 1.5).tolist() == [2.5, 3.5]
    assert (mag.Tensor([True, False]) + 1).tolist() == [2, 1]


def test_tensor_construction_infers_python_kinds() -> None:
    assert mag.Tensor(True).dtype is mag.boolean
    assert mag.Tensor(3).dtype is mag.int64
    assert mag.Tensor(3.0).dtype is mag.float32
    assert mag.Tensor([True, 2]).dtype is mag.int64
    assert mag.Tensor([1, 2.0]).dtype is mag.float32
    assert mag.Tensor([[True], [False]]).dtype is mag.boolean
    assert mag.Tensor([]).dtype is mag.float32
