"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay (PyTorch's update)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._grad_mode import no_grad
from .._tensor import Tensor
from .optimizer import Optimizer


class SGD(Optimizer):
    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        maximize: bool = False,
    ) -> None:
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError(f"SGD: lr, momentum and weight_decay must be >= 0 (got {lr}, {momentum}, {weight_decay})")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: nesterov needs momentum > 0 and zero dampening")
        super().__init__(
            params,
            dict(
                lr=lr,
                momentum=momentum,
                dampening=dampening,
                weight_decay=weight_decay,
                nesterov=nesterov,
                maximize=maximize,
            ),
        )

    @no_grad()
    def step(self) -> None:
        for g, p, grad, state in self._params_with_grad():
            if g["maximize"]:
                grad = -grad
            if g["weight_decay"]:
                grad = grad + p * g["weight_decay"]
            if g["momentum"]:
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = state["momentum_buffer"] = grad.clone()
                else:
                    buf.mul_(g["momentum"]).add_(grad * (1.0 - g["dampening"]))
                grad = grad + buf * g["momentum"] if g["nesterov"] else buf
            p.sub_(grad * g["lr"])
