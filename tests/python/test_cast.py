"""cast between every pair of dtypes against PyTorch; 16-bit float rounding; the out-of-range rules."""

from __future__ import annotations

import math

import magnetron as mag
import numpy as np
import pytest
import torch
from mag_testing import ALL_DTYPES, DTYPES, assert_like_numpy, shares_storage

T = mag.Tensor

FLOAT_VALUES = [
    math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.9999, -0.9999, 127.5, 128.0, 255.5,
    256.0, -128.5, -129.0, 32767.5, 32768.0, 65535.0, 65536.0, -32769.0, 65504.0, 65519.0, 65520.0, 1e5, 2.0**31,
    -(2.0**31), 2.0**31 + 1024, -(2.0**31) - 1024, 2.0**32, 2.0**32 + 4096, 3e9, -3e9, 3000000001.0, -3000000001.0,
    1e10, -1e10, 1e10 + 1, 2.0**53 + 2, 2.0**63, -(2.0**63), 2.0**63 + 4096, 2.0**64, -(2.0**64), 1e20, -1e20, 3.4e38,
    -3.4e38, 1e300, -1e300, 1e-40, -1e-40, 5.96e-8, 2.0**-24, 2.0**-25, 1e-8, 3.0000001, 1 / 3, 1 + 2.0**-11 + 2.0**-40,
]


def _int_values(d: mag.dtype.DType) -> list[int]:
    interesting = [0, 1, 2, -1, 127, 128, 255, 256, -128, -129, 32767, 32768, 65535, 65536, 2**24 + 1, 2**31 - 1, 2**31,
                   2**32 - 1, 2**32, 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1, d.min, d.max, d.min + 1, d.max - 1]
    return sorted({v for v in interesting if d.min <= v <= d.max})


def _source(d: mag.dtype.DType) -> tuple[mag.Tensor, torch.Tensor, list]:
    """The interesting values of dtype d, as a magnetron and a torch tensor, and as Python numbers."""
    tdt = DTYPES[d][0]
    if d.is_floating_point:
        t = torch.tensor(FLOAT_VALUES, dtype=torch.float64).to(tdt)
        values = t.tolist()  # exactly representable in d, so building from them is exact
    elif d is mag.boolean:
        values = [True, False, True]
        t = torch.tensor(values)
    else:
        values = _int_values(d)
        t = torch.from_numpy(np.array(values, dtype=DTYPES[d][1]))
    return T(values, dtype=d), t, values


def _torch_values(t: torch.Tensor) -> list:
    if t.dtype == torch.uint64:  # torch's tolist() reads uint64 as int64
        return [int(v) for v in t.view(torch.int64).numpy().view(np.uint64)]
    return t.tolist()


def _unsigned_rule(x: float, bits: int) -> int:
    """Our documented float -> uint32/uint64 rule (src/cpu/kernels/dtype_ops.h)."""
    half = 2.0 ** (bits - 1)

    def signed(v: float) -> int:
        return int(v) if -half <= v < half else -(2 ** (bits - 1))  # NaN and out of range: INT_MIN

    r = signed(x - half) + 2 ** (bits - 1) if x >= half else signed(x)
    return r % 2**bits


def _same(a: object, b: object) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("src", ALL_DTYPES, ids=[d.name for d in ALL_DTYPES])
def test_cast_every_pair_matches_torch(src: mag.dtype.DType) -> None:
    m, t, values = _source(src)
    assert _same_lists(m.tolist(), values)
    for dst in ALL_DTYPES:
        got = m.cast(dst)
        assert got.dtype is dst and got.shape == m.shape
        want = _torch_values(t.to(DTYPES[dst][0]))
        for v, g, w in zip(values, got.tolist(), want, strict=True):
            if src.is_floating_point and dst in (mag.uint32, mag.uint64) and not (0 <= v < 2.0 ** (dst.size * 8)):
                # out of range: PyTorch differs between source types here (float16 goes through int64)
                w = _unsigned_rule(v, dst.size * 8)
            assert _same(g, w), (src, dst, v, g, w)
            assert type(g) is type(w) or dst.is_floating_point, (src, dst, g, w)


def _same_lists(a: list, b: list) -> bool:
    return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))


def test_out_of_range_unsigned_rule_agrees_with_numpy() -> None:
    x = np.array([v for v in FLOAT_VALUES if not math.isinf(v) or v < 0], dtype=np.float64)
    m = T(x)
    for dst, npdt in [(mag.uint32, np.uint32), (mag.uint64, np.uint64)]:
        with np.errstate(invalid="ignore"):
            want = x.astype(npdt).tolist()
        rule = [_unsigned_rule(v, dst.size * 8) for v in x.tolist()]
        assert m.cast(dst).tolist() == rule
        agree = sum(a == b for a, b in zip(rule, want, strict=True))
        assert agree == len(rule), [(v, a, b) for v, a, b in zip(x.tolist(), rule, want, strict=True) if a != b]


