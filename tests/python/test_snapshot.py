"""mag.save / mag.load: round trips, metadata, zero copy, read-only, atomic writes, checksums."""

from __future__ import annotations

import gc
import math
import os
import random
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import magfile
import magnetron as mag
import numpy as np
import pytest
from magnetron import _C

ALL_DTYPES = [
    mag.float32, mag.float16, mag.bfloat16, mag.float64, mag.boolean, mag.int8, mag.uint8,
    mag.int16, mag.uint16, mag.int32, mag.uint32, mag.int64, mag.uint64,
]  # fmt: skip


def sample(dtype: mag.dtype.DType, shape: tuple[int, ...], seed: int = 0) -> mag.Tensor:
    rng = np.random.default_rng(seed)
    n = math.prod(shape)
    if dtype.is_floating_point:
        src = mag.Tensor(rng.standard_normal(n).astype(np.float32) * 100)
        return src.cast(dtype).reshape(shape)
    if dtype == mag.boolean:
        return mag.Tensor(rng.integers(0, 2, n).astype(np.bool_)).reshape(shape)
    lo, hi = max(int(dtype.min), -(2**62)), min(int(dtype.max), 2**62)
    vals = [int(v) for v in rng.integers(lo, hi, n, endpoint=True)]
    if n >= 2:
        vals[0], vals[1] = int(dtype.min), int(dtype.max)
    return mag.Tensor(vals).cast(dtype).reshape(shape) if n else mag.Tensor.empty(*shape, dtype=dtype)


def shape_of_rank(r: int) -> tuple[int, ...]:
    return tuple((2, 3, 1)[i % 3] if i < 6 else 1 for i in range(r))


