"""Module backward hooks, built on Node hooks as the autograd-mechanics note describes.

A dummy identity ``Function`` is applied to the module's positional tensor
inputs before ``forward`` and to its tensor outputs after, so that each group
shares one ``grad_fn``. A pre-hook on the outputs' node records
``grad_output``; a post-hook on the inputs' node then has ``grad_input`` and
calls the user's hooks, once per backward through the module.
"""
from __future__ import annotations

import warnings

from ..autograd.function import Function
from ..grad_mode import is_grad_enabled
from ..tensor import Tensor


class BackwardHookFunction(Function):
    """Identity on any number of tensors; its node carries the module's hooks."""

    @staticmethod
    def forward(ctx, *args):
        # the inputs themselves, as PyTorch's: each comes out as an alias
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


def _pack(indices, values, size: int) -> tuple:
    """A tuple of ``size`` with ``values`` at ``indices`` and None elsewhere."""
    out = [None] * size
    for i, v in zip(indices, values):
        out[i] = v
    return tuple(out)


def _apply_identity(args: tuple, register):
    """Pass the tensors in ``args`` through the identity; ``register(node)``.

    Returns the new args and the positions of the tensors, or ``(args, None)``
    when nothing is recorded (no tensor requires grad, or grad mode is off).
    """
    idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    tensors = [args[i] for i in idx]
    if not (is_grad_enabled() and any(t.requires_grad for t in tensors)):
        return args, None
    new = BackwardHookFunction.apply(*tensors)
    register(next(t.grad_fn for t in new if t.grad_fn is not None))
    out = list(args)
    for i, t in zip(idx, new):
        out[i] = t
    return tuple(out), idx


class BackwardHook:
    """The backward hooks of one call of a module (state lives per call)."""

    def __init__(self, module, user_hooks: list, pre_hooks: list):
        self.module = module
        self.user_hooks = user_hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs = None
        self.n_inputs = 0
        self.input_idx = None
        self.n_outputs = 0
        self.output_idx = None

    def setup_input_hook(self, args: tuple) -> tuple:
        """Route the inputs through the identity whose post-hook calls the user hooks."""
        self.n_inputs = len(args)
        args, self.input_idx = _apply_identity(
            args, lambda node: node.register_hook(self._on_inputs))
        return args

    def setup_output_hook(self, result):
        """Route the outputs through the identity whose pre-hook records grad_output."""
        single = not isinstance(result, tuple)
        outs = (result,) if single else result
        self.n_outputs = len(outs)
        outs, self.output_idx = _apply_identity(
            outs, lambda node: node.register_prehook(self._on_outputs))
        return outs[0] if single else outs

    def _on_outputs(self, grad_outputs: tuple):
        # refengine's pre-hooks may get fewer grads than outputs when the last
        # ones received none (torch passes None for them): pad to the outputs
        grads = tuple(grad_outputs) + (None,) * (len(self.output_idx) - len(grad_outputs))
        self.grad_outputs = _pack(self.output_idx, grads, self.n_outputs)
        for hook in self.pre_hooks:
            new = hook(self.module, self.grad_outputs)
            if new is None:
                continue
            if len(new) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                   f"got {len(new)}, but expected {len(self.grad_outputs)}")
            self.grad_outputs = tuple(new)
        grads = tuple(self.grad_outputs[i] for i in self.output_idx)
        if self.input_idx is None:
            self._call_without_inputs()
        return grads

    def _call_without_inputs(self) -> None:
        # no input requires grad: the hooks fire from the outputs' side
        if self.user_hooks:
            warnings.warn("Full backward hook is firing when gradients are computed with respect "
                          "to module outputs since no inputs require gradients.", UserWarning)
        grad_inputs = (None,) * self.n_inputs
        for hook in self.user_hooks:
            res = hook(self.module, grad_inputs, self.grad_outputs)
            if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                raise RuntimeError("Backward hook for Modules where no input requires gradient "
                                   "should always return None or None for all gradients.")
        self.grad_outputs = None

    def _on_inputs(self, grad_inputs: tuple, _grad_outputs: tuple):
        if self.grad_outputs is None:
            # the gradient reached the inputs without passing the outputs (double backward)
            return None
        res = _pack(self.input_idx, grad_inputs, self.n_inputs)
        for hook in self.user_hooks:
            new = hook(self.module, res, self.grad_outputs)
            if new is None:
                continue
            if len(new) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(new)}, but expected {len(res)}")
            res = tuple(new)
        self.grad_outputs = None
        return [res[i] for i in self.input_idx]
