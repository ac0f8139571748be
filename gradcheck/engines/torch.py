"""The torch adapter. Imported only when the inputs are torch tensors.

Function evaluations are batched with ``torch.func.vmap`` (finite
differences evaluate the function at many points of one input in one call).
A function vmap cannot run (fresh random draws at each call, ``.item()`` or
``.numpy()``, data-dependent control flow, an ``autograd.Function`` without
a vmap rule) raises inside it, and gradcheck then evaluates one point at a
time and says why in ``Report.batching`` (a function that reseeds itself
before drawing shares one draw across the batch: see ``TorchEngine.vmap``).
Ops that torch runs in a loop inside vmap (no batching rule: torch warns
"There is a performance drop...") are counted by name in
``Report.batching["looped_ops"]``. A function that differentiates inside
(the first derivative of a second-order check) is vmapped through its twin
written with ``torch.func.vjp`` (``functional_vjp``): torch.func does not
follow ``autograd.grad`` through vmap.
"""
from __future__ import annotations

import re
import warnings
from contextlib import contextmanager

import numpy as np
import torch

from adcheck.gradcheck.engines.base import Engine, own_array

#: torch's warning for an op without a batching rule, and the op it names
_LOOPED = re.compile(r"batching rule for (\S+?)\.? ")
#: warnings torch raises about its own kernels under vmap, not about the code
#: under check: prelu's batched kernel resizes an out= tensor of the unbatched
#: shape ("Triggered internally"), which the function's own call never does
_BATCHING_ARTIFACTS = re.compile(r"An output with one or more elements was resized since it had "
                                 r"shape .* \(Triggered internally", re.S)


#: torch dtypes NumPy lacks, and the NumPy-supported dtype that holds their values
_WIDER_FOR_NUMPY = {torch.bfloat16: torch.float32, torch.complex32: torch.complex64}


