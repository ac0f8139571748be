"""Every OpInfo's vjp, jvp and second derivative against central finite differences.

float64 always; complex128 for ops that take complex input. Jacobians are
compared in real coordinates (see finite_diff), which is where the conjugate
Wirtinger convention becomes a plain identity: the gradient refengine returns
for a complex input is the row of the real Jacobian read as a complex number.
"""
from __future__ import annotations

import numpy as np
import pytest

import opinfo
import refengine as E

import finite_diff as fd
from op_harness import (diff_tensors, first_gradient_scalar, forward_jacobian, numpy_function,
                        outputs, random_like, reverse_jacobian)

DTYPES = (E.float64, E.complex128)
MAX_SAMPLES = 12


def _cases(mode: str):
    cases = []
    for info in opinfo.op_db:
        for dtype in DTYPES:
            if info.supports(mode, dtype):
                cases.append(pytest.param(info, dtype, id=f"{info.name}-{dtype.name}"))
    return cases


def _samples(info, dtype):
    return [s for s in info.sample_inputs(dtype, requires_grad=True)
            if diff_tensors(s)][:MAX_SAMPLES]


def _expect_failure(info, check, dtype, sample):
    kf = info.known_failure(check, dtype, sample)
    return kf


def _compare(info, dtype, sample, check, actual, expected):
    tol = info.tolerance(dtype)
    kf = info.known_failure(check, dtype, sample)
    for out_idx, row in enumerate(expected):
        for in_idx, num in enumerate(row):
            what = (f"{info.name} {dtype.name} {sample!r}: {check} Jacobian vs numerical, "
                    f"out_idx {out_idx}, in_idx {in_idx}")
            if kf is not None:
                with pytest.raises(AssertionError):
                    fd.assert_close(actual[out_idx][in_idx], num, tol.atol, tol.rtol, what)
                continue
            fd.assert_close(actual[out_idx][in_idx], num, tol.atol, tol.rtol, what)


@pytest.mark.parametrize("info, dtype", _cases("reverse"))
def test_vjp_matches_finite_differences(info, dtype):
    for sample in _samples(info, dtype):
        f, xs = numpy_function(info, sample)
        _compare(info, dtype, sample, "reverse", reverse_jacobian(info, sample), fd.jacobian(f, xs))


@pytest.mark.parametrize("info, dtype", _cases("forward"))
def test_jvp_matches_finite_differences(info, dtype):
    for sample in _samples(info, dtype):
        f, xs = numpy_function(info, sample)
        _compare(info, dtype, sample, "forward", forward_jacobian(info, sample), fd.jacobian(f, xs))


def _second_order(info, sample, rng):
    """The gradient of s(x, u) = <vjp(x; u), v> by create_graph, and by central
    differences of the first-order gradient, both over (x, u)."""
    ins = diff_tensors(sample)
    with E.no_grad():
        outs = outputs(info, sample)
    u0 = [random_like(o.detach().numpy(), rng) for o in outs]
    v = [E.tensor(random_like(t.detach().numpy(), rng)) for t in ins]
    x0 = [t.detach().numpy().copy() for t in ins]

    def scalar(arrays, create_graph=False):
        leaves = [E.tensor(a, requires_grad=True) for a in arrays]
        repl = {id(t): leaf for t, leaf in zip(ins, leaves[:len(ins)])}
        s = first_gradient_scalar(info, sample, leaves[len(ins):], v, repl, create_graph)
        return s, leaves

    s, leaves = scalar(x0 + u0, create_graph=True)
    if s is None or not s.requires_grad:
        analytical = [np.zeros(fd.real_size(a)) for a in x0 + u0]
    else:
        grads = E.autograd.grad(s, leaves, allow_unused=True)
        analytical = [np.zeros(fd.real_size(a)) if g is None else fd.real_view(g.numpy())
                      for g, a in zip(grads, x0 + u0)]

    def value(arrays):
        s, _ = scalar(arrays)
        return 0.0 if s is None else float(s.detach().numpy())
    numerical = fd.gradient(value, x0 + u0)
    return analytical, numerical


@pytest.mark.parametrize("info, dtype", _cases("gradgrad"))
def test_second_order_matches_finite_differences_of_the_gradient(info, dtype):
    for sample in _samples(info, dtype):
        rng = np.random.default_rng(sample.seed)
        analytical, numerical = _second_order(info, sample, rng)
        _compare(info, dtype, sample, "gradgrad", [analytical], [numerical])


# The oracle itself, on functions whose Jacobians are known in closed form.

def test_finite_diff_real_jacobian_of_a_product():
    x, y = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    jac = fd.jacobian(lambda a: [a[0] * a[1]], [x, y])
    np.testing.assert_allclose(jac[0][0], np.diag(y), atol=1e-8)
    np.testing.assert_allclose(jac[0][1], np.diag(x), atol=1e-8)


def test_finite_diff_complex_coordinates_of_square_and_conj():
    z = np.array([1.0 + 2.0j])
    sq = fd.jacobian(lambda a: [a[0] ** 2], [z])[0][0]
    # z^2 = (x^2 - y^2) + 2xy i: d(re)/dx = 2x, d(re)/dy = -2y, d(im)/dx = 2y, d(im)/dy = 2x
    np.testing.assert_allclose(sq, [[2.0, -4.0], [4.0, 2.0]], atol=1e-8)
    cj = fd.jacobian(lambda a: [np.conj(a[0])], [z])[0][0]
    np.testing.assert_allclose(cj, [[1.0, 0.0], [0.0, -1.0]], atol=1e-8)


def test_finite_diff_catches_a_small_error():
    with pytest.raises(AssertionError, match="largest error"):
        fd.assert_close([1.0, 2.01], [1.0, 2.0], atol=1e-5, rtol=1e-3, what="probe")


def test_vjp_of_complex_square_is_conjugate_wirtinger():
    # L = |z^2|^2 = |z|^4; PyTorch's convention gives dL/dx + i dL/dy = 4 |z|^2 z.
    z = E.tensor([1.0 + 2.0j], dtype=E.complex128, requires_grad=True)
    (g,) = E.autograd.grad((z * z).abs().pow(2).sum(), [z])
    np.testing.assert_allclose(g.numpy(), 4 * 5 * np.array([1.0 + 2.0j]), rtol=1e-12)
