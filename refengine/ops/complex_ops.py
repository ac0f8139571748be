"""Complex parts and conjugation: conj real imag angle view_as_real view_as_complex.
None of these is holomorphic, so each has its rules written out."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..batching.batched import NotBatchable
from ..batching.rules import elementwise, trailing
from .dispatch import call
from .opdef import OPS, defop, deflinear, public


def zeros_like(t):
    """The zero derivative of a real input, with no graph (as PyTorch's zeros_like)."""
    from ..creation import zeros_like as zeros
    return zeros(t)



def _last_dim(c):
    # a 0-d example has no last dim of size 2: the batch dim must not pass for one
    if c.rank("self") == 0:
        raise NotBatchable("view_as_complex of a 0-d tensor")
    return trailing(c)


# conj is linear over the reals; on a real tensor it returns the tensor itself.
deflinear("conj_op", lambda self: np.conj(self), vjp={"self": lambda grad: grad.conj()},
          node="ConjBackward0", method=None, function=False, batch=elementwise)
deflinear("conj_physical", lambda self: np.conj(self), vjp={"self": lambda grad: grad.conj()},
          inplace=True, batch=elementwise)
# torch takes .real and .imag as select(-1, k) of view_as_real: their nodes (and the
# view errors that name them) say SelectBackward0
deflinear("real_op", lambda self: self.real, vjp={"self": lambda grad: grad},
          view=True, node="SelectBackward0", method=None, function=False, batch=elementwise)
deflinear("imag_op", lambda self: self.imag, vjp={"self": lambda grad: grad * 1j},
          view=True, node="SelectBackward0", method=None, function=False, batch=elementwise)
# the pair of parts is a new (or a removed) trailing dim: leading dims pass through
deflinear("view_as_real", lambda self: _as_real(self), vjp={"self": lambda grad: grad.view_as_complex()},
          view=True, node="ViewAsRealBackward0", batch=trailing)
deflinear("view_as_complex", lambda self: _as_complex(self), vjp={"self": lambda grad: grad.view_as_real()},
          view=True, node="ViewAsComplexBackward0", batch=_last_dim)


def _as_real(self):
    if not np.iscomplexobj(self):
        raise RuntimeError("view_as_real is only supported for complex tensors")
    # a new trailing axis of size 1 is contiguous, so the dtype view works for any shape
    return self[..., np.newaxis].view(self.real.dtype)


def _as_complex(self):
    if self.shape[-1:] != (2,) or self.dtype not in (np.float32, np.float64):
        raise RuntimeError("Tensor must have a last dimension of size 2 and a float dtype")
    return np.ascontiguousarray(self).view(np.complex64 if self.dtype == np.float32
                                           else np.complex128).reshape(self.shape[:-1])


# angle: d angle = Im(dz / z); vjp grad * i z / |z|^2, and 0 at z = 0 and for reals.
defop("angle", lambda self: np.angle(self) if np.iscomplexobj(self)
      else np.where(np.isnan(self), self, np.where(self < 0, np.pi, 0.0)).astype(self.dtype)
      if self.dtype.kind == "f"
      else np.where(self < 0, np.pi, 0.0).astype(np.float32),
      vjp={"self": lambda grad, self: (grad * self * 1j / (self * self.conj()).real.masked_fill(
          self == 0, 1)).masked_fill(self == 0, 0) if self.is_complex() else zeros_like(grad)},
      jvp=lambda self_t, self: ((self_t * self.conj()).imag / (self * self.conj()).real.masked_fill(
          self == 0, 1)).masked_fill(self == 0, 0) if self.is_complex() else zeros_like(self_t),
      promote=("self",), batch=elementwise,
      # an integer's angle is a float of the default dtype, as in PyTorch
      result_dtype=lambda dt: dtypes.to_real(dt) if dt.is_floating_point or dt.is_complex
      else dtypes.get_default_dtype())


@public()
def conj(input):
    """The complex conjugate; a real tensor is returned as it is."""
    # (dtype read directly: a frame less in every rule that conjugates, most of them)
    try:
        complex_ = input.dtype.is_complex
    except AttributeError:   # (torch's words for a number or an array)
        kind = type(input)
        name = kind.__qualname__ if kind.__module__ == "builtins" else \
            f"{kind.__module__}.{kind.__qualname__}"
        raise TypeError(f"conj(): argument 'input' (position 1) must be Tensor, not "
                        f"{name}") from None
    return call(OPS["conj_op"], input) if complex_ else input


@public(method=False)
def real(input):
    """The real part (a view); a real tensor is returned as it is."""
    return call(OPS["real_op"], input) if input.is_complex() else input


@public(method=False)
def imag(input):
    """The imaginary part (a view) of a complex tensor."""
    if not input.is_complex():
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return call(OPS["imag_op"], input)


@public()
def resolve_conj(input):
    return input


@public()
def resolve_neg(input):
    return input
