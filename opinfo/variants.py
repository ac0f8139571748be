"""In-place variants, derived from the out-of-place OpInfos.

An in-place op (``x.exp_()``) computes what its out-of-place op computes,
but through a different autograd path: the tensor's history is rebased onto
the in-place node, its version is bumped, and rules that need the old value
(``mul_``) must read it from before the write. So each one is checked on its
own, with its out-of-place op's samples, references and tolerances: one
source of truth. The variant clones its input first, since gradcheck feeds
leaves that require grad, which cannot be modified in place.
"""
from __future__ import annotations

import numpy as np

from adcheck import refengine
from adcheck.refengine.pytree import tree_leaves

from .core import KnownFailure, OpInfo, SampleInput
from .samples import TensorSpec


def fits_inplace(spec: SampleInput) -> bool:
    """Whether the result of this sample has the input's shape (in place needs it)."""
    if not isinstance(spec.input, TensorSpec):
        return False
    shapes = [tuple(leaf.shape) for leaf in tree_leaves((spec.args, spec.kwargs))
              if isinstance(leaf, TensorSpec) and leaf.kind != "index"]
    try:
        return np.broadcast_shapes(tuple(spec.input.shape), *shapes) == tuple(spec.input.shape)
    except ValueError:
        return False


# Families whose ops write into the input's own positions (scatter_, index_add_):
# their results always have the input's shape, whatever the other arguments' shapes.
_SHAPE_KEEPING = {"indexing"}
# In-place ops PyTorch refuses on complex tensors, because the result is real.
_REAL_RESULT = {"abs"}
# In-place ops whose derivative torch 2.13 does not implement ("the derivative for
# 'inplace version of asinh' is not implemented"): only the torch comparison is off.
_TORCH_NO_INPLACE_DERIVATIVE = {"asinh", "acosh", "atanh"}


def _known_failures(base: OpInfo) -> tuple:
    if base.name not in _TORCH_NO_INPLACE_DERIVATIVE:
        return base.known_failures
    reason = (f"torch does not implement the derivative of in-place {base.name}_; refengine's "
              "is checked against finite differences")
    return base.known_failures + (KnownFailure("torch_reverse", reason),
                                  KnownFailure("torch_forward", reason))


def _filtered(func, family: str):
    if func is None:
        return None

    def samples(opinfo, dtype):
        return (s for s in func(opinfo, dtype)
                if isinstance(s.input, TensorSpec) and (family in _SHAPE_KEEPING or fits_inplace(s)))
    return samples


def inplace_variant(base: OpInfo) -> OpInfo:
    """The OpInfo of ``Tensor.<base.name>_``, checked like ``base``."""
    method = f"{base.name}_"

    def op(input, *args, **kwargs):
        return getattr(input.clone(), method)(*args, **kwargs)
    op.__name__ = method
    # tensor methods only, so the same composite runs on torch tensors
    dtypes = tuple(d for d in base.dtypes if not (d.is_complex and base.name in _REAL_RESULT))
    return OpInfo(method, op, family=base.family,
                  torch_name=None, torch_fn=op if base.torch_name else None,
                  ref=base.ref, mpmath_ref=base.mpmath_ref, dtypes=dtypes,
                  sample_func=_filtered(base.sample_func, base.family),
                  special_func=_filtered(base.special_func, base.family),
                  supports_autograd=base.supports_autograd,
                  supports_forward_ad=base.supports_forward_ad,
                  supports_gradgrad=base.supports_gradgrad,
                  supports_fwgrad_bwgrad=base.supports_fwgrad_bwgrad,
                  supports_complex_autograd=base.supports_complex_autograd and any(
                      d.is_complex for d in dtypes),
                  tolerances=dict(base.tolerances), known_failures=_known_failures(base),
                  description=f"in-place {base.name}: {base.description}".rstrip(": "),
                  variant_of=base.name)


def derivable(base: OpInfo, registered: set) -> bool:
    """An in-place variant is derived when the OpInfo calls the public op itself
    (so ``x.NAME_(*args)`` means the same) and refengine has ``Tensor.NAME_``."""
    method = f"{base.name}_"
    if ("." in base.name or method in registered
            or getattr(refengine, base.name, None) is not base.op
            or not callable(getattr(refengine.Tensor, method, None))):
        return False
    dtype = refengine.float64 if refengine.float64 in base.dtypes else base.dtypes[0]
    return any(True for _ in _filtered(base.sample_func, base.family)(base, dtype))
