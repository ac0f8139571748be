"""Compressed Jacobians: structured blocks checked in a few directions, nothing hidden.

A row-wise softmax of a (40, 24) input has 960 inputs and 960 outputs; its
columns fall into 24 groups that share no row, so finite differences take 24
directions instead of 960 coordinates. Planted bugs (a missing cross term,
one wrong diagonal entry, an extra entry off the true pattern) must be
caught, located and named; the patterns themselves are checked against
brute force and against the true Jacobians of torch functions.
"""
from __future__ import annotations

import numpy as np
import pytest
from gradcheck_support import one_torch_thread  # noqa: F401  (a fixture)

from adcheck.gradcheck import check
from adcheck.gradcheck.large.structure import Band, Pattern, propose

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROWS, COLS = 40, 24
X = np.random.default_rng(5).standard_normal((ROWS, COLS))


def softmax_function(E, bug=None, where=(7, 3), size=1e-6):
    """Row-wise softmax as a custom Function whose vjp and jvp carry ``bug``:
    ``"no-cross"`` (an elementwise vjp: the cross terms are missing),
    ``"entry"`` (entry ``[where, where]`` of the Jacobian off by ``size``
    relative), ``"extra"`` (the vjp adds ``0.3 g[9, 0]`` to ``x[11, 5]``)."""
    mask = np.zeros((ROWS, COLS))
    mask[where] = 1.0

    class Softmax(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = E.nn.functional.softmax(x, dim=-1)
            ctx.save_for_backward(y)
            ctx.save_for_forward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            if bug == "no-cross":
                return g * y * (1 - y)
            gx = y * (g - (g * y).sum(-1, keepdim=True))
            if bug == "entry":
                gx = gx + size * E.from_numpy(mask) * g * y * (1 - y)
            if bug == "extra":
                extra = np.zeros((ROWS, COLS))
                extra[11, 5] = 0.3
                gx = gx + E.from_numpy(extra) * g[9, 0]
            return gx

        @staticmethod
        def jvp(ctx, t):
            (y,) = ctx.saved_tensors
            out = y * (t - (t * y).sum(-1, keepdim=True))
            if bug == "jvp-entry":
                out = out + size * E.from_numpy(mask) * t * y * (1 - y)
            return out
    return Softmax.apply


def _input(E):
    return E.from_numpy(X.copy()).requires_grad_()


def test_a_correct_structured_formula_passes_in_few_directions(E):
    report = check(softmax_function(E), (_input(E),), precise=True, check_forward_ad=True,
                   seed=0)
    assert report.passed, report.message()
    assert report.plan == "compressed"
    numerical = report.jacobians["numerical"]
    assert numerical[0, 0].shape == (ROWS * COLS, COLS)     # 24 cells per row, not 960
    assert "row-wise" in numerical.note or "banded" in numerical.note
    # 24 directions, each extrapolated (10 to 28 evaluations): far fewer than 960 columns
    assert numerical.counts["function"] <= 28 * COLS


def test_a_missing_cross_term_is_caught_and_named(E):
    report = check(softmax_function(E, "no-cross"), (_input(E),), precise=True, seed=0)
    assert not report.passed
    failure = report.failures[0]
    assert failure.check == "reverse"
    row, col = failure.where
    assert row // COLS == col // COLS and row != col      # a cross term of one softmax row
    assert "cross terms" in failure.diagnosis


def test_one_wrong_entry_of_relative_size_1e_6_is_caught_where_it_is(E):
    report = check(softmax_function(E, "entry"), (_input(E),), precise=True, seed=1)
    assert not report.passed
    failure = report.failures[0]
    flat = 7 * COLS + 3
    assert failure.where == (flat, flat)
    assert failure.max_error == pytest.approx(1e-6 * abs(failure.expected[
        flat - failure.origin[0], flat - failure.origin[1]]), rel=1e-3)


def test_a_wrong_entry_of_the_jvp_is_caught_where_it_is(E):
    report = check(softmax_function(E, "jvp-entry", where=(30, 20), size=1e-2), (_input(E),),
                   check_forward_ad=True, check_backward_ad=False, seed=2)
    assert not report.passed and report.failures[0].check == "forward"
    assert report.failures[0].where == (30 * COLS + 20, 30 * COLS + 20)


def test_an_entry_off_the_true_pattern_is_caught_and_the_reconstruction_refused(E):
    # the formula's pattern (read from its rows) misses the extra entry, so the
    # random product check refuses the reconstruction from row groups and the
    # cells come from every row; the comparison then shows the extra entry
    report = check(softmax_function(E, "extra"), (_input(E),), precise=True, seed=3)
    assert not report.passed
    failure = report.failures[0]
    assert failure.where == (9 * COLS + 0, 11 * COLS + 5)
    assert "where the true Jacobian has none" in failure.diagnosis
    assert "came from every row" in report.jacobians["reverse"].note


def test_small_checks_stay_dense():
    import adcheck.refengine as E
    report = check(E.sin, (E.from_numpy(X[:4, :5].copy()).requires_grad_(),), seed=0)
    assert report.plan == "dense" and report.jacobians["numerical"].seeds is None


# ----- patterns ---------------------------------------------------------------
PATTERNS = [
    Pattern((6,), (6,), (Band(0, 0, 1, 0, 0),)),                       # elementwise
    Pattern((3, 5), (3, 5), (Band(0, 0, 1, 0, 0),)),                   # row-wise
    Pattern((7,), (7,), (Band(0, 0, 1, -1, 2),)),                      # banded
    Pattern((4, 3), (9,), (Band(0, 0, 2, 0, 2),)),                     # strided
    Pattern((2, 3, 2), (3, 2), (Band(1, 0, 1, 0, 0), Band(2, 1, 1, -1, 1))),
]


def _dense(pattern: Pattern) -> np.ndarray:
    m, n = int(np.prod(pattern.out_shape)), int(np.prod(pattern.in_shape))
    rows, cols = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    return pattern.contains(rows.ravel(), cols.ravel()).reshape(m, n)


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.describe())
def test_columns_of_a_colour_share_no_row_and_are_found_by_row(pattern):
    dense = _dense(pattern)
    colours = pattern.column_colours()
    for colour in range(pattern.column_count):
        members = dense[:, colours == colour]
        assert members.sum(axis=1).max(initial=0) <= 1          # no shared row
        found = pattern.columns_of(np.arange(dense.shape[0]), colour)
        for row, col in enumerate(found):
            expected = np.flatnonzero(dense[row] & (colours == colour))
            assert list(expected) == ([] if col < 0 else [col])


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.describe())
def test_rows_of_a_colour_share_no_column_and_are_found_by_column(pattern):
    dense = _dense(pattern)
    colours = pattern.row_colours()
    for colour in range(pattern.row_count):
        assert dense[colours == colour].sum(axis=0).max(initial=0) <= 1
        found = pattern.rows_of(np.arange(dense.shape[1]), colour)
        for col, row in enumerate(found):
            expected = np.flatnonzero(dense[:, col] & (colours == colour))
            assert list(expected) == ([] if row < 0 else [row])


