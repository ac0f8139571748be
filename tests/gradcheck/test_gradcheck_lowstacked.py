"""The forward cells of every nearby point from one stacked problem
(``gradcheck.large.lowstacked``) are each point's ``A S``: the same numbers
as one call per point (bit for bit: the same ops on the same values), and
torch's own forward-mode jvp of the first derivative at each point agrees."""
from __future__ import annotations

import numpy as np
import pytest

from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.core.secondorder import first_derivative
from adcheck.gradcheck.large.cells import seeded_forward
from adcheck.gradcheck.large.lowstacked import stacked_forward
from adcheck.gradcheck.large.seeds import Probes
from adcheck.gradcheck.lowprec.adrounding import nearby_points
from adcheck.gradcheck.lowprec.widening import widened

torch = pytest.importorskip("torch")


def _f(x, w):
    return torch.tanh(x @ w) * x.sum(), torch.asinh(w)


def _problem(dtype):
    rng = np.random.default_rng(3)
    inputs = (torch.tensor(rng.uniform(-1, 1, (2, 3)), dtype=dtype, requires_grad=True),
              torch.tensor(rng.uniform(-1, 1, (3, 2)), dtype=dtype, requires_grad=True))
    func, args = first_derivative(_f, inputs, None, np.random.default_rng(4))
    return Problem(func, args, "f", order=2, warn_precision=False)


def _seeds(problem, k=5):
    rng = np.random.default_rng(5)
    # directions exact in every dtype checked here (multiples of 1/8)
    return {i: Probes(np.round(rng.normal(size=(k, problem.arrays[i].size)) * 8) / 8)
            for i in problem.diff_in}


def _torch_jvp(q, seeds, i, j, p_out):
    """Output ``p_out``'s tangent along ``seeds[i][j]`` by torch's forward AD, at ``q``."""
    import torch.autograd.forward_ad as fwad
    with fwad.dual_level():
        args = [x.detach().requires_grad_(x.requires_grad) for x in q.inputs]
        tangent = torch.tensor(seeds[i].vectors[j].reshape(q.arrays[i].shape),
                               dtype=args[i].dtype)
        args[i] = fwad.make_dual(args[i], tangent)
        out = q.source(*args)[p_out]
        tangent = fwad.unpack_dual(out).tangent
        # (no tangent: the output does not depend on that input)
        return np.zeros(out.numel()) if tangent is None else \
            tangent.detach().double().numpy().ravel()


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
def test_stacked_cells_are_each_points_cells(dtype):
    problem = _problem(dtype)
    epsilon = float(torch.finfo(dtype).eps)
    points = nearby_points(problem, epsilon, widened)
    assert points is not None and len(points) >= 4
    seeds = _seeds(problem)
    for precision in (0, 1):   # the formula's dtype, then its float64 run
        qs = [pair[precision] for pair in points]
        stacked = stacked_forward(qs, seeds)
        assert stacked is not None and len(stacked) == len(qs)
        for q, blocks in zip(qs, stacked):
            alone = seeded_forward(Evaluator(q), seeds, "probed", "").blocks
            assert blocks.keys() == alone.keys() and blocks
            for key in alone:
                np.testing.assert_array_equal(blocks[key], alone[key])
            # torch's forward AD at that point, one direction at a time
            for (o, i), block in blocks.items():
                for j in range(seeds[i].count):
                    expected = _torch_jvp(q, seeds, i, j, o)
                    scale = max(1.0, float(np.max(np.abs(expected))))
                    tol = 8 * float(torch.finfo(q.inputs[i].dtype).eps) * scale * 10
                    np.testing.assert_allclose(block[:, j], expected, rtol=0, atol=tol)


def test_a_single_point_is_left_to_its_own_call():
    problem = _problem(torch.float32)
    points = nearby_points(problem, float(torch.finfo(torch.float32).eps), widened)
    assert stacked_forward([points[0][0]], _seeds(problem)) is None


@pytest.mark.parametrize("dtype", [torch.float16, torch.float64])
def test_each_point_may_take_its_own_directions(dtype):
    # (the probed low-precision allowance nudges the directions point by point)
    problem = _problem(dtype)
    points = nearby_points(problem, float(torch.finfo(dtype).eps), widened)
    qs = [low for low, _ in points]
    own = [{i: Probes(s.vectors + n / 8) for i, s in _seeds(problem).items()}
           for n in range(len(qs))]
    stacked = stacked_forward(qs, own)
    assert stacked is not None and len(stacked) == len(qs)
    for q, seeds, blocks in zip(qs, own, stacked):
        alone = seeded_forward(Evaluator(q), seeds, "probed", "").blocks
        for key in alone:
            np.testing.assert_array_equal(blocks[key], alone[key])
    # and they differ from the same directions at every point
    same = stacked_forward(qs, own[1])
    assert not np.array_equal(same[0][0, 0], stacked[0][0, 0])
