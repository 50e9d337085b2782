"""Runs the GEMM engine's C test runner (tests/c/test_gemm.c) once per implementation path.

The runner is built by CMake as ``magnetron_test_gemm`` next to the extension's build tree
(``build/dev`` by default, or ``$MAGNETRON_BUILD_DIR``); it checks every dtype, edge sizes,
every operand layout, alpha/beta, GEMV shapes and thread shares against a float64 reference.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("MAGNETRON_BUILD_DIR", ROOT / "build" / "dev"))
RUNNER = BUILD / "magnetron_test_gemm"
PATHS = ["generic", "avx2", "avx512", "avx512bf16", "amx", "amx-emulated"]

pytestmark = pytest.mark.skipif(not RUNNER.exists(), reason=f"{RUNNER} not built (cmake --build {BUILD})")


def run(path: str, *extra: str) -> None:
    proc = subprocess.run([str(RUNNER), "--path", path, *extra], capture_output=True, text=True, timeout=900)
    if "not supported here" in proc.stdout:
        pytest.skip(f"this machine has no {path} path")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert ", 0 failed" in proc.stdout


@pytest.mark.parametrize("path", PATHS)
def test_gemm_quick(path: str) -> None:
    run(path, "--quick")


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS)
def test_gemm_full(path: str) -> None:
    run(path)


def initial_path(env_value: str) -> tuple[str, str]:
    env = {**os.environ, "MAGNETRON_GEMM_PATH": env_value}
    proc = subprocess.run([str(RUNNER), "--path", "none"], capture_output=True, text=True, env=env, timeout=60)
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("initial path: "))
    return line.removeprefix("initial path: "), proc.stderr


def test_env_override_selects_path() -> None:
    assert initial_path("generic")[0] == "generic"
    best, _ = initial_path("")
    assert best in PATHS


def test_env_override_unsupported_is_reported() -> None:
    best, _ = initial_path("")
    path, err = initial_path("no-such-path")
    assert path == best
    assert "MAGNETRON_GEMM_PATH=no-such-path" in err
