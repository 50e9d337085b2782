"""Adam and AdamW (PyTorch's single-tensor update order, so results match step for step)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from .._grad_mode import no_grad
from .._tensor import Tensor
from .optimizer import Optimizer


class Adam(Optimizer):
    decoupled_weight_decay = False

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        maximize: bool = False,
    ) -> None:
        if lr < 0 or eps < 0 or weight_decay < 0 or not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(
                f"{type(self).__name__}: invalid hyper-parameters lr={lr}, betas={betas}, eps={eps}, "
                f"weight_decay={weight_decay}"
            )
        super().__init__(
            params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize)
        )

    @no_grad()
    def step(self) -> None:
        for g, p, grad, state in self._params_with_grad():
            if g["maximize"]:
                grad = -grad
            beta1, beta2 = g["betas"]
            lr, wd = g["lr"], g["weight_decay"]
            if not state:
                state["step"] = 0
                state["exp_avg"] = Tensor.zeros_like(p)
                state["exp_avg_sq"] = Tensor.zeros_like(p)
                if g["amsgrad"]:
                    state["max_exp_avg_sq"] = Tensor.zeros_like(p)
            state["step"] += 1
            t = state["step"]
            if wd:
                if self.decoupled_weight_decay:
                    p.mul_(1.0 - lr * wd)
                else:
                    grad = grad + p * wd
            m, v = state["exp_avg"], state["exp_avg_sq"]
            m.add_((grad - m) * (1.0 - beta1))  # PyTorch's lerp_
            v.mul_(beta2).add_(grad * (1.0 - beta2) * grad)  # addcmul_ order
            step_size = lr / (1.0 - beta1**t)
            bias_correction2_sqrt = math.sqrt(1.0 - beta2**t)
            if g["amsgrad"]:
                state["max_exp_avg_sq"] = state["max_exp_avg_sq"].maximum(v)
                v = state["max_exp_avg_sq"]
            denom = v.sqrt() / bias_correction2_sqrt + g["eps"]
            p.sub_(m / denom * step_size)


class AdamW(Adam):
    """Adam with decoupled weight decay (default 1e-2, as in PyTorch)."""

    decoupled_weight_decay = True

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        maximize: bool = False,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize)
