"""Qwen3, Qwen2/2.5 and the Llama family on the shared transformer blocks.

All three are pre-norm decoders with RMSNorm, rotary position embeddings ("rotate half" pairs
feature i with i + D/2), grouped-query attention and a SwiGLU MLP:

    x = embed_tokens[ids]                                        # (B, T, C)
    q, k, v = q_proj(n), k_proj(n), v_proj(n)  where n = norm(x)  # (B, T, H|H_kv, D)
    q, k = q_norm(q), k_norm(k)                                  # Qwen3 only: RMSNorm per head
    q, k = rope(q), rope(k)
    x = x + o_proj(attention(q, k, v))                           # H_kv heads shared by H/H_kv queries
    x = x + down_proj(silu(gate_proj(n)) * up_proj(n))           # n = norm(x)
    logits = norm(x) @ lm_head.T                                 # tied to embed_tokens or not

The variants differ only in flags: Qwen3 adds the per-head q/k norm (and has optional biases on
all attention projections, ``attention_bias``), Qwen2/2.5 always bias q, k and v, Llama has
optional ``attention_bias`` and ``mlp_bias``. HF checkpoints use exactly our parameter names
under a ``model.`` prefix, so loading is a rename (no copies).

References: Qwen3 technical report (2025); Qwen2 technical report (2024); Touvron et al. 2023,
"LLaMA"; Su et al. 2021, "RoFormer"; Shazeer 2020, "GLU Variants Improve Transformer";
transformers' modeling_qwen3.py, modeling_qwen2.py, modeling_llama.py.
Non-goals: RoPE scaling (YaRN, llama3, dynamic NTK), sliding-window attention, MoE variants.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._tensor import Tensor
from .transformer import TransformerConfig, hf_dtype, hf_token_ids


def _rope_theta(hf: dict) -> float:
    """``rope_theta`` sits at the top level or, since transformers 5, inside ``rope_parameters``."""
    params = hf.get("rope_parameters") or {}
    scaling = hf.get("rope_scaling") or {}
    kind = params.get("rope_type") or scaling.get("rope_type") or scaling.get("type") or "default"
    if kind != "default":
        raise ValueError(f"{hf.get('model_type')}: RoPE scaling {kind!r} is not supported")
    return float(hf.get("rope_theta") or params.get("rope_theta") or 10000.0)


def config_from_hf(hf: dict) -> TransformerConfig:
    arch = hf["model_type"]
    if hf.get("use_sliding_window"):
        raise ValueError(f"{arch}: sliding-window attention is not supported")
    act = hf.get("hidden_act", "silu")
    if act != "silu":
        raise ValueError(f"{arch}: hidden_act {act!r} is not supported (only SwiGLU with silu)")
    C, H = hf["hidden_size"], hf["num_attention_heads"]
    attention_bias = bool(hf.get("attention_bias", False))
    return TransformerConfig(
        arch=arch,
        vocab_size=hf["vocab_size"],
        dim=C,
        n_layers=hf["num_hidden_layers"],
        n_heads=H,
        n_kv_heads=hf.get("num_key_value_heads") or H,
        head_dim=hf.get("head_dim") or C // H,
        ffn_dim=hf["intermediate_size"],
        max_seq_len=hf.get("max_position_embeddings", 2048),
        norm="rmsnorm",
        norm_eps=hf.get("rms_norm_eps", 1e-6),
        mlp="swiglu",
        positions="rope",
        rope_theta=_rope_theta(hf),
        qkv_bias=attention_bias or arch == "qwen2",
        o_bias=attention_bias,
        mlp_bias=bool(hf.get("mlp_bias", False)),
        qk_norm=arch == "qwen3",
        tie_embeddings=bool(hf.get("tie_word_embeddings", False)),
        dtype=hf_dtype(hf),
        bos_token_id=hf.get("bos_token_id"),
        eos_token_ids=hf_token_ids(hf.get("eos_token_id")),
        hf=hf,
    )


def weights_from_hf(
    tensors: Mapping[str, Tensor], cfg: TransformerConfig, metadata: Mapping[str, Any]
) -> dict[str, Tensor]:
    """HF tensors -> the Transformer's parameter names: drop the ``model.`` prefix, tie lm_head.
    (``metadata`` carries no layout notes for these models: their projections are nn.Linear.)"""
    out = {k.removeprefix("model."): t for k, t in tensors.items() if not k.endswith("rotary_emb.inv_freq")}
    if cfg.tie_embeddings:
        out["lm_head.weight"] = out["embed_tokens.weight"]
    return out
