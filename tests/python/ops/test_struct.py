"""Selection, structure and fill ops against PyTorch: every dtype x operand layout, plus edge cases
(rank 0, zero-size, broadcasting, in-place on views) and the errors users can cause."""

from __future__ import annotations

import itertools

import magnetron as mag
import pytest
import torch
from _struct_util import (
    DTYPES,
    FLOATS,
    LAYOUTS,
    assert_same,
    bits,
    chi2_critical,
    mag_dtype,
    make,
    rand,
    threads,
    to_mag,
    to_torch,
    unbits,
)

T = mag.Tensor
INTS = [d for d in DTYPES if d not in FLOATS and d != "bool"]


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(1234)


# ---- gather / index_select ----
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gather(dtype: str, layout: str, gen: torch.Generator) -> None:
    x, ref = make(rand((4, 5, 6), dtype, gen), layout)
    for dim in (0, 1, -1):
        shape = [3, 4, 5]
        shape[dim] = 7  # along dim the index may be longer than the input
        idx = torch.randint(0, ref.shape[dim], shape, generator=gen)
        want = unbits(torch.gather(bits(ref), dim, idx), dtype)
        assert_same(x.gather(dim, to_mag(idx)), want)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_index_select(dtype: str, layout: str, gen: torch.Generator) -> None:
    x, ref = make(rand((5, 6, 7), dtype, gen), layout)
    for dim in (0, 1, 2, -2):
        idx = torch.randint(0, ref.shape[dim], (9,), generator=gen)
        assert_same(x.index_select(dim, to_mag(idx)), unbits(torch.index_select(bits(ref), dim, idx), dtype))


@pytest.mark.parametrize("index_dtype", ["int8", "uint8", "int16", "int32", "uint32", "int64", "uint64"])
def test_index_dtypes_and_layouts(index_dtype: str, gen: torch.Generator) -> None:
    ref = rand((6, 5), "float32", gen)
    x = to_mag(ref)
    idx = torch.randint(0, 5, (6, 5), generator=gen)
    for layout in ("transposed", "negative", "broadcast"):
        m_idx, t_idx = make(idx.to(getattr(torch, index_dtype)), layout)
        assert_same(x.gather(1, m_idx), torch.gather(ref, 1, t_idx.long()))
    m_idx, t_idx = make(idx[0].to(getattr(torch, index_dtype)), "strided")
    assert_same(x.index_select(0, m_idx), torch.index_select(ref, 0, t_idx.long()))


def test_gather_index_select_edges() -> None:
    x = T([[1, 2, 3], [4, 5, 6]])
    assert x.gather(1, T([[2, 0], [1, 1]])).tolist() == [[3, 1], [5, 5]]
    assert T(5.0).gather(0, T(0)).tolist() == 5.0  # rank 0
    assert T(5.0).index_select(0, T([0])).shape == ()
    assert x.index_select(1, T(2)).tolist() == [[3], [6]]  # a rank-0 index keeps the dim
    assert x.gather(1, T.empty(2, 0, dtype=mag.int64)).shape == (2, 0)
    assert x.index_select(0, T.empty(0, dtype=mag.int64)).shape == (0, 3)
    assert T.empty(0, 3).index_select(1, T([2, 0])).shape == (0, 2)


@pytest.mark.parametrize(
    "call, exc, text",
    [
        (lambda x: x.gather(1, T([[3]])), IndexError, "out of bounds"),
        (lambda x: x.gather(1, T([[-1]])), IndexError, "out of bounds"),
        (lambda x: x.gather(0, T([[2, 0]])), IndexError, "index 2"),
        (lambda x: x.gather(2, T([[0]])), IndexError, "dimension"),
        (lambda x: x.gather(1, T([0])), ValueError, "rank"),
        (lambda x: x.gather(1, T([[0], [0], [0]])), ValueError, "no larger"),
        (lambda x: x.gather(1, T([[0.0]])), TypeError, "integer"),
        (lambda x: x.index_select(1, T([5])), IndexError, "out of bounds"),
        (lambda x: x.index_select(0, T([[0]])), IndexError, "vector"),
        (lambda x: x.index_select(-3, T([0])), IndexError, "dimension"),
        (lambda x: x.index_select(0, T([True])), TypeError, "integer"),
        (lambda x: x.index_select(0, [0]), TypeError, "Tensor"),
    ],
)
def test_gather_index_select_errors(call, exc: type, text: str) -> None:  # noqa: ANN001
    with pytest.raises(exc, match=text):
        call(T([[1, 2, 3], [4, 5, 6]]))


