"""Training-loop speed vs PyTorch in one run: XOR (2000 epochs) and per-op overhead on tiny tensors.

    PYTHONPATH=python python benchmarks/training.py     (or with magnetron installed)

Prints medians of interleaved samples (benchmarks/harness.py) and ratios torch / magnetron
(> 1 means magnetron is faster).
"""

from __future__ import annotations

import sys
from pathlib import Path

import magnetron as mag
import torch
from harness import compare, noise_note

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "xor"))
import main as xor  # noqa: E402


def xor_torch(epochs: int = 2000) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh(), torch.nn.Linear(2, 1), torch.nn.Tanh())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.tensor(xor.INPUTS), torch.tensor(xor.TARGETS)
    for _ in range(epochs):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def tiny_add(requires_grad: bool) -> dict:
    a, b = mag.Tensor([1.0, 2.0, 3.0, 4.0], requires_grad=requires_grad), mag.Tensor([1.0, 2.0, 3.0, 4.0])
    ta, tb = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=requires_grad), torch.tensor([1.0, 2.0, 3.0, 4.0])
    return compare({"magnetron": lambda: a + b, "torch": lambda: ta + tb})


def report(name: str, r: dict, unit: float, unit_name: str) -> None:
    m, t = r["magnetron"].median, r["torch"].median
    print(
        f"{name:42s} magnetron {m * unit:9.3f} {unit_name}  torch {t * unit:9.3f} {unit_name}  "
        f"torch/magnetron {t / m:5.2f}  {noise_note(r)}"
    )


def main() -> None:
    torch.set_num_threads(1)
    mag.context.num_threads = 1
    xor_runs = compare({"magnetron": lambda: xor.train(verbose=False), "torch": xor_torch}, samples=5)
    report("XOR, 2000 epochs", xor_runs, 1e3, "ms")
    report("a + b on 4 elements", tiny_add(False), 1e6, "us")
    report("a + b on 4 elements, requires_grad", tiny_add(True), 1e6, "us")


if __name__ == "__main__":
    main()
