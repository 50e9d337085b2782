"""``x[key]`` and ``x[key] = value`` with PyTorch's semantics.

Basic indices (ints, slices of any step, None, Ellipsis) become views. Integer/boolean tensors
and lists are advanced indices: the indexed dims are permuted to the front of the view and the
core's INDEX / INDEX_PUT ops gather or scatter along them. As in PyTorch, the broadcast index
dims replace the indexed dims in place when those were adjacent, else they go first.
"""

from __future__ import annotations

from typing import Any

from . import _C
from . import dtype as _dt

Tensor = _C.Tensor


def _entry(k: Any, shape: tuple[int, ...]) -> Any:
    """One key entry in canonical form: None, Ellipsis, a slice, an int, or an index tensor (integer or boolean).

    A Python bool is a rank-0 mask (PyTorch and NumPy: x[True] adds a dim and copies); a rank-0
    integer tensor or NumPy integer selects like an int (PyTorch); lists and arrays are index tensors.
    """
    if k is None or k is Ellipsis or isinstance(k, slice):
        return k
    if isinstance(k, bool):
        return Tensor(k)
    if isinstance(k, int):
        return k
    if isinstance(k, (Tensor, list, tuple)) or hasattr(k, "__array__"):
        t = k if isinstance(k, Tensor) else Tensor(k)
        if t.numel == 0 and isinstance(k, (list, tuple)):
            return t.cast(_dt.int64)  # an empty list indexes nothing (it would otherwise be float32)
        if t.dtype.is_floating_point:
            raise IndexError(f"index: tensors used as indices must be integer or boolean, got {t.dtype} "
                             f"(shape {t.shape})")
        return t.__index__() if t.rank == 0 and t.dtype.is_integer else t
    if hasattr(k, "__index__"):
        return k.__index__()
    raise IndexError(f"index: invalid index of type {type(k).__name__} for a tensor of shape {shape}: only ints, "
                     "slices, None, Ellipsis, and integer or boolean tensors/lists are valid indices")


def _consumed(k: Any) -> int:
    """How many dims of the tensor a canonical key entry uses up."""
    if k is None or k is Ellipsis:
        return 0
    return k.rank if isinstance(k, Tensor) and k.dtype == _dt.boolean else 1


def _basic(x: Tensor, key: Any) -> tuple[Tensor, list[tuple[int, Tensor]]]:
    """Apply the basic part of key; return the view and the advanced indices as (view dim, int64 index)."""
    key = [_entry(k, x.shape) for k in (key if isinstance(key, tuple) else (key,))]
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError(f"index: an index can only have a single ellipsis ('...'), got {key!r} for shape {x.shape}")
    used = sum(_consumed(k) for k in key)
    if used > x.rank:
        raise IndexError(f"index: too many indices for a tensor of rank {x.rank} (shape {x.shape}): "
                         f"{used} dims indexed")
    expanded: list[Any] = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (x.rank - used))
        else:
            expanded.append(k)
    v, d, adv = x, 0, []
    for k in expanded:
        if k is None:
            v = v.unsqueeze(d)
            d += 1
        elif isinstance(k, slice):
            size = v.shape[d]
            if k.step == 0:
                raise ValueError(f"index: slice step cannot be zero (dimension {d} of shape {v.shape})")
            start, stop, step = k.indices(size)
            length = len(range(start, stop, step))
            v = v._slice(d, start if length else 0, length, step)
            d += 1
        elif isinstance(k, int):
            v = v.select(d, k)
        elif k.dtype == _dt.boolean:
            mask_shape = v.shape[d : d + k.rank]
            if k.shape != mask_shape:
                raise IndexError(
                    f"index: the shape of the mask {k.shape} does not match the shape {mask_shape} of the indexed "
                    f"dims {d}..{d + k.rank - 1} of a tensor of shape {x.shape}"
                )
            if k.rank == 0:  # a scalar mask adds one dim, kept (True) or emptied (False)
                v = v.unsqueeze(d)
                adv.append((d, k.reshape(1).nonzero().select(1, 0)))
                d += 1
                continue
            coords = k.nonzero()
            for j in range(k.rank):
                adv.append((d + j, coords.select(1, j)))
            d += k.rank
        else:
            adv.append((d, k))
            d += 1
    return v, adv


