"""Computing not-gradients: detach, no_grad and hooks, and their equivalence."""
from __future__ import annotations

from adcheck.conformance.case import AUTOGRAD_NOTE, case


def _x(E):
    return E.tensor([1.0, 2.0, 3.0], dtype=E.float64, requires_grad=True)


@case("This is a special function for which J_detach = 0. This means that however y is "
      "used, the contribution via y to the gradient of x is always going to be 0.",
      source=AUTOGRAD_NOTE)
def detach_contributes_zero(E):
    x = _x(E)
    y = (x * x).detach()
    assert not y.requires_grad and y.grad_fn is None
    (y * x).sum().backward()
    assert x.grad.tolist() == [1.0, 4.0, 9.0]     # only the direct path: y


@case("When it decorates a function outputs = f(inputs), it is defined as enforcing for "
      "all in in inputs, out in outputs, d out / d in = 0. Note that for the context "
      "manager version, outputs are all the variables that are assigned",
      source=AUTOGRAD_NOTE)
def no_grad_outputs_have_zero_derivative(E):
    x = _x(E)

    @E.no_grad()
    def f(a, b):
        z = a * b
        return z, 3 * z
    z, w = f(x, x)
    with E.no_grad():
        v = x * 4
    ((z + w + v) * x).sum().backward()
    assert x.grad.tolist() == [8.0, 24.0, 48.0]   # 4 x^2 + 4 x, all constants


@case("detach and no_grad can be implemented using the others as follows",
      source=AUTOGRAD_NOTE)
def detach_no_grad_and_zeroing_hook_are_equivalent(E):
    def with_detach(x):
        return x.detach()

    def with_no_grad(x):
        with E.no_grad():
            return x.view_as(x)

    def with_hook(x):
        y = x.view_as(x)
        y.register_hook(lambda grad: E.zeros_like(grad))
        return y
    grads = []
    for variant in (with_detach, with_no_grad, with_hook):
        x = _x(E)
        h = x * 2
        y = variant(h)
        (y * h).sum().backward()
        grads.append(x.grad.tolist())
    assert grads == [[4.0, 8.0, 12.0]] * 3


@case("Equivalent formulation with detach: x, y = x.detach(), y.detach()",
      source=AUTOGRAD_NOTE)
def no_grad_function_equals_detached_inputs(E):
    def f(a, b):
        return a * b + a.exp()

    def f_no_grad(a, b):
        with E.no_grad():
            return f(a, b)

    def f_detach(a, b):
        return f(a.detach(), b.detach())

    def f_hooks(a, b):
        a, b = a.view_as(a), b.view_as(b)
        a.register_hook(lambda grad: E.zeros_like(grad))
        b.register_hook(lambda grad: E.zeros_like(grad))
        return f(a, b)
    results = []
    for variant in (f_no_grad, f_detach, f_hooks):
        a, b = _x(E), _x(E)
        out = variant(a, b)
        (out * a).sum().backward()
        assert a.grad.tolist() == out.detach().tolist()
        assert b.grad is None or b.grad.tolist() == [0.0, 0.0, 0.0]
        results.append(a.grad.tolist())
    assert results[0] == results[1] == results[2]


@case("The third contruct is more general as it allows to change the gradients in "
      "arbitrary ways, not only setting them to 0 as the first two.", source=AUTOGRAD_NOTE)
def hook_can_rescale_not_just_zero(E):
    x = _x(E)
    y = x * 1
    y.register_hook(lambda grad: grad.clamp(max=2.0))
    (y * y).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


@case("Both the detach() method and the torch.no_grad decorator are expected not to "
      "follow these rules.", source=AUTOGRAD_NOTE)
def detached_sqrt_at_zero_gives_no_inf(E):
    x = E.tensor([0.0, 4.0], dtype=E.float64, requires_grad=True)
    (E.sqrt(x).detach() * x).sum().backward()
    assert x.grad.tolist() == [0.0, 2.0]
