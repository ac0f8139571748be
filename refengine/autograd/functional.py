"""The functional autograd API: ``jacobian``, ``hessian``, ``vjp``, ``jvp``, ``vhp``, ``hvp``.

Arguments, return structures and errors are PyTorch's
(``torch.autograd.functional``). Inputs are detached copies that require
grad, so a function that captures the caller's tensors is not confused with
one that uses its arguments; results are detached unless ``create_graph``.

>>> from adcheck.refengine.autograd.functional import jacobian
>>> jacobian(lambda x: x * x, refengine.tensor([1., 2.]))
tensor([[2., 0.],
        [0., 4.]])
"""
from __future__ import annotations

import numpy as np

from .. import creation
from ..grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from ..pytree import tree_map
from ..tensor import Tensor
from . import forward_ad
from .api import grad as _autograd_grad

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]

_STRATEGIES = ("forward-mode", "reverse-mode")


# ----- argument handling -------------------------------------------------
def _as_tuple(value, arg_name: str, fn_name: str) -> tuple:
    """``(was_a_tuple, tuple_of_tensors)``; a TypeError names what is not a Tensor."""
    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"value at index {i}" if is_tuple else f"given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but the {where} has type {type(el)}.")
    return is_tuple, items


def _unpack(res, keep):
    """Undo ``_as_tuple``: ``keep`` is one flag, or (outer, inner) flags for nested results."""
    if isinstance(keep, tuple):
        outer, inner = keep
        if not inner:
            res = type(res)(el[0] for el in res)
        return res if outer else res[0]
    return res if keep else res[0]


