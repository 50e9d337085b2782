"""Chat templates: the model's own Jinja template rendered with ``jinja2``, as Hugging Face does.

Templates come from ``tokenizer_config.json`` (a string, or a list of named templates of which
"default" is used), a ``chat_template.jinja`` file (transformers 5 saves it separately), or ``.mag``
metadata. They are untrusted code, so they run in Jinja's immutable sandbox with the helpers HF
templates expect: ``raise_exception``, ``strftime_now`` and a ``tojson`` that keeps non-ASCII text.
Extra keyword arguments reach the template as variables: Qwen3 reads ``enable_thinking``.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from typing import Any

from .tokenizer import read_json


def load_chat_template(folder: str) -> str | None:
    """The chat template stored in a checkpoint folder, or None when it has none."""
    path = os.path.join(folder, "chat_template.jinja")
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            return f.read()
    return pick_template(read_json(os.path.join(folder, "tokenizer_config.json")).get("chat_template"))


def pick_template(value: Any) -> str | None:
    """A ``chat_template`` entry is a string or a list of ``{"name", "template"}`` (we take "default")."""
    if isinstance(value, list):
        named = {t.get("name"): t.get("template") for t in value if isinstance(t, dict)}
        value = named.get("default")
    return value if isinstance(value, str) else None


def _raise(message: str) -> None:
    import jinja2

    raise jinja2.exceptions.TemplateError(message)


def _tojson(
    x: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None, sort_keys: bool = False
) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


_compiled: dict[str, Any] = {}


def render(
    template: str,
    messages: list[dict[str, Any]],
    add_generation_prompt: bool = True,
    special_tokens: dict[str, str] | None = None,
    **variables: Any,
) -> str:
    """The prompt text for OpenAI-style ``messages`` (``[{"role": ..., "content": ...}]``)."""
    if not isinstance(messages, list) or not all(isinstance(m, dict) and "role" in m for m in messages):
        raise TypeError("chat: messages must be a list of dicts with 'role' and 'content' keys")
    compiled = _compiled.get(template)
    if compiled is None:
        from jinja2.ext import loopcontrols
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
        env.filters["tojson"] = _tojson
        env.globals.update(raise_exception=_raise, strftime_now=_strftime_now)
        compiled = _compiled[template] = env.from_string(template)
    return compiled.render(
        messages=messages, add_generation_prompt=add_generation_prompt, **(special_tokens or {}), **variables
    )
