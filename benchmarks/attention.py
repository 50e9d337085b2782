"""Fused attention vs torch's scaled_dot_product_attention, same run, at LLM decode and prefill shapes.

Decode: one query against a KV cache of Lk positions, read in place from a preallocated buffer of
2048 rows (as models/kv_cache.py does); prefill: Lq = Lk, causal. Qwen3-0.6B shapes (16 query heads
over 8 key/value heads, E = 128) in bfloat16 and GPT-2 shapes (12 heads, E = 64) in float32.
torch gets contiguous k/v (its fastest case) and enable_gqa. Ratio = torch time / magnetron time
(> 1: magnetron is faster).
Usage: PYTHONPATH=python python benchmarks/attention.py [--samples N] [--threads 1,2] [--quick]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import magnetron as mag
import numpy as np
import torch
from harness import compare, noise_note
from magnetron.nn import functional as F

CACHE_ROWS = 2048


@dataclass
class Shape:
    model: str
    dtype: str  # "bfloat16" or "float32"
    hq: int
    hkv: int
    e: int


QWEN3 = Shape("qwen3-0.6b", "bfloat16", 16, 8, 128)
GPT2 = Shape("gpt2", "float32", 12, 12, 64)


def make(shape: Shape, lq: int, lk: int) -> tuple[tuple[mag.Tensor, ...], tuple[torch.Tensor, ...]]:
    rng = np.random.default_rng(0)
    tdt = getattr(torch, shape.dtype)
    q = torch.from_numpy(rng.standard_normal((1, shape.hq, lq, shape.e), dtype=np.float32)).to(tdt)
    kv = [torch.from_numpy(rng.standard_normal((1, shape.hkv, lk, shape.e), dtype=np.float32)).to(tdt) for _ in "kv"]
    mdt = getattr(mag, shape.dtype)
    mq = mag.Tensor(q.float().numpy()).cast(mdt)
    views = []
    for t in kv:  # a slice of a bigger cache buffer, like the model's KV cache
        buf = mag.Tensor.zeros(1, shape.hkv, max(CACHE_ROWS, lk), shape.e, dtype=mdt)
        buf[:, :, :lk] = mag.Tensor(t.float().numpy()).cast(mdt)
        views.append(buf[:, :, :lk])
    return (mq, *views), (q, *kv)


def row(label: str, shape: Shape, lq: int, lk: int, samples: int) -> None:
    (mq, mk, mv), (tq, tk, tv) = make(shape, lq, lk)
    causal = lq > 1
    r = compare(
        {
            "magnetron": lambda: F.scaled_dot_product_attention(mq, mk, mv, is_causal=causal, causal_offset=lk - lq),
            "torch": lambda: torch.nn.functional.scaled_dot_product_attention(
                tq, tk, tv, is_causal=causal, enable_gqa=True
            ),
        },
        samples,
    )
    m, t = r["magnetron"], r["torch"]
    print(
        f"{label:44s} magnetron {m.median * 1e6:9.1f} us  torch {t.median * 1e6:9.1f} us  "
        f"ratio {t.median / m.median:5.2f}  " + noise_note(r),
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--quick", action="store_true", help="fewer shapes")
    args = ap.parse_args()
    print(f"cpu variant: {mag.context.cpu_info().get('variant')}, torch {torch.__version__}")
    decode_lk = (128, 2048) if args.quick else (128, 256, 512, 1024, 2048)
    prefill = (128,) if args.quick else (128, 512)
    for threads in (int(t) for t in args.threads.split(",")):
        mag.context.num_threads = threads
        torch.set_num_threads(threads)
        with torch.inference_mode():
            for shape in (QWEN3, GPT2):
                for lk in decode_lk:
                    label = f"{shape.model} {shape.dtype} decode Lk={lk} t={threads}"
                    row(label, shape, 1, lk, args.samples)
                for n in prefill:
                    label = f"{shape.model} {shape.dtype} prefill L={n} t={threads}"
                    row(label, shape, n, n, args.samples)


if __name__ == "__main__":
    main()
