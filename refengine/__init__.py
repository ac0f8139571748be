"""refengine: a reference autograd engine on NumPy with PyTorch's documented semantics.

>>> import adcheck.refengine as E
>>> x = E.tensor([1., 2.], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad
tensor([2., 4.])
"""
if not __name__.startswith("adcheck."):     # the checkout's folder, imported by its short name
    raise ImportError(f"import adcheck.{__name__}, not {__name__}: adcheck's packages live "
                      "under the name 'adcheck' (see the README)")
# ruff: noqa: F401  (this module re-exports the public API)
from .creation import (arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like,
                       linspace, manual_seed, ones, ones_like, rand, randint, randn, tensor,
                       zeros, zeros_like)
from .dtypes import (bool_ as bool, complex64, complex128, dtype, float32, float64,
                     get_default_dtype, int32, int64, set_default_dtype)
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                        no_grad, set_grad_enabled)
from .tensor import Size, Tensor
from .version import __version__
from . import autograd
from .ops import FUNCTIONS as _FUNCTIONS
from .comparison import allclose, equal, is_tensor

globals().update(_FUNCTIONS)
cfloat, cdouble, double, long = complex64, complex128, float64, int64
float, int = float32, int32  # noqa: A001  (PyTorch's aliases: torch.float, torch.int)
from . import linalg  # noqa: E402
from . import nn  # noqa: E402  (after the ops: nn builds on them)
from .batching import vmap  # noqa: E402
