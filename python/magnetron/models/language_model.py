"""``models.load`` and ``LanguageModel``: a transformer with its tokenizer, chat template and KV cache."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tokenizers import Tokenizer

from .. import _grad_mode
from .. import dtype as _dt
from .._tensor import Tensor
from ..context import context
from ..dtype import DType
from . import chat_template as _chat
from . import gguf, gpt2, qwen3
from .generate import GenerationStats, stream_text, stream_tokens
from .kv_cache import KVCache
from .sampling import Sampler, SamplingParams
from .tokenizer import from_json
from .transformer import Transformer, TransformerConfig, hf_token_ids

ARCHITECTURES = {"gpt2": gpt2, "qwen3": qwen3, "qwen2": qwen3, "llama": qwen3}


class LanguageModel:
    """A loaded model: ``model(ids)`` for logits, ``generate`` and ``chat`` for text (API.md section 11)."""

    def __init__(
        self,
        net: Transformer,
        tokenizer: Tokenizer | None = None,
        chat_template: str | None = None,
        eos_token_ids: Sequence[int] = (),
        special_tokens: dict[str, str] | None = None,
    ) -> None:
        self.net = net
        self.config: TransformerConfig = net.config
        self.tokenizer = tokenizer
        self.chat_template = chat_template
        self.eos_token_ids = list(dict.fromkeys(eos_token_ids))
        self.special_tokens = special_tokens or {}
        self.stats = GenerationStats()
        self._cache: KVCache | None = None
        self._cached_ids: list[int] = []  # the ids whose keys/values the cache holds
        self._generation = 0  # bumped per generation, so an abandoned stream cannot touch a newer cache

    @property
    def dtype(self) -> DType:
        return self.net.dtype

    def __call__(self, ids: Tensor | Sequence[int] | Sequence[Sequence[int]]) -> Tensor:
        """float32 logits (T, V) for a list / 1-D tensor of ids, (B, T, V) for a 2-D batch (a full forward)."""
        t = ids if isinstance(ids, Tensor) else Tensor(list(ids), dtype=_dt.int64)
        if t.dtype.is_floating_point or t.dtype == _dt.boolean:
            raise TypeError(f"model: token ids must be integers, got {t.dtype}")
        if t.rank not in (1, 2) or t.numel == 0:
            raise ValueError(f"model: ids must be a non-empty 1-D sequence or 2-D batch, got shape {t.shape}")
        V = self.config.vocab_size
        if t.min().item() < 0 or t.max().item() >= V:
            raise ValueError(f"model: token ids must lie in [0, {V}), got [{t.min().item()}, {t.max().item()}]")
        with _grad_mode.no_grad():
            logits = self.net(t.cast(_dt.int64).reshape(-1, t.shape[-1]))  # (B, T, V)
        return logits[0] if t.rank == 1 else logits

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return self._need_tokenizer().encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self._need_tokenizer().decode(list(ids), skip_special_tokens=skip_special_tokens)

    def _need_tokenizer(self) -> Tokenizer:
        if self.tokenizer is None:
            raise ValueError(f"{self.config.arch}: this model has no tokenizer: pass token ids instead of text")
        return self.tokenizer

    def generate(
        self,
        prompt_or_ids: str | Sequence[int],
        max_tokens: int = 128,
        temperature: float = 1.0,
        top_k: int = 0,
        top_p: float = 1.0,
        min_p: float = 0.0,
        repetition_penalty: float = 1.0,
        stop: str | Sequence[str] | None = None,
        seed: int | None = None,
        stream: bool = False,
    ) -> str | Iterator[str]:
        """The completion text of a prompt (text or token ids), or with ``stream=True`` an iterator of
        text pieces. ``temperature=0`` is greedy. Generation ends at an EOS id, a stop string (not
        included in the text), ``max_tokens`` new tokens or the end of the context."""
        if isinstance(prompt_or_ids, str):
            ids = self.encode(prompt_or_ids)
        else:
            ids = [int(i) for i in prompt_or_ids]
        params = SamplingParams(temperature, top_k, top_p, min_p, repetition_penalty, seed)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"generate: max_tokens must be an int >= 1, got {max_tokens!r}")
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        pieces = stream_text(self._need_tokenizer(), self.generate_ids(ids, max_tokens, params), stops)
        return pieces if stream else "".join(pieces)

    def generate_ids(self, ids: list[int], max_tokens: int, params: SamplingParams) -> Iterator[int]:
        """New token ids after ``ids`` (the token-level form of ``generate``)."""
        V = self.config.vocab_size
        if any(not 0 <= i < V for i in ids):
            raise ValueError(f"generate: prompt token ids must lie in [0, {V})")
        self._generation += 1
        return self._run(self._generation, ids, max_tokens, Sampler(params))

    def _run(self, generation: int, ids: list[int], max_tokens: int, sampler: Sampler) -> Iterator[int]:
        if self._cache is None:
            self._cache = self.net.new_cache(len(ids) + max_tokens)
        self.stats = GenerationStats()
        tokens = stream_tokens(
            self.net, self._cache, self._cached_ids, ids, sampler, max_tokens, self.eos_token_ids, self.stats
        )
        while True:  # grad mode is thread state: hold it off only while our code runs, not across yields
            if generation != self._generation:
                raise RuntimeError("generate: a newer generation on this model replaced this stream")
            with _grad_mode.no_grad():
                token = next(tokens, None)
            if token is None:
                return
            yield token

    def chat(
        self, messages: list[dict[str, Any]], enable_thinking: bool | None = None, **options: Any
    ) -> str | Iterator[str]:
        """The assistant's reply to OpenAI-style ``messages``, rendered with the model's chat template.

        Takes ``generate``'s options. ``enable_thinking`` reaches templates that read it (Qwen3).
        The KV cache is reused across turns for the part of the prompt that did not change.
        """
        if self.chat_template is None:
            raise ValueError(f"{self.config.arch}: this model has no chat template; use generate() with a prompt")
        extra = {} if enable_thinking is None else {"enable_thinking": enable_thinking}
        text = _chat.render(self.chat_template, messages, True, self.special_tokens, **extra)
        return self.generate(self.encode(text, add_special_tokens=False), **options)


def load(source: str | os.PathLike, dtype: DType | str | None = None, num_threads: int | None = None) -> LanguageModel:
    """A language model from a Hugging Face checkpoint folder, a ``.safetensors`` file (config.json
    beside it), a ``.gguf`` file, a ``.mag`` snapshot or the name of a pulled model (``models.pull``).
    Weights in safetensors and .mag files are mapped, not copied. ``dtype`` casts the weights
    (default: as stored; quantised GGUF tensors arrive as bfloat16); ``num_threads`` sets
    ``mag.context.num_threads``."""
    from ..io.convert import open_source
    from .registry import resolve

    if num_threads is not None:
        context.num_threads = num_threads
    src = open_source(resolve(source))
    meta = src.metadata
    tensors = {s.name: src.tensor(s) for s in src.specs}
    if gguf.is_gguf(meta):
        hf = gguf.config_from_gguf(meta, tensors)
        tensors = gguf.hf_names(tensors)
    elif "model.config" in meta:
        hf = json.loads(meta["model.config"])
    else:
        raise ValueError(f"models.load: {os.fspath(source)!r} has no model config (config.json or .mag model.config)")
    net = build(hf, tensors, dtype, meta)
    tokenizer = from_json(meta["tokenizer.json"]) if "tokenizer.json" in meta else None
    tok_cfg = json.loads(meta.get("tokenizer.config", "{}"))
    gen_cfg = json.loads(meta.get("model.generation_config", "{}"))
    specials = special_tokens(tok_cfg)
    eos = net.config.eos_token_ids + hf_token_ids(gen_cfg.get("eos_token_id"))
    if tokenizer is not None and tokenizer.token_to_id(specials.get("eos_token", "")) is not None:
        eos.append(tokenizer.token_to_id(specials["eos_token"]))
    return LanguageModel(net, tokenizer, meta.get("tokenizer.chat_template"), eos, specials)


def build(
    hf: dict, tensors: dict[str, Tensor], dtype: DType | str | None = None, metadata: Mapping[str, Any] | None = None
) -> Transformer:
    """The Transformer for an HF config dict with its weights (cast to ``dtype`` when given);
    ``metadata`` is the checkpoint's (an importer's notes on how it stored the weights)."""
    arch = hf.get("model_type")
    if arch not in ARCHITECTURES:
        raise ValueError(f"models.load: unsupported model_type {arch!r} (supported: {', '.join(ARCHITECTURES)})")
    module = ARCHITECTURES[arch]
    cfg = module.config_from_hf(hf)
    target = _dt.as_dtype(dtype, "models.load") if dtype is not None else None
    if target is not None and target not in (_dt.float32, _dt.bfloat16, _dt.float16):
        raise ValueError(f"models.load: dtype must be float32, bfloat16 or float16, got {target}")
    try:
        weights = module.weights_from_hf(tensors, cfg, metadata or {})
    except KeyError as e:
        raise ValueError(f"models.load: the {arch} checkpoint lacks tensor {e.args[0]!r}") from None
    if target is None:  # as stored: the dtype of the embedding (config.json's dtype can be stale)
        target = weights["embed_tokens.weight"].dtype
    cast: dict[int, Tensor] = {}  # by id, so tied weights stay one tensor
    for name, t in weights.items():
        if t.dtype != target:
            if id(t) not in cast:
                cast[id(t)] = t.cast(target)
            weights[name] = cast[id(t)]
    net = Transformer(cfg, target)
    net.load_state_dict(weights, assign=True)
    return net.eval()


def special_tokens(tok_cfg: dict[str, Any]) -> dict[str, str]:
    """bos_token, eos_token, ... as text, for chat templates that mention them."""
    out = {}
    for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
        v = tok_cfg.get(key)
        v = v.get("content") if isinstance(v, dict) else v
        if isinstance(v, str):
            out[key] = v
    return out
