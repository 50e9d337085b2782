"""Shared pieces of the elementwise op tests: dtype maps, inputs, layouts, references, tolerances.

References come from PyTorch; where PyTorch has no kernel for a dtype (uint16/32/64 for most
ops) the op's NumPy twin computes it. Inputs are built in torch, copied into magnetron, and
viewed there (transposed, stepped, broadcast, ...); references are computed from contiguous
copies of the same values, so the layout handling is what the comparison checks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import magnetron as mag
import numpy as np
import torch

TORCH_DTYPES: dict[mag.dtype.DType, torch.dtype] = {
    mag.float32: torch.float32,
    mag.float16: torch.float16,
    mag.bfloat16: torch.bfloat16,
    mag.float64: torch.float64,
    mag.boolean: torch.bool,
    mag.int8: torch.int8,
    mag.uint8: torch.uint8,
    mag.int16: torch.int16,
    mag.uint16: torch.uint16,
    mag.int32: torch.int32,
    mag.uint32: torch.uint32,
    mag.int64: torch.int64,
    mag.uint64: torch.uint64,
}
MAG_DTYPES = {t: m for m, t in TORCH_DTYPES.items()}
ALL_DTYPES = list(TORCH_DTYPES)
FLOAT_DTYPES = [d for d in ALL_DTYPES if d.is_floating_point]
INT_DTYPES = [d for d in ALL_DTYPES if d.is_integer]

OPS: dict[str, dict[str, Any]] = {r["name"]: r for r in mag._C.op_table()}
OPF_INPLACE, OPF_INT_TO_FLOAT = 1 << 0, 1 << 3
KIND_UNARY, KIND_BINARY, KIND_COMPARE = 0, 1, 2

# (rtol, atol): about two units in the last place of each float format, since PyTorch's
# vectorised math and the C library may each be an ulp off the true value.
TOLERANCES = {
    mag.float32: (2e-5, 1e-6),
    mag.float64: (1e-12, 1e-13),
    mag.float16: (2e-3, 1e-3),
    mag.bfloat16: (1.6e-2, 1e-2),
}

# PyTorch's vectorised erf loses about 1e-6 absolute where gelu's result is tiny (x near -3.3).
OP_ATOL = {("gelu", mag.float32): 1e-5}


def tolerance(op: str, d: mag.dtype.DType) -> tuple[float, float] | None:
    """(rtol, atol) for op's results of dtype d; None for the dtype's default."""
    if (op, d) not in OP_ATOL or d not in TOLERANCES:
        return None
    return TOLERANCES[d][0], OP_ATOL[op, d]


def op_dtypes(op: str) -> list[mag.dtype.DType]:
    """The dtypes in an op's table mask."""
    return [d for d in ALL_DTYPES if OPS[op]["dtypes"] >> d._id & 1]


def int_to_float(op: str) -> bool:
    return bool(OPS[op]["flags"] & OPF_INT_TO_FLOAT)


def category(d: mag.dtype.DType) -> int:
    return 2 if d.is_floating_point else 1 if d.is_integer else 0


def to_torch(t: mag.Tensor) -> torch.Tensor:
    return torch.from_dlpack(t.contiguous()).clone()


def from_torch(t: torch.Tensor) -> mag.Tensor:
    return mag.Tensor(t.contiguous())


def tensor(data: Any, d: mag.dtype.DType) -> mag.Tensor:
    """A magnetron tensor of dtype d holding `data` (a number or nested list)."""
    return from_torch(torch.tensor(data, dtype=TORCH_DTYPES[d]))


def values(d: mag.dtype.DType, shape: tuple[int, ...], lo: float, hi: float, gen: torch.Generator) -> torch.Tensor:
    """Random values of dtype d in [lo, hi] (integer dtypes: clipped to the dtype's range)."""
    if d.is_floating_point:
        return (torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo).to(TORCH_DTYPES[d])
    if d == mag.boolean:
        return torch.randint(0, 2, shape, generator=gen).bool()
    lo_i, hi_i = max(int(lo), int(d.min)), min(int(hi), int(d.max))
    return torch.randint(lo_i, hi_i + 1, shape, generator=gen, dtype=torch.int64).to(TORCH_DTYPES[d])


