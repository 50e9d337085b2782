"""Reading HF safetensors checkpoints (single file or sharded with ``model.safetensors.index.json``).

A safetensors file is an 8-byte little-endian header length, a JSON header (name -> dtype, shape,
[begin, end) byte offsets into the data that follows) and the raw little-endian data. The file is
memory-mapped and float32/float16 tensors point straight into the mapping (read-only, no copy).
The buffer protocol has no bfloat16 format, so bfloat16 tensors are widened to float32 with
NumPy (bf16 bits are the top half of f32 bits) and narrowed back: exact, but a copy.
"""

from __future__ import annotations

import json
import mmap
import os
import struct

from .. import _C
from .. import dtype as _dt
from .._tensor import Tensor

_FORMATS = {"F32": ("f", 4), "F16": ("e", 2), "BF16": ("H", 2), "I64": ("q", 8), "I32": ("i", 4)}


def read_safetensors(path: str) -> dict[str, Tensor]:
    """name -> Tensor for every tensor in one .safetensors file."""
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    size = len(mm)
    if size < 8:
        raise ValueError(f"{path}: not a safetensors file (only {size} bytes)")
    (n,) = struct.unpack("<Q", mm[:8])
    if 8 + n > size:
        raise ValueError(f"{path}: header of {n} bytes runs past the end of the file ({size} bytes)")
    header = json.loads(mm[8 : 8 + n])
    data = memoryview(mm)[8 + n :]
    out: dict[str, Tensor] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        kind, shape, (begin, end) = info["dtype"], list(info["shape"]), info["data_offsets"]
        if kind not in _FORMATS:
            raise ValueError(f"{path}: tensor {name!r} has unsupported dtype {kind} (supported: {', '.join(_FORMATS)})")
        fmt, itemsize = _FORMATS[kind]
        count = 1
        for s in shape:
            count *= s
        if not 0 <= begin <= end <= len(data) or end - begin != count * itemsize:
            raise ValueError(f"{path}: tensor {name!r} has bad offsets [{begin}, {end}) for shape {shape} {kind}")
        raw = data[begin:end]
        out[name] = _bf16(raw, shape) if kind == "BF16" else _C._from_buffer(raw.cast(fmt, shape))
    return out


def _bf16(raw: memoryview, shape: list[int]) -> Tensor:
    import numpy as np

    bits = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
    return _C._from_buffer(bits.view(np.float32).reshape(shape)).cast(_dt.bfloat16)


def read_checkpoint(folder: str) -> dict[str, Tensor]:
    """Every tensor of a checkpoint folder: ``model.safetensors`` or the shards its index lists."""
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.isfile(index):
        with open(index, encoding="utf-8") as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
    else:
        shards = sorted(n for n in os.listdir(folder) if n.endswith(".safetensors"))
    if not shards:
        raise FileNotFoundError(f"{folder}: no .safetensors weights found")
    out: dict[str, Tensor] = {}
    for shard in shards:
        out.update(read_safetensors(os.path.join(folder, shard)))
    return out
