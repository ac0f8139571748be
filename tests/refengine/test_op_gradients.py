"""Every OpInfo's vjp, jvp and second derivative against central finite differences.

float64 always; complex128 for ops that take complex input. Jacobians are
compared in real coordinates (see finite_diff), which is where the conjugate
Wirtinger convention becomes a plain identity: the gradient refengine returns
for a complex input is the row of the real Jacobian read as a complex number.
"""
from __future__ import annotations

import numpy as np
import pytest

from adcheck import opinfo
import adcheck.refengine as E
from adcheck.refengine.autograd import forward_ad

import finite_diff as fd
from op_harness import (diff_tensors, first_gradient_scalar, forward_jacobian, numpy_function,
                        outputs, random_like, reverse_jacobian)

DTYPES = (E.float64, E.complex128)
MAX_SAMPLES = 12
# Central differences in float64 on these domains are accurate to about 1e-9,
# so refengine is held to a bound 1000x tighter than gradcheck's default (a
# rule off by 0.05% fails); an OpInfo's declared override (with its reason) wins.
STRICT = {E.float64: opinfo.Tolerance(1e-7, 1e-6), E.complex128: opinfo.Tolerance(1e-7, 1e-6)}


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


def _compare(info, dtype, sample, check, actual, expected):
    tol = info.tolerances.get(dtype) or STRICT[dtype]
    for out_idx, row in enumerate(expected):
        for in_idx, num in enumerate(row):
            what = (f"{info.name} {dtype.name} {sample!r}: {check} Jacobian vs numerical, "
                    f"out_idx {out_idx}, in_idx {in_idx}")
            fd.assert_close(actual[out_idx][in_idx], num, tol.atol, tol.rtol, what)


def _check_all(info, dtype, check, one):
    """Run ``one(sample)`` on every sample and fail once, listing every sample that failed.
    A sample under a declared known failure of ``check`` must fail, or that is reported."""
    problems = []
    for sample in _samples(info, dtype):
        known = info.known_failure(check, dtype, sample)
        try:
            one(sample)
            if known is not None:
                problems.append(f"{sample!r}: declared known failure passes now ({known.reason})")
        except Exception as exc:   # an engine error is a failure of this sample, reported with the rest
            if known is not None:
                continue
            head = str(exc).splitlines()[0] if str(exc) else ""
            problems.append(f"{sample!r}: {type(exc).__name__}: {head[:300]}")
    if problems:
        pytest.fail(f"{info.name} {dtype.name} {check}: {len(problems)} sample(s) failed\n"
                    + "\n".join(problems), pytrace=False)


@pytest.mark.parametrize("info, dtype", _cases("reverse"))
def test_vjp_matches_finite_differences(info, dtype):
    def one(sample):
        f, xs = numpy_function(info, sample)
        _compare(info, dtype, sample, "reverse", reverse_jacobian(info, sample), fd.jacobian(f, xs))
    _check_all(info, dtype, "reverse", one)


@pytest.mark.parametrize("info, dtype", _cases("forward"))
def test_jvp_matches_finite_differences(info, dtype):
    def one(sample):
        f, xs = numpy_function(info, sample)
        _compare(info, dtype, sample, "forward", forward_jacobian(info, sample), fd.jacobian(f, xs))
    _check_all(info, dtype, "forward", one)


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
    def one(sample):
        analytical, numerical = _second_order(info, sample, np.random.default_rng(sample.seed))
        _compare(info, dtype, sample, "gradgrad", [analytical], [numerical])
    _check_all(info, dtype, "gradgrad", one)


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


def _fwgrad_bwgrad(info, sample, rng):
    """The jvp of s(x, u) = <vjp(x; u), v> (forward over reverse) along a random direction,
    and the same directional derivative from central differences of the first gradient."""
    ins = diff_tensors(sample)
    with E.no_grad():
        outs = outputs(info, sample)
    u0 = [random_like(o.detach().numpy(), rng) for o in outs]
    v = [E.tensor(random_like(t.detach().numpy(), rng)) for t in ins]
    x0 = [t.detach().numpy().copy() for t in ins]
    direction = [random_like(a, rng) for a in x0 + u0]

    def scalar(arrays, tangents=None):
        leaves = [E.tensor(a, requires_grad=True) for a in arrays]
        if tangents is not None:
            leaves = [forward_ad.make_dual(leaf, E.tensor(t)) for leaf, t in zip(leaves, tangents)]
        repl = {id(t): leaf for t, leaf in zip(ins, leaves[:len(ins)])}
        return first_gradient_scalar(info, sample, leaves[len(ins):], v, repl,
                                     create_graph=tangents is not None)

    with forward_ad.dual_level():
        s = scalar(x0 + u0, direction)
        tangent = None if s is None else forward_ad.unpack_dual(s).tangent
        analytical = 0.0 if tangent is None else float(tangent.detach().numpy())

    def value(arrays):
        s = scalar(arrays)
        return 0.0 if s is None else float(s.detach().numpy())
    numerical = sum(float(g @ fd.real_view(d))
                    for g, d in zip(fd.gradient(value, x0 + u0), direction))
    return analytical, numerical


@pytest.mark.parametrize("info, dtype", _cases("fwgrad_bwgrad"))
def test_forward_over_reverse_matches_finite_differences_of_the_gradient(info, dtype):
    def one(sample):
        analytical, numerical = _fwgrad_bwgrad(info, sample, np.random.default_rng(sample.seed))
        _compare(info, dtype, sample, "fwgrad_bwgrad", [[np.array([analytical])]],
                 [[np.array([numerical])]])
    _check_all(info, dtype, "fwgrad_bwgrad", one)


# The harness catches wrong rules (a custom Function stands in for a broken op).

def _wrong_sin(vjp_factor=1.0, conj=True, jvp_conj=False):
    class WrongSin(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            d = x.cos().conj() if conj else x.cos()
            return grad * d * vjp_factor

        @staticmethod
        def jvp(ctx, x_t):
            (x,) = ctx.saved_for_forward
            return x_t * (x.cos().conj() if jvp_conj else x.cos())
    from adcheck.opinfo.samples import unary
    return opinfo.OpInfo("wrong_sin", WrongSin.apply, sample_func=unary(shapes=((3,),)),
                         dtypes=opinfo.FLOATING_AND_COMPLEX)


@pytest.mark.parametrize("broken, dtype, check", [
    (dict(vjp_factor=1.0005), E.float64, test_vjp_matches_finite_differences),
    (dict(conj=False), E.complex128, test_vjp_matches_finite_differences),
    (dict(jvp_conj=True), E.complex128, test_jvp_matches_finite_differences),
], ids=["vjp-off-by-0.05%", "vjp-missing-conj", "jvp-extra-conj"])
def test_the_harness_catches_a_wrong_rule(broken, dtype, check):
    with pytest.raises(pytest.fail.Exception, match="wrong_sin"):
        check(_wrong_sin(**broken), dtype)


@pytest.mark.parametrize("dtype", (E.float64, E.complex128))
def test_the_harness_passes_the_right_rule(dtype):
    test_vjp_matches_finite_differences(_wrong_sin(), dtype)
    test_jvp_matches_finite_differences(_wrong_sin(), dtype)
