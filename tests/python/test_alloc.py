"""Where the allocator places buffers: seen through DLPack, which shares the tensor's memory."""

import sys

import magnetron as mag
import numpy as np
import pytest


def address(t: mag.Tensor) -> int:
    return np.from_dlpack(t).__array_interface__["data"][0]


def test_small_buffers_are_cache_line_aligned() -> None:
    for n in (1, 3, 1000, 100_000):
        assert address(mag.Tensor.zeros(n)) % 64 == 0


@pytest.mark.skipif(sys.platform != "linux", reason="huge pages are asked for on Linux only")
@pytest.mark.parametrize("nbytes", [2 << 20, (5 << 20) + 64, 64 << 20])
def test_large_buffers_start_on_a_huge_page(nbytes: int) -> None:
    t = mag.Tensor.zeros(nbytes // 4)
    assert address(t) % (2 << 20) == 0
    t.fill_(3.0)
    assert np.from_dlpack(t)[-1] == 3.0  # the whole buffer is usable, tail past the last huge page too
