"""sin, but the process dies (a segmentation fault) where an entry is exactly
zero: ``adcheck check fragile.py:fragile --engine torch --inputs "randn(4)"``
reports that point as a crash with its input, and keeps exploring
(docs/explore.md, "A point that crashes the process")."""
import ctypes

import torch


def fragile(x):
    if bool((x == 0).any()):
        ctypes.string_at(0)     # reads address 0: SIGSEGV
    return torch.sin(x)
