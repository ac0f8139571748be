"""Modules and nested inputs as flat, named inputs: the front end of ``check``.

A check differentiates a function of a flat tuple of tensors. Two things
users check are not that, and this module turns them into it, naming each
flat input so that a failure says which one is wrong:

- a torch or refengine ``nn.Module``: ``check(layer, (x,))`` checks the
  derivatives with respect to ``x`` AND to every floating point parameter
  that requires grad (with ``buffers=True`` also every floating point
  buffer), each named as ``named_parameters()`` names it (``"0.weight"``).
  The module is called through ``functional_call`` (``torch.func``'s, or
  ``refengine.nn``'s) with copies of its tensors, so it is never modified;
  a parameter that does not require grad is held fixed, as torch would;
- nested inputs: an input that is a dict, list or tuple of tensors (a pytree
  of parameters; on JAX any pytree ``jax.tree_util`` knows, Flax's
  included) is checked leaf by leaf, each leaf named by its path
  (``params['dense']['kernel']``), the tree rebuilt around the leaves on
  every call; leaves that are not tensors stay as they are.

Inputs are named by the function's (or ``forward``'s) parameter names when
its signature tells, so ``check(f, (params, x))`` names ``x`` too.

Example::

    report = gradcheck.check(layer, (x,), precise=True)
    report.failures[0].in_name        # "weight"
    report.input_names                # ["x", "weight", "bias"]
"""
from __future__ import annotations

import inspect
import re
import sys
from dataclasses import dataclass

import numpy as np

from adcheck.gradcheck.engines import is_tensor, recompute
from adcheck.gradcheck.core.problem import as_tuple


@dataclass(frozen=True)
class Flat:
    """A function of flat inputs, the inputs, a name per input (``None``: no
    name known) and the subject's name (``None``: the function's own)."""

    func: object
    inputs: tuple
    names: tuple
    name: str | None = None


def module_kind(obj) -> str | None:
    """``"torch"`` or ``"refengine"`` for an ``nn.Module`` of that engine, else ``None``
    (neither engine is imported for that)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.nn.Module):
        return "torch"
    nn = sys.modules.get("adcheck.refengine.nn")
    if nn is not None and isinstance(obj, nn.Module):
        return "refengine"
    return None


def _argument_names(func, count: int) -> list:
    """The names of the first ``count`` positional parameters, ``None`` where unknown."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        params = []
    named = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [named[i] if i < len(named) else None for i in range(count)]


def _jax_leaves(value) -> bool:
    jax = sys.modules.get("jax")
    return jax is not None and any(isinstance(leaf, jax.Array)
                                   for leaf in jax.tree_util.tree_leaves(value))


def _spec_paths(spec, prefix: str = "") -> list:
    """The path of every leaf of a ``refengine.pytree.TreeSpec``, as JAX writes them."""
    if spec.is_leaf():
        return [prefix]
    if spec.kind == "dict":
        keys = spec.context[1] if isinstance(spec.context, tuple) else spec.context
        steps = [f"[{k!r}]" for k in keys]
    elif spec.kind == "namedtuple":
        steps = [f".{field}" for field in spec.type._fields]
    else:
        steps = [f"[{k}]" for k in range(len(spec.children))]
    return [path for step, child in zip(steps, spec.children)
            for path in _spec_paths(child, prefix + step)]


def _flatten(value) -> tuple:
    """``(leaves, paths, rebuild)`` of one input; ``rebuild(leaves)`` is the input again."""
    if _jax_leaves(value):
        import jax
        pairs, treedef = jax.tree_util.tree_flatten_with_path(value)
        paths = [jax.tree_util.keystr(path) for path, _ in pairs]
        return [leaf for _, leaf in pairs], paths, treedef.unflatten
    from adcheck.refengine.pytree import tree_flatten, tree_unflatten
    leaves, spec = tree_flatten(value)
    return leaves, _spec_paths(spec), lambda new: tree_unflatten(new, spec)


