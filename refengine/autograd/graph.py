"""``autograd.graph``: the Node type, saved-tensor hooks and multi-grad hooks."""
from __future__ import annotations

import threading

from .engine import current_task
from .hooks import disable_saved_tensors_hooks, saved_tensors_hooks
from .node import Node
from .versions import increment_version

__all__ = ["Node", "saved_tensors_hooks", "disable_saved_tensors_hooks",
           "register_multi_grad_hook", "increment_version"]


def register_multi_grad_hook(tensors, fn, *, mode: str = "all"):
    """Call ``fn`` once the gradients of ``tensors`` are computed in a backward.

    ``mode="all"``: ``fn(grads)`` with one entry per tensor (None for those
    that get no gradient in this pass), after the last one is computed.
    ``mode="any"``: ``fn(grad)`` with the first gradient computed.
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    lock = threading.Lock()
    state: dict = {}    # graph task -> [count expected, grads] or fired flag

    def hook_for(i: int):
        def hook(grad):
            task = current_task()
            with lock:
                if mode == "any":
                    if state.get(id(task)):
                        return None
                    state[id(task)] = True
                    if task is not None:
                        task.on_finish.append(lambda: state.pop(id(task), None))
                    fire = True
                else:
                    entry = state.get(id(task))
                    if entry is None:
                        expected = sum(1 for t in tensors if task is None or
                                       task.will_receive(t._grad_edge()))
                        entry = state[id(task)] = [expected, [None] * len(tensors)]
                        if task is not None:
                            task.on_finish.append(lambda: state.pop(id(task), None))
                    entry[1][i] = grad
                    entry[0] -= 1
                    fire = entry[0] == 0
            if fire:
                if mode == "any":
                    fn(grad)
                else:
                    fn(tuple(state[id(task)][1]))
            return None
        return hook

    return _Multi([t.register_hook(hook_for(i)) for i, t in enumerate(tensors) if t.requires_grad])


class _Multi:
    """A handle that removes several hooks at once."""

    def __init__(self, handles):
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
