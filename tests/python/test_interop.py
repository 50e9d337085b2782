"""NumPy, the buffer protocol and DLPack: zero copy both ways, layouts, read-only memory, lifetimes."""

from __future__ import annotations

import ctypes
import gc
import weakref

import magnetron as mag
import numpy as np
import pytest
import torch
from mag_testing import ALL_DTYPES, DTYPES, TORCH_TO_MAG, arange_pair, shares_storage, to_numpy

T = mag.Tensor
NUMPY_DTYPES = [d for d in ALL_DTYPES if DTYPES[d][1] is not None]


def _addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


# ---- NumPy out: numpy(), __array__, the buffer protocol ----
@pytest.mark.parametrize("d", NUMPY_DTYPES, ids=[d.name for d in NUMPY_DTYPES])
def test_numpy_is_zero_copy_for_every_dtype(d: mag.dtype.DType) -> None:
    x = T.arange(6, dtype=mag.float32).view(2, 3).cast(d)
    a = x.numpy()
    assert a.dtype == DTYPES[d][1] and a.shape == (2, 3)
    assert _addr(a) == x.data_ptr
    assert a.tolist() == x.tolist()
    a[1, 2] = 1  # a write through NumPy shows in magnetron ...
    assert x[1, 2].item() == 1
    x[0, 0] = 0  # ... and the other way round
    assert a[0, 0] == 0


def test_numpy_keeps_strides_and_shares_memory() -> None:
    x, n = arange_pair(3, 4)
    cases = [(x.T, n.T), (x.view_slice(1, 3, 2, -2), n[:, 3::-2]), (x[::-1, 1], n[::-1, 1]),
             (x[1:, None, ::2], n[1:, None, ::2]),
             (x.view_slice(0, 0, 1, 1).expand(5, 4), np.broadcast_to(n[:1], (5, 4)))]
    for v, w in cases:
        a = v.numpy()
        np.testing.assert_array_equal(a, w)
        long_a = [s for s, n in zip(a.strides, a.shape, strict=True) if n > 1]
        assert long_a == [s for s, n in zip(w.strides, w.shape, strict=True) if n > 1]
        assert np.shares_memory(a, x.numpy())
    x.T.numpy()[2, 1] = -1.0
    assert x[1, 2].item() == -1.0


def test_numpy_of_rank0_and_zero_size() -> None:
    s = T(2.5)
    a = s.numpy()
    assert a.shape == () and a.dtype == np.float32 and float(a) == 2.5
    a[()] = 4.0
    assert s.item() == 4.0
    for shape in [(0,), (0, 3), (2, 0, 4)]:
        z = T.zeros(*shape, dtype=mag.int16)
        assert z.numpy().shape == shape and z.numpy().dtype == np.int16
    assert np.asarray(T.zeros(3, 0).T).shape == (0, 3)


def test_numpy_of_bfloat16_is_refused() -> None:
    b = T([1.0, 2.0], dtype=mag.bfloat16)
    with pytest.raises(TypeError, match="bfloat16"):
        b.numpy()
    with pytest.raises(TypeError, match="bfloat16"):
        np.asarray(b)
    np.testing.assert_array_equal(np.asarray(b, dtype=np.float32), [1.0, 2.0])  # a converting copy is fine


