"""Calling an OpInfo's sample with some tensors replaced, and the reverse- and
forward-mode Jacobians of refengine in the real coordinates of finite_diff."""
from __future__ import annotations

import numpy as np

import adcheck.refengine as E
from adcheck.refengine.autograd import forward_ad
from adcheck.opinfo import map_tensors

from finite_diff import real_size, real_view, unit


def diff_tensors(sample) -> list:
    """The sample's tensors that require grad (each once, in order)."""
    seen, out = set(), []
    for t in sample.tensors():
        if t.requires_grad and id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


def outputs(opinfo, sample, replace: dict | None = None) -> list:
    """The differentiable (float or complex) outputs of the op on ``sample``, with the
    tensors whose ids are keys of ``replace`` swapped for the values."""
    replace = replace or {}
    structure = map_tensors((sample.input, sample.args, sample.kwargs),
                            lambda t: replace.get(id(t), t))
    inp, args, kwargs = structure
    result = sample.output_process_fn_grad(opinfo.op(inp, *args, **kwargs))
    results = list(result) if isinstance(result, (tuple, list)) else [result]
    return [r for r in results if r.dtype.is_floating_point or r.dtype.is_complex]


def numpy_function(opinfo, sample):
    """``f(list of arrays) -> list of arrays``: the op as a function of its differentiable
    inputs, evaluated without autograd (for finite differences)."""
    ins = diff_tensors(sample)

    def f(arrays):
        with E.no_grad():
            outs = outputs(opinfo, sample, {id(t): E.tensor(a) for t, a in zip(ins, arrays)})
        return [o.numpy().copy() for o in outs]
    return f, [t.detach().numpy().copy() for t in ins]


def reverse_jacobian(opinfo, sample) -> list:
    """``J[out_idx][in_idx]`` built row by row with ``refengine.autograd.grad``."""
    ins = diff_tensors(sample)
    outs = outputs(opinfo, sample)
    jac = []
    for o in outs:
        base = o.detach().numpy()
        rows = [np.zeros((real_size(base), real_size(t.detach().numpy()))) for t in ins]
        if o.requires_grad:
            for coord in range(real_size(base)):
                g = E.tensor(unit(base, coord))
                grads = E.autograd.grad(o, ins, g, retain_graph=True, allow_unused=True)
                for in_idx, (t, gi) in enumerate(zip(ins, grads)):
                    if gi is not None:
                        assert gi.shape == t.shape, f"grad shape {gi.shape} != input {t.shape}"
                        assert gi.dtype == t.dtype, f"grad dtype {gi.dtype} != input {t.dtype}"
                        rows[in_idx][coord] = real_view(gi.numpy())
        jac.append(rows)
    return jac


def forward_jacobian(opinfo, sample) -> list:
    """``J[out_idx][in_idx]`` built column by column with forward-mode duals."""
    ins = diff_tensors(sample)
    primals = [t.detach() for t in ins]
    jac = None
    for in_idx, p in enumerate(primals):
        base_in = p.numpy()
        for coord in range(real_size(base_in)):
            with forward_ad.dual_level():
                dual = forward_ad.make_dual(p, E.tensor(unit(base_in, coord)))
                repl = {id(t): q for t, q in zip(ins, primals)}
                repl[id(ins[in_idx])] = dual
                outs = outputs(opinfo, sample, repl)
                if jac is None:
                    jac = [[np.zeros((real_size(o.detach().numpy()), real_size(q.numpy())))
                            for q in primals] for o in outs]
                for out_idx, o in enumerate(outs):
                    tangent = forward_ad.unpack_dual(o).tangent
                    if tangent is not None:
                        assert tangent.shape == o.shape, f"tangent shape {tangent.shape} != {o.shape}"
                        assert tangent.dtype == o.dtype, f"tangent dtype {tangent.dtype} != {o.dtype}"
                        jac[out_idx][in_idx][:, coord] = real_view(tangent.detach().numpy())
    if jac is None:   # no input has a coordinate (empty tensors)
        with E.no_grad():
            outs = outputs(opinfo, sample, {id(t): q for t, q in zip(ins, primals)})
        jac = [[np.zeros((real_size(o.numpy()), 0)) for _ in primals] for o in outs]
    return jac


def random_like(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random array of ``a``'s shape and dtype."""
    if np.iscomplexobj(a):
        out = rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape)
    else:
        out = rng.standard_normal(a.shape)
    return np.asarray(out, dtype=a.dtype)     # an array even for 0-d shapes


def inner(a, b):
    """The real inner product ``Re sum(a * conj(b))`` of two refengine tensors."""
    prod = a * b.conj() if a.is_complex() or b.is_complex() else a * b
    return (prod.real if prod.is_complex() else prod).sum()


def first_gradient_scalar(opinfo, sample, us: list, vs: list, replace: dict, create_graph: bool):
    """``s = sum_i <G_i, v_i>`` where ``G = vjp(op, inputs, grad_outputs=us)``."""
    ins = [replace.get(id(t), t) for t in diff_tensors(sample)]
    outs = outputs(opinfo, sample, replace)
    pairs = [(o, u) for o, u in zip(outs, us) if o.requires_grad]
    grads = E.autograd.grad([o for o, _ in pairs], ins, [u for _, u in pairs],
                            create_graph=create_graph, allow_unused=True)
    total = None
    for g, v in zip(grads, vs):
        if g is not None:
            term = inner(g, v)
            total = term if total is None else total + term
    return total
