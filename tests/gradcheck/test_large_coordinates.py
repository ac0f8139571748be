"""Inputs far above a unit (1e4 to 1e15), where a function varies on a fixed scale.

Richardson's steps start at a 32nd of the coordinate and rarely go below
``2**-18`` of it: at 1e6 the smallest regular step is 4, wider than half a
period of ``sin``. torch's correct ``sin``, ``cos``, ``tanh(x - c)`` near a
large ``c`` and ``logsumexp`` of logits offset by a large constant failed
there (for a third to all of the draws at 1e6 to 1e9, every one at 1e15),
with "only 1 of 3 nonzero entries differ" or "numerical is zero"; and a
float32 ``sin`` whose backward was 1 % off passed at 1e5. Each coordinate
at least ``largesteps.CEILING`` now also gets steps of a unit coordinate
(``gradcheck.numerics.largesteps``).

The derivatives of the functions checked are cross-checked with mpmath at
the same points; the wrong formulas are torch's off by a stated amount.
"""
import math
import warnings

import mpmath
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the formulas checked are torch's; torch is not installed")

from adcheck import gradcheck  # noqa: E402
from adcheck.gradcheck.numerics import largesteps  # noqa: E402
from gradcheck_support import function  # noqa: E402

SCALES = (1e6, 1e9)
DAY = 86400.0


def _x(scale, seed=0, size=3, dtype=torch.float64):
    rng = np.random.default_rng(seed)
    return torch.tensor(scale * (1 + rng.uniform(size=size)), dtype=dtype, requires_grad=True)


def _near(x):
    # x less its nearest integer: tanh's structure wherever x lies (round is a
    # step function, constant between half-integers, which the steps see too)
    return x - x.round()


def _offset(x):
    # logits a unit apart near the first entry's nearest integer
    return x - x.round() + x[0].round() + torch.arange(x.numel(), dtype=x.dtype)


def _cos(x, g):
    return g * torch.cos(x)


# name: forward, backward (torch's own formula where it has one)
CORRECT = {
    "sin": (torch.sin, _cos),
    "cos": (torch.cos, lambda x, g: -g * torch.sin(x)),
    "tanh near": (lambda x: torch.tanh(_near(x)), lambda x, g: g / torch.cosh(_near(x)) ** 2),
    "logsumexp of offset logits": (lambda x: torch.logsumexp(_offset(x), 0),
                                   lambda x, g: g * torch.softmax(_offset(x), 0)),
}
WRONG = {
    "sin, 1e-6 too large": (torch.sin, lambda x, g: g * torch.cos(x) * (1 + 1e-6)),
    "sin, cos one milliradian late": (torch.sin, lambda x, g: g * torch.cos(x + 1e-3)),
    "sin, sign": (torch.sin, lambda x, g: -g * torch.cos(x)),
    "sin, zero": (torch.sin, lambda x, g: 0 * g),
    "tanh near, 1e-5 too large": (lambda x: torch.tanh(_near(x)),
                                  lambda x, g: g / torch.cosh(_near(x)) ** 2 * (1 + 1e-5)),
}


