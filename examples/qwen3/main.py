"""Chat with Qwen3 (or any model with a chat template): stream replies, print prefill / decode speed.

    python examples/qwen3/main.py CHECKPOINT                       # interactive, multi-turn
    python examples/qwen3/main.py CHECKPOINT --prompt "Name three primes." --no-think

CHECKPOINT is a Hugging Face folder (config.json, *.safetensors, tokenizer.json and
tokenizer_config.json with the chat template), a .gguf file or a .mag snapshot. Each turn
re-renders the whole conversation; the KV cache keeps the unchanged prefix, so only the new
turn is prefilled ("cached" below).
"""

from __future__ import annotations

import argparse

from magnetron import models


def reply(model: models.LanguageModel, messages: list[dict], args: argparse.Namespace) -> str:
    options = dict(max_tokens=args.max_tokens, temperature=args.temperature, top_p=args.top_p, seed=args.seed)
    text = ""
    for piece in model.chat(messages, enable_thinking=not args.no_think, stream=True, **options):
        print(piece, end="", flush=True)
        text += piece
    s = model.stats
    print(
        f"\n[prefill {s.prompt_tokens - s.cached_tokens} new + {s.cached_tokens} cached tokens, "
        f"{s.prefill_tok_s:.1f} tok/s | decode {s.new_tokens} tokens, {s.decode_tok_s:.1f} tok/s]"
    )
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description="Chat with a model that has a chat template.")
    ap.add_argument("checkpoint")
    ap.add_argument("--prompt", help="one question, then exit (default: read turns from stdin)")
    ap.add_argument("--system", help="a system message")
    ap.add_argument("--no-think", action="store_true", help="Qwen3: answer without a <think> section")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--temperature", type=float, default=0.6, help="0 = greedy")
    ap.add_argument("--top-p", type=float, default=0.95)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--dtype", choices=["float32", "bfloat16"], help="cast the weights (default: as stored)")
    ap.add_argument("--threads", type=int)
    args = ap.parse_args()

    model = models.load(args.checkpoint, dtype=args.dtype, num_threads=args.threads)
    messages = [{"role": "system", "content": args.system}] if args.system else []
    turns = [args.prompt] if args.prompt else iter(lambda: input("> "), "")
    try:
        for question in turns:
            messages.append({"role": "user", "content": question})
            messages.append({"role": "assistant", "content": reply(model, messages, args)})
    except (EOFError, KeyboardInterrupt):
        print()


if __name__ == "__main__":
    main()
