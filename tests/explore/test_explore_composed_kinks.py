"""Kinks composed inside a model: AD's conventions give one neighbouring piece's
Jacobian, which a combined direction's one-sided derivatives can both exclude.

Found on a ResNet basic block (conv, BatchNorm2d, ReLU, twice, and the skip)
checked with `adcheck check` as written: the explore pass set a BatchNorm
weight to 0 and the biases to 0 (a tie at exact zero), every ReLU of that
channel then sits at 0, and torch's right formulas were reported FAIL
("directional derivative outside the one-sided derivatives"). The point is
not differentiable; along the tied entries moved together the derivative is
not linear in the direction, and AD's value is the derivative on the piece
where that channel's bias is below 0. A formula that is no piece's still
fails (tied maxima each given the whole gradient:
test_explore_verdicts.test_a_tie_summing_to_two_fails_only_along_the_joint_direction).
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck.core.evaluation import Evaluator  # noqa: E402
from adcheck.gradcheck.core.jacobian import Jacobian  # noqa: E402
from adcheck.gradcheck.core.problem import Problem  # noqa: E402
from adcheck.gradcheck.explore import brackets  # noqa: E402

Z = torch.tensor([1.0, -3.0], dtype=torch.float64)
W = torch.tensor([1.0, -1.0], dtype=torch.float64)


def two_relus(p):
    """relu(g z + b) . w: at g = b = 0 both ReLUs sit at their kink."""
    return (torch.relu(p[0] * Z + p[1]) * W).sum()


def _judge(func, point, rows):
    x = torch.tensor(point, dtype=torch.float64, requires_grad=True)
    ev = Evaluator(Problem(func, (x,), "f", warn_precision=False))
    jac = Jacobian("reverse", ev.problem.layout, {(0, 0): np.atleast_2d(rows)})
    return brackets.judge(ev, {"reverse": jac}, [0])


def _ad_rows(func, point):
    x = torch.tensor(point, dtype=torch.float64)
    return torch.autograd.functional.jacobian(func, x).reshape(-1, x.numel()).numpy()


def _one_sided(func, point, u, h=1e-7):
    x, u = torch.tensor(point, dtype=torch.float64), torch.tensor(u, dtype=torch.float64)
    with torch.no_grad():
        return (float((func(x) - func(x - h * u)) / h), float((func(x + h * u) - func(x)) / h))


def test_torch_formula_outside_both_one_sided_derivatives_is_a_kink_not_a_failure():
    rows = _ad_rows(two_relus, (0.0, 0.0))
    # the premise, measured here: AD (relu'(0) = 0) gives 0 along (1, 1); finite
    # differences give 2 on both sides, so the bracket [2, 2] excludes it
    assert rows.tolist() == [[0.0, 0.0]]
    assert np.allclose(_one_sided(two_relus, (0.0, 0.0), (1.0, 1.0)), (2.0, 2.0))
    # 0 is the derivative where b < 0 (both ReLUs off): a piece beside the point
    assert _judge(two_relus, (0.0, 0.0), rows).verdict == "kink"


def test_a_formula_that_is_no_pieces_still_fails_there():
    verdict = _judge(two_relus, (0.0, 0.0), [[5.0, 5.0]])
    assert verdict.verdict == "fail"


def _resnet_block():
    """A ResNet basic block's output as a function of its four BatchNorm
    vectors (convolutions and input fixed), and the point the explore pass
    chose in it: the first BatchNorm's weight 0 in channel 2, every bias 0."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 4, 4, 4, dtype=torch.float64, generator=gen)
    w1, w2 = (torch.randn(4, 4, 3, 3, dtype=torch.float64, generator=gen) / 6 for _ in "12")
    bn = torch.nn.functional.batch_norm

    def block(p):
        h = torch.relu(bn(torch.nn.functional.conv2d(x, w1, padding=1), None, None, p[0:4],
                          p[4:8], training=True))
        h = bn(torch.nn.functional.conv2d(h, w2, padding=1), None, None, p[8:12], p[12:16],
               training=True)
        return torch.relu(h + x).reshape(-1)[::8]
    point = (1.0, 1.0, 0.0, 1.0) + (0.0,) * 4 + (1.0,) * 4 + (0.0,) * 4
    return block, point


def test_a_resnet_block_at_a_zero_weight_channel_is_a_kink():
    f, point = _resnet_block()
    rows = _ad_rows(f, point)
    zeros = [float(v == 0) for v in point]          # the tie at zero, moved together
    left, right = np.array([_one_sided(lambda p, r=r: f(p)[r], point, zeros)
                            for r in range(rows.shape[0])]).T
    along = rows @ np.array(zeros)
    gap = np.maximum(np.minimum(left, right) - along, along - np.maximum(left, right))
    assert gap.max() > 1e-3   # torch's AD leaves the one-sided bracket of some output
    assert _judge(f, point, rows).verdict == "kink"


def test_a_resnet_block_with_a_wrong_bias_gradient_fails_there():
    f, point = _resnet_block()
    rows = _ad_rows(f, point)
    rows[:, 12:16] *= 3.0    # the second BatchNorm's bias gradient three times too large
    assert _judge(f, point, rows).verdict == "fail"
