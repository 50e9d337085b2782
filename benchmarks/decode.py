"""Prefill and decode speed of magnetron.models against transformers, side by side in one run.

    python benchmarks/decode.py --shape gpt2_124m                      # f32, builds the checkpoint
    python benchmarks/decode.py --shape qwen3_0.6b --dtype bfloat16
    python benchmarks/decode.py --shape gpt2_124m --dtype bfloat16 --hf-dtype float32
    python benchmarks/decode.py --model path/to/checkpoint --only magnetron
    python benchmarks/decode.py --model SmolLM2-135M-Instruct.Q4_1.gguf --dtype bfloat16 --hf-dtype float32

Greedy, a 128-token prompt, 64 new tokens, 2 threads (issue 8). Runs alternate between the two
contenders and the best of ``--runs`` is reported. Prefill = prompt tokens / time to the first
new token; decode = (new tokens - 1) / time for the rest. The machine's read bandwidth (a large
sum over 2 MiB pages, the best of torch's and magnetron's, best of several) over the bytes one
decode step reads (every weight matrix once, plus the KV cache at mid-generation) gives the
decode bound in tokens/s. A shared machine's
bandwidth moves by tens of percent within seconds, so it is measured right before and right
after each magnetron run, that run's bound takes the mean of the two, and "% of bound" is the
median over the runs of decode / that run's bound (each run's share is listed too). One untimed
generation per contender comes first: it maps the weights in and makes the first allocations.
magnetron loads a checkpoint folder converted to FOLDER.mag (made once and kept beside it: the
format it maps as stored, GPT-2's projections included) unless ``--source folder`` is given; the
.mag is dropped from the page cache first, so its pages are read afresh (``read_fresh``).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "models"))

import magnetron as mag  # noqa: E402
import reference  # noqa: E402
from harness import read_bandwidth  # noqa: E402
from magnetron import models  # noqa: E402
from magnetron.io.convert import convert  # noqa: E402
from magnetron.models import SamplingParams  # noqa: E402

TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bytes_per_token(model: models.LanguageModel, context: int) -> int:
    """Bytes one decode step reads: every weight matrix once (lm_head included, the embedding tables
    only for one row) plus the KV cache."""
    cfg, net = model.config, model.net
    total = sum(
        p.numel * p.dtype.size for name, p in net.named_parameters() if not name.startswith(("embed_", "lm_head"))
    )
    total += net.lm_head.weight.numel * net.lm_head.weight.dtype.size
    kv = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * context * net.dtype.size
    return total + kv


def read_fresh(path: str) -> None:
    """Drop the file from the page cache, so that the mapping reads it back in 2 MiB folios, as after a
    conversion. Pages that aged in the cache (reclaimed and read back piecemeal) come back partly as
    4 KiB folios, which stream slower: Qwen3-0.6B's .mag 83% PMD-mapped decoded ~7% slower than 97%."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def copy_weights(model: models.LanguageModel) -> None:
    """Put every weight into a fresh allocation (tied ones stay tied). On this VM the page cache that a
    mapped .mag lives in can stream far slower than fresh memory (Qwen3-0.6B's embedding: 17 vs 29 GB/s in
    one process, the file 90% PMD-mapped), as the host's backing of long-lived pages degrades: this tells
    the kernels' speed apart from the memory's. The default remains the mapped file (models.load)."""
    copies: dict[int, mag.Tensor] = {}
    state = model.net.state_dict()
    model.net.load_state_dict({k: copies.setdefault(id(v), v.clone()) for k, v in state.items()}, assign=True)


def run_magnetron(model: models.LanguageModel, prompt: list[int], new: int) -> tuple[float, float]:
    model._cache, model._cached_ids = None, []  # a cold cache: no prefix reuse between runs
    out = list(model.generate_ids(prompt, new, SamplingParams(temperature=0)))
    assert len(out) == new, f"stopped after {len(out)} tokens"
    s = model.stats
    return s.prefill_tok_s, s.decode_tok_s


def run_transformers(hf, prompt: list[int], new: int) -> tuple[float, float]:
    ids = torch.tensor([prompt])
    kw = dict(do_sample=False, eos_token_id=None, pad_token_id=0)
    with torch.no_grad():
        first = _timed(lambda: hf.generate(ids, max_new_tokens=1, **kw))
        full = _timed(lambda: hf.generate(ids, max_new_tokens=new, min_new_tokens=new, **kw))
    return len(prompt) / first, (new - 1) / max(full - first, 1e-9)


