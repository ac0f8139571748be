"""Inside ``reuse.shared`` (a sweep's sample), what the first checks establish
is not judged again by the later ones: the reference check compares the
reverse and forward checks' own AD Jacobians with its mpmath Jacobian
(no vjp or jvp of its own), and the determinism of the forward, the
reentrancy of the backward, the scaling of each side, the undefined
gradients and the value at the point are judged once, where they are first
checked. A fault of those kinds is still reported by the check that judges
it first; outside ``shared()`` every check judges everything, as before."""
from __future__ import annotations

import mpmath
import numpy as np
import pytest

from adcheck import gradcheck
from adcheck import refengine as E
from adcheck.gradcheck.core.reuse import shared

from gradcheck_support import special_case


def _x():
    return E.tensor(np.array([0.3, -1.2, 2.0, 0.7]), requires_grad=True)


def _f(t):
    return E.sin(t) * t


def _reference(a):
    return np.vectorize(lambda v: mpmath.sin(v) * v, otypes=[object])(a)


REVERSE = dict(precise=True)
FORWARD = dict(precise=True, check_forward_ad=True, check_backward_ad=False)
REFERENCE = dict(precise=True, check_forward_ad=True, reference=_reference)


def _sweep(func, x, *checks):
    with shared():
        return [gradcheck.check(func, (x,), seed=0, explore=False, **c) for c in checks]


def _kinds(report) -> set:
    return {r.check for r in report.results}


def test_the_reference_check_takes_the_sample_s_ad_jacobians():
    x = _x()
    reverse, forward, reference = _sweep(_f, x, REVERSE, FORWARD, REFERENCE)
    assert reverse.passed and forward.passed and reference.passed
    assert reference.counts["vjp"] == 0 and reference.counts["jvp"] == 0
    # the same numbers the sample's checks compared: each side as its check built it
    for side, report in (("reverse", reverse), ("forward", forward)):
        np.testing.assert_array_equal(reference.jacobians[side][0, 0],
                                      report.jacobians[side][0, 0])
    # and they are d/dx sin(x) x = cos(x) x + sin(x), independently of both
    a = x.detach().numpy()
    np.testing.assert_allclose(np.diag(reference.jacobians["reverse"][0, 0]),
                               np.cos(a) * a + np.sin(a), rtol=1e-12)
    assert {"reentrant", "scaling", "undefined-grad"} <= _kinds(reverse)
    assert "scaling" in _kinds(forward)
    assert not {"reentrant", "scaling", "undefined-grad"} & _kinds(reference)
    assert "adjoint" in _kinds(reference)         # what only a check of both sides sees


def test_alone_the_reference_check_judges_everything():
    (reference,) = _sweep(_f, _x(), REFERENCE)
    assert reference.counts["vjp"] > 0 and reference.counts["jvp"] > 0
    assert {"reentrant", "scaling", "undefined-grad"} <= _kinds(reference)
    alone = gradcheck.check(_f, (_x(),), seed=0, explore=False, **REFERENCE)
    assert {"reentrant", "scaling", "undefined-grad"} <= _kinds(alone)


class _Drifting(E.autograd.Function):
    """x**2 whose backward adds a counter's worth each call: not reentrant."""
    calls = 0

    @staticmethod
    def forward(ctx, t):
        ctx.save_for_backward(t)
        return t * t

    @staticmethod
    def backward(ctx, g):
        (t,) = ctx.saved_tensors
        _Drifting.calls += 1
        return 2 * t * g * (1 + 1e-3 * _Drifting.calls)


def test_a_fault_is_reported_by_the_check_that_judges_it_first_and_not_trusted_later():
    x = _x()
    reverse, reference = _sweep(_Drifting.apply, x, REVERSE, dict(
        REFERENCE, check_forward_ad=False,        # (it has no jvp)
        reference=lambda a: np.vectorize(lambda v: v * v, otypes=[object])(a)))
    assert "reentrant" in {r.check for r in reverse.failures}
    # nothing the reverse check failed on was recorded as judged: the reference
    # check builds its own Jacobians and judges reentrancy again
    assert "reentrant" in {r.check for r in reference.failures}
    assert reference.counts["vjp"] > 0


@pytest.mark.parametrize("other", [dict(order=2), dict(fast_mode=True)])
def test_later_checks_of_other_kinds_skip_the_forward_s_determinism(other):
    x = _x()
    calls = []

    def counted(t):
        calls.append(1)
        return _f(t)
    with shared():
        gradcheck.check(counted, (x,), seed=0, explore=False, **REVERSE)
        before = len(calls)
        report = gradcheck.check(counted, (x,), seed=0, explore=False, **other)
    assert report.passed
    again = []

    def counted_alone(t):
        again.append(1)
        return _f(t)
    gradcheck.check(counted_alone, (x,), seed=0, explore=False, **other)
    # the same check outside the sample makes more calls: its determinism's
    assert len(calls) - before < len(again)


def _points_looked_at(monkeypatch) -> list:
    """The inputs each call of the point check (``verdict.pointvalue``) looked beside."""
    from adcheck.gradcheck.verdict import pointvalue
    looked, real = [], pointvalue.point_results

    def counted(ev):
        looked.append(ev.problem.arrays[0].copy())
        return real(ev)
    monkeypatch.setattr(pointvalue, "point_results", counted)
    return looked


def test_the_value_at_the_point_is_looked_at_once_per_sample(monkeypatch):
    looked = _points_looked_at(monkeypatch)
    reports = _sweep(_f, _x(), REVERSE, FORWARD, REFERENCE)
    assert all(r.passed for r in reports)
    assert len(looked) == 1   # (the reverse check's; the forward and reference checks' before)
    looked.clear()
    for checks in (REVERSE, FORWARD, REFERENCE):   # outside a sample each looks for itself
        assert gradcheck.check(_f, (_x(),), seed=0, explore=False, **checks).passed
    assert len(looked) == 3


def test_a_value_that_is_not_the_limit_is_found_by_every_check_of_the_sample(monkeypatch):
    looked = _points_looked_at(monkeypatch)
    x = E.tensor(np.array([0.0, 0.5, -1.5]), requires_grad=True)
    reverse, forward = _sweep(special_case, x, REVERSE, FORWARD)
    for report in (reverse, forward):   # (a discontinuity is judged again, never trusted)
        assert "discontinuous" in {r.check for r in report.failures}
    assert len(looked) == 2
