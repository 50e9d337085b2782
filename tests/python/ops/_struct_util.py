"""Shared pieces of the structure and matmul tests: dtypes, random data and operand layouts.

A layout turns a torch tensor into a magnetron tensor that holds the same values through
different strides (transposed, sliced with a step, negative steps, broadcast). Tensors cross
between the libraries through DLPack, which covers every dtype including bfloat16.
"""

from __future__ import annotations

import math

import magnetron as mag
import torch

DTYPES = [
    "float32", "float16", "bfloat16", "float64", "bool",
    "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
]  # fmt: skip
FLOATS = ["float32", "float16", "bfloat16", "float64"]
LAYOUTS = ["contiguous", "transposed", "strided", "negative", "broadcast"]

# torch has no kernels of some data-movement ops for these: run them on the same-size signed type's bits
_SIGNED_TWIN = {"uint16": torch.int16, "uint32": torch.int32, "uint64": torch.int64}


def mag_dtype(name: str) -> mag.dtype.DType:
    return mag.boolean if name == "bool" else getattr(mag, name)


def rand(shape: tuple[int, ...], dtype: str, gen: torch.Generator) -> torch.Tensor:
    """Random values that every dtype represents exactly (small integers, or floats rounded to the dtype)."""
    if dtype == "bool":
        return torch.rand(shape, generator=gen) < 0.5
    if dtype in FLOATS:
        return torch.randn(shape, generator=gen, dtype=torch.float64).to(getattr(torch, dtype))
    lo = 0 if dtype.startswith("u") else -100
    return torch.randint(lo, 100, shape, generator=gen).to(getattr(torch, dtype))


def to_mag(t: torch.Tensor) -> mag.Tensor:
    return mag.Tensor(t.contiguous())


def to_torch(m: mag.Tensor) -> torch.Tensor:
    return torch.from_dlpack(m.contiguous()).clone()


def make(t: torch.Tensor, layout: str) -> tuple[mag.Tensor, torch.Tensor]:
    """A magnetron tensor in `layout` and the torch tensor of the values it holds."""
    if layout == "contiguous" or t.dim() == 0:
        return to_mag(t), t
    if layout == "transposed":
        if t.dim() < 2:
            return make(t, "negative")
        return to_mag(t.transpose(-1, -2)).transpose(-1, -2), t
    if layout == "strided":  # every other element of a buffer twice as long along the last dim
        big = torch.zeros((*t.shape[:-1], 2 * t.shape[-1]), dtype=t.dtype)
        bits(big)[..., ::2] = bits(t)
        return to_mag(big)[..., ::2], t
    if layout == "negative":
        return to_mag(bits(t).flip(-1).view(t.dtype))[..., ::-1], t
    if layout == "broadcast":  # the first entry along dim 0, expanded (stride 0)
        if t.shape[0] == 0:
            return to_mag(t), t
        base = t.narrow(0, 0, 1)
        return to_mag(base).expand(*t.shape), base.expand(t.shape)
    raise ValueError(layout)


def bits(t: torch.Tensor) -> torch.Tensor:
    """t itself, or its bits as the same-size signed type where torch lacks kernels for the dtype."""
    twin = _SIGNED_TWIN.get(str(t.dtype).removeprefix("torch."))
    return t.view(twin) if twin is not None else t


def unbits(t: torch.Tensor, dtype: str) -> torch.Tensor:
    twin = _SIGNED_TWIN.get(dtype)
    return t.view(getattr(torch, dtype)) if twin is not None else t


def assert_same(got: mag.Tensor, want: torch.Tensor) -> None:
    """Exact equality of values, dtype and shape (data-movement ops change no bits)."""
    g = to_torch(got)
    assert g.dtype == want.dtype, (g.dtype, want.dtype)
    assert tuple(g.shape) == tuple(want.shape), (g.shape, want.shape)
    assert torch.equal(bits(g), bits(want.contiguous())), (g, want)


def chi2_critical(df: int, z: float = 3.719) -> float:
    """Upper chi-square quantile (Wilson-Hilferty); z = 3.719 is the 0.9999 normal quantile."""
    c = 2.0 / (9.0 * df)
    return df * (1.0 - c + z * math.sqrt(c)) ** 3


class threads:
    """Context manager: run with `n` magnetron threads, then restore the previous count."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __enter__(self) -> None:
        self.old = mag.context.num_threads
        mag.context.num_threads = self.n

    def __exit__(self, *exc: object) -> None:
        mag.context.num_threads = self.old
