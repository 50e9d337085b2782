"""Reductions and fused norms against PyTorch on the same data, measured in the same run.

Prints one row per (op, shape, dim, dtype, threads): magnetron and PyTorch medians in ms and the
ratio PyTorch / magnetron (> 1: magnetron is faster). Timing is benchmarks/harness.py's
(interleaved contenders, samples >= 0.2 s, samples disturbed by other processes retried).

    PYTHONPATH=python python benchmarks/ops_reduce.py [--quick] [--samples N] [--threads 1,2]
        [--ops sum,mean,...] [--dtypes float32,float16,bfloat16] [--dims -1,0,all] [--shape 4096x4096]

--shape: rows x columns; short rows (32768x32, 8192x128) measure the per-output cost.

--quick: float32 only, the issue's named ops (sum, mean, max, rms_norm), 3 samples.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

import magnetron as mag
import magnetron.nn.functional as MF
import torch
import torch.nn.functional as TF
from harness import compare, noise_note

SHAPE = (4096, 4096)
REDUCTIONS = ("sum", "mean", "max", "min", "argmax", "var")
NORMS = ("rms_norm", "layer_norm")
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}

Pair = tuple[Callable[[], object], Callable[[], object]]


def reduction(op: str, x: mag.Tensor, t: torch.Tensor, dim: str) -> Pair:
    d = None if dim == "all" else int(dim)
    if op == "max" and d is not None:  # torch.max(dim) also returns indices: amax is the values-only twin
        return (lambda: x.max(d)), (lambda: t.amax(d))
    if op == "min" and d is not None:
        return (lambda: x.min(d)), (lambda: t.amin(d))
    mf, tf = getattr(x, op), getattr(t, op)
    if d is None:
        return (lambda: mf()), (lambda: tf())
    return (lambda: mf(d)), (lambda: tf(d))


def norm(op: str, x: mag.Tensor, t: torch.Tensor) -> Pair:
    n = t.shape[-1]
    tw, tb = torch.rand(n, dtype=t.dtype), torch.rand(n, dtype=t.dtype)
    w, b = mag.Tensor.from_dlpack(tw), mag.Tensor.from_dlpack(tb)
    if op == "rms_norm":
        return (lambda: MF.rms_norm(x, (n,), w, 1e-6)), (lambda: TF.rms_norm(t, (n,), tw, 1e-6))
    return (lambda: MF.layer_norm(x, (n,), w, b, 1e-5)), (lambda: TF.layer_norm(t, (n,), tw, tb, 1e-5))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--samples", type=int, default=None)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--ops", default=",".join(REDUCTIONS + NORMS))
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--dims", default="-1,0,all")
    ap.add_argument("--shape", default="x".join(map(str, SHAPE)), help="rows x columns")
    args = ap.parse_args()
    size = tuple(int(v) for v in args.shape.split("x"))
    ops, dtypes, dims = args.ops.split(","), args.dtypes.split(","), args.dims.split(",")
    samples = args.samples or (3 if args.quick else 7)
    if args.quick:
        ops, dtypes = [o for o in ops if o in ("sum", "mean", "max", "rms_norm")], ["float32"]
    shape = "x".join(map(str, size))
    print(f"cpu variant: {mag.context.cpu_info().get('variant')}, torch {torch.__version__}")
    head = ("op", "shape", "dim", "dtype", "thr", "magnetron ms", "torch ms", "ratio")
    print("{:11s} {:9s} {:>4s} {:9s} {:>3s} {:>13s} {:>9s} {:>6s}".format(*head))
    ratios: list[float] = []
    for threads in (int(v) for v in args.threads.split(",")):
        mag.context.num_threads = threads
        torch.set_num_threads(threads)
        for dname in dtypes:
            t = torch.randn(size, dtype=DTYPES[dname])
            x = mag.Tensor.from_dlpack(t)
            for op in ops:
                for dim in dims if op in REDUCTIONS else ["-1"]:
                    m_fn, t_fn = reduction(op, x, t, dim) if op in REDUCTIONS else norm(op, x, t)
                    r = compare({"magnetron": m_fn, "torch": t_fn}, samples)
                    m, tt = r["magnetron"].median, r["torch"].median
                    ratios.append(tt / m)
                    print(
                        f"{op:11s} {shape:9s} {dim:>4s} {dname:9s} {threads:3d} {m * 1e3:13.3f} {tt * 1e3:9.3f} "
                        f"{tt / m:6.2f}  {noise_note(r)}",
                        flush=True,
                    )
    if ratios:
        print(f"median ratio {statistics.median(ratios):.2f}, min {min(ratios):.2f} over {len(ratios)} rows")


if __name__ == "__main__":
    main()
