"""A slow function whose Jacobian cannot be batched (it branches on its data):
`adcheck check slow.py:slow --timeout 2 --jacobian dense` runs out of time and
says where and what to try (docs/cli.md)."""
import time


def slow(x):
    time.sleep(0.05)
    if float(x.sum()) > 1e9:   # data-dependent: evaluated one input at a time
        return x
    return x * x
