"""refengine.autograd: reverse-mode (backward, grad), forward-mode, custom Functions."""
from . import forward_ad, graph
from .api import backward, grad
from .function import Function, FunctionCtx, once_differentiable
from . import function
from . import functional

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable",
           "forward_ad", "graph", "function", "functional"]
