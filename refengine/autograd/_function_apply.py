"""``Function.apply``: run forward without recording, then wire its outputs in."""
from __future__ import annotations

import contextlib
import warnings

from ..grad_mode import is_grad_enabled, no_grad
from ..tensor import Tensor
from . import forward_ad
from .node import Node
from .saved import SavedTensor
from .view_nodes import CUSTOM, MULTI, check_view_inplace, inherit_kind, rebase_after_inplace


def _uses_setup_context(cls) -> bool:
    from .function import Function
    return cls.setup_context is not Function.setup_context


def apply_function(cls, args: tuple, kwargs: dict):
    ctx = cls._backward_cls()
    ctx._arg_is_tensor = tuple(isinstance(a, Tensor) for a in args)
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
    ctx._input_meta = [(tuple(a.shape), a.dtype) if isinstance(a, Tensor) else None for a in args]
    record = is_grad_enabled() and any(ctx.needs_input_grad)
    if record:
        # the inputs' history from before forward, which may write to them
        ctx._next = tuple(a._grad_edge() for a in args if isinstance(a, Tensor))
    with no_grad(), _no_tangents():
        if _uses_setup_context(cls):
            output = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, output)
        else:
            output = cls.forward(ctx, *args, **kwargs)
    single = not isinstance(output, tuple)
    outputs = _wrap_outputs(ctx, args, (output,) if single else output, record)
    if record:
        _connect(ctx, args, outputs)
    _save(ctx, outputs, record)
    _forward_tangents(cls, ctx, args, outputs)
    # the node keeps no reference to the tensors it marked: they hold it
    ctx._dirty = ctx._non_differentiable = ()
    return outputs[0] if single else outputs


def _no_tangents():
    """Forward runs without forward-mode AD, as in PyTorch: the jvp gives the tangents."""
    stack = contextlib.ExitStack()
    for level in forward_ad._levels:
        stack.enter_context(forward_ad.excluding(level))
    return stack


def _wrap_outputs(ctx, args, outputs: tuple, record: bool) -> tuple:
    _check_dirty_returned(ctx, outputs)
    for t in ctx._dirty:        # PyTorch counts mark_dirty as one more write
        t._bump_version()
    wrapped = tuple(_wrap_output(o, args, ctx, record) for o in outputs)
    # an input marked non-differentiable and returned as is: mark its alias too
    ctx._non_differentiable = tuple(ctx._non_differentiable) + tuple(
        w for o, w in zip(outputs, wrapped) if w is not o and any(o is n for n in ctx._non_differentiable))
    ctx._outputs_meta = [(tuple(o.shape), o.dtype) if isinstance(o, Tensor) else ((), None)
                         for o in wrapped]
    ctx._num_outputs = len(wrapped)
    _mark_custom_views(ctx, wrapped, record)
    return wrapped


def _wrap_output(o, args, ctx, record: bool):
    if not isinstance(o, Tensor) or not any(o is a for a in args):
        return o
    if record and o.requires_grad and any(o is n for n in ctx._non_differentiable):
        return o.detach()       # the input keeps requiring grad; its alias does not
    if any(o is d for d in ctx._dirty):
        return o
    # an input returned as is: the output is a new alias of it
    from ..ops.dispatch import call
    from ..ops.opdef import OPS
    with no_grad():
        return call(OPS["alias"], o)


def _check_dirty_returned(ctx, outputs) -> None:
    if any(not any(d is o for o in outputs) for d in ctx._dirty):
        raise RuntimeError("Some elements marked as dirty during the forward method were not "
                           "returned as output. The inputs that are modified inplace must all "
                           "be outputs of the Function.")


def _mark_custom_views(ctx, outputs, record: bool) -> None:
    # in-place on a view returned by a custom Function would bypass its
    # backward: PyTorch forbids it, whether or not the call was recorded; a
    # recorded call with several differentiable outputs makes its views
    # multi-output views, as a split does (PyTorch's order of messages)
    differentiable = [o for o in outputs if isinstance(o, Tensor)
                      and (o.is_floating_point() or o.is_complex())
                      and not any(o is n for n in ctx._non_differentiable)]
    for o in outputs:
        if (isinstance(o, Tensor) and o._base is not None and (o.is_floating_point() or o.is_complex())
                and not any(o is d for d in ctx._dirty)):
            multi = record and len(differentiable) > 1 and any(o is d for d in differentiable)
            o._view_meta = inherit_kind(o._view_meta, MULTI if multi else CUSTOM)


