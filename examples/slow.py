"""A function that takes 50 ms per call, one input at a time (it branches on its
data, so its Jacobian cannot be batched): `adcheck check slow.py:slow --timeout 2
--jacobian dense` runs out of time and says where and what to try (docs/cli.md)."""
import time


def slow(x):
    if time.sleep(0.05) or float(x.sum()) > 1e9:   # (one line: a timeout lands on it)
        return x
    return x * x
