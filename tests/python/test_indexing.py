"""x[key] and x[key] = value against PyTorch (and NumPy where torch has no negative steps)."""

from __future__ import annotations

from typing import Any

import magnetron as mag
import numpy as np
import pytest
import torch
from mag_testing import arange_pair, assert_like_numpy, assert_like_torch, from_torch, shares_storage, to_numpy

T = mag.Tensor
SHAPE = (4, 5, 6)


class Idx:
    """An index tensor in a key spec: realised as a torch / magnetron / NumPy tensor of `values`."""

    def __init__(self, values: Any, dtype: str = "int64") -> None:
        self.values, self.dtype = values, dtype

    def __repr__(self) -> str:
        return f"Idx({self.values}, {self.dtype})"


def realise(key: Any, lib: str) -> Any:
    if isinstance(key, tuple):
        return tuple(realise(k, lib) for k in key)
    if isinstance(key, Idx):
        if lib == "torch":
            return torch.tensor(key.values, dtype=getattr(torch, "bool" if key.dtype == "boolean" else key.dtype))
        if lib == "numpy":
            return np.array(key.values, dtype=bool if key.dtype == "boolean" else key.dtype)
        return T(key.values, dtype=getattr(mag, key.dtype))
    return key


MASK_5 = [True, False, True, True, False]
MASK_45 = [[i % 3 == j % 2 for j in range(5)] for i in range(4)]

# keys whose result must match torch exactly (shape, values; strides for basic keys)
KEYS: list[Any] = [
    0, -1, 3, (1, 2), (1, 2, 3), (-4, -5, -6),
    slice(None), slice(1, 3), slice(None, None, 2), slice(1, None, 3), slice(-3, None), slice(10, 20), slice(-10, 2),
    (slice(None), slice(1, 4, 2)), (Ellipsis, slice(2, 5)), (0, Ellipsis, 1), (Ellipsis,), (Ellipsis, 0),
    None, (None, 0), (0, None, slice(None), None), (Ellipsis, None), (None, Ellipsis, None),
    True, False, (0, False), (Ellipsis, True), (slice(None), True, 1),
    [0, 2], [-1, 0, -1], [], (slice(None), []), (slice(None), [4, 0]),
    Idx([0, 3]), Idx([[1], [2]]), Idx(2), Idx(-1), Idx([3, 0], "int32"),
    ([0, 1], [1, 2]), ([0, 1], slice(None), [1, 2]), (slice(None), [0, 1], [1, 2]), ([[0], [1]], [2, 3]),
    (0, slice(None), [1, 2]), ([0, 1], 2), (1, [0, 1], [3, 4]), (None, [0], slice(None), [1]),
    ([0, 1], Ellipsis, [1, 2]), (Ellipsis, [0, 2]), (slice(1, 3), [0, 4], slice(None, None, 2)),
    Idx(MASK_5[:4], "boolean"), (slice(None), Idx(MASK_5, "boolean")), (Idx(1), [0, 2]), (Idx(True, "boolean"), 1),
    Idx(MASK_45, "boolean"), (Idx(MASK_45, "boolean"), 1),
    (Idx(MASK_45, "boolean"), slice(1, 3)), (1, Idx(MASK_5, "boolean")), [True, False, True, False],
    Idx(True, "boolean"), Idx(False, "boolean"), (Idx(MASK_45, "boolean"), [0, 1, 2, 3, 4, 5, 0, 1]),
    (Idx([True, False, True, True], "boolean"), Idx(MASK_5, "boolean")), (Idx([0, 2, 3]), slice(0, 5, 2)),
    (Idx([3, 1]), [[0], [4]], Idx([5, 0])), (slice(None), Idx(MASK_5, "boolean"), [5, 0, 1]),
]


def _torch_get(t: torch.Tensor, key: Any) -> torch.Tensor:
    return t[realise(key, "torch")]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k)[:40] for k in KEYS])
def test_getitem_matches_torch(key: Any) -> None:
    x, t = T.arange(120, dtype=mag.float32).view(*SHAPE), torch.arange(120, dtype=torch.float32).view(SHAPE)
    want = _torch_get(t, key)
    got = x[realise(key, "mag")]
    if isinstance(key, Idx) and key.dtype == "int64" and not isinstance(key.values, list):
        assert shares_storage(got, x)  # a rank-0 integer tensor selects, like an int
    basic = want.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
    assert_like_torch(got, want, check_strides=basic)
    if basic:
        assert shares_storage(got, x)  # basic indexing is a view
    elif want.numel():
        assert not shares_storage(got, x)  # advanced indexing copies


