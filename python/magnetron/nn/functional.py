"""``nn.functional``: neural-network functions composed from tensor ops (PyTorch's names and semantics).

Everything here is written with differentiable core ops (rms_norm, layer_norm, rope and the
attention are fused ops with their own gradients or a composed differentiable path), so
gradients come for free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .. import _C, _grad_mode
from .. import dtype as _dt
from .._ops_struct import _ID as _OP_ID
from .._tensor import Tensor

_SDPA_ID = _OP_ID["scaled_dot_product_attention"]
_LINEAR_CONCAT_ID = _OP_ID["linear_concat"]
_FUSED_DTYPES = (_dt.float32, _dt.float16, _dt.bfloat16)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight.T + bias; weight has PyTorch's (out_features, in_features) layout."""
    y = x @ weight.T
    if bias is None:
        return y
    if _grad_mode.records(y, bias) or bias.dtype != y.dtype or bias.shape != y.shape[-1:]:
        return y + bias
    # y is new and still in cache: the sum goes there, not through a third buffer (GPT-2 prefill,
    # 128 x 3072 float32: 138 -> 60 us a bias add)
    return y.add_(bias)


def linear_concat(x: Tensor, weights: Sequence[Tensor]) -> Tensor:
    """``cat([linear(x, w) for w in weights], dim=-1)`` in one kernel launch, the weights not joined.

    A transformer layer's q/k/v (or gate/up) projections read the same x: as one launch, the threads
    go from one weight to the next without waiting for each other at every boundary, and no copy of
    the weights is made to concatenate them. Autograd and mixed dtypes take the composed path.
    """
    if not weights:
        raise ValueError("linear_concat: no weights given")
    recording = _grad_mode.records(x, *weights)
    if recording or x.dtype not in _FUSED_DTYPES or any(w.dtype != x.dtype for w in weights):
        return Tensor.cat([linear(x, w) for w in weights], dim=-1)
    return _C._op(_LINEAR_CONCAT_ID, [x, *weights], [])


def embedding(ids: Tensor, weight: Tensor) -> Tensor:
    """Rows of ``weight`` at integer ``ids`` (any shape): result shape ids.shape + (dim,)."""
    if ids.dtype.is_floating_point or ids.dtype == _dt.boolean:
        raise TypeError(f"embedding: ids must be an integer tensor, got {ids.dtype}")
    return weight[ids]


# torch.finfo(dtype).eps: rms_norm's default eps
_EPS = {_dt.float32: 2.0**-23, _dt.float16: 2.0**-10, _dt.bfloat16: 2.0**-7, _dt.float64: 2.0**-52}


def _norm(
    op: str,
    x: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None,
    bias: Tensor | None,
    eps: float,
    round_first: bool = False,
) -> Tensor:
    """The fused rms_norm / layer_norm op over the trailing ``normalized_shape`` dims of x."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape or len(shape) > x.rank or tuple(x.shape[x.rank - len(shape) :]) != shape:
        raise ValueError(
            f"{op}: normalized_shape {shape} does not match the trailing dims of the input of shape {tuple(x.shape)}"
        )
    inputs = [x] + [t for t in (weight, bias) if t is not None]
    return _C._op(_OP_ID[op], inputs, [len(shape), float(eps), weight is not None, bias is not None, round_first])


def layer_norm(
    x: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over the trailing ``normalized_shape`` dims (biased var)."""
    return _norm("layer_norm", x, normalized_shape, weight, bias, eps)


