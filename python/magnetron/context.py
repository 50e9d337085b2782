"""Runtime control: ``mag.context`` (API.md section 9)."""

from __future__ import annotations

from typing import Any

from . import _C, _tensor
from .dtype import DType


class Context:
    """Process-wide runtime settings. ``mag.context`` is the one instance."""

    def manual_seed(self, seed: int) -> None:
        """Reset the counter-based generator: every random factory becomes reproducible, whatever the thread count."""
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"manual_seed: seed must be an int, got {type(seed).__name__}")
        _C.manual_seed(seed & 0xFFFF_FFFF_FFFF_FFFF)

    @property
    def num_threads(self) -> int:
        """Threads the CPU kernels use (default: the CPUs this process may run on)."""
        return _C.get_num_threads()

    @num_threads.setter
    def num_threads(self, n: int) -> None:
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"num_threads must be an int, got {type(n).__name__}")
        _C.set_num_threads(n)

    def cpu_info(self) -> dict[str, Any]:
        """What the CPU backend found and chose.

        Keys: ``vendor``, ``model`` (brand string), ``family``/``model_number``/``stepping`` (CPUID),
        ``cpus`` (CPUs this process may use), ``features`` (ISA features the CPU *and* OS allow,
        e.g. ``"avx2"``, ``"amx_tile"``), ``variant`` (the kernel table in use), ``variants_built``
        and ``variants_available`` (built and runnable here; ``MAGNETRON_CPU_VARIANT`` picks one).
        """
        return _C.cpu_info()

    def devices(self) -> list[str]:
        return ["cpu"]

    def set_default_device(self, device: str) -> None:
        if device != "cpu":
            raise ValueError(f"set_default_device: device {device!r} is not available (devices: {self.devices()})")

    def set_default_dtype(self, dtype: DType) -> None:
        _tensor.set_default_dtype(dtype)

    def memory_stats(self) -> dict[str, int]:
        """Bytes held by live tensors and bytes parked in the caching allocator."""
        live, cached = _C.alloc_stats()
        return {"live_bytes": live, "cached_bytes": cached}


context = Context()