def _prepare(tensors: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """New tensor objects: a differentiable alias when the caller wants a graph back,
    else a detached copy that requires grad iff ``need_graph``."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad
                 else t.detach().requires_grad_(need_graph) for t in tensors)


def _finish(values, create_graph: bool):
    """Detach results (recursively) unless the caller asked for a graph."""
    return tree_map(lambda t: t if create_graph else t.detach(), values)


def _validate_v(v: tuple, other: tuple, other_is_tuple: bool) -> None:
    if len(v) != len(other):
        if other_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but "
                               f"got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (el_v, el_o) in enumerate(zip(v, other)):
        if tuple(el_v.shape) != tuple(el_o.shape):
            where = f"Entry {i} in " if other_is_tuple else ""
            raise RuntimeError(f"{where}v has invalid size: should be {el_o.shape} but got "
                               f"{el_v.shape}.")


def _prepare_v(v, others: tuple, others_is_tuple: bool, fn_name: str, create_graph: bool,
               single_msg: str):
    if v is None:
        if len(others) != 1 or others[0].numel() != 1:
            raise RuntimeError(single_msg)
        return None
    _, v = _as_tuple(v, "v", fn_name)
    v = _prepare(v, create_graph, need_graph=False)
    _validate_v(v, others, others_is_tuple)
    return v


_NO_V_OUTPUT = ("The vector v can only be None if the user-provided function returns a single "
                "Tensor with a single element.")
_NO_V_INPUT = ("The vector v can only be None if the input to the user-provided function is a "
               "single Tensor with a single element.")


# ----- strict mode ------------------------------------------------------
_INDEPENDENT = ("While computing the hessian, found that the jacobian of the user-provided "
                "function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).")
_NO_GRAD = {
    "outputs": ("Output {i} of the user-provided function does not require gradients. The "
                "outputs must be computed in a differentiable manner from the input when "
                "running in strict mode."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of "
                    "the user-provided function. This is not allowed in strict mode."),
    "jacobian": _INDEPENDENT,
}
_UNUSED = ("The output of the user-provided function is independent of input {i}. This is "
           "not allowed in strict mode.")
_MISSING = {
    "back": _UNUSED,
    "back_trick": ("The gradient with respect to the input is independent of entry {i} in the "
                   "grad_outputs when using the double backward trick to compute forward mode "
                   "gradients. This is not allowed in strict mode."),
    "double_back": ("The jacobian of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode."),
    "double_back_trick": ("The hessian of the user-provided function is independent of entry "
                          "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                          "prevents from using the double backward trick to replace forward "
                          "mode AD."),
}
_CONSTANT = {
    False: ("The jacobian of the user-provided function is independent of input {i}. This is "
            "not allowed in strict mode when create_graph=True."),
    True: ("The hessian of the user-provided function is independent of input {i}. This is "
           "not allowed in strict mode when create_graph=True."),
}


def _check_requires_grad(values: tuple, kind: str, strict: bool) -> None:
    """In strict mode, every value must exist and depend on the inputs."""
    if not strict:
        return
    for i, value in enumerate(values):
        if value is None:
            raise RuntimeError(_UNUSED.format(i=i))
        if not value.requires_grad:
            raise RuntimeError(_NO_GRAD[kind].format(i=i))


def _fill_in_zeros(grads: tuple, refs: tuple, strict: bool, create_graph: bool, stage: str):
    """Replace a missing gradient by zeros shaped like ``refs[i]`` (strict mode raises)."""
    out = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_MISSING[stage].format(i=i))
            g = creation.zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            raise RuntimeError(_CONSTANT["double" in stage].format(i=i))
        out.append(g)
    return tuple(out)


def _grad(outputs: tuple, inputs: tuple, grad_outputs=None, create_graph: bool = False,
          retain_graph=None, is_grads_batched: bool = False) -> tuple:
    """``autograd.grad`` that skips outputs which do not require grad (None if none do)."""
    grad_outputs = (None,) * len(outputs) if grad_outputs is None else grad_outputs
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    outs, gos = zip(*pairs)
    return _autograd_grad(outs, inputs, gos, retain_graph=retain_graph, create_graph=create_graph,
                          allow_unused=True, is_grads_batched=is_grads_batched)


def _call(func, inputs: tuple, fn_name: str, strict: bool):
    outputs = func(*inputs)
    is_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict)
    return is_tuple, outputs


# ----- vector products --------------------------------------------------------
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product at ``inputs``.

    >>> vjp(lambda x: x * x, refengine.tensor([1., 2.]), refengine.tensor([1., 1.]))
    (tensor([1., 4.]), tensor([2., 4.]))
    """
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs_tuple, outputs = _call(func, inputs, "vjp", strict)
        v = _prepare_v(v, outputs, outputs_tuple, "vjp", create_graph, _NO_V_OUTPUT)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        res = _grad(outputs, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(res, inputs, strict, create_graph, "back")
    return (_unpack(_finish(outputs, create_graph), outputs_tuple),
            _unpack(_finish(res, create_graph), inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)``: the Jacobian-vector product at ``inputs``.

    Computed as PyTorch does, by the double-backward trick: ``u -> J^T u`` is
    linear in ``u``, and its vjp with ``v`` is ``J v``.

    >>> jvp(lambda x: x * x, refengine.tensor([1., 2.]), refengine.tensor([1., 0.]))
    (tensor([1., 4.]), tensor([2., 0.]))
    """
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _prepare_v(v, inputs, inputs_tuple, "jvp", create_graph, _NO_V_INPUT)
        outputs_tuple, outputs = _call(func, inputs, "jvp", strict)
        # the vjp is linear in u: u's value never enters J v (zeros avoid inf * 0)
        u = tuple(creation.zeros_like(o, requires_grad=True) for o in outputs)
        grad_inputs = _grad(outputs, inputs, u, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        res = _grad(grad_inputs, u, v, create_graph=create_graph)
        res = _fill_in_zeros(res, outputs, strict, create_graph, "back_trick")
    return (_unpack(_finish(outputs, create_graph), outputs_tuple),
            _unpack(_finish(res, create_graph), outputs_tuple))


def _scalar_function(func, inputs: tuple, fn_name: str, strict: bool):
    outputs_tuple, outputs = _call(func, inputs, fn_name, strict)
    if outputs_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")
    return outputs


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)`` for a scalar function, by reverse-over-reverse.

    >>> vhp(lambda x: (x ** 3).sum(), refengine.tensor([1., 2.]), refengine.tensor([1., 1.]))
    (tensor(9.), tensor([ 6., 12.]))
    """
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _prepare_v(v, inputs, inputs_tuple, "vhp", create_graph, _NO_V_INPUT)
        outputs = _scalar_function(func, inputs, "vhp", strict)
        jac = _grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        res = _grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(res, inputs, strict, create_graph, "double_back")
    return _finish(outputs[0], create_graph), _unpack(_finish(res, create_graph), inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)`` for a scalar function, by forward-over-reverse.

    The inputs enter ``func`` as dual tensors with tangent ``v``; the tangent
    of the gradient is then ``H v``. One difference from torch, whose hvp
    uses the double-backward trick: with ``strict=True, create_graph=True``
    a quadratic function is accepted here (its tangent is computed from the
    inputs, so it requires grad), where torch reports a constant Hessian.

    >>> hvp(lambda x: (x ** 3).sum(), refengine.tensor([1., 2.]), refengine.tensor([1., 1.]))
    (tensor(9.), tensor([ 6., 12.]))
    """
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _prepare_v(v, inputs, inputs_tuple, "hvp", create_graph, _NO_V_INPUT)
        if v is None:
            v = (creation.ones_like(inputs[0]),)
        with forward_ad.dual_level():
            duals = tuple(forward_ad.make_dual(x, t.to(x.dtype)) for x, t in zip(inputs, v))
            outputs = _scalar_function(func, duals, "hvp", strict)
            jac = _grad(outputs, inputs, create_graph=True)
            _check_requires_grad(jac, "jacobian", strict)
            res = tuple(None if j is None else forward_ad.unpack_dual(j).tangent for j in jac)
    res = _fill_in_zeros(res, inputs, strict, create_graph, "double_back_trick")
    # leaving the dual level dropped the outputs' tangents: they are plain tensors again
    return _finish(outputs[0], create_graph), _unpack(_finish(res, create_graph), inputs_tuple)


# ----- Jacobians and Hessians --------------------------------------------------
def _basis(tensors: tuple) -> list:
    """Columns of the identity of size sum(numel), split per tensor: (N, numel_i) blocks."""
    sizes = [t.numel() for t in tensors]
    eye = np.eye(sum(sizes))
    starts = np.cumsum([0] + sizes)
    return [creation.tensor(eye[:, s:s + n], dtype=t.dtype)
            for t, s, n in zip(tensors, starts, sizes)]


def _split_rows(block: Tensor, refs: tuple, trailing: tuple) -> list:
    """Cut the rows of ``block`` per tensor of ``refs``: each to ``ref.shape + trailing``."""
    out, start = [], 0
    for r in refs:
        n = r.numel()
        out.append(block.narrow(0, start, n).reshape(tuple(r.shape) + trailing))
        start += n
    return out


def _jacobian_rows(outputs: tuple, inputs: tuple, create_graph: bool, strict: bool) -> tuple:
    """One vector-Jacobian product per output element."""
    result = []
    for i, out in enumerate(outputs):
        rows = [[] for _ in inputs]
        flat = out.reshape(-1)
        for j in range(out.numel()):
            vj = _grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
            for k, (g, x) in enumerate(zip(vj, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is "
                                           f"independent of input {k}. This is not allowed "
                                           "in strict mode.")
                    g = creation.zeros_like(x)
                elif strict and create_graph and not g.requires_grad:
                    raise RuntimeError(_CONSTANT[False].format(i=i))
                rows[k].append(g)
        result.append(tuple(_stack_rows(r, out, x) for r, x in zip(rows, inputs)))
    return tuple(result)


def _stack_rows(rows: list, out: Tensor, x: Tensor) -> Tensor:
    from ..ops import FUNCTIONS
    if not rows:
        raise RuntimeError("stack expects a non-empty TensorList")
    return FUNCTIONS["stack"](rows, dim=0).reshape(tuple(out.shape) + tuple(x.shape))


def _jacobian_batched(outputs: tuple, inputs: tuple, create_graph: bool) -> tuple:
    """All vector-Jacobian products in one batched ``grad`` (``is_grads_batched``)."""
    basis = _basis(outputs)
    flat = tuple(o.reshape(-1) for o in outputs)
    vjs = _grad(flat, inputs, tuple(basis), create_graph=create_graph, is_grads_batched=True)
    total = sum(o.numel() for o in outputs)
    per_input = []
    for g, x in zip(vjs, inputs):
        if g is None:
            g = creation.zeros_like(x).expand((total,) + tuple(x.shape))
        per_input.append(_split_rows(g, outputs, tuple(x.shape)))
    return tuple(zip(*per_input))


def _jacobian_forward(func, inputs, strict: bool, vectorize: bool):
    """Forward-mode Jacobian: one Jacobian-vector product per input element."""
    if strict:
        raise RuntimeError('refengine.autograd.functional.jacobian: `strict=True` and '
                           '`strategy="forward-mode"` are not supported together (yet). '
                           'Please either set `strict=False` or `strategy="reverse-mode"`.')
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian is only implemented for `vectorize=True`.")
    basis = _basis(inputs)
    seen = {}

    def columns(*tangents):
        # one forward pass for all the columns: the tangents carry the batch
        with forward_ad.dual_level():
            duals = tuple(forward_ad.make_dual(x, t) for x, t in zip(inputs, tangents))
            seen["tuple"], outs = _as_tuple(func(*duals), "outputs of the user-provided "
                                            "function", "jacobian")
            unpacked = [forward_ad.unpack_dual(o) for o in outs]
            seen["primals"] = tuple(u.primal for u in unpacked)
            return tuple(u.tangent if u.tangent is not None else creation.zeros_like(u.primal)
                         for u in unpacked)
    from ..batching import vmap
    tangents = tuple(b.reshape((b.shape[0],) + tuple(x.shape)) for b, x in zip(basis, inputs))
    stacked_all = vmap(columns)(*tangents)                         # each (N, *out.shape)
    result = []
    for stacked, out in zip(stacked_all, seen["primals"]):
        blocks = _split_rows(stacked, inputs, tuple(out.shape))         # (*x.shape, *out.shape)
        result.append([b.movedim(tuple(range(x.ndim)), tuple(range(out.ndim, out.ndim + x.ndim)))
                       for b, x in zip(blocks, inputs)])
    return _unpack(result, (seen["tuple"], inputs_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: ``J[i][j]`` has shape ``out_i.shape + in_j.shape``.

    Nesting follows the arguments: a single Tensor in and out gives a Tensor;
    a tuple of inputs gives a tuple per output. ``vectorize=True`` computes
    all rows in one batched ``grad`` (reverse mode) and is required by
    ``strategy="forward-mode"`` (one jvp per input element).

    >>> jacobian(lambda x, y: x * y, (refengine.tensor([2.]), refengine.tensor([3.])))
    (tensor([[3.]]), tensor([[2.]]))
    """
    if strategy not in _STRATEGIES:
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, '
                             '"forward-mode" tends to be more performant. Otherwise, prefer to '
                             'use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('refengine.autograd.functional.jacobian: '
                                      '`create_graph=True` and `strategy="forward-mode"` are '
                                      'not supported together (yet). Please either set '
                                      '`create_graph=False` or `strategy="reverse-mode"`.')
        return _jacobian_forward(func, inputs, strict, vectorize)
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs_tuple, outputs = _call(func, inputs, "jacobian", strict)
        if vectorize and strict:
            raise RuntimeError("refengine.autograd.functional.jacobian: `strict=True` and "
                               "`vectorized=True` are not supported together. Please either "
                               "set `strict=False` or `vectorize=False`.")
        if vectorize:
            jac = _jacobian_batched(outputs, inputs, create_graph)
        else:
            jac = _jacobian_rows(outputs, inputs, create_graph, strict)
        return _unpack(_finish(jac, create_graph), (outputs_tuple, inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar ``func`` at ``inputs``: ``H[i][j]`` has shape
    ``in_i.shape + in_j.shape`` (a single Tensor for a single input).

    The outer Jacobian (of the gradient) uses ``outer_jacobian_strategy``;
    "forward-mode" (forward-over-reverse) needs ``vectorize=True``.

    >>> hessian(lambda x: (x ** 3).sum(), refengine.tensor([1., 2.]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in _STRATEGIES:
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar_output(*inp):
        return _scalar_function(func, inp, "hessian", strict)[0].squeeze()

    def gradient(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(scalar_output, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(gradient, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _unpack(res, (inputs_tuple, inputs_tuple))
