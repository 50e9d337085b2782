"""``magnetron info`` and ``magnetron pull``: what this machine runs, and the local model cache."""

from __future__ import annotations

import argparse
import platform
import sys
from collections import Counter

from . import __version__
from .context import context
from .models import registry


def _size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"


def info_args(p: argparse.ArgumentParser) -> None:
    del p  # no options


def info(ns: argparse.Namespace) -> int:
    from .io.mag import load

    cpu = context.cpu_info()
    built, runnable = ", ".join(cpu["variants_built"]), ", ".join(cpu["variants_available"])
    ident = f"family {cpu['family']}, model {cpu['model_number']}, stepping {cpu['stepping']}"
    rows = [
        ("magnetron", f"{__version__} (Python {platform.python_version()}, {platform.machine()})"),
        ("cpu", f"{cpu['vendor']} {cpu['model']} ({ident}), {cpu['cpus']} usable CPUs"),
        ("features", " ".join(cpu["features"]) or "-"),
        ("kernels", f"{cpu['variant']} (built: {built}; runnable here: {runnable})"),
        ("threads", str(context.num_threads)),
        ("cache", str(registry.models_dir())),
    ]
    for key, value in rows:
        print(f"{key + ':':<10} {value}")
    pulled = registry.list_cached()
    if not pulled:
        print(f"{'models:':<10} none pulled yet (magnetron pull {registry.DEFAULT_MODEL})")
    width = max((len(name) for name, _ in pulled), default=0)
    for i, (name, path) in enumerate(pulled):
        try:
            snap = load(path)
            weights: Counter[str] = Counter()  # bytes per dtype: the dtype of the matrices wins
            for t in snap.values():
                weights[t.dtype.name] += t.numel * t.dtype.size
            about = f"{snap.metadata.get('general.architecture', '?')}, {weights.most_common(1)[0][0]}"
        except ValueError as e:  # a damaged file: say so and go on listing
            about = f"unreadable: {e}"
        label = "models:" if i == 0 else ""
        print(f"{label:<10} {name:<{width}}  {_size(path.stat().st_size):>9}  {about}")
    return 0


def pull_args(p: argparse.ArgumentParser) -> None:
    known = "; ".join(f"{m.name}: {m.description}" for m in registry.KNOWN.values())
    what = f"a known model name (default {registry.DEFAULT_MODEL}; known: {known}), a local model folder or "
    what += ".safetensors/.gguf/.mag file, or a Hugging Face repo id (needs magnetron[hub])"
    p.add_argument("source", nargs="?", default=registry.DEFAULT_MODEL, help=what)
    p.add_argument("--name", help="what to call the model in the cache (default: from the source)")
    dtypes = ["float32", "bfloat16", "float16"]
    p.add_argument("--dtype", choices=dtypes, help="cast the weights (default: as stored; quantised GGUF: bfloat16)")
    p.add_argument("--force", action="store_true", help="fetch and convert again even when already pulled")


def pull(ns: argparse.Namespace) -> int:
    path = registry.pull(ns.source, name=ns.name, dtype=ns.dtype, force=ns.force, log=log)
    print(f"{path.stem}: {_size(path.stat().st_size)} in {path}")
    return 0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


SUBCOMMANDS = (
    ("info", "the CPU, its features, the kernel variant and thread count, and the pulled models", info_args, info),
    ("pull", "fetch a model into the local cache (~/.cache/magnetron or $MAGNETRON_HOME) as a .mag", pull_args, pull),
)
