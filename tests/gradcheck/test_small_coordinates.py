"""Inputs far smaller than Richardson's first step (2**-11).

A correct formula used to fail at such inputs: ``log`` or ``sqrt`` at 1e-9
("the function is NaN or inf within a step of the given inputs"), ``1/x`` at
1e-13 ("every step straddles a jump or a kink"), ``sqrt(x*x + s*s)`` at
1e-150 ("numerical is zero but analytical is not: the function does not use
this input"), and a backward that returned 0 for that last function passed.
Each coordinate below the floor now also gets steps of its own scale
(``gradcheck.numerics.smallsteps``).

The expected derivatives are closed forms, written here (1/x, -1/x**2,
x / sqrt(x*x + s*s)); the correct formulas are torch's own or these forms,
the wrong ones these forms off by a stated amount.
"""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the formulas checked are torch's; torch is not installed")

from adcheck import gradcheck  # noqa: E402
import adcheck.refengine as re  # noqa: E402
from adcheck.gradcheck.numerics.smallsteps import FLOOR  # noqa: E402
from gradcheck_support import function  # noqa: E402

SCALES = (1e-7, 1e-13, 1e-150)
SIGNED = np.array([1.0, -2.0, 0.5])


def _x(scale, positive=False):
    values = np.abs(SIGNED) if positive else SIGNED
    return torch.tensor(values * scale, dtype=torch.float64, requires_grad=True)


def _smooth_abs(scale):
    return lambda x: torch.sqrt(x * x + scale * scale)


# name: forward, backward (given the scale), whether the input must be positive
CORRECT = {
    "log": (lambda s: torch.log, lambda s: lambda x, g: g / x, True),
    "reciprocal": (lambda s: torch.reciprocal, lambda s: lambda x, g: -g / (x * x), False),
    "smooth abs": (_smooth_abs, lambda s: lambda x, g: g * x / torch.sqrt(x * x + s * s), False),
    "x + 1": (lambda s: lambda x: x + 1, lambda s: lambda x, g: g, False),
}
WRONG = {
    "log, 1e-6 too large": (lambda s: torch.log, lambda s: lambda x, g: g / x * (1 + 1e-6), True),
    "reciprocal, 1e-5 too large": (lambda s: torch.reciprocal,
                                   lambda s: lambda x, g: -g / (x * x) * (1 + 1e-5), False),
    "smooth abs, zero": (_smooth_abs, lambda s: lambda x, g: 0 * g, False),
    "smooth abs, sign": (_smooth_abs, lambda s: lambda x, g: g * torch.sign(x), False),
    "x + 1, zero": (lambda s: lambda x: x + 1, lambda s: lambda x, g: 0 * g, False),
    "x + 1, half": (lambda s: lambda x: x + 1, lambda s: lambda x, g: 0.5 * g, False),
}


def _check(case, scale, **keywords):
    forward, backward, positive = case
    return gradcheck.check(function(torch, forward(scale), backward(scale)), (_x(scale, positive),),
                           precise=True, seed=0, **keywords)


def test_the_scales_are_below_the_first_step_and_the_closed_forms_hold():
    assert max(SCALES) < FLOOR
    x = _x(1e-150)
    y = _smooth_abs(1e-150)(x)
    y.backward(torch.ones_like(y))
    expected = SIGNED / np.sqrt(SIGNED ** 2 + 1)   # x / sqrt(x*x + s*s) with x = s * SIGNED
    assert np.allclose(x.grad.numpy(), expected, rtol=1e-14)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("name", list(CORRECT))
def test_a_correct_formula_passes(name, scale):
    report = _check(CORRECT[name], scale)
    assert report.passed, str(report)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("name", list(WRONG))
def test_a_wrong_formula_fails(name, scale):
    assert not _check(WRONG[name], scale).passed


@pytest.mark.parametrize("scale", (1e-9, 1e-40))
@pytest.mark.parametrize("name", ["log", "sqrt", "rsqrt", "lgamma", "logit", "entr", "xlogy",
                                  "reciprocal", "abs", "norm", "atan2", "div", "std", "abs of complex"])