def test_numpy_meaning_where_torch_differs() -> None:
    # a nested list is a single index array (PyTorch 2.x still reads it as a tuple, with a deprecation
    # warning announcing this meaning); narrow and unsigned integer tensors are indices, not masks
    x, n = arange_pair(*SHAPE)
    for key in [Idx([1, 1], "uint8"), Idx([[0, 1]], "int16"), (slice(None), Idx([4, 0], "uint64")), Idx([3], "int8")]:
        assert_like_numpy(x[realise(key, "mag")], n[realise(key, "numpy")], check_strides=False)
    assert_like_numpy(x[[[0, 1], [2, 3]]], n[[[0, 1], [2, 3]]], check_strides=False)
    assert_like_numpy(x[np.array([[0, 1], [1, 0]])], n[np.array([[0, 1], [1, 0]])], check_strides=False)


def test_index_with_numpy_and_torch_objects() -> None:
    x, t = T.arange(120, dtype=mag.float32).view(*SHAPE), torch.arange(120, dtype=torch.float32).view(SHAPE)
    assert_like_torch(x[np.int64(2)], t[2])
    assert_like_torch(x[np.array([0, 3])], t[[0, 3]], check_strides=False)
    assert_like_torch(x[torch.tensor([1, 2])], t[[1, 2]], check_strides=False)
    assert_like_torch(x[:, np.array(MASK_5)], t[:, MASK_5], check_strides=False)
    assert_like_torch(x[T(1)], t[torch.tensor(1)], check_strides=False)
    assert_like_torch(x[1, T([2, 3])], t[1, [2, 3]], check_strides=False)


NEG_KEYS: list[Any] = [
    slice(None, None, -1), slice(3, 0, -1), slice(None, None, -2), slice(-1, -5, -3), slice(0, None, -1),
    (slice(None), slice(None, None, -1), slice(4, 1, -2)), (Ellipsis, slice(None, None, -4)),
    (slice(None, None, -1), [0, 2]), ([3, 0], slice(None, None, -2)), (slice(None, None, -1), 2, slice(5, 0, -5)),
    (slice(None), slice(None, None, -1), Idx(MASK_5[:1] * 6, "boolean")),
    (None, slice(None, None, -3), Ellipsis, None),
]


@pytest.mark.parametrize("key", NEG_KEYS, ids=[repr(k)[:40] for k in NEG_KEYS])
def test_negative_steps_match_numpy(key: Any) -> None:
    x, n = arange_pair(*SHAPE)
    want = n[realise(key, "numpy")]
    got = x[realise(key, "mag")]
    basic = want.base is not None and np.shares_memory(want, n)
    assert_like_numpy(got, want, check_strides=basic)
    if basic:
        assert shares_storage(got, x)


def test_every_slice_of_a_small_dim_matches_python() -> None:
    x, n = arange_pair(5)
    values = [None, -7, -5, -3, -1, 0, 1, 2, 4, 5, 6]
    for start in values:
        for stop in values:
            for step in [None, 1, 2, 3, 7, -1, -2, -3, -6]:
                s = slice(start, stop, step)
                assert_like_numpy(x[s], n[s])


def test_getitem_on_special_tensors() -> None:
    s = T(3.5)
    assert s[()].shape == () and s[()].item() == 3.5
    assert s[None].shape == (1,)
    assert s[...].shape == ()
    assert s[True].shape == (1,) and s[False].shape == (0,)
    z = T.zeros(0, 3)
    assert z[:, 1].shape == (0,)
    assert z[[]].shape == (0, 3)
    assert z[T.zeros(0, dtype=mag.boolean)].shape == (0, 3)
    e = T.zeros(3, 0)
    assert e[1].shape == (0,) and e[[0, 2]].shape == (2, 0)
    b = T([[True, False], [False, True]])
    assert b[0, 1].item() is False and b[[1, 0]].tolist() == [[False, True], [True, False]]
    for dt in [mag.float16, mag.bfloat16, mag.int8, mag.uint64, mag.boolean, mag.float64]:
        x = T.ones(2, 3, dtype=dt)
        assert x[1].dtype is dt and x[[0, 1]].dtype is dt and x[:, T([True, False, True])].dtype is dt


