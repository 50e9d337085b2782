"""Elementwise ops and softmax against PyTorch, measured in the same run (issue 6 targets).

Each row times one op in magnetron and in PyTorch on the same values, interleaved
(benchmarks/harness.py), at 1 and 2 threads, and prints the medians and ratio = magnetron
throughput / PyTorch throughput (> 1: magnetron is faster).

Two modes for the elementwise ops: "new" (default) returns a fresh tensor, as ``x.exp()`` /
``torch.exp(x)`` do; PyTorch then pays page faults for outputs above glibc's mmap threshold
(32 MiB), magnetron reuses its cached blocks. "out" writes into a preallocated tensor on both
sides (``out=``), which compares the kernels alone. Softmax always returns a fresh tensor.

    PYTHONPATH=python python benchmarks/ops_elementwise.py [--quick] [--samples N] [--threads 1,2]
        [--only add,exp,softmax,...] [--dtypes float32,bfloat16,float16] [--mode new,out]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import magnetron as mag
import torch
from harness import compare, noise_note

N = 10_000_000
SOFTMAX_SHAPE = (4096, 4096)
OP_IDS = {r["name"]: r["id"] for r in mag._C.op_table()}


@dataclass(frozen=True)
class Case:
    op: str
    n_in: int  # 1 or 2 (elementwise), 0 = softmax-like along a dim
    torch_fn: Callable[..., object]  # fresh output
    aten: str = ""  # the out= overload's name in torch.ops.aten (elementwise only)
    aten_kwargs: dict[str, Any] = field(default_factory=dict)
    dim: int = -1

    def mag_fn(self, *xs: mag.Tensor) -> object:
        if self.n_in == 0:
            return getattr(xs[0], self.op)(self.dim)
        return mag._C._op(OP_IDS[self.op], list(xs), [], None)

    def mag_out(self, o: mag.Tensor, *xs: mag.Tensor) -> object:
        return mag._C._op(OP_IDS[self.op], list(xs), [], o)

    def torch_out(self, o: torch.Tensor, *ts: torch.Tensor) -> object:
        return getattr(torch.ops.aten, self.aten).out(*ts, **self.aten_kwargs, out=o)


def _cases() -> list[Case]:
    F = torch.nn.functional
    cases = [
        Case("add", 2, torch.add, "add"),
        Case("mul", 2, torch.mul, "mul"),
        Case("exp", 1, torch.exp, "exp"),
        Case("silu", 1, F.silu, "silu"),
        Case("sigmoid", 1, torch.sigmoid, "sigmoid"),
        Case("tanh", 1, torch.tanh, "tanh"),
        Case("log", 1, torch.log, "log"),
        Case("erf", 1, torch.erf, "erf"),
        Case("gelu", 1, F.gelu, "gelu"),
        Case("gelu_approx", 1, lambda a: F.gelu(a, approximate="tanh"), "gelu", {"approximate": "tanh"}),
    ]
    for dim in (-1, 0):
        cases.append(Case("softmax", 0, lambda a, d=dim: torch.softmax(a, d), dim=dim))
        cases.append(Case("log_softmax", 0, lambda a, d=dim: torch.log_softmax(a, d), dim=dim))
    return cases


QUICK_OPS = {"add", "mul", "exp", "silu", "softmax", "log_softmax"}
DTYPES = {
    "float32": (mag.float32, torch.float32),
    "float16": (mag.float16, torch.float16),
    "bfloat16": (mag.bfloat16, torch.bfloat16),
}


def _inputs(case: Case, tdt: torch.dtype) -> tuple[list[mag.Tensor], list[torch.Tensor]]:
    gen = torch.Generator().manual_seed(0)
    shape = SOFTMAX_SHAPE if case.n_in == 0 else (N,)
    lo = 0.01 if case.op == "log" else -4.0  # log's domain; the rest straddles zero
    ts = [(torch.rand(shape, generator=gen) * (4.0 - lo) + lo).to(tdt) for _ in range(max(case.n_in, 1))]
    return [mag.Tensor(t) for t in ts], ts


def _row(case: Case, name: str, mode: str, threads: int, ms: list[mag.Tensor], ts: list[torch.Tensor],
         samples: int) -> float:
    """Time one case at one thread count, print its line, return the ratio."""
    mag.context.num_threads = threads
    torch.set_num_threads(threads)
    if mode == "out":
        mo, to = mag.Tensor(ts[0].clone()), torch.empty_like(ts[0])
        fns = {"magnetron": lambda: case.mag_out(mo, *ms), "torch": lambda: case.torch_out(to, *ts)}
    else:
        fns = {"magnetron": lambda: case.mag_fn(*ms), "torch": lambda: case.torch_fn(*ts)}
    r = compare(fns, samples)
    m, t = r["magnetron"].median, r["torch"].median
    shape = "x".join(map(str, ms[0].shape)) + (f" d{case.dim}" if case.n_in == 0 else "")
    print(f"{case.op:12s} {shape:>12s} {name:9s} {mode:4s} {threads:3d} {m * 1e3:13.3f} {t * 1e3:10.3f} {t / m:6.2f}  "
          f"{noise_note(r)}", flush=True)
    return t / m


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="add/mul/exp/silu/softmax, float32 + bfloat16, 3 samples")
    ap.add_argument("--samples", type=int, default=None)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--only", default=None, help="comma-separated op names")
    ap.add_argument("--dtypes", default=None, help="comma-separated dtypes (default: all three; quick: f32,bf16)")
    ap.add_argument("--mode", default="new", help="new, out or new,out (elementwise ops)")
    args = ap.parse_args()
    samples = args.samples or (3 if args.quick else 7)
    ops = set(args.only.split(",")) if args.only else (QUICK_OPS if args.quick else None)
    dtypes = args.dtypes.split(",") if args.dtypes else (["float32", "bfloat16"] if args.quick else list(DTYPES))
    print(f"cpu variant: {mag.context.cpu_info().get('variant')}, torch {torch.__version__}, samples {samples}")
    head = f"{'op':12s} {'shape':>12s} {'dtype':9s} mode {'thr':>3s}"
    print(f"{head} {'magnetron ms':>13s} {'torch ms':>10s} {'ratio':>6s}")
    ratios = []
    for case in _cases():
        if ops is not None and case.op not in ops:
            continue
        for name in dtypes:
            if case.n_in == 0 and name != "float32" and args.quick:
                continue
            ms, ts = _inputs(case, DTYPES[name][1])
            for mode in args.mode.split(",") if case.n_in else ["new"]:
                for threads in (int(t) for t in args.threads.split(",")):
                    ratios.append(_row(case, name, mode, threads, ms, ts, samples))
    if ratios:
        print(f"geometric mean ratio: {statistics.geometric_mean(ratios):.2f}")


if __name__ == "__main__":
    main()
