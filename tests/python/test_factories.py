"""Factories (API.md section 2) and the counter-based RNG: values, dtypes, shapes, statistics, reproducibility."""

from __future__ import annotations

import math
from collections.abc import Iterator

import magnetron as mag
import numpy as np
import pytest
import torch
from mag_testing import ALL_DTYPES, DTYPES, to_numpy

T = mag.Tensor
FLOATS = [mag.float32, mag.float16, mag.bfloat16, mag.float64]
INTS = [d for d in ALL_DTYPES if d.is_integer]

try:
    from scipy import stats
except ImportError:  # the moment / chi-square checks below stand in
    stats = None


@pytest.fixture
def seeded() -> Iterator[None]:
    mag.context.manual_seed(1234)
    yield


@pytest.mark.parametrize("d", ALL_DTYPES, ids=[d.name for d in ALL_DTYPES])
def test_constant_factories_every_dtype(d: mag.dtype.DType) -> None:
    one = True if d is mag.boolean else 1
    assert T.zeros(2, 3, dtype=d).tolist() == [[0 if d is not mag.boolean else False] * 3] * 2
    assert T.ones(2, 3, dtype=d).tolist() == [[one] * 3] * 2
    assert T.full(4, fill_value=one, dtype=d).tolist() == [one] * 4
    assert T.empty(3, 2, dtype=d).shape == (3, 2)
    for fn in (T.zeros, T.ones, T.empty):
        t = fn(2, 3, dtype=d)
        assert t.dtype is d and t.shape == (2, 3) and t.is_contiguous and not t.is_view
    s = T.scalar(one, dtype=d)
    assert s.shape == () and s.item() == one and s.dtype is d


def test_shapes_as_varargs_or_one_sequence() -> None:
    for fn in (T.empty, T.zeros, T.ones):
        assert fn(2, 3).shape == fn((2, 3)).shape == fn([2, 3]).shape == (2, 3)
        assert fn().shape == fn(()).shape == ()
        assert fn(0).shape == (0,) and fn(3, 0, 2).shape == (3, 0, 2)
        assert fn(np.int64(2), np.int32(3)).shape == (2, 3)
    assert T.full((2, 2), fill_value=1.5).shape == T.full(2, 2, fill_value=1.5).shape == (2, 2)
    assert T.uniform((3, 1)).shape == T.normal(3, 1).shape == T.bernoulli([3, 1]).shape == (3, 1)
    assert T.zeros(*([1] * 16)).shape == (1,) * 16


def test_default_dtypes() -> None:
    assert T.zeros(2).dtype is mag.float32
    assert T.full(2, fill_value=True).dtype is mag.float32  # API.md: every factory defaults to float32
    assert T.uniform(2).dtype is T.normal(2).dtype is mag.float32
    assert T.bernoulli(2).dtype is mag.boolean
    assert T.arange(3).dtype is mag.int64 and T.arange(3.0).dtype is mag.float32
    assert T.arange(0, 1, 0.5).dtype is mag.float32
    assert T.rand_perm(3).dtype is mag.int64
    assert T.scalar(2).dtype is mag.float32
    mag.context.set_default_dtype(mag.float64)
    try:
        assert T.zeros(2).dtype is mag.float64 and T.arange(0.5).dtype is mag.float64
    finally:
        mag.context.set_default_dtype(mag.float32)


def test_full_converts_the_value() -> None:
    assert T.full(2, fill_value=2.7, dtype=mag.int32).tolist() == [2, 2]
    assert T.full(2, fill_value=-1, dtype=mag.uint8).tolist() == [255, 255]
    assert T.full(1, fill_value=0.1, dtype=mag.bfloat16).item() == torch.tensor(0.1, dtype=torch.bfloat16).item()
    assert math.isnan(T.full(1, fill_value=math.nan).item())
    assert T.full(1, fill_value=2**64 - 1, dtype=mag.uint64).item() == 2**64 - 1
    assert T.full(1, fill_value=-(2**63), dtype=mag.int64).item() == -(2**63)
    assert T.full(2, fill_value=0.5, dtype=mag.boolean).tolist() == [True, True]


