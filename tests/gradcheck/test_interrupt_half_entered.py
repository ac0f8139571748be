"""A timeout (``gradcheck.core.interrupt``) is never raised inside a context
manager's ``__enter__`` or ``__exit__``: raised there, the context is left half
entered, and its ``__exit__`` never runs.

torch's ``temporarily_pop_interpreter_stack`` (a custom Function under vmap)
pops torch.func's layer in its ``__enter__`` and pushes it back when its
generator ends. Interrupted after the pop, the generator was left suspended;
when the exception's traceback was freed, after the check, its ``finally``
pushed the vmap layer back, and every later test of that CI worker (277) ran
inside a vmap ("random operations inside of vmap")."""
from __future__ import annotations

import gc
import random
import sys
import time

import pytest

from adcheck.gradcheck.core.interrupt import interrupting

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no interval timer on Windows")


class Stop(BaseException):
    pass


class SlowToEnter:
    """Enters a state, then takes ``seconds`` more in its ``__enter__``; leaves the
    state in its ``__exit__``."""

    def __init__(self, state: list, seconds: float):
        self.state, self.seconds = state, seconds

    def __enter__(self):
        self.state.append("entered")
        end = time.monotonic() + self.seconds
        while time.monotonic() < end:   # (the timer fires in here)
            pass
        return self

    def __exit__(self, *exc):
        self.state.pop()


def test_a_timer_firing_in_enter_is_raised_in_the_block_and_exit_runs():
    state = []
    with pytest.raises(Stop):
        with interrupting(0.05, Stop):
            with SlowToEnter(state, 0.5):
                end = time.monotonic() + 10   # (bounded: a lost stop fails, not hangs)
                while time.monotonic() < end:
                    time.sleep(0.001)
    assert state == []
    assert sys.getprofile() is None


def test_a_hang_called_from_deep_inside_an_enter_still_times_out():
    def deep(n):
        if n:
            return deep(n - 1)
        end = time.monotonic() + 10   # (bounded: a lost stop fails, not hangs)
        while time.monotonic() < end:
            pass

    class HangsInEnter:
        def __enter__(self):
            deep(16)

        def __exit__(self, *exc):
            pass

    start = time.monotonic()
    with pytest.raises(Stop):
        with interrupting(0.05, Stop):
            with HangsInEnter():
                pass
    assert time.monotonic() - start < 5


def test_custom_functions_under_vmap_interrupted_anywhere_leave_no_layer():
    torch = pytest.importorskip("torch", reason="torch.func's transform stack is torch's")
    functorch = torch._C._functorch

    class Sin(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x.sin()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            return g * ctx.saved_tensors[0].cos()

    def chain(x):
        for _ in range(10):
            x = Sin.apply(x) * 1.0001
        return x

    x = torch.randn(8, 5, dtype=torch.float64)
    rng = random.Random(0)
    depth = functorch.get_dynamic_layer_stack_depth()
    stopped = 0
    for _ in range(3000):
        try:
            with interrupting(rng.uniform(1e-5, 2e-3), Stop):
                for _ in range(5):
                    torch.func.vmap(chain)(x)
        except Stop:
            stopped += 1
        assert functorch.get_dynamic_layer_stack_depth() == depth
    gc.collect()   # (a generator left suspended would act now)
    assert functorch.get_dynamic_layer_stack_depth() == depth
    assert stopped > 1000
    torch.rand(2)
