"""The fused rope op against a torch composition: rotate-half and interleaved pairs, broadcast
angle tables, strided inputs, every float dtype, gradients for x, cos and sin, and bad input."""

from __future__ import annotations

import sys
from pathlib import Path

import magnetron as mag
import numpy as np
import pytest
import torch
from magnetron.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from autograd_helpers import check_grad, to_torch  # noqa: E402

DTYPES = [(mag.float32, torch.float32, 1e-6), (mag.float64, torch.float64, 1e-12),
          (mag.bfloat16, torch.bfloat16, 2e-2), (mag.float16, torch.float16, 2e-3)]


def torch_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool = False) -> torch.Tensor:
    """The unfused definition, computed in float64."""
    x, cos, sin = x.double(), cos.double(), sin.double()
    if interleaved:
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * cos - b * sin, b * cos + a * sin], dim=-1).flatten(-2)
    h = x.shape[-1] // 2
    a, b = x[..., :h], x[..., h:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize(("mdt", "tdt", "tol"), DTYPES)
def test_rope_matches_the_composition(mdt, tdt, tol, interleaved) -> None:
    x = torch.randn(2, 3, 5, 8, generator=torch.Generator().manual_seed(0)).to(tdt)
    cos, sin = (t.to(tdt) for t in F_angles(5, 8))
    got = F.rope(mag.Tensor.from_dlpack(x), mag.Tensor.from_dlpack(cos), mag.Tensor.from_dlpack(sin), interleaved)
    assert got.dtype == mdt and got.shape == x.shape
    expect = torch_rope(x, cos, sin, interleaved)
    np.testing.assert_allclose(to_torch(got).double().numpy(), expect.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("d", [128, 40])  # Qwen3's head size, and one off the vector widths
@pytest.mark.parametrize("tdt", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_rope_rounds_like_torchs_unfused_expression(tdt, d: int) -> None:
    """Each product and the sum round to the dtype, as torch's x * cos + rotate_half(x) * sin does:
    bit for bit (what keeps the bfloat16 models on transformers' track)."""
    x = torch.randn(1, 4, 6, d, generator=torch.Generator().manual_seed(1)).to(tdt)
    cos, sin = (t.to(tdt) for t in F_angles(6, d))
    got = F.rope(mag.Tensor.from_dlpack(x), mag.Tensor.from_dlpack(cos), mag.Tensor.from_dlpack(sin))
    h = d // 2
    a, b = x[..., :h], x[..., h:]
    expect = torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)
    assert torch.equal(to_torch(got), expect)


def F_angles(t: int, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    cos, sin = F.rope_frequencies(t, d, theta=10000.0)
    return to_torch(cos), to_torch(sin)


def test_rope_reads_strided_views_and_broadcasts_angles_per_head() -> None:
    base = torch.randn(2, 5, 4, 16, dtype=torch.float64)  # (B, T, H, D): heads transposed in, no copy
    x = base.transpose(1, 2)  # (B, H, T, D), non-contiguous
    cos = torch.rand(4, 5, 8, dtype=torch.float64)  # one table per head, broadcast over B
    sin = torch.rand(1, 5, 1, dtype=torch.float64).expand(4, 5, 8)  # stride-0 dims
    ours = F.rope(mag.Tensor.from_dlpack(x), mag.Tensor.from_dlpack(cos), mag.Tensor.from_dlpack(sin))
    np.testing.assert_allclose(to_torch(ours).numpy(), torch_rope(x, cos, sin).numpy(), rtol=1e-12, atol=1e-12)
    # a strided angle table (every other row) and a float32 table for float64 x (cast to x's dtype)
    cos2 = torch.rand(10, 8, dtype=torch.float64)[::2]
    ours = F.rope(mag.Tensor.from_dlpack(x), mag.Tensor.from_dlpack(cos2), mag.Tensor.from_dlpack(sin.float()))
    expect = torch_rope(x, cos2, sin.float().double())
    np.testing.assert_allclose(to_torch(ours).numpy(), expect.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("interleaved", [False, True])
def test_rope_gradients_for_x_cos_and_sin(interleaved) -> None:
    check_grad(lambda x, c, s: F.rope(x, c, s, interleaved), [(2, 3, 4, 6), (4, 3), (3, 4, 3)],
               torch_fn=lambda x, c, s: torch_rope(x, c, s, interleaved), transpose=True)


def test_rope_rejects_bad_input() -> None:
    x = mag.Tensor.zeros(2, 4, 6)
    cos = mag.Tensor.zeros(4, 3)
    with pytest.raises(ValueError, match=r"rope: x needs a last dim of even size, got shape \(2, 4, 5\)"):
        F.rope(mag.Tensor.zeros(2, 4, 5), cos, cos)
    with pytest.raises(ValueError, match=r"rope: sin of shape \(4, 4\) does not broadcast to \(2, 4, 3\)"):
        F.rope(x, cos, mag.Tensor.zeros(4, 4))
    with pytest.raises(TypeError, match="rope: x, cos and sin must be floating point, got int32"):
        F.rope(mag.Tensor.zeros(2, 4, 6, dtype=mag.int32), cos, cos)
    with pytest.raises(ValueError, match="rope: x needs a last dim of even size"):
        F.rope(mag.Tensor(1.0), cos, cos)