def test_array_protocol_copy_semantics() -> None:
    x = T([[1.0, 2.0], [3.0, 4.0]])
    assert _addr(x.__array__()) == x.data_ptr
    assert _addr(x.__array__(copy=False)) == x.data_ptr
    assert _addr(x.T.__array__(copy=False)) == x.data_ptr  # strided views need no copy either
    c = x.__array__(copy=True)
    assert _addr(c) != x.data_ptr and c.tolist() == x.tolist()
    f64 = x.__array__(np.float64)
    assert f64.dtype == np.float64 and f64.tolist() == x.tolist()
    with pytest.raises(ValueError, match="copy=False"):
        x.__array__(np.float64, copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        T([1.0], dtype=mag.bfloat16).__array__(np.float32, copy=False)
    assert _addr(np.asarray(x)) == x.data_ptr
    assert _addr(np.array(x, copy=None)) == x.data_ptr
    assert _addr(np.array(x)) != x.data_ptr
    assert np.asarray(x, dtype=np.int32).tolist() == [[1, 2], [3, 4]]


def test_buffer_protocol() -> None:
    x = T([[1, 2, 3], [4, 5, 6]], dtype=mag.int32)
    m = memoryview(x)
    assert m.format == "i" and m.itemsize == 4 and m.shape == (2, 3) and m.strides == (12, 4)
    assert m.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert not m.readonly and m.c_contiguous
    mt = memoryview(x.T)
    assert mt.strides == (4, 12) and not mt.c_contiguous
    assert mt.tolist() == [[1, 4], [2, 5], [3, 6]]
    for d, fmt in [(mag.float32, "f"), (mag.float16, "e"), (mag.float64, "d"), (mag.boolean, "?"), (mag.int8, "b"),
                   (mag.uint8, "B"), (mag.int16, "h"), (mag.uint16, "H"), (mag.uint32, "I"), (mag.int64, "q"),
                   (mag.uint64, "Q")]:
        assert memoryview(T.zeros(2, dtype=d)).format == fmt
    assert memoryview(T(7, dtype=mag.int64)).shape == ()
    with pytest.raises(BufferError, match="bfloat16"):
        memoryview(T.zeros(2, dtype=mag.bfloat16))
    f = T.arange(6, dtype=mag.float32).view(2, 3)
    assert np.frombuffer(f, dtype=np.float32).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # a flat block
    assert bytes(f.T) == np.arange(6, dtype=np.float32).reshape(2, 3).T.tobytes()  # logical order
    with pytest.raises(BufferError):
        np.frombuffer(f.T, dtype=np.float32)  # no strides taken: a transposed tensor is refused, not misread
    with pytest.raises(TypeError, match="C contiguous"):
        (ctypes.c_float * 6).from_buffer(f.T)
    y = T.zeros(4, dtype=mag.float64)
    (ctypes.c_double * 4).from_buffer(y)[1] = 3.0  # a writable buffer consumer writes straight into the tensor
    assert y.tolist() == [0.0, 3.0, 0.0, 0.0]
    mv = memoryview(x)
    del x
    gc.collect()
    assert mv.tolist() == [[1, 2, 3], [4, 5, 6]]  # the view keeps the tensor alive


# ---- NumPy in: Tensor(array) copies, from_dlpack shares ----
@pytest.mark.parametrize("d", NUMPY_DTYPES, ids=[d.name for d in NUMPY_DTYPES])
def test_tensor_from_numpy_copies_every_dtype(d: mag.dtype.DType) -> None:
    a = (np.arange(6) % 2 if d is mag.boolean else np.arange(6)).astype(DTYPES[d][1]).reshape(3, 2)
    x = T(a)
    assert x.dtype is d and x.shape == (3, 2) and x.tolist() == a.tolist()
    a[0, 0] = 1
    assert x[0, 0].item() == 0  # Tensor(data) copies (API.md section 2)
    y = T.from_dlpack(a)
    assert y.dtype is d and y.data_ptr == _addr(a)
    a[2, 1] = 0
    assert y[2, 1].item() == 0


def test_tensor_from_numpy_layouts() -> None:
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for v in [a.T, a[:, ::-1], a[..., ::-2], a[:, 1], np.broadcast_to(a[:1], (3, 3, 4)), a[:, :0], a[1:2, 2, 3]]:
        x = T(v)
        assert x.shape == v.shape and x.tolist() == v.tolist()
        assert not shares_storage(x, T.from_dlpack(a))
        y = T.from_dlpack(v)
        assert y.shape == v.shape and y.tolist() == v.tolist()
        if v.size:
            assert y.data_ptr == _addr(v)  # zero copy whatever the strides
    assert T(np.float32(2.5)).dtype is mag.float32 and T(np.int64(3)).item() == 3
    assert T(np.array(2.5)).dtype is mag.float64
    assert T(np.arange(6.0).reshape(2, 3), dtype=mag.bfloat16).tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_writes_through_dlpack_views_both_ways() -> None:
    a = np.zeros((3, 4), dtype=np.float32)
    x = T.from_dlpack(a.T)
    x[1, 2] = 5.0
    assert a[2, 1] == 5.0
    a[0, 3] = 7.0
    assert x[3, 0].item() == 7.0
    y = T.zeros(2, 3)
    b = np.from_dlpack(y)
    b[1] = [1, 2, 3]
    assert y.tolist() == [[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]]
    y.fill_(9.0)
    assert b.sum() == 54.0


def test_read_only_memory() -> None:
    ro = np.arange(4.0)
    ro.flags.writeable = False
    x = T.from_dlpack(ro)
    assert x.is_read_only
    with pytest.raises(RuntimeError, match="read-only"):
        x.fill_(0.0)
    with pytest.raises(RuntimeError, match="read-only"):
        x[0] = 1.0
    with pytest.raises(RuntimeError, match="read-only"):
        x.view(2, 2)[1] = T([1.0, 2.0])
    assert ro.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert not x.clone().is_read_only
    assert not T(ro).is_read_only  # Tensor() copies
    out = np.from_dlpack(x)
    assert not out.flags.writeable and _addr(out) == _addr(ro)
    assert not x.numpy().flags.writeable
    with pytest.raises(BufferError, match="read-only"):
        x.__dlpack__()  # a legacy capsule cannot carry the flag
    assert memoryview(x).readonly
    with pytest.raises(TypeError, match="read-only"):
        memoryview(x).cast("B")[0] = 1
    with pytest.raises(TypeError, match="not writable"):
        (ctypes.c_double * 4).from_buffer(x)


# ---- DLPack with PyTorch ----
TORCH_DTYPES = [d for d in ALL_DTYPES]


@pytest.mark.parametrize("d", TORCH_DTYPES, ids=[d.name for d in TORCH_DTYPES])
def test_dlpack_round_trip_with_torch(d: mag.dtype.DType) -> None:
    x = T.arange(6, dtype=mag.float32).view(2, 3).cast(d)
    t = torch.from_dlpack(x)
    assert t.dtype == DTYPES[d][0] and tuple(t.shape) == (2, 3) and t.data_ptr() == x.data_ptr
    back = T.from_dlpack(t)
    assert back.dtype is d and back.data_ptr == x.data_ptr
    assert back.tolist() == x.tolist()
    src = torch.arange(6).reshape(3, 2).to(DTYPES[d][0])
    m = T.from_dlpack(src)
    assert m.dtype is TORCH_TO_MAG[src.dtype] and m.data_ptr == src.data_ptr()
    want = src.view(torch.int64).tolist() if src.dtype == torch.uint64 else src.tolist()
    assert m.tolist() == want


def test_bfloat16_round_trips_with_torch_bit_exactly() -> None:
    bits = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16)
    tb = bits.view(torch.bfloat16)
    m = T.from_dlpack(tb)
    assert m.dtype is mag.bfloat16 and m.data_ptr == tb.data_ptr()
    assert torch.equal(torch.from_dlpack(m).view(torch.int16), bits)
    c = m.clone()  # our own memory, handed to torch
    assert torch.equal(torch.from_dlpack(c).view(torch.int16), bits)
    tb2 = torch.tensor([1.5, -2.25, 3e38], dtype=torch.bfloat16)
    assert T(tb2).tolist() == tb2.tolist()  # Tensor(torch_tensor) copies through DLPack


