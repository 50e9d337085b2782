"""magnetron's GEMM engine against torch.matmul, measured in the same run on the same buffers.

Calls the engine through ctypes on the ``magnetron_gemm_bench`` library (build it with CMake
first) and prints throughput and the ratio magnetron / PyTorch for the issue's shapes at 1 and
2 threads: float32 and bfloat16 square matmul, float16 against magnetron's own float32, and
GEMV at the Qwen3-0.6B decode shapes in both weight layouts against the measured read
bandwidth (STREAM-style, best of 5 over 1 GiB).

Timing (STYLE.md section 10): each sample runs >= 0.2 s; the two contenders alternate; a
sample during which other processes used more than 0.1 CPU is retried after a pause (bounded)
and otherwise kept and counted as dirty. Reported: medians (and the ratio of bests).

    python benchmarks/gemm.py [--build build/dev] [--quick] [--only f32,bf16,f16,gemv] [--threads 1,2] [--cpu-clock]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

MAG_DTYPE = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}  # order of src/core/dtypes.def
HZ = os.sysconf("SC_CLK_TCK")
OTHER_CPU_MAX = 0.1  # CPUs other processes may use during a clean sample
SAMPLE_S = 0.2
COLD_BYTES = 256 << 20  # rotate GEMV weights over at least this much memory: no cache holds it


def load_lib(build: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(build / "libmagnetron_gemm_bench.so"))
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    lib.mgb_gemm.restype = ctypes.c_double
    lib.mgb_gemm.argtypes = [ctypes.c_int, i64, i64, i64, ptr, i64, i64, ctypes.POINTER(ptr), i64, i64, i64, ptr,
                             i64, i64, i64, i64]
    lib.mgb_read_bandwidth.restype = ctypes.c_double
    lib.mgb_read_bandwidth.argtypes = [ptr, i64, i64]
    lib.mgb_set_path.argtypes = [ctypes.c_char_p]
    lib.mgb_path.restype = ctypes.c_char_p
    return lib


def busy_cpu_seconds() -> float:
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (sum(v) - v[3] - v[4]) / HZ  # all but idle and iowait


def own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


@dataclass
class Stats:
    times: list[float] = field(default_factory=list)
    retried: int = 0
    dirty: int = 0


def sample(run: Callable[[int], None], inner: int, st: Stats, retries: int, cpu_clock: bool = False) -> None:
    """One timing sample (seconds per call) of run(inner), retried while the machine is busy.

    cpu_clock: time this thread's CPU time instead (single-thread runs only: both contenders then
    compute on the calling thread, and time other processes take from it does not count).
    """
    for attempt in range(retries + 1):
        b0, o0, t0, c0 = busy_cpu_seconds(), own_cpu_seconds(), time.perf_counter(), time.thread_time()
        run(inner)
        wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
        other = (busy_cpu_seconds() - b0) - (own_cpu_seconds() - o0)
        if other / wall <= OTHER_CPU_MAX or attempt == retries or cpu_clock:
            st.dirty += other / wall > OTHER_CPU_MAX
            st.times.append((cpu if cpu_clock else wall) / inner)
            return
        st.retried += 1
        time.sleep(0.3)


def calibrate(run: Callable[[int], None]) -> int:
    run(1)  # warm up: scratch, caches, thread pools
    t0 = time.perf_counter()
    run(1)
    dt = time.perf_counter() - t0
    return max(1, int(SAMPLE_S / max(dt, 1e-7)) + 1)


def compare(ours: Callable[[int], None], theirs: Callable[[int], None], n: int, retries: int,
            cpu_clock: bool) -> tuple[Stats, Stats]:
    a, b = Stats(), Stats()
    ia, ib = calibrate(ours), calibrate(theirs)
    for _ in range(n):  # interleaved, so both see the same noise
        sample(ours, ia, a, retries, cpu_clock)
        time.sleep(0.05)
        sample(theirs, ib, b, retries, cpu_clock)
        time.sleep(0.05)  # torch's OpenMP workers spin after a parallel region: not into our sample
    return a, b


class Bench:
    def __init__(self, lib: ctypes.CDLL, samples: int, retries: int, cpu_clock: bool) -> None:
        self.lib, self.samples, self.retries, self.cpu_clock = lib, samples, retries, cpu_clock

    def ours(self, a: torch.Tensor, bs: list[torch.Tensor], c: torch.Tensor, nt: int) -> Callable[[int], None]:
        m, k = a.shape
        n = bs[0].shape[1]
        ptrs = (ctypes.c_void_p * len(bs))(*[b.data_ptr() for b in bs])
        sa, sb, sc = a.stride(), bs[0].stride(), c.stride()
        dt = MAG_DTYPE[a.dtype]

        def run(inner: int) -> None:
            self.lib.mgb_gemm(dt, m, n, k, a.data_ptr(), sa[0], sa[1], ptrs, len(bs), sb[0], sb[1], c.data_ptr(),
                              sc[0], sc[1], nt, inner)

        return run

    @staticmethod
    def torch(a: torch.Tensor, bs: list[torch.Tensor], c: torch.Tensor) -> Callable[[int], None]:
        def run(inner: int) -> None:
            for i in range(inner):
                torch.mm(a, bs[i % len(bs)], out=c)

        return run

    def pair(self, a: torch.Tensor, bs: list[torch.Tensor], c: torch.Tensor, nt: int) -> tuple[Stats, Stats]:
        torch.set_num_threads(nt)
        ref = a.float() @ bs[0].float()
        self.ours(a, bs, c, nt)(1)
        err = (c.float() - ref).abs().max().item() / max(ref.abs().max().item(), 1e-30)
        if err > 2e-2:
            raise SystemExit(f"wrong result: max relative error {err:.3g}")
        cpu = self.cpu_clock and nt == 1
        return compare(self.ours(a, bs, c, nt), self.torch(a, bs, c), self.samples, self.retries, cpu)


def fmt_row(name: str, nt: int, unit: str, ours: float, theirs: float | None, ratio: float | None,
            ratio_best: float | None, extra: str, st: tuple[Stats, ...]) -> str:
    t = "-" if theirs is None else f"{theirs:9.1f}"
    r = "-" if ratio is None else f"{ratio:5.2f}"
    rb = "-" if ratio_best is None else f"{ratio_best:5.2f}"
    noise = "/".join(f"{s.retried}r{s.dirty}d" for s in st)
    return f"{name:34s} {nt:2d}  {ours:9.1f} {t:>9s} {unit:7s} {r:>6s} {rb:>6s}  {extra:18s} {noise}"


def header() -> None:
    print(f"{'case':34s} {'nt':>2s}  {'magnetron':>9s} {'torch':>9s} {'unit':7s} {'ratio':>6s} {'best':>6s}  "
          f"{'':18s} noise (retried/dirty)")


def square(bench: Bench, dtype: torch.dtype, sizes: list[int], threads: list[int],
           own_f32: dict[tuple[int, int], float] | None = None) -> dict[tuple[int, int], float]:
    out = {}
    for n in sizes:
        a = torch.randn(n, n).to(dtype)
        b = torch.randn(n, n).to(dtype)
        c = torch.empty(n, n, dtype=dtype)
        for nt in threads:
            flop = 2.0 * n**3
            if own_f32 is not None:  # float16: against magnetron's own float32 (torch's f16 matmul is scalar)
                torch.set_num_threads(nt)
                st = Stats()
                run = bench.ours(a, [b], c, nt)
                inner = calibrate(run)
                for _ in range(bench.samples):
                    sample(run, inner, st, bench.retries, bench.cpu_clock and nt == 1)
                g = flop / statistics.median(st.times) * 1e-9
                f32 = own_f32.get((n, nt))
                rel = "" if f32 is None else f"f16/f32 {g / f32:4.2f}"
                print(fmt_row(f"float16 {n}^3", nt, "GFLOP/s", g, None, None, None, rel, (st,)), flush=True)
                continue
            sa, sb = bench.pair(a, [b], c, nt)
            ga, gb = flop / statistics.median(sa.times) * 1e-9, flop / statistics.median(sb.times) * 1e-9
            best = min(sb.times) / min(sa.times)
            out[(n, nt)] = ga
            print(fmt_row(f"{str(dtype)[6:]} {n}^3", nt, "GFLOP/s", ga, gb, ga / gb, best, "", (sa, sb)), flush=True)
    return out


def bandwidth(lib: ctypes.CDLL, threads: list[int]) -> dict[int, float]:
    buf = torch.ones(1 << 30, dtype=torch.uint8)
    bw = {}
    for nt in threads:
        lib.mgb_read_bandwidth(buf.data_ptr(), buf.numel(), nt)
        best = min(lib.mgb_read_bandwidth(buf.data_ptr(), buf.numel(), nt) for _ in range(5))
        bw[nt] = buf.numel() / best * 1e-9
        print(f"read bandwidth, {nt} thread(s): {bw[nt]:.1f} GB/s (best of 5, 1 GiB)", flush=True)
    return bw


QWEN_DECODE = [(1024, 3072), (3072, 1024), (1024, 151936)]  # (K, N): 1xK by KxN


def gemv(bench: Bench, dtypes: list[torch.dtype], threads: list[int], bw: dict[int, float]) -> None:
    for dtype in dtypes:
        for k, n in QWEN_DECODE:
            nbytes = k * n * dtype.itemsize
            copies = max(1, -(-COLD_BYTES // nbytes))
            ws = [torch.randn(n, k).to(dtype) for _ in range(copies)]  # nn.Linear weights (N, K)
            x = torch.randn(1, k).to(dtype)
            y = torch.empty(1, n, dtype=dtype)
            for layout in ("x@W.T", "x@W"):
                bs = [w.t() for w in ws] if layout == "x@W.T" else [w.view(k, n) for w in ws]
                for nt in threads:
                    sa, sb = bench.pair(x, bs, y, nt)
                    ga, gb = nbytes / statistics.median(sa.times) * 1e-9, nbytes / statistics.median(sb.times) * 1e-9
                    best = min(sb.times) / min(sa.times)
                    pct = f"{100 * ga / bw[nt]:3.0f}% of {bw[nt]:.0f} GB/s" if nt in bw else ""
                    name = f"{str(dtype)[6:]} 1x{k}x{n} {layout} cold"
                    print(fmt_row(name, nt, "GB/s", ga, gb, ga / gb, best, pct, (sa, sb)), flush=True)
            del ws


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", type=Path, default=Path(__file__).resolve().parents[1] / "build" / "dev")
    ap.add_argument("--quick", action="store_true", help="fewer sizes and samples")
    ap.add_argument("--only", default="f32,bf16,f16,gemv")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--samples", type=int, default=7)
    ap.add_argument("--retries", type=int, default=3)
    ap.add_argument("--path", help="engine path (generic, avx2, avx512, avx512bf16, amx)")
    ap.add_argument("--cpu-clock", action="store_true", help="1-thread rows: time the thread's CPU time, not wall")
    args = ap.parse_args()
    lib = load_lib(args.build)
    if args.path and not lib.mgb_set_path(args.path.encode()):
        raise SystemExit(f"path {args.path} is not supported here")
    only = set(args.only.split(","))
    threads = [int(t) for t in args.threads.split(",")]
    samples = 3 if args.quick else args.samples
    bench = Bench(lib, samples, args.retries, args.cpu_clock)
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"engine path {lib.mgb_path().decode()}, torch {torch.__version__}, load average {' '.join(load)}, "
          f"{samples} samples per contender, {'thread CPU time' if args.cpu_clock else 'wall'} clock at 1 thread")
    header()
    sizes = [256, 1024] if args.quick else [256, 512, 1024, 2048, 4096]
    f32 = square(bench, torch.float32, sizes, threads) if "f32" in only or "f16" in only else {}
    if "bf16" in only:
        square(bench, torch.bfloat16, [n for n in sizes if n >= 512] or [512], threads)
    if "f16" in only:
        square(bench, torch.float16, sizes, threads, own_f32=f32)
    if "gemv" in only:
        bw = bandwidth(lib, threads)
        gemv(bench, [torch.float32, torch.bfloat16], threads, bw)


if __name__ == "__main__":
    main()
