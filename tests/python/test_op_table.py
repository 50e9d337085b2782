"""Guards on the op table (src/core/ops.def): every op has its kernels and Python methods, and the
generated docs/cheatsheet.md is up to date."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import magnetron as mag
import pytest
from magnetron import _C

ROOT = Path(__file__).resolve().parents[2]
OPS = _C.op_table()
DTYPES = _C.dtype_table()
OPF_INPLACE = 1 << 0
ELEMENTWISE_KINDS = (0, 1, 2)  # MAG_OPK_UNARY, BINARY, COMPARE


@pytest.mark.parametrize("row", OPS, ids=[r["name"] for r in OPS])
def test_every_op_has_a_cpu_kernel_for_each_dtype_in_its_mask(row: dict) -> None:
    missing = [d["name"] for d in DTYPES if row["dtypes"] >> d["id"] & 1 and not _C.has_kernel(row["id"], d["id"])]
    assert not missing, f"{row['name']}: no CPU kernel for {missing}"


@pytest.mark.parametrize("row", [r for r in OPS if r["kind"] in ELEMENTWISE_KINDS], ids=lambda r: r["name"])
def test_elementwise_ops_have_generated_methods(row: dict) -> None:
    name = row["name"]
    assert getattr(mag.Tensor, name).__doc__, name
    if row["flags"] & OPF_INPLACE:
        assert hasattr(mag.Tensor, name + "_"), name
    if row["n_inputs"] == 2:
        assert hasattr(mag.Tensor, "_r" + name), name


def test_cheatsheet_is_up_to_date() -> None:
    spec = importlib.util.spec_from_file_location("gen_cheatsheet", ROOT / "tools" / "gen_cheatsheet.py")
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    current = (ROOT / "docs" / "cheatsheet.md").read_text() if (ROOT / "docs" / "cheatsheet.md").exists() else ""
    assert current == gen.render(), "docs/cheatsheet.md is stale: run PYTHONPATH=python python tools/gen_cheatsheet.py"


def test_type_stubs_are_up_to_date() -> None:
    spec = importlib.util.spec_from_file_location("gen_stubs", ROOT / "tools" / "gen_stubs.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    stub = ROOT / "python" / "magnetron" / "_C.pyi"
    text = gen.render()
    stale = "_C.pyi is stale: run PYTHONPATH=python python tools/gen_stubs.py"
    assert stub.exists() and stub.read_text() == text, stale
    for row in mag._C.op_table():
        if row["kind"] != 3:  # every generated method is declared
            assert f"def {row['name']}(" in text
