"""Reductions, softmax/log_softmax, topk and cumsum as ``Tensor`` methods (API.md section 5).

Signatures and semantics follow PyTorch. ``dim`` may be ``None`` (every dim), an int or a
tuple/list of ints (an empty one means every dim, as in torch); the C front ends get the dims as
a bitmask and validate shapes and dtypes.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import NamedTuple

from . import _C
from . import dtype as _dt
from ._tensor import Tensor

_ID: dict[str, int] = {row["name"]: row["id"] for row in _C.op_table()}

Dims = int | Sequence[int] | None


class TopK(NamedTuple):
    """What ``topk`` returns: unpacks as ``values, indices`` (like torch.return_types.topk)."""

    values: Tensor
    indices: Tensor


def _int(op: str, what: str, v: object) -> int:
    """v as an int: Python and NumPy integers (anything with __index__), not bools."""
    if not isinstance(v, bool):
        try:
            return operator.index(v)  # type: ignore[arg-type]
        except TypeError:
            pass
    raise TypeError(f"{op}: {what} must be an int, got {type(v).__name__} ({v!r})")


def _norm_dim(op: str, x: Tensor, d: object) -> int:
    n = _int(op, "dim", d)
    r = max(x.rank, 1)
    if not -r <= n < r:
        raise IndexError(
            f"{op}: dim {n} is out of range for a tensor of shape {tuple(x.shape)} (expected in [{-r}, {r - 1}])"
        )
    return n % r


def _dims_mask(op: str, x: Tensor, dim: Dims) -> int:
    """The reduced dims as a bitmask; -1 for every dim."""
    if dim is None:
        return -1
    dims = (dim,) if not isinstance(dim, (tuple, list)) else tuple(dim)
    if not dims:
        return -1
    mask = 0
    for d in dims:
        n = _norm_dim(op, x, d)
        if mask >> n & 1:
            raise ValueError(f"{op}: dim {n} appears more than once in {dim!r}")
        mask |= 1 << n
    return mask


def _check_keepdim(op: str, keepdim: object) -> bool:
    if not isinstance(keepdim, bool):
        raise TypeError(f"{op}: keepdim must be a bool, got {type(keepdim).__name__}")
    return keepdim


def _reduce(op: str, x: Tensor, dim: Dims, keepdim: bool, *extra: float) -> Tensor:
    return _C._op(_ID[op], [x], [_dims_mask(op, x, dim), _check_keepdim(op, keepdim), *extra])


def _with_dtype(op: str, x: Tensor, dtype: _dt.DType | None) -> tuple[Tensor, _dt.DType | None]:
    """torch's ``dtype=``: the input is cast to it first and the result has it."""
    if dtype is None:
        return x, None
    d = _dt.as_dtype(dtype, op)
    return x.cast(d), d


def _as(r: Tensor, d: _dt.DType | None) -> Tensor:
    return r if d is None else r.cast(d)


def _sum(self: Tensor, dim: Dims = None, keepdim: bool = False, *, dtype: _dt.DType | None = None) -> Tensor:
    """Sum over ``dim``; integers and booleans sum to int64 (wrapping), 16-bit floats accumulate in float32."""
    x, d = _with_dtype("sum", self, dtype)
    return _as(_reduce("sum", x, dim, keepdim), d)


def _mean(self: Tensor, dim: Dims = None, keepdim: bool = False, *, dtype: _dt.DType | None = None) -> Tensor:
    """Mean over ``dim`` (floating point only, as in torch: pass ``dtype=`` for integers); empty -> nan."""
    x, _ = _with_dtype("mean", self, dtype)
    return _reduce("mean", x, dim, keepdim)


def _prod(self: Tensor, dim: Dims = None, keepdim: bool = False, *, dtype: _dt.DType | None = None) -> Tensor:
    """Product over ``dim``; integers and booleans multiply in int64 (wrapping)."""
    x, d = _with_dtype("prod", self, dtype)
    return _as(_reduce("prod", x, dim, keepdim), d)


