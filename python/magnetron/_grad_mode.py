"""Thread-local grad mode: ``mag.no_grad()`` and ``mag.enable_grad()`` nest and restore state."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_state = threading.local()


def is_grad_enabled() -> bool:
    return getattr(_state, "enabled", True)


class _GradMode:
    """A context manager and decorator that sets grad mode and restores the previous one on exit."""

    _enabled: bool

    def __enter__(self) -> None:
        self._stack = getattr(self, "_stack", [])
        self._stack.append(is_grad_enabled())
        _state.enabled = self._enabled

    def __exit__(self, *exc: object) -> None:
        _state.enabled = self._stack.pop()

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with type(self)():
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class no_grad(_GradMode):  # noqa: N801 (PyTorch's name)
    """Disable gradient recording in this thread."""

    _enabled = False


class enable_grad(_GradMode):  # noqa: N801
    """Enable gradient recording in this thread."""

    _enabled = True
