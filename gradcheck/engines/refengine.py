"""The refengine adapter: refengine mirrors PyTorch's API, so only tensor
identity and the NumPy conversion are its own."""
from __future__ import annotations

import numpy as np

from adcheck import refengine
from adcheck.refengine.batching import record_fallbacks
from adcheck.refengine.batching.functions import rules_run
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
        """``refengine.vmap``; where a Function's own vmap rule ran in the batch,
        its first example is verified against a plain call (the rule is the
        user's code, and a wrong one would give every evaluation of the batch
        wrong values: the loop then runs instead, and ``verdict.vmaprule``
        names the rule)."""
        mapped = refengine.vmap(func, in_dims)

        def call(*args):
            before = rules_run()
            batched = mapped(*args)
            if rules_run() != before and not self.first_example_agrees(func, args, in_dims,
                                                                       batched):
                raise RuntimeError("a Function's own vmap rule gave another value than one "
                                   "call for the batch's first example")
            return batched
        return call

    def unchecked_vmap(self, func, in_dims):
        return refengine.vmap(func, in_dims)

    def looped_ops(self):
        return record_fallbacks()
