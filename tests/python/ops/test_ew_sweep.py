"""Exhaustive layout sweep of every elementwise op x dtype (run with --runslow): random ranks 0-5,
permuted dims, positive and negative steps, broadcast dims, zero sizes, and shapes large enough
to split rows across threads; in place into random writable views too."""

from __future__ import annotations

import random

import magnetron as mag
import pytest
from ew_helpers import (
    MAG_DTYPES,
    OPF_INPLACE,
    OPS,
    TORCH_DTYPES,
    assert_same,
    can_store,
    reference,
    to_torch,
    tolerance,
)
from test_binary import BINARY
from test_binary import CASES as BINARY_CASES
from test_binary import _makers as binary_makers
from test_elementwise import CASES as UNARY_CASES
from test_elementwise import UNARY
from test_elementwise import _maker as unary_maker

TRIALS = 12
SIZES = (1, 1, 2, 3, 5, 7, 0)
LARGE = ((257, 300), (3, 1, 40_001))  # rows cut mid-way by the thread partition


def _shape(rng: random.Random, trial: int) -> tuple[int, ...]:
    if trial < len(LARGE):
        return LARGE[trial]
    sizes = SIZES if trial % 4 == 0 else SIZES[:-1]  # zero-size in a quarter of the trials
    return tuple(rng.choice(sizes) for _ in range(rng.randint(0, 5)))


def random_view(make, shape: tuple[int, ...], rng: random.Random, broadcast: bool) -> mag.Tensor:  # noqa: ANN001
    """A view of the given shape over a larger tensor: permuted, stepped (+/-), maybe expanded."""
    r = len(shape)
    src = [1 if broadcast and rng.random() < 0.3 else n for n in shape]  # dims to expand afterwards
    steps = [rng.choice((1, 1, 2, -1, -2)) for _ in range(r)]
    base = [max(n * abs(s), 1) for n, s in zip(src, steps, strict=True)]
    perm = list(range(r))
    rng.shuffle(perm)
    x = make(tuple(base[p] for p in perm)).permute(*[perm.index(d) for d in range(r)])
    x = x[tuple(slice(None, None, s) for s in steps)] if r else x
    x = x[tuple(slice(0, n) for n in src)] if r else x
    return x.expand(*shape) if broadcast else x


def _broadcastable(shape: tuple[int, ...], rng: random.Random) -> tuple[int, ...]:
    """A shape that broadcasts to `shape`: some dims 1, maybe fewer leading dims."""
    s = tuple(1 if rng.random() < 0.3 else n for n in shape)
    return s[rng.randint(0, len(s)) :] if rng.random() < 0.3 else s


@pytest.mark.slow
@pytest.mark.parametrize(("op", "dt"), UNARY_CASES, ids=[f"{o}-{d}" for o, d in UNARY_CASES])
def test_unary_sweep(op: str, dt: mag.dtype.DType) -> None:
    ref, dom = UNARY[op]
    make, rng = unary_maker(dt, dom, 7), random.Random(f"{op}{dt}")
    for trial in range(TRIALS):
        shape = _shape(rng, trial)
        x = random_view(make, shape, rng, broadcast=trial % 3 == 1)
        expected = reference(op, ref, to_torch(x))
        tol = tolerance(op, dt)
        assert_same(getattr(x, op)(), expected, f"{op} {dt} {shape} strides {x.strides}", tol=tol)
        y = random_view(make, shape, rng, broadcast=False)
        expected = reference(op, ref, to_torch(y))
        if OPS[op]["flags"] & OPF_INPLACE and can_store(MAG_DTYPES[expected.dtype], dt):
            getattr(y, op + "_")()
            assert_same(y, expected.to(TORCH_DTYPES[dt]), f"{op}_ {dt} {shape} strides {y.strides}", tol=tol)


@pytest.mark.slow
@pytest.mark.parametrize(("op", "dt"), BINARY_CASES, ids=[f"{o}-{d}" for o, d in BINARY_CASES])
def test_binary_sweep(op: str, dt: mag.dtype.DType) -> None:
    spec = BINARY[op]
    (make_a, make_b), rng = binary_makers(spec, dt, 7), random.Random(f"{op}{dt}")
    for trial in range(TRIALS):
        shape = _shape(rng, trial)
        a = random_view(make_a, _broadcastable(shape, rng), rng, broadcast=trial % 3 == 1)
        b = random_view(make_b, shape if trial % 2 else _broadcastable(shape, rng), rng, broadcast=trial % 3 == 2)
        expected = reference(op, spec.ref, to_torch(a), to_torch(b))
        assert_same(getattr(a, op)(b), expected, f"{op} {dt} {a.shape}{a.strides} {b.shape}{b.strides}")
        if not OPS[op]["flags"] & OPF_INPLACE:
            continue
        d = random_view(make_a, tuple(expected.shape), rng, broadcast=False)
        expected = reference(op, spec.ref, to_torch(d), to_torch(b))
        if can_store(MAG_DTYPES[expected.dtype], dt):
            getattr(d, op + "_")(b)
            assert_same(d, expected.to(TORCH_DTYPES[dt]), f"{op}_ {dt} {d.shape}{d.strides} {b.shape}{b.strides}")
