"""The fused rms_norm and layer_norm ops (nn.functional and the nn modules) against PyTorch:
forward for every float dtype, layouts and parameter combinations; gradients of x, weight and
bias against torch.autograd in float64; and the errors for bad arguments."""

from __future__ import annotations

import sys
from pathlib import Path

import magnetron as mag
import magnetron.nn as nn
import magnetron.nn.functional as F
import pytest
import torch
import torch.nn.functional as TF

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from autograd_helpers import check_grad  # noqa: E402

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}
# (rtol, atol): a unit or two in the last place of outputs of magnitude ~3
TOL = {
    torch.float32: (1e-5, 1e-5),
    torch.float64: (1e-12, 1e-12),
    torch.float16: (2e-3, 4e-3),
    torch.bfloat16: (1.6e-2, 3.2e-2),
}
# (x shape, normalized_shape): rows shorter and longer than a SIMD block, one and two normalised dims
CASES = [
    ((4, 7), (7,)),
    ((3, 33), (33,)),
    ((2, 5, 300), (300,)),
    ((3, 4100), (4100,)),
    ((2, 6, 40), (6, 40)),
    ((9,), (9,)),
]


def _mag(t: torch.Tensor | None) -> mag.Tensor | None:
    return None if t is None else mag.Tensor.from_dlpack(t.contiguous().clone())


def _close(actual: mag.Tensor, expected: torch.Tensor, what: str) -> None:
    a = torch.from_dlpack(actual)
    assert a.dtype == expected.dtype and a.shape == expected.shape, what
    rtol, atol = TOL[a.dtype]
    torch.testing.assert_close(a, expected, rtol=rtol, atol=atol, equal_nan=True, msg=lambda m: f"{what}: {m}")


def _params(n: tuple[int, ...], dtype: torch.dtype, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g, dtype=torch.float64).to(dtype), torch.randn(n, generator=g).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,norm", CASES)
def test_forward_matches_torch(shape: tuple[int, ...], norm: tuple[int, ...], dtype: str) -> None:
    td = DTYPES[dtype]
    t = (torch.randn(shape, generator=torch.Generator().manual_seed(len(shape)), dtype=torch.float64) * 2 + 0.5).to(td)
    w, b = _params(norm, td, seed=3)
    x = _mag(t)
    for weight in (None, w):
        what = f"{dtype} {shape} {norm} weight={weight is not None}"
        _close(F.rms_norm(x, norm, _mag(weight), 1e-6), TF.rms_norm(t, norm, weight, 1e-6), f"rms_norm {what}")
        for bias in (None, b):
            _close(
                F.layer_norm(x, norm, _mag(weight), _mag(bias), 1e-5),
                TF.layer_norm(t, norm, weight, bias, 1e-5),
                f"layer_norm {what} bias={bias is not None}",
            )


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16bit_input_with_float32_parameters(dtype: str) -> None:
    """torch's mixed mode: a 16-bit input normalised with float32 weight and bias gives the input's dtype."""
    t = torch.randn(6, 200).to(DTYPES[dtype])
    w, b = _params((200,), torch.float32, seed=5)
    x = _mag(t)
    _close(F.layer_norm(x, 200, _mag(w), _mag(b)), TF.layer_norm(t, (200,), w, b), "layer_norm mixed")
    _close(F.rms_norm(x, 200, _mag(w), 1e-5), TF.rms_norm(t.float(), (200,), w, 1e-5).to(t.dtype), "rms_norm mixed")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_rms_norm_rounded_is_transformers_llama_rmsnorm(dtype: str) -> None:
    """rms_norm_rounded rounds before the scale, as transformers' LlamaRMSNorm does; rms_norm rounds
    once (torch), which differs in the last bit of about a quarter of the values."""
    g = torch.Generator().manual_seed(3)
    t = torch.randn(9, 1000, generator=g).to(DTYPES[dtype])
    w = (torch.randn(1000, generator=g) * 0.5 + 1).to(t.dtype)
    h = t.float()
    want = w * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(t.dtype)  # modeling_llama.py
    rounded = torch.from_dlpack(F.rms_norm_rounded(_mag(t), 1000, _mag(w), 1e-6))
    once = torch.from_dlpack(F.rms_norm(_mag(t), 1000, _mag(w), 1e-6))
    # float32 sums in another order may flip a rounding tie now and then, never a quarter of them
    assert (rounded != want).float().mean() < 0.002
    assert (once != want).float().mean() > 0.1


