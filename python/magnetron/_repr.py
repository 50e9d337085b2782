"""A PyTorch-like repr: ``Tensor([[1., 2.], [3., 4.]], dtype=float32)``, summarised with ``...``."""

from __future__ import annotations

import math
from typing import Any

SUMMARY_THRESHOLD = 1000  # more elements than this are summarised
EDGE_ITEMS = 3
PREFIX = "Tensor("


def _float_format(values: list[float]) -> Any:
    finite = [abs(v) for v in values if math.isfinite(v)]
    if finite and all(v == int(v) for v in finite) and max(finite, default=0) < 1e8:
        return lambda v: f"{v:.0f}." if math.isfinite(v) else str(v)
    big, small = max(finite, default=0), min((v for v in finite if v), default=1)
    if big >= 1e8 or small < 1e-4:
        return lambda v: f"{v:.4e}" if math.isfinite(v) else str(v)
    return lambda v: f"{v:.4f}" if math.isfinite(v) else str(v)


def _summarised(t: Any) -> list:
    """Nested lists of the edge items only (None marks an elision)."""
    if t.rank == 0:
        return t.item()
    n = t.shape[0]
    if n > 2 * EDGE_ITEMS:
        return [_summarised(t[i]) for i in range(EDGE_ITEMS)] + [None] + [_summarised(t[i]) for i in range(n - EDGE_ITEMS, n)]
    return [_summarised(t[i]) for i in range(n)]


def _flat(x: Any) -> list:
    if isinstance(x, list):
        return [v for item in x for v in _flat(item)]
    return [] if x is None else [x]


def _render(x: Any, fmt: Any, depth: int, indent: int) -> str:
    if not isinstance(x, list):
        return fmt(x)
    if not x:
        return "[]"
    parts = ["..." if item is None else _render(item, fmt, depth + 1, indent + 1) for item in x]
    if isinstance(x[0], list) or (x[0] is None and len(x) > 1 and isinstance(x[1], list)):
        sep = ",\n" + " " * (indent + 1)
        return "[" + sep.join(parts) + "]"
    return "[" + ", ".join(parts) + "]"


def tensor_repr(t: Any) -> str:
    data = _summarised(t) if t.numel > SUMMARY_THRESHOLD else t.tolist()
    values = _flat(data)
    if t.dtype.is_floating_point:
        fmt = _float_format(values)
        width = max((len(fmt(v)) for v in values), default=0)
        cell = lambda v: fmt(v).rjust(width)  # noqa: E731
    elif t.dtype.name == "boolean":
        cell = lambda v: str(bool(v))  # noqa: E731
    else:
        width = max((len(str(v)) for v in values), default=0)
        cell = lambda v: str(v).rjust(width)  # noqa: E731
    body = _render(data, cell, 0, len(PREFIX))
    return f"{PREFIX}{body}, dtype={t.dtype})"
