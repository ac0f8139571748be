"""A function whose value at the point is not its limit around it has no
derivative there, and its check says so instead of passing: central
differences read ``f(x + h)`` and ``f(x - h)``, never ``f(x)``, so a special
case at an exact value (``where(x == 0, 1, x)``) or a pole replaced by a
number (jax-md's Lennard-Jones energy at distance 0, ``nan_to_num(inf -
inf) = 0``) passed its first order (exit 0)."""
import pytest

torch = pytest.importorskip("torch")

from adcheck.gradcheck import check  # noqa: E402


def _special_case(x):
    # 1 at x == 0 exactly, x elsewhere: both sides tend to 0, the value is 1;
    # autograd's derivative is 1 everywhere, which the differences agree with
    return torch.where(x == 0, 1.0, 0.0).to(x.dtype) + x


class _SafePole(torch.autograd.Function):
    """4 / r**12 of the distance r = |x| (a row), its pole at r = 0 replaced
    by 0 and its gradient there by 0, as jax-md's safe distance leaves it."""

    @staticmethod
    def forward(ctx, x):
        r2 = (x * x).sum(-1)
        ctx.save_for_backward(x, r2)
        return torch.where(r2 > 0, 4 * r2.clamp(min=1e-300) ** -6, 0.0)

    @staticmethod
    def backward(ctx, grad):
        x, r2 = ctx.saved_tensors
        # d/dx 4 r2**-6 = -48 r2**-7 x
        slope = torch.where(r2 > 0, -48 * r2.clamp(min=1e-300) ** -7, 0.0)
        return (grad * slope)[..., None] * x


def _masked_pole(x):
    return _SafePole.apply(x)


#: the precise slow check, and fast mode, whose central difference's mean stands in
#: for the moves beside the point where it is the value at the point
MODES = [pytest.param({"precise": True}, id="precise"),
         pytest.param({"fast_mode": True}, id="fast")]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("function, values", [
    (_special_case, [0.0, 0.5, -1.0]),
    (_masked_pole, [[0.0, 0.0], [1.0, 2.0]]),
])
def test_a_value_that_is_not_the_limit_is_not_passed(function, values, mode):
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    with torch.no_grad():   # the premise: the value at the point is not the value beside it
        beside = function(x + 1e-9) + function(x - 1e-9)
        assert not torch.allclose(function(x), beside / 2)
    report = check(function, (x,), **mode)
    assert not report.passed
    found = [r for r in report.results if r.check == "discontinuous"]
    assert found and "not the function's limit" in found[0].diagnosis


@pytest.mark.parametrize("function, values", [
    (torch.sin, [0.0, 0.5, -1.0]),
    (lambda x: torch.where(x > 0, x * x, -x), [0.0, 0.5, -1.0]),   # a kink, continuous
    (torch.sinc, [0.0, 0.5, -1.0]),                  # a special case equal to its limit
    (torch.linalg.vector_norm, [0.0, 0.0, 0.0]),     # a kink at the point: the gap shrinks
    (lambda x: x.abs() * 1e-12, [0.0, 2.0]),         # a tiny output beside a kink
])
@pytest.mark.parametrize("mode", MODES)
def test_a_continuous_function_is_not_called_discontinuous(function, values, mode):
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    report = check(function, (x,), **mode)
    assert not [r for r in report.results if r.check == "discontinuous"], report.message()


def test_fast_mode_looks_beside_the_point_only_where_its_sides_disagree_with_it():
    # sin is continuous: fast mode's two evaluations along its direction average to
    # sin(x) within eps**2, so its evaluations are the first, the repeat and those two
    x = torch.tensor([0.0, 0.5, -1.0], dtype=torch.float64, requires_grad=True)
    assert check(torch.sin, (x,), fast_mode=True).counts["function"] == 4
    # at a kink the mean is eps away from the value: the four moves beside it are made,
    # and find the gap shrinking with the move (no discontinuity)
    report = check(torch.linalg.vector_norm, (torch.zeros(3, dtype=torch.float64,
                                                          requires_grad=True),),
                   fast_mode=True)
    assert report.passed and report.counts["function"] == 8