def _torch_cases():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    w = torch.randn(4, 3, 3, 3, dtype=torch.float64)
    b = torch.randn(6, 5, dtype=torch.float64)
    return [("sin", torch.sin, (8, 5)), ("softmax", lambda x: F.softmax(x, -1), (6, 7)),
            ("cumsum", lambda x: torch.cumsum(x, 1), (5, 6)),
            ("matmul", lambda x: x @ b, (4, 6)),
            ("conv2d", lambda x: F.conv2d(x, w, padding=1), (1, 3, 6, 7)),
            ("layer_norm", lambda x: F.layer_norm(x, (6,)), (5, 6))]


@pytest.mark.parametrize("case", range(6))
def test_a_pattern_read_from_three_rows_holds_the_whole_true_jacobian(case):
    # the true Jacobian comes from torch.autograd.functional.jacobian
    torch = pytest.importorskip("torch")
    name, f, shape = _torch_cases()[case]
    x = torch.randn(*shape, dtype=torch.float64)
    jac = torch.autograd.functional.jacobian(f, x).reshape(f(x).numel(), x.numel()).numpy()
    out_shape = tuple(f(x).shape)
    centre = int(np.ravel_multi_index(tuple(n // 2 for n in out_shape), out_shape))
    sampled = [centre, 0, jac.shape[0] - 1]
    rows = np.concatenate([np.full(np.count_nonzero(jac[r]), r) for r in sampled])
    cols = np.concatenate([np.flatnonzero(jac[r]) for r in sampled])
    pattern = propose(out_shape, tuple(shape), rows, cols)
    assert _dense(pattern)[jac != 0].all(), f"{name}: {pattern.describe()}"
    assert pattern.column_count < x.numel(), f"{name}: nothing to compress"
