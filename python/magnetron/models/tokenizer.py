"""Tokenizers through the Hugging Face ``tokenizers`` library.

A checkpoint carries a ``tokenizer.json`` (Qwen, Llama, newer GPT-2 exports; in ``.mag`` and GGUF
imports as metadata) or GPT-2's original pair ``vocab.json`` + ``merges.txt``, from which we
assemble the byte-level BPE tokenizer that ``tokenizer.json`` would describe.
"""

from __future__ import annotations

import json
import os
from typing import Any

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors


def from_json(text: str) -> Tokenizer:
    """A tokenizer from the text of a ``tokenizer.json``."""
    return Tokenizer.from_str(text)


def from_vocab_merges(vocab_path: str, merges_path: str, special_tokens: list[str] | None = None) -> Tokenizer:
    """GPT-2's byte-level BPE from ``vocab.json`` and ``merges.txt`` (``<|endoftext|>`` is its one special token)."""
    tok = Tokenizer(models.BPE.from_file(vocab_path, merges_path))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    specials = ["<|endoftext|>"] if special_tokens is None else special_tokens
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    return tok


def load_tokenizer(folder: str) -> Tokenizer | None:
    """GPT-2's tokenizer from ``vocab.json`` + ``merges.txt`` in a folder, or None when they are missing."""
    vocab, merges = os.path.join(folder, "vocab.json"), os.path.join(folder, "merges.txt")
    if os.path.isfile(vocab) and os.path.isfile(merges):
        return from_vocab_merges(vocab, merges, _special_tokens(folder))
    return None


def _special_tokens(folder: str) -> list[str] | None:
    """Special tokens named by ``tokenizer_config.json`` / ``special_tokens_map.json``, if any."""
    found: list[str] = []
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        cfg = read_json(os.path.join(folder, name))
        for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
            tok = cfg.get(key)
            text = tok.get("content") if isinstance(tok, dict) else tok
            if isinstance(text, str) and text not in found:
                found.append(text)
    return found or None


def read_json(path: str) -> dict[str, Any]:
    """The object in a JSON file, or {} when the file does not exist."""
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)
