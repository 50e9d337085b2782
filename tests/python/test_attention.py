"""The fused scaled_dot_product_attention op (src/core/ops_attention.c, src/cpu/kernels/attention.c)
and nn.functional.scaled_dot_product_attention, against torch's sdpa on the same (rounded) inputs."""

from __future__ import annotations

import magnetron as mag
import numpy as np
import pytest
import torch
from magnetron import _C
from magnetron.nn import functional as F

SDPA = {r["name"]: r["id"] for r in _C.op_table()}["scaled_dot_product_attention"]
TORCH = {mag.float32: torch.float32, mag.float16: torch.float16, mag.bfloat16: torch.bfloat16}
# output rounding to the dtype dominates; float32 only differs in summation order and exp
TOL = {mag.float32: 2e-5, mag.float16: 2e-3, mag.bfloat16: 1.6e-2}


def tensors(rng: np.random.Generator, dtype: mag.dtype.DType, *shapes: tuple[int, ...]) -> list[mag.Tensor]:
    return [mag.Tensor(rng.standard_normal(s, dtype=np.float32)).cast(dtype) for s in shapes]


def as_torch(t: mag.Tensor) -> torch.Tensor:
    """The exact values of t in float32 (torch's reference runs in float32 on the rounded inputs)."""
    return torch.from_numpy(np.array(t.cast(mag.float32).detach().numpy()))


def reference(q: mag.Tensor, k: mag.Tensor, v: mag.Tensor, causal: bool = False, offset: int = 0, scale=None):
    tq, tk, tv = (as_torch(t) for t in (q, k, v))
    mask = torch.ones(tq.shape[-2], tk.shape[-2], dtype=torch.bool).tril(offset) if causal else None
    gqa = tq.dim() > 2 and tq.shape[-3] != tk.shape[-3]
    return torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=mask, scale=scale, enable_gqa=gqa)


def check(got: mag.Tensor, want: torch.Tensor, dtype: mag.dtype.DType) -> None:
    assert got.dtype is dtype
    assert got.shape == tuple(want.shape)
    tol = TOL[dtype]
    np.testing.assert_allclose(as_torch(got).numpy(), want.numpy(), rtol=tol, atol=tol)


# (batch, Hq, Hkv, Lq, Lk, E, Ev): decode (Lq = 1), chunked prefill (Lq < Lk), prefill (Lq = Lk),
# GQA groups of 1..8, E and Ev off the vector widths, lengths around the 64-key blocks
SHAPES = [
    (1, 1, 1, 1, 1, 8, 8),
    (1, 16, 8, 1, 130, 128, 128),
    (2, 12, 12, 1, 65, 64, 64),
    (1, 8, 1, 1, 33, 32, 48),
    (2, 4, 2, 5, 40, 20, 24),
    (1, 2, 1, 37, 100, 64, 64),
    (1, 16, 8, 70, 70, 128, 128),
    (1, 3, 3, 64, 64, 17, 5),
    (2, 6, 2, 129, 129, 16, 16),
]


@pytest.mark.parametrize("dtype", [mag.float32, mag.bfloat16, mag.float16], ids=str)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matches_torch_with_bottom_right_causality(shape: tuple[int, ...], causal: bool, dtype) -> None:
    b, hq, hkv, lq, lk, e, ev = shape
    q, k, v = tensors(np.random.default_rng(0), dtype, (b, hq, lq, e), (b, hkv, lk, e), (b, hkv, lk, ev))
    with mag.no_grad():
        got = F.scaled_dot_product_attention(q, k, v, is_causal=causal, causal_offset=lk - lq)
    check(got, reference(q, k, v, causal, lk - lq), dtype)


@pytest.mark.parametrize("lq, lk", [(5, 5), (7, 3), (3, 7)])
def test_is_causal_alone_is_torchs_top_left_triangle(lq: int, lk: int) -> None:
    q, k, v = tensors(np.random.default_rng(1), mag.float32, (2, 3, lq, 16), (2, 3, lk, 16), (2, 3, lk, 16))
    got = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    want = torch.nn.functional.scaled_dot_product_attention(as_torch(q), as_torch(k), as_torch(v), is_causal=True)
    check(got, want, mag.float32)


