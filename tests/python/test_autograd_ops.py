"""Every differentiable op: forward and backward against torch.autograd (float64), including broadcast
and non-contiguous inputs; plus float64 finite differences where torch has no matching op."""

from __future__ import annotations

import magnetron as mag
import numpy as np
import pytest
import torch
from autograd_helpers import check_grad

# name -> (low, high) input domain where the op is smooth
UNARY = {
    "abs": (0.2, 2),
    "neg": (-2, 2),
    "sqr": (-2, 2),
    "rcp": (0.5, 2),
    "sqrt": (0.5, 2),
    "rsqrt": (0.5, 2),
    "log": (0.5, 2),
    "log2": (0.5, 2),
    "log10": (0.5, 2),
    "log1p": (0.5, 2),
    "exp": (-2, 2),
    "exp2": (-2, 2),
    "expm1": (-2, 2),
    "sin": (-2, 2),
    "cos": (-2, 2),
    "tan": (-1, 1),
    "asin": (-0.8, 0.8),
    "acos": (-0.8, 0.8),
    "atan": (-2, 2),
    "sinh": (-2, 2),
    "cosh": (-2, 2),
    "tanh": (-2, 2),
    "asinh": (-2, 2),
    "acosh": (1.5, 3),
    "atanh": (-0.8, 0.8),
    "erf": (-2, 2),
    "erfc": (-2, 2),
    "sigmoid": (-2, 2),
    "silu": (-2, 2),
    "relu": (0.1, 2),
    "gelu": (-2, 2),
}
TORCH_NAMES = {
    "sqr": lambda t: t * t,
    "gelu": torch.nn.functional.gelu,
    "silu": torch.nn.functional.silu,
    "relu": torch.relu,
    "rcp": torch.reciprocal,
    "gelu_approx": lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
    "hard_sigmoid": torch.nn.functional.hardsigmoid,
}


def _torch_unary(name: str):
    return TORCH_NAMES.get(name) or getattr(torch, name)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name: str) -> None:
    low, high = UNARY[name]
    check_grad(lambda a: getattr(a, name)(), [(3, 4)], torch_fn=_torch_unary(name), low=low, high=high, transpose=True)


@pytest.mark.parametrize("name", ["gelu_approx", "hard_sigmoid"])
def test_unary_special(name: str) -> None:
    check_grad(lambda a: getattr(a, name)(), [(3, 4)], torch_fn=_torch_unary(name), low=-2.5, high=2.5)


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "trunc", "sgn"])
def test_piecewise_constant_have_zero_grad(name: str) -> None:
    torch_fn = torch.sign if name == "sgn" else getattr(torch, name)
    check_grad(lambda a: getattr(a, name)(), [(3, 4)], torch_fn=torch_fn)


BINARY = {
    "add": (-2, 2),
    "sub": (-2, 2),
    "mul": (-2, 2),
    "div": (0.5, 2),
    "pow": (0.5, 2),
    "maximum": (-2, 2),
    "minimum": (-2, 2),
}


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1))])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name: str, shapes: tuple) -> None:
    low, high = BINARY[name]
    check_grad(lambda a, b: getattr(a, name)(b), shapes, low=low, high=high)


def test_mod() -> None:
    check_grad(lambda a, b: a % b, [(3, 4), (3, 4)], torch_fn=torch.remainder, low=0.5, high=3.0)


def test_clamp() -> None:
    check_grad(lambda a: a.clamp(min=-0.5, max=0.7), [(4, 5)])
    check_grad(lambda a: a.clamp(min=-0.5), [(4, 5)])


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 2), -1])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name", ["sum", "mean", "var", "std", "logsumexp", "prod", "amax"])
def test_reductions(name: str, dim, keepdim: bool) -> None:
    if dim is None and name in ("logsumexp",):
        pytest.skip("torch.logsumexp needs dims")
    if isinstance(dim, tuple) and name == "prod":
        pytest.skip("torch.prod takes one dim")
    if name == "amax":  # magnetron's max with dims gives the values, like torch.amax
        mag_fn = (lambda a: a.max(dim=dim, keepdim=keepdim)) if dim is not None else (lambda a: a.max())
        torch_fn = (lambda t: t.amax(dim=dim, keepdim=keepdim)) if dim is not None else (lambda t: t.max())
    else:
        kw = {} if dim is None else {"dim": dim, "keepdim": keepdim}
        mag_fn = lambda a: getattr(a, name)(**kw)  # noqa: E731
        torch_fn = lambda t: getattr(t, name)(**kw)  # noqa: E731
    if dim is None and keepdim:
        pytest.skip("keepdim needs dims")
    check_grad(mag_fn, [(2, 3, 4)], torch_fn=torch_fn, low=0.5, high=2.0)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_family(dim: int) -> None:
    check_grad(lambda a: a.softmax(dim), [(3, 4)], transpose=True)
    check_grad(lambda a: a.log_softmax(dim), [(3, 4)], transpose=True)
    check_grad(lambda a: a.cumsum(dim), [(3, 4)], transpose=True)