def rms_norm(
    x: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * weight over the trailing ``normalized_shape`` dims; eps defaults to the
    machine epsilon of x's dtype, as in torch."""
    return _norm("rms_norm", x, normalized_shape, weight, None, _EPS.get(x.dtype, 0.0) if eps is None else eps)


def rms_norm_rounded(
    x: Tensor, normalized_shape: int | Sequence[int], weight: Tensor, eps: float | None = None
) -> Tensor:
    """rms_norm rounded to x's dtype before the weight multiplies it (rounded again): the RMSNorm of
    transformers' Llama-family models, in one kernel. For 16-bit x it differs from ``rms_norm(x, ...,
    weight)``, which rounds once, in the last bit of about a quarter of the values; its gradient
    passes the first rounding straight through."""
    eps = _EPS.get(x.dtype, 0.0) if eps is None else eps
    return _norm("rms_norm", x, normalized_shape, weight, None, eps, round_first=True)


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    return x.softmax(dim)


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    return x.log_softmax(dim)


def relu(x: Tensor) -> Tensor:
    return x.relu()


def silu(x: Tensor) -> Tensor:
    return x.silu()


def sigmoid(x: Tensor) -> Tensor:
    return x.sigmoid()


def tanh(x: Tensor) -> Tensor:
    return x.tanh()


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    if approximate == "none":
        return x.gelu()
    if approximate == "tanh":
        return x.gelu_approx()
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def hardsigmoid(x: Tensor) -> Tensor:
    return x.hard_sigmoid()


def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero elements with probability p and scale the rest by 1/(1-p) (identity when not training)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    keep = Tensor.bernoulli(x.shape, p=1.0 - p, dtype=x.dtype)
    return x * keep * (1.0 / (1.0 - p))


def _reduce(loss: Tensor, reduction: str, what: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{what}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    diff = input - target
    return _reduce(diff * diff, reduction, "mse_loss")


def cross_entropy(
    input: Tensor,
    target: Tensor,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy of logits ``input`` (N, C, ...) or (C,) against class indices or class probabilities."""
    class_dim = 0 if input.rank == 1 else 1
    logp = input.log_softmax(class_dim)
    n_classes = input.shape[class_dim]
    if target.dtype.is_floating_point:  # probabilities, same shape as input
        if target.shape != input.shape:
            raise ValueError(
                f"cross_entropy: probability targets must have the input's shape {input.shape}, got {target.shape}"
            )
        if label_smoothing:
            target = target * (1.0 - label_smoothing) + label_smoothing / n_classes
        return _reduce(-(logp * target).sum(dim=class_dim), reduction, "cross_entropy")
    expected = input.shape[:class_dim] + input.shape[class_dim + 1 :]
    if target.shape != expected:
        raise ValueError(f"cross_entropy: class-index targets must have shape {expected}, got {target.shape}")
    valid = target != ignore_index
    safe = Tensor.where(valid, target, 0).cast(_dt.int64)
    picked = logp.gather(class_dim, safe.unsqueeze(class_dim)).squeeze(class_dim)
    loss = -picked
    if label_smoothing:
        loss = loss * (1.0 - label_smoothing) - logp.mean(dim=class_dim) * label_smoothing
    loss = Tensor.where(valid, loss, 0.0)
    if reduction == "mean":
        return loss.sum() / valid.sum().cast(input.dtype)
    return _reduce(loss, reduction, "cross_entropy")


def nll_loss(input: Tensor, target: Tensor, ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    class_dim = 0 if input.rank == 1 else 1
    valid = target != ignore_index
    safe = Tensor.where(valid, target, 0).cast(_dt.int64)
    loss = Tensor.where(valid, -input.gather(class_dim, safe.unsqueeze(class_dim)).squeeze(class_dim), 0.0)
    if reduction == "mean":
        return loss.sum() / valid.sum().cast(input.dtype)
    return _reduce(loss, reduction, "nll_loss")


def binary_cross_entropy(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Like PyTorch, log terms are clamped at -100 so p = 0 or 1 stays finite."""
    log_p = input.log().clamp(min=-100.0)
    log_1mp = (1.0 - input).log().clamp(min=-100.0)
    return _reduce(-(target * log_p + (1.0 - target) * log_1mp), reduction, "binary_cross_entropy")


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Stable form: max(x, 0) - x * y + log(1 + exp(-|x|))."""
    loss = input.relu() - input * target + (-input.abs()).exp().log1p()
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attn_mask: Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    *,
    causal_offset: int | Tensor = 0,
) -> Tensor:
    """softmax(q @ k^T * scale + mask) @ v over (..., heads, L, E) inputs of one dtype.

    Grouped-query attention: q may have a multiple of k/v's heads; query head h reads key/value head
    h // (Hq // Hkv), and k and v are never copied. ``is_causal`` lets query i see keys
    j <= i + ``causal_offset``: 0 is PyTorch's top-left aligned triangle, Lk - Lq puts query i at
    absolute position Lk - Lq + i (decoding against a KV cache). ``causal_offset`` may also be a
    one-element integer tensor, read when the op runs: k and v can then be a whole preallocated cache
    (keys past the offset are never read) in a captured ``Graph``. A boolean ``attn_mask`` marks allowed
    positions, a float mask is added to the scores. A query that may see no key gets zeros, as in PyTorch.

    Without ``attn_mask``, float32/float16/bfloat16 inputs run one fused, forward-only kernel (blocked
    online softmax, float32 accumulation, k/v read in place) unless autograd has to record the call;
    everything else is composed from differentiable ops.
    """
    if q.rank < 2 or k.rank != q.rank or v.rank != q.rank:
        raise ValueError(
            f"scaled_dot_product_attention: q, k, v must have equal rank >= 2, got {q.shape}, {k.shape}, {v.shape}"
        )
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(
            f"scaled_dot_product_attention: q, k, v must share one dtype, got {q.dtype}, {k.dtype}, {v.dtype} "
            f"(shapes {q.shape}, {k.shape}, {v.shape})"
        )
    L, E = q.shape[-2], q.shape[-1]
    S = k.shape[-2]
    scale = 1.0 / math.sqrt(E) if scale is None else float(scale)
    recording = _grad_mode.records(q, k, v)
    if attn_mask is None and q.dtype in _FUSED_DTYPES and not recording:
        if isinstance(causal_offset, Tensor):
            return _C._op(_SDPA_ID, [q, k, v, causal_offset], [scale, bool(is_causal), 0])
        return _C._op(_SDPA_ID, [q, k, v], [scale, bool(is_causal), int(causal_offset)])
    grouped = q.rank >= 3 and q.shape[-3] != k.shape[-3]
    if grouped:
        hq, hk = q.shape[-3], k.shape[-3]
        if hk == 0 or hq % hk:
            raise ValueError(
                f"scaled_dot_product_attention: {hq} query heads are not a multiple of {hk} key/value heads"
            )
        batch = q.shape[:-3]
        q = q.reshape(*batch, hk, hq // hk, L, E)
        k, v = k.unsqueeze(-3), v.unsqueeze(-3)
    scores = (q @ k.transpose(-2, -1)) * scale
    if is_causal:  # key j is allowed for query i when j <= i + causal_offset
        rows = Tensor.arange(L, dtype=_dt.int64).unsqueeze(-1) + causal_offset
        allowed = Tensor.arange(S, dtype=_dt.int64) <= rows  # (L, S)
        scores = scores.masked_fill(allowed.logical_not(), float("-inf"))
    if attn_mask is not None:
        if grouped and attn_mask.rank >= 3:
            attn_mask = (
                attn_mask.unsqueeze(-3)
                if attn_mask.shape[-3] == 1
                else attn_mask.reshape(*attn_mask.shape[:-3], k.shape[-4], -1, L, S)
            )
        if attn_mask.dtype == _dt.boolean:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    probs = scores.softmax(-1)
    if is_causal or attn_mask is not None:  # rows that see no key: zeros, not softmax's 0/0
        probs = Tensor.where((scores == float("-inf")).all(-1, keepdim=True), 0.0, probs)
    out = probs @ v
    if grouped:
        out = out.reshape(*out.shape[:-4], -1, L, v.shape[-1])
    return out


def rope_frequencies(
    positions: int | Tensor, dim: int, theta: float = 10000.0, offset: int = 0
) -> tuple[Tensor, Tensor]:
    """cos and sin tables of shape (T, dim // 2) for rotary embeddings at ``positions``
    (a count T, starting at ``offset``, or an explicit tensor of positions)."""
    if dim % 2:
        raise ValueError(f"rope_frequencies: dim must be even, got {dim}")
    pos = (
        Tensor.arange(offset, offset + positions, dtype=_dt.float32)
        if isinstance(positions, int)
        else positions.cast(_dt.float32)
    )
    inv_freq = Tensor([theta ** (-2.0 * i / dim) for i in range(dim // 2)])
    angles = pos.unsqueeze(-1) * inv_freq
    return angles.cos(), angles.sin()


def rope(x: Tensor, cos: Tensor, sin: Tensor, interleaved: bool = False) -> Tensor:
    """Rotate pairs of features of x (..., T, D) by the angles in cos/sin (T, D // 2), one fused op.

    "Rotate half" pairs feature i with i + D/2 (Llama/Qwen/GPT-NeoX); interleaved pairs 2i with 2i + 1 (GPT-J).
    cos/sin broadcast against x's leading dims and are used in x's dtype.
    """
    return _C._op(_OP_ID["rope"], [x, cos, sin], [interleaved])
