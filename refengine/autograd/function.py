"""Custom ``autograd.Function``: user-written forward, backward and jvp.

>>> class Square(Function):
...     @staticmethod
...     def forward(ctx, x):
...         ctx.save_for_backward(x)
...         return x * x
...     @staticmethod
...     def backward(ctx, grad):
...         x, = ctx.saved_tensors
...         return 2 * grad * x
>>> y = Square.apply(x)
"""
from __future__ import annotations

import functools

from ..grad_mode import is_grad_enabled, no_grad
from ..tensor import Tensor
from .node import Node, reduce_grad
from .saved import SavedTensor


class FunctionCtx:
    """What ``forward`` gets as ``ctx``: a place to keep what backward needs."""

    def save_for_backward(self, *tensors) -> None:
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is not a Tensor or None")
        self._to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors) -> None:
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The node of a custom Function (its ``grad_fn``, named ``<Class>Backward``)."""

    _function = None

    def __init__(self):
        Node.__init__(self)
        self._to_save = ()
        self._saved_list = None
        self._dirty = ()
        self._non_differentiable = ()
        self.materialize_grads = True
        self.needs_input_grad = ()
        self.saved_for_forward = ()
        self._arg_is_tensor = ()
        self._input_meta = []

    def name(self) -> str:
        return f"{self._function.__name__}Backward"

    @property
    def saved_tensors(self) -> tuple:
        if getattr(self, "_in_jvp", False):
            return tuple(self.saved_for_forward)   # inside jvp: what save_for_forward kept
        if self._saved_list is None:
            # still inside forward or setup_context: hand back what was given
            return tuple(self._to_save)
        with self._lock:
            return tuple(s.unpack() if isinstance(s, SavedTensor) else s for s in self._saved_list)

    def apply(self, grads: list) -> list:
        fn = self._function
        grads = list(grads) + [None] * (len(self._outputs_meta) - len(grads))
        if self.materialize_grads:
            from .. import creation
            # an output that is not a tensor (dtype None) gets None, as in PyTorch
            grads = [g if g is not None or dt is None else creation.zeros(shape, dtype=dt)
                     for g, (shape, dt) in zip(grads, self._outputs_meta)]
        result = fn.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        expected = len(self._arg_is_tensor)
        if len(result) > expected and all(r is None for r in result[expected:]):
            result = result[:expected]
        if len(result) != expected:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                               f"gradients (expected {expected}, got {len(result)})")
        out = []
        for i, (g, is_tensor) in enumerate(zip(result, self._arg_is_tensor)):
            if not is_tensor:
                if g is not None:
                    raise RuntimeError(f"function {self.name()} returned a gradient different "
                                       f"than None at position {i + 1}, but the corresponding "
                                       "forward input was not a Variable")
                continue
            out.append(self._check_grad(i, g))
        return out

    def _check_grad(self, i: int, g):
        if g is None:
            return None
        if not isinstance(g, Tensor):
            raise TypeError(f"function {self.name()} returned a gradient of type "
                            f"{type(g).__name__} at index {i}; expected a Tensor or None")
        shape, dt = self._input_meta[i]
        try:
            return reduce_grad(g, shape, dt)
        except RuntimeError:
            raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index "
                               f"{i} - got {list(g.shape)} but expected shape compatible with "
                               f"{list(shape)}") from None

    def _release(self) -> None:
        for s in self._saved_list or ():
            if isinstance(s, SavedTensor):
                s.release()


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_cls = type(f"{name}Backward", (BackwardCFunction,), {"_function": cls})


class Function(metaclass=_FunctionMeta):
    """Base class of user-defined differentiable operations; call ``apply``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not overridden")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    #: PyTorch's switch for a vmap rule made from the forward: refengine always
    #: makes one where the Function has no ``vmap`` of its own (docs/differences.md)
    generate_vmap_rule = False

    @staticmethod
    def vmap(info, in_dims, *args):
        """The Function on batched arguments (``refengine.batching.functions``):
        override it to give the rule; otherwise the forward runs on them."""
        raise NotImplementedError("vmap is not overridden")

    @classmethod
    def apply(cls, *args, **kwargs):
        from ..ops.dispatch import VMAP     # (here: the dispatcher imports autograd)
        if VMAP.active:
            from ..batching.functions import custom_rule_call, looped_call
            own = cls.vmap is not Function.vmap and not cls.generate_vmap_rule
            batched = (custom_rule_call if own else looped_call)(cls, args, kwargs)
            if batched is not NotImplemented:
                return batched
        from ._function_apply import apply_function
        return apply_function(cls, args, kwargs)


def once_differentiable(fn):
    """Mark a backward as not differentiable: a double backward through it raises."""
    @functools.wraps(fn)
    def wrapper(ctx, *grads):
        with no_grad():
            result = fn(ctx, *grads)
        if not is_grad_enabled() or not any(isinstance(g, Tensor) and g.requires_grad for g in grads):
            return result
        from ._function_apply import delay_error
        return delay_error(result, grads)
    return wrapper
