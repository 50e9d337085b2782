"""``nn.Module`` and ``nn.Parameter`` with PyTorch's semantics (names, recursion, state_dict keys)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from .. import dtype as _dt
from .._grad_mode import no_grad
from .._tensor import Tensor


class Parameter(Tensor):
    """A tensor that a Module registers as a trainable parameter (shares storage with ``data``)."""

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        super().__init__(data if data is not None else Tensor.empty(0))
        self.requires_grad = requires_grad

    def __repr__(self) -> str:
        return "Parameter containing:\n" + Tensor.__repr__(self)


class IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]


class Module:
    """Base class of every layer: holds parameters, buffers and submodules in insertion order."""

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())

    # ---- attribute registration ----
    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign attributes before Module.__init__() is called")
        if isinstance(value, (Parameter, Module)):
            for d in (self._parameters, self._buffers, self._modules):
                d.pop(name, None)
            self.__dict__.pop(name, None)
            (self._parameters if isinstance(value, Parameter) else self._modules)[name] = value
        elif name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign {type(value).__name__} as buffer '{name}' (a Tensor or None is required)"
                )
            self._buffers[name] = value
        elif name in self._parameters or name in self._modules:
            if value is not None:
                kind = "parameter" if name in self._parameters else "child module"
                raise TypeError(f"cannot assign {type(value).__name__} as {kind} '{name}'")
            (self._parameters if name in self._parameters else self._modules)[name] = None
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for d in (self._parameters, self._buffers, self._modules):
            if name in d:
                del d[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if param is None:
            self._parameters[name] = None
        else:
            setattr(self, name, param)

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        if "." in name or not name:
            raise KeyError(f"register_buffer: invalid buffer name {name!r}")
        self.__dict__.pop(name, None)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        self._modules[name] = module

    # ---- traversal ----
    def named_modules(self, memo: set[int] | None = None, prefix: str = "") -> Iterator[tuple[str, Module]]:
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        for name, m in self._modules.items():
            if m is not None:
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def _named_members(self, store: str, prefix: str, recurse: bool) -> Iterator[tuple[str, Tensor]]:
        seen: set[int] = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mod_prefix, m in mods:
            for name, t in getattr(m, store).items():
                if t is None or id(t) in seen:
                    continue
                seen.add(id(t))
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), t

    def named_parameters(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Parameter]]:
        yield from self._named_members("_parameters", prefix, recurse)  # type: ignore[misc]

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members("_buffers", prefix, recurse)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- state ----
    def state_dict(self, prefix: str = "", keep_vars: bool = False) -> OrderedDict[str, Tensor]:
        """Parameters and persistent buffers under PyTorch's dotted names."""
        out: OrderedDict[str, Tensor] = OrderedDict()
        for mod_prefix, m in self.named_modules(prefix=prefix.rstrip(".")):
            p = f"{mod_prefix}." if mod_prefix else ""
            for name, t in m._parameters.items():
                if t is not None:
                    out[p + name] = t if keep_vars else t.detach()
            for name, t in m._buffers.items():
                if t is not None and name not in m._non_persistent:
                    out[p + name] = t if keep_vars else t.detach()
        return out

    def load_state_dict(
        self, state_dict: Mapping[str, Tensor], strict: bool = True, assign: bool = False
    ) -> IncompatibleKeys:
        """Copy (or with ``assign=True``, adopt) tensors by name. Read-only (memory-mapped) sources are
        adopted without copying. Shape mismatches and dtype-category mismatches raise, naming the key."""
        expected: dict[str, tuple[Module, str, bool]] = {}
        for mod_prefix, m in self.named_modules():
            p = f"{mod_prefix}." if mod_prefix else ""
            for name, t in m._parameters.items():
                if t is not None:
                    expected[p + name] = (m, name, True)
            for name, t in m._buffers.items():
                if t is not None and name not in m._non_persistent:
                    expected[p + name] = (m, name, False)
        missing = [k for k in expected if k not in state_dict]
        unexpected = [k for k in state_dict if k not in expected]
        errors = []
        if strict and (missing or unexpected):
            errors.append(f"missing keys: {missing}, unexpected keys: {unexpected}")
        for key, (m, name, is_param) in expected.items():
            if key not in state_dict:
                continue
            src = state_dict[key]
            if not isinstance(src, Tensor):
                src = Tensor(src)
            dst = (m._parameters if is_param else m._buffers)[name]
            if src.shape != dst.shape:
                errors.append(f"{key}: shape {src.shape} in the state dict, {dst.shape} in the module")
                continue
            if src.dtype.is_floating_point != dst.dtype.is_floating_point:
                errors.append(f"{key}: dtype {src.dtype} in the state dict cannot be loaded into {dst.dtype}")
                continue
            if assign or src.is_read_only:
                new = Parameter(src, requires_grad=dst.requires_grad) if is_param else src
                (m._parameters if is_param else m._buffers)[name] = new
            else:
                with no_grad():
                    dst.copy_(src)
        if errors:
            raise RuntimeError(f"load_state_dict for {type(self).__name__}: " + "; ".join(errors))
        return IncompatibleKeys(missing, unexpected)

    # ---- modes and conversions ----
    def train(self, mode: bool = True) -> Module:
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def apply(self, fn: Callable[[Module], None]) -> Module:
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def cast(self, dtype: _dt.DType) -> Module:
        """Convert floating-point parameters and buffers to ``dtype`` (in place on the module)."""
        for m in self.modules():
            for name, p in m._parameters.items():
                if p is not None and p.dtype.is_floating_point:
                    m._parameters[name] = Parameter(p.detach().cast(dtype), requires_grad=p.requires_grad)
            for name, b in m._buffers.items():
                if b is not None and b.dtype.is_floating_point:
                    m._buffers[name] = b.cast(dtype)
        return self

    def to(self, target: _dt.DType | str) -> Module:
        if isinstance(target, _dt.DType):
            return self.cast(target)
        if target != "cpu":
            raise ValueError(f"to: device {target!r} is not available")
        return self

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            p.grad = None

    # ---- calling ----
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = []
        for name, m in self._modules.items():
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        head = f"{type(self).__name__}(" + (f"{extra}" if extra else "")
        return head + "\n  " + "\n  ".join(lines) + "\n)"