def test_dlpack_layouts_with_torch() -> None:
    t = torch.arange(24.0).view(2, 3, 4)
    for v in [t.transpose(0, 2), t[:, 1], t[..., ::2], t[:, :1].expand(2, 5, 4), t[:, :0], t[1, 2, 3]]:
        m = T.from_dlpack(v)
        assert m.shape == tuple(v.shape) and m.strides == v.stride() and m.tolist() == v.tolist()
    x, _ = arange_pair(2, 3, 4)
    for v in [x.transpose(0, 2), x[:, 1], x.view_slice(2, 0, 2, 2), x[:, :1].expand(2, 5, 4), x[1, 2, 3]]:
        tv = torch.from_dlpack(v)
        assert tuple(tv.shape) == v.shape and tv.stride() == v.strides and tv.data_ptr() == v.data_ptr
        assert tv.tolist() == v.tolist()
    neg = x.view_slice(1, 2, 3, -1)  # torch has no negative strides: the export copies
    tn = torch.from_dlpack(neg)
    assert tn.tolist() == neg.tolist() and tn.data_ptr() != neg.data_ptr
    with pytest.raises(BufferError, match="copy=False"):
        neg.__dlpack__(copy=False)
    assert np.from_dlpack(neg).tolist() == neg.tolist()


