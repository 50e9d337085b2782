"""Property tests: random chains of view ops on random shapes agree with NumPy (values, shapes, strides,
shared memory) and the view solver agrees with torch.view (success, failure and the strides it picks)."""

from __future__ import annotations

import math
from typing import Any

import magnetron as mag
import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mag_testing import shares_storage

T = mag.Tensor
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


def _np_slice(size: int, start: int, length: int, step: int) -> slice:
    stop = start + step * length
    return slice(start, stop if stop >= 0 else None, step)


def _factorization(data: st.DataObject, n: int) -> tuple[int, ...]:
    """A random shape with n elements (rank <= 4, with some size-1 dims and an optional -1)."""
    if n == 0:
        shape = list(data.draw(st.sampled_from([(0,), (0, 2), (3, 0), (1, 0, 1)])))
    else:
        shape, rest = [], n
        for f in range(2, n + 1):
            while rest % f == 0 and len(shape) < 3:
                if data.draw(st.booleans()):
                    shape.append(f)
                    rest //= f
                else:
                    break
        shape.append(rest)
        shape = data.draw(st.permutations(shape))
        if data.draw(st.booleans()):
            shape.insert(data.draw(st.integers(0, len(shape))), 1)
        if shape and data.draw(st.booleans()) and n:
            shape[data.draw(st.integers(0, len(shape) - 1))] = -1
    return tuple(shape)


ALL_OPS = ("unsqueeze", "reshape", "permute", "transpose", "slice", "movedim", "flatten", "squeeze", "expand", "key",
           "select")
LAYOUT_OPS = ("permute", "transpose", "slice", "expand", "select", "unsqueeze", "movedim")  # never copy


def _step(data: st.DataObject, m: mag.Tensor, a: np.ndarray, negative_steps: bool,
          allowed: tuple[str, ...] = ALL_OPS) -> tuple[mag.Tensor, Any, str]:
    """One random view op applied to both; returns the new pair and what was done."""
    r = m.rank
    ops = [o for o in allowed if (r or o in ("unsqueeze", "reshape")) and (o != "select" or 0 not in m.shape)]
    op = data.draw(st.sampled_from(ops))
    dim = data.draw(st.integers(-r, r - 1)) if r else 0
    if op == "permute":
        perm = data.draw(st.permutations(range(r)))
        return m.permute(*perm), a.transpose(perm), op
    if op == "transpose":
        d1 = data.draw(st.integers(-r, r - 1))
        return m.transpose(dim, d1), np.swapaxes(a, dim, d1), op
    if op == "movedim":
        d1 = data.draw(st.integers(-r, r - 1))
        return m.movedim(dim, d1), np.moveaxis(a, dim, d1), op
    if op == "slice":
        size = m.shape[dim]
        steps = st.integers(-3, 3).filter(lambda s: s != 0) if negative_steps else st.integers(1, 3)
        step = data.draw(steps)
        if size == 0:
            start, length = 0, 0
        else:
            start = data.draw(st.integers(0, size - 1))
            most = (size - 1 - start) // step + 1 if step > 0 else start // -step + 1
            length = data.draw(st.integers(0, most))
        idx = [slice(None)] * r
        idx[dim % r] = _np_slice(size, start, length, step)
        return m.view_slice(dim, start, length, step), a[tuple(idx)], op
    if op == "select":
        i = data.draw(st.integers(-m.shape[dim], m.shape[dim] - 1))
        return m.select(dim, i), np.take(a, i, axis=dim), op
    if op == "unsqueeze":
        d = data.draw(st.integers(-r - 1, r)) if r < 6 else 0
        return (m.unsqueeze(d), np.expand_dims(a, d), op) if r < 6 else (m, a, "none")
    if op == "squeeze":
        return m.squeeze(dim), (np.squeeze(a, dim) if a.shape[dim] == 1 else a), op
    if op == "flatten":
        d1 = data.draw(st.integers(dim % r, r - 1))
        s, e = dim % r, d1
        return m.flatten(s, e), a.reshape(a.shape[:s] + (math.prod(a.shape[s : e + 1]),) + a.shape[e + 1 :]), op
    if op == "expand":
        smallest = 0 if "reshape" in allowed else 1  # layout-only chains keep elements to view
        target = [data.draw(st.integers(smallest, 3)) if n == 1 else n for n in m.shape]
        lead = data.draw(st.lists(st.integers(1, 2), max_size=1))
        target = lead + target
        return m.expand(*target), np.broadcast_to(a, tuple(target)), op
    if op == "key":
        key = []
        for n in m.shape:
            if data.draw(st.booleans()):
                key.append(None)
            lo = data.draw(st.integers(-n - 1, n + 1))
            hi = data.draw(st.integers(-n - 1, n + 1))
            step = data.draw(st.integers(-2, 2).filter(lambda s: s != 0)) if negative_steps else 1
            key.append(slice(lo, hi, step))
        return m[tuple(key)], a[tuple(key)], op
    target = _factorization(data, m.numel)
    return m.reshape(*target), a.reshape(target), op