@pytest.mark.parametrize("dtype", [mag.float32, mag.bfloat16], ids=str)
def test_reads_kv_cache_views_in_place(dtype) -> None:
    """k/v are rows 0..Lk-1 of a preallocated (B, Hkv, capacity, E) buffer; q is (B, T, H, E) transposed."""
    rng = np.random.default_rng(2)
    kbuf, vbuf = tensors(rng, dtype, (2, 4, 300, 64), (2, 4, 300, 64))
    (q,) = tensors(rng, dtype, (2, 3, 8, 64))
    q = q.transpose(1, 2)  # (2, 8, 3, 64) -> heads dim strided
    for lk in (3, 64, 65, 200):
        k, v = kbuf[:, :, :lk], vbuf[:, :, :lk]
        got = F.scaled_dot_product_attention(q, k, v, is_causal=True, causal_offset=lk - 3)
        check(got, reference(q, k, v, True, lk - 3), dtype)


def test_result_keeps_the_layout_of_a_transposed_q() -> None:
    """q (B, T, H, E) viewed as (B, H, T, E): the result is stored (B, T, H, E) like torch's, so that
    transposing it back and merging the heads is a view."""
    rng = np.random.default_rng(7)
    qkv, k, v = tensors(rng, mag.float32, (2, 6, 3, 16), (2, 3, 6, 16), (2, 3, 6, 16))
    q = qkv.transpose(1, 2)  # (2, 3, 6, 16)
    got = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    check(got, reference(q, k, v, True), mag.float32)
    assert not got.is_contiguous and got.transpose(1, 2).is_contiguous
    merged = got.transpose(1, 2).reshape(2, 6, 48)
    np.testing.assert_allclose(merged.numpy(), as_torch(got).transpose(1, 2).reshape(2, 6, 48).numpy())
    contiguous_q = qkv.transpose(1, 2).contiguous()
    assert F.scaled_dot_product_attention(contiguous_q, k, v).is_contiguous


@pytest.mark.parametrize("dtype", [mag.float32, mag.bfloat16], ids=str)
def test_strided_head_dim_is_converted(dtype) -> None:
    """k stored (E, L) and viewed transposed: a column stride != 1 takes the converting path."""
    rng = np.random.default_rng(3)
    q, kt, vt = tensors(rng, dtype, (1, 4, 9, 32), (1, 2, 32, 50), (1, 2, 48, 50))
    k, v = kt.transpose(-2, -1), vt.transpose(-2, -1)
    for lq in (1, 9):
        qq = q[:, :, :lq]
        check(F.scaled_dot_product_attention(qq, k, v), reference(qq, k, v), dtype)


def test_rank_2_and_3_and_broadcast_batch() -> None:
    rng = np.random.default_rng(4)
    q, k, v = tensors(rng, mag.float32, (6, 16), (9, 16), (9, 8))
    check(F.scaled_dot_product_attention(q, k, v), reference(q, k, v), mag.float32)
    q, k, v = tensors(rng, mag.float32, (4, 6, 16), (2, 9, 16), (2, 9, 8))
    check(F.scaled_dot_product_attention(q, k, v, is_causal=True), reference(q, k, v, True), mag.float32)
    q, k, v = tensors(rng, mag.float32, (3, 2, 5, 8), (1, 2, 7, 8), (1, 2, 7, 8))  # k/v batch broadcasts
    got = _C._op(SDPA, [q, k, v], [0.5, False, 0])
    want = reference(q, k.expand(3, 2, 7, 8), v.expand(3, 2, 7, 8), scale=0.5)
    check(got, want, mag.float32)


def test_rows_that_see_no_key_are_zero_like_torch() -> None:
    q, k, v = tensors(np.random.default_rng(5), mag.float32, (1, 2, 4, 8), (1, 2, 3, 8), (1, 2, 3, 8))
    got = F.scaled_dot_product_attention(q, k, v, is_causal=True, causal_offset=-2)
    check(got, reference(q, k, v, True, -2), mag.float32)
    assert not got[:, :, :2].detach().numpy().any()
    empty_k, empty_v = tensors(np.random.default_rng(5), mag.float32, (1, 2, 0, 8), (1, 2, 0, 8))
    got = F.scaled_dot_product_attention(q, empty_k, empty_v)
    assert got.shape == (1, 2, 4, 8) and not got.detach().numpy().any()
    # the composed path (boolean mask) agrees
    mask = mag.Tensor([[False, False, False], [True, False, True], [True, True, True], [False, False, False]])
    got = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    want = torch.nn.functional.scaled_dot_product_attention(
        as_torch(q), as_torch(k), as_torch(v), attn_mask=torch.tensor(mask.tolist())
    )
    check(got, want, mag.float32)


