"""A false alarm of ours, found on geoopt: ``dist0`` on a Poincaré ball whose
curvature is float32's rounding of 1 (``c = 0.99999996...``), at ``|x| = 1 -
1e-9``, is ``2 artanh(clamp(sqrt(c) |x|, max=1 - 1e-7)) / sqrt(c)``: the clamp
is active within about 1e-7 of the point, so the function is flat there and
its derivative 0, as AD says. Beyond, ``artanh`` rises steeply, and
Richardson's quotients at steps from 1e-5 to 8e-7 grew as the steps shrank
but by less than a break (a jump's quotients double), so its 14 levels were
kept as a resolved slope of 3.8e5 within an estimate of 10 %. Now a column
not converged whose quotients still move at the smallest step, by more than
their noise and while the function's move shrinks with the step, gets the
smaller steps a jump gets (``richardson._moving``): below 2e-7 they are 0."""
import numpy as np
import pytest

from adcheck import refengine as rf
from adcheck import gradcheck

C = 0.9999999618701925    # float32's rounding of the curvature 1, as geoopt keeps it
EDGE = 1 - 1e-7           # geoopt's clamp of sqrt(c) |x| in float64
SEEDS = range(4)


def _artanh2(r):
    return rf.log(1 + r) - rf.log(1 - r)   # 2 artanh(r), as geoopt writes it


def _radius(x):
    return rf.sqrt((x * x).sum(-1)) * C ** 0.5


def _dist0(x):
    return _artanh2(_radius(x).clamp(max=EDGE)) / C ** 0.5


def _straight_through(x):
    """``_dist0`` whose clamp passes the gradient through (its value clamped)."""
    r = _radius(x)
    return _artanh2(r + (r.clamp(max=EDGE) - r).detach()) / C ** 0.5


def _planted(x):
    """``_dist0`` with a gradient of 1e-3 where it is flat."""
    return _dist0(x) + 1e-3 * (x - x.detach()).sum(-1)


def _point(seed: int) -> np.ndarray:
    d = np.random.default_rng(seed).standard_normal((2, 4))
    return d / np.linalg.norm(d, axis=-1, keepdims=True) * (1 - 1e-9)


def test_the_function_is_flat_within_reach_of_the_point():
    # the judge, apart from the code under test: central differences at steps
    # inside the clamp's reach are exactly 0; at 1e-5 they cross it
    x = _point(0)
    for h, flat in ((1e-8, True), (1e-9, True), (1e-5, False)):
        moved = [(_dist0(rf.tensor(x + s * h * e)).numpy() for s in (1, -1))
                 for e in np.eye(8).reshape(8, 2, 4)]
        quotients = np.array([(plus - minus) / (2 * h) for plus, minus in moved])
        assert np.all(quotients == 0) == flat


@pytest.mark.parametrize("seed", SEEDS)
def test_the_precise_check_of_the_clamp_passes(seed):
    report = gradcheck.check(_dist0, (rf.tensor(_point(seed), requires_grad=True),),
                             precise=True, seed=0, explore=False)
    assert report.passed, report.message()
    numerical = report.jacobians["numerical"].blocks[0, 0]
    assert np.all(numerical == 0)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("wrong", [_straight_through, _planted])
def test_a_wrong_formula_at_the_same_points_fails(wrong, seed):
    report = gradcheck.check(wrong, (rf.tensor(_point(seed), requires_grad=True),),
                             precise=True, seed=0, explore=False)
    assert not report.passed


def test_torch_agrees_at_a_step_inside_the_clamps_reach():
    torch = pytest.importorskip("torch")

    def dist0(x):
        r = (x.norm(dim=-1) * C ** 0.5).clamp(max=EDGE)
        return (torch.log(1 + r) - torch.log(1 - r)) / C ** 0.5
    x = torch.tensor(_point(0), requires_grad=True)
    assert torch.autograd.gradcheck(dist0, (x,), eps=1e-9, atol=1e-7)
    assert gradcheck.check(dist0, (x,), precise=True, seed=0, explore=False).passed
