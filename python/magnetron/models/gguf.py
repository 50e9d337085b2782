"""Models imported from GGUF: llama.cpp's config keys and tensor names -> Hugging Face's.

The GGUF importer (magnetron.io.gguf) keeps GGUF metadata under ``gguf.<key>`` and the tensor
names as llama.cpp writes them, already dequantised and with the Llama Q/K row permutation
undone. Here we rebuild the ``config.json`` fields our architectures read and rename the tensors
(``blk.3.attn_q.weight`` -> ``model.layers.3.self_attn.q_proj.weight``), so GGUF models load
through the same code as Hugging Face checkpoints. Covered: the Llama family, Qwen2 and Qwen3.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._tensor import Tensor

_LAYER = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm",
    "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_GLOBAL = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
ARCHITECTURES = ("llama", "qwen2", "qwen3")


def is_gguf(meta: Mapping[str, Any]) -> bool:
    return "gguf.general.architecture" in meta


def config_from_gguf(meta: Mapping[str, Any], tensors: Mapping[str, Tensor]) -> dict[str, Any]:
    """The HF config.json fields of a GGUF model, from its ``gguf.<arch>.*`` metadata."""
    arch = meta["gguf.general.architecture"]
    if arch not in ARCHITECTURES:
        raise ValueError(f"models.load: GGUF architecture {arch!r} is not supported ({', '.join(ARCHITECTURES)})")

    def key(name: str, default: Any = None) -> Any:
        value = meta.get(f"gguf.{arch}.{name}", default)
        if value is None:
            raise ValueError(f"models.load: the GGUF metadata lacks {arch}.{name}")
        return value

    dim, heads = int(key("embedding_length")), int(key("attention.head_count"))
    vocab, width = tensors["token_embd.weight"].shape
    return {
        "model_type": arch,
        "vocab_size": vocab,
        "hidden_size": dim,
        "intermediate_size": int(key("feed_forward_length")),
        "num_hidden_layers": int(key("block_count")),
        "num_attention_heads": heads,
        "num_key_value_heads": int(key("attention.head_count_kv", heads)),
        "head_dim": int(key("attention.key_length", dim // heads)),
        "max_position_embeddings": int(key("context_length")),
        "rms_norm_eps": float(key("attention.layer_norm_rms_epsilon")),
        "rope_theta": float(key("rope.freq_base", 10000.0)),
        "tie_word_embeddings": "output.weight" not in tensors,
        "attention_bias": "blk.0.attn_output.bias" in tensors,  # Qwen2's q/k/v biases come with the arch
        "mlp_bias": "blk.0.ffn_up.bias" in tensors,
        "bos_token_id": meta.get("gguf.tokenizer.ggml.bos_token_id"),
        "eos_token_id": meta.get("gguf.tokenizer.ggml.eos_token_id"),
        "dtype": tensors["token_embd.weight"].dtype.name,
    }


def hf_names(tensors: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """llama.cpp tensor names -> Hugging Face names (unknown names are kept, and then reported)."""
    out = {}
    for name, t in tensors.items():
        base, _, suffix = name.rpartition(".")
        m = re.fullmatch(r"blk\.(\d+)\.(\w+)", base)
        if m and m.group(2) in _LAYER:
            out[f"model.layers.{m.group(1)}.{_LAYER[m.group(2)]}.{suffix}"] = t
        elif base in _GLOBAL:
            out[f"{_GLOBAL[base]}.{suffix}"] = t
        else:
            out[name] = t
    return out
