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
    """Shapes come as varargs ``(2, 3)`` or as one tuple/list ``((2, 3))``; entries are ints (or NumPy ints)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for s in args:
        if isinstance(s, bool) or not hasattr(s, "__index__"):
            raise TypeError(f"{what}: shape entries must be ints, got {type(s).__name__} in {args!r}")
    return tuple(s.__index__() for s in args)


def _size(args: tuple, what: str) -> tuple[int, ...]:
    """The shape of a new tensor: no negative sizes."""
    shape = _shape(args, what)
    if any(s < 0 for s in shape):
        raise ValueError(f"{what}: negative dimension in shape {shape}")
    return shape


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
def empty(*shape: int, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    """Uninitialised memory of the given shape."""
    return _new(_size(shape, "empty"), dtype, requires_grad, "empty")


def _filled(shape: tuple, what: str, value: int | float | bool, dtype: DType | None, requires_grad: bool) -> Tensor:
    return _factory("fill", _new(_size(shape, what), dtype, False, what), value)._with_grad(requires_grad)


def full(
    *shape: int, fill_value: int | float | bool, dtype: DType | None = None, requires_grad: bool = False
) -> Tensor:
    """Every element = ``fill_value`` (converted like ``cast``)."""
    return _filled(shape, "full", fill_value, dtype, requires_grad)


def zeros(*shape: int, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    """Every element 0."""
    return _filled(shape, "zeros", 0, dtype, requires_grad)


def ones(*shape: int, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    """Every element 1."""
    return _filled(shape, "ones", 1, dtype, requires_grad)


def uniform(
    *shape: int, low: int | float = 0, high: int | float = 1, dtype: DType | None = None, requires_grad: bool = False
) -> Tensor:
    """Uniform in [low, high) for floats, integers in [low, high] for integer dtypes."""
    t = _new(_size(shape, "uniform"), dtype, False, "uniform")
    return _factory("uniform", t, low, high)._with_grad(requires_grad)


def normal(
    *shape: int, mean: float = 0.0, std: float = 1.0, dtype: DType | None = None, requires_grad: bool = False
) -> Tensor:
    """Normally distributed (Box-Muller on the Philox stream); floating-point dtypes only."""
    t = _new(_size(shape, "normal"), dtype, False, "normal")
    return _factory("normal", t, mean, std)._with_grad(requires_grad)


def bernoulli(*shape: int, p: float = 0.5, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    """True with probability p (boolean unless another dtype is asked for)."""
    t = _new(_size(shape, "bernoulli"), dtype if dtype is not None else _dt.boolean, False, "bernoulli")
    return _factory("bernoulli", t, p)._with_grad(requires_grad)


def arange(
    start: int | float = 0,
    stop: int | float | None = None,
    step: int | float = 1,
    dtype: DType | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Like numpy.arange: ``arange(5)``, ``arange(2, 5)``, ``arange(0, 1, 0.25)``; int64 for int arguments.

    The length is ceil((stop - start) / step) (0 when the step points away from stop); values are
    start + i * step computed in float64 (PyTorch's rule). For an integer ``dtype``, float arguments are
    truncated toward zero first, as PyTorch does, so the result stays an evenly spaced integer grid.
    """
    if stop is None:
        start, stop = 0, start
    start, stop, step = (_number(v, "arange") for v in (start, stop, step))
    if not all(math.isfinite(v) for v in (start, stop, step)):
        raise ValueError(f"arange: start, stop and step must be finite, got ({start}, {stop}, {step})")
    d = _dt.as_dtype(dtype, "arange") if dtype is not None else None
    if d is not None and d.is_integer:
        start, stop, step = int(start), int(stop), int(step)
    if step == 0:
        raise ValueError(f"arange: step must not be zero (start {start}, stop {stop})")
    all_int = all(isinstance(v, int) for v in (start, stop, step))
    if all_int:
        n = max(0, -((start - stop) // step))  # ceil((stop - start) / step) in exact integer arithmetic
    else:
        n = max(0, math.ceil((stop - start) / step))
    if d is None:
        d = _dt.int64 if all_int else _default_dtype
    return _factory("arange", _new((n,), d, False, "arange"), start, step)._with_grad(requires_grad)


def _number(v: Any, what: str) -> int | float:
    """A Python int or float from any real number (NumPy scalars included); bools are refused."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return v.__index__()
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        return float(v)
    raise TypeError(f"{what}: expected a number, got {type(v).__name__} ({v!r})")


def rand_perm(n: int, dtype: DType = _dt.int64, requires_grad: bool = False) -> Tensor:
    """A random permutation of 0..n-1 (Fisher-Yates on the Philox stream)."""
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise TypeError(f"rand_perm: n must be an int, got {type(n).__name__}")
    n = n.__index__()
    if n < 0:
        raise ValueError(f"rand_perm: n must be non-negative, got {n}")
    return _factory("rand_perm", _new((n,), dtype, False, "rand_perm"))._with_grad(requires_grad)


def scalar(v: int | float | bool, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    """A rank-0 tensor."""
    return _filled((), "scalar", v, dtype, requires_grad)


# ---- the _like forms: the shape (and, unless given, the dtype) of x ----
def _like_dtype(x: Tensor, dtype: DType | None) -> DType:
    return x.dtype if dtype is None else dtype


def empty_like(x: Tensor, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    """``empty`` with the shape and dtype of ``x``."""
    return empty(x.shape, dtype=_like_dtype(x, dtype), requires_grad=requires_grad)


def zeros_like(x: Tensor, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    """``zeros`` with the shape and dtype of ``x``."""
    return zeros(x.shape, dtype=_like_dtype(x, dtype), requires_grad=requires_grad)


def ones_like(x: Tensor, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    """``ones`` with the shape and dtype of ``x``."""
    return ones(x.shape, dtype=_like_dtype(x, dtype), requires_grad=requires_grad)


def full_like(
    x: Tensor, fill_value: int | float | bool, dtype: DType | None = None, requires_grad: bool = False
) -> Tensor:
    """``full`` with the shape and dtype of ``x``."""
    return full(x.shape, fill_value=fill_value, dtype=_like_dtype(x, dtype), requires_grad=requires_grad)


def uniform_like(
    x: Tensor, low: int | float = 0, high: int | float = 1, dtype: DType | None = None, requires_grad: bool = False
) -> Tensor:
    """``uniform`` with the shape and dtype of ``x``."""
    return uniform(x.shape, low=low, high=high, dtype=_like_dtype(x, dtype), requires_grad=requires_grad)


def normal_like(
    x: Tensor, mean: float = 0.0, std: float = 1.0, dtype: DType | None = None, requires_grad: bool = False
) -> Tensor:
    """``normal`` with the shape and dtype of ``x``."""
    return normal(x.shape, mean=mean, std=std, dtype=_like_dtype(x, dtype), requires_grad=requires_grad)


def bernoulli_like(x: Tensor, p: float = 0.5, dtype: DType | None = None, requires_grad: bool = False) -> Tensor:
    """``bernoulli`` with the shape and dtype of ``x`` (0/1 values in a non-boolean dtype)."""
    return bernoulli(x.shape, p=p, dtype=_like_dtype(x, dtype), requires_grad=requires_grad)


def from_dlpack(obj: Any) -> Tensor:
    """A tensor sharing memory with any DLPack producer (NumPy, PyTorch, ...); zero copy."""
    return _C._from_dlpack(obj)


# ---- conversion ----
def numpy(self: Tensor) -> Any:
    """A NumPy array sharing this tensor's memory (zero copy, any strides; read-only tensors give read-only
    arrays). bfloat16 has no NumPy dtype: cast first, or hand it over through DLPack."""
    import numpy as np

    if self.dtype == _dt.bfloat16:
        raise TypeError("numpy: NumPy has no bfloat16; use .cast(mag.float32) or DLPack (e.g. torch.from_dlpack)")
    return np.asarray(memoryview(self))


def __array__(self: Tensor, dtype: Any = None, copy: bool | None = None) -> Any:
    """NumPy's array protocol (NumPy 2 semantics): copy=False never copies (ValueError if it would have to),
    copy=True always does, None copies only for a dtype change."""
    import numpy as np

    want = np.dtype(dtype) if dtype is not None else None
    if self.dtype == _dt.bfloat16:  # no NumPy twin: only a converting copy can work
        if copy is False:
            raise ValueError(f"__array__: bfloat16 (shape {self.shape}) needs a converting copy, but copy=False")
        if want is None:
            raise TypeError("__array__: NumPy has no bfloat16; ask for a dtype (e.g. np.asarray(x, np.float32))")
        return numpy(self.cast(_dt.float32)).astype(want)
    arr = numpy(self)
    if want is not None and arr.dtype != want:
        if copy is False:
            raise ValueError(f"__array__: {self.dtype} -> {want} (shape {self.shape}) needs a copy, but copy=False")
        return arr.astype(want)
    return arr.copy() if copy else arr


def cast(self: Tensor, dtype: DType) -> Tensor:
    """This tensor converted to ``dtype`` (a copy; the tensor itself when the dtype already matches)."""
    d = _dt.as_dtype(dtype, "cast")
    return self if d == self.dtype else self._cast(d._id)


def to(self: Tensor, target: DType | str) -> Tensor:
    """``cast`` for a dtype, ``transfer`` for a device name."""
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
    """The dims reordered (varargs or one sequence; negative dims count from the end), as a view."""
    return self._permute(_dims(dims, "permute"))


def expand(self: Tensor, *shape: int) -> Tensor:
    """Broadcast size-1 dims (stride 0, no copy); -1 keeps a size."""
    return self._expand(_shape(shape, "expand"))


def broadcast_to(self: Tensor, shape: Sequence[int]) -> Tensor:
    """``expand`` to ``shape`` (NumPy broadcasting: stride 0, no copy)."""
    return self._expand(tuple(shape))


def squeeze(self: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Drop size-1 dims: all of them, or those listed in ``dim`` that have size 1 (a view)."""
    if dim is None:
        return self._squeeze(None)
    return self._squeeze([dim] if isinstance(dim, int) else list(dim))


def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims start_dim..end_dim into one (a view where the strides allow it, else a copy)."""
    if self.rank == 0:
        return self.reshape(1)
    s, e = _dim(self, start_dim, "flatten"), _dim(self, end_dim, "flatten")
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} (shape {self.shape})")
    shape = self.shape
    return self.reshape(*shape[:s], math.prod(shape[s : e + 1]), *shape[e + 1 :])


def unflatten(self: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Split dim ``dim`` into ``sizes`` (one -1 is inferred); a view where the strides allow it."""
    d = _dim(self, dim, "unflatten", need_dims=True)
    shape, sizes = self.shape, tuple(sizes)
    if not sizes:
        raise ValueError(f"unflatten: sizes must be non-empty (shape {shape}, dim {dim})")
    known = math.prod(s for s in sizes if s != -1)
    n_infer = sum(1 for s in sizes if s == -1)
    fits = known == shape[d] if n_infer == 0 else n_infer == 1 and known != 0 and shape[d] % known == 0
    if not fits or any(s < -1 for s in sizes):
        raise ValueError(f"unflatten: sizes {sizes} do not multiply up to dimension {d} of shape {shape}")
    return self.reshape(*shape[:d], *sizes, *shape[d + 1 :])


def narrow(self: Tensor, dim: int, start: int, length: int) -> Tensor:
    """Elements start..start+length-1 along ``dim`` (a negative start counts from the end), as a view."""
    d = _dim(self, dim, "narrow", need_dims=True)
    size = self.shape[d]
    if start < 0:
        start += size
    if not 0 <= start <= size or length < 0 or start + length > size:
        raise IndexError(f"narrow: start {start} and length {length} exceed dimension {d} of shape {self.shape}")
    return self._slice(d, start, length, 1)


def view_slice(self: Tensor, dim: int, start: int, length: int, step: int = 1) -> Tensor:
    """Elements start, start+step, ... (``length`` of them) along ``dim``, as a view; step may be negative."""
    return self._slice(dim, start, length, step)


def movedim(self: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """Move dims ``source`` to positions ``destination``, the others keep their order (like torch.movedim)."""
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ValueError(f"movedim: {len(src)} source dims but {len(dst)} destination dims (shape {self.shape})")
    src = [_dim(self, d, "movedim") for d in src]
    dst = [_dim(self, d, "movedim") for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError(f"movedim: repeated dims in source {source} or destination {destination} (shape {self.shape})")
    if self.rank == 0:
        return self._permute(())
    order: list[int | None] = [None] * self.rank
    for s, d in zip(src, dst, strict=True):
        order[d] = s
    rest = iter(d for d in range(self.rank) if d not in src)
    return self._permute([o if o is not None else next(rest) for o in order])


def split(self: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Views of ``split_size`` along ``dim`` (the last may be smaller), or of the listed section sizes."""
    d = _dim(self, dim, "split", need_dims=True)
    size = self.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step < 0 or (step == 0 and size != 0):
            raise ValueError(f"split: split_size must be positive, got {step} for dimension {d} of shape {self.shape}")
        sections = [min(step, size - i) for i in range(0, size, step)] if size else [0]
    else:
        sections = list(split_size_or_sections)
        if sum(sections) != size or any(s < 0 for s in sections):
            raise ValueError(f"split: sections {sections} do not add up to dimension {d} of shape {self.shape}")
    return _sections(self, d, sections)


def _sections(self: Tensor, d: int, sections: list[int]) -> tuple[Tensor, ...]:
    out, start = [], 0
    for s in sections:
        out.append(self._slice(d, start, s, 1))
        start += s
    return tuple(out)


def chunk(self: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Up to ``chunks`` views of ceil(size / chunks) along ``dim`` (like torch.chunk: possibly fewer)."""
    d = _dim(self, dim, "chunk", need_dims=True)
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks} (shape {self.shape})")
    size = self.shape[d]
    if size == 0:  # torch keeps the count here: `chunks` empty views
        return _sections(self, d, [0] * chunks)
    return split(self, -(-size // chunks), d)


def unbind(self: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along ``dim``, each without that dim (views)."""
    d = _dim(self, dim, "unbind", need_dims=True)
    return tuple(self.select(d, i) for i in range(self.shape[d]))


def _dim(x: Tensor, dim: int, what: str, need_dims: bool = False) -> int:
    """A dim of x (negative counts from the end); rank 0 accepts 0 and -1 unless the op needs a real dim."""
    if need_dims and x.rank == 0:
        raise IndexError(f"{what}: expected a tensor with at least one dimension, got shape ()")
    try:
        return _norm_dim(dim, x.rank, what)
    except IndexError:
        r = max(x.rank, 1)
        raise IndexError(
            f"{what}: dimension {dim} is out of range for a tensor of shape {x.shape} (expected [{-r}, {r - 1}])"
        ) from None


def _norm_dim(dim: int, rank: int, what: str) -> int:
    r = max(rank, 1)
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"{what}: dim must be an int, got {type(dim).__name__}")
    if not -r <= dim < r:
        raise IndexError(f"{what}: dimension {dim} is out of range for a tensor of rank {rank} "
                         f"(expected [{-r}, {r - 1}])")
    return dim % r


# ---- fills ----
def fill_(self: Tensor, value: int | float | bool) -> Tensor:
    """Set every element to ``value`` (converted like ``cast``), in place."""
    if not isinstance(value, numbers.Number):
        raise TypeError(f"fill_: expected a number, got {type(value).__name__} (tensor of shape {self.shape})")
    self._fill_(value)
    return self


def copy_(self: Tensor, src: Tensor | Any) -> Tensor:
    """Copy ``src`` (broadcast, converted to this dtype) into this tensor."""
    self._copy_(src if isinstance(src, Tensor) else Tensor(src))
    return self


def uniform_(self: Tensor, low: float = 0.0, high: float = 1.0) -> Tensor:
    """Fill with ``uniform`` values, in place."""
    return _factory("uniform", self, low, high)


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill with ``normal`` values, in place."""
    return _factory("normal", self, mean, std)


def bernoulli_(self: Tensor, p: float = 0.5) -> Tensor:
    """Fill with ``bernoulli`` draws (1 with probability p, else 0), in place."""
    return _factory("bernoulli", self, p)


# ---- small protocol methods ----
def size(self: Tensor, dim: int | None = None) -> tuple[int, ...] | int:
    """The shape, or the size of one dim."""
    return self.shape if dim is None else self.shape[_dim(self, dim, "size", need_dims=True)]


def __len__(self: Tensor) -> int:
    if self.rank == 0:
        raise TypeError("len() of a rank-0 tensor (shape ())")
    return self.shape[0]


def _one_element(self: Tensor, what: str) -> int | float | bool:
    if self.numel != 1:
        raise RuntimeError(f"{what}: a tensor of shape {self.shape} ({self.numel} elements) is ambiguous; "
                           "only one-element tensors convert to a Python scalar")
    return self.item()


def __bool__(self: Tensor) -> bool:
    return bool(_one_element(self, "bool"))


def __float__(self: Tensor) -> float:
    return float(_one_element(self, "float"))


def __int__(self: Tensor) -> int:
    return int(_one_element(self, "int"))  # floats truncate toward zero, like int(3.7)


def __iter__(self: Tensor) -> Iterator[Tensor]:
    if self.rank == 0:
        raise TypeError("iteration over a rank-0 tensor (shape ())")
    return (self.select(0, i) for i in range(self.shape[0]))


def _with_grad(self: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        self.requires_grad = True
    return self


def _float_index(self: Tensor) -> int:
    if self.numel != 1 or not self.dtype.is_integer:
        raise TypeError(f"only integer tensors with one element can be converted to an index, got {self.dtype} "
                        f"of shape {self.shape}")
    return int(self.item())


_METHODS = {
    "__array__": __array__,
    "__len__": __len__,
    "__bool__": __bool__,
    "__float__": __float__,
    "__int__": __int__,
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
    "empty_like": empty_like,
    "zeros_like": zeros_like,
    "ones_like": ones_like,
    "full_like": full_like,
    "uniform_like": uniform_like,
    "normal_like": normal_like,
    "bernoulli_like": bernoulli_like,
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