def _is_tree(value) -> bool:
    if is_tensor(value):   # (a tensor flattens to itself: no flattening asked for)
        return False
    leaves, _, _ = _flatten(value)
    return any(is_tensor(leaf) for leaf in leaves) and not (len(leaves) == 1
                                                            and leaves[0] is value)


def flatten_call(func, inputs, arg_names: list, name: str | None = None) -> Flat:
    """``func(*inputs)`` as a function of the tensor leaves of its inputs, each
    named ``arg_names[i]`` followed by the leaf's path."""
    inputs = as_tuple(inputs)
    structure, flat, names = [], [], []
    for i, value in enumerate(inputs):
        leaves, paths, rebuild = _flatten(value)
        slots = [k for k, leaf in enumerate(leaves) if is_tensor(leaf)]
        structure.append((leaves, slots, rebuild, len(flat)))
        for k in slots:
            flat.append(leaves[k])
            base = arg_names[i] if arg_names[i] is not None else f"input {i}"
            names.append(base + paths[k] if (paths[k] or arg_names[i]) else None)

    def call(*args):
        rebuilt = []
        for leaves, slots, rebuild, start in structure:
            new = list(leaves)
            for j, k in enumerate(slots):
                new[k] = args[start + j]
            rebuilt.append(rebuild(new))
        return _output_leaves(func(*rebuilt))

    call.__name__ = name or getattr(func, "__name__", "function")
    return Flat(call, tuple(flat), tuple(names), name)


def _output_leaves(value):
    """A result as the check takes it: a tensor or a flat tuple of them as it
    is; nested (a dict of a model's outputs, an LSTM's ``(out, (h, c))``) its
    tensor leaves in order, which were otherwise not checked at all."""
    if is_tensor(value) or (isinstance(value, (tuple, list)) and all(
            is_tensor(v) or not _is_tree(v) for v in value)):
        return value
    leaves, _, _ = _flatten(value)
    return tuple(leaf for leaf in leaves if is_tensor(leaf))


def _copy(tensor, kind: str, requires_grad: bool, double: bool):
    """A leaf copy of a parameter or buffer, in double precision when ``double``."""
    if kind == "torch":
        import torch
        copy = tensor.detach().clone()
        if double:
            copy = copy.to(torch.complex128 if copy.is_complex() else torch.float64)
        return copy.requires_grad_(requires_grad)
    from adcheck import refengine
    array = tensor.detach().numpy().copy()
    if double:
        array = array.astype(np.complex128 if np.iscomplexobj(array) else np.float64)
    return refengine.tensor(array, dtype=getattr(refengine, str(array.dtype)),
                            requires_grad=requires_grad)


def _sparse(tensor, kind: str) -> bool:
    if kind != "torch":
        return False
    import torch
    return tensor.layout != torch.strided


def module_function(module, inputs, *, buffers: bool = False, double: bool = False) -> Flat:
    """``module(*inputs)`` as a function of its inputs and its floating point
    parameters (and buffers, with ``buffers``), named; ``double`` copies them
    in float64 or complex128 (what ``adcheck check`` does for a module that
    is built in float32)."""
    kind = module_kind(module)
    if kind == "torch":
        from torch.func import functional_call
    else:
        from adcheck.refengine.nn import functional_call
    inputs = as_tuple(inputs)
    entries = [(n, p, bool(p.requires_grad)) for n, p in module.named_parameters()
               if p.is_floating_point() or p.is_complex()]
    held = {}
    if buffers or double:
        for n, b in module.named_buffers():
            if not (b.is_floating_point() or b.is_complex()):
                continue
            if not buffers and _sparse(b, kind):
                # (constant problem data, cvxpylayers' CvxpyLayer's: no input of the
                # check, which takes dense tensors only, but held as the module holds it)
                held[n] = _copy(b, kind, False, double)
                continue
            entries.append((n, b, buffers))
    copies = [_copy(t, kind, grad, double) for _, t, grad in entries]
    count, keys = len(inputs), [n for n, _, _ in entries]

    def forward(*args):
        params = {**held, **dict(zip(keys, args[count:]))}
        outs = functional_call(module, params, tuple(args[:count]))
        if kind == "torch":   # (for a backward that recomputes the forward: checkpoint)
            recompute.record(_flatten(outs)[0], module, params)
        return outs

    arg_names = _argument_names(module.forward, count) + keys
    flat = flatten_call(forward, inputs + tuple(copies), arg_names, type(module).__name__)
    flat.func.random_layers = random_layers(module)
    flat.func.spectral_norms = spectral_norms(module)
    flat.func.padding_rows = padding_rows(module)
    return flat