def _check(forward, backward, x, **keywords):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (torch's warnings about the custom Function)
        return gradcheck.check(function(torch, forward, backward), (x,), precise=True, seed=0,
                               **keywords)


def test_the_formulas_are_the_derivatives_mpmath_gives():
    mpmath.mp.dps = 50
    for scale in (*SCALES, 1e15):
        for value in _x(scale).detach().tolist():
            t = mpmath.mpf(value)   # (the double exactly)
            assert math.isclose(math.cos(value), float(mpmath.cos(t)), rel_tol=1e-14)
            near = t - round(value)
            assert math.isclose(1 / math.cosh(value - round(value)) ** 2,
                                float(1 / mpmath.cosh(near) ** 2), rel_tol=1e-14)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("name", list(CORRECT))
def test_a_correct_formula_passes(name, scale):
    for seed in range(3):
        report = _check(*CORRECT[name], _x(scale, seed, size=4))
        assert report.passed, str(report)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("name", list(WRONG))
def test_a_wrong_formula_fails(name, scale):
    for seed in range(3):
        report = _check(*WRONG[name], _x(scale, seed))
        assert not report.passed


def test_sin_passes_where_the_spacing_is_an_eighth():
    # at 1.5e15 the doubles are 0.25 apart: the unit ladder starts at 2**7 of that
    report = _check(torch.sin, _cos, torch.tensor([1.5e15, 1.9e15 + 0.25], dtype=torch.float64,
                                                  requires_grad=True))
    assert report.passed, str(report)
    assert not _check(torch.sin, lambda x, g: -g * torch.cos(x),
                      torch.tensor([1.5e15], dtype=torch.float64, requires_grad=True)).passed


def test_a_slope_aliased_by_rounding_inside_is_not_taken():
    # 2 pi x at 2e12 rounds to stairs 8 ulps of x wide: over the unit ladder's
    # power-of-two steps their slope aliased to a value 3e-3 off with an estimate
    # of 6e-13, until the floor was measured over moves of whole ulps
    x = torch.tensor([1999176115065.0715, 1652369111587.9878], dtype=torch.float64,
                     requires_grad=True)
    mpmath.mp.dps = 50
    for value in x.detach().tolist():
        exact = 2 * mpmath.pi / DAY * mpmath.cos(2 * mpmath.pi * mpmath.mpf(value) / DAY)
        assert math.isclose(2 * math.pi / DAY * math.cos(2 * math.pi * value / DAY), float(exact),
                            rel_tol=1e-6)
    report = _check(lambda x: torch.sin(2 * math.pi * x / DAY),
                    lambda x, g: g * 2 * math.pi / DAY * torch.cos(2 * math.pi * x / DAY), x)
    assert report.passed, str(report)


def test_an_output_far_above_its_derivative_passes():
    # x + sin(x) at 1e8: the first ladder's floor, from moves up to 2**-24 of x,
    # measured sin's curvature (0.14, ten million ulps of the output) as noise
    for seed in range(3):
        report = _check(lambda x: x + torch.sin(x), lambda x, g: g * (1 + torch.cos(x)),
                        _x(1e8, seed))
        assert report.passed, str(report)


def test_forward_mode_and_second_order():
    for seed in range(2):
        x = _x(1e6, seed)
        assert gradcheck.check(torch.sin, (x,), precise=True, seed=0,
                               check_forward_ad=True).passed
        assert gradcheck.check(lambda x: x * torch.sin(x), (x,), precise=True, seed=0,
                               order=2, check_forward_ad=True).passed


def test_float32():
    for seed in range(3):
        assert _check(torch.sin, _cos, _x(1e6, seed, dtype=torch.float32)).passed
        assert not _check(torch.sin, lambda x, g: g * torch.cos(x) * 1.01,
                          _x(1e5, seed, dtype=torch.float32)).passed


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_step_moves_the_input_exactly(dtype):
    eps = float(np.finfo(dtype).eps)
    x = np.array([1024.0, 3.7e6, 1.5e9, 2.5e12, 1.5e15, -7.1e17], dtype=dtype)
    first = largesteps.first_steps(x.astype(np.float64), eps)
    for k in range(largesteps.LEVELS):
        h = (first * 2.0 ** -k).astype(dtype)
        assert np.all((x + h) - x == h) and np.all(x - (x - h) == h)
    # a unit coordinate's steps wherever the spacing leaves room for them
    room = largesteps.UNIT / eps / 2.0 ** (largesteps.LEVELS - 1)
    assert np.all(first[np.abs(x) < room] == largesteps.UNIT)
    assert np.all(first[np.abs(x) >= 2 * room] > largesteps.UNIT)
    assert np.all(np.log2(first) == np.round(np.log2(first)))


def test_the_other_entries_of_an_input_with_large_ones_keep_their_precision():
    # the first ladder's noise floor moves every entry of the input by up to 2**-24
    # of itself, 0.06 at 1e6, across sin's curvature: its slopes bent by 6e-4 and
    # the floor widened the estimates of every column (the complex input's small
    # imaginary parts; every cell of a compressed plan: estimates of 5e-7 of it, 6e-9
    # now), and a backward 1e-6 off passed; the bend is now taken out of the slopes
    wrong = lambda x, g: g * torch.cos(x).conj() * (1 + 1e-6)  # noqa: E731
    for seed in range(2):
        rng = np.random.default_rng(seed)
        z = torch.tensor(1e6 * (1 + rng.uniform(size=3)) + 1j * rng.uniform(size=3),
                         dtype=torch.complex128, requires_grad=True)
        assert _check(torch.sin, lambda x, g: g * torch.cos(x).conj(), z).passed
        assert not _check(torch.sin, wrong, z).passed
        x = _x(1e6, seed, size=40)
        assert _check(torch.sin, _cos, x, jacobian="compressed").passed
        assert not _check(torch.sin, wrong, x, jacobian="compressed").passed


def test_an_inputs_small_coordinates_beside_large_ones_keep_their_precision_at_1e9():
    # the first ladder's floor moves the whole input by up to 2**-24 of each entry, 64
    # at 1e9, across whole periods of sin: every column of that input, the imaginary
    # parts of 0.5 too, got estimates of 1e-6 to 8e-6 and a backward 1e-5 off passed;
    # every coordinate of such an input now also gets the unit's steps
    correct = lambda x, g: g * torch.cos(x).conj()  # noqa: E731
    for seed in range(2):
        rng = np.random.default_rng(seed)
        z = torch.tensor(1e9 * (1 + rng.uniform(size=3)) + 1j * rng.uniform(size=3),
                         dtype=torch.complex128, requires_grad=True)
        report = _check(torch.sin, correct, z)
        assert report.passed
        errors = report.jacobians["numerical"].errors[(0, 0)]
        # (each imaginary part's column where its entry's outputs lie: sin is elementwise)
        assert max(errors[r, 2 * k + 1] for k in range(3) for r in (2 * k, 2 * k + 1)) < 1e-8
        for off in (1e-5, 1e-6):
            wrong = lambda x, g, off=off: g * torch.cos(x).conj() * (1 + off)  # noqa: E731
            assert not _check(torch.sin, wrong, z).passed
