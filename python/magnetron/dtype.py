"""Data types: ``mag.float32``, ``mag.bfloat16``, ... and the type ``DType`` (API.md section 1)."""

from __future__ import annotations

from . import _C

__all__ = [
    "DType",
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "boolean",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
]

_FLOAT, _SIGNED, _UNSIGNED, _BOOL = 1, 2, 4, 8


class DType:
    """One element type. Instances are singletons built from the core's dtype table."""

    __slots__ = ("_id", "_name", "_size", "_flags", "_min", "_max")

    def __init__(self, row: dict) -> None:
        self._id: int = row["id"]
        self._name: str = row["name"]
        self._size: int = row["size"]
        self._flags: int = row["flags"]
        bits = 8 * self._size
        if self._flags & _SIGNED:
            self._min: int | float = -(1 << (bits - 1))
            self._max: int | float = (1 << (bits - 1)) - 1
        elif self._flags & _UNSIGNED:
            self._min, self._max = 0, (1 << bits) - 1
        elif self._flags & _BOOL:
            self._min, self._max = 0, 1
        else:
            self._min, self._max = row["min"], row["max"]

    @property
    def name(self) -> str:
        return self._name

    @property
    def size(self) -> int:
        """Bytes per element."""
        return self._size

    @property
    def is_floating_point(self) -> bool:
        return bool(self._flags & _FLOAT)

    @property
    def is_signed_integer(self) -> bool:
        return bool(self._flags & _SIGNED)

    @property
    def is_unsigned_integer(self) -> bool:
        return bool(self._flags & _UNSIGNED)

    @property
    def is_integer(self) -> bool:
        """Signed or unsigned integers (not boolean)."""
        return bool(self._flags & (_SIGNED | _UNSIGNED))

    @property
    def is_integral(self) -> bool:
        """Integers and boolean."""
        return bool(self._flags & (_SIGNED | _UNSIGNED | _BOOL))

    @property
    def is_numeric(self) -> bool:
        """Every dtype but boolean."""
        return not self._flags & _BOOL

    @property
    def min(self) -> int | float:
        """Smallest value (most negative finite value for floats)."""
        return self._min

    @property
    def max(self) -> int | float:
        """Largest (finite) value."""
        return self._max

    def __repr__(self) -> str:
        return self._name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DType) and other._id == self._id

    def __hash__(self) -> int:
        return hash(self._id)

    def __reduce__(self) -> str:
        return self._name


_ALL: list[DType] = [DType(row) for row in _C.dtype_table()]
_BY_NAME: dict[str, DType] = {d.name: d for d in _ALL}

float32 = _BY_NAME["float32"]
float16 = _BY_NAME["float16"]
bfloat16 = _BY_NAME["bfloat16"]
float64 = _BY_NAME["float64"]
boolean = _BY_NAME["boolean"]
int8 = _BY_NAME["int8"]
uint8 = _BY_NAME["uint8"]
int16 = _BY_NAME["int16"]
uint16 = _BY_NAME["uint16"]
int32 = _BY_NAME["int32"]
uint32 = _BY_NAME["uint32"]
int64 = _BY_NAME["int64"]
uint64 = _BY_NAME["uint64"]


def from_id(i: int) -> DType:
    return _ALL[i]


def promote_types(a: DType, b: DType) -> DType:
    """PyTorch's promotion of two tensor dtypes (NumPy's where PyTorch refuses, e.g. uint16 + int8)."""
    return _ALL[_C.promote_types(a._id, b._id)]


def as_dtype(d: DType | str, what: str = "dtype") -> DType:
    if isinstance(d, DType):
        return d
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    raise TypeError(f"{what}: expected a magnetron dtype (e.g. mag.float32), got {d!r}")
