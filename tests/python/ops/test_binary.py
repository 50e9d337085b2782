"""Binary elementwise ops against PyTorch (NumPy for uint16/32/64): every op x dtype x layout,
Python scalars on either side, in place; also the operator dunders."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

import magnetron as mag
import numpy as np
import pytest
import torch
from ew_helpers import (
    MAG_DTYPES,
    OPF_INPLACE,
    OPS,
    TORCH_DTYPES,
    Ref,
    assert_same,
    binary_layouts,
    can_store,
    from_torch,
    op_dtypes,
    reference,
    tensor,
    to_torch,
    values,
)

Domain = tuple[float, float]


def _shift_counts(d: mag.dtype.DType) -> Domain:
    """Counts around and past the width, negative ones for signed types (PyTorch defines both)."""
    return (-2 if d.is_signed_integer else 0, 8 * d.size + 2)


@dataclass(frozen=True)
class Spec:
    ref: Ref
    fa: Domain = (-3, 3)  # float inputs
    fb: Domain = (-3, 3)
    ia: Domain = (-100, 100)  # integer inputs (clipped to the dtype)
    ib: Domain | Callable[[mag.dtype.DType], Domain] = (-100, 100)
    nonzero: bool = False  # integer operands avoid 0 (division by zero has its own tests)


BINARY: dict[str, Spec] = {
    "add": Spec(Ref(torch.add, np.add)),
    "sub": Spec(Ref(torch.sub, np.subtract)),
    "mul": Spec(Ref(torch.mul, np.multiply)),
    "div": Spec(Ref(torch.div)),
    "floordiv": Spec(Ref(torch.floor_divide, np.floor_divide), fb=(0.3, 3), ib=(-9, 9), nonzero=True),
    "mod": Spec(Ref(torch.remainder, np.remainder), fb=(-3, -0.3), ib=(-9, 9), nonzero=True),
    "pow": Spec(Ref(torch.pow, np.power), fa=(0.1, 3), fb=(-2, 2), ia=(-5, 5), ib=(0, 5)),
    "maximum": Spec(Ref(torch.maximum, np.maximum)),
    "minimum": Spec(Ref(torch.minimum, np.minimum)),
    "eq": Spec(Ref(torch.eq, np.equal), ia=(-3, 3), ib=(-3, 3)),
    "ne": Spec(Ref(torch.ne, np.not_equal), ia=(-3, 3), ib=(-3, 3)),
    "lt": Spec(Ref(torch.lt, np.less), ia=(-3, 3), ib=(-3, 3)),
    "le": Spec(Ref(torch.le, np.less_equal), ia=(-3, 3), ib=(-3, 3)),
    "gt": Spec(Ref(torch.gt, np.greater), ia=(-3, 3), ib=(-3, 3)),
    "ge": Spec(Ref(torch.ge, np.greater_equal), ia=(-3, 3), ib=(-3, 3)),
    "logical_and": Spec(Ref(torch.logical_and, np.logical_and), ia=(-2, 2), ib=(-2, 2)),
    "logical_or": Spec(Ref(torch.logical_or, np.logical_or), ia=(-2, 2), ib=(-2, 2)),
    "logical_xor": Spec(Ref(torch.logical_xor, np.logical_xor), ia=(-2, 2), ib=(-2, 2)),
    "bitwise_and": Spec(Ref(torch.bitwise_and, np.bitwise_and)),
    "bitwise_or": Spec(Ref(torch.bitwise_or, np.bitwise_or)),
    "bitwise_xor": Spec(Ref(torch.bitwise_xor, np.bitwise_xor)),
    "lshift": Spec(Ref(torch.bitwise_left_shift, np.left_shift), ib=_shift_counts),
    "rshift": Spec(Ref(torch.bitwise_right_shift, np.right_shift), ib=_shift_counts),
}
# (dtype category -> Python scalar) for the scalar-operand forms
SCALARS = {"float": 1.5, "int": 3, "bool": True}
CASES = [(op, d) for op in BINARY for d in op_dtypes(op)]


def _makers(spec: Spec, d: mag.dtype.DType, seed: int):  # noqa: ANN202
    gen = torch.Generator().manual_seed(seed)
    if d.is_floating_point:
        dom_a, dom_b = spec.fa, spec.fb
    else:
        dom_a, dom_b = spec.ia, spec.ib(d) if callable(spec.ib) else spec.ib

    def make(dom: Domain):  # noqa: ANN202
        def build(shape: tuple[int, ...]) -> mag.Tensor:
            t = values(d, shape, *dom, gen)
            if spec.nonzero and not d.is_floating_point:
                t = torch.where(t == 0, torch.ones_like(t), t)
            return from_torch(t)

        return build

    return make(dom_a), make(dom_b)


def _scalar(op: str, d: mag.dtype.DType) -> float | int | bool:
    if op in ("lshift", "rshift", "pow") and not d.is_floating_point:
        return 2
    return SCALARS["float" if d.is_floating_point else "int" if d.is_integer else "bool"]


def test_every_binary_table_op_is_tested() -> None:
    table = {n for n, r in OPS.items() if r["kind"] in (1, 2) and r["n_inputs"] == 2}
    assert table == set(BINARY)


@pytest.mark.parametrize(("op", "dt"), CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_binary(op: str, dt: mag.dtype.DType) -> None:
    spec = BINARY[op]
    make_a, make_b = _makers(spec, dt, 0)
    inplace = OPS[op]["flags"] & OPF_INPLACE
    for layout, a, b in binary_layouts(make_a, make_b):
        what = f"{op} {dt} {layout}"
        expected = reference(op, spec.ref, to_torch(a), to_torch(b))
        assert_same(getattr(a, op)(b), expected, what)
        if not inplace or a.shape != tuple(expected.shape):
            continue
        if layout == "expanded":
            with pytest.raises(RuntimeError, match="clone"):
                getattr(a, op + "_")(b)
        elif can_store(MAG_DTYPES[expected.dtype], dt):
            assert getattr(a, op + "_")(b) is a
            assert_same(a, expected.to(TORCH_DTYPES[dt]), what + " in place")
        else:
            with pytest.raises(TypeError, match=op):
                getattr(a, op + "_")(b)
    x, s = make_a((2, 3)), _scalar(op, dt)
    tx = to_torch(x)
    ts = torch.tensor(s, dtype=tx.dtype)
    assert_same(getattr(x, op)(s), reference(op, spec.ref, tx, ts), f"{op} {dt} tensor-scalar")
    assert_same(getattr(x, "_r" + op)(s), reference(op, spec.ref, ts, tx), f"{op} {dt} scalar-tensor")


def test_in_place_with_overlapping_operands_reads_old_values() -> None:
    t = torch.arange(10, dtype=torch.float32)
    a = from_torch(t)
    a.add_(a)
    assert_same(a, t + t, "a += a")
    a = from_torch(t)
    a[1:].mul_(a[:-1])
    expected = t.clone()
    expected[1:] = t[1:] * t[:-1]
    assert_same(a, expected, "a[1:] *= a[:-1]")
    a = from_torch(t)
    a[::2].sub_(a[1::2].T)
    expected = t.clone()
    expected[::2] = t[::2] - t[1::2]
    assert_same(a, expected, "strided destination")


DUNDERS = [
    ("__add__", operator.add, operator.iadd),
    ("__sub__", operator.sub, operator.isub),
    ("__mul__", operator.mul, operator.imul),
    ("__truediv__", operator.truediv, operator.itruediv),
    ("__floordiv__", operator.floordiv, operator.ifloordiv),
    ("__mod__", operator.mod, operator.imod),
    ("__pow__", operator.pow, operator.ipow),
    ("__and__", operator.and_, operator.iand),
    ("__or__", operator.or_, operator.ior),
    ("__xor__", operator.xor, operator.ixor),
    ("__lshift__", operator.lshift, operator.ilshift),
    ("__rshift__", operator.rshift, operator.irshift),
    ("__eq__", operator.eq, None),
    ("__ne__", operator.ne, None),
    ("__lt__", operator.lt, None),
    ("__le__", operator.le, None),
    ("__gt__", operator.gt, None),
    ("__ge__", operator.ge, None),
]


@pytest.mark.parametrize(("name", "fn", "ifn"), DUNDERS, ids=[d[0] for d in DUNDERS])
def test_operator_dunders(name: str, fn: Callable, ifn: Callable | None) -> None:
    integer_only = name in ("__and__", "__or__", "__xor__", "__lshift__", "__rshift__")
    d, s = (mag.int32, 2) if integer_only else (mag.float32, 2.5)
    ta = torch.tensor([[3, 1, 4], [1, 5, 9]], dtype=TORCH_DTYPES[d])
    tb = torch.tensor([2, 3, 1], dtype=TORCH_DTYPES[d])
    a, b = from_torch(ta), from_torch(tb)
    assert_same(fn(a, b), fn(ta, tb), f"{name} tensor-tensor")
    assert_same(fn(a, s), fn(ta, s), f"{name} tensor-scalar")
    assert_same(fn(s, a), fn(s, ta), f"{name} scalar-tensor (reflected)")
    if ifn is not None:
        c = a.clone()
        assert ifn(c, b) is c
        assert_same(c, fn(ta, tb), f"{name} in place")


def test_aliases() -> None:
    a, b = tensor([6, -7, 8], mag.int16), tensor([1, 2, 3], mag.int16)
    assert_same(a.truediv(b), torch.tensor([6, -7, 8]) / torch.tensor([1, 2, 3]), "truediv")
    assert a.bitwise_shl(b).tolist() == [12, -28, 64]
    assert a.bitwise_shr(b).tolist() == [3, -2, 1]
    c = a.clone()
    assert c.bitwise_shl_(1) is c and c.tolist() == [12, -14, 16]


def test_comparisons_with_other_types_follow_python() -> None:
    x = mag.Tensor([1.0, 2.0])
    assert (x == None) is False  # noqa: E711
    assert (x != "a") is True
    with pytest.raises(TypeError):
        x < "a"  # noqa: B015
    with pytest.raises(TypeError, match="add: unsupported operand type str"):
        x + "a"  # noqa: B018
    assert hash(x) == hash(x)
    assert {x: 1}[x] == 1
    y = np.float32(2) * x  # NumPy defers to the tensor's reflected operator
    assert isinstance(y, mag.Tensor) and y.tolist() == [2.0, 4.0]
