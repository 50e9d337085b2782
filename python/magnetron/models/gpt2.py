"""GPT-2 on the shared transformer blocks.

GPT-2 is a pre-norm decoder with learned absolute position embeddings, LayerNorm (with bias),
biases on every projection, a 4x MLP with tanh-approximated GELU, multi-head attention (H_kv = H)
and an lm_head tied to the token embedding:

    x = wte[ids] + wpe[pos:pos+T]                   # (B, T, C)
    x = x + c_proj(attn(c_attn(ln_1(x))))           # c_attn: (C -> 3C) fused q, k, v
    x = x + mlp.c_proj(gelu_tanh(mlp.c_fc(ln_2(x))))
    logits = ln_f(x) @ wte.T                        # (B, T, V)

Checkpoint quirks handled here: HF stores the projections as ``Conv1D`` with weights laid out
(in, out), the transpose of ``nn.Linear``; ``c_attn`` fuses q, k and v along the output dim; keys
may or may not carry a ``transformer.`` prefix; ``attn.bias`` / ``attn.masked_bias`` are causal
mask buffers, not weights. Every mapped weight is a view of the checkpoint tensor (no copy).

A one-token decode step streams every weight from memory once, and ``x @ W`` over a (in, out)
weight streams it ~25% slower than ``x @ W.T`` over (out, in) (each row of W updates the whole
output row in L1, and those stores hold back the loads: Zen 5, 2 threads, 768x3072 float32,
50-57 against 73-78 GB/s). So ``magnetron convert`` writes the projections transposed, in the
``nn.Linear`` layout, and notes it in the metadata (LAYOUT_KEY); such a .mag maps them as they
are. A Hugging Face folder loaded directly keeps its (in, out) layout, mapped, not copied.

References: Radford et al. 2019, "Language Models are Unsupervised Multitask Learners";
transformers' modeling_gpt2.py; Karpathy's nanoGPT model.py.
Non-goals: ``scale_attn_by_inverse_layer_idx`` (no released GPT-2 uses it), cross-attention.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from .._tensor import Tensor
from .transformer import TransformerConfig, hf_dtype, hf_token_ids

LAYOUT_KEY = "gpt2.projections"  # .mag metadata: "out_in" when the Conv1D weights are stored transposed
_CONV1D = re.compile(r"(transformer\.)?h\.\d+\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight")


def conv1d_weights(metadata: Mapping[str, Any], names: Iterable[str]) -> set[str]:
    """The (in, out) projection weights an importer should store transposed: those of a GPT-2
    checkpoint not already converted (empty for other models)."""
    config = json.loads(metadata.get("model.config", "{}"))
    if config.get("model_type") != "gpt2" or metadata.get(LAYOUT_KEY) == "out_in":
        return set()
    return {n for n in names if _CONV1D.fullmatch(n)}


def config_from_hf(hf: dict) -> TransformerConfig:
    if hf.get("scale_attn_by_inverse_layer_idx"):
        raise ValueError("gpt2: scale_attn_by_inverse_layer_idx is not supported")
    act = hf.get("activation_function", "gelu_new")
    if act not in ("gelu_new", "gelu_pytorch_tanh"):
        raise ValueError(f"gpt2: activation_function {act!r} is not supported (only the tanh GELU)")
    C, H = hf["n_embd"], hf["n_head"]
    return TransformerConfig(
        arch="gpt2",
        vocab_size=hf["vocab_size"],
        dim=C,
        n_layers=hf["n_layer"],
        n_heads=H,
        n_kv_heads=H,
        head_dim=C // H,
        ffn_dim=hf.get("n_inner") or 4 * C,
        max_seq_len=hf["n_positions"],
        norm="layernorm",
        norm_eps=hf.get("layer_norm_epsilon", 1e-5),
        mlp="gelu",
        positions="learned",
        qkv_bias=True,
        o_bias=True,
        mlp_bias=True,
        tie_embeddings=True,
        fused_qkv=True,
        dtype=hf_dtype(hf),
        bos_token_id=hf.get("bos_token_id"),
        eos_token_ids=hf_token_ids(hf.get("eos_token_id")),
        hf=hf,
    )


def weights_from_hf(
    tensors: Mapping[str, Tensor], cfg: TransformerConfig, metadata: Mapping[str, Any]
) -> dict[str, Tensor]:
    """HF GPT-2 tensors -> the Transformer's parameter names (views, no copies)."""
    linear_layout = metadata.get(LAYOUT_KEY) == "out_in"  # written by magnetron convert
    w = {k.removeprefix("transformer."): t for k, t in tensors.items()}
    out = {
        "embed_tokens.weight": w["wte.weight"],
        "embed_positions.weight": w["wpe.weight"],
        "norm.weight": w["ln_f.weight"],
        "norm.bias": w["ln_f.bias"],
        "lm_head.weight": w["wte.weight"],  # tied
    }
    for i in range(cfg.n_layers):
        h, o = f"h.{i}.", f"layers.{i}."
        for src, dst in (
            ("attn.c_attn", "self_attn.qkv_proj"),  # (C, 3C): q, k, v side by side
            ("attn.c_proj", "self_attn.o_proj"),
            ("mlp.c_fc", "mlp.up_proj"),
            ("mlp.c_proj", "mlp.down_proj"),
        ):
            weight = w[h + src + ".weight"]
            out[o + dst + ".weight"] = weight if linear_layout else weight.T  # Conv1D (in, out) -> (out, in)
            out[o + dst + ".bias"] = w[h + src + ".bias"]
        for src, dst in (("ln_1", "input_layernorm"), ("ln_2", "post_attention_layernorm")):
            out[o + dst + ".weight"] = w[h + src + ".weight"]
            out[o + dst + ".bias"] = w[h + src + ".bias"]
    return out
