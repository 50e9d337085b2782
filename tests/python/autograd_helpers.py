"""Compare magnetron's forward and backward with torch.autograd on the same inputs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import magnetron as mag
import numpy as np
import torch


def to_torch(x: mag.Tensor) -> torch.Tensor:
    return torch.from_dlpack(x.detach().contiguous()).clone()


def check_grad(
    fn: Callable[..., Any],
    shapes: Sequence[tuple[int, ...]],
    *,
    torch_fn: Callable[..., Any] | None = None,
    dtype: mag.dtype.DType = mag.float64,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    low: float = -2.0,
    high: float = 2.0,
    transpose: bool = False,
    seed: int = 0,
) -> None:
    """fn(*tensors) -> tensor, run by both libraries (fn must use the shared Tensor method names)."""
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(low, high, size=s) for s in shapes]
    mags, torchs = [], []
    for a in arrays:
        if transpose and a.ndim >= 2:  # a non-contiguous leaf: the transpose of a contiguous tensor
            base = mag.Tensor(np.ascontiguousarray(a.swapaxes(-1, -2)), dtype=dtype)
            t = base.transpose(-1, -2)
            t = _leaf(t)
        else:
            t = mag.Tensor(a, dtype=dtype, requires_grad=True)
        mags.append(t)
        torchs.append(to_torch(t).requires_grad_(True))
    out = fn(*mags)
    ref = (torch_fn or fn)(*torchs)
    np.testing.assert_allclose(to_torch(out).double().numpy(), ref.detach().double().numpy(), atol=atol, rtol=rtol)
    seed_grad = rng.uniform(-1, 1, size=tuple(ref.shape))
    out.backward(mag.Tensor(seed_grad, dtype=out.dtype))
    ref.backward(torch.tensor(seed_grad, dtype=ref.dtype))
    for m, t in zip(mags, torchs):
        assert m.grad is not None, "no gradient reached a leaf"
        np.testing.assert_allclose(to_torch(m.grad).double().numpy(), t.grad.double().numpy(), atol=atol, rtol=rtol)


def _leaf(t: mag.Tensor) -> mag.Tensor:
    t.requires_grad = True
    return t
