"""The backward engine: dependency counting, hook order, accumulation.

One ``GraphTask`` per call: no state is shared between concurrent calls
except the nodes themselves, whose saved tensors and accumulators lock.
Nodes run in dependency order; among ready nodes, a leaf's AccumulateGrad
runs first, then the most recently created node (as PyTorch's CPU engine
orders them; see ``ReadyQueue``).
"""
from __future__ import annotations

import sys
import threading

from ..grad_mode import set_grad_enabled
from .function import BackwardCFunction
from .node import AccumulateGrad, OpNode
from .reentrant import run_on_fresh_stack, stack_is_deep


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
        if _current.task is not None and stack_is_deep():
            # a deeply nested reentrant backward: PyTorch goes on another thread
            run_on_fresh_stack(self._run)
        else:
            self._run()

    def _run(self) -> None:
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
        ready = ReadyQueue()
        for node in dict.fromkeys(e[0] for e, _ in self.roots):
            if self.deps.get(node, 0) == 0:
                ready.push(node)
        while ready:
            node = ready.pop()
            # no local keeps a gradient between nodes: AccumulateGrad adopts a
            # gradient that nothing else holds (see AccumulateGrad.accumulate)
            self._route(node, self._evaluate(node, buffers.pop(node, [])), buffers, ready)

    def _route(self, node, outputs, buffers: dict, ready) -> None:
        for (child, nr), g in zip(node._next, outputs or ()):
            if child is None or child not in self.visits:
                continue
            if g is not None:
                _add(buffers, child, nr, g)
            self.deps[child] -= 1
            if self.deps[child] == 0:
                ready.push(child)

    def _evaluate(self, node, grads: list):
        # ``grads`` is this node's buffer, already out of ``buffers``: ours to extend
        missing = node._num_outputs - len(grads)
        if missing > 0:
            grads.extend([None] * missing)
        runs = node in self.executes
        capture = self.capture_at and not (self.accumulate and isinstance(node, AccumulateGrad))
        if capture and runs:
            # torch captures a gradient that grad() returns before the tensor
            # hooks when the node runs on (toward another input), after them
            # when grad() stops there (torch's "Hooks ordering" note)
            self._capture(node, grads)
        if node._tensor_hooks:
            grads = _tensor_hooks(node, grads)
        # PyTorch fills retained .grad before the node's pre-hooks, although
        # the seed's list puts it after them; PyTorch's behaviour wins. It
        # fills it also where grad() stops at the node without running it.
        if node._retained:
            self._retain(node, grads)
        if capture and not runs:
            self._capture(node, grads)
        if not runs:
            return None
        if node._pre_hooks:
            grads = _pre_hooks(node, grads)
        outputs = self._apply(node, grads)
        if node._post_hooks:
            for hook in list(node._post_hooks.values()):
                new = hook(tuple(outputs), tuple(grads))
                if new is not None:
                    outputs = list(new)
        if not self.keep_graph:
            with node._lock:
                node._release()
        return outputs

    def _capture(self, node, grads: list) -> None:
        for nr, g in enumerate(grads):
            for i in self.capture_at.get((node, nr), ()):
                self.captured[i] = g

    def _apply(self, node, grads: list) -> list:
        if isinstance(node, AccumulateGrad):
            if self.accumulate and grads:
                g, grads[0] = grads[0], None   # `g` is now the engine's only reference
                owned = g is not None and sys.getrefcount(g) <= 2   # `g` and the call's argument
                node.accumulate(g, self.create_graph, owned)
                grads[0] = g                   # for the post-hooks
            elif self.accumulate:
                node.accumulate(None, self.create_graph)
            return []
        needed = self._needed_edges(node)
        with node._lock:
            if needed is None:
                return node.apply(list(grads))
            outputs = node.apply(list(grads), needed) if isinstance(node, OpNode) \
                else node.apply(list(grads))
        # a gradient the backward did not ask for is None, as in PyTorch
        return [g if need else None for g, need in zip(outputs, needed)]

    def _needed_edges(self, node):
        """Which of the node's edges this backward asks for, when it asks for
        some only (``inputs=``); None when every edge is wanted. A custom
        Function's backward hands its gradients on as it returned them."""
        if self.targets is None or isinstance(node, BackwardCFunction):
            return None
        visits = self.visits
        return [m is not None and m in visits for m, _ in node._next]

    def _retain(self, node, grads: list) -> None:
        for nr, ref in list(node._retained.items()):
            tensor = ref()
            if tensor is None:
                continue
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


def _pre_hooks(node, grads: list) -> list:
    for hook in list(node._pre_hooks.values()):
        new = hook(tuple(grads))
        if new is not None:
            grads = list(new)
    return grads


class ReadyQueue:
    """The nodes ready to run, in the order PyTorch's CPU engine runs them.

    The most recently created node first, and a leaf's AccumulateGrad
    before any other (PyTorch gives it the highest sequence number). Nodes
    of equal priority (several AccumulateGrads) come out in the order of the
    binary heap of the C++ standard library's priority queue (libstdc++),
    which this heap reproduces step for step.
    """

    def __init__(self):
        self._heap: list = []

    def __bool__(self) -> bool:
        return bool(self._heap)

    def push(self, node) -> None:
        heap = self._heap
        heap.append(node)
        self._sift_up(len(heap) - 1, 0, node)

    def pop(self):
        heap = self._heap
        top, last = heap[0], heap.pop()
        if heap:
            self._sift_down(len(heap), last)
        return top

    def _sift_up(self, hole: int, top: int, node) -> None:
        heap, key = self._heap, _priority(node)
        parent = (hole - 1) // 2
        while hole > top and _priority(heap[parent]) < key:
            heap[hole] = heap[parent]
            hole, parent = parent, (parent - 1) // 2
        heap[hole] = node

    def _sift_down(self, length: int, node) -> None:
        # the hole left at the top sinks along the larger children, then
        # ``node`` (the former last element) rises from where it ends
        heap, hole, child = self._heap, 0, 0
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if _priority(heap[child]) < _priority(heap[child - 1]):
                child -= 1
            heap[hole], hole = heap[child], child
        if length % 2 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            heap[hole], hole = heap[child - 1], child - 1
        self._sift_up(hole, 0, node)


def _priority(node) -> float:
    return _LAST if isinstance(node, AccumulateGrad) else node._sequence_nr


_LAST = float("inf")


def _tensor_hooks(node, grads: list) -> list:
    """Run the tensor hooks of the node's outputs in the order they were
    registered, with None for an output that got no gradient (as PyTorch)."""
    grads = list(grads)
    hooks = sorted((hook_id, nr, hook) for nr, by_id in node._tensor_hooks.items()
                   for hook_id, hook in list(by_id.items()))
    for _, nr, hook in hooks:
        while len(grads) <= nr:
            grads.append(None)
        new = hook(grads[nr])
        if new is not None:
            if grads[nr] is None:
                raise RuntimeError("can't replace a None gradient with a non-None value")
            grads[nr] = new
    return grads
