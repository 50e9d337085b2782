"""Thread-local grad mode: ``mag.no_grad()`` and ``mag.enable_grad()`` nest and restore state.

The mode itself lives in the core (thread-local there), so it also governs C callers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from . import _C

F = TypeVar("F", bound=Callable[..., Any])


def is_grad_enabled() -> bool:
    return _C.is_grad_enabled()


def records(*tensors: Any) -> bool:
    """Whether autograd records an op on these tensors (grad mode on and one of them requires grad)."""
    return _C.is_grad_enabled() and any(t.requires_grad for t in tensors)


class _GradMode:
    """A context manager and decorator that sets grad mode and restores the previous one on exit."""

    _enabled: bool

    def __init__(self) -> None:
        self._prev: list[bool] = []

    def __enter__(self) -> None:
        self._prev.append(_C._set_grad_enabled(self._enabled))

    def __exit__(self, *exc: object) -> None:
        _C._set_grad_enabled(self._prev.pop())

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
