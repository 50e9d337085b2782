"""Decoder-only transformer blocks shared by GPT-2, Qwen3 and the Llama family.

One pre-norm block covers all of them; the architectures differ only in ``TransformerConfig``
flags and in how checkpoint names map onto these modules (gpt2.py, qwen3.py):

    x = x + attn(norm_1(x))   # q/k/v projections (+ bias), per-head q/k RMSNorm, RoPE, GQA
    x = x + mlp(norm_2(x))    # GELU MLP (GPT-2) or SwiGLU (Llama, Qwen)

Numerics follow transformers, so that bfloat16 runs track its bfloat16 runs: activations keep
the weights' dtype (float32 or bfloat16), matmuls accumulate in float32, norms normalise in
float32, and RoPE rotates in the activations' dtype with cos/sin rounded to it. Attention (scores,
softmax, the weighted sum) runs in float32, as torch's fused CPU attention does internally.

Shapes: B batch, T new tokens, S = pos + T attended positions, C model width, H query heads,
H_kv key/value heads (H_kv divides H), D head size, F MLP width, V vocabulary.

References
- Radford et al. 2019, "Language Models are Unsupervised Multitask Learners" (GPT-2).
- Touvron et al. 2023, "LLaMA" (pre-norm RMSNorm, SwiGLU, RoPE); Ainslie et al. 2023, "GQA".
- Su et al. 2021, "RoFormer" (rotary position embeddings); Qwen3 technical report 2025 (q/k norm).
- Hugging Face transformers: modeling_gpt2.py, modeling_llama.py, modeling_qwen3.py (the parity
  targets of tests/models).

Non-goals: training (no dropout, no padding masks), RoPE scaling variants, sliding-window
attention, mixture-of-experts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import dtype as _dt
from .. import nn
from .._grad_mode import records
from .._tensor import Tensor
from ..dtype import DType
from ..nn import functional as F
from .kv_cache import KVCache


@dataclass
class TransformerConfig:
    arch: str  # "gpt2", "qwen3", "qwen2" or "llama" (the HF model_type)
    vocab_size: int  # V
    dim: int  # C
    n_layers: int
    n_heads: int  # H
    n_kv_heads: int  # H_kv
    head_dim: int  # D
    ffn_dim: int  # F
    max_seq_len: int  # the context length
    norm: str  # "layernorm" or "rmsnorm"
    norm_eps: float
    mlp: str  # "gelu" (tanh approximation) or "swiglu"
    positions: str  # "learned" (an embedding table) or "rope"
    rope_theta: float = 10000.0
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False  # RMSNorm over each head's q and k (Qwen3)
    fused_qkv: bool = False  # one qkv_proj (C -> (H + 2 H_kv) D) instead of q/k/v_proj (GPT-2's c_attn)
    tie_embeddings: bool = True  # lm_head shares the token embedding
    dtype: DType = _dt.float32  # the checkpoint's weight dtype
    bos_token_id: int | None = None
    eos_token_ids: list[int] = field(default_factory=list)
    hf: dict = field(default_factory=dict, repr=False)  # the config.json it came from


def placeholder(*shape: int, dtype: DType) -> nn.Parameter:
    """A parameter with the right shape and dtype that owns one element (a zero-stride view):
    load_state_dict(assign=True) replaces it with the checkpoint's tensor. Allocating real
    buffers first would cost as much memory as the weights, and copying into it raises."""
    return nn.Parameter(Tensor.empty(1, dtype=dtype).expand(*shape), requires_grad=False)


def accumulate(y: Tensor, other: Tensor) -> Tensor:
    """y + other, written into y unless autograd records: y is an op's new result that nothing else
    holds and is still in cache, so the sum does not stream a third buffer through memory."""
    return y + other if records(y, other) else y.add_(other)


class Linear(nn.Linear):
    """``nn.Linear`` whose weights a checkpoint supplies (see placeholder): drawing 0.6B random
    numbers first would take longer than loading them."""

    def __init__(self, in_features: int, out_features: int, bias: bool, dtype: DType) -> None:
        nn.Module.__init__(self)
        self.in_features, self.out_features = in_features, out_features
        self.weight = placeholder(out_features, in_features, dtype=dtype)
        self.bias = placeholder(out_features, dtype=dtype) if bias else None


class Embedding(nn.Embedding):
    """``nn.Embedding`` whose table a checkpoint supplies (see placeholder)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, dtype: DType) -> None:
        nn.Module.__init__(self)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = placeholder(num_embeddings, embedding_dim, dtype=dtype)


class Norm(nn.Module):
    """LayerNorm or RMSNorm over the last dim, rounded to x's dtype where transformers rounds:
    LayerNorm once at the end (torch's kernel), RMSNorm before the scale (HF's Llama/Qwen code)."""

    def __init__(self, dim: int, eps: float, kind: str, dtype: DType) -> None:
        super().__init__()
        self.dim, self.eps, self.kind = dim, eps, kind
        self.weight = nn.Parameter(Tensor.ones(dim, dtype=dtype), requires_grad=False)
        self.bias = nn.Parameter(Tensor.zeros(dim, dtype=dtype), requires_grad=False) if kind == "layernorm" else None

    def forward(self, x: Tensor) -> Tensor:  # the fused norms compute in float32 and round once to x's dtype
        if self.bias is not None:
            return F.layer_norm(x, self.dim, self.weight, self.bias, self.eps)
        return F.rms_norm_rounded(x, self.dim, self.weight, self.eps)