def test_index_of_a_strided_view() -> None:
    x, t = T.arange(120, dtype=mag.float32).view(*SHAPE), torch.arange(120, dtype=torch.float32).view(SHAPE)
    xv, tv = x.permute(2, 0, 1)[1:5:2], t.permute(2, 0, 1)[1:5:2]
    for key in [(slice(None), [0, 3]), ([1, 0], 2), ([0], slice(None), [4, 1]), (Idx([True, False], "boolean"), 0)]:
        assert_like_torch(xv[realise(key, "mag")], tv[realise(key, "torch")], check_strides=False)
    xe, te = T.arange(4, dtype=mag.float32).view(4, 1).expand(4, 3), torch.arange(4.0).view(4, 1).expand(4, 3)
    assert_like_torch(xe[[3, 0], 1:], te[[3, 0], 1:], check_strides=False)


# ---- setitem ----
SET_KEYS: list[Any] = [
    0, (1, 2), (1, 2, 3), slice(1, 3), (slice(None), slice(None, None, 2)), (Ellipsis, 0), None, (None, 1),
    [0, 2], (slice(None), [4, 0]), ([0, 1], [1, 2]), ([0, 1], slice(None), [1, 2]), (0, slice(None), [1, 2]),
    ([[0], [1]], [2, 3]), (slice(1, 3), [0, 4], slice(None, None, 2)), Idx([3, 1]),
    (slice(None), Idx(MASK_5, "boolean")), Idx(MASK_45, "boolean"), (Idx(MASK_45, "boolean"), 1), True, False,
    (Ellipsis, [1, 2]), [], Idx(True, "boolean"),
]


@pytest.mark.parametrize("key", SET_KEYS, ids=[repr(k)[:40] for k in SET_KEYS])
def test_setitem_scalar_matches_torch(key: Any) -> None:
    x, t = T.zeros(*SHAPE), torch.zeros(SHAPE)
    x[realise(key, "mag")] = 7.5
    t[realise(key, "torch")] = 7.5
    assert_like_torch(x, t)


@pytest.mark.parametrize("key", SET_KEYS, ids=[repr(k)[:40] for k in SET_KEYS])
def test_setitem_tensor_matches_torch(key: Any) -> None:
    x, t = T.zeros(*SHAPE), torch.zeros(SHAPE)
    shape = t[realise(key, "torch")].shape
    values = torch.arange(1, 1 + int(np.prod(shape)), dtype=torch.float32).reshape(shape)
    x[realise(key, "mag")] = from_torch(values)
    t[realise(key, "torch")] = values
    assert_like_torch(x, t)
    if len(shape) >= 1 and shape[-1] > 1:  # a broadcast value: one row for every position
        x, t = T.zeros(*SHAPE), torch.zeros(SHAPE)
        row = torch.arange(shape[-1], dtype=torch.float32) - 3
        x[realise(key, "mag")] = from_torch(row)
        t[realise(key, "torch")] = row
        assert_like_torch(x, t)


def test_setitem_value_kinds() -> None:
    x, t = T.zeros(3, 4, dtype=mag.int32), torch.zeros(3, 4, dtype=torch.int32)
    for key, value in [((0,), [1, 2, 3, 4]), ((1, slice(None, None, 2)), (5, 6)), ((2,), 9), ((slice(None), 3), True),
                       ((slice(None), 0), 2.9), (([0, 2], [1, 1]), [-1, -2])]:
        x[key] = value
        t[key] = torch.tensor(value, dtype=torch.int32) if isinstance(value, (list, tuple)) else value
        assert_like_torch(x, t)
    x[1] = T([1.7, -1.7, 2.5, 3.0])  # a float tensor written into ints: converted like cast
    t[1] = torch.tensor([1.7, -1.7, 2.5, 3.0])
    assert_like_torch(x, t)
    x[:, 1] = np.array([4, 5, 6])
    t[:, 1] = torch.tensor([4, 5, 6])
    assert_like_torch(x, t)
    x[...] = T(0)
    assert to_numpy(x).sum() == 0


def test_setitem_with_negative_steps_matches_numpy() -> None:
    x, n = arange_pair(4, 5)
    x[::-1, 1] = T([10.0, 20.0, 30.0, 40.0])
    n[::-1, 1] = [10.0, 20.0, 30.0, 40.0]
    x[3:0:-2, ::-2] = -1.0
    n[3:0:-2, ::-2] = -1.0
    x[::-1, [0, 4]] = T([[1.0, 2.0]])
    n[::-1, [0, 4]] = [[1.0, 2.0]]
    assert_like_numpy(x, n)