Maker = Callable[[tuple[int, ...]], mag.Tensor]


def unary_layouts(make: Maker) -> Iterator[tuple[str, mag.Tensor]]:
    yield "contiguous", make((3, 5))
    yield "transposed", make((5, 3)).T
    yield "step", make((3, 10))[:, ::2]
    yield "negative step", make((3, 5))[::-1]
    yield "broadcast", make((1, 5)).expand(3, 5)
    yield "zero-size", make((0, 5))
    yield "rank-0", make(())


def binary_layouts(make_a: Maker, make_b: Maker) -> Iterator[tuple[str, mag.Tensor, mag.Tensor]]:
    yield "contiguous", make_a((3, 5)), make_b((3, 5))
    yield "transposed", make_a((5, 3)).T, make_b((3, 5))
    yield "step", make_a((3, 10))[:, ::2], make_b((6, 5))[::-2]
    yield "broadcast", make_a((3, 1)), make_b((1, 5))
    yield "rank-diff", make_a((5,)), make_b((2, 3, 5))
    yield "expanded", make_a((1, 5)).expand(3, 5), make_b((3, 5))
    yield "zero-size", make_a((0, 5)), make_b((1, 5))
    yield "rank-0", make_a(()), make_b((3, 5))
    yield "both rank-0", make_a(()), make_b(())


@dataclass(frozen=True)
class Ref:
    """An op's reference: torch first, the NumPy twin where torch lacks the dtype."""

    torch_fn: Callable[..., torch.Tensor]
    numpy_fn: Callable[..., Any] | None = None

    def __call__(self, *inputs: torch.Tensor) -> torch.Tensor:
        try:
            return self.torch_fn(*inputs)
        except (NotImplementedError, RuntimeError):
            if self.numpy_fn is None or not all(t.dtype in _NUMPY_OK for t in inputs):
                raise
        return torch.from_numpy(np.asarray(self.numpy_fn(*[t.numpy() for t in inputs])))


_NUMPY_OK = {t for t in TORCH_DTYPES.values() if t != torch.bfloat16}


def reference(op: str, ref: Ref, *inputs: torch.Tensor) -> torch.Tensor:
    """The expected result; integer inputs of float math compute in float32 (MAG_OPF_INT_TO_FLOAT)."""
    if int_to_float(op):
        inputs = tuple(t if t.is_floating_point() else t.to(torch.float32) for t in inputs)
    return ref(*inputs)


def assert_same(
    actual: mag.Tensor,
    expected: torch.Tensor,
    what: str,
    signed_zeros: bool = False,
    tol: tuple[float, float] | None = None,
) -> None:
    """Same dtype, shape and values (floats within the dtype's tolerance or `tol`, NaN == NaN)."""
    exp_dt = MAG_DTYPES[expected.dtype]
    assert actual.dtype == exp_dt, f"{what}: dtype {actual.dtype}, expected {exp_dt}"
    assert actual.shape == tuple(expected.shape), f"{what}: shape {actual.shape}, expected {tuple(expected.shape)}"
    act = to_torch(actual)
    if exp_dt.is_floating_point:
        rtol, atol = tol or TOLERANCES[exp_dt]
        a, e = act.double().numpy(), expected.double().numpy()
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
        if signed_zeros:
            zeros = e == 0
            np.testing.assert_array_equal(np.signbit(a[zeros]), np.signbit(e[zeros]), err_msg=f"{what}: sign of zero")
    else:
        np.testing.assert_array_equal(act.numpy(), expected.numpy(), err_msg=what)


def can_store(result: mag.dtype.DType, dest: mag.dtype.DType) -> bool:
    """Whether an in-place op may write a result of dtype `result` into `dest` (PyTorch's rule)."""
    return category(result) <= category(dest)
