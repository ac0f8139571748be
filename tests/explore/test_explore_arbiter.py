"""The mpmath arbiter of a failing explored point (gradcheck/explore/arbiter.py).

Where the forward cancels, finite differences see a quantized function and fail
a correct formula; the op's mpmath reference tells the two apart. Each test
takes its expected derivative from mpmath, independently of the code under test.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import mpmath
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

import adcheck.refengine as E  # noqa: E402
from adcheck.gradcheck.api import check, run  # noqa: E402
from adcheck.gradcheck.core.options import Options  # noqa: E402
from adcheck.gradcheck.explore import arbiter  # noqa: E402
from adcheck.gradcheck.explore.search import Explorer  # noqa: E402
from adcheck.gradcheck.explore.tally import Tally  # noqa: E402
from adcheck.runner.reproduction import rebuild  # noqa: E402

#: found by an idle `adcheck ops --check reverse,forward --explore --explore-budget 2`
X = -7.850276256330784


def _t(values, engine=E):
    return engine.tensor(values, dtype=engine.float64, requires_grad=True)


def _point(func, inputs, **keywords):
    """What exploring says at exactly these inputs: ``(kind, note, tally)``, ``note``
    what the mpmath reference found there (on the report's line of the point)."""
    report = SimpleNamespace(seed=0, name="f", results=[])
    explorer = Explorer(run, func, inputs, Options.from_keywords(
        seed=0, precise=True, explore=True, explore_budget=60.0, **keywords), report,
        False, False)
    kind, _, bracket = explorer.try_point({})
    return kind, getattr(bracket, "note", ""), explorer.tally


def _gelu_reference():
    """The registry's own mpmath reference of gelu, as `adcheck ops --explore` hands
    it to the check (the sample's other arguments bound)."""
    ref = rebuild("nn.functional.gelu", "float64", 0, "reverse",
                  explore=2).keywords["explore_reference"]
    assert ref is not None
    return ref


def _true_gelu_derivative(x: float) -> float:
    mpmath.mp.dps = 50
    x = mpmath.mpf(x)
    return float(mpmath.ncdf(x) + x * mpmath.npdf(x))       # d/dx x Phi(x)


def test_the_runner_hands_an_explored_check_its_ops_mpmath_reference():
    ref = _gelu_reference()
    mpmath.mp.dps = 60     # (its 1 + erf cancels 15 of them, as the forward's does)
    (value,) = ref(np.array([mpmath.mpf(X)], dtype=object))
    exact = mpmath.mpf(X) * mpmath.ncdf(mpmath.mpf(X))
    assert abs(value - exact) <= 1e-40 * abs(exact)
    # only an explored check carries it (the given inputs are judged as before)
    assert "explore_reference" not in rebuild("nn.functional.gelu", "float64", 0,
                                              "reverse").keywords


def test_gelu_at_minus_7_85_a_forward_that_cancels_is_not_a_failure():
    true = _true_gelu_derivative(X)
    ref = _gelu_reference()
    for engine, gelu in ((E, E.nn.functional.gelu), (torch, torch.nn.functional.gelu)):
        leaf = _t([X], engine)
        (g,) = engine.autograd.grad(gelu(leaf).sum(), leaf)
        # the formula is right to its own rounding (Phi = (1 + erf) / 2 rounds)
        assert abs(g.item() - true) < 1e-3 * abs(true)
        # the forward's 1 + erf is 4e-15 in steps of 1.1e-16: its quotient is Phi alone
        h = 2.0 ** -20
        with engine.no_grad():
            quotient = (gelu(_t([X + h], engine)).item() - gelu(_t([X - h], engine)).item()) / (2 * h)
        assert abs(quotient - true) > 0.5 * abs(true)
        for forward in (False, True):
            modes = dict(check_forward_ad=forward, check_backward_ad=not forward)
            kind, _, tally = _point(gelu, (_t([X], engine),), explore_reference=ref, **modes)
            assert kind == "cancels" and tally.arbitrated == 1
            # an op without an mpmath reference keeps the verdict of the quotients
            assert _point(gelu, (_t([X], engine),), **modes)[0] == "fail"


class _ByErfc(torch.autograd.Function):
    """gelu with the backward Phi + x phi, Phi computed as erfc(-x / sqrt 2) / 2
    (no cancellation in the tail)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.nn.functional.gelu(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (0.5 * torch.erfc(-x / math.sqrt(2))
                    + x * torch.exp(-x * x / 2) / math.sqrt(2 * math.pi))


def test_gelu_at_minus_8_25_its_own_formula_is_off_and_fails_with_mpmaths_evidence():
    # there 1 + erf is ~7e-16, a few units of 1.1e-16: the formula's Phi + x phi
    # loses Phi's low bits (0.44 % of the derivative); a formula by erfc keeps them
    x = -8.25
    true = _true_gelu_derivative(x)
    leaf = _t([x], torch)
    (g,) = torch.autograd.grad(torch.nn.functional.gelu(leaf).sum(), leaf)
    (good,) = torch.autograd.grad(_ByErfc.apply(leaf).sum(), leaf)
    assert 3e-3 < abs(g.item() / true - 1) < 1e-2 and abs(good.item() / true - 1) < 1e-6
    ref = _gelu_reference()
    kind, note, _ = _point(torch.nn.functional.gelu, (_t([x], torch),), explore_reference=ref)
    assert kind == "fail" and note.startswith("the mpmath reference: the formula is 4.4e-03 off it")
    assert _point(_ByErfc.apply, (_t([x], torch),), explore_reference=ref)[0] != "fail"


class _OffInTheTail(_ByErfc):
    """gelu with a backward 1 % off below x = -2 (exact, by erfc, elsewhere)."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return _ByErfc.backward(ctx, g) * torch.where(x < -2, 1.01, 1.0)


def test_a_gelu_backward_1_percent_off_still_fails_at_that_very_point():
    true = _true_gelu_derivative(X)
    leaf = _t([X], torch)
    (g,) = torch.autograd.grad(_OffInTheTail.apply(leaf).sum(), leaf)
    assert abs(g.item() / true - 1.01) < 1e-6
    # (reverse only: a custom Function without a jvp has no forward mode)
    kind, note, tally = _point(_OffInTheTail.apply, (_t([X], torch),),
                               explore_reference=_gelu_reference())
    assert kind == "fail" and tally.arbitrated == 1
    assert note.startswith("the mpmath reference: the formula is 1.0e-02 off it")


def test_a_gelu_backward_1_percent_off_still_fails_at_explored_points():
    x = _t([0.31, -1.24, 0.83, -0.52], torch)     # where the formula is right
    report = check(_OffInTheTail.apply, (x,), precise=True, explore=True, explore_budget=10,
                   seed=0, explore_reference=_gelu_reference())
    assert not report.passed
    (finding,) = report.counts["explore"]["findings"]
    point = finding["inputs"]["0"]
    assert min(point) < -2          # an entry in the tail, where it is off
    failing = [r for r in report.failures if "at the explored point" in (r.detail or "")]
    # what mpmath found, on the line of the point (the one a report's message keeps)
    assert failing and all("; the mpmath reference: the formula is" in
                           r.detail[r.detail.index("at the explored point"):] for r in failing)


def test_the_arbiter_clears_nothing_where_the_formula_is_not_finite():
    # a NaN formula agrees with no reference: the point stays failed, unarbitrated
    jac = SimpleNamespace(blocks={(0, 0): np.array([[np.nan]])}, seeds=None)
    assert arbiter.arbitrate(None, {"reverse": jac}, jac, lambda x: x) == ("fail", "")


def test_the_message_names_the_points_the_reference_cleared():
    assert "2 where the forward loses precision (the mpmath reference agrees with the " \
        "formula, finite differences do not)" in Tally(forward_cancels=2).text()
    assert "3 judged again by the mpmath reference" in Tally(arbitrated=3).text()
    assert "forward loses precision" not in Tally().text()
    assert "mpmath" not in Tally().text()