def load_hf(path: str, dtype: torch.dtype):
    if not path.endswith(".gguf"):
        return reference.load_hf(path, dtype)
    from transformers import AutoModelForCausalLM  # GGUF needs the gguf and accelerate packages

    folder, name = os.path.split(os.path.abspath(path))
    return AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=dtype).eval()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="a HF checkpoint folder or a .gguf file (transformers dequantises it too)")
    src.add_argument("--shape", choices=sorted(reference.BIG), help="build a random checkpoint of this shape")
    ap.add_argument("--dtype", choices=sorted(TORCH_DTYPES), default="float32")
    ap.add_argument("--hf-dtype", choices=sorted(TORCH_DTYPES), help="transformers' weight dtype (default: --dtype)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", choices=["magnetron", "transformers"])
    ap.add_argument(
        "--copy-weights",
        action="store_true",
        help="decode from a copy of the weights in fresh memory instead of the mapped file (see copy_weights)",
    )
    ap.add_argument(
        "--source",
        choices=["mag", "folder"],
        default="mag",
        help="what magnetron loads: the checkpoint converted to FOLDER.mag (kept for later runs) or the folder",
    )
    args = ap.parse_args()

    folder = args.model
    if folder is None:
        folder = os.path.join(tempfile.gettempdir(), f"magnetron-bench-{args.shape}-{args.dtype}")
        if not os.path.isfile(os.path.join(folder, "config.json")):
            print(f"building {args.shape} ({args.dtype}) in {folder} ...", flush=True)
            reference.build(reference.BIG[args.shape], folder, TORCH_DTYPES[args.dtype])

    source = folder
    if args.source == "mag" and not folder.endswith((".mag", ".gguf")):
        source = os.path.normpath(folder) + ".mag"
        if not os.path.isfile(source):
            convert(folder, source)
    torch.set_num_threads(args.threads)
    if source.endswith(".mag"):
        read_fresh(source)
    model = models.load(source, dtype=args.dtype, num_threads=args.threads)
    if args.copy_weights:
        copy_weights(model)
    hf_dtype = args.hf_dtype or args.dtype
    hf = None if args.only == "magnetron" else load_hf(folder, TORCH_DTYPES[hf_dtype])
    prompt = torch.randint(0, min(model.config.vocab_size, 50000), (args.prompt_tokens,)).tolist()
    per_token = bytes_per_token(model, args.prompt_tokens + args.new_tokens // 2)

    # One untimed generation each first: it maps the weights in, allocates the kernels' scratch and the
    # KV cache, and warms both libraries' code paths, none of which is decode speed.
    if args.only != "transformers":
        run_magnetron(model, prompt, 2)
    if hf is not None:
        run_transformers(hf, prompt, 2)
    results: dict[str, list[tuple[float, float]]] = {"magnetron": [], "transformers": []}
    bandwidths: list[float] = []  # per run: the mean of the probes right before and right after magnetron's run
    for _ in range(args.runs):
        before = read_bandwidth(args.threads)
        torch.set_num_threads(args.threads)
        if args.only != "transformers":
            results["magnetron"].append(run_magnetron(model, prompt, args.new_tokens))
        bandwidths.append((before + read_bandwidth(args.threads)) / 2)
        torch.set_num_threads(args.threads)
        if hf is not None:
            results["transformers"].append(run_transformers(hf, prompt, args.new_tokens))

    setup = f"{args.threads} threads, prompt {args.prompt_tokens}, new {args.new_tokens}"
    print(f"{model.config.arch}: magnetron {args.dtype} from {source}, transformers {hf_dtype}, {setup}")
    bounds = [b / per_token for b in bandwidths]
    seen = ", ".join(f"{b / 1e9:.1f}" for b in bandwidths)
    print(f"read bandwidth {seen} GB/s, {per_token / 1e6:.1f} MB per token: bound {max(bounds):.1f} tok/s at best")
    for name, runs in results.items():
        if runs:
            prefill = max(r[0] for r in runs)
            decode = max(r[1] for r in runs)
            shares = [100 * r[1] / b for r, b in zip(runs, bounds)]
            listed = " ".join(f"{x:.0f}" for x in shares)
            print(
                f"{name:>12}: prefill {prefill:7.1f} tok/s   decode {decode:6.2f} tok/s "
                f"({statistics.median(shares):.0f}% of bound; runs: {listed})"
            )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # magnetron's alone: decode_memory.py
    print(f"peak RSS {rss:.0f} MB (the whole process, probe buffer included), magnetron {mag.__version__}")


if __name__ == "__main__":
    main()