def test_setitem_repeated_indices_last_write_wins() -> None:
    x, n = arange_pair(5, 2)
    x[[1, 3, 1, 1]] = T([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0]])
    n[[1, 3, 1, 1]] = [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0]]
    assert_like_numpy(x, n)
    x[[0, 0], [1, 1]] = T([5.0, 6.0])
    n[[0, 0], [1, 1]] = [5.0, 6.0]
    assert_like_numpy(x, n)


def test_setitem_through_a_view_writes_the_base() -> None:
    base = T.zeros(4, 6)
    v = base.T[1:5]
    v[[0, 2], 1] = 3.0  # base[1, 1] and base[1, 3]
    v[1] = T.arange(4, dtype=mag.float32)  # base[:, 2]
    expect = np.zeros((4, 6), np.float32)
    expect[1, 1] = expect[1, 3] = 3.0
    expect[:, 2] = np.arange(4)
    np.testing.assert_array_equal(to_numpy(base), expect)


def test_setitem_value_aliasing_the_target() -> None:
    x, n = arange_pair(6)
    x[1:] = x[:-1]  # overlapping source and destination: reads see the old values
    n[1:] = n[:-1].copy()
    assert_like_numpy(x, n)
    x, n = arange_pair(3, 3)
    x[[0, 1, 2]] = x.T
    n[[0, 1, 2]] = n.T.copy()
    assert_like_numpy(x, n)


def test_setitem_index_aliasing_the_target() -> None:
    # the indices are read as they were before the write, though the write changes them
    x, n = T([1, 0, 3, 2], dtype=mag.int64), np.array([1, 0, 3, 2])
    x[x] = T([10, 20, 30, 40], dtype=mag.int64)
    n[n.copy()] = [10, 20, 30, 40]
    np.testing.assert_array_equal(to_numpy(x), n)


def test_setitem_bool_mask_with_tensor_values() -> None:
    x, t = T.arange(6, dtype=mag.float32), torch.arange(6.0)
    m = [True, False, True, False, False, True]
    x[T(m)] = T([-1.0, -2.0, -3.0])
    t[torch.tensor(m)] = torch.tensor([-1.0, -2.0, -3.0])
    assert_like_torch(x, t)
    x[x == -2.0] = 0.5
    t[t == -2.0] = 0.5
    assert_like_torch(x, t)


def _random_key(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """A random valid key: ints, slices, None, one Ellipsis, integer lists/tensors and masks."""
    key: list[Any] = []
    d, has_ellipsis = 0, False
    while d < len(shape) and rng.random() < 0.85:
        size, r = shape[d], rng.random()
        if r < 0.1:
            key.append(None)
            continue
        if r < 0.15 and not has_ellipsis:
            key.append(Ellipsis)
            has_ellipsis = True
            d = len(shape) - int(rng.integers(0, len(shape) - d + 1))
            continue
        if r < 0.35:
            key.append(int(rng.integers(-size, size)))
        elif r < 0.6:
            lo, hi = sorted(int(v) for v in rng.integers(-size - 1, size + 2, 2))
            key.append(slice(lo, hi, int(rng.integers(1, 4))))
        elif r < 0.8:
            n = int(rng.integers(0, 4))
            key.append(Idx(rng.integers(-size, size, n).tolist()))
        elif r < 0.9:
            key.append(Idx(rng.integers(-size, size, (2, 1) if rng.random() < 0.5 else (1, 3)).tolist()))
        else:
            key.append(Idx((rng.random(size) < 0.5).tolist(), "boolean"))
        d += 1
    return tuple(key)


def test_random_keys_match_torch() -> None:
    rng = np.random.default_rng(7)
    x, t = T.arange(120, dtype=mag.float32).view(*SHAPE), torch.arange(120, dtype=torch.float32).view(SHAPE)
    checked = 0
    for _ in range(400):
        key = _random_key(rng, SHAPE)
        try:
            want = t[realise(key, "torch")]
        except IndexError:  # e.g. index tensors that do not broadcast together
            with pytest.raises(IndexError):
                x[realise(key, "mag")]
            continue
        assert_like_torch(x[realise(key, "mag")], want, check_strides=False)
        xs, ts = T.zeros(*SHAPE), torch.zeros(SHAPE)
        values = torch.arange(1, want.numel() + 1, dtype=torch.float32).reshape(want.shape)
        xs[realise(key, "mag")] = from_torch(values)
        ts[realise(key, "torch")] = values
        if len(set(torch.arange(120.0).view(SHAPE)[realise(key, "torch")].flatten().tolist())) == want.numel():
            assert_like_torch(xs, ts)  # no position written twice: the result is well defined
        checked += 1
    assert checked > 250
