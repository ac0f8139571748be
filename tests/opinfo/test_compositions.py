"""Property: random compositions of 2 to 6 registry ops, on random shapes,
have the same Jacobian in reverse mode, forward mode and by finite
differences.

The ops are the registry's own (``opinfo.get(name).op``): smooth elementwise
ops, and reductions over a random dim. An op defined on part of the line
gets its input through ``low + (high - low) * sigmoid(x)``, which maps any
value into the interval its OpInfo samples from (``opinfo.domains``), so
every composition is smooth at every input hypothesis draws. The finite
differences are this file's own (central, step 1e-6, in float64), so the
property does not rest on gradcheck.
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from adcheck import gradcheck
from adcheck import opinfo
import adcheck.refengine as E
from adcheck.opinfo import domains as D

#: smooth on the whole real line, with bounded derivatives
TOTAL = ("sin", "cos", "tanh", "sigmoid", "atan", "erf", "neg", "nn.functional.silu",
         "nn.functional.gelu", "nn.functional.softplus")
#: smooth inside an interval: the interval they are fed from
PARTIAL = {"exp": D.MODERATE, "sinh": D.MODERATE, "cosh": D.MODERATE, "log": D.POSITIVE,
           "log1p": D.ABOVE_MINUS_ONE, "sqrt": D.POSITIVE, "rsqrt": D.POSITIVE,
           "reciprocal": D.Domain(0.2, 2.0, name="positive divisor"),
           "asin": D.OPEN_UNIT, "acos": D.OPEN_UNIT, "tan": D.Domain(-1.2, 1.2, name="tan")}
#: reductions over one dim (keepdim drawn too); smooth everywhere
REDUCTIONS = ("sum", "mean", "prod", "logsumexp", "var")
STEP = 1e-6


def _unary(name):
    op = opinfo.get(name).op
    domain = PARTIAL.get(name)
    if domain is None:
        return op
    return lambda x: op(domain.low + (domain.high - domain.low) * E.sigmoid(x))


@st.composite
def compositions(draw):
    """``(x, steps)``: an input array and 2 to 6 (name, function of a tensor) steps."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3))
    x = draw(hnp.arrays(np.float64, shape, elements=st.floats(-2.0, 2.0, width=64)))
    names = draw(st.lists(st.sampled_from(TOTAL + tuple(PARTIAL) + REDUCTIONS),
                          min_size=2, max_size=6))
    steps, ndim = [], len(shape)
    for name in names:
        if name not in REDUCTIONS:
            steps.append((name, _unary(name)))
            continue
        if ndim == 0:
            continue   # nothing left to reduce; the composition keeps its other steps
        dim, keepdim = draw(st.integers(0, ndim - 1)), draw(st.booleans())
        if name == "var" and shape[dim] == 1:
            continue   # var of one value divides by n - 1 = 0
        op = opinfo.get(name).op
        steps.append((f"{name}(dim={dim}, keepdim={keepdim})",
                      lambda t, op=op, dim=dim, keepdim=keepdim: op(t, dim=dim, keepdim=keepdim)))
        shape = shape[:dim] + ((1,) if keepdim else ()) + shape[dim + 1:]
        ndim = len(shape)
    return x, steps


def _compose(steps):
    def func(x):
        for _, fn in steps:
            x = fn(x)
        return x
    return func


def finite_difference_jacobian(func, x: np.ndarray) -> np.ndarray:
    """Central differences: column ``j`` is ``(f(x + h e_j) - f(x - h e_j)) / 2h``."""
    def value(arr):
        with E.no_grad():
            return func(E.tensor(arr)).numpy().ravel()
    columns = []
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = STEP
        columns.append((value(x + e.reshape(x.shape)) - value(x - e.reshape(x.shape)))
                       / (2 * STEP))
    return np.stack(columns, axis=1)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(compositions())
def test_reverse_forward_and_finite_differences_agree(case):
    x, steps = case
    func = _compose(steps)
    what = " -> ".join(name for name, _ in steps) + f" on shape {x.shape}"
    tensor = E.tensor(x, requires_grad=True)
    reverse = gradcheck.reverse_jacobian(func, (tensor,))[0, 0]
    forward = gradcheck.forward_jacobian(func, (tensor,))[0, 0]
    numerical = finite_difference_jacobian(func, x)
    scale = max(1.0, np.abs(numerical).max(initial=0.0))
    assert np.abs(forward - reverse).max(initial=0.0) <= 1e-12 * scale, \
        f"{what}: forward != reverse"
    assert np.abs(reverse - numerical).max(initial=0.0) <= 1e-6 * scale, (
        f"{what}: reverse differs from finite differences by "
        f"{np.abs(reverse - numerical).max():.2e}")


def test_the_finite_differences_catch_a_wrong_derivative():
    x = np.array([0.3, -1.1, 1.7])
    numerical = finite_difference_jacobian(E.sin, x)
    assert np.allclose(numerical, np.diag(np.cos(x)), atol=1e-9)
    assert not np.allclose(numerical, np.diag(1.0005 * np.cos(x)), atol=1e-6)