# ---- masked_fill / where ----
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_fill(dtype: str, layout: str, gen: torch.Generator) -> None:
    x, ref = make(rand((4, 5), dtype, gen), layout)
    value = True if dtype == "bool" else 7
    for mask_shape in ((4, 5), (5,), (4, 1), (), (3, 4, 5)):
        mask = torch.rand(mask_shape, generator=gen) < 0.5
        m_mask, t_mask = make(mask, layout if mask.dim() else "contiguous")
        want = unbits(bits(ref).masked_fill(t_mask, value), dtype)
        assert_same(x.masked_fill(m_mask, value), want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_fill_in_place_on_views(dtype: str, gen: torch.Generator) -> None:
    ref = rand((6, 8), dtype, gen)
    x = to_mag(ref)
    mask = torch.rand(4, generator=gen) < 0.5
    value = False if dtype == "bool" else 3
    view = x[1:5, ::2]
    assert view.masked_fill_(to_mag(mask), value) is view
    want = ref.clone()
    bits(want)[1:5, ::2] = bits(want[1:5, ::2]).masked_fill(mask, value)
    assert_same(x, want)


def test_masked_fill_values() -> None:
    x = T([[1, 2, 3], [4, 5, 6]])
    mask = T([True, False, True])
    assert x.masked_fill(mask, 1.7).tolist() == [[1, 2, 1], [1, 5, 1]]  # converted to int64, like PyTorch
    assert x.masked_fill(mask, T(9)).tolist() == [[9, 2, 9], [9, 5, 9]]
    f = T([1.0, 2.0]).cast(mag.float16).masked_fill(T([True, False]), float("-inf"))
    assert f.tolist() == [float("-inf"), 2.0] and f.dtype == mag.float16
    assert x.masked_fill(T.ones(2, 2, 3, dtype=mag.boolean), 0).shape == (2, 2, 3)  # out of place broadcasts
    with pytest.raises(ValueError, match="destination"):
        x.masked_fill_(T.ones(2, 2, 3, dtype=mag.boolean), 0)  # in place: the mask must fit the tensor
    with pytest.raises(TypeError, match="boolean"):
        x.masked_fill(T([1, 0, 1]), 0)
    with pytest.raises(ValueError, match="overflow"):
        x.cast(mag.int8).masked_fill(mask, 300)
    with pytest.raises(ValueError, match="overflow"):
        x.cast(mag.float16).masked_fill(mask, 100000)
    with pytest.raises(ValueError, match="overflow"):
        x.masked_fill(mask, float("nan"))
    assert x.cast(mag.uint64).masked_fill(mask, 2**64 - 1).tolist()[0] == [2**64 - 1, 2, 2**64 - 1]
    with pytest.raises(ValueError, match="rank-0"):
        x.masked_fill(mask, T([1]))
    with pytest.raises(ValueError, match="broadcast"):
        x.masked_fill(T([True, False]), 0)
    with pytest.raises(RuntimeError, match="single memory location"):
        T([1.0]).expand(3).masked_fill_(T([True, False, True]), 0.0)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_where(dtype: str, layout: str, gen: torch.Generator) -> None:
    a, ta = make(rand((3, 4, 5), dtype, gen), layout)
    b, tb = make(rand((4, 1), dtype, gen), layout)
    c, tc = make(torch.rand(5, generator=gen) < 0.5, layout)
    assert_same(T.where(c, a, b), torch.where(tc, ta, tb))
    assert_same(T.where(c, b, a), torch.where(tc, tb, ta))


@pytest.mark.parametrize("da, db", [("int8", "float16"), ("bfloat16", "float16"), ("bool", "int32"), ("uint8", "int8"),
                                    ("float32", "float64"), ("int64", "bfloat16")])
def test_where_promotes(da: str, db: str, gen: torch.Generator) -> None:
    ta, tb = rand((4,), da, gen), rand((4,), db, gen)
    tc = torch.tensor([True, False, False, True])
    got = T.where(to_mag(tc), to_mag(ta), to_mag(tb))
    assert_same(got, torch.where(tc, ta, tb))


@pytest.mark.parametrize(
    "x, y, want",
    [
        (0.5, "float16", "float16"),  # a float next to a float16 tensor stays float16 (weak scalar)
        (2, "int8", "int8"),
        (2.5, "int32", "float32"),
        (True, "uint8", "uint8"),
        (1, 2, "int64"),
        (1, 2.5, "float32"),
        (True, False, "bool"),
        (True, 3, "int64"),
    ],
)
def test_where_scalars(x: object, y: object, want: str) -> None:
    cond = torch.tensor([True, False, True])

    def side(v: object) -> tuple[object, object]:
        if isinstance(v, str):
            t = torch.ones(3, dtype=getattr(torch, v))
            return to_mag(t), t
        return v, v

    (mx, tx), (my, ty) = side(x), side(y)
    got = T.where(to_mag(cond), mx, my)
    expected = torch.where(cond, tx, ty)
    assert got.dtype == mag_dtype(want) and str(expected.dtype) == f"torch.{want}"
    assert_same(got, expected)
    assert T.where([True, False], 1.0, 0.0).tolist() == [1.0, 0.0]


def test_where_errors() -> None:
    with pytest.raises(TypeError, match="boolean"):
        T.where(T([1, 0]), 1, 2)
    with pytest.raises(ValueError, match="broadcast"):
        T.where(T([True, False]), T([1, 2, 3]), 0)
    with pytest.raises(ValueError, match="overflow"):
        T.where(T([True]), T([1]).cast(mag.int8), 300)
    with pytest.raises(TypeError, match="numbers"):
        T.where(T([True]), "a", 1)
    assert T.where(T.empty(0, dtype=mag.boolean), 1.0, T.zeros(1)).shape == (0,)
    assert T.where(T(True), T(1.0), T(2.0)).tolist() == 1.0


# ---- tril / triu ----
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_tril_triu(dtype: str, layout: str, gen: torch.Generator) -> None:
    x, ref = make(rand((2, 5, 7), dtype, gen), layout)
    for k in (-7, -2, 0, 1, 3, 8):
        assert_same(x.tril(k), unbits(torch.tril(bits(ref), k), dtype))
        assert_same(x.triu(diagonal=k), unbits(torch.triu(bits(ref), k), dtype))


@pytest.mark.parametrize("op", ["tril", "triu"])
def test_tri_in_place_and_edges(op: str, gen: torch.Generator) -> None:
    ref = rand((3, 4, 6), "float32", gen)
    x = to_mag(ref)
    view = x.transpose(1, 2)[:, 1:5]  # a non-contiguous view into x
    assert getattr(view, op + "_")(1) is view
    want = ref.clone()
    want.transpose(1, 2)[:, 1:5] = getattr(torch, op)(want.transpose(1, 2)[:, 1:5], 1)
    assert_same(x, want)
    assert getattr(T.empty(0, 3), op)().shape == (0, 3)
    assert getattr(T.ones(2, 0, 3, 3), op)().shape == (2, 0, 3, 3)
    with pytest.raises(ValueError, match="at least 2 dims"):
        getattr(T.ones(3), op)()
    with pytest.raises(RuntimeError, match="single memory location"):
        getattr(T.ones(3, 3).expand(2, 3, 3), op + "_")()


# ---- one_hot ----
@pytest.mark.parametrize("dtype", INTS)
def test_one_hot(dtype: str, gen: torch.Generator) -> None:
    idx = torch.randint(0, 6, (4, 5), generator=gen)
    for layout in LAYOUTS:
        x, ref = make(idx.to(getattr(torch, dtype)), layout)
        assert_same(x.one_hot(), torch.nn.functional.one_hot(ref.long()))
        assert_same(x.one_hot(num_classes=9), torch.nn.functional.one_hot(ref.long(), 9))


def test_one_hot_edges_and_errors() -> None:
    assert T(2).one_hot(4).tolist() == [0, 0, 1, 0]
    assert T.empty(0, dtype=mag.int64).one_hot(3).shape == (0, 3)
    with pytest.raises(ValueError, match="empty"):
        T.empty(0, dtype=mag.int64).one_hot()
    with pytest.raises(IndexError, match="out of range"):
        T([0, 5]).one_hot(3)
    with pytest.raises(IndexError, match="-1"):
        T([-1, 0]).one_hot(3)
    with pytest.raises(TypeError, match="integer"):
        T([0.0, 1.0]).one_hot()
    with pytest.raises(ValueError, match=">= -1"):
        T([0]).one_hot(-2)


# ---- multinomial ----
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_distribution(dtype: str, replacement: bool) -> None:
    """First draws follow the probabilities (chi-square at p = 1e-4, fixed seed)."""
    p = [0.1, 0.0, 0.25, 0.4, 0.05, 0.2]
    rows = 4000
    mag.context.manual_seed(7)
    probs = T([[w * 3 for w in p]] * rows).cast(mag_dtype(dtype))  # unnormalised is fine
    draws = to_torch(probs.multinomial(3, replacement))
    assert draws.dtype == torch.int64 and draws.shape == (rows, 3)
    counts = torch.bincount(draws[:, 0], minlength=len(p)).double()
    assert counts[1] == 0  # probability 0 is never drawn while others remain
    expected = torch.tensor(p, dtype=torch.float64) * rows
    nz = expected > 0
    stat = float((((counts - expected) ** 2)[nz] / expected[nz]).sum())
    assert stat < chi2_critical(int(nz.sum()) - 1), (counts, expected)
    if not replacement:
        assert all(len(set(r)) == 3 for r in draws.tolist())
        assert (draws != 1).all()


def test_multinomial_without_replacement_order() -> None:
    """Zero-probability categories come last, in index order, once the others are used up (PyTorch)."""
    mag.context.manual_seed(0)
    assert T([1.0, 0.0, 0.0]).multinomial(3).tolist() == [0, 1, 2]
    assert sorted(T([0.2, 0.3, 0.5]).multinomial(3).tolist()) == [0, 1, 2]
    assert T([0.0, 0.0, 2.0]).multinomial(5, replacement=True).tolist() == [2] * 5


@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_reproducible_across_threads(replacement: bool) -> None:
    mag.context.manual_seed(123)
    probs = T.uniform(64, 1024)  # 64 rows x 1024 draws: enough work for two threads
    results = []
    for n in (1, 2, 1):
        with threads(n):
            mag.context.manual_seed(99)
            results.append(probs.multinomial(1024 if replacement else 500, replacement).tolist())
    assert results[0] == results[1] == results[2]
    mag.context.manual_seed(100)
    assert probs.multinomial(8, replacement).tolist() != [r[:8] for r in results[0]]


@pytest.mark.parametrize(
    "probs, kwargs, exc, text",
    [
        ([0.0, 0.0], {}, ValueError, "sum"),
        ([1.0, float("nan")], {}, ValueError, "finite"),
        ([-1.0, 2.0], {}, ValueError, ">= 0"),
        ([1.0, float("inf")], {}, ValueError, "finite"),
        ([1.0, 1.0], {"num_samples": 3}, ValueError, "without replacement"),
        ([1.0, 1.0], {"num_samples": 0}, ValueError, "positive"),
        ([[[1.0]]], {}, ValueError, "1-D or 2-D"),
        (1.0, {}, ValueError, "1-D or 2-D"),
        ([1, 2], {}, TypeError, "floating point"),
        ([1.0], {"num_samples": 1.5}, TypeError, "int"),
    ],
)
def test_multinomial_errors(probs: object, kwargs: dict, exc: type, text: str) -> None:
    with pytest.raises(exc, match=text):
        T(probs).multinomial(**kwargs)


def test_multinomial_empty_rows() -> None:
    assert T.empty(0, 3).multinomial(2).shape == (0, 2)


# ---- repeat / cat / stack ----
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_repeat(dtype: str, layout: str, gen: torch.Generator) -> None:
    x, ref = make(rand((3, 4), dtype, gen), layout)
    for sizes in ((1, 1), (2, 3), (2, 1, 3), (4, 1, 1), (0, 2), (1, 2, 1, 2)):
        assert_same(x.repeat(*sizes), ref.repeat(*sizes))
    assert_same(x.repeat((2, 2)), ref.repeat(2, 2))


def test_repeat_edges_and_errors() -> None:
    assert T(5.0).repeat(2, 3).tolist() == [[5.0] * 3] * 2
    assert T.empty(0, 2).repeat(3, 2).shape == (0, 4)
    with pytest.raises(ValueError, match="at least its rank"):
        T.ones(2, 3).repeat(2)
    with pytest.raises(ValueError, match=">= 0"):
        T.ones(2, 3).repeat(-1, 2)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_cat_stack(dtype: str, layout: str, gen: torch.Generator) -> None:
    a, ta = make(rand((3, 4, 5), dtype, gen), layout)
    b, tb = make(rand((3, 2, 5), dtype, gen), layout)
    assert_same(T.cat([a, b, a], dim=1), torch.cat([ta, tb, ta], dim=1))
    assert_same(T.cat((a, a), -1), torch.cat([ta, ta], -1))
    assert_same(T.cat([a]), torch.cat([ta]))
    for dim in (0, 2, 3, -1):
        assert_same(T.stack([a, a, a], dim), torch.stack([ta, ta, ta], dim))


def test_cat_stack_promotion_and_edges(gen: torch.Generator) -> None:
    for da, db in itertools.combinations(["bool", "int8", "uint8", "int32", "float16", "bfloat16", "float64"], 2):
        ta, tb = rand((2, 3), da, gen), rand((1, 3), db, gen)
        assert_same(T.cat([to_mag(ta), to_mag(tb)]), torch.cat([ta, tb]))
        assert_same(T.stack([to_mag(ta), to_mag(ta.to(tb.dtype))]), torch.stack([ta, ta.to(tb.dtype)]))
    e = T.empty(0)
    assert T.cat([e, T.ones(2, 3), e]).shape == (2, 3)  # 1-D empty tensors are skipped, as in PyTorch
    assert T.cat([e, e]).shape == (0,)
    assert T.cat([T.ones(0, 3), T.ones(2, 3)]).shape == (2, 3)
    assert T.stack([T(1.0), T(2.0)]).tolist() == [1.0, 2.0]


@pytest.mark.parametrize(
    "call, exc, text",
    [
        (lambda: T.cat([]), ValueError, "non-empty"),
        (lambda: T.stack([]), ValueError, "non-empty"),
        (lambda: T.cat([T.ones(2, 3), T.ones(2, 4)]), ValueError, "except in dimension 0"),
        (lambda: T.cat([T.ones(2, 3), T.ones(3)]), ValueError, "shape"),
        (lambda: T.cat([T(1.0)]), ValueError, "rank-0"),
        (lambda: T.cat([T.ones(2)], dim=1), IndexError, "dimension"),
        (lambda: T.stack([T.ones(2, 3), T.ones(3, 2)]), ValueError, "same shape"),
        (lambda: T.stack([T.ones(2)], dim=2), IndexError, "dimension"),
        (lambda: T.cat(T.ones(2)), TypeError, "sequence"),
        (lambda: T.cat([T.ones(2), [1.0]]), TypeError, "Tensor"),
    ],
)
def test_cat_stack_errors(call, exc: type, text: str) -> None:  # noqa: ANN001
    with pytest.raises(exc, match=text):
        call()


# ---- fills on views ----
@pytest.mark.parametrize("dtype", DTYPES)
def test_fills_on_views(dtype: str, gen: torch.Generator) -> None:
    ref = rand((5, 8), dtype, gen)
    fills = {"zero_": 0, "zeros_": 0, "ones_": 1}
    for name, value in fills.items():
        x = to_mag(ref)
        view = x[1:4, ::3].T
        assert getattr(view, name)() is view
        want = ref.clone()
        bits(want)[1:4, ::3] = value
        assert_same(x, want)
    x = to_mag(ref)
    x[::2, 1::2].fill_(1)
    want = ref.clone()
    bits(want)[::2, 1::2] = 1
    assert_same(x, want)
    x = to_mag(ref)
    src = rand((4,), dtype, gen)
    x[:, ::-2].copy_(to_mag(src))
    want = ref.clone()
    bits(want)[:, torch.arange(7, -1, -2)] = bits(src)
    assert_same(x, want)


@pytest.mark.parametrize("method, args", [("uniform_", (2.0, 3.0)), ("normal_", (5.0, 0.1)), ("bernoulli_", (1.0,))])
def test_random_fills_on_views(method: str, args: tuple) -> None:
    ref = torch.full((6, 6), -9.0)
    x = to_mag(ref)
    view = x[::2, 1::2]
    assert getattr(view, method)(*args) is view
    got = to_torch(x)
    inside = torch.zeros(6, 6, dtype=torch.bool)
    inside[::2, 1::2] = True
    assert (got[~inside] == -9.0).all()
    assert (got[inside] >= 1.0).all() and (got[inside] <= 6.0).all()


# ---- large inputs: the kernels split rows across threads, shares may start mid-row ----
def test_large_inputs_on_two_threads(gen: torch.Generator) -> None:
    ref = rand((301, 257), "float32", gen)
    x, xt = make(ref, "transposed")
    idx = torch.randint(0, 301, (301, 257), generator=gen)
    rows = torch.randint(0, 301, (400,), generator=gen)
    mask = torch.rand(257, generator=gen) < 0.5
    classes = torch.randint(0, 300, (400,), generator=gen)
    with threads(2):
        assert_same(x.gather(0, to_mag(idx)), torch.gather(xt, 0, idx))
        assert_same(x.index_select(0, to_mag(rows)), xt.index_select(0, rows))
        assert_same(x.index_select(1, to_mag(rows % 257)), xt.index_select(1, rows % 257))
        assert_same(x.masked_fill(to_mag(mask), -1.0), xt.masked_fill(mask, -1.0))
        assert_same(T.where(to_mag(mask), x, 0.0), torch.where(mask, xt, 0.0))
        assert_same(x.tril(3), xt.tril(3))
        assert_same(x.repeat(2, 1), xt.repeat(2, 1))
        assert_same(T.cat([x, x], 1), torch.cat([xt, xt], 1))
        assert_same(to_mag(classes).one_hot(), torch.nn.functional.one_hot(classes))
