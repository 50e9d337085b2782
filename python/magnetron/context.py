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
        """Vendor, model, ISA features found and the kernel variant in use."""
        info: dict[str, Any] = {"vendor": "", "model": "", "features": [], "variant": "generic"}
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    key, _, value = line.partition(":")
                    key = key.strip()
                    if key == "vendor_id" and not info["vendor"]:
                        info["vendor"] = value.strip()
                    elif key == "model name" and not info["model"]:
                        info["model"] = value.strip()
                    elif key == "flags" and not info["features"]:
                        info["features"] = value.split()
        except OSError:
            pass
        return info

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
