"""Learning-rate schedulers: set ``group["lr"]`` from the epoch count (PyTorch's closed forms)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .optimizer import Optimizer


class LRScheduler:
    def __init__(self, optimizer: Optimizer) -> None:
        self.optimizer = optimizer
        for g in optimizer.param_groups:
            g.setdefault("initial_lr", g["lr"])
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = 0
        self._apply()

    def lr_at(self, base_lr: float, epoch: int) -> float:
        raise NotImplementedError

    def _apply(self) -> None:
        for g, base in zip(self.optimizer.param_groups, self.base_lrs):
            g["lr"] = self.lr_at(base, self.last_epoch)

    def step(self) -> None:
        self.last_epoch += 1
        self._apply()

    def get_last_lr(self) -> list[float]:
        return [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


class StepLR(LRScheduler):
    """lr * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1) -> None:
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        return base_lr * self.gamma ** (epoch // self.step_size)


class ExponentialLR(LRScheduler):
    def __init__(self, optimizer: Optimizer, gamma: float) -> None:
        self.gamma = gamma
        super().__init__(optimizer)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        return base_lr * self.gamma**epoch


class CosineAnnealingLR(LRScheduler):
    """eta_min + (lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0) -> None:  # noqa: N803 (PyTorch's name)
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        return self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * epoch / self.T_max)) / 2


class LinearLR(LRScheduler):
    """Scale the lr linearly from start_factor to end_factor over total_iters epochs, then hold."""

    def __init__(
        self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0, total_iters: int = 5
    ) -> None:
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        t = min(epoch, self.total_iters) / self.total_iters if self.total_iters else 1.0
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * t)


class LinearWarmup(LinearLR):
    """Warm up from ~0 to the base lr over warmup_steps, then hold it."""

    def __init__(self, optimizer: Optimizer, warmup_steps: int) -> None:
        super().__init__(optimizer, start_factor=1.0 / (warmup_steps + 1), end_factor=1.0, total_iters=warmup_steps)


class LambdaLR(LRScheduler):
    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float]) -> None:
        self.lr_lambda = lr_lambda
        super().__init__(optimizer)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        return base_lr * self.lr_lambda(epoch)