def test_like_forms() -> None:
    x = T.zeros(2, 3, dtype=mag.float16)
    for fn in (T.empty_like, T.zeros_like, T.ones_like, T.uniform_like, T.normal_like, T.bernoulli_like):
        y = fn(x)
        assert y.shape == (2, 3) and y.dtype is mag.float16 and y.data_ptr != x.data_ptr
    assert T.full_like(x, 7).tolist() == [[7.0] * 3] * 2
    assert T.full_like(x, fill_value=2, dtype=mag.int8).dtype is mag.int8
    assert T.zeros_like(x, dtype=mag.int64).tolist() == [[0] * 3] * 2
    assert T.ones_like(x.T).shape == (3, 2)
    assert T.ones_like(x, requires_grad=True).requires_grad
    assert T.uniform_like(x, low=2, high=3).tolist() != T.zeros_like(x).tolist()
    u = T.uniform_like(T.zeros(100, dtype=mag.int32), low=5, high=6)
    assert set(u.tolist()) <= {5, 6}
    assert T.bernoulli_like(x, p=1.0).tolist() == [[1.0] * 3] * 2
    assert T.normal_like(x, mean=3.0, std=0.0).tolist() == [[3.0] * 3] * 2
    assert T.empty_like(T(1.0)).shape == ()


def test_requires_grad_flag() -> None:
    for t in (T.empty(2, requires_grad=True), T.zeros(2, requires_grad=True), T.ones(2, requires_grad=True),
              T.full(2, fill_value=1, requires_grad=True), T.uniform(2, requires_grad=True),
              T.normal(2, requires_grad=True), T.arange(3.0, requires_grad=True), T.scalar(1.0, requires_grad=True),
              T([1.0], requires_grad=True)):
        assert t.requires_grad
    assert not T.zeros(2).requires_grad
    with pytest.raises(RuntimeError, match="floating-point"):
        T.zeros(2, dtype=mag.int32, requires_grad=True)
    with pytest.raises(RuntimeError, match="floating-point"):
        T.bernoulli(2, requires_grad=True)
    x = T.zeros(2)
    x.requires_grad = True
    assert x.requires_grad
    x.requires_grad = False
    assert not x.requires_grad


# ---- arange ----
@pytest.mark.parametrize(
    "args",
    [(5,), (2, 5), (5, 2), (0, 10, 3), (10, 0, -3), (-5, 5, 2), (0,), (3, 3), (0, 1, 0.1), (1, 2.2, 0.3), (0.5,),
     (-1.0, 1.0, 0.25), (1.0, 0.0, -0.1), (0, 5.5), (1e-3, 2e-3, 1e-4), (0, 100, 7.3), (2.5, -2.5, -0.5),
     (10**12, 10**12 + 5), (-(2**62), -(2**62) + 3)],
)
def test_arange_matches_numpy_length_and_torch_values(args: tuple) -> None:
    got = T.arange(*args)
    want_len = len(np.arange(*args))
    assert got.shape == (want_len,)
    tdt = torch.int64 if got.dtype is mag.int64 else torch.float32
    if want_len == 0 and args[0] != args[-1] and len(args) > 1:  # torch refuses a step pointing away from stop
        assert got.tolist() == []
        return
    want = torch.arange(*args, dtype=tdt)
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("d", [d for d in ALL_DTYPES if d is not mag.boolean], ids=lambda d: d.name)
def test_arange_every_numeric_dtype(d: mag.dtype.DType) -> None:
    got = T.arange(0, 10, 3, dtype=d)
    assert got.dtype is d and got.tolist() == [0, 3, 6, 9]
    if d.is_floating_point:
        want = torch.arange(0, 2, 0.25, dtype=DTYPES[d][0])
        assert T.arange(0, 2, 0.25, dtype=d).tolist() == want.tolist()
    else:
        assert T.arange(0.0, 5.0, 1.5, dtype=d).tolist() == torch.arange(0.0, 5.0, 1.5, dtype=torch.int64).tolist()


def test_arange_keywords_and_errors() -> None:
    assert T.arange(start=1, stop=4).tolist() == [1, 2, 3]
    assert T.arange(stop=3).tolist() == [0, 1, 2]
    assert T.arange(np.int64(3)).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="step"):
        T.arange(0, 5, 0)
    with pytest.raises(ValueError, match="finite"):
        T.arange(0, math.inf)
    with pytest.raises(TypeError, match="arange"):
        T.arange(True)
    with pytest.raises(TypeError, match="arange"):
        T.arange(0, 3, dtype=mag.boolean)
    with pytest.raises(MemoryError):
        T.arange(0, 2**62)