def _laid_out_as(template, dtype):
    """A new tensor of ``dtype`` holding a copy of ``template``'s whole storage
    (converted exactly when ``dtype`` is wider), viewed with ``template``'s
    sizes, strides and storage offset."""
    storage = template.detach().untyped_storage()
    flat = torch.empty(storage.nbytes() // template.element_size(), dtype=template.dtype)
    flat.untyped_storage().copy_(storage)
    flat = flat.to(dtype)
    return flat.as_strided(template.size(), template.stride(), template.storage_offset())


class TorchEngine(Engine):
    """Adapter for ``torch`` tensors (CPU)."""

    name = "torch"
    module = torch
    supports_batched_grad = True
    supports_batched_forward_grad = True
    supports_undefined_grad = True
    #: torch.func.vmap cannot map a function that calls autograd.grad inside
    vmap_differentiates = False

    def is_tensor(self, value) -> bool:
        return isinstance(value, torch.Tensor)

    def from_numpy(self, array: np.ndarray, requires_grad: bool = False, dtype=None,
                   copy: bool = True):
        """As ``Engine.from_numpy``; an empty array gives a contiguous empty tensor.
        ``torch.from_numpy`` gives an empty tensor zero strides, which view ops
        refuse (view_as_real's backward: "Tensor must have a last dimension with
        stride 1"); the empty tensors torch itself makes are contiguous."""
        tensor = super().from_numpy(array, requires_grad=False, dtype=dtype, copy=copy)
        if tensor.numel() == 0:
            tensor = torch.empty(tuple(tensor.shape), dtype=tensor.dtype)
        return tensor.requires_grad_(requires_grad)

    def to_numpy(self, tensor, copy: bool = True) -> np.ndarray:
        """A NumPy copy; bfloat16 as float32 and complex32 as complex64 (NumPy has
        neither; both hold every value exactly). ``from_numpy(array,
        dtype=tensor.dtype)`` gives the tensor back."""
        if tensor.requires_grad:
            tensor = tensor.detach()
        held = _WIDER_FOR_NUMPY.get(tensor.dtype, tensor.dtype)
        if tensor._is_zerotensor():  # an exact zero (sgn's vjp) that refuses .numpy()
            return np.zeros(tuple(tensor.shape), torch.empty(0, dtype=held).numpy().dtype)
        # (each conversion only where it changes something: called for every product)
        if not tensor.is_cpu:
            tensor = tensor.cpu()
        if tensor.is_conj():
            tensor = tensor.resolve_conj()
        if tensor.is_neg():
            tensor = tensor.resolve_neg()
        if tensor.dtype != held:
            tensor = tensor.to(held)
        return own_array(tensor.numpy(), copy)

    def vmap(self, func, in_dims):
        """``func`` mapped over ``in_dims``. A function that draws random numbers
        after seeding its generator itself (op_db's ``wrapper_set_seed``:
        fractional max pooling) gives every call the same draw, so a batch may
        share one draw (``randomness="same"``); that is verified on the batch's
        first example, and a function whose draws differ is left to the loop."""
        mapped = torch.func.vmap(func, in_dims=in_dims)

        def call(*args):
            try:
                batched = mapped(*args)
            except RuntimeError as exc:
                if "randomness" not in str(exc):
                    raise
                shared = torch.func.vmap(func, in_dims=in_dims, randomness="same")(*args)
                if not self.first_example_agrees(func, args, in_dims, shared):
                    raise RuntimeError("the function draws different random numbers at each "
                                       "call, so a batch cannot share one draw") from exc
                return shared
            # torch's batching rules are code too: index_fill with a batched 0-dim
            # value returns a wrong example 0; the loop then runs instead
            if not self.first_example_agrees(func, args, in_dims, batched):
                raise RuntimeError("torch's batching rule gave another value than one call "
                                   "for the batch's first example")
            return batched
        return call

    def vmap_rule_of(self, func):
        """As ``Engine.vmap_rule_of``, and the rule registered for a
        ``torch.library`` custom op (``register_vmap``): ``func`` is the op, or
        names harvest's stand-in for it as ``func.autograd_function``."""
        found = super().vmap_rule_of(func)
        if found is not None:
            return found
        owner = getattr(func, "autograd_function", func)
        op = getattr(owner, "custom_op", owner)   # (harvest's stand-in class holds the op)
        if isinstance(op, torch._ops.OpOverloadPacket):
            op = getattr(op, "default", None)
        name = op._schema.name if isinstance(op, torch._ops.OpOverload) else \
            getattr(op, "_qualname", None)
        opdef = torch._library.custom_ops.OPDEFS.get(name) if name else None
        if opdef is None or opdef._vmap_fn is None:
            return None
        return f"the vmap rule registered for {name}"

    def unchecked_vmap(self, func, in_dims):
        """``torch.func.vmap`` itself, without ``vmap``'s first-example check."""
        return torch.func.vmap(func, in_dims=in_dims)

    def draws_random(self, func, inputs) -> bool:
        """Whether ``func`` draws random numbers: vmap's "error" randomness mode
        refuses a draw, on a batch of one (one call; any other refusal, such as
        an ``autograd.Function`` without a vmap rule, says nothing)."""
        dims = tuple(0 if isinstance(x, torch.Tensor) else None for x in inputs)
        batch = [x.detach().unsqueeze(0) if d == 0 else x for x, d in zip(inputs, dims)]
        try:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.func.vmap(func, in_dims=dims)(*batch)
        except Exception as exc:  # noqa: BLE001 - only the randomness refusal counts
            return "randomness" in str(exc)
        return False

    def functional_vjp(self, func, diff_in, out_idx, grad_idx):
        """The first derivative through ``torch.func.vjp``, which vmap maps (it
        cannot map ``autograd.grad``); the same derivative formulas run."""
        diff_in, out_idx, grad_idx = tuple(diff_in), tuple(out_idx), tuple(grad_idx)

        def first(*args):
            ins, grad_outputs = list(args[:-len(out_idx)]), args[-len(out_idx):]

            def differentiated(*moving):
                full = list(ins)
                for i, x in zip(diff_in, moving):
                    full[i] = x
                outs = func(*full)
                outs = outs if isinstance(outs, (tuple, list)) else (outs,)
                return tuple(outs[o] for o in out_idx)

            _, pullback = torch.func.vjp(differentiated, *(ins[i] for i in diff_in))
            grads = pullback(tuple(grad_outputs))
            return tuple(grads[k] for k in grad_idx)
        return first

    def backward_of(self, outputs):
        from adcheck.gradcheck.engines.recompute import during_backward
        return during_backward(outputs)

    @contextmanager
    def looped_ops(self):
        found: dict = {}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield found
        for warning in caught:
            match = _LOOPED.search(str(warning.message))
            if match:
                found[match.group(1)] = found.get(match.group(1), 0) + 1
            elif not _BATCHING_ARTIFACTS.search(str(warning.message)):
                # not ours to swallow: issue it again where it came from
                warnings.warn_explicit(warning.message, warning.category, warning.filename,
                                       warning.lineno)

    def epsilon(self, tensor) -> float:
        return float(torch.finfo(tensor.dtype).eps)

    def layout_of(self, tensor) -> str | None:
        return None if tensor.layout == torch.strided else str(tensor.layout)

    def plain_layout(self, tensor) -> bool:
        plain = (tensor.is_contiguous() and tensor.storage_offset() == 0
                 and tensor.untyped_storage().nbytes() == tensor.numel()
                 * tensor.element_size())
        return bool(plain or tensor.layout != torch.strided or tensor.is_conj()
                    or tensor.is_neg() or torch._debug_has_internal_overlap(tensor) != 0)

    def from_numpy_like(self, array: np.ndarray, template, requires_grad: bool = False):
        """``array`` in a tensor laid out as ``template``: a copy of its whole
        storage, viewed with its sizes, strides and offset, holding ``array``.

        An op that reads storage (``as_strided``) computes another function of
        a contiguous copy; torch's gradcheck perturbs the input itself. Plain
        contiguous inputs, and those with overlapping elements or a conj/neg
        bit, are made by ``from_numpy``.
        """
        if self.plain_layout(template):
            return self.from_numpy(array, requires_grad, dtype=template.dtype)
        view = _laid_out_as(template, template.dtype)
        view.copy_(torch.from_numpy(np.array(array, copy=True)))  # to template's dtype
        return view.requires_grad_(requires_grad)

    def widened(self, tensor):
        """``tensor``'s values in double precision (float64 or complex128), as a
        new leaf that requires grad when ``tensor`` does, laid out in memory as
        ``tensor``: its whole storage widened (exactly), viewed with its sizes,
        strides and offset. A view's layout decides what an op that reads
        storage computes (``as_strided`` with a ``storage_offset`` reads
        elements outside the view), so the double-precision reference must
        read the same elements."""
        if self.plain_layout(tensor):
            return super().widened(tensor)
        wide = torch.complex128 if tensor.is_complex() else torch.float64
        return _laid_out_as(tensor, wide).requires_grad_(self.requires_grad(tensor))

    def batched_jvp(self, func, primals, in_idx, tangents):
        from torch._vmap_internals import _vmap  # the batching forward AD supports
        return _vmap(lambda t: self.jvp_outputs(func, primals, in_idx, t))(tangents)

    def undefined_grad(self, tensor):
        return torch._C._functions.UndefinedGrad()(tensor)