def _plain(op: str, doc: str) -> Callable[..., Tensor]:
    """A reduction whose only arguments are ``dim`` and ``keepdim``."""

    def method(self: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
        return _reduce(op, self, dim, keepdim)

    method.__doc__ = doc
    return method


_min = _plain("min", "Smallest value over ``dim`` (the values only; ``argmin`` gives the indices). NaN wins.")
_max = _plain("max", "Largest value over ``dim`` (the values only; ``argmax`` gives the indices). NaN wins.")
_argmin = _plain("argmin", "int64 index of the first smallest value (flat over the reduced dims; all dims for None).")
_argmax = _plain("argmax", "int64 index of the first largest value (flat over the reduced dims; all dims for None).")
_all = _plain("all", "True where every element over ``dim`` is non-zero (boolean result).")
_any = _plain("any", "True where some element over ``dim`` is non-zero (boolean result).")
_logsumexp = _plain(
    "logsumexp", "``log(sum(exp(x)))`` over ``dim``, computed stably; integers and booleans give float32."
)


def _correction(op: str, unbiased: bool | None, correction: float | None) -> float:
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op}: pass either unbiased or correction, not both")
    if correction is not None:
        if isinstance(correction, bool) or not isinstance(correction, (int, float)):
            raise TypeError(f"{op}: correction must be a number, got {type(correction).__name__}")
        return correction
    if unbiased is not None and not isinstance(unbiased, bool):
        raise TypeError(f"{op}: unbiased must be a bool, got {type(unbiased).__name__}")
    return 0 if unbiased is False else 1


def _var_like(op: str, doc: str) -> Callable[..., Tensor]:
    """var or std: torch's signature, including the ``x.var(unbiased)`` overload."""

    def method(
        self: Tensor,
        dim: Dims | bool = None,
        unbiased: bool | None = None,
        keepdim: bool = False,
        *,
        correction: float | None = None,
    ) -> Tensor:
        if isinstance(dim, bool):
            if unbiased is not None:
                raise TypeError(f"{op}: unbiased given twice")
            dim, unbiased = None, dim
        return _reduce(op, self, dim, keepdim, _correction(op, unbiased, correction))

    method.__doc__ = doc
    return method


_var = _var_like("var", "Variance over ``dim``, dividing by ``max(0, n - correction)`` (correction 1 unless given).")
_std = _var_like("std", "Standard deviation over ``dim``: the square root of ``var`` with the same arguments.")


def _along(op: str, x: Tensor, dim: int, *extra: object) -> Tensor:
    return _C._op(_ID[op], [x], [_int(op, "dim", dim), *extra])


def _softmax(self: Tensor, dim: int = -1, dtype: _dt.DType | None = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``, stable; 16-bit floats compute in float32."""
    x, _ = _with_dtype("softmax", self, dtype)
    return _along("softmax", x, dim)


def _log_softmax(self: Tensor, dim: int = -1, dtype: _dt.DType | None = None) -> Tensor:
    """``x - logsumexp(x)`` along ``dim``, stable; 16-bit floats compute in float32."""
    x, _ = _with_dtype("log_softmax", self, dtype)
    return _along("log_softmax", x, dim)


def _cumsum(self: Tensor, dim: int, *, dtype: _dt.DType | None = None) -> Tensor:
    """Running sum along ``dim``; integers and booleans give int64."""
    x, d = _with_dtype("cumsum", self, dtype)
    return _as(_along("cumsum", x, dim), d)


def _topk(self: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> TopK:
    """The ``k`` largest (``largest=False``: smallest) elements along ``dim`` and their int64 indices.

    NaN counts as larger than every number, as in torch. The result is always sorted (best
    first; among equal values the lower index first), which ``sorted=False`` also allows.
    """
    k, dim = _int("topk", "k", k), _int("topk", "dim", dim)
    shape = list(self.shape)
    if shape:
        shape[_norm_dim("topk", self, dim)] = k if k >= 0 else 0  # a bad k is reported by the op
    indices = Tensor.empty(*shape, dtype=_dt.int64)
    values = _C._op(_ID["topk"], [self, indices], [k, dim, bool(largest), bool(sorted)])
    return TopK(values, indices)


_METHODS = {
    "sum": _sum,
    "mean": _mean,
    "prod": _prod,
    "min": _min,
    "max": _max,
    "argmin": _argmin,
    "argmax": _argmax,
    "all": _all,
    "any": _any,
    "var": _var,
    "std": _std,
    "logsumexp": _logsumexp,
    "softmax": _softmax,
    "log_softmax": _log_softmax,
    "cumsum": _cumsum,
    "topk": _topk,
}

for _name, _fn in _METHODS.items():
    _fn.__name__ = _fn.__qualname__ = _name
    setattr(Tensor, _name, _fn)
