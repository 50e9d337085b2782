"""Hostile and damaged .mag files: every one raises mag.FormatError (never a crash).

Files come from the independent encoder in magfile.py. Random flips without a checksum fix
exercise the header checksum; flips *with* the checksum recomputed (what a hostile writer
does) and the structured cases below exercise every bounds check of the parser. Bounded:
the whole module runs in a few seconds.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from pathlib import Path

import magfile as mf
import magnetron as mag
import pytest

F32, BF16, I64, U8, BOOL_DT = (mf.DTYPE_CODES[n] for n in ("float32", "bfloat16", "int64", "uint8", "boolean"))


def kvs() -> list[bytes]:
    return [
        mf.enc_kv("general.architecture", mf.STRING, "llama"),
        mf.enc_kv("u", mf.U64, 2**64 - 1),
        mf.enc_kv("i", mf.I64, -5),
        mf.enc_kv("f", mf.F64, 0.5),
        mf.enc_kv("b", mf.BOOL, 1),
        mf.enc_kv("raw", mf.BYTES, b"\x00\x01"),
        mf.enc_kv("words", mf.ARRAY, ["a", "bc", ""], elem=mf.STRING),
        mf.enc_kv("nums", mf.ARRAY, [1, 2, 3], elem=mf.I64),
        mf.enc_kv("flags", mf.ARRAY, [1, 0], elem=mf.BOOL),
    ]


def tensors() -> list[mf.Tensor]:
    return [
        mf.Tensor("w", F32, [2, 3], struct.pack("<6f", *range(6))),
        mf.Tensor("h", BF16, [4], struct.pack("<4H", 0x3F80, 0x4000, 0, 0xBF80)),
        mf.Tensor("empty", F32, [0, 5]),
        mf.Tensor("ids", I64, [3], struct.pack("<3q", -1, 0, 2**62)),
        mf.Tensor("mask", BOOL_DT, [5], bytes([1, 0, 1, 1, 0])),
    ]


def touch(path: Path, verify: bool = True) -> None:
    """Load and use everything a caller could use."""
    snap = mag.load(path, verify=verify)
    assert isinstance(snap.metadata, dict)
    for t in snap.values():
        t.tolist()


def expect_error(path: Path, blob: bytes | bytearray, match: str | None = None, verify: bool = False) -> None:
    path.write_bytes(bytes(blob))
    with pytest.raises(mag.FormatError, match=match) as e:
        touch(path, verify=verify)
    assert str(path) in str(e.value)


def test_the_base_file_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "base.mag"
    path.write_bytes(bytes(mf.build(kvs(), tensors()).blob))
    snap = mag.load(path, verify=True)
    assert snap["w"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert snap["h"].tolist() == [1.0, 2.0, 0.0, -1.0]
    assert snap["ids"].tolist() == [-1, 0, 2**62]
    assert snap.metadata["words"] == ["a", "bc", ""] and snap.metadata["flags"] == [True, False]


def test_truncation_at_every_boundary(tmp_path: Path) -> None:
    built = mf.build(kvs(), tensors())
    cuts = set(range(0, 72))
    for b in built.boundaries:
        cuts |= {b - 1, b, b + 1}
    for cut in sorted(c for c in cuts if 0 <= c < len(built.blob)):
        expect_error(tmp_path / "cut.mag", built.blob[:cut], match="truncated|shorter|header")


def test_random_flips_in_the_index_fail_the_checksum(tmp_path: Path) -> None:
    built = mf.build(kvs(), tensors())
    rng = random.Random(7)
    for _ in range(300):
        blob = bytearray(built.blob)
        pos = rng.randrange(built.data_offset)
        blob[pos] ^= 1 << rng.randrange(8)
        expect_error(tmp_path / "flip.mag", blob)


def test_random_flips_in_tensor_data_fail_verification(tmp_path: Path) -> None:
    built = mf.build(kvs(), tensors())
    spans = [(built.data_offset + t.offset, len(t.data)) for t in tensors_with_offsets() if t.data]
    rng = random.Random(8)
    path = tmp_path / "data.mag"
    for _ in range(100):
        blob = bytearray(built.blob)
        start, n = rng.choice(spans)
        blob[start + rng.randrange(n)] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(blob))
        mag.load(path)  # the data is not checked unless asked
        expect_error(path, blob, match="data checksum mismatch", verify=True)


def tensors_with_offsets() -> list[mf.Tensor]:
    ts = tensors()
    mf.build(kvs(), ts)  # assigns the offsets
    return ts


def test_hostile_flips_with_a_valid_checksum_never_crash(tmp_path: Path) -> None:
    """Random bytes changed in the header and index, checksum recomputed: a file may still be
    valid (a changed character in a string), but loading either works or raises FormatError."""
    built = mf.build(kvs(), tensors())
    rng = random.Random(9)
    path = tmp_path / "hostile.mag"
    failures = 0
    for i in range(700):
        blob = bytearray(built.blob)
        for _ in range(rng.choice((1, 1, 2, 3))):
            pos = rng.choice((rng.randrange(64), rng.randrange(64, built.data_offset)))
            if 20 <= pos < 24:
                continue
            blob[pos] = rng.choice((rng.randrange(256), 0xFF, 0x00, 0x7F, 0x80, blob[pos] ^ 1))
        mf.fix_crc(blob)
        path.write_bytes(bytes(blob))
        try:
            touch(path, verify=i % 2 == 0)
        except mag.FormatError:
            failures += 1
    assert failures > 400


def edit_header(field: int, value: int, fmt: str = "<Q") -> Callable[[bytearray], None]:
    def edit(blob: bytearray) -> None:
        struct.pack_into(fmt, blob, field, value)

    return edit


def one_tensor(data_size: int | None = None, **kw: object) -> Callable[[], mf.Built]:
    def make() -> mf.Built:
        args = {"name": "t", "code": F32, "shape": [4], "data": bytes(16)} | kw
        return mf.build([], [mf.Tensor(**args)], data_size=data_size)  # type: ignore[arg-type]

    return make


def one_kv(kv: bytes, room: int = 16) -> Callable[[], mf.Built]:
    """A file with one metadata entry; `room` bytes after it keep the count check from firing first."""
    return lambda: mf.build([kv], [], extra_index=bytes(room))


def raw_kv(key: bytes, body: bytes) -> bytes:
    return mf.enc_str(key) + body


HOSTILE: dict[str, tuple[Callable[[], mf.Built], str]] = {
    "bad magic": (lambda: mf.build([], [], crc=False), "bad magic"),  # magic edited below
    "version 0": (lambda: mf.build([], [], version=0), "version 0"),
    "version 2": (lambda: mf.build([], [], version=2), "version 2 is not supported"),
    "flags": (lambda: mf.build([], [], flags=1), "flags"),
    "alignment 32": (lambda: mf.build([], [], alignment=32), "alignment"),
    "alignment 96": (lambda: mf.build([], [], alignment=96), "alignment"),
    "alignment 2**17": (lambda: mf.build([], [], alignment=1 << 17), "alignment"),
    "metadata count absurd": (lambda: mf.build(kvs(), [], metadata_count=2**64 - 1), "cannot fit"),
    "tensor count absurd": (lambda: mf.build([], tensors(), tensor_count=2**63), "cannot fit"),
    "one tensor too many": (lambda: mf.build([], tensors(), tensor_count=6), "index ends"),
    "one tensor too few": (lambda: mf.build([], tensors(), tensor_count=4), "left over"),
    "one key too many": (lambda: mf.build(kvs(), [], metadata_count=10), "index ends"),
    "extra index bytes": (lambda: mf.build(kvs(), [], extra_index=b"\0" * 8), "left over"),
    "data offset unaligned": (lambda: mf.build([], tensors(), data_offset=1000), "truncated|alignment|multiple"),
    "data offset in index": (lambda: mf.build(kvs(), [], data_offset=64), "overruns"),
    "data size absurd": (lambda: mf.build([], tensors(), data_size=2**64 - 1, sparse=True), "truncated"),
    "data size one more": (lambda: mf.build([], tensors(), data_size=385, sparse=True), "truncated"),
    "trailing bytes": (lambda: mf.build([], tensors(), trailing=b"x"), "unexpected bytes"),
    "non-zero padding": (lambda: mf.build(kvs(), [], padding_byte=1), "padding"),
    "key length absurd": (one_kv(struct.pack("<Q", 2**64 - 1) + b"k"), "needs"),
    "key empty": (one_kv(mf.enc_kv(b"", mf.BOOL, 1)), "metadata key 0"),
    "key invalid utf-8": (one_kv(mf.enc_kv(b"\xff", mf.BOOL, 1)), "UTF-8"),
    "key overlong utf-8": (one_kv(mf.enc_kv(b"\xc0\x80", mf.BOOL, 1)), "UTF-8"),
    "key surrogate": (one_kv(mf.enc_kv(b"\xed\xa0\x80", mf.BOOL, 1)), "UTF-8"),
    "key with NUL": (one_kv(mf.enc_kv(b"a\0b", mf.BOOL, 1)), "NUL"),
    "unknown value type": (one_kv(raw_kv(b"k", struct.pack("<IQ", 7, 0))), "unknown value type 7"),
    "bool 2": (one_kv(raw_kv(b"k", struct.pack("<IB", mf.BOOL, 2))), "0 or 1"),
    "string length absurd": (one_kv(raw_kv(b"k", struct.pack("<IQ", mf.STRING, 2**63))), "needs"),
    "nested array": (one_kv(raw_kv(b"k", struct.pack("<IIQ", mf.ARRAY, mf.ARRAY, 0))), "arrays of arrays"),
    "array of unknown": (one_kv(raw_kv(b"k", struct.pack("<IIQ", mf.ARRAY, 99, 0))), "unknown array element"),
    "array count absurd": (one_kv(raw_kv(b"k", struct.pack("<IIQ", mf.ARRAY, mf.U64, 2**61))), "cannot fit"),
    "array count absurd bool": (one_kv(raw_kv(b"k", struct.pack("<IIQ", mf.ARRAY, mf.BOOL, 2**64 - 1))), "cannot fit"),
    "string not utf-8": (one_kv(mf.enc_kv("k", mf.STRING, b"\xc3"), room=0), "not valid UTF-8"),
    "array string not utf-8": (one_kv(mf.enc_kv("k", mf.ARRAY, [b"ok", b"\xff"], elem=mf.STRING), room=0), "UTF-8"),
    "duplicate key": (lambda: mf.build([mf.enc_kv("k", mf.BOOL, 1)] * 2, []), "'k' appears twice"),
    "duplicate tensor": (lambda: mf.build([], [mf.Tensor("t", F32, [1], bytes(4)) for _ in range(2)]), "twice"),
    "tensor name empty": (one_tensor(name=b""), "tensor name 0"),
    "tensor name invalid": (one_tensor(name=b"\x80abc"), "UTF-8"),
    "unknown dtype": (one_tensor(code=13), "unknown dtype code 13"),
    "rank 17": (one_tensor(shape=[1] * 17), "rank 17"),
    "rank absurd": (one_tensor(shape=[], nbytes=16), "rank 4294967295"),  # rank patched below
    "dim absurd": (one_tensor(shape=[2**63]), "dimension 0"),
    "numel overflow": (one_tensor(shape=[2**32, 2**32, 2**32]), "more elements"),
    "size overflow": (one_tensor(shape=[2**62]), "more elements"),
    "nbytes mismatch": (one_tensor(nbytes=20), "does not match"),
    "offset unaligned": (one_tensor(offset=8, data=b"", nbytes=16, data_size=64), "multiple of the alignment"),
    "offset out of range": (one_tensor(offset=640, data=b"", nbytes=16, data_size=64), "outside"),
    "offset overflow": (one_tensor(offset=2**64 - 64, data=b"", nbytes=16, data_size=64), "outside"),
    "range past the end": (one_tensor(nbytes=16, shape=[4], data=bytes(8)), "does not match|outside"),
    "overlap": (
        lambda: mf.build([], [mf.Tensor("a", F32, [32], bytes(128)), mf.Tensor("b", F32, [4], bytes(16), offset=64)]),
        "overlap",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE), ids=list(HOSTILE))
def test_hostile_structures(tmp_path: Path, case: str) -> None:
    make, match = HOSTILE[case]
    built = make()
    blob = built.blob
    if case == "bad magic":
        blob[1] = ord("X")
    if case == "rank absurd":
        struct.pack_into("<I", blob, 64 + 8 + 1 + 4, 2**32 - 1)
        mf.fix_crc(blob)
    if case == "range past the end":  # the tensor claims 16 bytes, the data section has 8
        struct.pack_into("<Q", blob, 56, 8)
        blob[:] = blob[: built.data_offset + 8]
        mf.fix_crc(blob)
    expect_error(tmp_path / "h.mag", blob, match=match)


def test_checksum_mismatch_names_the_problem(tmp_path: Path) -> None:
    built = mf.build(kvs(), tensors())
    built.blob[20] ^= 0xFF
    expect_error(tmp_path / "c.mag", built.blob, match="header checksum mismatch")


def test_data_offset_edits(tmp_path: Path) -> None:
    base = mf.build(kvs(), tensors()).blob
    for field, value in [(40, 2**64 - 1), (40, 0), (48, 2**64 - 1), (48, 0), (56, 2**64 - 1), (24, 1), (32, 1)]:
        blob = bytearray(base)
        edit_header(field, value)(blob)
        if len(blob) >= struct.unpack_from("<Q", blob, 48)[0] >= 64:
            mf.fix_crc(blob)
        expect_error(tmp_path / "e.mag", blob)
