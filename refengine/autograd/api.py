"""``autograd.backward`` and ``autograd.grad``."""
from __future__ import annotations

from ..batching.api import unwrap
from ..batching.batched import BatchedTensor, NotBatchable, top_level
from ..batching.runtime import exit_level, new_level
from ..ops.dispatch import VMAP
from ..tensor import Tensor
from .engine import GraphTask
from .onenode import one_node_grads


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _make_grads(outputs: tuple, grads: tuple, is_grads_batched: bool = False) -> list:
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grads)} gradients")
    made = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if out.requires_grad:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if out.is_complex():
                    raise RuntimeError("grad can be implicitly created only for real scalar "
                                       f"outputs but got {out.dtype}")
                # (imported where it is used, not on every call: a from-import
                # of a package runs importlib's Python code, 6,000 instructions)
                from .. import creation
                g = creation.ones_like(out)
        elif not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got "
                            f"{type(g).__name__}")
        else:
            if is_grads_batched:
                _check_batched_shape(g, out, i)
            elif tuple(g.shape) != tuple(out.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{_position(grads, g)}] has "
                                   f"a shape of {g.shape!r} and output[{_position(outputs, out)}] "
                                   f"has a shape of {out.shape!r}.")
            if out.dtype.is_complex is not g.dtype.is_complex:   # (is_complex(): a frame more)
                raise RuntimeError("For complex Tensors, both grad_output and output are "
                                   "required to have the same dtype. Mismatch in dtype: "
                                   f"grad_output[{_position(grads, g)}] has a dtype of {g.dtype} "
                                   f"and output[{_position(outputs, out)}] has a dtype of "
                                   f"{out.dtype}.")
        made.append(g)
    return made


def _position(items, item) -> int:
    """The index PyTorch prints for ``item``: it looks it up with ``list.index``,
    which compares tensors with ``==``, so an earlier tensor of one equal
    element is named instead, and a comparison that cannot broadcast raises."""
    return list(items).index(item)


def _check_batched_shape(g, out, i: int) -> None:
    if g.ndim == 0:
        raise IndexError("invalid index of a 0-dim tensor: with is_grads_batched=True each "
                         "grad_output needs a first (batch) dimension")
    if tuple(g.shape[1:]) != tuple(out.shape):
        raise RuntimeError(
            "If `is_grads_batched=True`, we interpret the first dimension of each grad_output "
            "as the batch dimension. The sizes of the remaining dimensions are expected to "
            f"match the shape of corresponding output, but a mismatch was detected: "
            f"grad_output[{i}] has a shape of {list(g.shape[1:])} and output[{i}] has a shape "
            f"of {list(out.shape)}. If you only want some tensors in `grad_output` to be "
            "considered batched, consider using vmap.")


def _root_edges(outputs: tuple) -> list:
    edges = []
    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            raise TypeError(f"outputs must be Tensors, got {type(out).__name__} at index {i}")
        if not out.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not "
                               "have a grad_fn")
        edges.append(out._grad_edge())
    return edges


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None) -> None:
    """Accumulate d(tensors)/d(leaf) into each leaf's ``.grad`` (PyTorch's semantics)."""
    outputs = _as_tuple(tensors)
    grads = _as_tuple(grad_tensors if grad_tensors is not None else grad_variables)
    if not grads:
        grads = (None,) * len(outputs)
    inputs = _as_tuple(inputs) if inputs is not None else None
    if inputs is not None and len(inputs) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    if retain_graph is None:
        retain_graph = create_graph
    edges = _root_edges(outputs)
    grads = _make_grads(outputs, grads)
    targets = None
    if inputs is not None:
        targets = [_input_edge(t, i) for i, t in enumerate(inputs)]
        for t in inputs:
            # as in PyTorch, a non-leaf input gets its .grad by retaining it
            # (once, even when it already retained it), and keeps retaining
            t.retain_grad()
    task = GraphTask(edges, grads, keep_graph=retain_graph, create_graph=create_graph,
                     accumulate=True, targets=targets)
    task.run()