def test_torch_formulas_pass_at_small_inputs(name, scale):
    """torch's own formulas (correct there); each failed before at 1e-40."""
    positive = {"log": torch.log, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "lgamma": torch.lgamma,
                "logit": torch.logit, "entr": torch.special.entr,
                "xlogy": lambda x: torch.xlogy(x, x)}
    signed = {"reciprocal": torch.reciprocal, "abs": torch.abs,
              "norm": torch.linalg.vector_norm, "atan2": lambda x: torch.atan2(x[:2], x[2:]),
              "div": lambda x: x[:2] / x[2:], "std": torch.std,
              "abs of complex": lambda x: torch.abs(torch.complex(x[:2], x[2:]))}
    values = np.random.default_rng(1).standard_normal(4)
    if name in positive:
        values = np.abs(values)
    x = torch.tensor(values * scale, dtype=torch.float64, requires_grad=True)
    report = gradcheck.check({**positive, **signed}[name], (x,), precise=True, seed=0)
    assert report.passed, str(report)


@pytest.mark.parametrize("fn", [torch.log, torch.sqrt])
def test_forward_mode_and_second_order_at_small_inputs(fn):
    x = _x(1e-7, positive=True)
    assert gradcheck.check(fn, (x,), precise=True, check_forward_ad=True, seed=0).passed
    for seed in range(8):   # the second order's output weights are random: several draws
        assert gradcheck.gradgradcheck(fn, (x,), precise=True, seed=seed, raise_exception=False)


def _wrong_in(which, forward):
    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return forward(x, y)

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            off = {which: 1.0 + (1e-5 if which == "x" else 1.0)}
            return g * (y + 1 / x) * off.get("x", 1.0), g * x * off.get("y", 1.0)
    return Wrong.apply


