"""Per-op dispatch and thread-pool overhead: ``a + b`` (fresh output) and ``a += b`` vs PyTorch, same run.

The 1k-element add measures the fixed cost of one op (it runs on the calling thread); the larger
in-place adds at 1 and 2 threads measure the pool: waking workers and waiting for them.
Ratio = PyTorch time / magnetron time (> 1: magnetron is faster).
Usage: PYTHONPATH=python python benchmarks/dispatch.py [--samples N]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import magnetron as mag
import torch
from harness import compare, noise_note


def row(label: str, mag_fn: Callable[[], object], torch_fn: Callable[[], object], samples: int) -> None:
    r = compare({"magnetron": mag_fn, "torch": torch_fn}, samples)
    m, t = r["magnetron"], r["torch"]
    print(f"{label:34s} magnetron {m.median * 1e6:9.2f} us (best {m.best * 1e6:9.2f})  "
          f"torch {t.median * 1e6:9.2f} us (best {t.best * 1e6:9.2f})  ratio {t.median / m.median:5.2f}  "
          + noise_note(r), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--samples", type=int, default=7)
    args = ap.parse_args()
    print(f"cpu variant: {mag.context.cpu_info().get('variant')}, torch {torch.__version__}")
    for threads in (1, 2):
        mag.context.num_threads = threads
        torch.set_num_threads(threads)
        for n in (1_000, 100_000, 1_000_000):
            if threads == 2 and n == 1_000:
                continue  # runs on the calling thread either way
            bench_size(n, threads, args.samples)


def bench_size(n: int, threads: int, samples: int) -> None:
    a, b = mag.Tensor.uniform(n), mag.Tensor.uniform(n)
    ta, tb = torch.rand(n), torch.rand(n)
    if n == 1_000:
        row(f"a + b    n={n:<9d} threads={threads}", lambda: a + b, lambda: ta + tb, samples)
    a.fill_(0.0)
    ta.fill_(0.0)
    row(f"a += b   n={n:<9d} threads={threads}", lambda: a.add_(b), lambda: ta.add_(tb), samples)

if __name__ == "__main__":
    main()
