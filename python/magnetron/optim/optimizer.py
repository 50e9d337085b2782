"""The ``Optimizer`` base: parameter groups, per-parameter state, ``zero_grad`` and ``state_dict``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._tensor import Tensor


class Optimizer:
    """Holds param_groups (dicts with "params" and hyper-parameters) and per-parameter state."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.param_groups: list[dict[str, Any]] = []
        self.state: dict[int, dict[str, Any]] = {}  # keyed by id(param)
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group: dict[str, Any]) -> None:
        group = dict(group)
        group["params"] = list(group["params"])
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"{type(self).__name__}: parameters must be Tensors, got {type(p).__name__}")
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for g in self.param_groups:
            for p in g["params"]:
                p.grad = None

    def step(self) -> None:
        raise NotImplementedError

    def _params_with_grad(self) -> Iterable[tuple[dict[str, Any], Tensor, Tensor, dict[str, Any]]]:
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    yield g, p, p.grad, self.state.setdefault(id(p), {})

    def state_dict(self) -> dict[str, Any]:
        """PyTorch's layout: parameters are numbered across groups in order."""
        index: dict[int, int] = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = [index.setdefault(id(p), len(index)) for p in g["params"]]
            groups.append(packed)
        state = {
            index[pid]: {k: (v.clone() if isinstance(v, Tensor) else v) for k, v in s.items()}
            for pid, s in self.state.items()
            if pid in index
        }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups) or any(
            len(a["params"]) != len(b["params"]) for a, b in zip(groups, self.param_groups)
        ):
            raise ValueError("load_state_dict: the saved parameter groups do not match this optimizer's")
        params = [p for g in self.param_groups for p in g["params"]]
        for saved, g in zip(groups, self.param_groups):
            g.update({k: v for k, v in saved.items() if k != "params"})
        self.state = {
            id(params[i]): {k: (v.clone() if isinstance(v, Tensor) else v) for k, v in s.items()}
            for i, s in state_dict["state"].items()
        }
