"""Progress bars: tqdm when installed, else a one-line fallback; off when stderr is not a
terminal or MAGNETRON_PROGRESS=0."""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType
from typing import Any


def enabled() -> bool:
    return os.environ.get("MAGNETRON_PROGRESS", "1") != "0" and sys.stderr.isatty()


class _Quiet:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


class _Line:
    """``desc: 42% 1.2/2.9 GB 310 MB/s`` redrawn in place at most ten times a second."""

    def __init__(self, total: int, desc: str, unit: str) -> None:
        self.total, self.desc, self.unit = total, desc, unit
        self.done, self.start, self.drawn = 0, time.monotonic(), 0.0

    def _fmt(self, n: float) -> str:
        if self.unit != "B":
            return f"{n:.0f}"
        for scale, suffix in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
            if n >= scale:
                return f"{n / scale:.1f} {suffix}"
        return f"{n:.0f} B"

    def _draw(self) -> None:
        elapsed = max(time.monotonic() - self.start, 1e-9)
        pct = 100 * self.done / self.total if self.total else 100
        rate = self._fmt(self.done / elapsed) + "/s"
        sys.stderr.write(f"\r{self.desc}: {pct:3.0f}% {self._fmt(self.done)}/{self._fmt(self.total)} {rate}\x1b[K")
        sys.stderr.flush()

    def update(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.drawn >= 0.1:
            self.drawn = now
            self._draw()

    def close(self) -> None:
        self._draw()
        sys.stderr.write("\n")


class progress:  # noqa: N801 (used like a function: ``with progress(n, "convert") as bar``)
    """A progress bar over ``total`` units (``unit="B"`` formats bytes)."""

    def __init__(self, total: int, desc: str, unit: str = "B") -> None:
        self.bar: Any
        if not enabled():
            self.bar = _Quiet()
            return
        try:
            from tqdm import tqdm
        except ImportError:
            self.bar = _Line(total, desc, unit)
        else:
            self.bar = tqdm(total=total, desc=desc, unit=unit, unit_scale=unit == "B", unit_divisor=1000, leave=True)

    def update(self, n: int = 1) -> None:
        self.bar.update(n)

    def __enter__(self) -> progress:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.bar.close()


class LazyProgress:
    """A progress bar that appears once the total is known (``start``); for callbacks such as
    ``convert(on_start=bar.start, on_tensor=bar.update)``."""

    def __init__(self, desc: str, unit: str = "B") -> None:
        self.desc, self.unit = desc, unit
        self.bar: progress | None = None

    def start(self, total: int) -> None:
        self.bar = progress(total, self.desc, self.unit)

    def update(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None
