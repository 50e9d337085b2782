"""``magnetron.models``: GPT-2, Qwen3 and the Llama family, with KV-cached generation (API.md section 11).

    from magnetron import models
    models.pull("smollm2-135m-instruct")             # once: into ~/.cache/magnetron/models
    model = models.load("smollm2-135m-instruct")     # or a HF folder, .safetensors, .gguf or .mag
    logits = model([15496, 995])                     # (T, V) float32
    for piece in model.generate("Hello", max_tokens=32, temperature=0, stream=True):
        print(piece, end="")

Needs the ``tokenizers`` and ``jinja2`` packages (tokenizers and chat templates). The names below
are imported on first use, so ``models.registry`` (the model cache, ``pull``) works without them
and the command line starts fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .kv_cache import KVCache
    from .language_model import LanguageModel, load
    from .registry import pull
    from .sampling import SamplingParams
    from .transformer import Transformer, TransformerConfig

_HOME = {
    "load": "language_model",
    "LanguageModel": "language_model",
    "pull": "registry",
    "Transformer": "transformer",
    "TransformerConfig": "transformer",
    "KVCache": "kv_cache",
    "SamplingParams": "sampling",
}
__all__ = ["load", "pull", "LanguageModel", "Transformer", "TransformerConfig", "KVCache", "SamplingParams"]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'magnetron.models' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value  # once found, a plain attribute
    return value
