"""Compressed and probed cells at inputs far above a unit (``gradcheck.large.resolved``).

Their seed columns move every coordinate by a fraction of its magnitude, and
the unit's steps whole Jacobians take there (``numerics.largesteps``) cannot
move them exactly; ``sin`` at 1e9 resolved errors above 1.5e-3 (probed, 300
entries) or 2e-6 (compressed) only, and wrong backwards passed. Such a pass
is judged again on whole Jacobians. The formula checked is torch's
``cos``, which mpmath confirms at these points (tests/gradcheck/
test_large_coordinates.py); the wrong ones are it off by a stated amount.
"""
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the formulas checked are torch's; torch is not installed")

from adcheck import gradcheck  # noqa: E402
from adcheck.gradcheck import api  # noqa: E402
from adcheck.gradcheck.errors import GradcheckError, UncheckableError  # noqa: E402
from adcheck.gradcheck.large import resolved  # noqa: E402
from gradcheck_support import function  # noqa: E402


def _x(scale, size, seed=0):
    rng = np.random.default_rng(seed)
    return torch.tensor(scale * (1 + rng.uniform(size=size)), requires_grad=True)


def _sin(off=0.0):
    return function(torch, torch.sin, lambda x, g: g * torch.cos(x) * (1 + off))


def _check(func, x, **keywords):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (torch's warnings about the custom Function)
        return gradcheck.check(func, (x,), precise=True, seed=0, explore=False, **keywords)


@pytest.mark.parametrize("plan, off", [("probed", 1e-4), ("probed", 1e-6),
                                       ("compressed", 1e-6)])
def test_a_wrong_backward_at_1e9_fails_on_cells_too(plan, off):
    # (each passed before: the cells' resolution was 1.5e-3 and 2e-6)
    report = _check(_sin(off), _x(1e9, 300), jacobian=plan)
    assert not report.passed
    assert report.plan == "dense"
    assert f"the {plan} cells, at inputs up to" in report.settled
    assert "judged again on whole Jacobians: failed" in report.settled


@pytest.mark.parametrize("plan", ["probed", "compressed"])
def test_the_correct_backward_at_1e9_passes_saying_how_it_was_judged(plan):
    report = _check(_sin(), _x(1e9, 300), jacobian=plan)
    assert report.passed, report.message()
    assert report.plan == "dense"
    assert "judged again on whole Jacobians: passed" in report.message()


def test_cells_that_resolve_at_1e6_stand():
    # the first ladder's cells resolve there (estimates of 6e-9 of a cell): no second check
    x = _x(1e6, 300)
    report = _check(_sin(), x, jacobian="compressed")
    assert report.passed and report.plan == "compressed" and report.settled is None
    assert report.cell_reach[1] <= resolved.POOR
    assert not _check(_sin(1e-6), x, jacobian="compressed").passed


def test_cells_of_unit_inputs_are_not_judged_again():
    report = _check(_sin(), _x(1.0, 300), jacobian="probed")
    assert report.passed and report.plan == "probed" and report.settled is None


def _dense_unbuildable(monkeypatch):
    run = api._run

    def refusing(func, inputs, options):
        if options.jacobian == "dense":
            raise GradcheckError("whole Jacobians do not fit (test)")
        return run(func, inputs, options)
    monkeypatch.setattr(api, "_run", refusing)


def test_without_whole_jacobians_a_pass_that_resolved_little_says_so(monkeypatch):
    _dense_unbuildable(monkeypatch)
    report = _check(_sin(1e-4), _x(1e9, 300), jacobian="probed")
    assert report.passed and report.plan == "probed"   # (within what the cells resolve)
    assert "resolved only errors above" in report.settled
    assert "were not built (whole Jacobians do not fit (test))" in report.settled


def test_inputs_beyond_the_limit_are_not_judged_again_whole(monkeypatch):
    # (their time grows with the square of the coordinates: the limit keeps a check of
    # many entries from taking minutes where its cells took a second)
    monkeypatch.setattr(api, "WHOLE_COORDINATES", 200)
    report = _check(_sin(1e-4), _x(1e9, 300), jacobian="probed")
    assert report.plan == "probed"
    assert "were not built (300 input coordinates, above the 200 judged again whole)" in \
        report.settled


def test_without_whole_jacobians_a_pass_that_resolved_nothing_is_refused(monkeypatch):
    _dense_unbuildable(monkeypatch)
    real = resolved.cell_reach
    # (no cell judged: the reach's resolution None, as where every estimate exceeds its cell)
    monkeypatch.setattr("adcheck.gradcheck.flow.cell_reach",
                        lambda *args: (real(*args)[0], None))
    with pytest.raises(UncheckableError, match="could not have failed"):
        _check(_sin(), _x(1e9, 300), jacobian="compressed")


def test_a_narrower_formulas_cells_are_not_judged_again():
    # float32 cells resolve float32's rounding, above POOR by nature (1.5e-2 here)
    rng = np.random.default_rng(0)
    x = torch.tensor(1e4 * (1 + rng.uniform(size=20)), dtype=torch.float32, requires_grad=True)
    report = _check(lambda t: torch.logcumsumexp(t, 0), x, jacobian="probed", order=2)
    assert report.passed and report.plan == "probed" and report.settled is None
    assert report.cell_reach[0] >= 1024 and report.cell_reach[1] > resolved.POOR


def test_an_infinite_entry_is_no_large_input():
    class Problem:
        diff_in, arrays = [0], {0: np.array([np.inf, -3.0, 2.0])}
    formula = SimpleNamespace(blocks={(0, 0): np.ones((3, 1))})
    assert resolved.cell_reach(Problem, {}, {"reverse": formula}) == (3.0, None)


def test_a_function_that_does_not_depend_on_its_inputs_is_not_judged_again():
    # (no cell to judge and none needed: a zero Jacobian at inputs of 1e9 passes on
    # its cells, as it does on whole Jacobians, where 5,000 entries are not refused)
    for size in (300, 5000):
        x = _x(1e9, size)
        report = _check(function(torch, lambda t: t * 0.0, lambda t, g: g * 0.0), x,
                        jacobian="compressed")
        assert report.passed and report.plan == "compressed" and report.settled is None
        assert report.cell_reach == (pytest.approx(x.detach().abs().max().item()), 0.0)
