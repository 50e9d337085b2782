"""magnetron: a compact, inspectable machine-learning runtime.

``import magnetron as mag`` gives tensors (``mag.Tensor``), dtypes (``mag.float32`` ...), the
runtime context (``mag.context``) and, as they land, autograd, ``nn``, ``optim`` and ``.mag`` files.
"""

from __future__ import annotations

from . import (
    _C,
    _ops_reduce,  # noqa: F401  (installs the reduction methods on Tensor)
    _ops_struct,  # noqa: F401  (installs its Tensor methods)
    dtype,
    nn,
    optim,
)
from ._grad_mode import enable_grad, no_grad
from ._tensor import Tensor
from .context import context
from .dtype import (
    bfloat16,
    boolean,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .graph import Graph
from .io import Snapshot, load, save

__version__ = "0.1.0"
FormatError = _C.FormatError

__all__ = [
    "Tensor",
    "dtype",
    "no_grad",
    "enable_grad",
    "context",
    "nn",
    "optim",
    "FormatError",
    "save",
    "load",
    "Snapshot",
    "Graph",
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "boolean",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
]