def _connect(ctx, args, outputs) -> None:
    nondiff = ctx._non_differentiable
    for i, o in enumerate(outputs):
        if not isinstance(o, Tensor):
            continue
        if any(o is n for n in nondiff):
            continue
        if any(o is d for d in ctx._dirty):
            _check_dirty(o, args, len(outputs))
            old = o._grad_fn
            o._grad_fn, o._output_nr = ctx, i
            if o._base is not None and o._view_fn is not None:
                rebase_after_inplace(o, ctx, old)
            continue
        if not (o.is_floating_point() or o.is_complex()):
            continue
        o._grad_fn, o._output_nr = ctx, i


def _check_dirty(t, args, n_outputs: int) -> None:
    """What PyTorch checks of an input that a recorded Function modified in place."""
    if t._grad_fn is None and t.requires_grad:
        raise RuntimeError("a leaf Variable that requires grad has been used in an in-place "
                           "operation.")
    if not any(t is a for a in args):
        # PyTorch only warns for a plain tensor, but a view made inside forward
        # would be rebased onto a base the Function never saw: refused first
        text = ("ctx.mark_dirty() received a tensor that was not an input. Only input "
                "Tensors that have been mutated should be passed to ctx.mark_dirty().")
        if t._base is not None:
            raise RuntimeError(text)
        warnings.warn(text, UserWarning, stacklevel=4)
    if t._base is None:
        return
    if n_outputs > 1:
        raise RuntimeError(
            "If your Function modifies inplace an input that is a view of another Tensor, your "
            "Function cannot return more than one Tensor. This is not supported by the current "
            "autograd engine. You should either make sure the input is not a view (using "
            ".clone() for example) or make your Function only return one Tensor (potentially "
            "splitting it into two Functions: one doing the inplace that returns a single "
            "Tensor and a second one that does the other operations). You can ask on the forum "
            "https://discuss.pytorch.org/ if you need help to do this change.")
    check_view_inplace(t)
    if t._base.is_leaf:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")


def _save(ctx, outputs, record: bool) -> None:
    if not record:
        ctx._saved_list = ()
        return
    saved = []
    for t in ctx._to_save:
        if t is None:
            saved.append(None)
            continue
        # an output is saved without a reference back to this node; a dirty
        # view is one too (its own grad_fn is now the one its rebase gave it)
        fn = t._grad_fn
        is_output = any(t is o for o in outputs) and fn is not None and (
            fn is ctx or any(t is d for d in ctx._dirty))
        saved.append(SavedTensor(t, ctx, is_output=is_output))
    ctx._saved_list = saved
    ctx._to_save = ()


def _forward_tangents(cls, ctx, args, outputs) -> None:
    if not forward_ad._levels:
        return
    for level in list(forward_ad._levels):
        if level in forward_ad._excluded():
            continue
        tangents = [forward_ad.get_tangent(a, level) if isinstance(a, Tensor) else None
                    for a in args]
        if all(t is None for t in tangents):
            continue
        # like PyTorch, a tensor input without a tangent gets a zero tangent
        tangents = [_zeros_like(a) if isinstance(a, Tensor) and t is None and
                    (a.is_floating_point() or a.is_complex()) else t
                    for a, t in zip(args, tangents)]
        ctx._in_jvp = True
        try:
            with forward_ad.excluding(level):
                result = cls.jvp(ctx, *tangents)
        finally:
            ctx._in_jvp = False
        result = result if isinstance(result, tuple) else (result,)
        for o, tan in zip(outputs, result):
            if any(o is d for d in ctx._dirty):
                _dirty_tangent(o, tan, args, tangents, level)
            elif isinstance(o, Tensor) and tan is not None:
                forward_ad.set_tangent(o, level, forward_ad.fit_tangent(tan, o))


def _dirty_tangent(o, tan, args, tangents, level: int) -> None:
    """A Function that writes to an input in place must write its tangent in place too."""
    given = next((t for a, t in zip(args, tangents) if a is o), None)
    if tan is None or tan is not given:
        raise RuntimeError("An inplace custom Function is not modifying the forward mode "
                           "gradients inplace. If the forward is modifying an input inplace, "
                           "then the jvp function must modify the corresponding gradient "
                           "inplace.")
    if forward_ad.get_tangent(o, level) is None:
        forward_ad.set_tangent(o, level, tan)      # the zero tangent it was given


def _zeros_like(t):
    from ..creation import zeros_like
    return zeros_like(t)


class DelayedError(Node):
    """Raises when a once_differentiable backward is differentiated again."""

    def __init__(self, grads):
        super().__init__(tuple(g._grad_edge() if isinstance(g, Tensor) and g.requires_grad
                               else (None, 0) for g in grads))

    def apply(self, grads):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


def delay_error(result, grads):
    node = DelayedError(grads)
    single = not isinstance(result, tuple)
    out = []
    for r in ((result,) if single else result):
        if isinstance(r, Tensor):
            r = r.detach()
            r._grad_fn, r._output_nr = node, 0
        out.append(r)
    return out[0] if single else tuple(out)
