"""Hugging Face safetensors, parsed natively (no torch, no safetensors package).

A file is an 8-byte little-endian header length, a JSON header
``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}`` and the
data, with offsets relative to the end of the header. The data is mapped and every tensor is a
zero-copy view into the mapping. Sharded checkpoints list their files in
``model.safetensors.index.json`` (``weight_map``: name -> file).
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any

from .. import _C
from .. import dtype as _dt
from .._C import FormatError
from .._tensor import Tensor
from .mag import TensorSpec
from .source import Source, map_readonly, numel, spec

DTYPES = {
    "F64": _dt.float64, "F32": _dt.float32, "F16": _dt.float16, "BF16": _dt.bfloat16, "BOOL": _dt.boolean,
    "I8": _dt.int8, "U8": _dt.uint8, "I16": _dt.int16, "U16": _dt.uint16, "I32": _dt.int32, "U32": _dt.uint32,
    "I64": _dt.int64, "U64": _dt.uint64,
}  # fmt: skip
MAX_HEADER = 100 << 20  # the safetensors library's own limit


class _File:
    """One mapped .safetensors file and its validated header."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(8)
            if len(head) < 8:
                raise FormatError(f"'{path}': not a safetensors file (only {size} bytes)")
            (n,) = struct.unpack("<Q", head)
            if n > min(size - 8, MAX_HEADER):
                raise FormatError(f"'{path}': header length {n} exceeds the file ({size} bytes)")
            try:
                header = json.loads(f.read(n))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise FormatError(f"'{path}': the header is not valid JSON ({e})") from None
            self.map = map_readonly(f, size)
        if not isinstance(header, dict):
            raise FormatError(f"'{path}': the header is not a JSON object")
        self.start = 8 + n
        self.metadata = header.pop("__metadata__", None) or {}
        self.entries: list[tuple[int, TensorSpec]] = []
        for name, info in header.items():
            self.entries.append(self._entry(name, info, size - self.start))
        self.entries.sort(key=lambda e: e[0])

    def _entry(self, name: str, info: Any, data_size: int) -> tuple[int, TensorSpec]:
        where = f"'{self.path}': tensor '{name}'"
        if not isinstance(info, dict) or not isinstance(info.get("dtype"), str):
            raise FormatError(f"{where} has no dtype")
        dtype = DTYPES.get(info["dtype"])
        if dtype is None:
            raise FormatError(f"{where} has dtype {info['dtype']}, which magnetron does not have")
        s = spec(self.path, name, dtype, info.get("shape"))
        offs = info.get("data_offsets")
        ok = isinstance(offs, list) and len(offs) == 2 and all(isinstance(o, int) for o in offs)
        if not ok or not 0 <= offs[0] <= offs[1] <= data_size:
            raise FormatError(f"{where} has data offsets {offs!r} outside the {data_size}-byte data")
        need = numel(s.shape) * dtype.size
        if offs[1] - offs[0] != need:
            raise FormatError(f"{where} spans {offs[1] - offs[0]} bytes, but {dtype} {s.shape} needs {need}")
        return offs[0], s

    def tensor(self, offset: int, s: TensorSpec) -> Tensor:
        return _C._borrow_bytes(self.map, self.start + offset, s.dtype._id, s.shape)


class SafetensorsSource(Source):
    format = "safetensors"

    def __init__(self, files: list[Path], expected: dict[str, str] | None = None) -> None:
        super().__init__()
        self._where: dict[str, tuple[_File, int]] = {}
        for path in files:
            f = _File(path)
            for key, value in f.metadata.items():
                self.metadata[f"safetensors.{key}"] = str(value)
            for offset, s in f.entries:
                if s.name in self._where:
                    raise FormatError(f"'{path}': tensor '{s.name}' also appears in '{self._where[s.name][0].path}'")
                self._where[s.name] = (f, offset)
                self.specs.append(s)
        missing = sorted(set(expected or {}) - set(self._where))
        if missing:
            raise FormatError(f"the index lists tensors that no shard holds: {', '.join(missing[:5])}")

    def tensor(self, s: TensorSpec) -> Tensor:
        f, offset = self._where[s.name]
        return f.tensor(offset, s)


def read_index(index: Path) -> tuple[list[Path], dict[str, str]]:
    """Shard files (in first-use order) and the weight map of a ``*.index.json``."""
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise FormatError(f"'{index}': not a sharded-checkpoint index ({e})") from None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise FormatError(f"'{index}': weight_map must map tensor names to file names")
    files = list(dict.fromkeys(index.parent / v for v in weight_map.values()))
    return files, weight_map