# ---- random factories ----
@pytest.mark.parametrize("d", FLOATS, ids=lambda d: d.name)
def test_uniform_float_range(seeded: None, d: mag.dtype.DType) -> None:
    for low, high in [(0, 1), (-2.5, 3.0), (0.99, 1.0), (5, 5)]:
        u = to_numpy(T.uniform(20000, low=low, high=high, dtype=d)).astype(np.float64)
        assert u.min() >= T.scalar(low, dtype=d).item()  # the bounds as the dtype rounds them
        assert u.max() < high or low == high
    u = to_numpy(T.uniform(100000, dtype=d)).astype(np.float64)
    assert abs(u.mean() - 0.5) < 0.01 and u.max() > 0.99 and u.min() < 0.01


@pytest.mark.parametrize("d", INTS, ids=lambda d: d.name)
def test_uniform_integers_are_inclusive(seeded: None, d: mag.dtype.DType) -> None:
    u = to_numpy(T.uniform(5000, low=3, high=7, dtype=d))
    assert set(u.tolist()) == {3, 4, 5, 6, 7}
    assert set(to_numpy(T.uniform(2000, dtype=d)).tolist()) == {0, 1}  # default [0, 1]
    full = to_numpy(T.uniform(4000, low=d.min, high=d.max, dtype=d))
    assert full.min() >= d.min and full.max() <= d.max
    if d.size == 1:
        assert len(set(full.tolist())) == 256  # every value reachable
    assert set(to_numpy(T.uniform(100, low=d.max, high=d.max, dtype=d)).tolist()) == {d.max}


def test_uniform_bad_bounds() -> None:
    with pytest.raises(ValueError, match="low"):
        T.uniform(3, low=2, high=1)
    with pytest.raises(ValueError, match="int8"):
        T.uniform(3, low=0, high=300, dtype=mag.int8)
    with pytest.raises(ValueError, match="uint16"):
        T.uniform(3, low=-1, high=3, dtype=mag.uint16)
    with pytest.raises(ValueError, match="finite"):
        T.uniform(3, low=0, high=math.inf)
    with pytest.raises(TypeError, match="uniform"):
        T.uniform(3, dtype=mag.boolean)


def test_normal(seeded: None) -> None:
    for d in FLOATS:
        z = to_numpy(T.normal(100000, mean=2.0, std=3.0, dtype=d)).astype(np.float64)
        assert abs(z.mean() - 2.0) < 0.05 and abs(z.std() - 3.0) < 0.05
        assert np.isfinite(z).all()
    assert T.normal(3, mean=1.5, std=0.0).tolist() == [1.5] * 3
    with pytest.raises(ValueError, match="std"):
        T.normal(3, std=-1.0)
    with pytest.raises(TypeError, match="normal"):
        T.normal(3, dtype=mag.int32)


def test_bernoulli(seeded: None) -> None:
    b = to_numpy(T.bernoulli(100000, p=0.3))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 0.01
    assert not to_numpy(T.bernoulli(1000, p=0.0)).any()
    assert to_numpy(T.bernoulli(1000, p=1.0)).all()
    assert set(T.bernoulli(100, dtype=mag.int32).tolist()) == {0, 1}
    assert set(T.bernoulli(100, dtype=mag.float16).tolist()) == {0.0, 1.0}
    for p in (-0.1, 1.5, math.nan):
        with pytest.raises(ValueError, match="bernoulli"):
            T.bernoulli(3, p=p)


def test_rand_perm(seeded: None) -> None:
    for n in (0, 1, 2, 10, 1000):
        p = T.rand_perm(n).tolist()
        assert sorted(p) == list(range(n))
    assert T.rand_perm(1000).tolist() != list(range(1000))
    for d in (mag.int32, mag.float32, mag.uint16, mag.float64):
        p = T.rand_perm(50, dtype=d)
        assert p.dtype is d and sorted(p.tolist()) == list(range(50))
    with pytest.raises(ValueError, match="rand_perm"):
        T.rand_perm(-1)
    with pytest.raises(TypeError, match="rand_perm"):
        T.rand_perm(2.5)


