"""``Function.apply``: run forward without recording, then wire its outputs in."""
from __future__ import annotations

from ..grad_mode import is_grad_enabled, no_grad
from ..tensor import Tensor
from . import forward_ad
from .node import Node
from .saved import SavedTensor


def _uses_setup_context(cls) -> bool:
    from .function import Function
    return cls.setup_context is not Function.setup_context


def apply_function(cls, args: tuple, kwargs: dict):
    ctx = cls._backward_cls()
    ctx._arg_is_tensor = tuple(isinstance(a, Tensor) for a in args)
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
    ctx._input_meta = [(tuple(a.shape), a.dtype) if isinstance(a, Tensor) else None for a in args]
    record = is_grad_enabled() and any(ctx.needs_input_grad)
    with no_grad():
        if _uses_setup_context(cls):
            output = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, output)
        else:
            output = cls.forward(ctx, *args, **kwargs)
    single = not isinstance(output, tuple)
    outputs = (output,) if single else output
    wrapped = tuple(_wrap_output(o, args, ctx) for o in outputs)
    # an input marked non-differentiable and returned as is: mark its alias too
    ctx._non_differentiable = tuple(ctx._non_differentiable) + tuple(
        w for o, w in zip(outputs, wrapped) if w is not o and any(o is n for n in ctx._non_differentiable))
    outputs = wrapped
    ctx._outputs_meta = [(tuple(o.shape), o.dtype) if isinstance(o, Tensor) else ((), None)
                         for o in outputs]
    ctx._num_outputs = len(outputs)
    if record:
        _connect(ctx, args, outputs)
    for t in ctx._dirty:
        if not record:
            t._bump_version()
    _save(ctx, outputs, record)
    _forward_tangents(cls, ctx, args, outputs)
    return outputs[0] if single else outputs


def _wrap_output(o, args, ctx):
    if not isinstance(o, Tensor):
        return o
    if any(o is a for a in args) and not any(o is d for d in ctx._dirty):
        # an input returned as is: the output is a new alias of it
        from ..ops.dispatch import call
        from ..ops.opdef import OPS
        with no_grad():
            return call(OPS["alias"], o)
    return o


def _connect(ctx, args, outputs) -> None:
    ctx._next = tuple(a._grad_edge() for a in args if isinstance(a, Tensor))
    nondiff = ctx._non_differentiable
    for i, o in enumerate(outputs):
        if not isinstance(o, Tensor):
            continue
        if any(o is n for n in nondiff):
            continue
        if any(o is d for d in ctx._dirty):
            _check_dirty(o)
            o._bump_version()
            old = o._grad_fn
            o._grad_fn, o._output_nr = ctx, i
            from .view_nodes import rebase_after_inplace
            if o._base is not None and o._view_fn is not None:
                rebase_after_inplace(o, ctx, old)
            continue
        if not (o.is_floating_point() or o.is_complex()):
            continue
        o._grad_fn, o._output_nr = ctx, i
        if o._base is not None:
            # in-place on it would bypass the custom backward: PyTorch forbids it
            o._view_meta = ("custom", type(ctx)._function.__name__)


def _check_dirty(t) -> None:
    if t.is_leaf and t._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")


def _save(ctx, outputs, record: bool) -> None:
    if not record:
        ctx._saved_list = ()
        return
    saved = []
    for t in ctx._to_save:
        if t is None:
            saved.append(None)
            continue
        is_output = any(t is o for o in outputs) and t._grad_fn is ctx
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
            if isinstance(o, Tensor) and tan is not None:
                forward_ad.set_tangent(o, level, forward_ad.fit_tangent(tan, o))


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
