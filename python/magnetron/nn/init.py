"""Parameter initialisers (PyTorch's formulas; every function fills in place, without recording gradients,
and returns the tensor)."""

from __future__ import annotations

import math

from .._grad_mode import no_grad
from .._tensor import Tensor


def _fans(t: Tensor) -> tuple[int, int]:
    if t.rank < 2:
        raise ValueError(f"fan in/out need a tensor of rank >= 2, got shape {t.shape}")
    receptive = math.prod(t.shape[2:])
    return t.shape[1] * receptive, t.shape[0] * receptive


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    if nonlinearity in ("linear", "conv1d", "conv2d", "sigmoid"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


@no_grad()
def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    return t.uniform_(a, b)


@no_grad()
def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    return t.normal_(mean, std)


@no_grad()
def zeros_(t: Tensor) -> Tensor:
    return t.fill_(0)


@no_grad()
def ones_(t: Tensor) -> Tensor:
    return t.fill_(1)


@no_grad()
def constant_(t: Tensor, value: float) -> Tensor:
    return t.fill_(value)


@no_grad()
def kaiming_uniform_(t: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
    fan_in, fan_out = _fans(t)
    fan = fan_in if mode == "fan_in" else fan_out
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / fan) if fan else 0.0
    return t.uniform_(-bound, bound)


@no_grad()
def kaiming_normal_(t: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
    fan_in, fan_out = _fans(t)
    fan = fan_in if mode == "fan_in" else fan_out
    return t.normal_(0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan) if fan else 0.0)


@no_grad()
def xavier_uniform_(t: Tensor, gain: float = 1.0) -> Tensor:
    fan_in, fan_out = _fans(t)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return t.uniform_(-bound, bound)


@no_grad()
def xavier_normal_(t: Tensor, gain: float = 1.0) -> Tensor:
    fan_in, fan_out = _fans(t)
    return t.normal_(0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


@no_grad()
def default_linear_(weight: Tensor, bias: Tensor | None) -> None:
    """nn.Linear / conv layers: kaiming_uniform_(a=sqrt(5)) weights, uniform(+-1/sqrt(fan_in)) bias."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = _fans(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        bias.uniform_(-bound, bound)
