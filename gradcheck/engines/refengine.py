"""The refengine adapter, written against refengine's torch-mirroring API."""
from __future__ import annotations

import numpy as np

import refengine
from gradcheck.engines import Engine
from refengine.autograd import forward_ad


class RefEngine(Engine):
    """Adapter for ``refengine`` tensors."""

    name = "refengine"
    module = refengine
    supports_batched_grad = True
    supports_batched_forward_grad = False

    def is_tensor(self, value) -> bool:
        return isinstance(value, refengine.Tensor)

    def to_numpy(self, tensor) -> np.ndarray:
        return np.array(tensor.detach().numpy(), copy=True)

    def from_numpy(self, array, requires_grad=False):
        tensor = refengine.from_numpy(np.array(array, copy=True))
        return tensor.requires_grad_(requires_grad) if requires_grad else tensor

    def no_grad(self):
        return refengine.no_grad()

    def enable_grad(self):
        return refengine.enable_grad()

    def grad(self, outputs, inputs, grad_outputs, create_graph=False):
        return refengine.autograd.grad(outputs, inputs, grad_outputs, retain_graph=True,
                                       create_graph=create_graph, allow_unused=True)

    def batched_grad(self, outputs, inputs, grad_outputs):
        return refengine.autograd.grad(outputs, inputs, grad_outputs, retain_graph=True,
                                       allow_unused=True, is_grads_batched=True)

    def dual_level(self):
        return forward_ad.dual_level()

    def make_dual(self, tensor, tangent):
        return forward_ad.make_dual(tensor, tangent)

    def tangent(self, tensor):
        return forward_ad.unpack_dual(tensor).tangent
