"""Storage: the memory a base tensor and its views share, and its version.

The version counter lives here so that an in-place write through any alias
bumps the one counter every alias sees. ``Tensor.data`` deliberately gets a
new ``Storage`` over the same memory: its writes are not recorded.
"""
from __future__ import annotations

import threading

import numpy as np

# One lock for every counter: bumps are rare (in-place writes only) while a
# storage is made for every op result, and a lock per storage cost more than
# the contention a shared one could cause.
_bump_lock = threading.Lock()


class Storage:
    """A NumPy buffer plus the version counter shared by its aliases."""

    __slots__ = ("array", "version")

    def __init__(self, array: np.ndarray):
        self.array = array
        self.version = 0

    def bump(self) -> None:
        with _bump_lock:
            self.version += 1
