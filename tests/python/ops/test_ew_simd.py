"""The vectorised paths of the elementwise kernels and softmax: float32 math accuracy in ulps
against float64 references, 16-bit rows converted in chunks or (bfloat16 + - * /) in registers
(lengths around the chunk, vector and line sizes, broadcast operands), float32 -> 16-bit
rounding bit for bit, and softmax lanes longer than its buffer, strided, and side by side."""

from __future__ import annotations

import math

import magnetron as mag
import numpy as np
import pytest
import torch
from ew_helpers import TORCH_DTYPES, assert_same, from_torch, to_torch

F = torch.nn.functional


def _gelu(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * torch.erfc(-x / math.sqrt(2))  # torch's float64 gelu cancels in 1 + erf for x < -5


def _gelu_approx(x: torch.Tensor) -> torch.Tensor:
    u = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
    return x * torch.sigmoid(2 * u)  # = 0.5 x (1 + tanh u), without its cancellation


# op -> (float64 reference, input range, max error in float32 ulps of the correctly rounded result)
ACCURACY = {
    "exp": (torch.exp, (-103.0, 88.7), 2),
    "exp2": (torch.exp2, (-149.0, 127.9), 2),
    "expm1": (torch.expm1, (-20.0, 88.0), 3),
    "log": (torch.log, (1e-30, 1e30), 2),
    "log2": (torch.log2, (1e-30, 1e30), 3),
    "log10": (torch.log10, (1e-30, 1e30), 3),
    "log1p": (torch.log1p, (-0.999, 1e6), 3),
    "tanh": (torch.tanh, (-10.0, 10.0), 3),
    "sigmoid": (torch.sigmoid, (-80.0, 30.0), 3),
    "silu": (F.silu, (-80.0, 30.0), 3),
    "erf": (torch.erf, (-5.0, 5.0), 3),
    "erfc": (torch.erfc, (-5.0, 10.0), 6),
    "gelu": (_gelu, (-12.0, 8.0), 8),
    # u = sqrt(2/pi) (x + 0.044715 x^3) carries ~3 roundings into exp(-2u): ~|2u| ulps, 20 at x = -3.5
    "gelu_approx": (_gelu_approx, (-3.5, 8.0), 24),
}


def _ulp_error(actual: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|actual - exact| in units of the float32 spacing at the correctly rounded result."""
    with np.errstate(over="ignore"):
        spacing = np.spacing(np.abs(exact.astype(np.float32))).astype(np.float64)
    return np.abs(actual.astype(np.float64) - exact) / np.maximum(spacing, np.finfo(np.float32).smallest_subnormal)


@pytest.mark.parametrize("op", list(ACCURACY))
def test_float32_accuracy_in_ulps(op: str) -> None:
    ref, (lo, hi), max_ulps = ACCURACY[op]
    gen = torch.Generator().manual_seed(5)
    if lo > 0:  # log family: spread over the exponents
        x = torch.exp(torch.rand(200_000, generator=gen, dtype=torch.float64) * math.log(hi / lo) + math.log(lo))
    else:
        x = torch.rand(200_000, generator=gen, dtype=torch.float64) * (hi - lo) + lo
    x = torch.cat([x, torch.linspace(-1, 1, 20_001, dtype=torch.float64).clamp(lo, hi)]).float()
    got = to_torch(getattr(from_torch(x), op)()).numpy()
    exact = ref(x.double()).numpy()
    err = _ulp_error(got, exact)
    worst = int(np.argmax(err))
    what = f"{op}({x[worst].item()!r}) = {got[worst]!r}, exact {exact[worst]!r}: {err[worst]:.2f} ulp"
    assert err[worst] <= max_ulps, what


SPECIAL_BITS = [0x00000001, 0x00000100, 0x007FFFFF, 0x00800000, 0x80000001, 0x807FFFFF, 0x7F7FFFFF, 0xFF7FFFFF]
EDGES = [88.72283, 88.7229, 89.0, -87.33, -87.34, -103.97, -103.98, -104.0, -150.0, 128.0, 129.0, 9.5, 10.06, 30.0]
# products of a subnormal intermediate (x * sigmoid(x) for x near -100) keep few of its bits
COMPOSED = {"sigmoid", "silu", "gelu", "gelu_approx"}


@pytest.mark.parametrize("op", list(ACCURACY))
def test_float32_edges_match_float64_rounded(op: str) -> None:
    """Subnormals, the largest floats and the over/underflow thresholds."""
    ref = ACCURACY[op][0]
    x = torch.tensor(SPECIAL_BITS, dtype=torch.int64).to(torch.int32).view(torch.float32)
    x = torch.cat([x, torch.tensor(EDGES + [-v for v in EDGES])])
    got = to_torch(getattr(from_torch(x), op)()).numpy()
    with np.errstate(over="ignore"):
        rounded = ref(x.double()).numpy().astype(np.float32)
    exact = ref(x.double()).numpy()
    inf = np.isinf(rounded)
    assert np.array_equal(np.isnan(got), np.isnan(rounded)), op
    assert np.array_equal(got[inf], rounded[inf]), op
    check = np.isfinite(rounded)
    if op in COMPOSED:
        check &= np.abs(rounded) >= np.finfo(np.float32).tiny
    err = _ulp_error(got[check], exact[check])
    tol = 40 if op == "gelu_approx" else ACCURACY[op][2] + 1  # |2u| ~ 31 at x = -9.5
    assert (err <= tol).all(), (op, x.numpy()[check][err > tol], err.max())


HALF = [mag.float16, mag.bfloat16]
LENGTHS = [1, 7, 8, 9, 15, 16, 17, 255, 256, 257, 1000]


@pytest.mark.parametrize("dt", HALF, ids=str)
def test_half_rows_around_chunk_sizes(dt: mag.dtype.DType) -> None:
    gen = torch.Generator().manual_seed(1)
    for n in LENGTHS:
        a = (torch.rand(n, generator=gen) * 6 - 3).to(TORCH_DTYPES[dt])
        b = (torch.rand(n, generator=gen) * 6 - 3).to(TORCH_DTYPES[dt])
        ma, mb = from_torch(a), from_torch(b)
        what = f"{dt} n={n}"
        assert_same(ma.exp(), torch.exp(a), f"exp {what}")
        assert_same(ma.silu(), F.silu(a), f"silu {what}")
        assert_same(ma + mb, a + b, f"add {what}")
        assert_same(ma / mb, a / b, f"div {what}")
        assert_same(ma * mb[:1], a * b[:1], f"mul by broadcast element {what}")
        assert_same(mb[:1] - ma, b[:1] - a, f"sub from broadcast element {what}")
        assert_same(ma < mb, a < b, f"lt {what}")
        assert_same(ma.maximum(mag.Tensor(0.5).cast(dt)), a.maximum(torch.tensor(0.5, dtype=a.dtype)), f"max {what}")
        c = ma.clone()
        c.mul_(mb)
        assert_same(c, a * b, f"mul_ {what}")


@pytest.mark.parametrize("dt", HALF, ids=str)
def test_half_row_broadcast_against_matrix(dt: mag.dtype.DType) -> None:
    gen = torch.Generator().manual_seed(2)
    a = torch.randn(37, 300, generator=gen).to(TORCH_DTYPES[dt])
    b = torch.randn(300, generator=gen).to(TORCH_DTYPES[dt])
    col = torch.randn(37, 1, generator=gen).to(TORCH_DTYPES[dt])
    assert_same(from_torch(a) + from_torch(b), a + b, f"{dt} rows + vector")
    assert_same(from_torch(a) / from_torch(col), a / col, f"{dt} rows / column")
    assert_same(from_torch(a).T.tanh(), a.T.tanh(), f"{dt} transposed tanh")


@pytest.mark.parametrize("dt", HALF, ids=str)
def test_float32_to_half_rounding_bit_for_bit(dt: mag.dtype.DType) -> None:
    """Round to nearest even at every exponent (normal, subnormal, overflow), NaN sign and payload kept quiet."""
    gen = torch.Generator().manual_seed(3)
    bits = torch.randint(-(2**31), 2**31, (400_000,), generator=gen, dtype=torch.int64)
    low = torch.tensor([0x0FFF, 0x1000, 0x1001, 0x2FFF, 0x7FFF, 0x8000, 0x8001, 0x17FFF], dtype=torch.int64)
    # every exponent, near the halfway points
    ties = (torch.arange(-256, 256, dtype=torch.int64) << 23).unsqueeze(1) + low
    bits = torch.cat([bits, ties.flatten()]).to(torch.int32)
    x = bits.view(torch.float32)
    x = x[~torch.isnan(x)]
    got = to_torch(from_torch(x).cast(dt)).view(torch.int16)
    expected = x.to(TORCH_DTYPES[dt]).view(torch.int16)
    assert torch.equal(got, expected)
    nan = torch.tensor([0x7FC00001, 0xFF812345, 0x7F800001], dtype=torch.int64).to(torch.int32).view(torch.float32)
    got_nan = to_torch(from_torch(nan).cast(dt)).view(torch.int16).tolist()
    quiet = [0x7E00, 0xFE09, 0x7E00] if dt == mag.float16 else [0x7FC0, 0xFFC1, 0x7FC0]
    assert [v & 0xFFFF for v in got_nan] == quiet


# ---- softmax paths ----
SOFTMAX_DTYPES = [mag.float32, mag.float16, mag.bfloat16, mag.float64]


@pytest.mark.parametrize("dt", SOFTMAX_DTYPES, ids=str)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_long_and_strided_lanes(op: str, dt: mag.dtype.DType) -> None:
    gen = torch.Generator().manual_seed(4)
    t = (torch.randn(3, 9000, generator=gen) * 4).to(TORCH_DTYPES[dt])
    x = from_torch(t)
    # float32 against a float64 reference: torch's own float32 is ~1e-5 off on such lanes
    fn = getattr(torch, op)
    ref = (lambda v, d: fn(v.double(), d).float()) if dt == mag.float32 else fn  # noqa: E731
    # atol: log_softmax near 0 is log(sum) - (x - m), which cancels
    tol = {mag.float32: (3e-6, 5e-7), mag.float64: (1e-12, 1e-15)}.get(dt)
    assert_same(getattr(x, op)(1), ref(t, 1), f"{op} {dt} long lanes", tol=tol)
    assert_same(getattr(x.T, op)(0), ref(t.T, 0), f"{op} {dt} long strided lanes", tol=tol)
    assert_same(getattr(x, op)(0), ref(t, 0), f"{op} {dt} 9000 lanes side by side", tol=tol)
    cols = t[:, ::3]  # lanes with gaps: one at a time
    assert_same(getattr(from_torch(t)[:, ::3], op)(0), ref(cols, 0), f"{op} {dt} stepped lanes", tol=tol)
    wide = (torch.randn(70, 131, generator=gen)).to(TORCH_DTYPES[dt])  # 131 lanes: 64 + 64 + 3 side by side
    assert_same(getattr(from_torch(wide), op)(0), ref(wide, 0), f"{op} {dt} dim 0, ragged block", tol=tol)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_nan_and_inf_in_long_lanes(op: str) -> None:
    t = torch.randn(4, 9000)
    t[0, 8999] = math.nan
    t[1, 0] = math.inf
    t[2, :] = -math.inf
    t[3, 4000:] = -math.inf
    for dt in (torch.float32, torch.bfloat16):
        td = t.to(dt)
        for dim in (1, 0):
            assert_same(getattr(from_torch(td), op)(dim), getattr(torch, op)(td, dim), f"{op} {dt} dim {dim}")


# Rows of at least 8 MiB of output stream their stores past the caches (kernels/stream.h).
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int8])
@pytest.mark.parametrize("offset", [0, 3])
def test_large_rows_streamed(dtype: torch.dtype, offset: int) -> None:
    n = (16 << 20) // torch.empty((), dtype=dtype).element_size() + 1001  # 8 MiB a thread at 2 threads
    g = torch.Generator().manual_seed(7)
    a = torch.randint(-50, 50, (n + offset,), generator=g).to(dtype)
    b = torch.randint(-50, 50, (n,), generator=g).to(dtype)
    ma, mb = from_torch(a)[offset:], from_torch(b)  # the first operand and its results unaligned
    a = a[offset:]
    what = f"{dtype} rows of {n} elements at offset {offset}"
    assert_same(ma + mb, a + b, what)
    assert_same(ma < mb, a < b, what)  # boolean output
    if dtype.is_floating_point:
        assert_same(ma.abs(), a.abs(), what)
    mo = from_torch(torch.zeros(n + offset, dtype=dtype))[offset:]
    mag._C._op(mag.nn.functional._OP_ID["mul"], [ma, mb], [], mo)
    assert_same(mo, a * b, what)