def _front(v: Tensor, adv: list[tuple[int, Tensor]]) -> tuple[Tensor, list[Tensor], int | None]:
    """Permute the advanced dims to the front; also say where the index dims land in the result."""
    dims = [d for d, _ in adv]
    rest = [d for d in range(v.rank) if d not in dims]
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    return v._permute(dims + rest), [t for _, t in adv], dims[0] if adjacent else None


def _move_batch(res: Tensor, n_batch: int, pos: int | None, to_front: bool) -> Tensor:
    """Move the n_batch index dims between the front and position pos (PyTorch's placement)."""
    if not pos:
        return res
    order = list(range(res.rank))
    b = list(range(n_batch))
    if to_front:  # batch currently at pos
        order = list(range(pos, pos + n_batch)) + [d for d in order if not pos <= d < pos + n_batch]
    else:
        rest = order[n_batch:]
        order = rest[:pos] + b + rest[pos:]
    return res._permute(order)


def getitem(x: Tensor, key: Any) -> Tensor:
    if isinstance(key, int) and not isinstance(key, bool):
        return x.select(0, key)
    v, adv = _basic(x, key)
    if not adv:
        return v
    front, idx, pos = _front(v, adv)
    try:
        res = front._index(idx)
    except IndexError as e:  # the core numbers the indexed dims from 0: say which dims of which tensor they were
        raise IndexError(f"{e}; indexed dims {[d for d, _ in adv]} of a tensor of shape {x.shape}") from None
    n_batch = res.rank - (front.rank - len(idx))
    return _move_batch(res, n_batch, pos, to_front=False)


def setitem(x: Tensor, key: Any, value: Any) -> None:
    v, adv = _basic(x, key)
    if not isinstance(value, (Tensor, bool, int, float)):  # lists, NumPy arrays, ...: their values, in x's dtype
        value = Tensor(value, dtype=x.dtype)
    try:
        _assign(v, adv, value, x.dtype)
    except ValueError as e:  # name the operation the user wrote, not the internal step
        shape = value.shape if isinstance(value, Tensor) else ()
        raise ValueError(f"setitem: a value of shape {shape} cannot be assigned to {key!r} of a tensor of shape "
                         f"{x.shape} ({e})") from None


def _assign(v: Tensor, adv: list[tuple[int, Tensor]], value: Any, dtype: Any) -> None:
    if not adv:
        if isinstance(value, Tensor):
            v._copy_(value)
        else:
            v._fill_(value)
        return
    front, idx, pos = _front(v, adv)
    if not isinstance(value, Tensor):
        value = Tensor.full((), fill_value=value, dtype=dtype)
    # the value is shaped like x[key]; bring its index dims to the front like `front`
    batch: tuple[int, ...] = ()
    for t in idx:
        try:
            batch = _C._broadcast_shape(batch, t.shape)
        except ValueError:
            raise IndexError(f"index: shape mismatch: index tensors of shapes {[i.shape for i in idx]} cannot be "
                             f"broadcast together (indexing a tensor of shape {v.shape})") from None
    rest = front.shape[len(idx) :]
    n_batch = len(batch)
    result_shape = batch + rest
    if pos:
        result_shape = rest[:pos] + batch + rest[pos:]
    value = _move_batch(value._expand(result_shape), n_batch, pos, to_front=True)
    try:
        front._index_put(idx, value, False)
    except IndexError as e:
        raise IndexError(f"{e}; indexed dims {[d for d, _ in adv]} of a view of shape {v.shape}") from None
