"""Storage: the memory a base tensor and its views share, and its version.

The version counter lives here so that an in-place write through any alias
bumps the one counter every alias sees. ``Tensor.data`` deliberately gets a
new ``Storage`` over the same memory: its writes are not recorded.
"""
from __future__ import annotations

import threading

import numpy as np


class Storage:
    """A NumPy buffer plus the version counter shared by its aliases."""

    __slots__ = ("array", "version", "_lock")

    def __init__(self, array: np.ndarray):
        self.array = array
        self.version = 0
        self._lock = threading.Lock()

    def bump(self) -> None:
        with self._lock:
            self.version += 1
