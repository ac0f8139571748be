"""Richardson's sentinel taken a group of columns at a time (``gradcheck.numerics.sentinel``).

A staircase reads as a line of slope 1 to two steps wider than its stairs
(``round(x, 3)`` at 0.96, whose first step is 0.03); only the smallest step
sees the flat stair, whose derivative is 0. Each case puts such columns among
columns that stop after two steps, so their group's sentinel must tell them
apart, and compares the numerical Jacobian with the derivative known in
closed form (2 on the diagonal: the stairs are flat).
"""
from __future__ import annotations

import numpy as np
import pytest

from adcheck.gradcheck import check
from adcheck.gradcheck.numerics import sentinel

#: inputs whose first steps (|x| / 32: 0.03, 0.02, 0.01, 0.04) span whole stairs
STAIRS = [0.96, 0.64, 0.32, 1.28]


def stairs(E, x):
    return E.floor(x * 1000 + 0.5) / 1000


def leaf(E, values):
    return E.tensor(np.asarray(values, dtype=float), dtype=E.float64, requires_grad=True)


def line_with_stairs_at(E, where, size):
    """``2 x``, plus ``round(x_j, 3)`` at the coordinates ``where``."""
    mask = np.zeros(size)
    mask[where] = 1.0
    m = E.tensor(mask, dtype=E.float64)
    return lambda x: 2 * x + stairs(E, x * m) * m


def points(size, stairs_at):
    x = np.random.default_rng(0).uniform(0.2, 1.5, size)
    x[stairs_at] = STAIRS[:len(stairs_at)]
    return x


@pytest.mark.parametrize("where", [[3], [0, 21], [5, 6, 7, 8]], ids=["one", "two groups", "four"])
def test_a_staircase_among_lines_is_flat(E, where):
    size = 2 * sentinel.GROUP + 8
    report = check(line_with_stairs_at(E, where, size), (leaf(E, points(size, where)),),
                   precise=True, seed=0)
    assert report.passed, report.message()
    np.testing.assert_allclose(report.jacobians["numerical"][0, 0], 2 * np.eye(size), atol=1e-9)


def test_opposite_stairs_do_not_cancel_in_a_group(E):
    # round(x0 - x1, 3) at x0 = x1: the two columns' wide-step slopes are +1
    # and -1 and their steps equal, so weights equal in size and sign would
    # move the group's point along x0 - x1 = 0 and see no gap
    size = sentinel.GROUP
    x = points(size, [])
    x[:2] = [0.96, 0.96]

    def f(t):
        return 2 * t + stairs(E, t[0] - t[1])
    report = check(f, (leaf(E, x),), precise=True, seed=0)
    assert report.passed, report.message()
    np.testing.assert_allclose(report.jacobians["numerical"][0, 0], 2 * np.eye(size), atol=1e-9)


def test_a_smooth_function_takes_one_sentinel_pair_per_group(E):
    # the group's two evaluations replace two per column: a line's columns
    # stop after 4 evaluations each, plus 2 per group (and the noise
    # measurement's few, and the point check's four that ride in the first
    # evaluation: core.beside), where one sentinel per column made it 6 each
    size = 4 * sentinel.GROUP
    report = check(lambda x: 2 * x + 1, (leaf(E, np.linspace(0.5, 1.5, size)),), precise=True,
                   seed=0)
    assert report.passed, report.message()
    numerical = report.jacobians["numerical"]
    assert numerical.counts["function"] <= 4 * size + 2 * 4 + 16 + 4
    np.testing.assert_allclose(numerical[0, 0], 2 * np.eye(size), atol=1e-12)


def test_a_group_with_one_flat_column_disagrees():
    # a group's quotient that the estimates predict agrees; one whose column 2
    # is flat at the smallest step (a stair) misses that column's gap in output
    # 0 and disagrees (its columns then get their own sentinels)
    rng = np.random.default_rng(1)
    steps = np.full(4, 1e-6)
    best = rng.uniform(1.0, 2.0, (4, 3))
    current = {0: (best, np.full((4, 3), 1e-14))}
    parts, weights = sentinel.groups(np.arange(4))
    u = weights[0] * steps
    smooth = (u @ best)[None, :]
    noise = np.full((1, 3), 1e-15)
    agree = sentinel.confirmed(2.0 ** -52, current, steps, parts, weights,
                               ({0: smooth}, {0: noise}))
    assert agree.tolist() == [True]
    stair = smooth - u[2] * np.array([[1.0, 0.0, 0.0]])   # column 2 flat in output 0
    agree = sentinel.confirmed(2.0 ** -52, current, steps, parts, weights,
                               ({0: stair}, {0: noise}))
    assert agree.tolist() == [False]