def same(a: mag.Tensor, b: mag.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tolist() == b.tolist()


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_round_trip_every_dtype_and_rank(tmp_path: Path, dtype: mag.dtype.DType) -> None:
    tensors = {f"r{r}": sample(dtype, shape_of_rank(r), seed=r) for r in range(17)}
    tensors["empty"] = mag.Tensor.empty(0, dtype=dtype)
    tensors["empty3"] = mag.Tensor.empty(2, 0, 3, dtype=dtype)
    path = tmp_path / "t.mag"
    mag.save(path, tensors)
    for mmap in (True, False):
        snap = mag.load(path, mmap=mmap, verify=True)
        assert list(snap) == list(tensors)
        for name, t in tensors.items():
            assert same(snap[name], t), name
            assert snap[name].data_ptr % 64 == 0 or snap[name].numel == 0


def test_views_are_saved_as_their_values(tmp_path: Path) -> None:
    base = mag.Tensor.arange(24, dtype=mag.float32).reshape(2, 3, 4)
    views = {"t": base.transpose(0, 2), "slice": base[1, :, 1:3], "neg": base[:, ::-1]}
    views["bcast"] = base[0:1].expand(3, 3, 4)
    mag.save(tmp_path / "v.mag", views)
    snap = mag.load(tmp_path / "v.mag")
    for name, v in views.items():
        assert snap[name].is_contiguous and snap[name].tolist() == v.tolist(), name


def test_matches_the_independent_encoder(tmp_path: Path) -> None:
    """The writer produces exactly the bytes the spec describes (tests/python/magfile.py)."""
    a = mag.Tensor.arange(6, dtype=mag.int16).reshape(2, 3)
    b = mag.Tensor([1.5, -2.0]).cast(mag.float64)
    meta = {"general.architecture": "gpt2", "n": -3, "big": 2**63, "x": 0.25, "ok": True, "raw": b"\x00\xff",
            "list": ["a", "bc"]}  # fmt: skip
    e = mag.Tensor.empty(0, 2, dtype=mag.uint8)
    mag.save(tmp_path / "a.mag", {"a": a, "e": e, "b": b, "e2": e}, metadata=meta)
    kvs = [
        magfile.enc_kv("general.architecture", magfile.STRING, "gpt2"),
        magfile.enc_kv("n", magfile.I64, -3),
        magfile.enc_kv("big", magfile.U64, 2**63),
        magfile.enc_kv("x", magfile.F64, 0.25),
        magfile.enc_kv("ok", magfile.BOOL, 1),
        magfile.enc_kv("raw", magfile.BYTES, b"\x00\xff"),
        magfile.enc_kv("list", magfile.ARRAY, ["a", "bc"], elem=magfile.STRING),
    ]
    tensors = [
        magfile.Tensor("a", magfile.DTYPE_CODES["int16"], [2, 3], struct.pack("<6h", *range(6))),
        magfile.Tensor("e", magfile.DTYPE_CODES["uint8"], [0, 2]),
        magfile.Tensor("b", magfile.DTYPE_CODES["float64"], [2], struct.pack("<2d", 1.5, -2.0)),
        magfile.Tensor("e2", magfile.DTYPE_CODES["uint8"], [0, 2]),
    ]
    assert (tmp_path / "a.mag").read_bytes() == bytes(magfile.build(kvs, tensors).blob)


# ---- metadata ----
def test_metadata_round_trip_all_value_types(tmp_path: Path) -> None:
    meta = {
        "u64.max": 2**64 - 1,
        "i64.min": -(2**63),
        "zero": 0,
        "f64": 3.141592653589793,
        "f64.inf": float("inf"),
        "f64.negzero": -0.0,
        "bool.t": True,
        "bool.f": False,
        "str": "héllo \U0001f600 wörld",
        "str.empty": "",
        "str.nul": "a\x00b",
        "bytes": bytes(range(256)),
        "bytes.empty": b"",
        "arr.int": [1, -2, 3],
        "arr.u64": [1, 2**64 - 1],
        "arr.float": [0.5, 1e300],
        "arr.mixed_num": [1, 2.5],
        "arr.bool": [True, False, True],
        "arr.str": ["x", "", "ÿ"],
        "arr.bytes": [b"a", b""],
        "arr.empty": [],
        "tuple": (1, 2),
        "model.config": '{"hidden_size": 8}',
        "np.int": np.int64(7),
        "np.float": np.float32(0.5),
    }
    mag.save(tmp_path / "m.mag", {}, metadata=meta)
    got = mag.load(tmp_path / "m.mag").metadata
    assert list(got) == list(meta)
    expect = dict(meta, **{"arr.mixed_num": [1.0, 2.5], "tuple": [1, 2], "np.int": 7, "np.float": 0.5})
    assert got == expect
    assert math.copysign(1, got["f64.negzero"]) == -1
    assert type(got["bool.t"]) is bool and type(got["arr.bool"][0]) is bool
    assert type(got["arr.mixed_num"][0]) is float
    nan = mag.load(tmp_path / "m.mag")
    mag.save(tmp_path / "n.mag", {}, metadata={"nan": float("nan")})
    assert math.isnan(mag.load(tmp_path / "n.mag").metadata["nan"]) and nan.metadata


@pytest.mark.parametrize(
    "meta, exc",
    [
        ({"d": {"a": 1}}, TypeError),
        ({"nested": [[1]]}, TypeError),
        ({"mixed": [1, "a"]}, TypeError),
        ({"bool_int": [True, 1]}, TypeError),
        ({"huge": 2**64}, OverflowError),
        ({"neg_and_huge": [-1, 2**63]}, OverflowError),
        ({"": 1}, ValueError),
        ({"nul\x00key": 1}, ValueError),
        ({1: 1}, TypeError),
        ({"obj": object()}, TypeError),
        ({"surrogate": "\udc80"}, UnicodeEncodeError),
    ],
)
def test_bad_metadata_is_refused_and_nothing_is_written(tmp_path: Path, meta: dict, exc: type) -> None:
    with pytest.raises(exc):
        mag.save(tmp_path / "bad.mag", {"a": mag.Tensor.zeros(2)}, metadata=meta)
    assert list(tmp_path.iterdir()) == []


def test_bad_tensor_arguments(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="not a Tensor"):
        mag.save(tmp_path / "x.mag", {"a": [1, 2]})
    with pytest.raises(TypeError, match="names must be str"):
        mag.save(tmp_path / "x.mag", {1: mag.Tensor.zeros(1)})
    with pytest.raises(TypeError, match="state_dict"):
        mag.save(tmp_path / "x.mag", [mag.Tensor.zeros(1)])
    with pytest.raises(ValueError, match="tensor name"):
        mag.save(tmp_path / "x.mag", {"": mag.Tensor.zeros(1)})
    assert list(tmp_path.iterdir()) == []


def test_save_accepts_state_dict_objects_snapshots_and_torch(tmp_path: Path) -> None:
    class Holder:
        def state_dict(self) -> dict:
            return {"w": mag.Tensor.ones(2, 2)}

    mag.save(tmp_path / "h.mag", Holder())
    snap = mag.load(tmp_path / "h.mag")
    assert snap["w"].tolist() == [[1.0, 1.0], [1.0, 1.0]]
    mag.save(tmp_path / "copy.mag", snap, metadata={"k": 1})  # a snapshot saves like a state_dict
    assert mag.load(tmp_path / "copy.mag")["w"].tolist() == snap["w"].tolist()
    torch = pytest.importorskip("torch")
    sd = {"x": torch.arange(6, dtype=torch.bfloat16).reshape(2, 3), "y": torch.ones(3).t()}
    mag.save(tmp_path / "t.mag", sd)
    back = mag.load(tmp_path / "t.mag")
    assert back["x"].dtype == mag.bfloat16
    assert torch.equal(torch.from_dlpack(back["x"].clone()), sd["x"])


# ---- zero copy, lifetime, read-only ----
def test_zero_copy_and_tensors_outlive_the_snapshot(tmp_path: Path) -> None:
    tensors = {f"w{i}": sample(mag.float32, (64, 3), seed=i) for i in range(5)}
    mag.save(tmp_path / "z.mag", tensors)
    snap = mag.load(tmp_path / "z.mag")
    base, size = snap._file.memory()
    for name in tensors:
        info = snap.info(name)
        assert snap[name].data_ptr == base + info["offset"]
        assert base <= snap[name].data_ptr < base + size
        assert info["offset"] % 64 == 0
    kept = snap["w3"]
    del snap
    gc.collect()
    assert kept.tolist() == tensors["w3"].tolist()  # the mapping is still alive
    view = kept[1:3]
    del kept
    gc.collect()
    assert view.tolist() == tensors["w3"][1:3].tolist()


def test_loaded_tensors_are_read_only(tmp_path: Path) -> None:
    mag.save(tmp_path / "r.mag", {"w": mag.Tensor.arange(6, dtype=mag.float32).reshape(2, 3)})
    w = mag.load(tmp_path / "r.mag")["w"]
    assert w.is_read_only
    for write in (lambda: w.fill_(1.0), lambda: w.__setitem__(0, 5.0), lambda: w.copy_(mag.Tensor.zeros(2, 3)),
                  lambda: w.add_(1.0), lambda: w[0].fill_(2.0)):  # fmt: skip
        with pytest.raises(RuntimeError, match="read-only"):
            write()
    arr = w.numpy()
    assert not arr.flags.writeable
    c = w.clone()
    assert not c.is_read_only
    c.fill_(7.0)
    assert w.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    private = mag.load(tmp_path / "r.mag", mmap=False)["w"]
    assert not private.is_read_only
    private.fill_(9.0)
    assert mag.load(tmp_path / "r.mag")["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_snapshot_mapping_api(tmp_path: Path) -> None:
    meta = {"general.architecture": "x"}
    mag.save(tmp_path / "s.mag", {"b": mag.Tensor.zeros(1), "a": mag.Tensor.ones(2)}, metadata=meta)
    snap = mag.load(tmp_path / "s.mag")
    assert list(snap) == ["b", "a"] and len(snap) == 2 and "a" in snap and "z" not in snap
    assert snap.version == 1 and snap.path == str(tmp_path / "s.mag")
    assert set(snap.state_dict()) == {"a", "b"}
    assert "2 tensors" in repr(snap)
    with pytest.raises(KeyError):
        snap["z"]


# ---- atomic writes ----
def test_failure_mid_write_leaves_nothing(tmp_path: Path) -> None:
    """The file-size limit makes write() fail half way (EFBIG): no file and no temp file remain."""
    script = textwrap.dedent(f"""
        import resource, signal, sys
        import magnetron as mag
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        tensors = {{"a": mag.Tensor.zeros(1 << 16), "b": mag.Tensor.zeros(1 << 16)}}
        resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, resource.RLIM_INFINITY))
        try:
            mag.save({str(tmp_path / "big.mag")!r}, tensors)
        except OSError as e:
            print("OSError", e)
            sys.exit(0)
        sys.exit(1)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "File too large" in r.stdout
    assert list(tmp_path.iterdir()) == []


def test_exception_while_fetching_leaves_nothing_and_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "keep.mag"
    mag.save(path, {"old": mag.Tensor.ones(3)})
    before = path.read_bytes()
    specs = [mag.io.TensorSpec("a", mag.float32, (4,)), mag.io.TensorSpec("b", mag.float32, (4,))]

    def fetch(spec: mag.io.TensorSpec) -> mag.Tensor:
        if spec.name == "b":
            raise KeyboardInterrupt
        return mag.Tensor.zeros(4)

    with pytest.raises(KeyboardInterrupt):
        mag.io.mag.write(path, specs, fetch)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.mag"]
    with pytest.raises(ValueError, match="declared as float32 \\(4,\\)"):
        mag.io.mag.write(path, specs, lambda s: mag.Tensor.zeros(5))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.mag"]


def test_os_errors_are_oserrors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="missing"):
        mag.load(tmp_path / "missing.mag")
    with pytest.raises(FileNotFoundError):
        mag.save(tmp_path / "no" / "dir.mag", {"a": mag.Tensor.zeros(1)})
    with pytest.raises(IsADirectoryError):
        mag.save(tmp_path, {"a": mag.Tensor.zeros(1)})
    with pytest.raises(IsADirectoryError):
        mag.load(tmp_path)


def test_overwrite_replaces_atomically(tmp_path: Path) -> None:
    path = tmp_path / "o.mag"
    mag.save(path, {"a": mag.Tensor.zeros(3)})
    old = mag.load(path)["a"]  # maps the old inode: unaffected by the replacement
    mag.save(path, {"a": mag.Tensor.ones(3)})
    assert mag.load(path)["a"].tolist() == [1.0, 1.0, 1.0]
    assert old.tolist() == [0.0, 0.0, 0.0]


# ---- checksums ----
def test_data_checksums_are_verified_on_request(tmp_path: Path) -> None:
    path = tmp_path / "c.mag"
    mag.save(path, {"a": mag.Tensor.zeros(16), "b": mag.Tensor.ones(16)})
    blob = bytearray(path.read_bytes())
    off = mag.load(path).info("b")["offset"]
    blob[off + 5] ^= 0x10
    path.write_bytes(bytes(blob))
    snap = mag.load(path)  # the header checksum does not cover the data
    with pytest.raises(mag.FormatError, match="tensor 'b': data checksum mismatch"):
        snap.verify()
    with pytest.raises(mag.FormatError, match=r"c\.mag.*'b'"):
        mag.load(path, verify=True)
    with pytest.raises(ValueError):  # FormatError is a ValueError
        mag.load(path, mmap=False, verify=True)


def test_crc32c_known_values_and_paths() -> None:
    assert _C._crc32c(b"") == 0
    assert _C._crc32c(b"123456789") == 0xE3069283
    assert _C._crc32c(bytes(32)) == 0x8A9136AA
    assert _C._crc32c(b"\xff" * 32) == 0x62A8AB43
    rng = random.Random(1)
    data = bytes(rng.randrange(256) for _ in range(300))
    for lo in range(0, 9):
        for hi in (lo, lo + 1, lo + 7, lo + 8, lo + 63, 300):
            ref = magfile.crc32c(data[lo:hi])
            assert _C._crc32c(data[lo:hi]) == ref
            assert _C._crc32c(data[lo:hi], portable=True) == ref
    assert _C._crc32c(data[100:], _C._crc32c(data[:100])) == magfile.crc32c(data)  # incremental
    assert _C._crc32c_impl() in ("sse4.2", "armv8-crc", "table")


# ---- large files ----
def test_offsets_beyond_4_gib(tmp_path: Path) -> None:
    """A sparse file whose second tensor starts 5 GiB into the data section."""
    far = 5 << 30
    near = struct.pack("<4f", 1, 2, 3, 4)
    data = struct.pack("<4f", 5, 6, 7, 8)
    tensors = [
        magfile.Tensor("near", 0, [4], near, offset=0),
        magfile.Tensor("far", 0, [2, 2], b"", offset=far, nbytes=16, crc=magfile.crc32c(data)),
    ]
    built = magfile.build([], tensors, data_size=far + 16, sparse=True)
    path = tmp_path / "sparse.mag"
    with open(path, "wb") as f:
        f.write(built.blob)
        f.seek(built.data_offset + far)
        f.write(data)
    assert path.stat().st_size == built.data_offset + far + 16
    snap = mag.load(path, verify=True)
    assert snap["far"].tolist() == [[5.0, 6.0], [7.0, 8.0]]
    assert snap.info("far")["offset"] == built.data_offset + far
    assert snap["far"].data_ptr - snap._file.memory()[0] == built.data_offset + far
    assert snap["near"].tolist() == [1.0, 2.0, 3.0, 4.0]