def test_16bit_parameters_are_read_in_place() -> None:
    """A bfloat16 weight and bias go to the kernel as they are: one launch, no casts."""
    x, w, b = (mag.Tensor.ones(*s, dtype=mag.bfloat16) for s in ((2, 64), (64,), (64,)))
    g = mag.Graph()
    with mag.no_grad(), g.capture():
        F.layer_norm(x, 64, w, b)
    assert [p.op for p in g.profile(replays=1)] == ["layer_norm"]


def test_non_contiguous_operands_and_default_eps() -> None:
    t = torch.randn(50, 8, dtype=torch.float64)
    w = torch.randn(16, dtype=torch.float64)
    x = _mag(t).T  # (8, 50), rows strided
    wv = _mag(w)[::2]  # (8,), every other element
    _close(F.rms_norm(x, 50), TF.rms_norm(t.T, (50,)), "rms_norm, default eps = finfo(float64).eps")
    _close(F.layer_norm(x.T, (8,), wv), TF.layer_norm(t, (8,), w[::2]), "layer_norm with a strided weight")
    tiny = torch.zeros(2, 5)  # all zeros: only eps keeps the scale finite
    _close(F.rms_norm(_mag(tiny), 5), TF.rms_norm(tiny, (5,)), "rms_norm of zeros")


def test_empty_inputs() -> None:
    assert F.layer_norm(mag.Tensor.zeros(0, 4), 4).shape == (0, 4)
    assert F.rms_norm(mag.Tensor.zeros(3, 0), 0).shape == (3, 0)


def test_modules_match_torch() -> None:
    t = torch.randn(3, 5, 32)
    ln, rms = nn.LayerNorm(32), nn.RMSNorm(32, eps=1e-6)
    tln, trms = torch.nn.LayerNorm(32), torch.nn.RMSNorm(32, eps=1e-6)
    w, b = _params((32,), torch.float32, seed=9)
    with mag.no_grad():
        for m, tm in ((ln, tln), (rms, trms)):
            m.weight.copy_(_mag(w))
            tm.weight.data.copy_(w)
        ln.bias.copy_(_mag(b))
        tln.bias.data.copy_(b)
    x = _mag(t)
    _close(ln(x), tln(t).detach(), "nn.LayerNorm")
    _close(rms(x), trms(t).detach(), "nn.RMSNorm")


# ---- gradients (float64, against torch.autograd) ----
@pytest.mark.parametrize("shape,norm", [((4, 9), (9,)), ((2, 3, 40), (40,)), ((2, 3, 5), (3, 5))])
@pytest.mark.parametrize("with_weight", [False, True])
def test_rms_norm_grad(shape: tuple[int, ...], norm: tuple[int, ...], with_weight: bool) -> None:
    shapes = [shape, norm] if with_weight else [shape]
    check_grad(
        lambda x, *w: F.rms_norm(x, norm, w[0] if w else None, 1e-6),
        shapes,
        torch_fn=lambda x, *w: TF.rms_norm(x, norm, w[0] if w else None, 1e-6),
        transpose=True,
    )