def random_layers(module) -> list:
    """The names of ``module``'s layers that draw random numbers on every call
    as it is, in training mode: dropout layers (of any kind) with ``p > 0``,
    RReLU, and layers with a dropout rate of their own (MultiheadAttention's,
    a recurrent layer's between its layers). Their outputs change from call
    to call, which the determinism check finds; this says where, and that
    ``.eval()`` ends it."""
    return [f"{name}: {type(m).__name__}" if name else type(m).__name__
            for name, m in module.named_modules() if _draws(m)]


def _draws(layer) -> bool:
    if not getattr(layer, "training", False):
        return False
    kind = type(layer).__name__
    if "Dropout" in kind:
        return getattr(layer, "p", 0) > 0
    if kind == "RReLU":
        return True
    rate = getattr(layer, "dropout", 0)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate <= 0:
        return False
    return getattr(layer, "num_layers", 2) > 1   # (one recurrent layer: none between)


def spectral_norms(module) -> list:
    """The weights under ``spectral_norm`` in ``module`` in training mode (the
    parametrization and the older hook). Every call takes a power-iteration
    step from its vectors u and v, and the backward treats the step's result
    as constant, by torch's design (the largest singular value's gradient once
    the iteration has converged): each evaluation of a check starts from the
    same u and v, so the gradient is not the derivative of the function
    called, and only ``.eval()`` (u and v fixed) makes it one."""
    found = []
    for name, m in module.named_modules():
        if not getattr(m, "training", False):
            continue
        if type(m).__name__ == "_SpectralNorm":     # at <owner>.parametrizations.<weight>.<k>
            owner, _, rest = name.rpartition("parametrizations.")
            found.append(owner + rest.split(".")[0])
        for hook in getattr(m, "_forward_pre_hooks", {}).values():
            if type(hook).__name__ == "SpectralNorm":
                found.append(f"{name}.{hook.name}" if name else hook.name)
    return found


#: the derivative checks a spectral norm in training mode fails by design
_DERIVATIVE_CHECKS = ("reverse", "forward", "fast-reverse", "fast-forward")


def name_spectral_norms(report, func) -> None:
    """Say on each failing derivative check of a module with ``spectral_norms``
    in training mode why it fails and what checks it instead."""
    weights = getattr(func, "spectral_norms", None)
    if not weights:
        return
    text = (f"spectral_norm in training mode ({', '.join(weights)}): each call takes a "
            "power-iteration step from the layer's vectors u and v and the backward treats "
            "the step's result as constant (torch's design: the gradient of the largest "
            "singular value once the iteration has converged for these weights, which it has "
            "not here: a layer built without iterating, or weights the check moved), so the "
            "gradient is not the derivative of the function called; "
            "check the module in eval mode (.eval()), where u and v stay fixed")
    for result in report.failures:
        if result.check in _DERIVATIVE_CHECKS:
            result.diagnosis = text if not result.diagnosis else f"{result.diagnosis}; {text}"


