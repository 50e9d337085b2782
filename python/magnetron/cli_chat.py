"""``magnetron generate`` and ``magnetron chat``: text from a model, streamed as it is sampled.

Both take a model (a pulled name, a path, or nothing for the default model, pulled on first
use) and the sampling options of ``model.generate``. The chat keeps the conversation within
the model's context by dropping the oldest turns, and since every turn's prompt starts with
the previous turn's prompt and reply, the KV cache computed for them is reused: a turn costs
only its new tokens.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from .cli_models import log

if TYPE_CHECKING:
    from .models.language_model import LanguageModel

COMMANDS_HELP = "/reset starts a new conversation, /exit (or Ctrl-D) quits, Ctrl-C stops a reply"


def model_args(p: argparse.ArgumentParser, max_tokens: int) -> None:
    """The options generate and chat share: the model, sampling, threads and statistics."""
    what = "a pulled model name, a model folder or a .safetensors/.gguf/.mag file, or a Hugging Face repo id "
    what += "(default: smollm2-135m-instruct, pulled on first use)"
    p.add_argument("model", nargs="?", help=what)
    s = p.add_argument_group("sampling (defaults suit small instruct models; --temperature 0 is greedy)")
    s.add_argument("--max-tokens", type=int, default=max_tokens, help=f"new tokens at most (default {max_tokens})")
    s.add_argument("--temperature", type=float, default=0.2, help="default 0.2")
    s.add_argument("--top-k", type=int, default=0, help="keep the k most likely tokens (default 0: all)")
    s.add_argument("--top-p", type=float, default=0.9, help="nucleus sampling threshold (default 0.9)")
    s.add_argument("--min-p", type=float, default=0.0, help="drop tokens below min-p x the top probability")
    s.add_argument("--repetition-penalty", type=float, default=1.0, help="> 1 discourages repeats (default 1)")
    s.add_argument("--seed", type=int, help="make sampling reproducible")
    s.add_argument("--stop", action="append", default=[], help="stop at this text (repeatable)")
    p.add_argument("--threads", type=int, help="CPU threads (default: the CPUs this process may use)")
    p.add_argument("--dtype", choices=["float32", "bfloat16"], help="cast the weights (default: as stored)")
    p.add_argument("--stats", action="store_true", help="print prompt/new token counts and tokens/s to stderr")


def sampling(ns: argparse.Namespace) -> dict[str, Any]:
    names = ("max_tokens", "temperature", "top_k", "top_p", "min_p", "repetition_penalty", "stop", "seed")
    return {name: getattr(ns, name) for name in names}


def open_model(ns: argparse.Namespace) -> LanguageModel:
    """The model named on the command line: a path as it is, anything else through the cache (pulled if needed)."""
    from .models import load, registry

    source = ns.model or registry.DEFAULT_MODEL
    if not os.path.exists(source):
        source = registry.cached(source) or registry.pull(source, log=log)
    return load(source, dtype=ns.dtype, num_threads=ns.threads)


def stream_reply(model: LanguageModel, prompt: str | list[int], ns: argparse.Namespace) -> str:
    """Print the completion of ``prompt`` as it is generated; Ctrl-C ends it early. Returns its text."""
    t0 = time.perf_counter()
    first = None
    pieces: list[str] = []
    stream = model.generate(prompt, stream=True, **sampling(ns))
    try:
        for piece in stream:
            first = time.perf_counter() - t0 if first is None else first
            sys.stdout.write(piece)
            sys.stdout.flush()
            pieces.append(piece)
    except KeyboardInterrupt:
        stream.close()  # type: ignore[union-attr]
        sys.stdout.write(" [stopped]")
    sys.stdout.write("\n")
    sys.stdout.flush()
    if ns.stats and model.stats.new_tokens:  # (none when stopped during the prefill)
        s = model.stats
        head = f"prompt {s.prompt_tokens} tokens ({s.cached_tokens} cached), prefill {s.prefill_tok_s:.1f} tok/s"
        new = f"{s.new_tokens} new tokens, decode {s.decode_tok_s:.1f} tok/s"
        latency = "" if first is None else f"; first text after {first:.2f} s"
        print(f"[{head}; {new}{latency}]", file=sys.stderr, flush=True)
    return "".join(pieces)


def generate_args(p: argparse.ArgumentParser) -> None:
    model_args(p, max_tokens=128)
    p.add_argument("--prompt", help="the text to continue (default: read stdin)")
    p.add_argument("--chat", action="store_true", help="send the prompt as a user message through the chat template")


def generate(ns: argparse.Namespace) -> int:
    text = ns.prompt
    if text is None:
        if sys.stdin.isatty():
            raise ValueError("give the text with --prompt TEXT (or on stdin)")
        text = sys.stdin.read()
    model = open_model(ns)
    prompt: str | list[int] = chat_ids(model, [{"role": "user", "content": text}]) if ns.chat else text
    stream_reply(model, prompt, ns)
    return 0


def chat_args(p: argparse.ArgumentParser) -> None:
    model_args(p, max_tokens=512)
    p.add_argument("--system", help="a system prompt (default: the model template's own, if any)")
    p.add_argument("--context", type=int, help="keep the conversation within this many tokens (default: the model's)")


def chat_ids(model: LanguageModel, messages: list[dict[str, str]]) -> list[int]:
    """The token ids of ``messages`` rendered with the model's chat template, ready for the reply."""
    from .models.chat_template import render

    if model.chat_template is None:
        raise ValueError(f"this {model.config.arch} model has no chat template: use `magnetron generate`")
    return model.encode(render(model.chat_template, messages, True, model.special_tokens), add_special_tokens=False)


