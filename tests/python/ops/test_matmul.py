"""matmul / @ against PyTorch: every rank combination, broadcast batch dims, every numeric dtype,
operand layouts (transposed, sliced with a step, negative steps, stride 0), shapes that cross the
kernel's cache blocks, one and two threads, and the errors."""

from __future__ import annotations

import itertools

import magnetron as mag
import pytest
import torch
from _struct_util import DTYPES, LAYOUTS, mag_dtype, make, rand, threads, to_mag, to_torch

T = mag.Tensor
NUMERIC = [d for d in DTYPES if d != "bool"]
# error bound relative to |A| @ |B|: float32 rounding over the dot products; 16-bit floats round once at the end
TOLERANCE = {"float32": 1e-5, "float64": 1e-12, "float16": 1e-3, "bfloat16": 8e-3}
SUBNORMAL_STEP = {"float16": 2.0**-24}  # results this small round to an absolute grid


def expected(ta: torch.Tensor, tb: torch.Tensor, dtype: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The exact product (float64, or int64 wrapped to the dtype) and the |A| @ |B| scale of its rounding error."""
    if dtype in TOLERANCE:
        a, b = ta.double(), tb.double()
        return a @ b, a.abs() @ b.abs()
    exact = (ta.long() @ tb.long()).to(getattr(torch, dtype))  # the conversion wraps, as integer matmul does
    return exact, torch.zeros(())


def check(got: mag.Tensor, ta: torch.Tensor, tb: torch.Tensor, dtype: str) -> None:
    want, scale = expected(ta, tb, dtype)
    g = to_torch(got)
    assert g.dtype == getattr(torch, dtype) and tuple(g.shape) == tuple(want.shape), (g.dtype, g.shape, want.shape)
    if dtype in TOLERANCE:
        err = (g.double() - want).abs()
        bound = TOLERANCE[dtype] * scale + SUBNORMAL_STEP.get(dtype, 0.0) / 2 + 1e-300
        assert (err <= bound).all(), float((err / bound).max())
    else:
        assert torch.equal(g, want)


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(99)


RANK_CASES = [
    ((7,), (7,)),
    ((7,), (7, 5)),
    ((4, 7), (7,)),
    ((4, 7), (7, 5)),
    ((3, 4, 7), (7, 5)),
    ((7,), (3, 7, 5)),
    ((3, 4, 7), (7,)),
    ((4, 7), (3, 7, 5)),
    ((3, 4, 7), (3, 7, 5)),
    ((2, 1, 4, 7), (3, 7, 5)),
    ((2, 1, 4, 7), (1, 3, 7, 5)),
    ((1, 4, 7), (2, 3, 7, 5)),
    ((2, 3, 1, 1, 4, 7), (3, 2, 1, 7, 5)),
    ((1, 7), (7, 1)),
]


@pytest.mark.parametrize("sa, sb", RANK_CASES)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_ranks_and_broadcast(sa: tuple, sb: tuple, dtype: str, gen: torch.Generator) -> None:
    ta, tb = rand(sa, dtype, gen), rand(sb, dtype, gen)
    check(to_mag(ta) @ to_mag(tb), ta, tb, dtype)
    check(to_mag(ta).matmul(to_mag(tb)), ta, tb, dtype)


@pytest.mark.parametrize("layout_b", LAYOUTS)
@pytest.mark.parametrize("layout_a", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMERIC)
def test_dtypes_and_layouts(dtype: str, layout_a: str, layout_b: str, gen: torch.Generator) -> None:
    a, ta = make(rand((2, 9, 13), dtype, gen), layout_a)
    b, tb = make(rand((13, 11), dtype, gen), layout_b)
    check(a @ b, ta, tb, dtype)
    b3, tb3 = make(rand((2, 13, 6), dtype, gen), layout_b)
    check(a @ b3, ta, tb3, dtype)


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize(
    "sa, sb, transpose_b",
    [
        ((200, 300), (300, 530), False),  # crosses the row, column and depth blocks with ragged edges
        ((200, 300), (300, 530), True),  # x @ W.T
        ((4, 50, 64), (64, 70), False),  # contiguous batch folded into the rows
        ((3, 97, 33), (3, 33, 515), False),  # a true batch loop
        ((1, 700), (700, 600), False),  # a row vector
        ((600, 700), (700, 1), False),  # a column vector
    ],
)
def test_large_blocked(sa: tuple, sb: tuple, transpose_b: bool, n_threads: int, gen: torch.Generator) -> None:
    ta = rand(sa, "float32", gen)
    tb = rand(sb[::-1] if transpose_b else sb, "float32", gen)
    b = to_mag(tb)
    if transpose_b:
        tb, b = tb.T, b.T
    with threads(n_threads):
        check(to_mag(ta) @ b, ta, tb, "float32")


def test_same_bits_at_any_thread_count(gen: torch.Generator) -> None:
    """Threads split the output into tiles; each element sums in the same order whatever the count."""
    a, b = to_mag(rand((300, 400), "float32", gen)), to_mag(rand((400, 600), "float32", gen))
    with threads(1):
        one = to_torch(a @ b)
    with threads(2):
        two = to_torch(a @ b)
    assert torch.equal(one, two)


def test_non_foldable_batches(gen: torch.Generator) -> None:
    """Batched A whose batch dims do not nest with its rows (permuted, stride-0 expanded)."""
    ta = rand((5, 6, 4), "float32", gen)
    a = to_mag(ta).permute(1, 0, 2)  # (6, 5, 4): batch stride 4 is smaller than the row stride
    tb = rand((4, 3), "float32", gen)
    check(a @ to_mag(tb), ta.permute(1, 0, 2), tb, "float32")
    row = rand((1, 1, 4), "float32", gen)
    check(to_mag(row).expand(3, 5, 4) @ to_mag(tb), row.expand(3, 5, 4), tb, "float32")


@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_gemv_deeper_than_one_block(rows: int, n_threads: int, gen: torch.Generator) -> None:
    """bfloat16 x @ W.T narrows x in blocks of depth (4096 / rows values): depths past one block add up."""
    ta, tw = rand((rows, 6000), "bfloat16", gen), rand((200, 6000), "bfloat16", gen)
    with threads(n_threads):
        check(to_mag(ta) @ to_mag(tw).T, ta, tw.T, "bfloat16")


@pytest.mark.parametrize("dtype, k", [("float16", 4096), ("bfloat16", 1024)])
def test_16bit_floats_accumulate_in_float32(dtype: str, k: int) -> None:
    # summing ones in the 16-bit type itself would stall at 2048 (float16) and 256 (bfloat16)
    a = T.ones(1, k, dtype=mag_dtype(dtype))
    assert (a @ T.ones(k, 2, dtype=mag_dtype(dtype))).tolist() == [[float(k), float(k)]]


def test_integer_wraparound(gen: torch.Generator) -> None:
    for dtype in ("int8", "uint8", "int16", "int32"):
        lo, hi = (0, 256) if dtype == "uint8" else (-128, 128)
        ta = torch.randint(lo, hi, (5, 40), generator=gen).to(getattr(torch, dtype))
        tb = torch.randint(lo, hi, (40, 3), generator=gen).to(getattr(torch, dtype))
        assert torch.equal(to_torch(to_mag(ta) @ to_mag(tb)), ta @ tb)
    big = T([[2**62, 3]])
    assert (big @ T([[4], [1]])).tolist() == [[3]]  # 2**64 wraps to 0


def test_mixed_dtypes_promote(gen: torch.Generator) -> None:
    ta, tb = rand((3, 4), "int32", gen), rand((4, 2), "float16", gen)
    got = to_mag(ta) @ to_mag(tb)
    assert got.dtype == mag.float16
    check(got, ta.half(), tb, "float16")
    assert (T.ones(2, 2, dtype=mag.bfloat16) @ T.ones(2, 2, dtype=mag.float16)).dtype == mag.float32


def test_zero_size() -> None:
    assert (T.ones(0, 3) @ T.ones(3, 2)).shape == (0, 2)
    assert (T.ones(2, 3) @ T.ones(3, 0)).shape == (2, 0)
    assert (T.ones(2, 0) @ T.ones(0, 2)).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert (T.ones(0) @ T.ones(0)).tolist() == 0.0
    assert (T.ones(0, 2, 0, dtype=mag.int8) @ T.ones(0, 4, dtype=mag.int8)).shape == (0, 2, 4)
    assert (T.ones(3, 2, 0) @ T.ones(0, 4)).tolist() == [[[0.0] * 4] * 2] * 3


def test_dunders() -> None:
    a, b = T([[1.0, 2.0], [3.0, 4.0]]), T([[0.0, 1.0], [1.0, 0.0]])
    assert (a @ b).tolist() == [[2.0, 1.0], [4.0, 3.0]]
    assert a.__rmatmul__(b).tolist() == (b @ a).tolist() == [[3.0, 4.0], [1.0, 2.0]]
    c = a
    c @= T([1.0, 1.0])  # rebinds to a new tensor (the shape may change), as in PyTorch
    assert c.tolist() == [3.0, 7.0] and a.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(TypeError):
        a @ 2  # noqa: B018
    with pytest.raises(TypeError):
        2 @ a  # noqa: B018
    with pytest.raises(TypeError, match="Tensor"):
        a.matmul([[1.0, 0.0], [0.0, 1.0]])


@pytest.mark.parametrize(
    "sa, sb, dtype, exc, text",
    [
        ((2, 3), (4, 2), "float32", ValueError, r"\(2, 3\) and \(4, 2\) cannot be multiplied"),
        ((3,), (4,), "float32", ValueError, "cannot be multiplied"),
        ((2, 2, 3), (3, 3, 4), "float32", ValueError, "batch dims"),
        ((), (3,), "float32", ValueError, "at least 1 dim"),
        ((3,), (), "float32", ValueError, r"\(3,\) and \(\)"),
        ((2, 2), (2, 2), "bool", TypeError, "boolean"),
    ],
)
def test_errors(sa: tuple, sb: tuple, dtype: str, exc: type, text: str) -> None:
    a, b = T.ones(*sa, dtype=mag_dtype(dtype)), T.ones(*sb, dtype=mag_dtype(dtype))
    with pytest.raises(exc, match=text):
        a @ b  # noqa: B018


@pytest.mark.slow
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("dtype", NUMERIC)
def test_exhaustive_sweep(dtype: str, n_threads: int) -> None:
    """Every rank case x layout pair x random sizes around the block edges."""
    gen = torch.Generator().manual_seed(hash(dtype) % 1000)
    sizes = [1, 3, 4, 5, 8, 17, 95, 97, 255, 257, 513]
    with threads(n_threads):
        for (sa, sb), la, lb in itertools.product(RANK_CASES, LAYOUTS, LAYOUTS):
            m, k, n = (sizes[int(i)] for i in torch.randint(0, len(sizes), (3,), generator=gen))
            sa2 = (*sa[:-2], m, k) if len(sa) > 1 else (k,)
            sb2 = (*sb[:-2], k, n) if len(sb) > 1 else (k,)
            a, ta = make(rand(sa2, dtype, gen), la)
            b, tb = make(rand(sb2, dtype, gen), lb)
            check(a @ b, ta, tb, dtype)