def _strides_of_long_dims(strides: tuple[int, ...], shape: tuple[int, ...]) -> list[int]:
    """Strides of dims longer than 1 (the only ones that matter)."""
    return [s for s, n in zip(strides, shape, strict=True) if n > 1]


def _assert_same(m: mag.Tensor, a: np.ndarray) -> None:
    assert m.shape == a.shape
    np.testing.assert_array_equal(np.asarray(m), a)  # via the buffer protocol: our strides, read by NumPy
    assert m.tolist() == a.tolist()  # and element by element


@SETTINGS
@given(shape=shapes, data=st.data())
def test_random_view_chains_match_numpy(shape: tuple[int, ...], data: st.DataObject) -> None:
    n = math.prod(shape)
    m = T.arange(n, dtype=mag.int32).view(*shape) if shape else T(0, dtype=mag.int32)
    a = np.arange(n, dtype=np.int32).reshape(shape)
    base = m
    copied = False
    for _ in range(data.draw(st.integers(1, 6))):
        m, a, op = _step(data, m, a, negative_steps=True)
        _assert_same(m, a)
        copied |= op in ("reshape", "flatten") and not shares_storage(m, base)
        if not copied and m.numel:
            assert shares_storage(m, base), op  # views never copy
            assert np.shares_memory(np.asarray(m), np.asarray(base))


@SETTINGS
@given(shape=shapes.filter(lambda s: 0 < math.prod(s) <= 64), data=st.data())
def test_view_solver_matches_torch(shape: tuple[int, ...], data: st.DataObject) -> None:
    n = math.prod(shape)
    m = T.arange(n, dtype=mag.float32).view(*shape)
    a = np.arange(n, dtype=np.float32).reshape(shape)
    for _ in range(data.draw(st.integers(1, 4))):
        m, a, _ = _step(data, m, a, negative_steps=False, allowed=LAYOUT_OPS)
    if 0 in m.shape:
        return
    # the same layout in torch: same storage values, same strides and offset
    t = torch.arange(n, dtype=torch.float32).as_strided(m.shape, m.strides, m._offset) if m.rank else \
        torch.arange(n, dtype=torch.float32)[m._offset]
    assert t.tolist() == m.tolist()
    candidates = [(-1,), m.shape[::-1], m.shape[1:] + m.shape[:1], _factorization(data, m.numel)]
    target = data.draw(st.sampled_from(candidates))
    try:
        want = t.view(target)
    except RuntimeError:
        try:
            m.view(*target)
        except RuntimeError as e:
            assert "view" in str(e)
        else:
            raise AssertionError(f"view {target} of shape {m.shape} strides {m.strides} should fail like torch")
        return
    got = m.view(*target)
    assert got.shape == tuple(want.shape)
    assert _strides_of_long_dims(got.strides, got.shape) == _strides_of_long_dims(want.stride(), want.shape)
    assert got.tolist() == want.tolist()
    assert shares_storage(got, m)


@SETTINGS
@given(shape=shapes, data=st.data())
def test_random_setitem_through_views_matches_numpy(shape: tuple[int, ...], data: st.DataObject) -> None:
    n = math.prod(shape)
    base = T.zeros(*shape, dtype=mag.int64) if shape else T(0)
    ref = np.zeros(shape, dtype=np.int64)
    m, a = base, ref
    for _ in range(data.draw(st.integers(0, 3))):
        m, a, op = _step(data, m, a, negative_steps=True)
        if op in ("reshape", "flatten", "expand") or not a.flags.writeable or (a.size and not np.shares_memory(a, ref)):
            return  # only plain, writable views of the base are written through
    m.fill_(7)
    a[...] = 7
    assert base.tolist() == ref.tolist()
    assert n == base.numel
