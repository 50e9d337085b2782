"""A preallocated key/value cache, written in place.

Every layer owns one K and one V buffer of shape (B, H_kv, capacity, D). A forward step at
position ``pos`` with T new tokens writes its keys and values into rows pos..pos+T-1 and attends
over rows 0..pos+T-1 of the buffer: no concatenation, no copy of the past.
``length`` counts the positions held; ``truncate`` rolls back, which is how a chat turn whose
prompt starts with the tokens already cached runs only the tokens after that shared prefix.
"""

from __future__ import annotations

from .._tensor import Tensor
from ..dtype import DType


class KVCache:
    def __init__(
        self, n_layers: int, batch: int, n_kv_heads: int, head_dim: int, capacity: int, max_capacity: int, dtype: DType
    ) -> None:
        self.n_layers, self.batch, self.n_kv_heads, self.head_dim = n_layers, batch, n_kv_heads, head_dim
        self.max_capacity, self.dtype = max_capacity, dtype
        self.k: list[Tensor] = []
        self.v: list[Tensor] = []
        self.capacity = 0
        self.length = 0  # positions held: rows 0..length-1 of every buffer
        self.reserve(capacity)

    def reserve(self, n: int) -> None:
        """Make room for ``n`` positions. Growing doubles the capacity (up to the model's context) and
        copies the rows in use once, so a long chat costs amortised O(1) copies per token."""
        if n > self.max_capacity:
            raise ValueError(f"KV cache: {n} positions exceed the model's context length {self.max_capacity}")
        if n <= self.capacity:
            return
        cap = min(max(n, 2 * self.capacity), self.max_capacity)
        shape = (self.batch, self.n_kv_heads, cap, self.head_dim)
        k = [Tensor.zeros(*shape, dtype=self.dtype) for _ in range(self.n_layers)]
        v = [Tensor.zeros(*shape, dtype=self.dtype) for _ in range(self.n_layers)]
        used = self.length
        if used:
            for new, old in zip(k + v, self.k + self.v):
                new[:, :, :used] = old[:, :, :used]
        self.k, self.v, self.capacity = k, v, cap

    def truncate(self, n: int) -> None:
        """Forget every position from ``n`` on (their rows are overwritten by the next writes)."""
        self.length = min(self.length, n)

    def update(self, layer: int, where: Tensor | int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Write k, v (B, H_kv, T, D) at T consecutive rows of ``layer``: from the int ``where`` on, or
        at the rows the (T,) int64 tensor ``where`` holds when the write runs (a replayed graph
        moves them). Returns the whole buffers (attention reads rows up to the last position only).
        The caller advances ``length`` once all layers are written."""
        kbuf, vbuf = self.k[layer], self.v[layer]  # (B, H_kv, capacity, D)
        rows = where if isinstance(where, Tensor) else slice(where, where + k.shape[2])
        kbuf[:, :, rows] = k
        vbuf[:, :, rows] = v
        return kbuf, vbuf