def padding_rows(module) -> dict:
    """``{weight name: padding index}`` of ``module``'s embeddings with a
    ``padding_idx``: torch gives that row no gradient, by design."""
    found = {}
    for name, m in module.named_modules():
        pad = getattr(m, "padding_idx", None)
        if "Embedding" in type(m).__name__ and isinstance(pad, int):
            found[f"{name}.weight" if name else "weight"] = pad
    return found


def name_padding_rows(report, func) -> None:
    """Say on each failing derivative check of an embedding's weight with a
    ``padding_idx`` that its padding row gets no gradient by torch's design
    (indices equal to it make that row differ from the finite differences)."""
    rows = getattr(func, "padding_rows", None) or {}
    for result in report.failures:
        pad = rows.get(result.in_name)
        if pad is None or result.check not in _DERIVATIVE_CHECKS:
            continue
        text = (f"{result.in_name} has padding_idx={pad}, whose row gets no gradient by "
                "torch's design: indices equal to it make that row differ from the finite "
                "differences; check with indices that avoid it")
        # (first: the generic words after it, "the formula is wrong for some elements
        # only", are then read as what they are, the pattern of the entries)
        result.diagnosis = text if not result.diagnosis else f"{text}; {result.diagnosis}"


def doubles_parameters(inputs) -> bool:
    """Whether a module checked at ``inputs`` gets its parameters in double
    precision: some tensor among them is one and every floating one is float64
    or complex128 (integer and bool tensors, an embedding's indices or a mask,
    carry no precision: a model taking only indices is checked in double)."""
    names = [str(v.dtype).rsplit(".", 1)[-1] for v in as_tuple(inputs) if hasattr(v, "dtype")]
    floating = [n for n in names if n.startswith(("float", "complex", "bfloat"))]
    return bool(names) and all(n in ("float64", "complex128") for n in floating)


def prepare(func, inputs, options) -> tuple:
    """``(func, inputs, names, name)`` as the check runs it: a module or nested
    inputs flattened (see the module docstring), else as given; ``names`` is
    ``options.input_names`` when given, else the flattening's, else ``None``."""
    flat = None
    if module_kind(func) is not None:
        # double-precision inputs make a module built in float32 checked in double
        # precision too (on copies of its parameters), as ``adcheck check`` does
        flat = module_function(func, inputs, buffers=options.buffers, double=doubles_parameters(inputs))
    elif options.buffers:
        raise ValueError(f"check: buffers=True applies to an nn.Module, and "
                         f"{type(func).__name__} is not one; leave buffers out")
    elif any(_is_tree(value) for value in as_tuple(inputs)):
        flat = flatten_call(func, inputs, _argument_names(func, len(as_tuple(inputs))))
    names, name = options.input_names, options.name
    if flat is not None:
        func, inputs = flat.func, flat.inputs
        names, name = names or flat.names, name or flat.name
    if names is not None and len(names) != len(as_tuple(inputs)):
        raise ValueError(f"check: input_names has {len(names)} names for "
                         f"{len(as_tuple(inputs))} inputs; give one name per input"
                         + (" (the flattened inputs, then the parameters)" if flat else ""))
    return func, inputs, names, name


def name_results(report, names, count: int) -> None:
    """Put each input's name on the report and its results; for a second-order
    check (``count`` inputs, more than ``names``) the grad_outputs are named too."""
    if names is None:
        return
    names = list(names) + [f"grad_outputs[{k}]" for k in range(count - len(names))]
    report.input_names = names
    # (what a check left unjudged names inputs by number: ``verdict.offdomain``'s words)
    report.partial = [re.sub(r"\binput (\d+)\b(?! \()", lambda m: _named(m, names), text)
                      for text in report.partial]
    for result in report.results:
        if result.in_idx is not None and result.in_idx < len(names):
            result.in_name = names[result.in_idx]


def _named(found, names: list) -> str:
    """``input k`` of a match, with its name where it has one."""
    k = int(found.group(1))
    return f"input {k} ({names[k]})" if k < len(names) else found.group(0)
