"""Loading and saving .mag snapshots, against safetensors and torch in the same run.

    PYTHONPATH=python python benchmarks/load.py [--gb 1.2] [--small-gb 0.12] [--dir /tmp]

Targets (issue 7): loading a 1.2 GB bfloat16 snapshot takes <= 10 ms and does not grow with
the file size; saving runs at >= 80% of the speed of ``cp`` of the same bytes. Files are hot in
the page cache (dropping caches would disturb other users of the machine), so "load" measures
what the loader itself costs: mapping and building tensors, not reading the disk. Contenders
are interleaved (A, B, C, A, B, C, ...) so they share the same background noise; we report
the best and the median. The big files are deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import magnetron as mag


def model_like(gb: float, layers: int = 12) -> dict:
    """Transformer-shaped bfloat16 tensors (MLP = 2.75 x hidden) adding up to about `gb` GB.

    The layer count is fixed, so files of different sizes have the same tensors, only larger.
    """
    import torch

    g = torch.Generator().manual_seed(0)
    hidden = max(64, round((gb * 1e9 / (2 * 12.25 * layers)) ** 0.5 / 64) * 64)
    mlp = hidden * 11 // 4
    out = {}
    for i in range(layers):
        p = f"model.layers.{i}."
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            out[p + f"self_attn.{n}.weight"] = torch.empty(hidden, hidden, dtype=torch.bfloat16).normal_(generator=g)
        for n, shape in (("gate_proj", (mlp, hidden)), ("up_proj", (mlp, hidden)), ("down_proj", (hidden, mlp))):
            out[p + f"mlp.{n}.weight"] = torch.empty(shape, dtype=torch.bfloat16).normal_(generator=g)
        for n in ("input_layernorm", "post_attention_layernorm"):
            out[p + f"{n}.weight"] = torch.ones(hidden, dtype=torch.bfloat16)
    return out


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def interleave(contenders: dict[str, Callable[[], object]], samples: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for fn in contenders.values():  # warm up
        fn()
    for _ in range(samples):
        for name, fn in contenders.items():
            times[name].append(timed(fn))
    return times


def summary(t: list[float]) -> tuple[float, float]:
    return min(t), statistics.median(t)


def load_contenders(mag_path: Path, st_path: Path, pt_path: Path) -> dict[str, Callable[[], object]]:
    import torch
    from safetensors import safe_open

    def mag_load() -> object:
        snap = mag.load(mag_path)
        return [snap[k] for k in snap]

    def st_load() -> object:
        with safe_open(st_path, framework="pt") as f:
            return {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no __iter__)

    def pt_load() -> object:
        return torch.load(pt_path, mmap=True, weights_only=True)

    return {"mag.load": mag_load, "safetensors safe_open": st_load, "torch.load(mmap=True)": pt_load}


def write_all(tensors: dict, d: Path, tag: str) -> tuple[Path, Path, Path]:
    import torch
    from safetensors.torch import save_file

    paths = (d / f"{tag}.mag", d / f"{tag}.safetensors", d / f"{tag}.pt")
    mag.save(paths[0], tensors)
    save_file(tensors, paths[1])
    torch.save(tensors, paths[2])
    return paths


def save_vs_cp(tensors: dict, src: Path, d: Path, samples: int) -> dict[str, list[float]]:
    heap = {k: mag.Tensor.from_dlpack(v) for k, v in tensors.items()}  # the bytes live in RAM, like a trained model
    dst = d / "save.mag"

    def save() -> None:
        mag.save(dst, heap)  # includes fsync: the file is on disk when it returns
        dst.unlink()

    def cp_sync() -> None:
        subprocess.run(["cp", "--reflink=never", str(src), str(dst)], check=True)
        fd = os.open(dst, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        dst.unlink()

    def cp() -> None:
        subprocess.run(["cp", "--reflink=never", str(src), str(dst)], check=True)
        dst.unlink()

    return interleave({"mag.save (fsync)": save, "cp + fsync": cp_sync, "cp (page cache only)": cp}, samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=1.2)
    ap.add_argument("--small-gb", type=float, default=0.12)
    ap.add_argument("--samples", type=int, default=15)
    ap.add_argument("--save-samples", type=int, default=3)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--json", help="also write the numbers here")
    args = ap.parse_args()

    d = Path(tempfile.mkdtemp(prefix="mag-bench-", dir=args.dir))
    results: dict[str, object] = {}
    try:
        big = model_like(args.gb)
        small = model_like(args.small_gb)
        nbytes = {tag: sum(t.numel() * 2 for t in ts.values()) for tag, ts in (("big", big), ("small", small))}
        big_paths = write_all(big, d, "big")
        small_paths = write_all(small, d, "small")
        print(f"files: {nbytes['big'] / 1e9:.2f} GB ({len(big)} tensors) and "
              f"{nbytes['small'] / 1e9:.2f} GB ({len(small)} tensors), bfloat16, hot in the page cache")  # fmt: skip

        print("\nload (best / median ms)")
        for tag, paths in (("small", small_paths), ("big", big_paths)):
            times = interleave(load_contenders(*paths), args.samples)
            for name, t in times.items():
                best, med = summary(t)
                print(f"  {tag:5} {name:24} {best * 1e3:8.2f} {med * 1e3:8.2f}")
                results[f"load.{tag}.{name}"] = {"best_ms": best * 1e3, "median_ms": med * 1e3}
            ref = statistics.median(times["mag.load"])
            for name, t in times.items():
                if name != "mag.load":
                    print(f"        {name} / mag.load = {statistics.median(t) / ref:.1f}x")
        grow = results["load.big.mag.load"]["median_ms"] / results["load.small.mag.load"]["median_ms"]  # type: ignore[index]
        print(f"  mag.load big / small = {grow:.2f}x for {nbytes['big'] / nbytes['small']:.0f}x the bytes")

        del small
        print(f"\nsave {nbytes['big'] / 1e9:.2f} GB (best / median s, GB/s of the median)")
        times = save_vs_cp(big, big_paths[0], d, args.save_samples)
        for name, t in times.items():
            best, med = summary(t)
            print(f"  {name:22} {best:7.2f} {med:7.2f}  {nbytes['big'] / med / 1e9:6.2f} GB/s")
            results[f"save.{name}"] = {"best_s": best, "median_s": med}
        save = statistics.median(times["mag.save (fsync)"])
        for name in ("cp + fsync", "cp (page cache only)"):
            print(f"  mag.save speed / {name} speed = {statistics.median(times[name]) / save:.0%}")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