# ---- statistics ----
def _ks_uniform(x: np.ndarray) -> float:
    if stats is not None:
        return float(stats.kstest(x, "uniform").pvalue)
    x = np.sort(x)  # Kolmogorov-Smirnov statistic with the asymptotic p-value
    n = len(x)
    d = max(np.max(np.arange(1, n + 1) / n - x), np.max(x - np.arange(n) / n))
    return float(min(1.0, 2 * math.exp(-2 * n * d * d)))


def test_uniform_passes_ks(seeded: None) -> None:
    x = to_numpy(T.uniform(50000, dtype=mag.float64))
    assert _ks_uniform(x) > 1e-3
    assert _ks_uniform(to_numpy(T.uniform(50000, dtype=mag.float32)).astype(np.float64)) > 1e-3


def test_normal_passes_ks_and_moments(seeded: None) -> None:
    z = to_numpy(T.normal(50000, dtype=mag.float64))
    if stats is not None:
        assert stats.kstest(z, "norm").pvalue > 1e-3
    assert abs(z.mean()) < 0.03 and abs(z.var() - 1) < 0.03
    assert abs(np.mean(z**3)) < 0.05 and abs(np.mean(z**4) - 3) < 0.15  # skew 0, kurtosis 3
    assert 0.675 < np.mean(np.abs(z) < 1) < 0.69  # 68.3% within one sigma


def _chi_square_ok(counts: np.ndarray, expected: float) -> bool:
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    dof = len(counts) - 1
    if stats is not None:
        return float(stats.chi2.sf(chi2, dof)) > 1e-3
    return chi2 < dof + 5 * math.sqrt(2 * dof)


def test_integer_uniform_chi_square(seeded: None) -> None:
    u = to_numpy(T.uniform(60000, low=-5, high=14, dtype=mag.int32))
    counts = np.bincount(u + 5, minlength=20)
    assert _chi_square_ok(counts, 3000.0)


def test_bernoulli_is_binomial(seeded: None) -> None:
    b = to_numpy(T.bernoulli(200, 500, p=0.25)).sum(axis=1)  # 200 Binomial(500, 0.25) draws
    if stats is not None:
        assert stats.kstest(b, stats.binom(500, 0.25).cdf).pvalue > 1e-4
    assert abs(b.mean() - 125) < 2.5 and abs(b.var() - 93.75) < 25


def test_rand_perm_positions_are_uniform(seeded: None) -> None:
    counts = np.zeros((5, 5))
    for _ in range(2000):
        p = T.rand_perm(5).tolist()
        counts[np.arange(5), p] += 1
    assert _chi_square_ok(counts.ravel(), 400.0)


# ---- reproducibility ----
def _draw_all() -> list[np.ndarray]:
    n = 1_000_000  # big enough to be split across threads
    draws = [T.uniform(n), T.normal(n, dtype=mag.float64), T.bernoulli(n, p=0.4),
             T.uniform(n, low=-100, high=100, dtype=mag.int64), T.rand_perm(10000),
             T.uniform(1000, 1000, dtype=mag.bfloat16).cast(mag.float32), T.normal(n, dtype=mag.float16)]
    return [np.asarray(t).copy() for t in draws]


def test_manual_seed_is_reproducible_across_thread_counts() -> None:
    saved = mag.context.num_threads
    try:
        runs = []
        for threads in (1, 2, 1):
            mag.context.num_threads = threads
            mag.context.manual_seed(42)
            runs.append(_draw_all())
        for a, b in zip(runs[0], runs[1], strict=True):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(runs[0], runs[2], strict=True):
            np.testing.assert_array_equal(a, b)
    finally:
        mag.context.num_threads = saved


def test_seeds_and_successive_draws_differ() -> None:
    mag.context.manual_seed(1)
    a, b = T.uniform(100).tolist(), T.uniform(100).tolist()
    mag.context.manual_seed(2)
    c = T.uniform(100).tolist()
    mag.context.manual_seed(1)
    assert T.uniform(100).tolist() == a and T.uniform(100).tolist() == b
    assert a != b and a != c
    mag.context.manual_seed(2**64 + 1)  # reduced modulo 2^64
    assert T.uniform(100).tolist() == a
    with pytest.raises(TypeError, match="seed"):
        mag.context.manual_seed(1.5)


