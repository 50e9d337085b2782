"""Per-op overhead on tiny tensors: ``a + b`` on 4 elements, with and without requires_grad, vs PyTorch."""

from __future__ import annotations

import torch
from harness import compare, noise_note

import magnetron as mag


def main() -> None:
    torch.set_num_threads(1)
    rows = []
    for grad in (False, True):
        a, b = mag.Tensor([1.0, 2.0, 3.0, 4.0], requires_grad=grad), mag.Tensor([1.0, 2.0, 3.0, 4.0])
        ta, tb = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=grad), torch.tensor([1.0, 2.0, 3.0, 4.0])
        r = compare({"magnetron": lambda: a + b, "torch": lambda: ta + tb})
        rows.append((f"a + b, 4 elements, requires_grad={grad}", r))
    for name, r in rows:
        m, t = r["magnetron"].median, r["torch"].median
        print(f"{name:45s} magnetron {m * 1e6:7.3f} us  torch {t * 1e6:7.3f} us  ratio (torch/mag) {t / m:5.2f}  "
              + noise_note(r))


if __name__ == "__main__":
    main()