def test_dlpack_protocol_arguments() -> None:
    x = T([1.0, 2.0])
    assert x.__dlpack_device__() == (1, 0)
    cap = x.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=False)
    assert "dltensor_versioned" in repr(cap)
    assert "dltensor" in repr(x.__dlpack__())
    c = T.from_dlpack(_Capsule(x.__dlpack__(copy=True)))
    assert c.tolist() == [1.0, 2.0] and c.data_ptr != x.data_ptr
    with pytest.raises(BufferError, match="CPU"):
        x.__dlpack__(dl_device=(2, 0))


class _Capsule:
    """A minimal producer: hands out a prepared capsule once."""

    def __init__(self, cap: object) -> None:
        self.cap = cap

    def __dlpack__(self, **kwargs: object) -> object:
        return self.cap

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


def test_from_dlpack_keeps_the_producer_alive() -> None:
    a = np.arange(1000, dtype=np.float64)
    ref = weakref.ref(a)
    x = T.from_dlpack(a)
    del a
    gc.collect()
    assert ref() is not None
    assert x[999].item() == 999.0
    v = x[10:20]  # views keep it alive too
    del x
    gc.collect()
    assert ref() is not None and v.tolist() == list(map(float, range(10, 20)))
    del v
    gc.collect()
    assert ref() is None  # and the last view lets it go

    t = torch.arange(5.0)
    tref = weakref.ref(t)
    m = T.from_dlpack(t)
    del t
    gc.collect()
    assert m.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    del m
    gc.collect()
    assert tref() is None


def test_exported_tensors_outlive_magnetron_handles() -> None:
    x = T.arange(5, dtype=mag.int64)
    t, a = torch.from_dlpack(x), np.from_dlpack(x)
    del x
    gc.collect()
    assert t.tolist() == [0, 1, 2, 3, 4] and a.tolist() == [0, 1, 2, 3, 4]


def test_tensor_of_tensor_shares_storage() -> None:
    x = T([1.0, 2.0])
    y = T(x)
    assert shares_storage(x, y)
    y[0] = 5.0
    assert x[0].item() == 5.0
    z = T(x, dtype=mag.int32)
    assert not shares_storage(x, z) and z.tolist() == [5, 2]


def test_unsupported_sources() -> None:
    for bad, kind in [(np.array([1, 2], dtype=">i4"), TypeError), (np.array([1 + 2j]), TypeError),
                      (np.zeros(2, dtype=[("a", "i4")]), TypeError), (object(), TypeError), ("abc", TypeError)]:
        with pytest.raises(kind, match="Tensor"):
            T(bad)
    with pytest.raises(TypeError, match="from_dlpack"):
        T.from_dlpack([1, 2])
    assert T(b"ab").tolist() == [97, 98] and T(b"ab").dtype is mag.uint8  # bytes are a uint8 buffer
    assert to_numpy(T(bytearray(b"\x01\x02"))).tolist() == [1, 2]


# ---- properties and conversions to Python (API.md section 3) ----
def test_properties() -> None:
    x = T.zeros(2, 3, 4, dtype=mag.float16)
    assert x.shape == (2, 3, 4) and isinstance(x.shape, tuple)
    assert x.strides == (12, 4, 1) and x.T.strides == (1, 4, 12)
    assert x.rank == x.ndim == x.dim() == 3
    assert x.numel == 24 and isinstance(x.numel, int)
    assert x.data_size == 48
    assert x.dtype is mag.float16 and x.device == "cpu"
    assert isinstance(x.data_ptr, int) and x[1].data_ptr == x.data_ptr + 24
    assert x.is_contiguous and not x.T.is_contiguous
    assert x.size() == (2, 3, 4) and x.size(-1) == 4 and x.size(dim=0) == 2
    assert len(x) == 2 and [t.shape for t in x] == [(3, 4), (3, 4)]
    assert x.grad is None and not x.requires_grad
    assert T(1.0).shape == () and T(1.0).strides == () and T(1.0).numel == 1
    assert T.zeros(0, 5).numel == 0 and T.zeros(0, 5).data_size == 0