def test_topk_values() -> None:
    check_grad(lambda a: a.topk(2, dim=-1)[0], [(3, 5)], torch_fn=lambda t: t.topk(2, dim=-1)[0])


def test_matmul_all_ranks() -> None:
    for shapes in [
        ((3, 4), (4, 5)),
        ((4,), (4, 5)),
        ((3, 4), (4,)),
        ((4,), (4,)),
        ((2, 3, 4), (4, 5)),
        ((2, 1, 3, 4), (5, 4, 2)),
        ((3, 4), (2, 4, 5)),
    ]:
        check_grad(lambda a, b: a @ b, shapes)
    check_grad(lambda a, b: a @ b, [(3, 4), (4, 5)], transpose=True)


def test_structure_ops() -> None:
    idx = mag.Tensor([[0, 2], [1, 1], [3, 0]])
    t_idx = torch.tensor([[0, 2], [1, 1], [3, 0]])
    check_grad(lambda a: a.gather(1, idx), [(3, 4)], torch_fn=lambda t: t.gather(1, t_idx))
    sel = mag.Tensor([2, 0, 2])
    check_grad(
        lambda a: a.index_select(1, sel), [(3, 4)], torch_fn=lambda t: t.index_select(1, torch.tensor([2, 0, 2]))
    )
    mask = mag.Tensor([[True, False, True, False]])
    check_grad(
        lambda a: a.masked_fill(mask, 0.5),
        [(3, 4)],
        torch_fn=lambda t: t.masked_fill(torch.tensor([[True, False, True, False]]), 0.5),
    )
    cond = mag.Tensor([[True], [False], [True]])
    check_grad(
        lambda a, b: mag.Tensor.where(cond, a, b),
        [(3, 4), (4,)],
        torch_fn=lambda a, b: torch.where(torch.tensor([[True], [False], [True]]), a, b),
    )
    check_grad(lambda a: a.tril(1), [(4, 4)])
    check_grad(lambda a: a.triu(-1), [(2, 4, 4)])
    check_grad(lambda a: a.repeat(2, 1, 3), [(3, 4)])
    check_grad(lambda a, b: mag.Tensor.cat([a, b], dim=1), [(3, 4), (3, 2)], torch_fn=lambda a, b: torch.cat([a, b], 1))
    check_grad(
        lambda a, b: mag.Tensor.stack([a, b], dim=1), [(3, 4), (3, 4)], torch_fn=lambda a, b: torch.stack([a, b], 1)
    )


def test_float64_finite_differences() -> None:
    """Central differences on a composite of many ops (independent of torch)."""
    rng = np.random.default_rng(1)
    data = rng.uniform(0.5, 1.5, size=(3, 4))

    def f(t: mag.Tensor) -> mag.Tensor:
        return ((t.softmax(-1) @ t.T).tanh() * t[:, :3].sum(dim=1, keepdim=True)).logsumexp(dim=0).sum()

    x = mag.Tensor(data, dtype=mag.float64, requires_grad=True)
    f(x).backward()
    eps = 1e-6
    for i in range(3):
        for j in range(4):
            p, m = data.copy(), data.copy()
            p[i, j] += eps
            m[i, j] -= eps
            num = (f(mag.Tensor(p, dtype=mag.float64)).item() - f(mag.Tensor(m, dtype=mag.float64)).item()) / (2 * eps)
            assert abs(x.grad.tolist()[i][j] - num) < 1e-6