def fit(model: LanguageModel, system: list[dict[str, str]], history: list[dict[str, str]], budget: int) -> list[int]:
    """The prompt ids of the conversation, after dropping its oldest turns from ``history`` while the
    prompt exceeds ``budget`` tokens. Dropping goes down to 3/4 of the budget, so that the next few
    turns fit again and reuse the KV cache instead of all recomputing a shifted conversation."""
    ids = chat_ids(model, system + history)
    if len(ids) <= budget:
        return ids
    while len(history) > 1 and len(ids) > budget * 3 // 4:
        del history[0]
        while len(history) > 1 and history[0]["role"] != "user":
            del history[0]
        ids = chat_ids(model, system + history)
    if len(ids) > budget:
        del history[-1]
        raise ValueError(f"the message is too long: the prompt takes {len(ids)} tokens, {budget} fit")
    return ids


def chat(ns: argparse.Namespace) -> int:
    model = open_model(ns)
    cfg = model.config
    context = min(ns.context or cfg.max_seq_len, cfg.max_seq_len)
    budget = context - ns.max_tokens
    if budget < 1:
        raise ValueError(f"--max-tokens {ns.max_tokens} leaves no room for a prompt in a {context}-token context")
    chat_ids(model, [])  # no template: say so now, not after the first message
    system = [{"role": "system", "content": ns.system}] if ns.system else []
    history: list[dict[str, str]] = []
    interactive = sys.stdin.isatty()
    if interactive:
        try:
            import readline  # noqa: F401  (line editing and history for input())
        except ImportError:
            pass
        name = os.path.basename(ns.model or "smollm2-135m-instruct")
        log(f"{name}: {cfg.arch}, {cfg.n_layers} layers, {model.dtype.name}; {COMMANDS_HELP}")
    while True:
        try:
            line = input(">>> " if interactive else "")
        except (EOFError, KeyboardInterrupt):
            if interactive:
                print()
            return 0
        text = line.strip()
        if text in ("/exit", "/quit", "/bye"):
            return 0
        if text == "/reset":
            history.clear()
            print("(new conversation)")
            continue
        if text.startswith("/") and " " not in text:
            print(f"unknown command {text}: {COMMANDS_HELP}")
            continue
        if not text:
            continue
        history.append({"role": "user", "content": text})
        try:
            ids = fit(model, system, history, budget)
        except ValueError as e:
            print(f"magnetron chat: {e}", file=sys.stderr)
            continue
        history.append({"role": "assistant", "content": stream_reply(model, ids, ns)})


SUBCOMMANDS = (
    ("generate", "complete a prompt with a model, streaming the text", generate_args, generate),
    ("chat", "talk with a model: streamed replies, /reset, /exit (the default model is pulled first)", chat_args, chat),
)