def test_float_to_int_truncates_toward_zero() -> None:
    x = T([-2.9, -2.5, -0.9, 0.9, 2.5, 2.9])
    for d in [mag.int8, mag.int16, mag.int32, mag.int64]:
        assert x.cast(d).tolist() == [-2, -2, 0, 0, 2, 2]
    assert T([2.9, 2.5, 0.9]).cast(mag.uint8).tolist() == [2, 2, 0]
    assert T([0.9, 255.9]).cast(mag.uint8).tolist() == [0, 255]


def test_cast_to_bool_and_back() -> None:
    x = T([0.0, -0.0, 0.1, -3.0, math.nan, math.inf])
    assert x.cast(mag.boolean).tolist() == [False, False, True, True, True, True]
    assert T([0, 5, -1, 256], dtype=mag.int64).cast(mag.boolean).tolist() == [False, True, True, True]
    for d in ALL_DTYPES:
        b = T([True, False]).cast(d)
        assert b.tolist() == ([True, False] if d is mag.boolean else [1, 0])


def test_cast_of_views_and_into_views() -> None:
    base = T.arange(24, dtype=mag.float32).view(4, 6)
    src = base.view_slice(0, 3, 4, -1).view_slice(1, 1, 3, 2).T  # negative and non-unit strides, transposed
    n = np.arange(24, dtype=np.float32).reshape(4, 6)[::-1, 1::2].T
    for d in [mag.int16, mag.float16, mag.bfloat16, mag.uint8, mag.float64]:
        c = src.cast(d)
        assert c.dtype is d and c.is_contiguous and not shares_storage(c, base)
        assert_like_numpy(c.cast(mag.float32), n, check_strides=False)
    dst = T.zeros(6, 4, dtype=mag.int32)
    dst.T.view_slice(1, 5, 3, -2).copy_(base.view_slice(1, 0, 3, 1))  # convert while writing a strided view
    want = np.zeros((6, 4), np.int32)
    want.T[:, 5::-2] = np.arange(24).reshape(4, 6)[:, :3]
    assert_like_numpy(dst, want)
    e = T.zeros(1, 3).expand(4, 3).cast(mag.int8)  # a broadcast source
    assert e.shape == (4, 3) and e.tolist() == [[0] * 3] * 4


def test_cast_api() -> None:
    x = T([1.5, 2.5])
    assert x.cast(mag.float32) is x  # no copy when the dtype matches (like torch's .to)
    assert x.cast("int32").dtype is mag.int32
    assert x.to(mag.float16).dtype is mag.float16
    assert x.to("cpu") is x
    assert T.zeros(0, 3).cast(mag.int8).shape == (0, 3)
    assert T(2.75).cast(mag.bfloat16).item() == 2.75
    with pytest.raises(TypeError, match="cast"):
        x.cast(torch.float32)


def test_large_cast_is_multithreaded_and_exact() -> None:
    n = 1 << 20
    x = T.arange(n, dtype=mag.int32)
    f = x.cast(mag.float32)
    np.testing.assert_array_equal(np.asarray(f), np.arange(n, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(f.cast(mag.int64)), np.arange(n))


# ---- 16-bit floats: round to nearest even, everywhere ----
def _f16_from_bits(bits: np.ndarray) -> mag.Tensor:
    return T(bits.view(np.float16))


def test_f16_every_bit_pattern_round_trips() -> None:
    bits = np.arange(1 << 16, dtype=np.uint16)
    h = bits.view(np.float16)
    m = _f16_from_bits(bits)
    f = m.cast(mag.float32)
    np.testing.assert_array_equal(np.asarray(f), h.astype(np.float32))  # widening is exact (NaN == NaN here)
    back = np.asarray(f.cast(mag.float16)).view(np.uint16)
    nan = np.isnan(h)
    np.testing.assert_array_equal(back[~nan], bits[~nan])
    assert np.all(np.isnan(back[nan].view(np.float16)))
    assert np.all((back[nan] & 0x8000) == (bits[nan] & 0x8000))  # NaN keeps its sign
    f64 = np.asarray(m.cast(mag.float64))
    np.testing.assert_array_equal(f64, h.astype(np.float64))


def _bf16_bits(t: mag.Tensor) -> np.ndarray:
    return torch.from_dlpack(t).view(torch.int16).numpy().view(np.uint16)


def test_bf16_every_bit_pattern_round_trips() -> None:
    bits = np.arange(1 << 16, dtype=np.uint32)
    f = (bits << 16).view(np.float32)
    b = T(f).cast(mag.bfloat16)  # exactly representable: no rounding
    back = _bf16_bits(b)
    nan = np.isnan(f)
    np.testing.assert_array_equal(back[~nan], bits[~nan].astype(np.uint16))
    assert np.all(np.isnan((back[nan].astype(np.uint32) << 16).view(np.float32)))
    np.testing.assert_array_equal(np.asarray(b.cast(mag.float32)), f)
    # bf16 -> f16 and f16 -> bf16 for every pattern, against torch
    tb = torch.from_numpy(bits.astype(np.uint16).view(np.int16)).view(torch.bfloat16)
    want = tb.to(torch.float16).view(torch.int16).numpy().view(np.uint16)
    got = np.asarray(b.cast(mag.float16)).view(np.uint16)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    h = _f16_from_bits(np.arange(1 << 16, dtype=np.uint16))
    th = torch.from_numpy(np.arange(1 << 16, dtype=np.uint16).view(np.float16))
    hnan = np.isnan(np.arange(1 << 16, dtype=np.uint16).view(np.float16))
    np.testing.assert_array_equal(_bf16_bits(h.cast(mag.bfloat16))[~hnan],
                                  th.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)[~hnan])


