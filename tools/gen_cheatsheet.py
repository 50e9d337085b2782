"""Generate docs/cheatsheet.md from the op table (``_C.op_table()``, i.e. src/core/ops.def).

    PYTHONPATH=python python tools/gen_cheatsheet.py          # rewrite docs/cheatsheet.md
    PYTHONPATH=python python tools/gen_cheatsheet.py --check  # exit 1 if it is stale

tests/python/test_op_table.py runs the check, so a table change without a regenerated
cheatsheet fails the tests.
"""

from __future__ import annotations

import sys
from pathlib import Path

from magnetron import _C, _tensor

OUT = Path(__file__).resolve().parent.parent / "docs" / "cheatsheet.md"
KINDS = {0: "unary", 1: "binary", 2: "compare", 3: "custom"}
OPF_INPLACE, OPF_INT_TO_FLOAT = 1 << 0, 1 << 3
DTF_FLOAT, DTF_INT, DTF_BOOL = 1 << 0, (1 << 1) | (1 << 2), 1 << 3  # MAG_DTF_* in magnetron.h
SYMBOLS = {
    "__add__": "+",
    "__sub__": "-",
    "__mul__": "*",
    "__truediv__": "/",
    "__floordiv__": "//",
    "__mod__": "%",
    "__pow__": "**",
    "__and__": "&",
    "__or__": "\\|",
    "__xor__": "^",
    "__lshift__": "<<",
    "__rshift__": ">>",
    "__eq__": "==",
    "__ne__": "!=",
    "__lt__": "<",
    "__le__": "<=",
    "__gt__": ">",
    "__ge__": ">=",
    "__neg__": "-x",
    "__abs__": "abs(x)",
    "__invert__": "~",
}


def _dtype_names(mask: int) -> str:
    """A dtype mask as words: whole groups by name (float, integer, boolean), other dtypes one by one."""
    table = _C.dtype_table()
    names = [r["name"] for r in table if mask >> r["id"] & 1]
    rest, parts = set(names), []
    for label, flags in (("float", DTF_FLOAT), ("integer", DTF_INT), ("boolean", DTF_BOOL)):
        members = {r["name"] for r in table if r["flags"] & flags}
        if members <= rest:
            parts.append(label)
            rest -= members
    return ", ".join(parts + [n for n in names if n in rest])


def _python_forms(row: dict) -> str:
    name = row["name"]
    if row["kind"] == 3:
        return ""
    call = "()" if row["n_inputs"] == 1 else "(y)"
    forms = [f"`x.{name}{call}`"]
    dunders = [d[0] for op, d in _tensor._DUNDERS.items() if op == name]
    dunders += [d for op, d in {**_tensor._COMPARE_DUNDERS, **_tensor._UNARY_DUNDERS}.items() if op == name]
    forms += [f"`{SYMBOLS[d]}`" for d in dunders]
    forms += [f"`x.{alias}{call}`" for alias, op in _tensor._ALIASES.items() if op == name]
    return ", ".join(forms)


def render() -> str:
    lines = [
        "# Op cheatsheet",
        "",
        "Generated from the op table (`src/core/ops.def`) by `tools/gen_cheatsheet.py`; do not edit by hand.",
        "Dtypes are those a kernel exists for; where it says *ints compute in float32*, integer and boolean",
        "inputs are converted to float32 first. *In place* ops also have an `x.name_(...)` form that keeps",
        "`x`'s dtype. Binary ops accept a tensor or a Python number on either side and broadcast.",
        "",
        "| op | kind | dtypes | in place | Python | description |",
        "|---|---|---|---|---|---|",
    ]
    for row in _C.op_table():
        dtypes = _dtype_names(row["dtypes"])
        if row["flags"] & OPF_INT_TO_FLOAT:
            dtypes += " (ints compute in float32)"
        inplace = "yes" if row["flags"] & OPF_INPLACE else ""
        doc = row["doc"].replace("|", "\\|")
        python = _python_forms(row)
        lines.append(f"| `{row['name']}` | {KINDS[row['kind']]} | {dtypes} | {inplace} | {python} | {doc} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT} is stale: run PYTHONPATH=python python tools/gen_cheatsheet.py", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