class Attention(nn.Module):
    def __init__(self, cfg: TransformerConfig, dtype: DType) -> None:
        super().__init__()
        C, H, H_kv, D = cfg.dim, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        self.n_heads, self.n_kv_heads, self.head_dim = H, H_kv, D
        self.qkv_sizes = [H * D, H_kv * D, H_kv * D]
        if cfg.fused_qkv:  # one matrix-vector product per decode step instead of three
            self.qkv_proj = Linear(C, sum(self.qkv_sizes), cfg.qkv_bias, dtype)
        else:
            self.q_proj = Linear(C, H * D, cfg.qkv_bias, dtype)
            self.k_proj = Linear(C, H_kv * D, cfg.qkv_bias, dtype)
            self.v_proj = Linear(C, H_kv * D, cfg.qkv_bias, dtype)
        self.fused_qkv = cfg.fused_qkv
        self.o_proj = Linear(H * D, C, cfg.o_bias, dtype)
        if cfg.qk_norm:
            self.q_norm = Norm(D, cfg.norm_eps, "rmsnorm", dtype)
            self.k_norm = Norm(D, cfg.norm_eps, "rmsnorm", dtype)
        else:
            self.q_norm = self.k_norm = None

    def forward(
        self,
        x: Tensor,  # (B, T, C)
        rope: tuple[Tensor, Tensor] | None,  # cos, sin: (T, D/2) each, in x's dtype
        cache: KVCache | None,
        layer: int,
        where: Tensor | int,  # x's positions (consecutive): (T,) int64 read when the kernels run, or the first
    ) -> Tensor:
        B, T, _ = x.shape
        H, H_kv, D = self.n_heads, self.n_kv_heads, self.head_dim
        if self.fused_qkv:
            q, k, v = self.qkv_proj(x).split(self.qkv_sizes, dim=-1)  # (B, T, H*D), (B, T, H_kv*D) x 2: views
        else:  # one launch over the three weights, which stay apart
            projs = (self.q_proj, self.k_proj, self.v_proj)
            q, k, v = F.linear_concat(x, [p.weight for p in projs]).split(self.qkv_sizes, dim=-1)  # views
            if self.q_proj.bias is not None:
                q, k, v = (accumulate(t, p.bias) for t, p in zip((q, k, v), projs))
        q = q.view(B, T, H, D)  # (B, T, H, D)
        k = k.view(B, T, H_kv, D)  # (B, T, H_kv, D)
        v = v.view(B, T, H_kv, D)  # (B, T, H_kv, D)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q = q.transpose(1, 2)  # (B, H, T, D)
        k = k.transpose(1, 2)  # (B, H_kv, T, D)
        v = v.transpose(1, 2)  # (B, H_kv, T, D)
        if rope is not None:
            q, k = F.rope(q, *rope), F.rope(k, *rope)
        offset: int | Tensor = 0
        if cache is not None:  # write this step's keys/values at their positions, attend over the buffers
            k, v = cache.update(layer, where, k, v)  # (B, H_kv, capacity, D), in the cache's dtype
            offset = where[:1] if isinstance(where, Tensor) else where  # pos, the first token's position
        # Query i sits at position pos + i and sees keys 0..pos+i: causality aligned bottom-right, so
        # causal_offset = pos. As a tensor it is read when the kernel runs (keys past it are never
        # read), so a captured decode step attends over one more key on every replay. The fused
        # kernel reads k/v in place, groups the H query heads over the H_kv key/value heads (GQA) and
        # accumulates in float32.
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, causal_offset=offset)  # (B, H, T, D)
        y = y.transpose(1, 2).reshape(B, T, H * D)  # (B, T, H*D)
        return self.o_proj(y)  # (B, T, C)


class MLP(nn.Module):
    """GELU MLP, down(gelu_tanh(up(x))), or SwiGLU, down(silu(gate(x)) * up(x))."""

    def __init__(self, cfg: TransformerConfig, dtype: DType) -> None:
        super().__init__()
        C, Fw = cfg.dim, cfg.ffn_dim
        self.gate_proj = Linear(C, Fw, cfg.mlp_bias, dtype) if cfg.mlp == "swiglu" else None
        self.up_proj = Linear(C, Fw, cfg.mlp_bias, dtype)
        self.down_proj = Linear(Fw, C, cfg.mlp_bias, dtype)

    def forward(self, x: Tensor) -> Tensor:  # (B, T, C)
        if self.gate_proj is not None:  # gate and up in one launch, as q/k/v
            gate, up = F.linear_concat(x, [self.gate_proj.weight, self.up_proj.weight]).chunk(2, dim=-1)  # views
            if self.up_proj.bias is not None:
                gate, up = accumulate(gate, self.gate_proj.bias), accumulate(up, self.up_proj.bias)
            h = F.silu(gate)  # (B, T, F)
            h = h * up if records(h, up) else h.mul_(up)
        else:
            h = self.up_proj(x)  # (B, T, F)
            h = F.gelu(h, approximate="tanh") if records(h) else h.gelu_approx_()
        return self.down_proj(h)  # (B, T, C)