def test_a_small_input_beside_a_large_one():
    """Only the small coordinates get the second ladder; ``x * y + log(x)``
    has a column of each kind, and a wrong derivative for either is caught
    (y's by a factor 2: the output, near log(x) = -22, moves by x * h = 1e-11
    for y's step, so its rounding leaves 1e-4 of that column unresolved)."""
    x = torch.tensor([3e-10, 2e-12], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([1.5, -0.7], dtype=torch.float64, requires_grad=True)

    def forward(x, y):
        return x * y + torch.log(x)
    assert gradcheck.check(forward, (x, y), precise=True, seed=0).passed
    for which in ("x", "y"):
        report = gradcheck.check(_wrong_in(which, forward), (x, y), precise=True, seed=0)
        assert not report.passed
        assert f"input {'01'[which == 'y']}" in str(report)


def test_refengine_formulas_pass_at_small_inputs_without_warnings():
    x = re.tensor(np.abs(SIGNED) * 1e-150, dtype=re.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # the derivative of 1/x here is 4e300: no overflow warning
        for fn in (re.log, re.sqrt, lambda x: 1 / x, lambda x: x / (x + x.sum())):
            report = gradcheck.check(fn, (x,), precise=True, seed=0)
            assert report.passed, str(report)


def test_the_old_message_is_gone_where_smaller_steps_stay_in_the_domain():
    x = _x(1e-9, positive=True)

    class HalfWrongLog(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.log(x)

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g / (2 * x)
    report = gradcheck.check(HalfWrongLog.apply, (x,), precise=True, seed=0)
    assert not report.passed
    message = str(report)
    assert "NaN" not in message and "differs from numerical" in message


def test_torch_sinc_loses_its_derivative_at_small_inputs_and_is_failed():
    """A disagreement with torch: its sinc backward cancels to 0 near 0
    (relative error 7e-6 at 1e-6, all of it at 3e-9). mpmath at 50 digits
    gives the derivative, -pi**2 x / 3 to first order."""
    mpmath = pytest.importorskip("mpmath", reason="mpmath is the reference here")
    mpmath.mp.dps = 50
    values = np.array([3e-9, -7e-9, 2e-9])
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    torch.sinc(x).sum().backward()
    exact = [float(mpmath.diff(lambda t: mpmath.sin(mpmath.pi * t) / (mpmath.pi * t),
                               mpmath.mpf(v))) for v in values]
    assert np.allclose(exact, -np.pi ** 2 * values / 3, rtol=1e-12)
    assert np.all(x.grad.numpy() == 0.0)   # torch's formula: no digit left
    x.grad = None
    report = gradcheck.check(torch.sinc, (x,), precise=True, seed=0)
    assert not report.passed
    assert "analytical is zero" in str(report)


def _probabilities(n):
    """A softmax's probabilities: most of them far below 2**-11, as a
    classifier's over many classes are."""
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(n, dtype=torch.float64, generator=generator) * 3
    return torch.softmax(logits, 0).detach().requires_grad_()


def test_an_entropy_of_probabilities_passes_and_a_clamped_log_fails():
    """The realistic case: torch's entropy of 300 probabilities (about 70 %
    below 2**-11, the smallest near 1e-9) failed with "NaN within a step".
    A backward that clamps the log at 1e-8 (a common guard) is wrong at the
    probabilities below it, and fails there."""
    p = _probabilities(300)
    assert (p < FLOOR).float().mean() > 0.5 and (p < 1e-8).any()

    def entropy(p):
        return -(p * torch.log(p)).sum()
    assert gradcheck.check(entropy, (p,), precise=True, seed=0, explore=False).passed
    clamped = function(torch, entropy, lambda x, g: -g * (torch.log(x.clamp_min(1e-8)) + 1))
    report = gradcheck.check(clamped, (p,), precise=True, seed=0, explore=False)
    assert not report.passed and "NaN" not in str(report)


def test_a_chunked_jacobian_gets_the_second_ladder_too():
    x = _x(1e-9, positive=True).detach().repeat(50).requires_grad_()   # 150 entries
    report = gradcheck.check(torch.log, (x,), precise=True, seed=0, explore=False,
                             memory_budget=2 ** 20)
    assert report.plan == "chunked"
    assert report.passed, str(report)


@pytest.mark.parametrize("jacobian", ["compressed", "probed"])
@pytest.mark.parametrize("scale", (1e-7, 1e-150))
@pytest.mark.parametrize("name", list(CORRECT) + list(WRONG))
def test_seed_columns_get_steps_of_their_small_entries_scale(name, scale, jacobian):
    """Compressed and probed Jacobians step along seed columns, each moving
    many entries: a column's steps are shrunk to its small entries."""
    forward, backward, positive = {**CORRECT, **WRONG}[name]
    values = np.tile(np.abs(SIGNED) if positive else SIGNED, 20) * scale   # 60 entries
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    report = gradcheck.check(function(torch, forward(scale), backward(scale)), (x,), precise=True,
                             seed=0, explore=False, jacobian=jacobian)
    assert report.plan == jacobian
    assert report.passed == (name in CORRECT), str(report)


def test_entries_of_many_magnitudes_along_one_seed_column():
    """Entries 1e-300 and 5e-8 in one seed column: the steps of the smaller
    would be lost in the larger's rounding, so each band gets its own."""
    x = torch.tensor(np.tile([5e-8, 1e-300, 3e-8], 30), dtype=torch.float64, requires_grad=True)
    for jacobian in ("compressed", "probed"):
        report = gradcheck.check(torch.log, (x,), precise=True, seed=0, explore=False,
                                 jacobian=jacobian)
        assert report.passed, str(report)
    wrong = function(torch, lambda s: torch.log(s), lambda s, g: g / s * 1.01)
    assert not gradcheck.check(wrong, (x,), precise=True, seed=0, explore=False,
                               jacobian="compressed").passed


@pytest.mark.parametrize("imaginary, resolved", [(3e-9, True), (3e-13, False)])
def test_a_branch_cut_close_by_is_resolved_or_said_to_be_too_close(imaginary, resolved):
    """log at -2 + i y: the cut is y away. Steps of a quarter of y resolve
    the derivative while they move the output (near pi) by more than its
    rounding (y = 3e-9); at y = 3e-13 they do not, and the entry is no
    evidence, said so: the cut lies closer than the rounding lets steps see."""
    z = torch.tensor([1.0 + 0.5j, -2.0 + imaginary * 1j], dtype=torch.complex128,
                     requires_grad=True)
    report = gradcheck.check(torch.log, (z,), precise=True, seed=0, explore=False)
    assert report.passed == resolved, str(report)
    if not resolved:
        assert "branch cut lies closer than its rounding lets steps resolve" in str(report)
