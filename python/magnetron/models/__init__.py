"""``magnetron.models``: GPT-2, Qwen3 and the Llama family, with KV-cached generation (API.md section 11).

    from magnetron import models
    model = models.load("path/to/checkpoint")       # a HF folder or .safetensors file
    logits = model([15496, 995])                     # (T, V) float32
    for piece in model.generate("Hello", max_tokens=32, temperature=0, stream=True):
        print(piece, end="")

Needs the ``tokenizers`` and ``jinja2`` packages (tokenizers and chat templates).
"""

from .kv_cache import KVCache
from .language_model import LanguageModel, load
from .sampling import SamplingParams
from .transformer import Transformer, TransformerConfig

__all__ = ["load", "LanguageModel", "Transformer", "TransformerConfig", "KVCache", "SamplingParams"]
