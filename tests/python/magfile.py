"""An independent encoder of the .mag format, written from docs/format.md, for the tests.

It builds valid files and, on request, hostile ones (any header field, count or offset can be
overridden, the checksum fixed up or not), and reports the section boundaries.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

MAGIC = b"\x89MAG\r\n\x1a\n"
U64, I64, F64, BOOL, STRING, BYTES, ARRAY = range(7)
DTYPE_CODES = {
    "float32": 0, "float16": 1, "bfloat16": 2, "float64": 3, "boolean": 4, "int8": 5, "uint8": 6,
    "int16": 7, "uint16": 8, "int32": 9, "uint32": 10, "int64": 11, "uint64": 12,
}  # fmt: skip

_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ (0x82F63B78 if _c & 1 else 0)
    _CRC_TABLE.append(_c)


def crc32c(data: bytes, crc: int = 0) -> int:
    """Byte-at-a-time CRC32C, the slow reference."""
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = (crc >> 8) ^ _CRC_TABLE[(crc ^ b) & 0xFF]
    return crc ^ 0xFFFFFFFF


def enc_str(b: bytes | str) -> bytes:
    if isinstance(b, str):
        b = b.encode()
    return struct.pack("<Q", len(b)) + b


def enc_scalar(t: int, v: object) -> bytes:
    if t == U64:
        return struct.pack("<Q", v)
    if t == I64:
        return struct.pack("<q", v)
    if t == F64:
        return struct.pack("<d", v)
    if t == BOOL:
        return struct.pack("<B", v)
    return enc_str(v)  # type: ignore[arg-type]


def enc_kv(key: bytes | str, t: int, v: object, elem: int = I64) -> bytes:
    out = enc_str(key) + struct.pack("<I", t)
    if t == ARRAY:
        items = list(v)  # type: ignore[call-overload]
        return out + struct.pack("<IQ", elem, len(items)) + b"".join(enc_scalar(elem, x) for x in items)
    return out + enc_scalar(t, v)


@dataclass
class Tensor:
    name: bytes | str
    code: int
    shape: list[int]
    data: bytes = b""
    offset: int | None = None  # relative to the data section; None = next aligned position
    nbytes: int | None = None  # None = len(data)
    crc: int | None = None  # None = CRC of data

    def entry(self) -> bytes:
        nbytes = len(self.data) if self.nbytes is None else self.nbytes
        crc = crc32c(self.data) if self.crc is None else self.crc
        return (
            enc_str(self.name)
            + struct.pack("<II", self.code, len(self.shape))
            + struct.pack(f"<{len(self.shape)}Q", *self.shape)
            + struct.pack("<QQI", self.offset, nbytes, crc)
        )


@dataclass
class Built:
    blob: bytearray
    boundaries: list[int] = field(default_factory=list)  # every section and entry boundary
    data_offset: int = 0


def fix_crc(blob: bytearray, data_offset: int | None = None) -> None:
    """Recompute the header checksum (the hostile writer's move)."""
    if data_offset is None:
        data_offset = struct.unpack_from("<Q", blob, 48)[0]
    crc = crc32c(bytes(blob[:20]) + b"\0\0\0\0" + bytes(blob[24:data_offset]))
    struct.pack_into("<I", blob, 20, crc)


def build(
    kvs: list[bytes],
    tensors: list[Tensor],
    *,
    alignment: int = 64,
    version: int = 1,
    flags: int = 0,
    metadata_count: int | None = None,
    tensor_count: int | None = None,
    extra_index: bytes = b"",
    data_offset: int | None = None,
    data_size: int | None = None,
    padding_byte: int = 0,
    trailing: bytes = b"",
    crc: bool = True,
    sparse: bool = False,
) -> Built:
    """A file from encoded metadata entries and tensors; the overrides make it hostile."""
    # tensors with offset None are placed like the writer does: aligned, in order
    cursor = 0
    for t in tensors:
        if t.offset is None:
            t.offset = -(-cursor // alignment) * alignment
        cursor = max(cursor, t.offset + len(t.data))
    bounds = [64]
    index = b""
    for kv in kvs:
        index += kv
        bounds.append(64 + len(index))
    for t in tensors:
        index += t.entry()
        bounds.append(64 + len(index))
    index += extra_index
    index_end = 64 + len(index)
    if data_offset is None:
        data_offset = -(-index_end // alignment) * alignment
    # sparse: only up to the last data byte (the caller writes the rest with seek)
    if data_size is None:
        data_size = cursor
    data = bytearray(max((t.offset + len(t.data) for t in tensors if t.data), default=0) if sparse else data_size)
    for t in tensors:
        assert t.offset is not None
        if t.data:
            data[t.offset : t.offset + len(t.data)] = t.data
            bounds.append(data_offset + t.offset + len(t.data))
    head = bytearray(MAGIC + struct.pack("<IIII", version, flags, alignment, 0))
    head += struct.pack(
        "<QQQQQ",
        len(kvs) if metadata_count is None else metadata_count,
        len(tensors) if tensor_count is None else tensor_count,
        len(index),
        data_offset,
        data_size,
    )
    pad = bytes([padding_byte]) * max(0, data_offset - index_end)
    blob = bytearray(head + index + pad)[: max(data_offset, 64)] + data + trailing
    if crc and len(blob) >= data_offset >= 64:
        fix_crc(blob, data_offset)
    bounds += [index_end, data_offset]
    return Built(blob, sorted({b for b in bounds if b <= len(blob)}), data_offset)
