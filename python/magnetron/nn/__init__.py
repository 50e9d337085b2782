"""``magnetron.nn``: modules, layers, losses, initialisers and ``functional``."""

from . import functional, init
from .containers import ModuleDict, ModuleList, Sequential
from .layers import (
    GELU,
    Dropout,
    Embedding,
    Flatten,
    HardSigmoid,
    Identity,
    LayerNorm,
    Linear,
    ReLU,
    RMSNorm,
    Sigmoid,
    SiLU,
    Softmax,
    Tanh,
)
from .losses import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, MSELoss
from .module import Module, Parameter

__all__ = [
    "functional",
    "init",
    "Module",
    "Parameter",
    "Sequential",
    "ModuleList",
    "ModuleDict",
    "Identity",
    "Linear",
    "Embedding",
    "LayerNorm",
    "RMSNorm",
    "Dropout",
    "Flatten",
    "ReLU",
    "Tanh",
    "Sigmoid",
    "HardSigmoid",
    "SiLU",
    "GELU",
    "Softmax",
    "MSELoss",
    "CrossEntropyLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
]
