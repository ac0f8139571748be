"""refengine.nn: ``Parameter``, ``Module`` and layers, with PyTorch's semantics.

>>> net = refengine.nn.Sequential(refengine.nn.Linear(3, 2), refengine.nn.Dropout(0.1))
>>> [name for name, _ in net.named_parameters()]
['0.weight', '0.bias']
"""
from .module import (Module, register_module_full_backward_hook,
                     register_module_full_backward_pre_hook)
from .modules import Dropout, Linear, Sequential
from .parameter import Parameter

try:  # written in parallel with this package; the layers work without it
    from . import functional
except ImportError:
    pass

__all__ = ["Module", "Parameter", "Linear", "Dropout", "Sequential",
           "register_module_full_backward_hook", "register_module_full_backward_pre_hook"]
