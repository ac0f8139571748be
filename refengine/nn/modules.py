"""Layers: ``Linear``, ``Dropout``, ``Sequential``."""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from .. import creation, dtypes
from ..grad_mode import no_grad
from ..tensor import Tensor
from . import functional as F
from .module import Module
from .parameter import Parameter


def _uniform(shape: tuple, bound: float, dtype) -> Tensor:
    """U(-bound, bound) samples from refengine's generator (``manual_seed`` applies)."""
    dtype = dtype or dtypes.get_default_dtype()
    values = creation._generator().uniform(-bound, bound, size=shape)
    return creation.tensor(np.asarray(values), dtype=dtype)


class Linear(Module):
    """``y = x @ weight.T + bias``, with ``weight`` of shape (out_features, in_features).

    Initialised as PyTorch does: weight and bias uniform in
    ``(-1/sqrt(in_features), 1/sqrt(in_features))`` (Kaiming-uniform with a = sqrt(5)).

    >>> lin = Linear(3, 2)
    >>> lin(refengine.ones(4, 3)).shape
    refengine.Size([4, 2])
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        bound = 1 / math.sqrt(in_features) if in_features > 0 else 0.0
        with no_grad():
            self.weight = Parameter(_uniform((out_features, in_features), bound, dtype))
            if bias:
                self.bias = Parameter(_uniform((out_features,), bound, dtype))
            else:
                self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Dropout(Module):
    """In training mode, zero each element with probability ``p`` and scale the rest by
    ``1/(1-p)``; in evaluation mode, return the input unchanged.

    >>> drop = Dropout(0.5).eval()
    >>> x = refengine.ones(4)
    >>> drop(x) is x
    True
    """

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Sequential(Module):
    """Modules applied one after another; children are named "0", "1", ...

    >>> net = Sequential(Linear(2, 3), Dropout(0.1))
    >>> [n for n, _ in net.named_parameters()]
    ['0.weight', '0.bias']
    """

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(modules):
                self.add_module(str(i), module)

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, idx):
        items = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(OrderedDict(items[idx]))
        if not -len(items) <= idx < len(items):
            raise IndexError(f"index {idx} is out of range")
        return items[idx][1]

    def append(self, module: Module) -> Sequential:
        """Add ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self
