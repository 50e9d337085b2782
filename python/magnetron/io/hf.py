"""The files beside Hugging Face weights that a model needs: config, tokenizer, chat template."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .._C import FormatError

# file -> metadata key (docs/format.md); stored as the file's text so it round-trips exactly
_FILES = {
    "config.json": "model.config",
    "generation_config.json": "model.generation_config",
    "tokenizer.json": "tokenizer.json",
    "tokenizer_config.json": "tokenizer.config",
}


def _json_text(path: Path) -> tuple[str, Any]:
    text = path.read_text(encoding="utf-8")
    try:
        return text, json.loads(text)
    except json.JSONDecodeError as e:
        raise FormatError(f"'{path}': not valid JSON ({e})") from None


def _template_of(tokenizer_config: Any) -> str | None:
    """``chat_template`` is a string, or a list of ``{"name", "template"}`` (use "default")."""
    t = tokenizer_config.get("chat_template") if isinstance(tokenizer_config, dict) else None
    if isinstance(t, list):
        named = {e.get("name"): e.get("template") for e in t if isinstance(e, dict)}
        t = named.get("default", next(iter(named.values()), None))
    return t if isinstance(t, str) else None


def folder_metadata(folder: Path) -> dict[str, Any]:
    """Metadata from a Hugging Face model folder (whatever of its files exist)."""
    meta: dict[str, Any] = {}
    parsed: dict[str, Any] = {}
    for name, key in _FILES.items():
        if (folder / name).is_file():
            meta[key], parsed[name] = _json_text(folder / name)
    config = parsed.get("config.json")
    if isinstance(config, dict) and isinstance(config.get("model_type"), str):
        meta["general.architecture"] = config["model_type"]
    template = _template_of(parsed.get("tokenizer_config.json"))
    if (folder / "chat_template.json").is_file():  # newer transformers keep it apart
        template = _template_of(_json_text(folder / "chat_template.json")[1]) or template
    if (folder / "chat_template.jinja").is_file():
        template = (folder / "chat_template.jinja").read_text(encoding="utf-8")
    if template is not None:
        meta["tokenizer.chat_template"] = template
    return meta
