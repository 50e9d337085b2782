"""A GGUF tokenizer (``tokenizer.ggml.*``) as a Hugging Face ``tokenizer.json``.

Two GGUF tokenizer models exist in practice: ``gpt2`` (byte-level BPE with merges: GPT-2,
Llama 3, Qwen) and ``llama`` (SentencePiece BPE with scores and byte fallback: Llama 1/2,
Mistral). The first maps directly onto a ``tokenizers`` BPE model; for the second the merges
are rebuilt from the scores the way Hugging Face converts SentencePiece models: every split of
a piece into two known pieces is a merge, ranked by the piece's score.
"""

from __future__ import annotations

import json
from typing import Any

from .._C import FormatError

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = range(1, 7)

# tokenizer.ggml.pre -> the split regex of the original Hugging Face pre-tokenizer
_WORDS = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|"
_REST = r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
_LLAMA3 = _WORDS + r"\p{N}{1,3}" + _REST  # digits in groups of up to three
_QWEN2 = _WORDS + r"\p{N}" + _REST  # single digits
_SPLITS = {"llama-bpe": _LLAMA3, "llama3": _LLAMA3, "qwen2": _QWEN2}
_SPECIAL_IDS = {"bos": "bos_token_id", "eos": "eos_token_id", "unk": "unknown_token_id", "pad": "padding_token_id"}


def _byte_level_pre(pre: str | None) -> dict[str, Any]:
    split = _SPLITS.get(pre or "")
    if split is None:  # GPT-2's own regex, built into the ByteLevel pre-tokenizer
        return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": split}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        ],
    }


def _spm_merges(tokens: list[str], scores: list[float], types: list[int]) -> list[list[str]]:
    vocab = {t: i for i, t in enumerate(tokens)}
    ranked = []
    for i, piece in enumerate(tokens):
        if types[i] != NORMAL or len(piece) < 2:
            continue
        splits = [(piece[:k], piece[k:]) for k in range(1, len(piece)) if piece[:k] in vocab and piece[k:] in vocab]
        splits.sort(key=lambda p: (vocab[p[0]], vocab[p[1]]))
        ranked += [(scores[i], left, right) for left, right in splits]
    ranked.sort(key=lambda m: -m[0])  # stable: ties keep vocabulary order
    return [[left, right] for _, left, right in ranked]


def _post_processor(special: dict[str, int | None], tokens: list[str], add_bos: bool, add_eos: bool) -> Any:
    wanted = [i for i, on in ((special["bos"], add_bos), (special["eos"], add_eos)) if on and i is not None]
    if not wanted:
        return None

    def marker(i: int | None, on: bool) -> list[dict[str, Any]]:
        return [{"SpecialToken": {"id": tokens[i], "type_id": 0}}] if on and i is not None else []

    bos, eos = marker(special["bos"], add_bos), marker(special["eos"], add_eos)
    seq = [{"Sequence": {"id": "A", "type_id": 0}}]
    pair = bos + seq + eos + bos + [{"Sequence": {"id": "B", "type_id": 1}}] + eos
    return {
        "type": "TemplateProcessing",
        "single": bos + seq + eos,
        "pair": pair,
        "special_tokens": {tokens[i]: {"id": tokens[i], "ids": [i], "tokens": [tokens[i]]} for i in wanted},
    }


def build_tokenizer_json(kv: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(tokenizer.json, tokenizer_config.json) dicts, or None when there is no supported tokenizer."""
    model, tokens = kv.get("tokenizer.ggml.model"), kv.get("tokenizer.ggml.tokens")
    if model not in ("gpt2", "llama") or not isinstance(tokens, list) or not tokens:
        return None
    n = len(tokens)
    types = [int(t) for t in kv.get("tokenizer.ggml.token_type", [NORMAL] * n)]
    if len(types) != n:
        raise FormatError(f"GGUF tokenizer: {len(types)} token types for {n} tokens")
    special: dict[str, int | None] = {}
    for name, key in _SPECIAL_IDS.items():
        i = kv.get(f"tokenizer.ggml.{key}")
        special[name] = int(i) if isinstance(i, int) and 0 <= i < n else None
    added = [
        {"id": i, "content": tokens[i], "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": types[i] != USER_DEFINED}
        for i in range(n) if types[i] in (UNKNOWN, CONTROL, USER_DEFINED)
    ]  # fmt: skip
    vocab = {t: i for i, t in enumerate(tokens)}
    bpe: dict[str, Any] = {"type": "BPE", "dropout": None, "continuing_subword_prefix": None,
                           "end_of_word_suffix": None, "ignore_merges": False, "vocab": vocab}  # fmt: skip
    spm = model == "llama"
    add_bos = bool(kv.get("tokenizer.ggml.add_bos_token", spm))
    add_eos = bool(kv.get("tokenizer.ggml.add_eos_token", False))
    if spm:
        scores = [float(s) for s in kv.get("tokenizer.ggml.scores", [0.0] * n)]
        unk = tokens[special["unk"]] if special["unk"] is not None else None
        bpe |= {"unk_token": unk, "fuse_unk": True, "byte_fallback": True, "merges": _spm_merges(tokens, scores, types)}
        normalizer: Any = {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}  # fmt: skip
        pre, decoder = None, {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}  # fmt: skip
    else:
        merges = [m.split(" ") for m in kv.get("tokenizer.ggml.merges", [])]
        if any(len(m) != 2 for m in merges):
            raise FormatError("GGUF tokenizer: a merge is not two tokens separated by one space")
        bpe |= {"unk_token": None, "fuse_unk": False, "byte_fallback": False, "merges": merges}
        normalizer, pre = None, _byte_level_pre(kv.get("tokenizer.ggml.pre"))
        decoder = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": normalizer,
        "pre_tokenizer": pre, "post_processor": _post_processor(special, tokens, add_bos, add_eos),
        "decoder": decoder, "model": bpe,
    }  # fmt: skip
    config: dict[str, Any] = {f"{k}_token": tokens[i] if i is not None else None for k, i in special.items()}
    config |= {"add_bos_token": add_bos, "add_eos_token": add_eos}
    return tokenizer, config


def tokenizer_metadata(kv: dict[str, Any]) -> dict[str, Any]:
    """The standard tokenizer keys of docs/format.md from GGUF metadata."""
    meta: dict[str, Any] = {}
    template = kv.get("tokenizer.chat_template")
    if isinstance(template, str):
        meta["tokenizer.chat_template"] = template
    built = build_tokenizer_json(kv)
    if built is not None:
        meta["tokenizer.json"] = json.dumps(built[0], ensure_ascii=False)
        meta["tokenizer.config"] = json.dumps(built[1], ensure_ascii=False)
    return meta