def test_detach_clone_to_transfer() -> None:
    x = T([1.0, 2.0], requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and shares_storage(d, x)
    c = x.clone()
    assert not shares_storage(c, x) and c.tolist() == x.tolist()
    assert x.to(mag.float64).dtype is mag.float64
    assert x.to("cpu") is x and x.transfer("cpu") is x
    with pytest.raises(RuntimeError, match="cuda"):
        x.transfer("cuda")
    with pytest.raises(RuntimeError, match="cuda:1"):
        x.to("cuda:1")
    with pytest.raises(ValueError, match="tpu"):
        x.transfer("tpu")


def test_python_scalar_conversions() -> None:
    assert T(2.5).item() == 2.5 and isinstance(T(2.5).item(), float)
    assert T([[7]]).item() == 7 and isinstance(T(7).item(), int)
    assert T(True).item() is True
    assert T(2**64 - 1, dtype=mag.uint64).item() == 2**64 - 1
    assert T(2.5, dtype=mag.bfloat16).item() == 2.5 and T(0.1, dtype=mag.float16).item() == np.float16(0.1)
    assert bool(T([1])) and not bool(T(0.0))
    assert float(T(3)) == 3.0 and int(T(-3.7)) == -3
    assert [10, 20, 30][T(2)] == 30 and [10, 20][T([1], dtype=mag.uint8)] == 20
    assert T([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert T.zeros(2, 0).tolist() == [[], []] and T(5).tolist() == 5
    assert T([1.0, 2.0]).T.tolist() == [1.0, 2.0]


# ---- a hand-made DLPack producer (ctypes): hostile layouts are refused and the deleter always runs ----
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManaged(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManaged))
_DLManaged._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]


class _HandMade:
    """A legacy DLPack producer over a ctypes buffer with any shape/strides (and a deleter we can watch)."""

    def __init__(self, shape: list[int], strides: list[int] | None, code: int = 2, bits: int = 32) -> None:
        self.buf = (ctypes.c_float * 8)(*range(8))
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.strides = (ctypes.c_int64 * len(shape))(*strides) if strides is not None else None
        self.deleted = 0

        def on_delete(_: object) -> None:
            self.deleted += 1

        self.deleter = _DELETER(on_delete)
        t = _DLTensor(ctypes.cast(self.buf, ctypes.c_void_p), _DLDevice(1, 0), len(shape), _DLDataType(code, bits, 1),
                      self.shape, self.strides, 0)
        self.managed = _DLManaged(t, None, self.deleter)

    def __dlpack__(self, **kwargs: object) -> object:
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.managed), b"dltensor", None)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


def test_hand_made_dlpack_producer() -> None:
    p = _HandMade([2, 4], None)
    x = T.from_dlpack(p)
    assert x.tolist() == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]] and x.data_ptr == ctypes.addressof(p.buf)
    del x
    gc.collect()
    assert p.deleted == 1
    q = _HandMade([4, 2], [1, 4])  # strided, column-major
    assert T.from_dlpack(q).tolist() == [[0.0, 4.0], [1.0, 5.0], [2.0, 6.0], [3.0, 7.0]]
    for shape, strides in [([2, 3], [2**62, 1]), ([2**40, 2**40], None), ([3], [-(2**63) + 1]), ([-2], [1])]:
        bad = _HandMade(shape, strides)
        with pytest.raises(ValueError, match="from_dlpack|negative"):
            T.from_dlpack(bad)
        gc.collect()
        assert bad.deleted == 1  # the consumer owns the capsule once it took it: it must release it
    odd = _HandMade([2], None, code=5, bits=64)  # complex: no magnetron dtype
    with pytest.raises(TypeError, match="from_dlpack"):
        T.from_dlpack(odd)
    assert odd.deleted == 1


def test_array_interface_and_array_protocol_sources() -> None:
    a = np.arange(6, dtype=np.int16).reshape(2, 3)

    class Interface:  # only __array_interface__
        __array_interface__ = a.__array_interface__

    class ArrayOnly:  # only __array__
        def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
            return a.T

    x = T(Interface())
    assert x.dtype is mag.int16 and x.tolist() == a.tolist() and x.data_ptr != _addr(a)
    y = T(ArrayOnly(), dtype=mag.float32)
    assert y.tolist() == a.T.astype(np.float32).tolist()
