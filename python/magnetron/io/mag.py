"""``mag.save`` and ``mag.load``: .mag snapshots (the format: docs/format.md).

A snapshot is a versioned little-endian file with typed metadata, a tensor directory with
CRC32C checksums, and 64-byte-aligned tensor data. Loading maps the file and hands out tensors
that point into the mapping: O(1) in the model size, zero copy, read-only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from .. import _C
from .. import dtype as _dt
from .._tensor import Tensor

PathLike = str | os.PathLike


class TensorSpec(NamedTuple):
    """What the directory records about a tensor before its data exists."""

    name: str
    dtype: _dt.DType
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        n = self.dtype.size
        for s in self.shape:
            n *= s
        return n


class Snapshot(Mapping[str, Tensor]):
    """A loaded .mag file: a mapping name -> Tensor in file order, plus ``metadata``.

    With ``mmap=True`` every tensor points into the read-only mapped file: writing into one
    raises RuntimeError (``.clone()`` gives a writable copy), and the mapping stays alive as
    long as any tensor does, so tensors may outlive this object. With ``mmap=False`` the file
    is read into private memory and the tensors are writable.
    """

    def __init__(self, path: PathLike, mmap: bool = True, verify: bool = False) -> None:
        self._file = _C.SnapshotFile(os.fspath(path), mmap, verify)
        self._tensors: dict[str, Tensor] = dict(self._file.tensors())
        self._index = {name: i for i, name in enumerate(self._tensors)}
        self._metadata: dict[str, Any] | None = None
        self.mmap = mmap

    @property
    def path(self) -> str:
        return self._file.path

    @property
    def version(self) -> int:
        """The format version of the file."""
        return self._file.version

    @property
    def metadata(self) -> dict[str, Any]:
        """Key -> value (int, float, bool, str, bytes or a list of one of those); decoded on first use."""
        if self._metadata is None:
            self._metadata = self._file.metadata()
        return self._metadata

    @property
    def nbytes(self) -> int:
        """Size of the file."""
        return self._file.memory()[1]

    def info(self, name: str) -> dict[str, Any]:
        """The directory entry of ``name``: dtype id, shape, file offset, byte length, CRC32C."""
        return self._file.tensor_info(self._index[name])

    def verify(self, progress: Callable[[int], None] | None = None) -> None:
        """Check every tensor's data checksum (FormatError naming the first bad tensor).

        ``progress(nbytes)`` is called after each tensor.
        """
        for i in range(len(self._tensors)):
            self._file.verify(i)
            if progress is not None:
                progress(self._file.tensor_info(i)["nbytes"])

    def state_dict(self) -> dict[str, Tensor]:
        return dict(self._tensors)

    def __getitem__(self, name: str) -> Tensor:
        return self._tensors[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def __contains__(self, name: object) -> bool:
        return name in self._tensors

    def __repr__(self) -> str:
        return f"Snapshot({self.path!r}, {len(self)} tensors, {self.nbytes} bytes)"


def load(path: PathLike, mmap: bool = True, verify: bool = False) -> Snapshot:
    """Open a .mag snapshot.

    The header and directory checksum is always checked; ``verify=True`` also checks every
    tensor's data checksum (reads the whole file). A corrupt, truncated or hostile file raises
    ``mag.FormatError`` naming the file and the problem.
    """
    return Snapshot(path, mmap=mmap, verify=verify)


def _as_tensor(name: str, value: Any) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if hasattr(value, "__dlpack__"):  # e.g. a torch state_dict: zero copy
        return Tensor.from_dlpack(value.detach() if hasattr(value, "detach") else value)
    raise TypeError(f"save: '{name}' is a {type(value).__name__}, not a Tensor")


def tensors_of(obj: Any) -> dict[str, Tensor]:
    """The named tensors of a mapping (state_dict, Snapshot) or of an object with ``.state_dict()``."""
    if not isinstance(obj, Mapping) and callable(getattr(obj, "state_dict", None)):
        obj = obj.state_dict()
    if not isinstance(obj, Mapping):
        kind = type(obj).__name__
        raise TypeError(f"save: expected a mapping of name -> Tensor or an object with .state_dict(), got {kind}")
    out = {}
    for name, value in obj.items():
        if not isinstance(name, str):
            raise TypeError(f"save: tensor names must be str, got {name!r}")
        out[name] = _as_tensor(name, value)
    return out


def write(
    path: PathLike,
    specs: Sequence[TensorSpec],
    fetch: Callable[[TensorSpec], Tensor],
    metadata: Mapping[str, Any] | None = None,
    on_tensor: Callable[[int], None] | None = None,
) -> None:
    """Write a snapshot tensor by tensor: only one fetched tensor needs to be alive at a time.

    ``fetch(spec)`` returns the data of each spec (its dtype and shape); ``on_tensor(nbytes)``
    is called after each tensor is written. The file appears atomically when everything
    succeeded; on any error (or KeyboardInterrupt) nothing is left behind.
    """
    writer = _C.SnapshotWriter(os.fspath(path))
    try:
        for key, value in (metadata or {}).items():
            if not isinstance(key, str):
                raise TypeError(f"save: metadata keys must be str, got {key!r}")
            writer.set_metadata(key, value)
        indices = [writer.declare(s.name, s.dtype._id, s.shape) for s in specs]
        for index, spec in zip(indices, specs, strict=True):
            writer.write(index, fetch(spec))
            if on_tensor is not None:
                on_tensor(spec.nbytes)
        writer.commit()
    finally:
        writer.abort()  # no-op after a successful commit


def save(path: PathLike, tensors_or_module_or_state_dict: Any, metadata: Mapping[str, Any] | None = None) -> None:
    """Write tensors (a name -> Tensor mapping, a state_dict, a Snapshot, or anything with
    ``.state_dict()``, such as a Module) and ``metadata`` to a .mag snapshot, atomically.

    Metadata values are int, float, bool, str, bytes or a list of one of those; store nested
    data as JSON strings (the standard keys are listed in docs/format.md).
    """
    tensors = tensors_of(tensors_or_module_or_state_dict)
    specs = [TensorSpec(name, t.dtype, tuple(t.shape)) for name, t in tensors.items()]
    write(path, specs, lambda s: tensors[s.name], metadata)
