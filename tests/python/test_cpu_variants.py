"""CPU backend: detection (cpu_info), kernel variants (MAGNETRON_CPU_VARIANT) and the thread pool."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import magnetron as mag
import numpy as np
import pytest

PYTHON_DIR = str(Path(mag.__file__).resolve().parent.parent)

# Runs in a fresh interpreter: a few ops on every path (SIMD body and tail, broadcast, f16/bf16,
# matmul, integers, 1 and 2 threads), compared with NumPy; prints the variant in use.
OPS_SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import magnetron as mag

    rng = np.random.default_rng(0)
    for threads in (1, 2):
        mag.context.num_threads = threads
        x = rng.standard_normal(100_003).astype(np.float32)
        y = rng.standard_normal(100_003).astype(np.float32)
        a, b = mag.Tensor(x), mag.Tensor(y)
        np.testing.assert_array_equal((a + b).numpy(), x + y)
        np.testing.assert_array_equal((a * b).numpy(), x * y)
        np.testing.assert_array_equal((-a).numpy(), -x)
        np.testing.assert_allclose((a / b).numpy(), x / y, rtol=1e-6)
        np.testing.assert_allclose(a.exp().numpy(), np.exp(x), rtol=1e-5)
        m = rng.standard_normal((257, 33)).astype(np.float32)
        r = rng.standard_normal(33).astype(np.float32)
        np.testing.assert_array_equal((mag.Tensor(m) + mag.Tensor(r)).numpy(), m + r)
        h = (a.cast(mag.float16) + b.cast(mag.float16)).numpy()
        np.testing.assert_array_equal(h, (x.astype(np.float16).astype(np.float32)
                                          + y.astype(np.float16).astype(np.float32)).astype(np.float16))
        bf = (a.cast(mag.bfloat16) * 2).cast(mag.float32).numpy()
        np.testing.assert_allclose(bf, 2 * x, rtol=2 ** -7)
        p, q = rng.standard_normal((130, 67)).astype(np.float32), rng.standard_normal((67, 45)).astype(np.float32)
        np.testing.assert_allclose((mag.Tensor(p) @ mag.Tensor(q)).numpy(), p @ q, rtol=1e-4, atol=1e-4)
        i = rng.integers(-1000, 1000, 50_001).astype(np.int32)
        np.testing.assert_array_equal((mag.Tensor(i) + mag.Tensor(i)).numpy(), i + i)
    print(mag.context.cpu_info()["variant"])
    """
)


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run code in a fresh interpreter with MAGNETRON_* taken only from env."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MAGNETRON_")}
    full_env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env)
    return subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def restore_threads() -> Iterator[None]:
    n = mag.context.num_threads
    yield
    mag.context.num_threads = n


def test_cpu_info_content() -> None:
    info = mag.context.cpu_info()
    assert set(info) >= {"vendor", "model", "features", "variant", "variants_built", "variants_available", "cpus"}
    assert isinstance(info["vendor"], str) and isinstance(info["model"], str)
    assert info["variants_built"][0] == "generic" and "generic" in info["variants_available"]
    assert set(info["variants_available"]) <= set(info["variants_built"])
    assert info["variant"] in info["variants_available"]
    assert all(isinstance(f, str) and f for f in info["features"])
    assert len(set(info["features"])) == len(info["features"])
    assert 1 <= info["cpus"] <= len(os.sched_getaffinity(0))
    if platform.machine() in ("x86_64", "AMD64"):
        assert info["vendor"] and "sse2" in info["features"]
        assert info["variants_built"] == ["generic", "avx2", "avx512", "avx512_spr"]
        # the feature lists mirror the variants: one runs exactly when its features are usable
        avx2 = {"avx2", "fma", "f16c"} <= set(info["features"])
        assert ("avx2" in info["variants_available"]) == avx2
        if "amx_tile" in info["features"]:
            assert "avx512_spr" in info["variants_available"]


def test_default_variant_is_the_best_available() -> None:
    code = "import magnetron as mag; i = mag.context.cpu_info(); print(i['variant'], i['variants_available'][-1])"
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    chosen, best = r.stdout.split()
    assert chosen == best


@pytest.mark.parametrize("variant", mag.context.cpu_info()["variants_available"])
def test_variant_runs_ops(variant: str) -> None:
    r = run_python(OPS_SCRIPT, MAGNETRON_CPU_VARIANT=variant)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == variant


def test_unknown_variant_is_a_clear_error() -> None:
    r = run_python("import magnetron", MAGNETRON_CPU_VARIANT="avx9000")
    assert r.returncode == 1, r.stderr  # an exception, not a signal
    assert "ImportError: MAGNETRON_CPU_VARIANT=avx9000: no such kernel variant" in r.stderr
    assert "generic" in r.stderr.splitlines()[-1]


def test_unsupported_variant_is_a_clear_error() -> None:
    info = mag.context.cpu_info()
    unsupported = [v for v in info["variants_built"] if v not in info["variants_available"]]
    if not unsupported:
        pytest.skip("this machine runs every variant built")
    r = run_python("import magnetron", MAGNETRON_CPU_VARIANT=unsupported[-1])
    assert r.returncode == 1, r.stderr
    last = r.stderr.splitlines()[-1]
    assert f"MAGNETRON_CPU_VARIANT={unsupported[-1]}: this CPU (or OS) lacks" in last
    assert info["variants_available"][-1] in last


def test_num_threads_default_and_env() -> None:
    r = run_python("import magnetron as mag; print(mag.context.num_threads, mag.context.cpu_info()['cpus'])")
    assert r.returncode == 0, r.stderr
    n, cpus = r.stdout.split()
    assert n == cpus
    r = run_python("import magnetron as mag; print(mag.context.num_threads)", MAGNETRON_NUM_THREADS="3")
    assert r.returncode == 0 and r.stdout.strip() == "3", r.stderr
    for bad in ("0", "abc", "2x", "5000"):
        r = run_python("import magnetron", MAGNETRON_NUM_THREADS=bad)
        assert r.returncode == 1 and f"MAGNETRON_NUM_THREADS={bad}: expected an integer" in r.stderr, r.stderr


def test_num_threads_set(restore_threads: None) -> None:
    mag.context.num_threads = 3
    assert mag.context.num_threads == 3
    mag.context.num_threads = 1
    assert mag.context.num_threads == 1
    with pytest.raises(ValueError, match="num_threads"):
        mag.context.num_threads = 0
    with pytest.raises(ValueError, match="num_threads"):
        mag.context.num_threads = 5000
    with pytest.raises(TypeError, match="num_threads"):
        mag.context.num_threads = 2.0  # type: ignore[assignment]
    assert mag.context.num_threads == 1


def test_threads_give_identical_results(restore_threads: None) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1000, 1003)).astype(np.float32)
    y = rng.standard_normal(1003).astype(np.float32)
    a, b = mag.Tensor(x), mag.Tensor(y)
    results = []
    for n in (1, 2, 3, 1, 2):  # resizing between ops, more threads than CPUs included
        mag.context.num_threads = n
        results.append(((a + b) * a).numpy())
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    np.testing.assert_array_equal(results[0], (x + y) * x)


def test_pool_survives_fork() -> None:
    code = textwrap.dedent(
        """
        import os
        import magnetron as mag
        mag.context.num_threads = 2
        a = mag.Tensor.ones(1_000_000)
        assert (a + a)[7].item() == 2.0
        pid = os.fork()
        if pid == 0:  # the child has none of the parent's workers
            ok = (a + a + a)[7].item() == 3.0
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
        print("ok")
        """
    )
    r = run_python(code)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
