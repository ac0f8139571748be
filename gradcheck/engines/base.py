"""The adapter interface every engine adapter implements (see ``gradcheck.engines``)."""
from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np


class Engine:
    """The adapter interface.

    Both engines expose PyTorch's API (refengine mirrors it on purpose), so
    the autograd calls are written once here against ``module``; an adapter
    supplies what differs: ``is_tensor``, ``to_numpy`` and the optional
    batched forward mode.
    """

    name = "engine"
    module: Any = None
    #: whether ``batched_grad`` and ``batched_jvp`` are available
    supports_batched_grad = False
    supports_batched_forward_grad = False
    #: whether ``undefined_grad`` can express an undefined gradient (else zeros)
    supports_undefined_grad = False
    #: whether ``vmap`` can map a function that differentiates inside
    vmap_differentiates = True
    #: whether a backward is told which inputs require grad (``ctx.needs_input_grad``)
    has_needs_input_grad = True

    @property
    def convert_hint(self) -> str:
        """How a user turns a NumPy array ``x`` into an input to check."""
        return f"{self.name}.from_numpy(x).requires_grad_()"

    #: what to do when no input requires grad
    requires_grad_hint = ("call .requires_grad_() on the inputs to differentiate (e.g. "
                          "tensor(x, dtype=float64, requires_grad=True))")

    def is_tensor(self, value) -> bool:
        raise NotImplementedError

    def to_numpy(self, tensor, copy: bool = True) -> np.ndarray:
        """A detached NumPy copy of ``tensor``; ``copy=False``: the tensor's own
        memory where it is contiguous (for a result nothing else holds: a
        copy of a batch costs as much as its evaluation)."""
        raise NotImplementedError

    def wrap_function(self, func, differentiates_inside: bool = False):
        """The function under check as the checks call it: ``func`` itself on an
        engine with a tape; the JAX adapter wraps it to take its vjp and jvp.
        ``differentiates_inside``: ``func`` calls the engine's autograd itself
        (a first derivative, ``gradcheck.core.secondorder``)."""
        return func

    def from_numpy(self, array: np.ndarray, requires_grad: bool = False, dtype=None,
                   copy: bool = True):
        """A new leaf tensor holding a copy of ``array``: of the engine's ``dtype``
        when given (the dtype of the tensor ``array`` came from, which NumPy may
        not have: ``to_numpy`` holds a bfloat16 tensor as float32), else of
        ``array``'s. ``copy=False``: sharing ``array``'s memory where the engine
        can (the caller's array, which nothing else reads, may then change)."""
        shared = not copy and array.flags.c_contiguous and array.flags.writeable
        tensor = self.module.from_numpy(array if shared else np.array(array, copy=True))
        if dtype is not None and tensor.dtype != dtype:
            tensor = tensor.to(dtype)
        # (a new leaf's requires_grad is False already: set only to make it True)
        return tensor.requires_grad_(True) if requires_grad else tensor

    def dtype_name(self, tensor) -> str:
        """The name of ``tensor``'s dtype: ``"float32"``, ``"bfloat16"``."""
        return str(tensor.dtype).rsplit(".", 1)[-1]

    def epsilon(self, tensor) -> float:
        """Machine epsilon of ``tensor``'s dtype (of its real part when complex):
        the spacing of its numbers at 1 (2**-23 for float32, 2**-7 for bfloat16)."""
        dtype = self.to_numpy(tensor, copy=False).dtype   # (its dtype: no copy needed)
        found = _EPSILONS.get(dtype)
        if found is None:   # (np.finfo answers in microseconds; asked in every check)
            found = _EPSILONS[dtype] = float(np.finfo(dtype).eps)
        return found

    def widened(self, tensor):
        """``tensor``'s values in double precision (float64 or complex128), as a
        new leaf that requires grad when ``tensor`` does; exact, since every
        narrower format's numbers are float64 numbers."""
        array = self.to_numpy(tensor)
        wide = np.complex128 if np.iscomplexobj(array) else np.float64
        return self.from_numpy(array.astype(wide), self.requires_grad(tensor))

    def from_numpy_like(self, array: np.ndarray, template, requires_grad: bool = False):
        """``array`` in a new tensor laid out in memory as ``template`` (an
        input of the function), for an engine where the layout can change what
        a function computes; ``from_numpy`` (of ``template``'s dtype) elsewhere."""
        return self.from_numpy(array, requires_grad, dtype=template.dtype)

    def draws_random(self, func, inputs) -> bool:
        """Whether ``func`` draws random numbers (then a run in another dtype
        draws other ones, even after the same seed); ``False`` when the engine
        cannot tell."""
        return False

    def detach(self, tensor):
        """``tensor``'s values, cut from any graph."""
        return tensor.detach()

    def plain_layout(self, tensor) -> bool:
        """Whether ``from_numpy`` makes a tensor laid out as ``tensor`` (else
        only ``from_numpy_like`` does, and a batched evaluation cannot)."""
        return True

    def layout_of(self, tensor) -> str | None:
        """``None`` for a dense tensor, else the name of its layout (sparse)."""
        return None

    def requires_grad(self, tensor) -> bool:
        return bool(tensor.requires_grad)

    def is_differentiable_dtype(self, tensor) -> bool:
        return bool(tensor.is_floating_point() or tensor.is_complex())

    def no_grad(self) -> AbstractContextManager:
        return self.module.no_grad()

    def enable_grad(self) -> AbstractContextManager:
        return self.module.enable_grad()

    def grad(self, outputs: Sequence, inputs: Sequence, grad_outputs: Sequence,
             create_graph: bool = False) -> tuple:
        """``autograd.grad`` with ``retain_graph=True, allow_unused=True``."""
        with self.backward_of(outputs):
            return self.module.autograd.grad(outputs, inputs, grad_outputs, retain_graph=True,
                                             create_graph=create_graph, allow_unused=True)

    def handed(self, grad_output):
        """``grad_output`` (a leaf that requires grad: a second-order check's
        input) as autograd hands a gradient to a backward that builds a graph:
        computed, not a leaf. A backward may change a view of it in place
        (``g.unsqueeze(-1).unsqueeze_(-1)``, as gpytorch's ``InvQuadLogdet``),
        which a view of a leaf that requires grad refuses."""
        if self.is_tensor(grad_output) and self.requires_grad(grad_output):
            return grad_output.clone()
        return grad_output

    def batched_grad(self, outputs, inputs, grad_outputs) -> tuple:
        """``grad`` with ``is_grads_batched=True``."""
        with self.backward_of(outputs):
            return self.module.autograd.grad(outputs, inputs, grad_outputs, retain_graph=True,
                                             allow_unused=True, is_grads_batched=True)

    def backward_of(self, outputs) -> AbstractContextManager:
        """What a backward of ``outputs`` runs inside: on torch, the parameters a
        checked module computed them with (``engines.recompute``: a checkpointed
        forward recomputes with the module's parameters)."""
        return nullcontext()

    def dual_level(self) -> AbstractContextManager:
        return self.module.autograd.forward_ad.dual_level()

    def make_dual(self, tensor, tangent):
        return self.module.autograd.forward_ad.make_dual(tensor, tangent)

    def tangent(self, tensor):
        """The tangent of a dual tensor at the current level, or ``None``."""
        return self.module.autograd.forward_ad.unpack_dual(tensor).tangent

    def vmap(self, func, in_dims):
        """``func`` vectorized over ``in_dims`` (PyTorch's ``vmap`` signature), or
        ``None`` when the engine cannot: gradcheck then makes one call per vector."""
        return None

    def first_example_agrees(self, func, args, in_dims, batched) -> bool:
        """Whether ``func`` called plainly on the first example of a batch of
        ``args`` gives example 0 of its ``batched`` outputs, up to a few
        roundings of its largest value (a batched kernel may sum in another
        order; another random draw, or a rule that mixes the examples, moves
        values by their own size)."""
        example = [a if d is None else a.select(d, 0) for a, d in zip(args, in_dims)]
        single = func(*example)
        single = single if isinstance(single, (tuple, list)) else (single,)
        batched = batched if isinstance(batched, (tuple, list)) else (batched,)
        for one, many in zip(single, batched):
            if not self.is_tensor(one):
                continue
            if not self.is_tensor(many) or tuple(many.shape)[1:] != tuple(one.shape):
                return False
            floating = self.is_differentiable_dtype(one)
            eps = self.epsilon(one) if floating else 0.0   # (the engine's dtype's, bfloat16's)
            one, first = self.to_numpy(one), self.to_numpy(many[0])
            if not floating:
                if not np.array_equal(one, first):
                    return False
                continue
            if one.size == 0:
                continue
            # (NaN where both have it compares as no difference: NaN > allowed is False)
            if float(np.abs(one - first).max()) > 8 * eps * float(np.abs(one).max()):
                return False
        return True

    def vmap_rule_of(self, func):
        """How reports name the user's own vmap rule that ``func`` runs under the
        engine's vmap (``gradcheck.verdict.vmaprule``), or ``None``: an
        ``autograd.Function``'s ``vmap`` staticmethod (not ``generate_vmap_rule``),
        ``func`` being its ``apply`` or naming it as ``func.autograd_function``
        (a harvested application)."""
        base = getattr(getattr(self.module, "autograd", None), "Function", None)
        owner = getattr(func, "__self__", None)
        if not isinstance(owner, type):
            owner = getattr(func, "autograd_function", func)
        if base is None or not (isinstance(owner, type) and issubclass(owner, base)):
            return None
        if owner.generate_vmap_rule or owner.vmap is base.vmap:
            return None
        return f"{owner.__name__}.vmap"

    def unchecked_vmap(self, func, in_dims):
        """``vmap`` as the engine gives it, its results taken as they are."""
        return self.vmap(func, in_dims)

    def functional_vjp(self, func, diff_in: Sequence, out_idx: Sequence, grad_idx: Sequence):
        """A function of ``(*inputs, *grad_outputs)`` giving the same vjps as the
        first derivative of ``func`` (``gradcheck.core.secondorder``), written so that
        ``vmap`` maps it (the gradients of inputs ``diff_in`` for the outputs
        ``out_idx``, those at positions ``grad_idx`` kept); ``None`` when the
        engine has none (its first derivatives are then evaluated one at a time)."""
        return None

    def looped_ops(self) -> AbstractContextManager:
        """A context manager giving a dict of the ops that ran once per batch
        element inside ``vmap`` (no batching rule), by name."""
        return nullcontext({})

    def jvp_outputs(self, func, primals, in_idx: int, tangent) -> tuple:
        """Output tangents of ``func`` with ``tangent`` on input ``in_idx``
        (zeros for outputs without one)."""
        with self.dual_level():
            args = list(primals)
            args[in_idx] = self.make_dual(args[in_idx], tangent)
            outs = func(*args)
            outs = outs if isinstance(outs, (tuple, list)) else (outs,)
            result = []
            for out in outs:
                t = self.tangent(out) if self.is_tensor(out) else None
                result.append(self.module.zeros_like(out) if t is None else t)
            return tuple(result)

    def batched_jvp(self, func, primals, in_idx, tangents) -> tuple:
        """Output tangents for a batch of tangents of input ``in_idx``, in one
        vmapped forward pass."""
        mapped = self.vmap(lambda t: self.jvp_outputs(func, primals, in_idx, t), 0)
        if mapped is None:
            raise NotImplementedError(f"{self.name} has no vmap for batched forward AD")
        return mapped(tangents)

    def undefined_grad(self, tensor):
        """``tensor`` passed through a node whose gradient is undefined, or
        ``None`` when the engine cannot express undefined gradients."""
        return


def own_array(array: np.ndarray, copy: bool) -> np.ndarray:
    """``array`` as ``to_numpy`` returns it: a copy, or with ``copy=False`` the
    array itself where it is C-contiguous (a broadcast or strided view is
    copied: it may repeat memory, and callers write into what they get)."""
    if not copy and array.flags.c_contiguous:
        return array
    return np.array(array, copy=True)


#: machine epsilon by NumPy dtype (``Engine.epsilon``), found once per process
_EPSILONS: dict = {}
