"""The examples run and do what their READMEs promise (briefly, where training is long)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / name / "main.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_xor_converges() -> None:
    preds = _load("xor").train(epochs=2000, verbose=False)
    for p, t in zip(preds, [0.0, 1.0, 1.0, 0.0]):
        assert abs(p - t) < 0.1


def test_linear_regression_recovers_slope_and_intercept(tmp_path: Path) -> None:
    ex = _load("linear_regression")
    slope, intercept, losses = ex.fit(steps=300)
    assert abs(slope - ex.TRUE_SLOPE) < 0.05 * abs(ex.TRUE_SLOPE)
    assert abs(intercept - ex.TRUE_INTERCEPT) < 0.05 * abs(ex.TRUE_INTERCEPT)
    assert losses[-1] < losses[0]


def test_tensor_tour_runs() -> None:
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "tensor_tour" / "main.py")], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "strides" in out.stdout