@pytest.mark.parametrize("shape,norm", [((4, 9), (9,)), ((2, 3, 40), (40,)), ((2, 3, 5), (3, 5))])
@pytest.mark.parametrize("params", ["none", "weight", "bias", "both"])
def test_layer_norm_grad(shape: tuple[int, ...], norm: tuple[int, ...], params: str) -> None:
    hw, hb = params in ("weight", "both"), params in ("bias", "both")
    shapes = [shape] + [norm] * (hw + hb)

    def run(fn, x, *p):  # noqa: ANN001, ANN202
        return fn(x, norm, p[0] if hw else None, p[-1] if hb else None, 1e-5)

    check_grad(lambda *a: run(F.layer_norm, *a), shapes, torch_fn=lambda *a: run(TF.layer_norm, *a), transpose=True)


def test_16bit_grad_is_close_to_float32() -> None:
    t = torch.randn(4, 64)
    w = torch.randn(64)
    for dt in (mag.float16, mag.bfloat16):
        x = mag.Tensor.from_dlpack(t.clone()).cast(dt)
        x.requires_grad = True
        wm = mag.Tensor.from_dlpack(w.clone())
        wm.requires_grad = True
        F.layer_norm(x, 64, wm).sum().backward()
        tx, tw = t.clone().requires_grad_(True), w.clone().requires_grad_(True)
        TF.layer_norm(tx, (64,), tw).sum().backward()
        torch.testing.assert_close(torch.from_dlpack(x.grad).float(), tx.grad, rtol=0.05, atol=0.05)
        torch.testing.assert_close(torch.from_dlpack(wm.grad), tw.grad, rtol=0.05, atol=0.05)


# ---- bad arguments ----
def test_errors_name_the_op_shapes_and_dtypes() -> None:
    x = mag.Tensor.zeros(2, 3)
    with pytest.raises(ValueError, match=r"rms_norm: normalized_shape \(4,\) does not match .*\(2, 3\)"):
        F.rms_norm(x, 4)
    with pytest.raises(ValueError, match=r"layer_norm: normalized_shape \(\) does not match"):
        F.layer_norm(x, ())
    with pytest.raises(ValueError, match=r"layer_norm: normalized_shape \(1, 2, 3\)"):
        F.layer_norm(x, (1, 2, 3))
    with pytest.raises(
        ValueError,
        match=r"layer_norm: weight of shape \(2,\) does not match normalized_shape \(3,\) "
        r"of the input of shape \(2, 3\)",
    ):
        F.layer_norm(x, 3, mag.Tensor.ones(2))
    with pytest.raises(ValueError, match=r"rms_norm: weight of shape \(1, 3\)"):
        F.rms_norm(x, 3, mag.Tensor.ones(1, 3))
    with pytest.raises(TypeError, match=r"layer_norm: bias dtype float64 does not match the input dtype float32"):
        F.layer_norm(x, 3, None, mag.Tensor.ones(3, dtype=mag.float64))
    with pytest.raises(TypeError, match=r"rms_norm: weight dtype float32 does not match the input dtype float64"):
        F.rms_norm(x.cast(mag.float64), 3, mag.Tensor.ones(3))
    with pytest.raises(TypeError, match=r"rms_norm: expected a floating-point input, got int32 \(shape \(2, 3\)\)"):
        F.rms_norm(x.cast(mag.int32), 3)
    with pytest.raises(TypeError, match=r"layer_norm: weight dtype float16 does not match the input dtype bfloat16"):
        F.layer_norm(x.cast(mag.bfloat16), 3, mag.Tensor.ones(3, dtype=mag.float16))
    op = {r["name"]: r["id"] for r in mag._C.op_table()}
    with pytest.raises(ValueError, match="rms_norm: takes no bias"):
        mag._C._op(op["rms_norm"], [x, mag.Tensor.ones(3)], [1, 1e-6, False, True, False])
    with pytest.raises(ValueError, match=r"layer_norm: expected 2 inputs \(x, weight\), got 1"):
        mag._C._op(op["layer_norm"], [x], [1, 1e-6, True, False, False])
    with pytest.raises(ValueError, match="layer_norm: normalized_shape must name 1 to 2 trailing dims"):
        mag._C._op(op["layer_norm"], [x], [3, 1e-6, False, False, False])
