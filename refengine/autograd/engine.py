"""The backward engine: dependency counting, hook order, accumulation.

One ``GraphTask`` per call: no state is shared between concurrent calls
except the nodes themselves, whose saved tensors and accumulators lock.
Nodes run in dependency order; among ready nodes, the most recently
created runs first (as PyTorch's CPU engine orders them).
"""
from __future__ import annotations

import heapq
import threading

from ..grad_mode import set_grad_enabled
from .node import AccumulateGrad


class _Current(threading.local):
    task = None     # each thread's default, found without a failed getattr


_current = _Current()


def current_task():
    """The graph task running in this thread (for multi-grad hooks), or None."""
    return _current.task


class GraphTask:
    """One backward pass from ``roots`` (edges with their gradients)."""

    def __init__(self, roots, grads, *, keep_graph: bool, create_graph: bool,
                 accumulate: bool, targets=None):
        self.roots = [(e, g) for e, g in zip(roots, grads) if e[0] is not None]
        self.keep_graph = keep_graph
        self.create_graph = create_graph
        self.accumulate = accumulate
        self.targets = targets            # list of edges to capture, or None
        self.captured = [None] * len(targets) if targets is not None else None
        self.on_finish = []
        self._plan()

    def _plan(self) -> None:
        nodes, stack = set(), [e[0] for e, _ in self.roots]
        nodes.update(stack)
        parents: dict = {}
        while stack:
            n = stack.pop()
            for m, _ in n._next:
                if m is None:
                    continue
                parents.setdefault(m, []).append(n)
                if m not in nodes:
                    nodes.add(m)
                    stack.append(m)
        self.executes = self._needed(parents) if self.targets is not None else nodes
        target_nodes = {e[0] for e in self.targets} if self.targets is not None else set()
        self.visits = self.executes | target_nodes
        self.deps = {}
        for n in self.executes:
            for m, _ in n._next:
                if m in self.visits:
                    self.deps[m] = self.deps.get(m, 0) + 1
        self.capture_at = {}
        for i, (node, nr) in enumerate(self.targets or ()):
            self.capture_at.setdefault((node, nr), []).append(i)

    def _needed(self, parents: dict) -> set:
        # A node runs when a target lies below it: the ancestors of the
        # targets. For backward(inputs=...) the target nodes run too (the
        # seed: backward "executes all Nodes"); grad() only captures at them.
        targets = {e[0] for e in self.targets if e[0] is not None}
        needed, stack = set(), [p for t in targets for p in parents.get(t, ())]
        while stack:
            n = stack.pop()
            if n not in needed:
                needed.add(n)
                stack.extend(parents.get(n, ()))
        if self.accumulate:
            needed |= targets
        return needed

    def will_receive(self, edge) -> bool:
        return edge[0] in self.visits

    def run(self) -> None:
        _current.task, prev = self, _current.task
        try:
            with set_grad_enabled(self.create_graph):
                self._loop()
            for fn in self.on_finish:
                fn()
        finally:
            _current.task = prev

    def _loop(self) -> None:
        buffers: dict = {}
        for (node, nr), g in self.roots:
            _add(buffers, node, nr, g)
        ready = [(-n._sequence_nr, n) for n in {e[0] for e, _ in self.roots}
                 if self.deps.get(n, 0) == 0]
        heapq.heapify(ready)
        while ready:
            _, node = heapq.heappop(ready)
            grads = buffers.pop(node, [])
            outputs = self._evaluate(node, grads)
            for (child, nr), g in zip(node._next, outputs or ()):
                if child is None or child not in self.visits:
                    continue
                if g is not None:
                    _add(buffers, child, nr, g)
                self.deps[child] -= 1
                if self.deps[child] == 0:
                    heapq.heappush(ready, (-child._sequence_nr, child))

    def _evaluate(self, node, grads: list):
        # ``grads`` is this node's buffer, already out of ``buffers``: ours to extend
        missing = node._num_outputs - len(grads)
        if missing > 0:
            grads.extend([None] * missing)
        if node._tensor_hooks:
            grads = _tensor_hooks(node, grads)
        # PyTorch fills retained .grad before the node's pre-hooks, although
        # the seed's list puts it after them; PyTorch's behaviour wins. It
        # fills it also where grad() stops at the node without running it.
        if node._retained:
            self._retain(node, grads)
        if self.capture_at:
            for nr, g in enumerate(grads):
                for i in self.capture_at.get((node, nr), ()):
                    self.captured[i] = g
        if node not in self.executes:
            return None
        if node._pre_hooks:
            for hook in list(node._pre_hooks.values()):
                new = hook(tuple(grads))
                if new is not None:
                    grads = list(new)
        lock = node._lock
        if isinstance(node, AccumulateGrad):
            if self.accumulate:
                node.accumulate(grads[0] if grads else None, self.create_graph)
            outputs = []
        else:
            with lock:
                outputs = node.apply(list(grads))
        if node._post_hooks:
            for hook in list(node._post_hooks.values()):
                new = hook(tuple(outputs), tuple(grads))
                if new is not None:
                    outputs = list(new)
        if not self.keep_graph:
            with lock:
                node._release()
        return outputs

    def _retain(self, node, grads: list) -> None:
        for nr, tensor in list(node._retained.items()):
            g = grads[nr] if nr < len(grads) else None
            if g is None:
                continue
            # backward passes in several threads may share the node: the
            # read and the write of .grad go together, or an update is lost
            with node._lock:
                if tensor._grad is None:
                    # a copy, recorded under create_graph (CloneBackward0, as in PyTorch)
                    tensor._grad = g.clone() if self.create_graph else g.detach().clone()
                else:
                    tensor._grad = tensor._grad + (g if self.create_graph else g.detach())


def _add(buffers: dict, node, nr: int, g) -> None:
    slots = buffers.setdefault(node, [])
    while len(slots) <= nr:
        slots.append(None)
    slots[nr] = g if slots[nr] is None else slots[nr] + g


def _tensor_hooks(node, grads: list) -> list:
    if not node._tensor_hooks:
        return grads
    grads = list(grads)
    for nr, hooks in node._tensor_hooks.items():
        while len(grads) <= nr:
            grads.append(None)
        for hook in list(hooks.values()):
            if grads[nr] is None:
                break
            new = hook(grads[nr])
            if new is not None:
                grads[nr] = new
    return grads
