"""Autoregressive generation: prefill, the decode loop, and text streaming.

``stream_tokens`` runs the prompt through the KV cache in one batched forward (reusing the
longest prefix the cache already holds), then feeds one sampled token per step through a
``DecodeGraph``: the one-token forward captured once and replayed. ``stream_text``
turns those ids into text pieces that never split a UTF-8 character and that stop at a stop
string; the concatenated pieces equal ``tokenizer.decode`` of the same ids, cut at the stop.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import dtype as _dt
from .._grad_mode import no_grad
from .._tensor import Tensor
from ..graph import Graph
from .kv_cache import KVCache
from .sampling import Sampler
from .transformer import Transformer

if TYPE_CHECKING:
    from tokenizers import Tokenizer


@dataclass
class GenerationStats:
    """Counts and timings of the last generation (what the examples print as tokens/s)."""

    prompt_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens whose keys/values were reused from the cache
    prefill_s: float = 0.0
    new_tokens: int = 0
    decode_s: float = 0.0  # time of the forwards after the first sampled token

    @property
    def prefill_tok_s(self) -> float:
        return (self.prompt_tokens - self.cached_tokens) / self.prefill_s if self.prefill_s else 0.0

    @property
    def decode_tok_s(self) -> float:
        return (self.new_tokens - 1) / self.decode_s if self.decode_s and self.new_tokens > 1 else 0.0


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class DecodeGraph:
    """The one-token forward of the decode loop, captured as a ``Graph`` on its first call and
    replayed after that: a replay is the ~25 kernels per layer alone, without the Python and the
    op front ends around them, which cost a tenth of a decode step.

    The token id and its position live in two tensors that the captured forward reads (the
    embedding lookup, the RoPE angles, the KV-cache write and the attention's causal offset), so a
    replay only rewrites them. A cache that grows (new buffers) is captured again.
    """

    def __init__(self, net: Transformer, cache: KVCache) -> None:
        self.net, self.cache = net, cache
        self.ids = Tensor.zeros(1, 1, dtype=_dt.int64)  # (B=1, T=1)
        self.positions = Tensor.zeros(1, dtype=_dt.int64)  # (T=1,)
        self.graph = Graph()
        self.logits: Tensor | None = None  # (V,) float32, rewritten by every replay
        self.buffers: list[Tensor] = []  # the cache buffers the capture writes

    def __call__(self, token: int) -> Tensor:
        """Logits (V,) after ``token`` at the cache's next position (valid until the next call)."""
        cache, pos = self.cache, self.cache.length
        self.ids.fill_(token)
        self.positions.fill_(pos)
        if pos + 1 > self.net.config.max_seq_len:  # the forward's own checks, which a replay skips
            raise ValueError(f"{self.net.config.arch}: {pos + 1} positions exceed the context length")
        cache.reserve(pos + 1)
        if self.logits is not None and all(a is b for a, b in zip(self.buffers, cache.k + cache.v)):
            self.graph.replay()
            cache.length = pos + 1
            return self.logits
        with no_grad(), self.graph.capture():
            self.logits = self.net(self.ids, cache, positions=self.positions)[0, 0]
        self.buffers = cache.k + cache.v
        return self.logits


def stream_tokens(
    net: Transformer,
    cache: KVCache,
    cached_ids: list[int],
    prompt: list[int],
    sampler: Sampler,
    max_tokens: int,
    eos_ids: Iterable[int],
    stats: GenerationStats,
) -> Iterator[int]:
    """Sampled token ids after ``prompt``, ending after an EOS id, ``max_tokens`` or a full context.

    ``cached_ids`` lists the ids whose keys/values the cache holds; it is kept in step with it.
    """
    if not prompt:
        raise ValueError("generate: the prompt is empty (give at least one token)")
    eos = set(eos_ids)
    # At least the last prompt token must run: its logits choose the first new token.
    reuse = min(common_prefix(cached_ids, prompt), len(prompt) - 1)
    cache.truncate(reuse)
    del cached_ids[reuse:]
    max_len = net.config.max_seq_len
    cache.reserve(min(len(prompt) + max_tokens, max_len))
    stats.prompt_tokens, stats.cached_tokens = len(prompt), reuse

    t0 = time.perf_counter()
    fresh = prompt[reuse:]
    logits = net(Tensor([fresh], dtype=_dt.int64), cache, last_only=True)[0, 0]  # (V,)
    cached_ids.extend(fresh)
    stats.prefill_s = time.perf_counter() - t0
    context = list(prompt)
    step = DecodeGraph(net, cache)
    t0 = time.perf_counter()
    for n in range(1, max_tokens + 1):
        token = sampler(logits, context)
        stats.new_tokens, stats.decode_s = n, time.perf_counter() - t0
        yield token
        context.append(token)
        if token in eos or n == max_tokens or len(context) >= max_len:
            return
        logits = step(token)  # (V,)
        cached_ids.append(token)


class IncrementalDecoder:
    """Token ids -> text pieces, O(1) per token.

    Byte-level BPE tokens can end inside a UTF-8 character, and some decoders treat the first
    token specially (a leading space), so a token's text is not ``decode([id])``. We decode a
    short window twice: the tokens already emitted since ``prefix`` and the same plus the new
    ones, and emit the difference once it no longer ends in an incomplete character (U+FFFD).
    The window restarts after every emission, so its length stays bounded.
    """

    def __init__(self, tokenizer: Tokenizer, skip_special_tokens: bool = True) -> None:
        self.tokenizer, self.skip = tokenizer, skip_special_tokens
        self.ids: list[int] = []
        self.prefix = 0  # window start: tokens before it are done with
        self.read = 0  # tokens up to here have been emitted

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=self.skip)

    def step(self, token: int) -> str:
        self.ids.append(token)
        done = self._decode(self.ids[self.prefix : self.read])
        text = self._decode(self.ids[self.prefix :])
        if len(text) > len(done) and not text.endswith("\ufffd"):
            self.prefix, self.read = self.read, len(self.ids)
            return text[len(done) :]
        return ""

    def flush(self) -> str:
        """Whatever is still held back (an incomplete character at the very end decodes as U+FFFD)."""
        done = self._decode(self.ids[self.prefix : self.read])
        text = self._decode(self.ids[self.prefix :])
        self.prefix = self.read = len(self.ids)
        return text[len(done) :]


