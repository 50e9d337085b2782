"""Elementwise methods that need Python-side arguments: ``clamp`` and the integer ``pow`` check.

The plain elementwise ops (``x.exp()``, ``x.add(y)``, ...) are generated from the op table by
the binding; their operator dunders are mapped in ``_tensor.py``.
"""

from __future__ import annotations

import numbers
from typing import Any

from . import _C

Tensor = _C.Tensor
_CLAMP = next(r["id"] for r in _C.op_table() if r["name"] == "clamp")


def _clamp(x: Tensor, lo: Any, hi: Any, out: Tensor | None) -> Tensor:
    if lo is None and hi is None:
        raise ValueError("clamp: at least one of min and max must be given")
    if isinstance(lo, Tensor) or isinstance(hi, Tensor):  # tensor bounds: two broadcasting passes
        r = x
        if lo is not None:
            r = r.maximum(lo) if out is None else out.maximum_(lo)
        if hi is not None:
            r = r.minimum(hi) if out is None else out.minimum_(hi)
        return r
    given = (lo is not None) | (hi is not None) << 1
    return _C._op(_CLAMP, [x], [0 if lo is None else lo, 0 if hi is None else hi, given], out)


def clamp(self: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """``min(max(x, min), max)`` like torch.clamp; either bound may be None, a number or a tensor.

    Number bounds are weak scalars (an integer tensor clamped to 0.5 gives float32); NaN in x
    or in a bound gives NaN; min > max gives max everywhere. Tensor bounds broadcast and run as
    ``x.maximum(min).minimum(max)`` (so there -0.0 clamped at 0.0 becomes +0.0).
    """
    return _clamp(self, min, max, None)


def clamp_(self: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """In-place ``clamp``; keeps this tensor's dtype (TypeError if the result type cannot be stored)."""
    _clamp(self, min, max, self)
    return self


def _check_exponent(x: Tensor, e: Any) -> None:
    # PyTorch refuses a negative integer scalar exponent on integer tensors (the result would be 0);
    # tensor exponents keep torch's truncated values.
    if isinstance(e, numbers.Integral) and not isinstance(e, bool) and e < 0 and x.dtype.is_integral:
        raise ValueError(f"pow: integers to negative integer powers are not allowed (dtype {x.dtype}, exponent {e})")


_c_pow, _c_pow_ = Tensor.pow, Tensor.pow_


def pow(self: Tensor, other: Any) -> Tensor:
    _check_exponent(self, other)
    return _c_pow(self, other)


def pow_(self: Tensor, other: Any) -> Tensor:
    _check_exponent(self, other)
    return _c_pow_(self, other)


pow.__doc__ = pow_.__doc__ = _c_pow.__doc__

for _fn in (clamp, clamp_, pow, pow_):
    setattr(Tensor, _fn.__name__, _fn)
