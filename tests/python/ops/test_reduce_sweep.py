"""Exhaustive sweeps (run with --runslow): random views of rank 0-5 (permuted, sliced with positive
and negative steps, broadcast, empty) x every reduction / along-dim op x dtype, big inputs that take
the chunked path for many output counts, and results at 1 to 4 threads.

The torch reference reads the very same memory through DLPack (a copy where torch cannot hold
the strides), so any layout magnetron can express is checked.
"""

from __future__ import annotations

import random
import zlib

import magnetron as mag
import pytest
import torch
from reduce_cases import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, assert_matches, random_values
from test_along_dim import check_topk, cumsum_reference
from test_reduce import OPS, reference, run_case, supported

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:.*degrees of freedom:UserWarning")]


def random_view(rng: random.Random, dtype: str, positive: bool = False) -> tuple[mag.Tensor, torch.Tensor]:
    """A random view of a random base tensor, and the same values as a torch tensor."""
    rank = rng.randint(0, 5)
    sizes = [rng.choice([0, 1, 2, 3, 4, 5, 7]) if rng.random() < 0.9 else 1 for _ in range(rank)]
    if rng.random() < 0.7:  # empty tensors now and then, not half of the time
        sizes = [s or 1 for s in sizes]
    steps = [rng.choice([1, 1, 2, -1, -2, 3]) for _ in range(rank)]
    broadcast = [rng.random() < 0.15 for _ in range(rank)]
    base_shape = [
        1 if b else (max(s - 1, 0) * abs(st) + 1 + rng.randint(0, 2))
        for s, st, b in zip(sizes, steps, broadcast, strict=True)
    ]
    base = random_values(tuple(base_shape), dtype, rng.randrange(1 << 30), positive)
    v = mag.Tensor.from_dlpack(base.clone())
    for d, (s, st, b) in enumerate(zip(sizes, steps, broadcast, strict=True)):
        if b:
            continue
        length = base_shape[d]
        start = rng.randint(0, length - 1 - max(s - 1, 0) * abs(st)) if length else 0
        if st < 0:
            start += max(s - 1, 0) * -st
        v = v.view_slice(d, start, s, st)
    v = v.expand(*sizes)
    perm = list(range(rank))
    rng.shuffle(perm)
    v = v.permute(*perm)
    return v, torch.from_dlpack(v).clone()


def random_dims(rng: random.Random, rank: int) -> object:
    kind = rng.random()
    if kind < 0.2 or rank == 0:
        return None if kind < 0.1 or rank == 0 else ()
    if kind < 0.5:
        return rng.randrange(-rank, rank)
    dims = rng.sample(range(rank), rng.randint(1, rank))
    return tuple(d - rank if rng.random() < 0.3 else d for d in dims)


@pytest.mark.parametrize("op", OPS)
def test_reduce_random_views(op: str) -> None:
    rng = random.Random(f"reduce/{op}")
    for dtype in ALL_DTYPES:
        if not supported(op, dtype):
            continue
        for _ in range(40):
            x, t = random_view(rng, dtype, positive=op == "prod")
            run_case(op, x, t, random_dims(rng, t.ndim), rng.random() < 0.5, dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_along_dim_random_views(dtype: str) -> None:
    rng = random.Random(f"along/{dtype}")
    for _ in range(60):
        x, t = random_view(rng, dtype)
        rank = t.ndim
        dim = rng.randrange(-rank, rank) if rank else rng.choice([0, -1])
        assert_matches(x.cumsum(dim), cumsum_reference(t, dim), dtype, what=f"cumsum({dim}) {tuple(t.shape)}")
        if dtype in FLOAT_DTYPES:
            for op in ("softmax", "log_softmax"):
                assert_matches(getattr(x, op)(dim), getattr(torch, op)(t, dim), dtype, what=f"{op}({dim})")
        if dtype in FLOAT_DTYPES + INT_DTYPES:
            size = t.shape[dim] if rank else 1
            k = rng.randint(0, size)
            check_topk(x, t, k, dim, rng.random() < 0.5, False, f"topk({k}, {dim}) {dtype} {tuple(t.shape)}")


# (shape, dims): from one output to many, every count of chunk partials
BIG_CASES = [
    ((70_001,), None),
    ((2, 40_000), 1),
    ((40_000, 3), 0),
    ((7, 33_000), -1),
    ((33_000, 7), (0,)),
    ((63, 2, 1100), (0, 2)),
    ((65, 1100), 1),
    ((4, 5, 4000), (0, 2)),
    ((3, 40_000), None),
]


def _reversed_dims(dim: object, rank: int) -> object:
    """The same dims after reversing the order of all dims."""
    if dim is None:
        return None
    if isinstance(dim, tuple):
        return tuple(rank - 1 - d % rank for d in dim)
    return rank - 1 - dim % rank  # type: ignore[operator]


@pytest.mark.parametrize("shape,dim", BIG_CASES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64", "int16", "uint8"])
def test_big_inputs(shape: tuple[int, ...], dim: object, dtype: str) -> None:
    t = random_values(shape, dtype, seed=zlib.crc32(f"{shape}/{dtype}".encode()))
    x = mag.Tensor.from_dlpack(t.clone())
    xt = x.permute(*reversed(range(len(shape))))  # the same sums through transposed strides
    for op in OPS:
        if not supported(op, dtype) or (op == "prod" and dtype in FLOAT_DTYPES):
            continue
        expected = reference(op, t, dim, False)
        assert_matches(getattr(x, op)(dim), expected, dtype, what=f"big {op}{shape} dim={dim}")
        if op not in ("argmin", "argmax"):  # positions follow the dims' order, which the transpose changes
            assert_matches(getattr(xt, op)(_reversed_dims(dim, len(shape))), expected, dtype, what=f"big {op} T")


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_thread_counts(threads: int) -> None:
    before = mag.context.num_threads
    mag.context.num_threads = threads
    try:
        for shape, dim in BIG_CASES:
            t = random_values(shape, "float32", seed=5)
            x = mag.Tensor.from_dlpack(t)
            for op in ("sum", "var", "logsumexp", "argmax", "max", "all"):
                assert_matches(getattr(x, op)(dim), reference(op, t, dim, False), "float32", what=f"{op} @{threads}")
            last = 0 if dim is None else dim if isinstance(dim, int) else dim[0]
            assert_matches(x.softmax(last), t.softmax(last), "float32", what=f"softmax @{threads}")
            assert_matches(x.cumsum(last), t.cumsum(last), "float32", what=f"cumsum @{threads}")
    finally:
        mag.context.num_threads = before