class StopStrings:
    """Cuts a stream of text pieces at the first stop string.

    Text that could be the start of a stop string is held back until the next piece decides it,
    so nothing of a stop string is ever emitted. At most (longest stop - 1) characters are held.
    """

    def __init__(self, stops: Iterable[str]) -> None:
        self.stops = [s for s in stops if s]
        self.pending = ""
        self.stopped = False

    def feed(self, piece: str) -> str:
        text = self.pending + piece
        hits = [i for i in (text.find(s) for s in self.stops) if i >= 0]
        if hits:
            self.pending, self.stopped = "", True
            return text[: min(hits)]
        hold = max((k for s in self.stops for k in range(1, len(s)) if text.endswith(s[:k])), default=0)
        self.pending = text[len(text) - hold :] if hold else ""
        return text[: len(text) - hold]

    def flush(self) -> str:
        text, self.pending = self.pending, ""
        return text


def stream_text(tokenizer: Tokenizer, tokens: Iterator[int], stop: Iterable[str] = ()) -> Iterator[str]:
    """Text pieces for a stream of token ids; stops early (closing ``tokens``) at a stop string."""
    decoder, stops = IncrementalDecoder(tokenizer), StopStrings(stop)
    try:
        for token in tokens:
            piece = stops.feed(decoder.step(token))
            if piece:
                yield piece
            if stops.stopped:
                return
        tail = stops.feed(decoder.flush())
        tail += "" if stops.stopped else stops.flush()
        if tail:
            yield tail
    finally:
        close = getattr(tokens, "close", None)
        if close is not None:
            close()
