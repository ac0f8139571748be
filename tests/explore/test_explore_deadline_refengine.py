"""An explored point stopped by its deadline leaves refengine's forward-AD state as
it found it: a ``Timeout`` inside ``excluding`` left level 0 excluded, and every
later refengine jvp of the worker was zero (404 forward checks of one ``adcheck
ops --explore`` run failed with "analytical is zero")."""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.gradcheck import check
from adcheck.gradcheck.explore.deadline import Timeout, deadline
from adcheck.refengine.autograd import forward_ad as fw
from adcheck.refengine.autograd import tangents


def _tangent_of_sin(x: float) -> float:
    """d sin(x)/dx along 1 by refengine's forward mode, in a level of its own."""
    with fw.dual_level():
        dual = fw.make_dual(E.tensor(x, dtype=E.float64), E.tensor(1.0, dtype=E.float64))
        return float(fw.unpack_dual(E.sin(dual)).tangent.item())


def _assert_put_back():
    """No level open or excluded, and a jvp is cos again."""
    assert tangents.active_levels() == () and not tangents._excluded()
    assert _tangent_of_sin(0.3) == pytest.approx(np.cos(0.3), rel=1e-15)


def _level_left_excluded():
    tangents._excluded().add(tangents.enter_dual_level())


def _level_half_closed():
    level = tangents.enter_dual_level()
    tangents._levels.remove(level)      # the timer fired between the two pops


@pytest.mark.parametrize("interrupted", [tangents.enter_dual_level, _level_left_excluded,
                                         _level_half_closed],
                         ids=["left-open", "left-excluded", "half-closed"])
def test_the_forward_state_is_put_back_after_a_timeout(interrupted):
    with pytest.raises(Timeout):
        with deadline(10.0, E):
            interrupted()
            raise Timeout
    _assert_put_back()
    x = E.tensor(np.linspace(-1, 1, 6), dtype=E.float64, requires_grad=True)
    assert check(E.sin, (x,), check_forward_ad=True, explore=False, seed=0).passed


def test_the_callers_own_level_and_tangents_stay():
    with fw.dual_level() as level:
        dual = fw.make_dual(E.tensor(0.3, dtype=E.float64), E.tensor(2.0, dtype=E.float64))
        with deadline(10.0, E):
            tangents.enter_dual_level()
        assert tangents.active_levels() == (level,)
        assert float(fw.unpack_dual(3 * dual).tangent.item()) == 6.0


def test_a_task_timeout_puts_it_back_too():
    """The runner's --timeout stops a task with the same timer (``interrupting``)."""
    from adcheck.gradcheck.core.interrupt import interrupting

    class Stopped(BaseException):
        pass

    with pytest.raises(Stopped):
        with interrupting(10.0, Stopped):
            _level_left_excluded()
            raise Stopped
    _assert_put_back()
