"""The Python face of ``magnetron.Tensor``.

The class itself lives in the C extension (``_C.Tensor``): hot methods such as the op-table
operators are C++ lambdas over the core. This module adds what is argument handling rather than
computation: varargs shapes, factories, indexing, conversion helpers and the repr. Semantics
follow PyTorch wherever API.md is silent.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Sequence
from typing import Any

from . import _C, _ops_elementwise  # noqa: F401  (wraps pow before the dunders below are mapped)
from . import dtype as _dt
from ._indexing import getitem, setitem
from ._repr import tensor_repr

Tensor = _C.Tensor
DType = _dt.DType

_default_dtype: DType = _dt.float32


def set_default_dtype(d: DType) -> None:
    """The dtype factories use when none is given (float32 unless changed)."""
    global _default_dtype
    d = _dt.as_dtype(d, "set_default_dtype")
    if not d.is_floating_point:
        raise TypeError(f"set_default_dtype: expected a floating-point dtype, got {d}")
    _default_dtype = d


def _shape(args: tuple, what: str) -> tuple[int, ...]:
    """Shapes come as varargs ``(2, 3)`` or as one tuple/list ``((2, 3))``."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for s in args:
        if isinstance(s, bool) or not isinstance(s, int):
            raise TypeError(f"{what}: shape entries must be ints, got {type(s).__name__} in {args!r}")
    return args


def _dims(args: tuple, what: str) -> tuple[int, ...]:
    return _shape(args, what)


def _new(shape: tuple[int, ...], dtype: DType | None, requires_grad: bool, what: str) -> Tensor:
    d = _dt.as_dtype(dtype, what) if dtype is not None else _default_dtype
    t = _C._empty(shape, d._id)
    if requires_grad:
        t.requires_grad = True
    return t


_OPS: dict[str, dict] = {row["name"]: row for row in _C.op_table()}


def _factory(name: str, t: Tensor, *attrs: Any) -> Tensor:
    _C._factory_(_OPS[name]["id"], t, list(attrs))
    return t


# ---- construction ----
_c_init = Tensor.__init__


def _init(self: Tensor, data: Any, dtype: DType | None = None, requires_grad: bool = False) -> None:
    _c_init(self, data, _dt.as_dtype(dtype, "Tensor")._id if dtype is not None else -1)
    if requires_grad:
        self.requires_grad = True