class Block(nn.Module):
    def __init__(self, cfg: TransformerConfig, dtype: DType) -> None:
        super().__init__()
        self.input_layernorm = Norm(cfg.dim, cfg.norm_eps, cfg.norm, dtype)
        self.self_attn = Attention(cfg, dtype)
        self.post_attention_layernorm = Norm(cfg.dim, cfg.norm_eps, cfg.norm, dtype)
        self.mlp = MLP(cfg, dtype)

    def forward(self, x: Tensor, *attn_args: object) -> Tensor:  # (B, T, C)
        x = accumulate(self.self_attn(self.input_layernorm(x), *attn_args), x)
        return accumulate(self.mlp(self.post_attention_layernorm(x)), x)


class Transformer(nn.Module):
    """Token ids -> logits. Parameter names follow HF Llama's (``layers.0.self_attn.q_proj.weight``)."""

    def __init__(self, cfg: TransformerConfig, dtype: DType | None = None) -> None:
        super().__init__()
        dtype = cfg.dtype if dtype is None else dtype
        self.config, self.dtype = cfg, dtype
        self.embed_tokens = Embedding(cfg.vocab_size, cfg.dim, dtype)
        self.embed_positions = Embedding(cfg.max_seq_len, cfg.dim, dtype) if cfg.positions == "learned" else None
        self.layers = nn.ModuleList([Block(cfg, dtype) for _ in range(cfg.n_layers)])
        self.norm = Norm(cfg.dim, cfg.norm_eps, cfg.norm, dtype)
        self.lm_head = Linear(cfg.dim, cfg.vocab_size, False, dtype)

    def new_cache(self, capacity: int, batch: int = 1) -> KVCache:
        cfg = self.config
        cap = min(capacity, cfg.max_seq_len)
        return KVCache(cfg.n_layers, batch, cfg.n_kv_heads, cfg.head_dim, cap, cfg.max_seq_len, self.dtype)

    def forward(
        self, ids: Tensor, cache: KVCache | None = None, last_only: bool = False, positions: Tensor | None = None
    ) -> Tensor:
        """Logits (B, T, V) in float32 for ids (B, T) (only the last position's with ``last_only``).

        With a cache, ids continue the cached sequence: they sit at positions cache.length onwards.
        ``positions`` (T,) int64 may hold those positions already: every position-dependent op reads
        them from this tensor, which is what lets a captured decode step (generate.DecodeGraph) run
        again at the next position.
        """
        cfg = self.config
        B, T = ids.shape
        pos = cache.length if cache is not None else 0
        S = pos + T
        if S > cfg.max_seq_len:
            raise ValueError(f"{cfg.arch}: {S} positions exceed the context length {cfg.max_seq_len}")
        if cache is not None:
            cache.reserve(S)
        # positions known here are passed on as the first one (cache writes become slice copies)
        where: Tensor | int = pos if positions is None else positions
        if positions is None:
            positions = Tensor.arange(pos, S, dtype=_dt.int64)  # (T,)
        x = self.embed_tokens(ids)  # (B, T, C)
        if self.embed_positions is not None:
            x = x + self.embed_positions(positions)  # (T, C) broadcast over B
        rope = None
        if cfg.positions == "rope":
            cos, sin = F.rope_frequencies(positions, cfg.head_dim, cfg.rope_theta)  # (T, D/2) each
            rope = cos.cast(self.dtype), sin.cast(self.dtype)
        for i, layer in enumerate(self.layers):
            x = layer(x, rope, cache, i, where)  # (B, T, C)
        if cache is not None:
            cache.length = S
        if last_only:
            x = x[:, T - 1 :]  # (B, 1, C)
        return self.lm_head(self.norm(x)).cast(_dt.float32)  # (B, T, V)


def hf_token_ids(value: object) -> list[int]:
    """An HF ``eos_token_id`` entry (None, an int or a list of ints) as a list."""
    if value is None:
        return []
    return [int(v) for v in value] if isinstance(value, list) else [int(value)]  # type: ignore[call-overload]


def hf_dtype(hf: dict) -> DType:
    """The weight dtype a config.json records (``dtype``, or ``torch_dtype`` before transformers 5)."""
    name = hf.get("dtype") or hf.get("torch_dtype") or "float32"
    dtypes = {"float32": _dt.float32, "bfloat16": _dt.bfloat16, "float16": _dt.float16}
    if name not in dtypes:
        raise ValueError(f"config.json: unsupported weight dtype {name!r} (supported: {', '.join(dtypes)})")
    return dtypes[name]
