"""A Function that takes a callable and, beside it, the tensors the callable
reads (zuko's ``GaussLegendre.apply(f, a, b, n, *phi)``, ``f = partial(g,
signal)`` with ``signal`` among ``phi``) is checked with the callable rebuilt
around the check's copies: before, the copies reached neither side, a wrong
gradient in ``signal`` passed, and a right one raised "appears to not have
been used in the graph". zuko's ``SOSPolynomialTransform`` passes a bound
method, ``self.g``, which reads ``self.a``: its float32 model could not run
in double precision around the model's own ``a``, and its float32 check
raised "appears to not have been used in the graph" (an error, where the
gradient is right)."""
from __future__ import annotations

import functools

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch)")

from adcheck import gradcheck  # noqa: E402


def _integrate(factor: float):
    """A two-point quadrature of ``f`` on [0, b]; ``phi``'s gradient times ``factor``."""

    class Integrate(torch.autograd.Function):
        @staticmethod
        def forward(ctx, f, b, *phi):
            ctx.f = f
            ctx.save_for_backward(b, *phi)
            return Integrate.rule(f, b)

        @staticmethod
        def rule(f, b):
            return b * (f(b * 0.25) + f(b * 0.75)) / 2

        @staticmethod
        def backward(ctx, grad):
            b, *phi = ctx.saved_tensors
            with torch.enable_grad():
                b = b.detach().requires_grad_()
                area = Integrate.rule(ctx.f, b)
            gb, *gphi = torch.autograd.grad(area, (b, *phi), grad)
            return (None, gb, *[factor * g for g in gphi])
    return Integrate


class _Integrand:
    """An object whose method the Function takes, holding what it reads."""

    def __init__(self, signal):
        self.signal = signal

    def g(self, u):
        return torch.exp(self.signal * u)


class Quadrature(torch.nn.Module):
    def __init__(self, integrate, closure: str, dtype=torch.float64):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2).to(dtype)
        self.integrate, self.closure = integrate, closure

    def forward(self, x):
        signal = self.lin(x)
        if self.closure == "partial":
            f = functools.partial(lambda s, u: torch.exp(s * u), signal)
        elif self.closure == "method":
            f = _Integrand(signal).g
        else:
            def f(u):
                return torch.exp(signal * u)
        return self.integrate.apply(f, x, signal)


def _x(dtype=torch.float64):
    return torch.from_numpy(np.random.default_rng(0).standard_normal((3, 2))).to(dtype)


@pytest.mark.parametrize("closure", ["partial", "closure", "method"])
def test_a_wrong_gradient_in_what_the_callable_reads_fails(closure):
    torch.manual_seed(0)
    found = gradcheck.harvest(Quadrature(_integrate(2.0), closure), (_x(),), seed=0)
    (name,) = found.reports
    (report,) = found.reports[name]
    failure = next(r for r in report.failures if r.check == "reverse")
    assert failure.in_name == "phi"
    assert "analytical is 2 times numerical" in failure.diagnosis
    assert any("rebuilt around the check's copies" in n for n in found.notes[name])


@pytest.mark.parametrize("closure", ["partial", "closure", "method"])
def test_a_right_gradient_passes(closure):
    torch.manual_seed(0)
    found = gradcheck.harvest(Quadrature(_integrate(1.0), closure), (_x(),), seed=0)
    assert found.errors == {}
    assert found.passed and found.localisation == "the whole model passes its check"


def test_the_wrong_gradient_is_wrong_by_torchs_gradcheck():
    torch.manual_seed(0)
    lin = torch.nn.Linear(2, 2).double()
    integrate = _integrate(2.0)

    def whole(x, w):
        s = torch.nn.functional.linear(x, w, lin.bias)
        return integrate.apply(functools.partial(lambda s, u: torch.exp(s * u), s), x, s)
    w = lin.weight.detach().clone().requires_grad_()
    assert not torch.autograd.gradcheck(whole, (_x().requires_grad_(), w),
                                        raise_exception=False)


def test_a_float32_model_whose_method_holds_the_tensor_is_checked_in_double():
    torch.manual_seed(0)
    model = Quadrature(_integrate(1.0), "method", torch.float32)
    found = gradcheck.harvest(model, (_x(torch.float32),), seed=0)
    assert found.errors == {}
    (name,) = found.reports
    assert all(r.passed for r in found.reports[name])
    assert not any("does not run in double precision" in n for n in found.notes.get(name, []))


def test_the_method_owner_is_left_as_it_was():
    torch.manual_seed(0)
    seen = []

    class Keep(Quadrature):
        def forward(self, x):
            signal = self.lin(x)
            owner = _Integrand(signal)
            seen.append((owner, signal))
            return self.integrate.apply(owner.g, x, signal)
    gradcheck.harvest(Keep(_integrate(1.0), "method"), (_x(),), seed=0)
    assert seen and all(owner.signal is signal for owner, signal in seen)