def test_random_f32_to_f16_and_bf16_match_torch() -> None:
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 1 << 32, 1 << 18, dtype=np.uint64).astype(np.uint32)
    # plus the rounding boundaries: every f16/bf16 midpoint and its neighbours
    mids = (np.arange(0x7C00, dtype=np.uint32) << 13) + 0x38000000 + 0x1000
    bits = np.concatenate([bits, mids - 1, mids, mids + 1, (np.arange(1 << 15, dtype=np.uint32) << 16) + 0x8000])
    bits = np.concatenate([bits, bits | 0x80000000])
    f = bits.view(np.float32)
    m = T(f)
    nan = np.isnan(f)
    tf = torch.from_numpy(f)
    got16 = np.asarray(m.cast(mag.float16)).view(np.uint16)
    want16 = tf.to(torch.float16).view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(got16[~nan], want16[~nan])
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got16[~nan], f[~nan].astype(np.float16).view(np.uint16))  # NumPy agrees
    assert np.all(np.isnan(got16[nan].view(np.float16)))
    gotb = _bf16_bits(m.cast(mag.bfloat16))
    wantb = tf.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(gotb[~nan], wantb[~nan])


def test_f64_to_16_bit_floats_round_like_torch() -> None:
    # torch rounds f64 -> f32 -> f16 (twice); we do the same, so results are bit-identical to PyTorch
    x = np.array([1 + 2.0**-11 + 2.0**-40, 1 + 2.0**-8 + 2.0**-40, 65519.99, 65520.0, 2.0**-25, 2.0**-25 + 2.0**-60,
                  1e-8, -1e-8, 3.3895313892515355e38, 3.3961e38, 1e39])
    rng = np.random.default_rng(2)
    x = np.concatenate([x, rng.standard_normal(1 << 14) * np.exp(rng.uniform(-25, 25, 1 << 14))])
    m = T(x)
    for md, td in [(mag.float16, torch.float16), (mag.bfloat16, torch.bfloat16)]:
        want = torch.from_numpy(x).to(td).view(torch.int16).numpy()
        np.testing.assert_array_equal(torch.from_dlpack(m.cast(md)).view(torch.int16).numpy(), want)


def test_f16_specials() -> None:
    x = T([65504.0, 65519.0, 65520.0, -65520.0, 2.0**-24, 2.0**-25, 2.0**-25 * 1.0001, 1e-8, -0.0, math.nan])
    assert x.cast(mag.float16).tolist()[:-1] == [65504.0, 65504.0, math.inf, -math.inf, 2.0**-24, 0.0, 2.0**-24, 0.0,
                                                 -0.0]
    assert math.copysign(1, x.cast(mag.float16).tolist()[8]) == -1
    assert math.isnan(x.cast(mag.float16).tolist()[-1])
    b = T([3.3895313892515355e38, 3.4e38, 1.00390625, 1.005859375]).cast(mag.bfloat16).tolist()
    assert b == [3.3895313892515355e38, math.inf, 1.0, 1.0078125]  # ties go to even


@pytest.mark.slow
def test_f32_to_f16_and_bf16_exhaustive() -> None:
    chunk = 1 << 24
    for start in range(0, 1 << 32, chunk):  # all 2^32 patterns
        f = np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32).view(np.float32)
        m, nan = T(f), np.isnan(f)
        with np.errstate(over="ignore"):
            want16 = f.astype(np.float16).view(np.uint16)
        np.testing.assert_array_equal(np.asarray(m.cast(mag.float16)).view(np.uint16)[~nan], want16[~nan])
        wantb = torch.from_numpy(f).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
        np.testing.assert_array_equal(_bf16_bits(m.cast(mag.bfloat16))[~nan], wantb[~nan])
