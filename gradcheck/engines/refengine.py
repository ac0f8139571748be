"""The refengine adapter: refengine mirrors PyTorch's API, so only tensor
identity and the NumPy conversion are its own."""
from __future__ import annotations

import numpy as np

from adcheck import refengine
from adcheck.refengine.batching import record_fallbacks
from adcheck.gradcheck.engines.base import Engine, own_array


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
        # tensor made and dropped: thirty conversions a small check)
        return own_array(tensor.numpy(force=True), copy)

    def vmap(self, func, in_dims):
        return refengine.vmap(func, in_dims)

    def looped_ops(self):
        return record_fallbacks()
