"""A PyTorch-like repr: ``Tensor([[1., 2.], [3., 4.]], dtype=float32)``, summarised with ``...``.

The layout follows PyTorch's printing rules (default print options) so that a magnetron tensor
prints like the same torch tensor, with ``Tensor(`` for ``tensor(`` and the dtype always named:
- floats whose non-zero finite values are all integers print as ``1.``; otherwise 4 decimals;
  scientific notation when the largest / smallest magnitude exceeds 1000, or the largest exceeds
  1e8, or (non-integers) the smallest is below 1e-4;
- every element is right-aligned to the widest one (NaN, inf and 0 do not count for floats);
- more than 1000 elements are summarised with the first and last 3 items of every long dim;
- rows wrap at 80 columns; empty tensors print ``[]`` plus their size unless rank 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

THRESHOLD = 1000
EDGE_ITEMS = 3
PRECISION = 4
LINE_WIDTH = 80
PREFIX = "Tensor("
_ELIDED = object()  # marks the "..." of a summarised dim


def _values(t: Any, summarize: bool) -> Any:
    """Nested lists of the elements to print (only the edge items of long dims when summarising)."""
    if t.rank == 0:
        return t.item()
    n = t.shape[0]
    if t.rank == 1:
        if summarize and n > 2 * EDGE_ITEMS:
            return t[:EDGE_ITEMS].tolist() + [_ELIDED] + t[n - EDGE_ITEMS :].tolist()
        return t.tolist()
    if summarize and n > 2 * EDGE_ITEMS:
        rows = [*range(EDGE_ITEMS), None, *range(n - EDGE_ITEMS, n)]
    else:
        rows = list(range(n))
    return [_ELIDED if i is None else _values(t.select(0, i), summarize) for i in rows]


def _flat(x: Any) -> list:
    if isinstance(x, list):
        return [v for item in x for v in _flat(item)]
    return [] if x is _ELIDED else [x]


def _formatter(values: list, floating: bool) -> tuple[Callable[[Any], str], int]:
    """The element format and the column width, chosen from all printed values."""
    if not floating:
        width = max((len(str(v)) for v in values), default=1)
        return str, max(width, 1)
    finite = [v for v in values if math.isfinite(v) and v != 0]
    if not finite:
        return _int_float, 1
    lo, hi = min(abs(v) for v in finite), max(abs(v) for v in finite)
    if all(v == math.ceil(v) for v in finite):
        if hi / lo > 1000.0 or hi > 1.0e8:
            return _sci, max(len(_sci(v)) for v in finite)
        return _int_float, max(len(f"{v:.0f}") + 1 for v in finite)
    if hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4:
        return _sci, max(len(_sci(v)) for v in finite)
    return _fixed, max(len(_fixed(v)) for v in finite)


def _sci(v: float) -> str:
    return f"{v:.{PRECISION}e}"


def _fixed(v: float) -> str:
    return f"{v:.{PRECISION}f}"


def _int_float(v: float) -> str:
    return f"{v:.0f}" + ("" if math.isinf(v) or math.isnan(v) else ".")


def _render(x: Any, cell: Callable[[Any], str], width: int, rank: int, indent: int) -> str:
    if rank == 0:
        return cell(x)
    if rank == 1:
        items = [" ..." if v is _ELIDED else cell(v) for v in x]
        per_line = max(1, (LINE_WIDTH - indent) // (width + 2))
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    parts = ["..." if v is _ELIDED else _render(v, cell, width, rank - 1, indent + 1) for v in x]
    return "[" + ("," + "\n" * (rank - 1) + " " * (indent + 1)).join(parts) + "]"


def _with_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    """Append ``, size=...``/``, dtype=...``, starting a new line where the current one would pass 80 columns."""
    out = [text]
    line = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if line + len(s) + 2 > LINE_WIDTH:
            out.append(",\n" + " " * indent + s)
            line = indent + len(s)
        else:
            out.append(", " + s)
            line += len(s) + 2
    return "".join(out) + ")"


def tensor_repr(t: Any) -> str:
    indent = len(PREFIX)
    suffixes = []
    if t.numel == 0:
        if t.rank != 1:
            suffixes.append(f"size={t.shape}")
        body = "[]"
    else:
        data = _values(t, summarize=t.numel > THRESHOLD)
        fmt, width = _formatter(_flat(data), t.dtype.is_floating_point)

        def cell(v: Any) -> str:
            return fmt(v).rjust(width)

        body = _render(data, cell, width, t.rank, indent)
    suffixes.append(f"dtype={t.dtype}")
    return _with_suffixes(PREFIX + body, suffixes, indent)
