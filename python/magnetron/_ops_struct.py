"""Selection, structure, fills and ``matmul``: the Tensor methods of the custom ops of that section of
the op table (``src/core/ops.def``). Argument handling lives here; the work is ``_C._op``. Semantics
follow PyTorch (``torch.gather``, ``torch.where``, ``torch.matmul``, ...) unless a docstring says otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _C, _tensor
from . import dtype as _dt

Tensor = _C.Tensor
DType = _dt.DType
Scalar = bool | int | float

_ID: dict[str, int] = {row["name"]: row["id"] for row in _C.op_table()}


def _check_int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{what} must be an int, got {type(v).__name__}")
    return v


def _check_tensor(v: Any, what: str) -> Tensor:
    if not isinstance(v, Tensor):
        raise TypeError(f"{what} must be a Tensor, got {type(v).__name__}")
    return v


def _scalar_value(v: Any, what: str) -> Scalar:
    """A Python number, or the value of a rank-0 tensor (as PyTorch accepts for fill values)."""
    if isinstance(v, Tensor):
        if v.rank != 0:
            raise ValueError(f"{what}: the value must be a number or a rank-0 tensor, got shape {v.shape}")
        return v.item()
    if not isinstance(v, (bool, int, float)):
        raise TypeError(f"{what}: the value must be a number, got {type(v).__name__}")
    return v


# ---- selection ----
def gather(self: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j] = self[index[i][j]][j]`` for ``dim=0`` (and so on), like ``torch.gather``.

    ``index`` is an integer tensor of this tensor's rank; indices must lie in ``[0, size)``
    (IndexError otherwise; negative indices are out of range, as in PyTorch).
    """
    return _C._op(_ID["gather"], [self, _check_tensor(index, "gather: index")], [_check_int(dim, "gather: dim")])


def index_select(self: Tensor, dim: int, index: Tensor) -> Tensor:
    """The entries listed by the 1-D integer ``index`` along ``dim`` (a copy), like ``torch.index_select``."""
    idx = _check_tensor(index, "index_select: index")
    return _C._op(_ID["index_select"], [self, idx], [_check_int(dim, "index_select: dim")])


def masked_fill(self: Tensor, mask: Tensor, value: Scalar | Tensor) -> Tensor:
    """A copy with ``value`` where the boolean ``mask`` (broadcast with this tensor) is true."""
    v = _scalar_value(value, "masked_fill")
    return _C._op(_ID["masked_fill"], [self, _check_tensor(mask, "masked_fill: mask")], [v])


def masked_fill_(self: Tensor, mask: Tensor, value: Scalar | Tensor) -> Tensor:
    """In place: ``value`` where the boolean ``mask`` (broadcast to this tensor's shape) is true."""
    v = _scalar_value(value, "masked_fill_")
    _C._op(_ID["masked_fill"], [self, _check_tensor(mask, "masked_fill_: mask")], [v], self)
    return self


def _category(d: DType) -> int:
    return 2 if d.is_floating_point else 0 if d == _dt.boolean else 1


def _where_operand(v: Any, other: Any) -> Tensor:
    """A Python number as a rank-0 tensor: a "weak" scalar that takes the other operand's dtype
    unless it is of a higher category (bool < int < float), like PyTorch."""
    if isinstance(v, Tensor):
        return v
    if not isinstance(v, (bool, int, float)):
        raise TypeError(f"where: x and y must be Tensors or numbers, got {type(v).__name__}")
    cat = 0 if isinstance(v, bool) else 1 if isinstance(v, int) else 2
    if isinstance(other, Tensor) and cat <= _category(other.dtype):
        d = other.dtype
    else:
        d = (_dt.boolean, _dt.int64, _tensor._default_dtype)[cat]
    if d.is_integer and not isinstance(v, bool) and not d.min <= v <= d.max:
        raise ValueError(f"where: the value {v} cannot be converted to {d} without overflow")
    return _tensor.full((), fill_value=v, dtype=d)


def where(condition: Tensor | Any, x: Tensor | Scalar, y: Tensor | Scalar) -> Tensor:
    """Elements of ``x`` where the boolean ``condition`` is true, else of ``y`` (broadcast together).

    ``x`` and ``y`` may be Python numbers; the result dtype promotes like ``torch.where``.
    """
    cond = condition if isinstance(condition, Tensor) else Tensor(condition)
    return _C._op(_ID["where"], [cond, _where_operand(x, y), _where_operand(y, x)], [])


# ---- structure ----
def tril(self: Tensor, diagonal: int = 0) -> Tensor:
    """A copy with the elements above ``diagonal`` of the last two dims zeroed (batched)."""
    return _C._op(_ID["tril"], [self], [_check_int(diagonal, "tril: diagonal")])


