"""matmul (the public op, ``a @ b``) against torch.matmul, side by side in one run, at 1 and 2 threads.

Rows (issue 6): float32 square n = 256..4096 and bfloat16 n = 512..4096 (ratio = magnetron
throughput / torch's), float16 square against magnetron's own float32 (torch's float16 matmul
is not a fair contender on CPUs), and GEMV at the Qwen3-0.6B decode shapes with the weight in
``nn.Linear`` layout (``x @ W.T``) and plain (``x @ W``), both float32 and bfloat16, the weights
rotated over more memory than any cache holds, against the machine's read bandwidth measured
in the same run. Those rows read the same bytes (magnetron views torch's buffers); the
``x@W.T own`` rows give each library its weights in its own allocation, as a model holds them
(magnetron's allocator asks for 2 MiB pages, torch's default does not).

    python benchmarks/matmul.py [--quick] [--only f32,bf16,f16,gemv] [--threads 1,2] [--samples 7]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import magnetron as mag  # noqa: E402
from harness import compare, noise_note, read_bandwidth  # noqa: E402

COLD_BYTES = 256 << 20  # GEMV weights rotate over at least this much memory
QWEN_DECODE = [(1024, 3072), (3072, 1024), (1024, 151936)]  # (K, N): 1xK by KxN
MAG_DTYPES = {torch.float32: mag.float32, torch.bfloat16: mag.bfloat16, torch.float16: mag.float16}


def _mag(t: torch.Tensor) -> mag.Tensor:
    """magnetron's view of torch's buffer (zero copy), keeping the same strides."""
    return mag.Tensor.from_dlpack(t)


def _rotating(pairs: list[tuple[object, object]], matmul: Callable[[object, object], object]) -> Callable[[], object]:
    i = 0

    def run() -> object:
        nonlocal i
        a, b = pairs[i % len(pairs)]
        i += 1
        return matmul(a, b)

    return run


def _check(a: torch.Tensor, b: torch.Tensor) -> None:
    ref = a.float() @ b.float()
    got = torch.from_dlpack(_mag(a) @ _mag(b)).float()
    err = (got - ref).abs().max().item() / max(ref.abs().max().item(), 1e-30)
    if err > 2e-2:
        raise SystemExit(f"wrong result for {tuple(a.shape)} @ {tuple(b.shape)} {a.dtype}: relative error {err:.3g}")


def _row(name: str, nt: int, unit: str, ours: float, theirs: float | None, extra: str = "") -> None:
    t = f"{theirs:9.1f}" if theirs is not None else "        -"
    r = f"{ours / theirs:6.2f}" if theirs else "     -"
    print(f"{name:34s} {nt:2d}  {ours:9.1f} {t} {unit:7s} {r}  {extra}", flush=True)


def _set_threads(nt: int) -> None:
    torch.set_num_threads(nt)
    mag.context.num_threads = nt


def square(dtype: torch.dtype, sizes: list[int], threads: list[int], samples: int,
           own_f32: dict[tuple[int, int], float] | None = None) -> dict[tuple[int, int], float]:
    out = {}
    for n in sizes:
        a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
        ma, mb = _mag(a), _mag(b)
        _check(a, b)
        flop = 2.0 * n**3
        for nt in threads:
            _set_threads(nt)
            contenders = {"magnetron": _rotating([(ma, mb)], lambda p, q: p @ q)}
            if own_f32 is None:
                contenders["torch"] = _rotating([(a, b)], lambda p, q: p @ q)
            res = compare(contenders, samples)
            g = flop / res["magnetron"].median * 1e-9
            if own_f32 is None:
                out[(n, nt)] = g
                _row(f"{str(dtype)[6:]} {n}^3", nt, "GFLOP/s", g, flop / res["torch"].median * 1e-9, noise_note(res))
            else:
                f32 = own_f32.get((n, nt))
                rel = f"f16/own f32 {g / f32:4.2f}" if f32 else ""
                _row(f"{str(dtype)[6:]} {n}^3", nt, "GFLOP/s", g, None, f"{rel} {noise_note(res)}")
    return out


def gemv(dtypes: list[torch.dtype], threads: list[int], samples: int) -> None:
    bw = {nt: read_bandwidth(nt) for nt in threads}
    for nt in threads:
        print(f"read bandwidth, {nt} thread(s): {bw[nt] / 1e9:.1f} GB/s", flush=True)
    for dtype in dtypes:
        for k, n in QWEN_DECODE:
            nbytes = k * n * dtype.itemsize
            ws = [torch.randn(n, k).to(dtype) for _ in range(max(1, -(-COLD_BYTES // nbytes)))]  # (N, K) Linear
            x = torch.randn(1, k).to(dtype)
            for layout in ("x@W.T", "x@W", "x@W.T own"):
                bs = [w.view(k, n) for w in ws] if layout == "x@W" else [w.t() for w in ws]
                _check(x, bs[0])
                torch_pairs = [(x, b) for b in bs]
                if layout.endswith("own"):  # each library's weights in its own allocation, as a model holds them
                    mag_pairs = [(_mag(x), _mag(w).clone().T) for w in ws]
                else:  # the same bytes for both: magnetron reads torch's buffers
                    mag_pairs = [(_mag(x), _mag(b)) for b in bs]
                for nt in threads:
                    _set_threads(nt)
                    res = compare({"magnetron": _rotating(mag_pairs, lambda p, q: p @ q),
                                   "torch": _rotating(torch_pairs, lambda p, q: p @ q)}, samples)
                    ours, theirs = nbytes / res["magnetron"].median, nbytes / res["torch"].median
                    pct = f"{100 * ours / bw[nt]:3.0f}% of bandwidth"
                    _row(f"{str(dtype)[6:]} 1x{k}x{n} {layout}", nt, "GB/s", ours / 1e9, theirs / 1e9,
                         f"{pct} {noise_note(res)}")
            del ws


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes and samples")
    ap.add_argument("--only", default="f32,bf16,f16,gemv")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--samples", type=int, default=7)
    args = ap.parse_args()
    only = set(args.only.split(","))
    threads = [int(t) for t in args.threads.split(",")]
    samples = 3 if args.quick else args.samples
    info = mag.context.cpu_info()
    print(f"magnetron variant {info['variant']}, torch {torch.__version__}, {samples} samples per contender (medians)")
    print(f"{'case':34s} {'nt':>2s}  {'magnetron':>9s} {'torch':>9s} {'unit':7s} {'ratio':>6s}")
    sizes = [256, 1024] if args.quick else [256, 512, 1024, 2048, 4096]
    f32 = square(torch.float32, sizes, threads, samples) if only & {"f32", "f16"} else {}
    if "bf16" in only:
        square(torch.bfloat16, [n for n in sizes if n >= 512] or [512], threads, samples)
    if "f16" in only:
        square(torch.float16, sizes, threads, samples, own_f32=f32)
    if "gemv" in only:
        gemv([torch.float32, torch.bfloat16], threads, samples)


if __name__ == "__main__":
    main()
