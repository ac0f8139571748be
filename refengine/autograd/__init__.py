"""refengine.autograd: reverse-mode (backward, grad), forward-mode, custom Functions."""
from . import forward_ad, graph
from .api import backward, grad
from .function import Function, FunctionCtx, once_differentiable
from . import function
from . import functional
from .. import grad_mode
from ..grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable",
           "forward_ad", "graph", "function", "functional", "grad_mode", "no_grad",
           "enable_grad", "set_grad_enabled", "inference_mode"]
