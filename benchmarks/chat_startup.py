"""Time from starting ``magnetron chat`` to its first reply text, with the model already pulled.

    python benchmarks/chat_startup.py                 # the default model (pulls it first if needed)
    python benchmarks/chat_startup.py MODEL --runs 7

Each run starts a fresh process with the question on stdin and waits for the first byte of the
reply on stdout: interpreter start, ``import magnetron``, mapping the model, the tokenizer, the
chat template and the prefill of the prompt all count. The parts are timed in-process too.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

QUESTION = "What is the capital of France? Answer in one sentence."
PARTS = """
import time
t0 = time.perf_counter()
import magnetron
t1 = time.perf_counter()
from magnetron import models
from magnetron.cli_chat import chat_ids
model = models.load({model!r})
t2 = time.perf_counter()
ids = chat_ids(model, [{{"role": "user", "content": {question!r}}}])
t3 = time.perf_counter()
next(model.generate(ids, max_tokens=1, temperature=0, stream=True))
t4 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2, t4 - t3)
"""


def first_text(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((QUESTION + "\n").encode())
    proc.stdin.close()
    proc.stdout.read(1)
    elapsed = time.perf_counter() - t0
    proc.kill()
    proc.wait()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", nargs="?", default="smollm2-135m-instruct")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    from magnetron.models import registry

    if not os.path.exists(args.model):
        registry.pull(args.model)
    cmd = [sys.executable, "-m", "magnetron.cli", "chat", args.model, "--temperature", "0", "--max-tokens", "8"]
    starts = [first_text(cmd) for _ in range(args.runs)]
    code = PARTS.format(model=args.model, question=QUESTION)
    parts = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
             for _ in range(args.runs)]  # fmt: skip
    names = ("import magnetron", "load the model", "chat template + tokens", "prefill + first token")
    print(f"magnetron chat {args.model}: first reply text after {statistics.median(starts):.2f} s "
          f"(median of {args.runs}; best {min(starts):.2f} s)")  # fmt: skip
    for i, name in enumerate(names):
        print(f"  {name:<24} {statistics.median(float(p[i]) for p in parts) * 1e3:7.1f} ms")


if __name__ == "__main__":
    main()