def empty(*shape: int, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    """Uninitialised memory of the given shape."""
    return _new(_shape(shape, "empty"), dtype, requires_grad, "empty")


def full(*shape: int, fill_value: int | float | bool, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    return _factory("fill", _new(_shape(shape, "full"), dtype, False, "full"), fill_value)._with_grad(requires_grad)


def zeros(*shape: int, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    return full(*shape, fill_value=0, dtype=dtype, requires_grad=requires_grad)


def ones(*shape: int, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    return full(*shape, fill_value=1, dtype=dtype, requires_grad=requires_grad)


def uniform(
    *shape: int, low: int | float = 0, high: int | float = 1, dtype: DType | None = None, requires_grad: bool = False
) -> Tensor:
    """Uniform in [low, high) for floats, integers in [low, high] for integer dtypes."""
    t = _new(_shape(shape, "uniform"), dtype, False, "uniform")
    return _factory("uniform", t, low, high)._with_grad(requires_grad)


def normal(
    *shape: int, mean: float = 0.0, std: float = 1.0, dtype: DType | None = None, requires_grad: bool = False
) -> Tensor:
    t = _new(_shape(shape, "normal"), dtype, False, "normal")
    return _factory("normal", t, mean, std)._with_grad(requires_grad)


def bernoulli(*shape: int, p: float = 0.5, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    """True with probability p (boolean unless another dtype is asked for)."""
    t = _new(_shape(shape, "bernoulli"), dtype if dtype is not None else _dt.boolean, False, "bernoulli")
    return _factory("bernoulli", t, p)._with_grad(requires_grad)


def arange(
    start: int | float = 0,
    stop: int | float | None = None,
    step: int | float = 1,
    dtype: DType | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Like numpy.arange: ``arange(5)``, ``arange(2, 5)``, ``arange(0, 1, 0.25)``; int64 for int arguments."""
    if stop is None:
        start, stop = 0, start
    for v in (start, stop, step):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"arange: start, stop and step must be numbers, got {v!r}")
    if step == 0:
        raise ValueError("arange: step must not be zero")
    if not all(math.isfinite(v) for v in (start, stop, step)):
        raise ValueError(f"arange: start, stop and step must be finite, got ({start}, {stop}, {step})")
    all_int = all(isinstance(v, int) for v in (start, stop, step))
    if all_int:
        n = max(0, -((start - stop) // step))  # ceil((stop - start) / step) in exact integer arithmetic
    else:
        n = max(0, math.ceil((stop - start) / step))
    d = dtype if dtype is not None else (_dt.int64 if all_int else _default_dtype)
    return _factory("arange", _new((n,), d, False, "arange"), start, step)._with_grad(requires_grad)


def rand_perm(n: int, dtype: DType = _dt.int64, requires_grad: bool = False) -> Tensor:
    """A random permutation of 0..n-1."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"rand_perm: n must be a non-negative int, got {n!r}")
    return _factory("rand_perm", _new((n,), dtype, False, "rand_perm"))._with_grad(requires_grad)


def scalar(v: int | float | bool, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    """A rank-0 tensor."""
    return full((), fill_value=v, dtype=dtype, requires_grad=requires_grad)


def _like(name: str, fn: Any) -> Any:
    def like(x: Tensor, *args: Any, dtype: DType | None = None, **kwargs: Any) -> Tensor:
        return fn(x.shape, *args, dtype=dtype if dtype is not None else x.dtype, **kwargs)

    like.__name__ = f"{name}_like"
    like.__doc__ = f"``{name}`` with the shape and dtype of ``x``."
    return like


def from_dlpack(obj: Any) -> Tensor:
    """A tensor sharing memory with any DLPack producer (NumPy, PyTorch, ...); zero copy."""
    return _C._from_dlpack(obj)


# ---- conversion ----
def numpy(self: Tensor) -> Any:
    """A NumPy array sharing this tensor's memory (bfloat16 has no NumPy dtype: cast first)."""
    import numpy as np

    if self.dtype == _dt.bfloat16:
        raise TypeError("numpy: NumPy has no bfloat16; use .cast(mag.float32) or DLPack (e.g. torch.from_dlpack)")
    return np.asarray(memoryview(self))


def __array__(self: Tensor, dtype: Any = None, copy: bool | None = None) -> Any:
    arr = numpy(self)
    if dtype is not None and arr.dtype != dtype:
        if copy is False:
            raise ValueError("__array__: a dtype change needs a copy, but copy=False was requested")
        return arr.astype(dtype)
    return arr.copy() if copy else arr


def cast(self: Tensor, dtype: DType) -> Tensor:
    """This tensor converted to ``dtype`` (a copy; the tensor itself when the dtype already matches)."""
    d = _dt.as_dtype(dtype, "cast")
    return self if d == self.dtype else self._cast(d._id)


def to(self: Tensor, target: DType | str) -> Tensor:
    if isinstance(target, DType):
        return cast(self, target)
    return transfer(self, target)


def transfer(self: Tensor, device: str) -> Tensor:
    """Move to a device: ``'cpu'`` (this build has no other backend yet)."""
    if device == "cpu":
        return self
    if isinstance(device, str) and device.split(":")[0] == "cuda":
        raise RuntimeError(f"transfer: device {device!r} is not available (this build has no CUDA backend)")
    raise ValueError(f"transfer: unknown device {device!r} (expected 'cpu' or 'cuda[:N]')")


# ---- views ----
def view(self: Tensor, *shape: int) -> Tensor:
    """Same data, new shape; one -1 is inferred. Fails (RuntimeError) where PyTorch's view fails."""
    return self._view(_shape(shape, "view"))


def reshape(self: Tensor, *shape: int) -> Tensor:
    """A view when the strides allow it, else a contiguous copy."""
    return self._reshape(_shape(shape, "reshape"))


def permute(self: Tensor, *dims: int) -> Tensor:
    return self._permute(_dims(dims, "permute"))


def expand(self: Tensor, *shape: int) -> Tensor:
    """Broadcast size-1 dims (stride 0, no copy); -1 keeps a size."""
    return self._expand(_shape(shape, "expand"))


def broadcast_to(self: Tensor, shape: Sequence[int]) -> Tensor:
    return self._expand(tuple(shape))


def squeeze(self: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    if dim is None:
        return self._squeeze(None)
    return self._squeeze([dim] if isinstance(dim, int) else list(dim))


def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    r = self.rank
    if r == 0:
        return self.reshape(1)
    s, e = _norm_dim(start_dim, r, "flatten"), _norm_dim(end_dim, r, "flatten")
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    shape = self.shape
    return self.reshape(*shape[:s], math.prod(shape[s : e + 1]), *shape[e + 1 :])


def unflatten(self: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    d = _norm_dim(dim, self.rank, "unflatten")
    shape = self.shape
    return self.reshape(*shape[:d], *sizes, *shape[d + 1 :])


def narrow(self: Tensor, dim: int, start: int, length: int) -> Tensor:
    d = _norm_dim(dim, self.rank, "narrow")
    size = self.shape[d]
    if start < 0:
        start += size
    if not 0 <= start <= size or length < 0 or start + length > size:
        raise IndexError(f"narrow: start {start} and length {length} exceed dimension {d} of size {size}")
    return self._slice(d, start, length, 1)


def view_slice(self: Tensor, dim: int, start: int, length: int, step: int = 1) -> Tensor:
    """Elements start, start+step, ... (``length`` of them) along ``dim``, as a view."""
    return self._slice(dim, start, length, step)


def movedim(self: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ValueError(f"movedim: {len(src)} source dims but {len(dst)} destination dims")
    r = self.rank
    src = [_norm_dim(d, r, "movedim") for d in src]
    dst = [_norm_dim(d, r, "movedim") for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("movedim: repeated dims")
    order: list[int | None] = [None] * r
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(r) if d not in src)
    return self._permute([o if o is not None else next(rest) for o in order])


def split(self: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    d = _norm_dim(dim, self.rank, "split")
    size = self.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0:
            raise ValueError(f"split: split_size must be positive, got {step}")
        sections = [min(step, size - i) for i in range(0, size, step)] or [0]
    else:
        sections = list(split_size_or_sections)
        if sum(sections) != size or any(s < 0 for s in sections):
            raise ValueError(f"split: sections {sections} do not add up to dimension {d} of size {size}")
    out, start = [], 0
    for s in sections:
        out.append(self._slice(d, start, s, 1))
        start += s
    return tuple(out)


def chunk(self: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    size = self.shape[_norm_dim(dim, self.rank, "chunk")]
    return split(self, max(1, -(-size // chunks)), dim)


def unbind(self: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    d = _norm_dim(dim, self.rank, "unbind")
    return tuple(self.select(d, i) for i in range(self.shape[d]))


def _norm_dim(dim: int, rank: int, what: str) -> int:
    r = max(rank, 1)
    if not -r <= dim < r:
        raise IndexError(f"{what}: dimension {dim} is out of range for a tensor of rank {rank}")
    return dim % r


# ---- fills ----
def fill_(self: Tensor, value: int | float | bool) -> Tensor:
    self._fill_(value)
    return self


def copy_(self: Tensor, src: Tensor | Any) -> Tensor:
    """Copy ``src`` (broadcast, converted to this dtype) into this tensor."""
    self._copy_(src if isinstance(src, Tensor) else Tensor(src))
    return self


def uniform_(self: Tensor, low: float = 0.0, high: float = 1.0) -> Tensor:
    return _factory("uniform", self, low, high)


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    return _factory("normal", self, mean, std)


def bernoulli_(self: Tensor, p: float = 0.5) -> Tensor:
    return _factory("bernoulli", self, p)


# ---- small protocol methods ----
def size(self: Tensor, dim: int | None = None) -> tuple[int, ...] | int:
    return self.shape if dim is None else self.shape[_norm_dim(dim, self.rank, "size")]


def __len__(self: Tensor) -> int:
    if self.rank == 0:
        raise TypeError("len() of a rank-0 tensor")
    return self.shape[0]


def __bool__(self: Tensor) -> bool:
    if self.numel != 1:
        raise RuntimeError(f"bool: a tensor with {self.numel} elements is ambiguous; use .any() or .all()")
    return bool(self.item())


def __iter__(self: Tensor) -> Iterator[Tensor]:
    if self.rank == 0:
        raise TypeError("iteration over a rank-0 tensor")
    return (self.select(0, i) for i in range(self.shape[0]))


def _with_grad(self: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        self.requires_grad = True
    return self


def _float_index(self: Tensor) -> int:
    if self.numel != 1 or self.dtype.is_floating_point or self.dtype == _dt.boolean:
        raise TypeError("only integer tensors with one element can be converted to an index")
    return int(self.item())


_METHODS = {
    "__init__": _init,
    "__array__": __array__,
    "__len__": __len__,
    "__bool__": __bool__,
    "__iter__": __iter__,
    "__index__": _float_index,
    "__getitem__": getitem,
    "__setitem__": setitem,
    "__repr__": tensor_repr,
    "__hash__": object.__hash__,
    "_with_grad": _with_grad,
    "numpy": numpy,
    "cast": cast,
    "to": to,
    "transfer": transfer,
    "view": view,
    "reshape": reshape,
    "permute": permute,
    "expand": expand,
    "broadcast_to": broadcast_to,
    "squeeze": squeeze,
    "flatten": flatten,
    "unflatten": unflatten,
    "narrow": narrow,
    "view_slice": view_slice,
    "movedim": movedim,
    "split": split,
    "chunk": chunk,
    "unbind": unbind,
    "fill_": fill_,
    "copy_": copy_,
    "uniform_": uniform_,
    "normal_": normal_,
    "bernoulli_": bernoulli_,
    "size": size,
    "dim": lambda self: self.rank,
}

_PROPERTIES = {
    "dtype": property(lambda self: _dt.from_id(self._dtype_id), doc="The element type."),
    "device": property(lambda self: "cpu", doc="Where the data lives ('cpu')."),
    "data_size": property(lambda self: self.numel * self.dtype.size, doc="numel * itemsize, in bytes."),
    "T": property(lambda self: self._permute(list(range(self.rank))[::-1]), doc="Dims reversed (2-D transpose)."),
    "grad": property(lambda self: None, doc="The accumulated gradient (autograd arrives with its own issue)."),
}

_STATIC = {
    "empty": empty,
    "full": full,
    "zeros": zeros,
    "ones": ones,
    "uniform": uniform,
    "normal": normal,
    "bernoulli": bernoulli,
    "arange": arange,
    "rand_perm": rand_perm,
    "scalar": scalar,
    "from_dlpack": from_dlpack,
    "empty_like": _like("empty", empty),
    "zeros_like": _like("zeros", zeros),
    "ones_like": _like("ones", ones),
    "full_like": _like("full", full),
    "uniform_like": _like("uniform", uniform),
    "normal_like": _like("normal", normal),
    "bernoulli_like": _like("bernoulli", bernoulli),
}

# Operator dunders of op-table methods: (forward, reflected, in-place).
_DUNDERS = {
    "add": ("__add__", "__radd__", "__iadd__"),
    "sub": ("__sub__", "__rsub__", "__isub__"),
    "mul": ("__mul__", "__rmul__", "__imul__"),
    "div": ("__truediv__", "__rtruediv__", "__itruediv__"),
    "floordiv": ("__floordiv__", "__rfloordiv__", "__ifloordiv__"),
    "mod": ("__mod__", "__rmod__", "__imod__"),
    "pow": ("__pow__", "__rpow__", "__ipow__"),
    "bitwise_and": ("__and__", "__rand__", "__iand__"),
    "bitwise_or": ("__or__", "__ror__", "__ior__"),
    "bitwise_xor": ("__xor__", "__rxor__", "__ixor__"),
    "lshift": ("__lshift__", "__rlshift__", "__ilshift__"),
    "rshift": ("__rshift__", "__rrshift__", "__irshift__"),
}
# Comparisons: Python reflects them itself (2 < x calls x > 2).
_COMPARE_DUNDERS = {"eq": "__eq__", "ne": "__ne__", "lt": "__lt__", "le": "__le__", "gt": "__gt__", "ge": "__ge__"}
_UNARY_DUNDERS = {"neg": "__neg__", "abs": "__abs__", "bitwise_not": "__invert__"}
# Other names of table ops (their in-place forms get the alias too).
_ALIASES = {
    "truediv": "div",
    "reciprocal": "rcp",
    "hardsigmoid": "hard_sigmoid",
    "bitwise_shl": "lshift",
    "bitwise_shr": "rshift",
}


def _compare_dunder(fn: Any) -> Any:
    # Not a Tensor or a number: NotImplemented lets Python fall back (x == None is False, x < "a" a TypeError).
    def dunder(self: Tensor, other: Any) -> Any:
        if not isinstance(other, (Tensor, numbers.Number)):
            return NotImplemented
        return fn(self, other)

    dunder.__doc__ = fn.__doc__
    return dunder


def _install() -> None:
    for name, fn in _METHODS.items():
        setattr(Tensor, name, fn)
    for name, prop in _PROPERTIES.items():
        setattr(Tensor, name, prop)
    for name, fn in _STATIC.items():
        setattr(Tensor, name, staticmethod(fn))
    for op, (fwd, refl, inplace) in _DUNDERS.items():
        setattr(Tensor, fwd, getattr(Tensor, op))
        if refl:
            setattr(Tensor, refl, getattr(Tensor, "_r" + op))
        if inplace:
            setattr(Tensor, inplace, getattr(Tensor, op + "_"))
    for op, dunder in _COMPARE_DUNDERS.items():
        setattr(Tensor, dunder, _compare_dunder(getattr(Tensor, op)))
    for op, dunder in _UNARY_DUNDERS.items():
        setattr(Tensor, dunder, getattr(Tensor, op))
    for alias, op in _ALIASES.items():
        setattr(Tensor, alias, getattr(Tensor, op))
        if hasattr(Tensor, op + "_"):
            setattr(Tensor, alias + "_", getattr(Tensor, op + "_"))
    Tensor.__array_priority__ = 1000  # NumPy defers to our reflected operators (np.float32(2) * x)
    Tensor.__module__ = "magnetron"


_install()
