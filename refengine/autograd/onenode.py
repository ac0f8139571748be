"""``grad()`` through one op node straight into leaves, without a graph task.

The graph of a checked op is most often inputs -> one op -> output: one
``OpNode`` whose edges end at the inputs' ``AccumulateGrad`` nodes. For that
graph the general engine (``engine.GraphTask``) plans dependencies, keeps a
ready queue and routes buffers to compute what this module computes
directly: the node's vjp with the edges ``grad()`` asks for, the gradients
of an input that appears on several edges summed in edge order (as the
engine's buffers sum them), the node released unless the graph is kept.

Anything beyond that plain case goes to the general engine, so that its
order of hooks, retained grads and captures holds unchanged: a hook of any
kind or a retained grad on the node or on a leaf's node, a saved tensor with
pack/unpack hooks, ``create_graph``, a node that is not a refengine op's
(a custom Function, a view's node), an edge into another op's node, a
target that is not a leaf, more than one output root.
"""
from __future__ import annotations

from ..grad_mode import no_grad
from .node import AccumulateGrad, OpNode
from .saved import SavedTensor, SavedTuple


def one_node_grads(edges: list, grads: list, targets: list, keep_graph: bool):
    """What ``grad()``'s graph task would capture at ``targets`` (a list, one
    gradient or None per target), or None when the graph is not the plain
    one-node case: the caller then runs the general engine. Without
    ``create_graph`` only (the caller's part to check)."""
    if len(edges) != 1:
        return None
    node, nr = edges[0]
    if type(node) is not OpNode or not _plain(node) or _hooked_saves(node):
        return None
    for child, _ in node._next:
        if child is not None and (type(child) is not AccumulateGrad or not _plain(child)):
            return None
    # plain loops, not comprehensions (a frame each, on every batched backward)
    wanted = set()
    for target, _ in targets:
        if type(target) is not AccumulateGrad:
            return None
        wanted.add(target)
    needed = []
    for child, _ in node._next:
        needed.append(child is not None and child in wanted)
    if True not in needed:
        # no target lies below the node: the engine does not run it
        return [None] * len(targets)
    buffer = [None] * node._num_outputs
    buffer[nr] = grads[0]
    with no_grad():
        with node._lock:    # (once: the release follows the vjp under the same lock)
            outputs = node.apply(buffer, needed)
            if not keep_graph:
                node._release()
        summed: dict = {}
        for (child, _), g, need in zip(node._next, outputs, needed):
            if need and g is not None:
                before = summed.get(child)
                summed[child] = g if before is None else before + g
    return [summed.get(target) for target, _ in targets]


def _plain(node) -> bool:
    """No hook of any kind and no retained grad on ``node`` (a tensor whose
    hooks were all removed leaves an empty dict behind)."""
    if node._pre_hooks or node._post_hooks or node._retained:
        return False
    return not (node._tensor_hooks and any(node._tensor_hooks.values()))


def _hooked_saves(node) -> bool:
    for value in node._saved.values():
        if type(value) is SavedTensor:
            if value._hooks is not None:
                return True
        elif type(value) is SavedTuple:
            return True
    return False