def tril_(self: Tensor, diagonal: int = 0) -> Tensor:
    _C._op(_ID["tril"], [self], [_check_int(diagonal, "tril_: diagonal")], self)
    return self


def triu(self: Tensor, diagonal: int = 0) -> Tensor:
    """A copy with the elements below ``diagonal`` of the last two dims zeroed (batched)."""
    return _C._op(_ID["triu"], [self], [_check_int(diagonal, "triu: diagonal")])


def triu_(self: Tensor, diagonal: int = 0) -> Tensor:
    _C._op(_ID["triu"], [self], [_check_int(diagonal, "triu_: diagonal")], self)
    return self


def one_hot(self: Tensor, num_classes: int = -1) -> Tensor:
    """int64 ``out[..., c] = (self[...] == c)`` for an integer tensor; ``num_classes=-1`` uses max + 1."""
    return _C._op(_ID["one_hot"], [self], [_check_int(num_classes, "one_hot: num_classes")])


def multinomial(self: Tensor, num_samples: int = 1, replacement: bool = False) -> Tensor:
    """int64 category indices drawn from the rows of this 1-D or 2-D tensor of (unnormalised) probabilities.

    Draws come from the counter-based generator: reproducible under ``mag.context.manual_seed``
    whatever the thread count. Without replacement, categories of probability 0 are returned (in
    index order) only once the others are used up, as in PyTorch.
    """
    n = _check_int(num_samples, "multinomial: num_samples")
    return _C._op(_ID["multinomial"], [self], [n, bool(replacement)])


def repeat(self: Tensor, *sizes: int) -> Tensor:
    """This tensor tiled ``sizes[d]`` times along each dim (a copy), like ``torch.Tensor.repeat``.

    More sizes than dims add leading dims.
    """
    return _C._op(_ID["repeat"], [self], list(_tensor._shape(sizes, "repeat")))


def _tensor_list(tensors: Sequence[Tensor], what: str) -> list[Tensor]:
    if isinstance(tensors, Tensor):
        raise TypeError(f"{what}: expected a sequence of Tensors, got a Tensor")
    return [_check_tensor(t, f"{what}: every entry") for t in tensors]


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors joined along ``dim`` (dtypes promote); 1-D empty tensors are skipped, as in PyTorch."""
    return _C._op(_ID["cat"], _tensor_list(tensors, "cat"), [_check_int(dim, "cat: dim")])


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Equally shaped tensors stacked along a new dim ``dim`` (dtypes promote)."""
    return _C._op(_ID["stack"], _tensor_list(tensors, "stack"), [_check_int(dim, "stack: dim")])


# ---- fills ----
def zero_(self: Tensor) -> Tensor:
    """Fill with zeros, in place."""
    return self.fill_(0)


def ones_(self: Tensor) -> Tensor:
    """Fill with ones, in place."""
    return self.fill_(1)


# ---- matmul ----
def matmul(self: Tensor, other: Tensor) -> Tensor:
    """``torch.matmul``: dot (1-D . 1-D), matrix-vector, matrix and batched products with broadcast
    batch dims. Any strides work without a copy; 16-bit floats accumulate in float32."""
    return _C._op(_ID["matmul"], [self, _check_tensor(other, "matmul: the other operand")], [])


def __matmul__(self: Tensor, other: Any) -> Tensor:
    if not isinstance(other, Tensor):
        return NotImplemented
    return _C._op(_ID["matmul"], [self, other], [])


def __rmatmul__(self: Tensor, other: Any) -> Tensor:
    if not isinstance(other, Tensor):
        return NotImplemented
    return _C._op(_ID["matmul"], [other, self], [])


def __imatmul__(self: Tensor, other: Any) -> Tensor:
    """``a @= b`` rebinds ``a`` to ``a @ b`` (a new tensor), as in PyTorch: the shape may change."""
    return __matmul__(self, other)


_METHODS = {
    "gather": gather,
    "index_select": index_select,
    "masked_fill": masked_fill,
    "masked_fill_": masked_fill_,
    "tril": tril,
    "tril_": tril_,
    "triu": triu,
    "triu_": triu_,
    "one_hot": one_hot,
    "multinomial": multinomial,
    "repeat": repeat,
    "zero_": zero_,
    "zeros_": zero_,
    "ones_": ones_,
    "matmul": matmul,
    "__matmul__": __matmul__,
    "__rmatmul__": __rmatmul__,
    "__imatmul__": __imatmul__,
}
_STATIC = {"where": where, "cat": cat, "stack": stack}

for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
for _name, _fn in _STATIC.items():
    setattr(Tensor, _name, staticmethod(_fn))
