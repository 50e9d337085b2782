"""Stream a GPT-2 completion and print prefill / decode speed.

    python examples/gpt2/main.py CHECKPOINT --prompt "The meaning of life is" --max-tokens 64

CHECKPOINT is a Hugging Face GPT-2 folder (config.json, model.safetensors, vocab.json +
merges.txt or tokenizer.json), a .safetensors file with those beside it, or a .mag snapshot.
"""

from __future__ import annotations

import argparse

from magnetron import models


def main() -> None:
    ap = argparse.ArgumentParser(description="Stream a GPT-2 completion.")
    ap.add_argument("checkpoint")
    ap.add_argument("--prompt", default="The meaning of life is")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--temperature", type=float, default=0.8, help="0 = greedy")
    ap.add_argument("--top-k", type=int, default=40)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--dtype", choices=["float32", "bfloat16"], help="cast the weights (default: as stored)")
    ap.add_argument("--threads", type=int)
    args = ap.parse_args()

    model = models.load(args.checkpoint, dtype=args.dtype, num_threads=args.threads)
    print(args.prompt, end="", flush=True)
    pieces = model.generate(
        args.prompt,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        top_k=args.top_k,
        seed=args.seed,
        stream=True,
    )
    for piece in pieces:
        print(piece, end="", flush=True)
    s = model.stats
    print(f"\n\nprefill: {s.prompt_tokens} tokens, {s.prefill_tok_s:.1f} tok/s")
    print(f"decode:  {s.new_tokens} tokens, {s.decode_tok_s:.1f} tok/s ({model.dtype.name} weights)")


if __name__ == "__main__":
    main()