def test_nan_propagates_to_the_rows_that_see_it() -> None:
    """Rows before the NaN may get it too (0 * NaN, as in torch, where a block holds both)."""
    q, k, v = tensors(np.random.default_rng(6), mag.float32, (1, 1, 4, 8), (1, 1, 4, 8), (1, 1, 4, 8))
    v[0, 0, 2, 3] = float("nan")
    got = F.scaled_dot_product_attention(q, k, v, is_causal=True).detach().numpy()
    assert np.isnan(got[0, 0, 2:, 3]).all()
    assert np.isfinite(np.delete(got, 3, axis=-1)).all()
    k[0, 0, 1, 0] = float("nan")
    got = F.scaled_dot_product_attention(q, k, v, is_causal=True).detach().numpy()
    assert np.isnan(got[0, 0, 1:]).all() and np.isfinite(got[0, 0, 0, :3]).all()


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_thread_counts_and_split_keys_agree(threads: int) -> None:
    """With fewer work items than threads the keys are split and the partial softmaxes merged."""
    old = mag.context.num_threads
    try:
        mag.context.num_threads = threads
        rng = np.random.default_rng(7)
        for dtype in (mag.float32, mag.bfloat16):
            q, k, v = tensors(rng, dtype, (1, 2, 1, 64), (1, 1, 1500, 64), (1, 1, 1500, 64))
            check(F.scaled_dot_product_attention(q, k, v), reference(q, k, v), dtype)
            q, k, v = tensors(rng, dtype, (1, 2, 3, 32), (1, 1, 700, 32), (1, 1, 700, 32))
            got = F.scaled_dot_product_attention(q, k, v, is_causal=True, causal_offset=-300)
            check(got, reference(q, k, v, True, -300), dtype)
    finally:
        mag.context.num_threads = old


def test_scale_and_destination() -> None:
    q, k, v = tensors(np.random.default_rng(8), mag.float32, (2, 2, 3, 8), (2, 2, 5, 8), (2, 2, 5, 4))
    want = reference(q, k, v, scale=0.3)
    check(F.scaled_dot_product_attention(q, k, v, scale=0.3), want, mag.float32)
    out = mag.Tensor.zeros(2, 2, 3, 4)
    _C._op(SDPA, [q, k, v], [0.3, False, 0], out)
    check(out, want, mag.float32)


