"""A function whose values move in stairs (rounding to a grid, a quantizer
with a straight-through backward, the cancellation of ``(x + 1e15) - 1e15``)
has derivative 0 between them, and its check of a nonzero backward used to
say "the function does not use this input, yet the vjp returns a gradient
for it", which is false of each. It now names the stairs and their width;
an input the function really does not use keeps the old sentence.

The evidence is the function's own values: unchanged by a move far below
the width (so its derivative there is 0), and whole multiples of the width.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the Functions are torch's; torch is not installed")

from adcheck import gradcheck  # noqa: E402
from adcheck.gradcheck.core.grids import stair_width  # noqa: E402


def _identity_backward(forward):
    class Stairs(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return forward(x)

        @staticmethod
        def backward(ctx, g):
            return g
    return Stairs.apply


def _x():
    return torch.tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)


CASES = {"quantizer 0.25": (lambda x: torch.round(x / 0.25) * 0.25, 0.25),
         "rounding 0.001": (lambda x: torch.round(x * 1000) / 1000, 0.001),
         "cancellation": (lambda x: (x + 1e15) - 1e15, 0.125)}


@pytest.mark.parametrize("name", list(CASES))
def test_stairs_are_named_with_their_width(name):
    forward, width = CASES[name]
    x = _x()
    with torch.no_grad():   # the evidence: flat between stairs, values on them
        assert torch.equal(forward(x), forward(x + 1e-9))
        values = forward(x).numpy()
    assert np.allclose(values / width, np.round(values / width), rtol=0, atol=1e-6)
    report = gradcheck.check(_identity_backward(forward), (x,), precise=True, seed=0)
    assert not report.passed
    assert f"whole multiple of {width:g}" in report.diagnosis
    assert "does not use this input" not in report.diagnosis


def test_an_input_really_unused_keeps_its_sentence():
    class Unused(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return 2 * g, g
    y = _x().detach().flip(0).requires_grad_()
    report = gradcheck.check(Unused.apply, (_x(), y), precise=True, seed=0)
    assert "the function does not use this input" in report.diagnosis
    # typed inputs: 2 x of (0.7, -1.3, 0.4) is a multiple of 0.1 too, and no stairs
    typed = torch.tensor([0.7, -1.3, 0.4], dtype=torch.float64, requires_grad=True)
    report = gradcheck.check(Unused.apply, (typed, typed.detach().flip(0).requires_grad_()),
                             precise=True, seed=0)
    assert "the function does not use this input" in report.diagnosis


def test_the_width_of_stairs_and_of_none():
    values = np.random.default_rng(1).standard_normal(100)
    assert stair_width(values) is None                                  # doubles
    assert stair_width(values.astype(np.float32).astype(np.float64)) is None   # float32's ulps
    assert stair_width(np.round(values * 16) / 16) == 0.0625
    assert stair_width(np.round(values, 3)) == 0.001
    assert stair_width(np.array([1.5, 1.5, 2.0])) is None               # too few values


def test_an_output_that_underflows_to_zero_is_named():
    """torch's ndtr(-x) at x of 11.3 to 13.1 computes as 0 (cancellation
    in 1 + erf), where it is 1e-29 to 1e-39 (mpmath), and its backward
    returns the exact derivative. The failure says the output is 0 and why
    that can be, not only "the function does not use this input"."""
    mpmath = pytest.importorskip("mpmath", reason="mpmath gives ndtr's exact values here")
    x = torch.tensor([12.3, 11.3, 13.1], dtype=torch.float64, requires_grad=True)
    values = torch.special.ndtr(-x).detach().numpy()
    exact = [float(mpmath.ncdf(-mpmath.mpf(v))) for v in x.detach().numpy()]
    assert np.all(values == 0.0) and min(exact) > 1e-40
    report = gradcheck.check(lambda t: torch.special.ndtr(-t), (x,), precise=True, seed=0,
                             explore=False)
    assert not report.passed
    assert "the output is exactly 0 at these inputs" in report.diagnosis
    assert "underflows or cancels" in report.diagnosis


# a 0/1 quantizer (pyro's straight-through: forward (x > t), backward g as it came)
# has two values at most, too few to show stairs alone; they show as the input
# moves farther than the steps, by whole stairs of 1
STEPS = {"some outputs 1": (lambda x: (x > 0.0).double(), False),
         "every output 0": (lambda x: (x > 3.0).double(), True),
         "sign, -1 and 1": (torch.sign, False)}


@pytest.mark.parametrize("name", list(STEPS))
def test_a_step_function_with_a_straight_through_backward_is_stairs(name):
    forward, all_zero = STEPS[name]
    x = _x()
    with torch.no_grad():   # the evidence: flat at the steps, a whole stair farther
        values = forward(x)
        assert torch.equal(values, forward(x + 1e-6)) and torch.equal(values, forward(x - 1e-6))
        assert len(torch.unique(values)) <= 2 and bool(values.any()) != all_zero
        jump = forward(x + 4.0) - values
        assert bool(jump.any()) and torch.equal(jump, torch.round(jump))
    report = gradcheck.check(_identity_backward(forward), (x,), precise=True, seed=0)
    assert not report.passed
    assert "does not use this input" not in report.diagnosis
    assert "whole multiple of 1: the function moves in stairs" in report.diagnosis
    assert "straight-through" in report.diagnosis


def test_a_step_function_on_typed_inputs_is_stairs():
    typed = torch.tensor([0.7, -1.3, 0.4], dtype=torch.float64, requires_grad=True)
    report = gradcheck.check(_identity_backward(lambda x: (x > 0).double()), (typed,),
                             precise=True, seed=0)
    assert "whole multiple of 1: the function moves in stairs" in report.diagnosis


def test_a_flat_piece_of_a_smooth_function_is_no_stairs():
    # relu below 0 with a straight-through backward: farther moves change it by
    # x + move, no whole stairs
    x = -_x().detach().abs().requires_grad_()
    report = gradcheck.check(_identity_backward(torch.relu), (x,), precise=True, seed=0,
                             explore=False)
    assert not report.passed and "stairs" not in report.diagnosis
