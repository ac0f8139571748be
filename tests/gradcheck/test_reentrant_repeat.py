"""The reentrancy check's repeat (``gradcheck.core.repeat``): when the batches
of the first run, made again, give the same bits, the first Jacobian stands
for the second; when they do not, the second is built from those very batches.

The oracle: a backward whose hook flips the gradient's sign on every other
pass gives J on odd passes and -J on even ones. Comparing the first pass with
the second must fail by 2 |J|; a third pass (J again) would hide the fault, so
a repeat that called the backward once more than it should is caught here.
"""
from __future__ import annotations

import numpy as np
import pytest

from adcheck import gradcheck

X = np.array([[0.3, -1.1, 0.7], [0.2, 0.5, -0.4]])


def _flipping(E, passes: list):
    """sin, whose backward multiplies its gradient by (-1) ** (number of passes so far)."""
    def func(x):
        y = x * 1.0
        if y.requires_grad:
            def hook(g):
                passes.append(1)
                return g * (-1.0) ** (len(passes) - 1)
            y.register_hook(hook)
        return E.sin(y)
    return func


@pytest.mark.parametrize("fast", [False, True], ids=["slow", "fast"])
def test_a_backward_that_flips_on_its_second_pass_is_not_reentrant(E, fast):
    passes = []
    x = E.from_numpy(X.copy()).requires_grad_()
    # (the scaling and undefined-gradient vectors ride in the first pass: a batch
    # of several rows, which the repeat makes again)
    report = gradcheck.check(_flipping(E, passes), (x,), fast_mode=fast, seed=3)
    failed = [r for r in report.failures if r.check == "reentrant"]
    assert failed, [(r.check, r.passed) for r in report.results]
    assert "nondeterministic" in failed[0].diagnosis
    # the first pass is the Jacobian (cos x on the diagonal), the second its negative
    jac = report.jacobians["fast-reverse" if fast else "reverse"]
    biggest = np.abs(jac[0, 0]).max()
    assert failed[0].max_error == pytest.approx(2 * biggest, rel=1e-12)


@pytest.mark.parametrize("fast", [False, True], ids=["slow", "fast"])
def test_the_repeat_of_a_stable_backward_passes_with_its_riders(E, fast):
    # the scaling and undefined-gradient vectors ride in both passes' batches
    x = E.from_numpy(X.copy()).requires_grad_()
    report = gradcheck.check(lambda t: E.sin(t) * t, (x,), fast_mode=fast, seed=3)
    assert report.passed, report.message()
    assert [r.passed for r in report.results if r.check == "reentrant"] == [True]