def test_gradients_take_the_composed_path() -> None:
    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal(s, dtype=np.float32) for s in ((1, 4, 3, 8), (1, 2, 5, 8), (1, 2, 5, 8))]
    ours = [mag.Tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = F.scaled_dot_product_attention(*ours, is_causal=True, causal_offset=2)
    assert y.requires_grad
    (y * y).sum().backward()
    mask = torch.ones(3, 5, dtype=torch.bool).tril(2)
    ty = torch.nn.functional.scaled_dot_product_attention(*theirs, attn_mask=mask, enable_gqa=True)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)
    with mag.no_grad():  # no recording: the fused kernel, whose result is a constant
        z = F.scaled_dot_product_attention(*ours, is_causal=True, causal_offset=2)
    assert not z.requires_grad
    np.testing.assert_allclose(z.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_the_fused_op_refuses_inputs_that_need_grad() -> None:
    q, k, v = (mag.Tensor(np.ones((1, 2, 3), np.float32), requires_grad=True) for _ in range(3))
    with pytest.raises(RuntimeError, match=r"scaled_dot_product_attention: the fused kernel is forward-only"):
        _C._op(SDPA, [q, k, v], [1.0, False, 0])


def test_float64_runs_composed() -> None:
    q, k, v = tensors(np.random.default_rng(10), mag.float64, (1, 2, 3, 8), (1, 2, 4, 8), (1, 2, 4, 8))
    got = F.scaled_dot_product_attention(q, k, v, is_causal=True, causal_offset=1)
    want = reference(q, k, v, True, 1)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def errors(*shapes: tuple[int, ...], dtypes=(mag.float32,) * 3) -> list[mag.Tensor]:
    return [mag.Tensor.zeros(*s, dtype=d) for s, d in zip(shapes, dtypes, strict=True)]


F32, BF16, F64 = mag.float32, mag.bfloat16, mag.float64


@pytest.mark.parametrize(
    "shapes, dtypes, exc, match",
    [
        (((1, 2, 3, 8), (1, 2, 4, 6), (1, 2, 4, 8)), (F32,) * 3, ValueError, r"q \(1, 2, 3, 8\), k \(1, 2, 4, 6\)"),
        (((1, 2, 3, 8), (1, 2, 4, 8), (1, 2, 5, 8)), (F32,) * 3, ValueError, r"\(\.\.\., Hkv, Lk, Ev\)"),
        (((1, 3, 3, 8), (1, 2, 4, 8), (1, 2, 4, 8)), (F32,) * 3, ValueError, r"3 query heads are not a multiple of 2"),
        (((2, 2, 3, 8), (3, 2, 4, 8), (3, 2, 4, 8)), (F32,) * 3, ValueError, r"batch dims .* cannot be broadcast"),
        (((3, 8), (4, 8, 1), (4, 8, 1)), (F32,) * 3, ValueError, r"one rank >= 2"),
        (((1, 2, 3, 8),) * 3, (F32, BF16, F32), TypeError, r"must share one dtype, got float32, bfloat16 and float32"),
        (((1, 2, 3, 8),) * 3, (F64,) * 3, TypeError, r"float32, float16 or bfloat16, got float64"),
    ],
)
def test_the_op_explains_bad_inputs(shapes: tuple, dtypes: tuple, exc: type, match: str) -> None:
    with pytest.raises(exc, match="scaled_dot_product_attention: " + ".*" + match):
        _C._op(SDPA, errors(*shapes, dtypes=dtypes), [1.0, False, 0])


def test_functional_explains_bad_inputs() -> None:
    q, k, v = errors((1, 2, 3, 8), (1, 2, 4, 8), (1, 2, 4, 8), dtypes=(mag.float32, mag.float16, mag.float16))
    with pytest.raises(TypeError, match=r"scaled_dot_product_attention: q, k, v must share one dtype"):
        F.scaled_dot_product_attention(q, k, v)
    q, k, v = errors((1, 3, 3, 8), (1, 2, 4, 8), (1, 2, 4, 8))
    with pytest.raises(ValueError, match=r"3 query heads are not a multiple of 2"):
        F.scaled_dot_product_attention(q, k, v)


@pytest.mark.parametrize("dtype", [mag.float32, mag.bfloat16, mag.float64], ids=str)
@pytest.mark.parametrize("offset", [0, 3, 57, -2])
def test_offset_tensor_equals_the_int_offset_over_a_whole_cache(dtype, offset: int) -> None:
    """A causal_offset tensor (read at run time) attends over a preallocated buffer like the int form:
    keys past the offset are masked whatever the buffer holds (float64 runs the composed path)."""
    rng = np.random.default_rng(offset + 10)
    q, k, v = tensors(rng, dtype, (1, 4, 2, 16), (1, 2, 64, 16), (1, 2, 64, 16))
    got = F.scaled_dot_product_attention(q, k, v, is_causal=True, causal_offset=mag.Tensor([offset]))
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True, causal_offset=offset)
    np.testing.assert_array_equal(got.cast(mag.float32).numpy(), want.cast(mag.float32).numpy())
    if dtype is not mag.float64:
        check(got, reference(q, k, v, causal=True, offset=offset), dtype)


def test_offset_tensor_must_hold_one_integer() -> None:
    q = mag.Tensor.zeros(1, 2, 4)
    for bad in (mag.Tensor([1, 2]), mag.Tensor([1.0])):
        with pytest.raises(ValueError, match="offset tensor must hold one integer"):
            _C._op(SDPA, [q, q, q, bad], [0.5, True, 0])
