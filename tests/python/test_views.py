"""Every view op of API.md section 4 against PyTorch / NumPy: shapes, strides, values, shared storage."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from typing import Any

import magnetron as mag
import numpy as np
import pytest
import torch
from mag_testing import arange_pair, assert_like_numpy, assert_like_torch, shares_storage, to_numpy

T = mag.Tensor


def pair(shape: tuple[int, ...], layout: str = "contiguous") -> tuple[mag.Tensor, torch.Tensor]:
    """The same values and the same strides in magnetron and torch."""
    n = int(np.prod(shape, dtype=np.int64))
    m, t = T.arange(n, dtype=mag.float32).reshape(*shape), torch.arange(n, dtype=torch.float32).reshape(shape)
    if layout == "transposed":  # reversed dims, then reversed back in shape: a non-contiguous tensor of `shape`
        m = T.arange(n, dtype=mag.float32).reshape(*shape[::-1]).permute(*range(len(shape) - 1, -1, -1))
        t = torch.arange(n, dtype=torch.float32).reshape(shape[::-1]).permute(*range(len(shape) - 1, -1, -1))
    elif layout == "strided":  # every other element of the last dim
        big = (*shape[:-1], 2 * shape[-1])
        m = T.arange(2 * n, dtype=mag.float32).reshape(*big)
        t = torch.arange(2 * n, dtype=torch.float32).reshape(big)
        m, t = m.view_slice(-1, 0, shape[-1], 2), t[..., ::2]
    return m, t


LAYOUTS = ["contiguous", "transposed", "strided"]

# (id, shape, op applied alike to a magnetron and a torch tensor)
CASES: list[tuple[str, tuple[int, ...], Callable[[Any], Any]]] = [
    ("view", (2, 3, 4), lambda x: x.view(4, 6)),
    ("view_infer", (2, 3, 4), lambda x: x.view(-1, 4)),
    ("view_tuple", (2, 3, 4), lambda x: x.view((3, -1))),
    ("view_rank0", (), lambda x: x.view(1, 1)),
    ("view_to_rank0", (1, 1), lambda x: x.view(())),
    ("view_zero", (2, 0, 3), lambda x: x.view(0, 5)),
    ("view_zero_infer", (2, 0, 3), lambda x: x.view(3, -1)),
    ("reshape", (2, 3, 4), lambda x: x.reshape(6, 4)),
    ("reshape_tuple", (2, 3, 4), lambda x: x.reshape((24,))),
    ("reshape_rank0", (1,), lambda x: x.reshape(())),
    ("transpose", (2, 3, 4), lambda x: x.transpose(0, 2)),
    ("transpose_neg", (2, 3, 4), lambda x: x.transpose(-1, -2)),
    ("transpose_same", (2, 3), lambda x: x.transpose(1, -1)),
    ("transpose_rank0", (), lambda x: x.transpose(0, -1)),
    ("permute", (2, 3, 4), lambda x: x.permute(2, 0, 1)),
    ("permute_tuple", (2, 3, 4), lambda x: x.permute((1, 2, 0))),
    ("permute_neg", (2, 3, 4), lambda x: x.permute(-1, 0, -2)),
    ("permute_rank0", (), lambda x: x.permute(())),
    ("squeeze_all", (1, 3, 1, 2), lambda x: x.squeeze()),
    ("squeeze_dim", (1, 3, 1, 2), lambda x: x.squeeze(2)),
    ("squeeze_neg", (1, 3, 1, 2), lambda x: x.squeeze(-4)),
    ("squeeze_not1", (1, 3, 1, 2), lambda x: x.squeeze(1)),
    ("squeeze_dims", (1, 3, 1, 2), lambda x: x.squeeze((0, 2))),
    ("squeeze_zero", (0, 1), lambda x: x.squeeze()),
    ("squeeze_rank0", (), lambda x: x.squeeze()),
    ("squeeze_rank0_dim", (), lambda x: x.squeeze(-1)),
    ("unsqueeze_front", (2, 3), lambda x: x.unsqueeze(0)),
    ("unsqueeze_mid", (2, 3), lambda x: x.unsqueeze(1)),
    ("unsqueeze_end", (2, 3), lambda x: x.unsqueeze(2)),
    ("unsqueeze_neg", (2, 3), lambda x: x.unsqueeze(-1)),
    ("unsqueeze_neg3", (2, 3), lambda x: x.unsqueeze(-3)),
    ("unsqueeze_rank0", (), lambda x: x.unsqueeze(0)),
    ("flatten", (2, 3, 4), lambda x: x.flatten()),
    ("flatten_range", (2, 3, 4, 5), lambda x: x.flatten(1, 2)),
    ("flatten_neg", (2, 3, 4), lambda x: x.flatten(-2)),
    ("flatten_one", (2, 3, 4), lambda x: x.flatten(1, 1)),
    ("flatten_rank0", (), lambda x: x.flatten()),
    ("flatten_zero", (2, 0, 3), lambda x: x.flatten(1)),
    ("unflatten", (2, 12), lambda x: x.unflatten(1, (3, 4))),
    ("unflatten_infer", (2, 12), lambda x: x.unflatten(-1, (2, -1, 3))),
    ("unflatten_front", (6, 2), lambda x: x.unflatten(0, (3, 2))),
    ("narrow", (5, 4), lambda x: x.narrow(0, 1, 3)),
    ("narrow_neg_start", (5, 4), lambda x: x.narrow(-1, -3, 2)),
    ("narrow_empty", (5, 4), lambda x: x.narrow(1, 4, 0)),
    ("select", (2, 3, 4), lambda x: x.select(1, 2)),
    ("select_neg", (2, 3, 4), lambda x: x.select(-1, -4)),
    ("select_to_rank0", (3,), lambda x: x.select(0, 1)),
    ("movedim", (2, 3, 4), lambda x: x.movedim(0, 2)),
    ("movedim_neg", (2, 3, 4), lambda x: x.movedim(-1, 0)),
    ("movedim_seq", (2, 3, 4, 5), lambda x: x.movedim((0, 1), (-1, 0))),
    ("movedim_rank0", (), lambda x: x.movedim(0, -1)),
    ("expand", (3, 1), lambda x: x.expand(3, 4)),
    ("expand_keep", (3, 1), lambda x: x.expand(-1, 5)),
    ("expand_lead", (3, 1), lambda x: x.expand(2, 3, 4)),
    ("expand_tuple", (3, 1), lambda x: x.expand((2, -1, 2))),
    ("expand_zero", (3, 1), lambda x: x.expand(3, 0)),
    ("expand_rank0", (), lambda x: x.expand(2, 3)),
    ("broadcast_to", (1, 3), lambda x: x.broadcast_to((4, 2, 3))),
    ("T", (2, 3), lambda x: x.T),
    ("T_rank1", (3,), lambda x: x.T if isinstance(x, mag.Tensor) else x.permute(0)),  # torch deprecates T here
    ("T_rank0", (), lambda x: x.T if isinstance(x, mag.Tensor) else x.permute(())),
    ("T_rank3", (2, 3, 4), lambda x: x.T if isinstance(x, mag.Tensor) else x.permute(2, 1, 0)),
]

MULTI: list[tuple[str, tuple[int, ...], Callable[[Any], Any]]] = [
    ("split", (7, 2), lambda x: x.split(3)),
    ("split_exact", (6, 2), lambda x: x.split(2)),
    ("split_big", (6, 2), lambda x: x.split(10)),
    ("split_dim", (2, 7), lambda x: x.split(2, dim=-1)),
    ("split_sections", (2, 7), lambda x: x.split([2, 0, 5], 1)),
    ("split_zero", (0, 2), lambda x: x.split(2)),
    ("split_zero_size", (0, 2), lambda x: x.split(0)),
    ("chunk", (7, 2), lambda x: x.chunk(3)),
    ("chunk_fewer", (6, 2), lambda x: x.chunk(4)),
    ("chunk_more", (2, 3), lambda x: x.chunk(5)),
    ("chunk_dim", (2, 7), lambda x: x.chunk(2, dim=1)),
    ("chunk_zero", (0, 3), lambda x: x.chunk(3)),
    ("unbind", (3, 2), lambda x: x.unbind()),
    ("unbind_dim", (3, 2, 4), lambda x: x.unbind(-1)),
    ("unbind_zero", (0, 2), lambda x: x.unbind(0)),
]


def _layouts(shape: tuple[int, ...]) -> list[str]:
    return LAYOUTS if len(shape) >= 2 and 0 not in shape else ["contiguous"]


@pytest.mark.parametrize(("name", "shape", "op"), CASES, ids=[c[0] for c in CASES])
def test_view_op_matches_torch(name: str, shape: tuple[int, ...], op: Callable[[Any], Any]) -> None:
    for layout in _layouts(shape):
        m, t = pair(shape, layout)
        try:
            want = op(t)
        except RuntimeError:  # view on a layout where torch's view fails: so must ours
            with pytest.raises(RuntimeError, match="view"):
                op(m)
            continue
        got = op(m)
        assert_like_torch(got, want, check_strides=want._base is not None or want.data_ptr() == t.data_ptr())
        if want._base is not None or want.data_ptr() == t.data_ptr():  # torch made a view: so must we
            assert shares_storage(got, m), (name, layout)


@pytest.mark.parametrize(("name", "shape", "op"), MULTI, ids=[c[0] for c in MULTI])
def test_multi_view_op_matches_torch(name: str, shape: tuple[int, ...], op: Callable[[Any], Any]) -> None:
    for layout in _layouts(shape):
        m, t = pair(shape, layout)
        got, want = op(m), op(t)
        assert isinstance(got, tuple)
        assert len(got) == len(want), (name, layout)
        for g, w in zip(got, want, strict=True):
            assert_like_torch(g, w)
            assert shares_storage(g, m)


def test_views_share_storage_and_writes_show_through() -> None:
    base = T.zeros(2, 3, 4)
    for v in [base.view(6, 4), base.transpose(0, 2), base.permute(1, 2, 0), base[1], base.select(2, 3),
              base.narrow(1, 1, 2), base.view_slice(2, 3, 2, -2), base.unsqueeze(1), base.flatten(), base.movedim(0, 1),
              base.reshape(4, 6), base.split(1)[1], base.chunk(2, 2)[0], base.unbind(1)[2], base.T]:
        assert shares_storage(v, base)
        assert v.is_view
    v = base.view_slice(2, 3, 2, -2)  # elements 3 and 1 of the last dim
    v.fill_(7.0)
    expect = np.zeros((2, 3, 4), dtype=np.float32)
    expect[:, :, [3, 1]] = 7.0
    np.testing.assert_array_equal(to_numpy(base), expect)
    base.transpose(0, 1)[2, 1].fill_(5.0)
    expect[1, 2] = 5.0
    np.testing.assert_array_equal(to_numpy(base), expect)
    base.select(0, 0).copy_(T.ones(3, 4))
    expect[0] = 1.0
    np.testing.assert_array_equal(to_numpy(base), expect)
    # and the other way: a write to the base is seen by an older view
    v = base.T
    base.fill_(2.0)
    assert to_numpy(v).tolist() == np.full((4, 3, 2), 2.0).tolist()


def test_is_view_marks_views_only() -> None:
    x = T.zeros(2, 3)
    assert not x.is_view
    v = x.view(3, 2)
    assert v.is_view and not x.is_view  # like torch's _is_view(): the base stays a base
    assert not x.clone().is_view
    assert not T.zeros(2, 3).transpose(0, 1).contiguous().is_view
    assert not x.transpose(0, 1).reshape(6).is_view  # reshape copied


def test_reshape_copies_only_when_it_must() -> None:
    x, _ = arange_pair(2, 3, 4)
    assert shares_storage(x.reshape(4, 6), x)
    xt = x.transpose(0, 2)
    r = xt.reshape(24)
    assert not shares_storage(r, x)
    assert r.is_contiguous
    want = np.arange(24, dtype=np.float32).reshape(2, 3, 4).transpose(2, 1, 0).ravel()
    np.testing.assert_array_equal(to_numpy(r), want)
    assert shares_storage(xt.reshape(4, 3, 2), x)


def test_contiguous_and_clone() -> None:
    x, n = arange_pair(3, 4)
    assert x.contiguous() is x or shares_storage(x.contiguous(), x)
    c = x.T.contiguous()
    assert c.is_contiguous and not shares_storage(c, x)
    assert_like_numpy(c, np.ascontiguousarray(n.T))
    k = x.clone()
    assert not shares_storage(k, x) and k.is_contiguous
    k.fill_(0.0)
    assert to_numpy(x).sum() == n.sum()


def test_is_contiguous_matches_torch() -> None:
    for shape in [(2, 3), (1, 3), (3, 1), (0, 3), (), (2, 1, 3)]:
        for layout in _layouts(shape):
            m, t = pair(shape, layout)
            assert m.is_contiguous == t.is_contiguous(), (shape, layout)
    m, t = pair((3, 1))
    assert m.expand(3, 4).is_contiguous == t.expand(3, 4).is_contiguous()


# ---- chains ----
CHAINS: list[tuple[str, tuple[int, ...], Callable[[Any], Any]]] = [
    ("permute_view", (2, 3, 4), lambda x: x.permute(1, 0, 2).reshape(3, 8)),
    ("slice_unsqueeze_expand", (4, 3), lambda x: x.narrow(0, 1, 2).unsqueeze(1).expand(2, 5, 3)),
    ("transpose_flatten_unflatten", (2, 3, 4), lambda x: x.transpose(1, 2).flatten(0, 1).unflatten(0, (4, 2))),
    ("select_movedim", (2, 3, 4, 5), lambda x: x.select(1, 2).movedim(-1, 0).narrow(2, 1, 3)),
    ("expand_select_T", (3, 1), lambda x: x.expand(3, 4).select(1, 2).unsqueeze(0).T),
    ("squeeze_permute_view", (1, 4, 1, 6), lambda x: x.squeeze().permute(1, 0).view(6, 2, 2)),
    ("split_transpose", (6, 4), lambda x: x.split(2)[1].transpose(0, 1).reshape(-1)),
    ("broadcast_narrow", (1, 4), lambda x: x.broadcast_to((3, 4)).narrow(1, 1, 2).view(3, 2)),
    ("zero_size", (2, 0, 3), lambda x: x.permute(2, 0, 1).unsqueeze(0).flatten().view(0, 7)),
]


@pytest.mark.parametrize(("name", "shape", "op"), CHAINS, ids=[c[0] for c in CHAINS])
def test_chains_match_torch(name: str, shape: tuple[int, ...], op: Callable[[Any], Any]) -> None:
    m, t = pair(shape)
    want = op(t)
    assert_like_torch(op(m), want, check_strides=want._base is not None)


# ---- negative steps (torch has none: compare with NumPy) ----
def test_view_slice_matches_numpy_slicing() -> None:
    x, n = arange_pair(5, 6)
    for dim, start, length, step in [(0, 0, 5, 1), (0, 4, 5, -1), (1, 5, 3, -2), (1, 1, 2, 3), (0, 2, 0, 1),
                                     (1, 3, 1, -7), (-1, 0, 6, 1), (-2, 4, 3, -2)]:
        got = x.view_slice(dim, start, length, step)
        idx = [slice(None)] * 2
        stop = start + step * length
        idx[dim] = slice(start, stop if stop >= 0 else None, step)
        assert_like_numpy(got, n[tuple(idx)])
        assert shares_storage(got, x)


def test_view_ops_on_negative_strides_match_numpy() -> None:
    x, n = arange_pair(4, 6)
    r, nr = x.view_slice(0, 3, 4, -1).view_slice(1, 5, 3, -2), n[::-1, ::-2]
    assert_like_numpy(r, nr)
    assert_like_numpy(r.view(12), nr.reshape(12))  # both dims step back: one linear run
    assert_like_numpy(r.T, nr.T)
    assert_like_numpy(r.reshape(3, 4), nr.reshape(3, 4), check_strides=False)
    assert_like_numpy(r.unsqueeze(1).expand(4, 2, 3), np.broadcast_to(nr[:, None], (4, 2, 3)))
    assert_like_numpy(r.flatten(), nr.flatten(), check_strides=False)
    assert_like_numpy(r[1:, ::-1], nr[1:, ::-1])
    assert_like_numpy(r.select(1, -1), nr[:, -1])
    v = x.view_slice(1, 5, 6, -1)
    assert_like_numpy(v.view(2, 2, 6), n[:, ::-1].reshape(2, 2, 6))
    with pytest.raises(RuntimeError, match="view"):
        v.view(24)  # rows run forward, columns backward: not one stride


# ---- the view solver: exactly where torch.view succeeds ----
def _factorizations(n: int, max_rank: int) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = []

    def rec(rest: int, prefix: tuple[int, ...]) -> None:
        if rest == 1:
            out.append(prefix)
        if len(prefix) == max_rank:
            return
        for f in range(2, rest + 1):
            if rest % f == 0:
                rec(rest // f, (*prefix, f))

    rec(n, ())
    return out


def _candidate_shapes(n: int, rng: random.Random) -> list[tuple[int, ...]]:
    shapes = _factorizations(n, 4)
    with_ones = []
    for s in shapes:
        pos = rng.randrange(len(s) + 1)
        with_ones.append((*s[:pos], 1, *s[pos:]))
    return shapes + with_ones


# torch-side layouts: a chain of views on arange(n) that leaves a non-contiguous tensor
LAYOUT_CHAINS: list[tuple[tuple[int, ...], Callable[[Any], Any]]] = [
    ((2, 3, 4), lambda x: x.transpose(0, 1)),
    ((2, 3, 4), lambda x: x.permute(2, 0, 1)),
    ((2, 3, 4), lambda x: x.permute(0, 2, 1)),
    ((4, 6), lambda x: x.narrow(1, 0, 4)),
    ((4, 6), lambda x: x.narrow(0, 1, 2).narrow(1, 2, 3)),
    ((2, 3, 8), lambda x: x.narrow(2, 0, 4)),
    ((3, 1, 4), lambda x: x.expand(3, 2, 4)),
    ((1, 6), lambda x: x.expand(4, 6)),
    ((2, 1, 6), lambda x: x.transpose(0, 1).expand(3, 2, 6)),
    ((2, 3, 2, 2), lambda x: x.permute(1, 0, 2, 3)),
    ((2, 2, 3, 2), lambda x: x.permute(0, 1, 3, 2)),
    ((6, 4), lambda x: x.unsqueeze(1).transpose(0, 2)),
    ((2, 12), lambda x: x.view(2, 3, 4).transpose(1, 2).narrow(1, 1, 2)),
    ((12,), lambda x: x.unsqueeze(0).expand(2, 12)),
    ((4, 1, 3), lambda x: x.squeeze(1).T),
]


def _strided(x: Any, step: int) -> Any:
    """Every step-th element along the last dim (the same view in both libraries)."""
    if isinstance(x, torch.Tensor):
        return x[..., ::step]
    return x.view_slice(-1, 0, (x.shape[-1] + step - 1) // step, step)


LAYOUT_CHAINS.append(((3, 8), lambda x: _strided(x, 2)))
LAYOUT_CHAINS.append(((2, 4, 6), lambda x: _strided(x.transpose(0, 1), 3)))


@pytest.mark.parametrize("case", range(len(LAYOUT_CHAINS)))
def test_view_solver_agrees_with_torch(case: int) -> None:
    shape, chain = LAYOUT_CHAINS[case]
    m, t = pair(shape)
    m, t = chain(m), chain(t)
    assert m.strides == t.stride()
    rng = random.Random(case)
    ok = bad = 0
    for target in _candidate_shapes(t.numel(), rng):
        try:
            want = t.view(target)
        except RuntimeError:
            with pytest.raises(RuntimeError, match="view"):
                m.view(*target)
            bad += 1
            continue
        got = m.view(*target)
        assert got.strides == want.stride(), (target, got.strides, want.stride())
        assert_like_torch(got, want)
        assert shares_storage(got, m)
        r = m.reshape(*target)  # reshape = view where view works
        assert shares_storage(r, m) and r.strides == want.stride()
        ok += 1
    assert ok > 0


def test_view_solver_failures_are_reshaped_by_copy() -> None:
    m, t = pair((2, 3, 4))
    m, t = m.transpose(0, 2), t.transpose(0, 2)
    for target in [(24,), (4, 6), (2, 12), (8, 3)]:
        with pytest.raises(RuntimeError, match=r"view: shape .* is not compatible"):
            m.view(*target)
        with pytest.raises(RuntimeError):
            t.view(target)
        r = m.reshape(*target)
        assert not shares_storage(r, m)
        assert_like_torch(r, t.reshape(target))


def test_view_dtype_and_zero_size_layouts() -> None:
    for dt in [mag.float16, mag.int8, mag.boolean, mag.uint64]:
        x = T.zeros(2, 3, dtype=dt)
        assert x.view(3, 2).dtype is dt and x.T.dtype is dt and x[0].dtype is dt
    z = T.zeros(3, 0, 2)
    assert z.view(0, 6).shape == (0, 6)
    assert z.permute(1, 0, 2).view(-1).shape == (0,)
    assert z.transpose(0, 2).reshape(2, 0, 3).shape == (2, 0, 3)
    assert z.unbind(1) == ()
    assert z.narrow(2, 1, 1).shape == (3, 0, 1)


def test_every_view_op_has_the_documented_signature() -> None:
    x = T.zeros(2, 3)
    assert x.view_slice(dim=1, start=2, length=2, step=-1).shape == (2, 2)
    assert x.narrow(dim=0, start=1, length=1).shape == (1, 3)
    assert x.select(dim=1, index=0).shape == (2,)
    assert x.unsqueeze(dim=0).shape == (1, 2, 3)
    assert x.transpose(dim0=0, dim1=1).shape == (3, 2)
    assert x.flatten(start_dim=0, end_dim=-1).shape == (6,)
    assert x.unflatten(dim=1, sizes=(3, 1)).shape == (2, 3, 1)
    assert x.squeeze(dim=None).shape == (2, 3)
    assert x.movedim(source=0, destination=1).shape == (3, 2)
    assert len(x.split(split_size_or_sections=1, dim=0)) == 2
    assert len(x.chunk(chunks=3, dim=1)) == 3
    assert len(x.unbind(dim=1)) == 3
    assert x.broadcast_to(shape=(4, 2, 3)).shape == (4, 2, 3)


def test_many_random_permute_view_pairs() -> None:
    rng = random.Random(0)
    for _ in range(200):
        rank = rng.randint(1, 4)
        shape = tuple(rng.randint(1, 4) for _ in range(rank))
        perm = list(range(rank))
        rng.shuffle(perm)
        m, t = pair(shape)
        m, t = m.permute(*perm), t.permute(*perm)
        target = rng.choice(_candidate_shapes(t.numel(), rng) or [()])
        try:
            want = t.view(target)
        except RuntimeError:
            with pytest.raises(RuntimeError):
                m.view(*target)
            continue
        assert m.view(*target).strides == want.stride()


def test_all_permutations_rank4() -> None:
    x, n = arange_pair(2, 3, 1, 4)
    for perm in itertools.permutations(range(4)):
        assert_like_numpy(x.permute(*perm), n.transpose(perm))
