"""Peak resident memory of magnetron while decoding, against the model's weight bytes.

    python benchmarks/decode_memory.py CHECKPOINT [--new-tokens 64]

Imports neither torch nor transformers, so the process holds only what magnetron needs: the
weights (mapped from safetensors or .mag, so they show up as file-backed pages), the KV cache,
activations and the tokenizer. Issue 8 asks for peak RSS <= 1.3x the weight bytes for
Qwen3-0.6B in bfloat16 (build one with benchmarks/decode.py --shape qwen3_0.6b --dtype bfloat16).
"""

from __future__ import annotations

import argparse
import time

from magnetron import models
from magnetron.models import SamplingParams


def memory() -> dict[str, int]:
    """VmHWM (peak), VmRSS, RssAnon and RssFile of this process in bytes (Linux)."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0]) * 1024
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    before = memory()["VmRSS"]
    t0 = time.perf_counter()
    model = models.load(args.checkpoint, num_threads=args.threads)
    load_s = time.perf_counter() - t0
    tied = model.config.tie_embeddings
    weights = sum(
        p.numel * p.dtype.size for name, p in model.net.named_parameters() if not (tied and name == "lm_head.weight")
    )
    prompt = [(7 * i) % min(model.config.vocab_size, 50000) for i in range(args.prompt_tokens)]
    model.eos_token_ids = []
    out = list(model.generate_ids(prompt, args.new_tokens, SamplingParams(temperature=0)))
    m = memory()
    print(f"{model.config.arch} {model.dtype.name}: {weights / 1e6:.0f} MB of weights, loaded in {load_s:.2f} s")
    print(f"decoded {len(out)} tokens at {model.stats.decode_tok_s:.2f} tok/s")
    print(
        f"peak RSS {m['VmHWM'] / 1e6:.0f} MB = {m['VmHWM'] / weights:.2f}x the weights "
        f"(at the end: {m['RssFile'] / 1e6:.0f} MB file-backed, {m['RssAnon'] / 1e6:.0f} MB anonymous; "
        f"{before / 1e6:.0f} MB before loading)"
    )


if __name__ == "__main__":
    main()
