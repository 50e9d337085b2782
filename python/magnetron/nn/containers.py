"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict`` (PyTorch's semantics and key names)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .module import Module


class Sequential(Module):
    """Calls its modules in order; keys are "0", "1", ... (or the names of an OrderedDict)."""

    def __init__(self, *modules: Module | OrderedDict[str, Module]) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)  # type: ignore[arg-type]

    def forward(self, x: Any) -> Any:
        for m in self._modules.values():
            x = m(x)
        return x

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, idx: int | slice) -> Any:
        items = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(OrderedDict(items[idx]))
        return items[idx][1]


class ModuleList(Module):
    """A list of modules registered under "0", "1", ..."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _reindex(self, mods: list[Module]) -> None:
        self._modules.clear()
        for i, m in enumerate(mods):
            self._modules[str(i)] = m

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._reindex(mods)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, idx: int | slice) -> Any:
        mods = list(self._modules.values())
        return ModuleList(mods[idx]) if isinstance(idx, slice) else mods[idx]

    def __setitem__(self, idx: int, module: Module) -> None:
        self._modules[str(range(len(self))[idx])] = module

    def __delitem__(self, idx: int | slice) -> None:
        mods = list(self._modules.values())
        del mods[idx]
        self._reindex(mods)


class ModuleDict(Module):
    """A dict of modules, registered under their keys."""

    def __init__(self, modules: Mapping[str, Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def update(self, modules: Mapping[str, Module]) -> None:
        for k, m in modules.items():
            self[k] = m

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def values(self) -> Iterable[Module]:
        return self._modules.values()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()
