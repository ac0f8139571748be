"""Helpers shared by the gradcheck tests."""
from __future__ import annotations

import importlib

import numpy as np
import pytest


def load_engine(name: str):
    """The engine module ``name`` ("refengine", "torch" or "jax"). refengine is
    part of adcheck and must import; an optional engine that is not installed
    skips the test, and any other error importing it fails the test."""
    if name == "refengine":
        return importlib.import_module("adcheck.refengine")
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        package = name.partition(".")[0]    # (jax.numpy's import fails at jax)
        if exc.name not in (name, package):
            raise
        pytest.skip(f"{package} is not installed (pip install '.[{package}]')")


@pytest.fixture
def one_torch_thread():
    """torch on one intra-op thread for the test (restored after): the large
    checks of the scale tests evaluate many small batches, which torch's
    thread pool slows many fold on a busy machine."""
    try:
        import torch
    except ImportError:     # nothing to set: the refengine half of the tests still runs
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def check_recording_vectors(func, inputs, **options) -> tuple:
    """``gradcheck.check(func, inputs, **options)`` and the grad_outputs its
    second-order check drew (``secondorder._random_like``, put back after), as
    NumPy arrays in the order drawn, the comparison's first: what a test needs
    to compute the exact value the check compared."""
    from adcheck import gradcheck
    from adcheck.gradcheck.core import secondorder
    drawn, draw = [], secondorder._random_like

    def recorded(problem, out_idx, rng):
        drawn.append(draw(problem, out_idx, rng))
        return drawn[-1]
    secondorder._random_like = recorded
    try:
        report = gradcheck.check(func, inputs, **options)
    finally:
        secondorder._random_like = draw
    return report, [np.asarray(v.detach().numpy() if hasattr(v, "detach") else v) for v in drawn]


def sweep_seed(op: str, dtype: str, index: int, check: str) -> int:
    """The seed ``adcheck ops --registry torch`` (base seed 0) gives that check of
    op_db's sample ``index``: to repeat a verdict of the sweep."""
    from adcheck.runner.checks import derive_seed
    from adcheck.runner.torchregistry import TorchRegistry
    return derive_seed(0, op, dtype, index, TorchRegistry.seed_checks.get(check, check))


def function(E, forward, backward):
    """A Function of engine ``E`` (refengine or torch) saving its input, with
    these two formulas: ``forward(x)`` and ``backward(x, grad_output)``."""
    class Fn(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return forward(x)

        @staticmethod
        def backward(ctx, g):
            return backward(ctx.saved_tensors[0], g)
    return Fn.apply


def special_case(t):
    """1 at ``t == 0`` exactly, ``t`` elsewhere (refengine): the value at 0 is not
    the limit around it, and autograd's derivative (1 everywhere) agrees with
    the differences, so only the point check (``verdict.pointvalue``) finds it."""
    from adcheck import refengine as E
    return E.where(t == 0, E.ones_like(t), E.zeros_like(t)) + t
