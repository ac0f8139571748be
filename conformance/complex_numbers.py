"""Complex autograd: the conjugate Wirtinger convention and its worked examples."""
from __future__ import annotations

import pytest

from adcheck.conformance.case import MECHANICS, case
from adcheck.conformance.compare import assert_close

_C = dict(rtol=1e-12, atol=1e-12)


def _z(E, requires_grad=True):
    return E.tensor([1 + 2j, -3 + 0.5j], dtype=E.complex128, requires_grad=requires_grad)


def _g(E):
    return E.tensor([1 + 1j, 2 - 1j], dtype=E.complex128)


@case("The gradient computed is dL/dz* (note the conjugation of z), the negative of "
      "which is precisely the direction of steepest descent used in Gradient Descent "
      "algorithm.", source=MECHANICS)
def real_loss_gradient_is_the_steepest_ascent_direction(E):
    z = _z(E)
    target = E.tensor([0.5 - 1j, 2 + 2j], dtype=E.complex128)
    loss = ((z - target).abs() ** 2).sum()
    loss.backward()
    # dL/dx + 1j dL/dy for L = |z - t|^2, which is 2 (z - t)
    assert_close(z.grad, 2 * (z.detach() - target), **_C)
    with E.no_grad():
        stepped = z - 0.1 * z.grad
    assert ((stepped - target).abs() ** 2).sum().item() < loss.item()


@case("Let's consider the function f(z = x + yj) = c * z = c * (x+yj) as an example, "
      "where c in R. ... we get dL/dz* = 1 * 0 + 1 * c = c", source=MECHANICS)
def real_scale_example_gives_c(E):
    z = _z(E)
    c = 3.0
    y = c * z
    y.backward(E.ones_like(y))
    assert_close(z.grad, E.full((2,), c, dtype=E.complex128), **_C)


@case("if the function in question is holomorphic, only z will be used (and ds/dz* will "
      "be zero).", source=MECHANICS)
def holomorphic_function_uses_conjugate_derivative(E):
    z, g = _z(E), _g(E)
    (z * z).backward(g)
    assert_close(z.grad, g * (2 * z.detach()).conj(), **_C)
    z2 = _z(E)
    E.exp(z2).backward(g)
    assert_close(z2.grad, g * E.exp(z2.detach()).conj(), **_C)


@case("For one, the Cauchy-Riemann equations translate into simply saying that "
      "df/dz* = 0 (that is to say, the function f can be written entirely in terms of z, "
      "without making reference to z*).", source=MECHANICS)
def conjugate_is_the_non_holomorphic_case(E):
    z, g = _z(E), _g(E)
    z.conj().backward(g)
    # s = z*: ds/dz = 0 and ds/dz* = 1, so the formula gives (grad_output)^*
    assert_close(z.grad, g.conj(), **_C)


@case("Some functions map from complex inputs to real outputs, or vice versa. ... For "
      "f: C -> R, we get: dL/dz* = 2 * grad_output * ds/dz*", source=MECHANICS)
def complex_to_real_functions(E):
    z = _z(E)
    z.abs().sum().backward()
    zd = z.detach()
    assert_close(z.grad, zd / zd.abs(), **_C)     # 2 * 1 * z / (2 |z|)
    z2 = _z(E)
    z2.real.sum().backward()
    assert_close(z2.grad, E.ones(2, dtype=E.complex128), **_C)  # 2 * 1 * 1/2
    z3 = _z(E)
    z3.imag.sum().backward()
    assert_close(z3.grad, E.full((2,), 1j, dtype=E.complex128), **_C)


@case("Some functions map from complex inputs to real outputs, or vice versa. ... For "
      "f: R -> C, we get: dL/dz* = 2 * Re(grad_output^* * ds/dz*)", source=MECHANICS)
def real_to_complex_functions(E):
    x = E.tensor([1.0, 2.0], dtype=E.float64, requires_grad=True)
    c = E.tensor(2 + 3j, dtype=E.complex128)
    s = x * c
    s.backward(E.tensor([1 + 1j, 1 + 1j], dtype=E.complex128))
    assert x.grad.dtype == E.float64
    assert x.grad.tolist() == [5.0, 5.0]   # Re(conj(c) * (1+1j))


@case("If you have a real-to-real function which internally uses complex operations, the "
      "convention here doesn't matter: you will always get the same result that you would "
      "have gotten if it had been implemented with only real operations.",
      source=MECHANICS)
def real_to_real_through_complex_matches_real(E):
    x = E.tensor([1.0, 2.0], dtype=E.float64, requires_grad=True)
    w = x * E.tensor(1 + 2j, dtype=E.complex128)
    (w * w.conj()).real.sum().backward()      # = 5 x^2
    assert x.grad.dtype == E.float64
    assert_close(x.grad, 10 * x.detach(), **_C)
    x2 = E.tensor([0.3, -0.7], dtype=E.float64, requires_grad=True)
    u = E.exp(x2 * E.tensor(1j, dtype=E.complex128))   # cos x + j sin x
    (u.real * 2 + u.imag * 3).sum().backward()
    assert_close(x2.grad, -2 * E.sin(x2.detach()) + 3 * E.cos(x2.detach()), **_C)


@case("When you use PyTorch to differentiate any function f(z) with complex domain "
      "and/or codomain, the gradients are computed under the assumption that the function "
      "is a part of a larger real-valued loss function", source=MECHANICS)
def complex_output_needs_explicit_grad_output(E):
    z = _z(E)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for real "
                                           "scalar outputs"):
        (z * 2).sum().backward()
    assert E.tensor(1 + 2j).dtype == E.complex64


@case("This convention matches TensorFlow's convention for complex differentiation, but "
      "is different from JAX (which computes dL/dz).", source=MECHANICS)
def gradient_is_not_the_unconjugated_derivative(E):
    z = _z(E)
    (z * E.tensor(2 + 1j, dtype=E.complex128)).real.sum().backward()
    # s = Re(a z): the gradient is conj(a), while dL/dz would be a / 2
    assert_close(z.grad, E.full((2,), 2 - 1j, dtype=E.complex128), **_C)


@case("This last equation is the important one for writing your own gradients, as it "
      "decomposes our derivative formula into a simpler one that is easy to compute by "
      "hand: dL/dz* = (grad_output)^* * ds/dz* + grad_output * (ds/dz)^*",
      source=MECHANICS)
def general_formula_for_a_non_holomorphic_function(E):
    z, g = _z(E), _g(E)
    (z * z * z.conj()).backward(g)    # s = z^2 z*: ds/dz = 2 z z*, ds/dz* = z^2
    zd = z.detach()
    ds_dz, ds_dzc = 2 * zd * zd.conj(), zd * zd
    assert_close(z.grad, g.conj() * ds_dzc + g * ds_dz.conj(), **_C)


@case("Using the first way to compute the Wirtinger derivatives ... ds/dz = 1/2 * "
      "(ds/dx - ds/dy j)", source=MECHANICS)
def gradient_matches_real_and_imaginary_partials(E):
    x = E.tensor([0.7, -1.2], dtype=E.float64, requires_grad=True)
    y = E.tensor([0.4, 2.0], dtype=E.float64, requires_grad=True)
    i = E.tensor(1j, dtype=E.complex128)
    z = (x + y * i).detach().requires_grad_()
    loss = lambda w: (E.sin(w) * w.conj()).abs().sum()  # noqa: E731
    loss(z).backward()
    loss(x + y * i).backward()
    # the complex gradient packs the real partials: dL/dx + 1j dL/dy
    assert_close(z.grad, x.grad + y.grad * i, rtol=1e-10, atol=1e-12)