def _input_edge(t, i: int):
    if not isinstance(t, Tensor):
        raise TypeError(f"inputs must be Tensors, got {type(t).__name__} at index {i}")
    if not t.requires_grad:
        raise RuntimeError("One of the differentiated Tensors does not require grad")
    return t._grad_edge()


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False,
         materialize_grads=False) -> tuple:
    """The gradients of ``outputs`` with respect to ``inputs``, returned, not accumulated.

    >>> gx, = refengine.autograd.grad((x * x).sum(), x)
    """
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    if not ins:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    grads = _as_tuple(grad_outputs) or (None,) * len(outs)
    if retain_graph is None:
        retain_graph = create_graph
    if VMAP.active and top_level(outs + ins + grads):
        return _grad_in_vmap(outs, ins, grads, retain_graph=retain_graph,
                             create_graph=create_graph, allow_unused=allow_unused,
                             is_grads_batched=is_grads_batched,
                             materialize_grads=materialize_grads)
    if is_grads_batched:
        return _batched_grad(outs, ins, grads, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    edges = _root_edges(outs)
    grads = _make_grads(outs, grads)
    targets = [_input_edge(t, i) for i, t in enumerate(ins)]
    captured = _run_grad(edges, grads, targets, retain_graph, create_graph)
    return _finish(captured, ins, allow_unused, materialize_grads, create_graph)


def _run_grad(edges: list, grads: list, targets: list, retain_graph: bool,
              create_graph: bool) -> list:
    """The gradients captured at ``targets``: by the one-node path when the
    graph is that plain case (``onenode``), else by a graph task."""
    if not create_graph:
        captured = one_node_grads(edges, grads, targets, retain_graph)
        if captured is not None:
            return captured
    task = GraphTask(edges, grads, keep_graph=retain_graph, create_graph=create_graph,
                     accumulate=False, targets=targets)
    task.run()
    return task.captured


def _finish(captured: list, ins: tuple, allow_unused: bool, materialize: bool,
            create_graph: bool, batch: tuple = ()) -> tuple:
    result = []
    for i, (g, t) in enumerate(zip(captured, ins)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have "
                                   "been used in the graph. Set allow_unused=True if this is "
                                   "the desired behavior.")
            if materialize:
                from .. import creation   # (only here: see _make_grads)
                # as in PyTorch, zeros that can be differentiated again under
                # create_graph: leaves that require grad
                g = creation.zeros(batch + tuple(t.shape), dtype=t.dtype,
                                   requires_grad=create_graph)
        result.append(g)
    return tuple(result)


def _grad_in_vmap(outs, ins, grads, **options) -> tuple:
    """``grad`` called inside ``vmap`` on batched tensors: per-example gradients.

    The examples of a batch are independent in the physical graph (every op
    maps example k to example k), so the gradient of the physical outputs
    with respect to the physical inputs, with the physical grad_outputs, holds
    each example's gradient in its own row. That needs every input batched at
    the level: the gradient with respect to a tensor shared by the batch
    would sum the examples.
    """
    level = top_level(outs + ins + grads)

    def physical(t, what):
        if isinstance(t, BatchedTensor) and t._level == level:
            return t._value
        raise NotBatchable(f"vmap: autograd.grad inside vmap needs every {what} batched (one "
                           "per example); pass the tensor through vmap's inputs")
    size = next(t._value.shape[0] for t in outs + ins + grads
                if isinstance(t, BatchedTensor) and t._level == level)
    p_outs = tuple(physical(o, "output") for o in outs)
    p_ins = tuple(physical(i, "input") for i in ins)
    p_grads = []
    for o, g in zip(outs, grads):
        if g is None:
            p_grads.append(None if o.numel() != 1 else _ones_batch(o, size))
        elif isinstance(g, BatchedTensor) and g._level == level:
            p_grads.append(g._value)
        elif isinstance(g, Tensor):
            p_grads.append(g.unsqueeze(0).expand(size, *g.shape))
        else:
            p_grads.append(g)
    result = grad(p_outs, p_ins, tuple(p_grads), **options)
    return tuple(None if r is None else BatchedTensor(r, level) for r in result)


def _ones_batch(out, size: int):
    from .. import creation
    if out.is_complex():
        raise RuntimeError("grad can be implicitly created only for real scalar outputs but "
                           f"got {out.dtype}")
    return creation.ones((size, *out.shape), dtype=out.dtype)


def _batched_grad(outs, ins, grads, retain_graph, create_graph, allow_unused, materialize):
    """``is_grads_batched``: the first dimension of each grad_output is a batch.

    One backward pass with batched grad_outputs (vmap over the backward): each
    rule runs once on the whole batch through its op's batching rule.
    """
    batched = _make_grads(outs, grads, is_grads_batched=True)
    if any(g is not None and g.ndim == 0 for g in batched):
        raise ValueError("vmap(vjp, in_dims=0, ...)(<inputs>): Got in_dim=0 for some input, but "
                         "that input is a Tensor of dimensionality 0 so expected in_dim to "
                         "satisfy 0 <= in_dim < 0: with is_grads_batched=True pass a "
                         "grad_output with a batch dimension for every output")
    sizes = sorted({g.shape[0] for g in batched})
    if len(sizes) != 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension: with "
                         "is_grads_batched=True every grad_output needs the same batch size")
    n = sizes.pop()
    edges = _root_edges(outs)
    targets = [_input_edge(t, i) for i, t in enumerate(ins)]
    level = new_level()
    try:
        wrapped = [None if g is None else BatchedTensor(g, level) for g in batched]
        captured = _run_grad(edges, wrapped, targets, retain_graph, create_graph)
        captured = [None if g is None else unwrap(g, level, n) for g in captured]
    finally:
        exit_level()
    return _finish(captured, ins, allow_unused, materialize, create_graph, batch=(n,))
