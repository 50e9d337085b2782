"""Graph capture: run tensor code once while recording its kernel launches, then replay them.

    g = mag.Graph()
    with mag.no_grad(), g.capture():
        y = model(x)           # runs as usual; every kernel launch is recorded
    x.copy_(next_input)        # new data in the tensors the capture used (same shapes)
    g.replay()                 # the same kernels again: y now holds model(next_input)

A replay skips Python, validation, shape inference and allocation: it is the kernels alone, which
for a decode step of a language model (~700 launches on vectors) is a tenth of the step's time.
What a capture fixes: the sequence of kernels, the tensors they read and write (the graph keeps
them alive, intermediates included), shapes and scalar arguments. What may change between
replays: the data inside those tensors. Ops whose front end reads values on the host (nonzero,
argmax, multinomial, ...) and ops that autograd records raise an error while capturing; random
ops draw fresh numbers on every replay. Capture is per thread.
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Iterator
from dataclasses import dataclass

from . import _C


@dataclass(frozen=True)
class LaunchTime:
    """One recorded launch in a profile: its op, result shape and dtype, and median wall time."""

    index: int
    op: str
    shape: tuple[int, ...]
    dtype: str
    seconds: float


class Graph:
    def __init__(self) -> None:
        self._g = _C.Graph()
        self._captured = False

    @contextlib.contextmanager
    def capture(self) -> Iterator[Graph]:
        """Record the kernels the block launches (replacing an earlier recording)."""
        self._captured = False
        self._g.begin()
        try:
            yield self
        except BaseException:
            self._g.abort()
            raise
        self._g.end()
        self._captured = True

    @property
    def captured(self) -> bool:
        return self._captured

    def replay(self) -> None:
        """Launch every recorded kernel again, in order, on the captured tensors."""
        if not self._captured:
            raise RuntimeError("Graph.replay: nothing has been captured")
        self._g.replay()

    def profile(self, replays: int = 5) -> list[LaunchTime]:
        """Replay ``replays`` times, timing every launch; each launch's median, in recorded order.

        A replay's launches run back to back as in ``replay``, so a kernel's time includes its
        thread-pool hand-off: the sum is the replay's time, up to the clock reads.
        """
        if not self._captured:
            raise RuntimeError("Graph.profile: nothing has been captured")
        if replays < 1:
            raise ValueError(f"Graph.profile: replays must be >= 1, got {replays}")
        runs = [self._g.replay_timed() for _ in range(replays)]
        return [LaunchTime(i, *self._g.launch_info(i), statistics.median(ns) * 1e-9) for i, ns in enumerate(zip(*runs))]

    def __len__(self) -> int:
        """The number of recorded kernel launches."""
        return len(self._g)
