"""A known false alarm of ours, kept as a strict xfail until it is fixed
(docs/registry.md, "PyTorch's own operator database", its noise floor
paragraph): the precise second-order check of sigmoid with every input in its
far tail (20 to 30).
The first derivative ``v s (1 - s)`` rounds in stairs: ``1 - s`` changes only
when ``s`` changes by an ulp of 1, about every 2e-5 in ``x`` at 26. The noise
floor's moves (at most about 2e-6 there) stay inside a stair, so the floor is
0. Richardson's quotients settle at wide steps, but at its 14th step (1e-4) a
few stairs crossed look like a jump, so the steps before it are dropped and
smaller ones taken; inside one stair they give a quotient of exactly 0 with no
error: numerical 0 where mpmath gives -2.1e-12. torch's AD (and
refengine's) is right to the rounding of ``1 - s``, an ulp of 1 times ``|v|``."""
import mpmath
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the case is torch.sigmoid's double backward")

from adcheck import gradcheck  # noqa: E402
from adcheck.gradcheck.core import secondorder  # noqa: E402


@pytest.fixture(scope="module")
def tail():
    """x in [20, 30), the dense precise second-order report of torch.sigmoid at
    seed 0, and the grad_outputs v it drew."""
    x = np.random.default_rng(0).uniform(20.0, 30.0, 20)
    drawn, draw = [], secondorder._random_like

    def recorded(problem, out_idx, rng):
        drawn.append(draw(problem, out_idx, rng))
        return drawn[-1]
    secondorder._random_like = recorded
    try:
        report = gradcheck.check(torch.sigmoid, (torch.tensor(x, requires_grad=True),),
                                 precise=True, order=2, seed=0, jacobian="dense")
    finally:
        secondorder._random_like = draw
    return x, report, drawn[0].detach().numpy()


def _exact(x, v) -> np.ndarray:
    """v s (1 - s) (1 - 2 s), the derivative of v s (1 - s), in 50 digits."""
    with mpmath.workdps(50):
        s = [1 / (1 + mpmath.exp(-mpmath.mpf(float(e)))) for e in x]
        return np.array([float(mpmath.mpf(float(w)) * t * (1 - t) * (1 - 2 * t))
                         for t, w in zip(s, v)])


def test_torchs_double_backward_is_right_to_the_rounding_of_1_minus_s(tail):
    x, report, v = tail
    exact = _exact(x, v)
    ad = np.diag(report.jacobians["reverse"].blocks[0, 0])
    # (measured: at most 0.51 ulps of 1 times |v|)
    assert np.all(np.abs(ad - exact) <= 2 * np.finfo(float).eps * np.abs(v))


def test_the_numerical_side_is_what_is_wrong(tail):
    x, report, v = tail
    numerical = np.diag(report.jacobians["numerical"].blocks[0, 0])
    exact = _exact(x, v)
    assert np.count_nonzero(numerical == 0.0) > 0
    assert np.max(np.abs(numerical - exact)) > 1e-13


@pytest.mark.xfail(strict=True, reason="known false alarm: stairs of 1 - sigmoid(x)'s rounding "
                   "look like a jump, and the steps inside one stair give 0 with no error "
                   "(docs/registry.md)")
def test_the_check_passes(tail):
    _, report, _ = tail
    assert report.passed, str(report)
