"""The refengine adapter: refengine mirrors PyTorch's API, so only tensor
identity and the NumPy conversion are its own."""
from __future__ import annotations

import numpy as np

from adcheck import refengine
from adcheck.refengine.batching import record_fallbacks
from adcheck.gradcheck.engines.base import Engine


class RefEngine(Engine):
    """Adapter for ``refengine`` tensors."""

    name = "refengine"
    module = refengine
    supports_batched_grad = True
    supports_batched_forward_grad = True

    def is_tensor(self, value) -> bool:
        return isinstance(value, refengine.Tensor)

    def to_numpy(self, tensor, copy: bool = True) -> np.ndarray:
        # (the array itself, as detach().numpy() gives it, without a detached
        # tensor made and dropped: thirty conversions a small check, so
        # ``own_array``'s test is written out here, a Python frame less)
        array = tensor.numpy(force=True)
        if not copy and array.flags.c_contiguous:
            return array
        return np.array(array, copy=True)

    def from_numpy(self, array: np.ndarray, requires_grad: bool = False, dtype=None,
                   copy: bool = True):
        # (``Engine.from_numpy``, with a new leaf's requires_grad set only when it
        # is to be True: a fresh tensor's is False; a dozen tensors a small check)
        shared = not copy and array.flags.c_contiguous and array.flags.writeable
        tensor = refengine.from_numpy(array if shared else np.array(array, copy=True))
        if dtype is not None and tensor.dtype != dtype:
            tensor = tensor.to(dtype)
        return tensor.requires_grad_(True) if requires_grad else tensor

    def vmap(self, func, in_dims):
        return refengine.vmap(func, in_dims)

    def looped_ops(self):
        return record_fallbacks()