def test_in_place_random_fills_on_views(seeded: None) -> None:
    x = T.zeros(4, 6)
    x.T.view_slice(0, 5, 3, -2).uniform_(2.0, 3.0)  # columns 5, 3, 1
    a = to_numpy(x)
    assert ((a[:, [1, 3, 5]] >= 2) & (a[:, [1, 3, 5]] < 3)).all() and (a[:, [0, 2, 4]] == 0).all()
    x.normal_(0.0, 1.0)
    x.bernoulli_(0.5)
    assert set(to_numpy(x).ravel().tolist()) <= {0.0, 1.0}


# ---- Tensor(data) from Python data ----
@pytest.mark.parametrize(
    ("data", "dtype", "values"),
    [
        (True, mag.boolean, True),
        (3, mag.int64, 3),
        (2.5, mag.float32, 2.5),
        ([], mag.float32, []),
        ([[]], mag.float32, [[]]),
        ([True, False], mag.boolean, [True, False]),
        ([True, 2], mag.int64, [1, 2]),
        ([1, 2.5], mag.float32, [1.0, 2.5]),
        ([True, 1.5], mag.float32, [1.0, 1.5]),
        ([2**63, 1], mag.uint64, [2**63, 1]),
        ([-(2**63), 2**63 - 1], mag.int64, [-(2**63), 2**63 - 1]),
        (((1, 2), [3, 4]), mag.int64, [[1, 2], [3, 4]]),
        (range(3), mag.int64, [0, 1, 2]),
        ([range(2), range(2)], mag.int64, [[0, 1], [0, 1]]),
        ([np.True_, np.False_], mag.boolean, [True, False]),
        ([np.float32(1.5), np.int8(2)], mag.float32, [1.5, 2.0]),
        ([np.array([1, 2]), np.array([3, 4])], mag.int64, [[1, 2], [3, 4]]),
        ([torch.tensor([1.0, 2.0]), [3, 4]], mag.float32, [[1.0, 2.0], [3.0, 4.0]]),
        (lambda: [T([1.0, 2.0]), T([3.0, 4.0])], mag.float32, [[1.0, 2.0], [3.0, 4.0]]),  # built in the test:
        (lambda: [T(1.0), T(2.0)], mag.float32, [1.0, 2.0]),  # no tensor may outlive the run (nanobind checks)
        ([[[1]]] * 2, mag.int64, [[[1]], [[1]]]),
    ],
    ids=lambda v: repr(v)[:25],
)
def test_tensor_from_python_data(data: object, dtype: mag.dtype.DType, values: object) -> None:
    x = T(data() if callable(data) else data)
    assert x.dtype is dtype
    assert x.tolist() == values
    want = torch.tensor(values, dtype=DTYPES[dtype][0] if dtype is not mag.uint64 else torch.float64)
    assert x.shape == tuple(want.shape)


def test_tensor_from_python_data_with_dtype() -> None:
    assert T([1, 2], dtype=mag.float16).tolist() == [1.0, 2.0]
    assert T([1.7, -1.7], dtype=mag.int32).tolist() == [1, -1]  # converted like cast
    assert T([0, 2], dtype=mag.boolean).tolist() == [False, True]
    assert T(300, dtype=mag.uint8).item() == 44
    assert T([[1.0]], dtype="bfloat16").dtype is mag.bfloat16
    assert T([], dtype=mag.int8).shape == (0,)
    assert T(2**64 - 1, dtype=mag.uint64).item() == 2**64 - 1
    assert T(0.1, dtype=mag.float64).item() == 0.1  # no detour through float32
    assert T([0.1], dtype=mag.float64).item() == 0.1


# ---- mag.context (API.md section 9) ----
def test_context_threads_and_devices() -> None:
    import os

    if "MAGNETRON_NUM_THREADS" not in os.environ:
        assert mag.context.num_threads == len(os.sched_getaffinity(0))  # default: the usable cores
    assert mag.context.devices() == ["cpu"]
    mag.context.set_default_device("cpu")
    with pytest.raises(ValueError, match="cuda"):
        mag.context.set_default_device("cuda")
    info = mag.context.cpu_info()
    assert {"vendor", "model", "features", "variant"} <= set(info)
    with pytest.raises(TypeError, match="floating-point"):
        mag.context.set_default_dtype(mag.int32)


def test_num_threads_from_the_environment() -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "MAGNETRON_NUM_THREADS": "3", "PYTHONPATH": str(Path(mag.__file__).parent.parent)}
    code = "import magnetron as mag; print(mag.context.num_threads)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "3", out.stderr
