"""refengine.nn: ``Parameter``, ``Module`` and layers, with PyTorch's semantics.

>>> net = refengine.nn.Sequential(refengine.nn.Linear(3, 2), refengine.nn.Dropout(0.1))
>>> [name for name, _ in net.named_parameters()]
['0.weight', '0.bias']
"""
from . import functional
from .module import (
    Module,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
)
from .modules import Dropout, Linear, Sequential
from .parameter import Parameter
from .stateless import functional_call

__all__ = [
    "Dropout",
    "Linear",
    "Module",
    "Parameter",
    "Sequential",
    "functional",
    "functional_call",
    "register_module_full_backward_hook",
    "register_module_full_backward_pre_hook",
]
