"""Elementwise ops and softmax against PyTorch, measured in the same run (issue 6 targets).

Each row times ``op(x)`` (fresh output, as a user writes it) in magnetron and in PyTorch on the
same values, interleaved (benchmarks/harness.py), at 1 and 2 threads, and prints the medians
and ratio = magnetron throughput / PyTorch throughput (> 1: magnetron is faster).

    PYTHONPATH=python python benchmarks/ops_elementwise.py [--quick] [--samples N] [--threads 1,2]
        [--only add,exp,softmax,...] [--dtypes float32,bfloat16,float16]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from dataclasses import dataclass

import magnetron as mag
import torch
import torch.nn.functional as F
from harness import compare, noise_note

N = 10_000_000
SOFTMAX_SHAPE = (4096, 4096)


@dataclass(frozen=True)
class Case:
    op: str
    n_in: int  # 1 or 2 (elementwise), 0 = softmax-like along a dim
    mag_fn: Callable[..., object]
    torch_fn: Callable[..., object]
    dim: int = -1


def _cases() -> list[Case]:
    cases = [
        Case("add", 2, lambda a, b: a + b, lambda a, b: a + b),
        Case("mul", 2, lambda a, b: a * b, lambda a, b: a * b),
        Case("exp", 1, lambda a: a.exp(), torch.exp),
        Case("silu", 1, lambda a: a.silu(), F.silu),
        Case("sigmoid", 1, lambda a: a.sigmoid(), torch.sigmoid),
        Case("tanh", 1, lambda a: a.tanh(), torch.tanh),
        Case("log", 1, lambda a: a.log(), torch.log),
        Case("erf", 1, lambda a: a.erf(), torch.erf),
        Case("gelu", 1, lambda a: a.gelu(), F.gelu),
        Case("gelu_approx", 1, lambda a: a.gelu_approx(), lambda a: F.gelu(a, approximate="tanh")),
    ]
    for dim in (-1, 0):
        cases.append(Case("softmax", 0, lambda a, d=dim: a.softmax(d), lambda a, d=dim: torch.softmax(a, d), dim))
        cases.append(
            Case("log_softmax", 0, lambda a, d=dim: a.log_softmax(d), lambda a, d=dim: torch.log_softmax(a, d), dim)
        )
    return cases


QUICK_OPS = {"add", "mul", "exp", "silu", "softmax", "log_softmax"}
DTYPES = {"float32": (mag.float32, torch.float32), "float16": (mag.float16, torch.float16),
          "bfloat16": (mag.bfloat16, torch.bfloat16)}


def _inputs(case: Case, tdt: torch.dtype, mdt: mag.dtype.DType) -> tuple[list[mag.Tensor], list[torch.Tensor]]:
    gen = torch.Generator().manual_seed(0)
    shape = SOFTMAX_SHAPE if case.n_in == 0 else (N,)
    lo = 0.01 if case.op == "log" else -4.0  # log's domain; the rest straddles zero
    ts = [(torch.rand(shape, generator=gen) * (4.0 - lo) + lo).to(tdt) for _ in range(max(case.n_in, 1))]
    return [mag.Tensor(t) for t in ts], ts


def _row(case: Case, name: str, threads: int, ms: list[mag.Tensor], ts: list[torch.Tensor], samples: int) -> float:
    """Time one case at one thread count, print its line, return the ratio."""
    mag.context.num_threads = threads
    torch.set_num_threads(threads)
    r = compare({"magnetron": lambda: case.mag_fn(*ms), "torch": lambda: case.torch_fn(*ts)}, samples)
    m, t = r["magnetron"].median, r["torch"].median
    shape = "x".join(map(str, ms[0].shape)) + (f" d{case.dim}" if case.n_in == 0 else "")
    print(f"{case.op:12s} {shape:>12s} {name:9s} {threads:3d} {m * 1e3:13.3f} {t * 1e3:10.3f} {t / m:6.2f}  "
          f"{noise_note(r)}", flush=True)
    return t / m


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="add/mul/exp/silu/softmax, float32 + bfloat16, 3 samples")
    ap.add_argument("--samples", type=int, default=None)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--only", default=None, help="comma-separated op names")
    ap.add_argument("--dtypes", default=None, help="comma-separated dtypes (default: all three; quick: f32,bf16)")
    args = ap.parse_args()
    samples = args.samples or (3 if args.quick else 7)
    ops = set(args.only.split(",")) if args.only else (QUICK_OPS if args.quick else None)
    dtypes = args.dtypes.split(",") if args.dtypes else (["float32", "bfloat16"] if args.quick else list(DTYPES))
    print(f"cpu variant: {mag.context.cpu_info().get('variant')}, torch {torch.__version__}, samples {samples}")
    print(f"{'op':12s} {'shape':>12s} {'dtype':9s} {'thr':>3s} {'magnetron ms':>13s} {'torch ms':>10s} {'ratio':>6s}")
    ratios = []
    for case in _cases():
        if ops is not None and case.op not in ops:
            continue
        for name in dtypes:
            mdt, tdt = DTYPES[name]
            if case.n_in == 0 and name != "float32" and args.quick:
                continue
            ms, ts = _inputs(case, tdt, mdt)
            for threads in (int(t) for t in args.threads.split(",")):
                ratios.append(_row(case, name, threads, ms, ts, samples))
    if ratios:
        print(f"geometric mean ratio: {statistics.geometric_mean(ratios):.2f}")


if __name__ == "__main__":
    main()
