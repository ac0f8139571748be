"""A function that counts its calls, for the tests of the quick pass's screens."""
from __future__ import annotations


class Counted:
    """``func`` counting its calls (a vmapped call is one call of batched
    tensors); a first derivative's values alone (``without_graph``) counted
    apart."""

    def __init__(self, func):
        self.func, self.calls = func, 0
        if hasattr(func, "without_graph"):
            self.without_graph = Counted(func.without_graph)

    def __call__(self, *args):
        self.calls += 1
        return self.func(*args)
