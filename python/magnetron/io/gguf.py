"""GGUF (llama.cpp) files, parsed natively with NumPy.

Float tensors (F32, F16, BF16, F64) and integer tensors come over as they are; Q8_0, Q4_0 and
Q4_1 are dequantised (vectorised over all blocks at once) to a chosen dtype. GGUF lists
dimensions innermost first, so shapes are reversed into PyTorch order, and for Llama-family
models llama.cpp's rotary row permutation of the query/key weights is undone, so the result
has the Hugging Face layout. GGUF metadata is kept under ``gguf.<key>``; the tokenizer becomes
a Hugging Face ``tokenizer.json`` (see gguf_tokenizer.py).
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np

from .. import _C
from .. import dtype as _dt
from .._C import FormatError
from .._tensor import Tensor
from .mag import TensorSpec
from .source import Source, map_readonly, numel, spec

MAGIC = b"GGUF"
# GGUF value types -> (struct format, NumPy dtype) for the fixed-size ones
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9

# ggml type -> (name, block size in elements, bytes per block, magnetron dtype of the raw data)
GGML_TYPES: dict[int, tuple[str, int, int, _dt.DType | None]] = {
    0: ("F32", 1, 4, _dt.float32),
    1: ("F16", 1, 2, _dt.float16),
    2: ("Q4_0", 32, 18, None),
    3: ("Q4_1", 32, 20, None),
    8: ("Q8_0", 32, 34, None),
    24: ("I8", 1, 1, _dt.int8),
    25: ("I16", 1, 2, _dt.int16),
    26: ("I32", 1, 4, _dt.int32),
    27: ("I64", 1, 8, _dt.int64),
    28: ("F64", 1, 8, _dt.float64),
    30: ("BF16", 1, 2, _dt.bfloat16),
}
# architectures whose Q/K weights convert_hf_to_gguf.py permutes for its rotary layout
LLAMA_FAMILY = frozenset({"llama"})
# carried as tokenizer.json instead of as (large) raw arrays
_TOKENIZER_ARRAYS = {f"tokenizer.ggml.{k}" for k in ("tokens", "scores", "token_type", "merges")}


class _Reader:
    def __init__(self, buf: Any, path: str) -> None:
        self.buf, self.pos, self.path = buf, 0, path

    def take(self, n: int, what: str) -> int:
        if n > len(self.buf) - self.pos:
            raise FormatError(f"'{self.path}': {what} at byte {self.pos} runs past the end of the file")
        start = self.pos
        self.pos += n
        return start

    def unpack(self, fmt: str, what: str) -> Any:
        return struct.unpack_from("<" + fmt, self.buf, self.take(struct.calcsize("<" + fmt), what))[0]

    def string(self, what: str) -> str:
        n = self.unpack("Q", what)
        start = self.take(n, what)
        try:
            return bytes(self.buf[start : start + n]).decode("utf-8")
        except UnicodeDecodeError:
            raise FormatError(f"'{self.path}': {what} at byte {start} is not valid UTF-8") from None

    def value(self, vtype: int, what: str, depth: int = 0) -> Any:
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype], what)
        if vtype == _STRING:
            return self.string(what)
        if vtype != _ARRAY or depth > 2:
            raise FormatError(f"'{self.path}': {what} has unknown value type {vtype}")
        etype, count = self.unpack("I", what), self.unpack("Q", what)
        if etype in _SCALARS:  # numeric arrays in one go
            dt = np.dtype("<" + _SCALARS[etype])
            start = self.take(count * dt.itemsize if count < 2**62 else 2**63, what)
            return np.frombuffer(self.buf, dt, count, start).copy()
        if count > (len(self.buf) - self.pos) // 8:
            raise FormatError(f"'{self.path}': {what}: an array of {count} elements cannot fit in the file")
        return [self.value(etype, what, depth + 1) for _ in range(count)]


def _dequantize(raw: np.ndarray, kind: str) -> np.ndarray:
    """Blocks of 32 weights -> float32, all blocks at once."""
    blocks = raw.reshape(-1, {"Q8_0": 34, "Q4_0": 18, "Q4_1": 20}[kind])
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
    if kind == "Q8_0":
        return (d * blocks[:, 2:].view(np.int8).astype(np.float32)).reshape(-1)
    qs = blocks[:, 4:] if kind == "Q4_1" else blocks[:, 2:]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32)  # low nibbles are elements 0..15
    if kind == "Q4_0":
        return (d * (q - 8.0)).reshape(-1)
    m = blocks[:, 2:4].copy().view(np.float16).astype(np.float32)
    return (d * q + m).reshape(-1)


def _unpermute(a: np.ndarray, n_head: int) -> np.ndarray:
    """Inverse of llama.cpp's ``w.reshape(n_head, 2, r // n_head // 2, ...).swapaxes(1, 2)``."""
    rows = a.shape[0]
    return a.reshape(n_head, rows // n_head // 2, 2, *a.shape[1:]).swapaxes(1, 2).reshape(a.shape)


class GGUFSource(Source):
    format = "gguf"

    def __init__(self, path: Path, dequant_dtype: _dt.DType = _dt.bfloat16) -> None:
        super().__init__()
        self.path = str(path)
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            self.map = map_readonly(f, size)
        r = _Reader(self.map, self.path)
        if bytes(self.map[:4]) != MAGIC:
            raise FormatError(f"'{path}': not a GGUF file (bad magic)")
        r.pos = 4
        version = r.unpack("I", "version")
        if version not in (2, 3):
            raise FormatError(f"'{path}': GGUF version {version} is not supported (2 and 3 are)")
        n_tensors, n_kv = r.unpack("Q", "tensor count"), r.unpack("Q", "metadata count")
        if n_tensors > size // 24 or n_kv > size // 12:
            raise FormatError(f"'{path}': {n_tensors} tensors and {n_kv} keys cannot fit in {size} bytes")
        self.kv: dict[str, Any] = {}
        for _ in range(n_kv):
            key = r.string("metadata key")
            self.kv[key] = r.value(r.unpack("I", key), key)
        infos = []
        for _ in range(n_tensors):
            name = r.string("tensor name")
            n_dims = r.unpack("I", name)
            if n_dims > 16:
                raise FormatError(f"'{path}': tensor '{name}' has {n_dims} dimensions")
            dims = [r.unpack("Q", name) for _ in range(n_dims)]
            infos.append((name, dims, r.unpack("I", name), r.unpack("Q", name)))
        align = self.kv.get("general.alignment", 32)
        if not isinstance(align, int) or align <= 0 or align & (align - 1):
            raise FormatError(f"'{path}': general.alignment {align!r} is not a power of two")
        self.data_start = -(-r.pos // align) * align
        self.arch = str(self.kv.get("general.architecture", ""))
        self.dequant_dtype = dequant_dtype
        self._info: dict[str, tuple[int, int, int]] = {}
        for name, dims, gtype, offset in infos:
            self.specs.append(self._spec(name, dims, gtype, offset, size))
        self._set_metadata()

    def _spec(self, name: str, dims: list[int], gtype: int, offset: int, size: int) -> TensorSpec:
        if gtype not in GGML_TYPES:
            known = ", ".join(t[0] for t in GGML_TYPES.values())
            raise FormatError(f"'{self.path}': tensor '{name}' has ggml type {gtype}, which is not supported ({known})")
        kind, block, bsize, raw_dtype = GGML_TYPES[gtype]
        s = spec(self.path, name, raw_dtype or self.dequant_dtype, dims[::-1])
        if dims and dims[0] % block:
            raise FormatError(f"'{self.path}': tensor '{name}': row length {dims[0]} is not a multiple of {block}")
        nbytes = numel(s.shape) // block * bsize
        start = self.data_start + offset
        if start + nbytes > size:
            raise FormatError(f"'{self.path}': tensor '{name}' ({nbytes} bytes at {start}) runs past the end")
        self._info[name] = (gtype, start, nbytes)
        return s

    def _n_head(self, name: str) -> int | None:
        """Heads to un-permute by, for the Q/K projections of Llama-family models."""
        if self.arch not in LLAMA_FAMILY or not name.endswith((".weight", ".bias")):
            return None
        heads = self.kv.get(f"{self.arch}.attention.head_count")
        if ".attn_k." in name:
            heads = self.kv.get(f"{self.arch}.attention.head_count_kv", heads)
        elif ".attn_q." not in name:
            return None
        return int(heads) if heads else None

    def tensor(self, s: TensorSpec) -> Tensor:
        gtype, start, nbytes = self._info[s.name]
        kind, _, _, raw_dtype = GGML_TYPES[gtype]
        heads = self._n_head(s.name)
        if raw_dtype is not None and heads is None:
            return _C._borrow_bytes(self.map, start, raw_dtype._id, s.shape)
        raw = np.frombuffer(self.map, np.uint8, nbytes, start)
        if raw_dtype is None:
            arr = _dequantize(raw, kind).reshape(s.shape)
        else:  # the permutation moves whole elements: do it on their bits
            arr = raw.view(f"<u{raw_dtype.size}").reshape(s.shape)
        if heads is not None:
            if not s.shape or s.shape[0] % (2 * heads):
                raise FormatError(f"'{self.path}': tensor '{s.name}': {s.shape} rows do not split into {heads} heads")
            arr = np.ascontiguousarray(_unpermute(arr, heads))
        if raw_dtype is not None:
            return _C._borrow_bytes(arr, 0, raw_dtype._id, s.shape)
        return Tensor(arr).cast(self.dequant_dtype)

    def _set_metadata(self) -> None:
        from .gguf_tokenizer import tokenizer_metadata

        def plain(v: Any) -> Any:
            return v.tolist() if isinstance(v, np.ndarray) else [plain(x) for x in v] if isinstance(v, list) else v

        for key, value in self.kv.items():
            if key in _TOKENIZER_ARRAYS:
                continue
            value = plain(value)
            if isinstance(value, list) and any(isinstance(v, list) for v in value):
                value = json.dumps(value)  # .mag arrays do not nest
            self.metadata[f"gguf.{key}"] = value
        for key in ("general.architecture", "general.name"):
            if isinstance(self.kv.get(key), str):
                self.metadata[key] = self.kv[key]
        self.metadata.update(tokenizer_metadata(self.kv))
