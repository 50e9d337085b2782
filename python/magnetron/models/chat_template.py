"""Chat templates: the model's own Jinja template rendered with ``jinja2``, as Hugging Face does.

Templates arrive as the ``tokenizer.chat_template`` metadata of the checkpoint (magnetron.io
gathers it from tokenizer_config.json, chat_template.jinja or GGUF). They are untrusted code, so
they run in Jinja's immutable sandbox with the helpers HF templates expect: ``raise_exception``,
``strftime_now`` and a ``tojson`` that keeps non-ASCII text.
Extra keyword arguments reach the template as variables: Qwen3 reads ``enable_thinking``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any


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
