"""A backward that writes its gradient by index assignment (``gw[idx] += g``)
keeps one contribution of a repeated index: the failure names that cause and
the fix (``gradcheck.verdict.lostrepeats``).

The expected Jacobians here are built by hand: an embedding's Jacobian has a
1 wherever an output row reads a weight row, whatever repeats."""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check
from adcheck.gradcheck.verdict.lostrepeats import lost_repeats
from adcheck.refengine.autograd import Function

WORDS = "index assignment"


def _embedding(write):
    """weight[idx], whose backward puts the gradient rows back with ``write``."""
    class Embed(Function):
        @staticmethod
        def forward(ctx, weight, idx):
            ctx.save_for_backward(idx)
            ctx.rows = weight.shape[0]
            return weight[idx]

        @staticmethod
        def backward(ctx, g):
            (idx,) = ctx.saved_tensors
            gw = E.zeros((ctx.rows, g.shape[-1]), dtype=g.dtype)
            return write(gw, idx, g), None
    return Embed.apply


def _assigned(gw, idx, g):
    gw[idx] += g            # a repeated index keeps one of its rows
    return gw


def _accumulated(gw, idx, g):
    return gw.index_add_(0, idx, g)


def _doubled(gw, idx, g):
    return gw.index_add_(0, idx, 2 * g)


def _inputs(indices):
    weight = E.tensor(np.random.default_rng(0).standard_normal((6, 3)), dtype=E.float64,
                      requires_grad=True)
    return weight, E.tensor(np.array(indices, dtype=np.int64))


def _hand_jacobian(indices, rows=6, width=3):
    jac = np.zeros((len(indices) * width, rows * width))
    for p, r in enumerate(indices):
        for c in range(width):
            jac[p * width + c, r * width + c] = 1.0
    return jac


def test_assignment_with_a_repeated_index_fails_naming_the_cause_and_the_fix():
    report = check(_embedding(_assigned), _inputs([4, 1, 4, 0]), precise=True, explore=False)
    assert not report.passed
    (failure,) = [f for f in report.failures if f.check == "reverse"]
    assert WORDS in failure.diagnosis and "index_add_" in failure.diagnosis
    assert "the indices repeat: 4 appears 2 times in input 1" in failure.diagnosis
    # the vjp the check built is the hand Jacobian with the first 4's row dropped
    hand = _hand_jacobian([4, 1, 4, 0])
    assert np.allclose(failure.expected, hand)
    assert np.array_equal(failure.actual != 0, (hand != 0) & ~np.isin(
        np.arange(hand.shape[0])[:, None], [0, 1, 2]))


def test_with_distinct_indices_the_same_backward_is_right_and_passes():
    report = check(_embedding(_assigned), _inputs([4, 1, 3, 0]), precise=True, explore=False)
    assert report.passed, report.message()


def test_accumulating_backward_passes_with_repeated_indices():
    report = check(_embedding(_accumulated), _inputs([4, 1, 4, 4]), precise=True,
                   explore=False)
    assert report.passed, report.message()


def test_another_error_with_repeated_indices_is_not_called_assignment():
    report = check(_embedding(_doubled), _inputs([4, 1, 4, 0]), precise=True, explore=False)
    assert not report.passed
    assert all(WORDS not in (f.diagnosis or "") for f in report.failures)
    assert "2 times numerical" in report.failures[0].diagnosis


@pytest.mark.parametrize("actual_of", [
    lambda hand: hand * 0,                        # nothing kept: a missing gradient
    lambda hand: hand * 2,                        # a factor
    lambda hand: np.where(hand != 0, 0, 1.0),     # entries added where none belong
])
def test_the_shape_is_only_the_dropped_contributions(actual_of):
    hand = _hand_jacobian([4, 1, 4, 0])
    assert lost_repeats(hand, actual_of(hand)) == 0
    dropped = hand.copy()
    dropped[0:3] = 0            # the first read of row 4 lost, its second kept
    assert lost_repeats(hand, dropped) == 3


def test_a_bias_gradient_summed_over_part_of_its_broadcast_has_the_same_shape():
    class AddBias(Function):
        @staticmethod
        def forward(ctx, x, b):
            return x + b

        @staticmethod
        def backward(ctx, g):
            return g, g[-1]      # the last row's share only
    x = E.tensor(np.random.default_rng(1).standard_normal((3, 4)), requires_grad=True)
    b = E.tensor(np.random.default_rng(2).standard_normal(4), requires_grad=True)
    report = check(AddBias.apply, (x, b), precise=True, explore=False)
    (failure,) = report.failures
    assert failure.in_idx == 1 and "part of a broadcast" in failure.diagnosis
    assert "the indices repeat" not in failure.diagnosis     # (no integer input here)


def test_a_vjp_missing_its_cross_terms_is_not_named_so():
    # softmax's Jacobian keeps its diagonal in every row: a row loses some entries only
    p = np.array([0.2, 0.3, 0.5])
    expected = np.diag(p) - np.outer(p, p)
    assert lost_repeats(expected, np.diag(np.diag(expected))) == 0


def test_svd_extra_singular_vectors_are_said_to_be_ignored_not_assigned():
    # torch documents the gradients of full_matrices=True's extra vectors (an
    # arbitrary basis) as ignored: Vh's last row of a 3 x 4 input; the failure
    # named index assignment first, with no index anywhere
    torch = pytest.importorskip("torch", reason="torch's svd (pip install torch)")
    a = torch.tensor(np.random.default_rng(3).standard_normal((3, 4)), requires_grad=True)
    report = check(torch.linalg.svd, (a,), explore=False)
    (failure,) = [f for f in report.failures if f.check == "reverse"]
    assert failure.out_idx == 2
    assert failure.diagnosis.startswith(
        "the vjp ignores 4 output coordinates of output 2 (the first [3, 0])")
    assert "full_matrices=False" in failure.diagnosis
    assert check(lambda a: torch.linalg.svd(a, full_matrices=False), (a,),
                 explore=False).passed
