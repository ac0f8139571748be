"""An explored point stopped by its deadline leaves torch's forward-AD level as
it found it: a ``Timeout`` inside ``dual_level``'s entry or exit left one open,
and every later forward-mode check of the process failed with "Nested forward
mode AD is not supported" (233 errors of ``adcheck ops --engine torch
--explore``)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

import torch.autograd.forward_ad as fw  # noqa: E402

from adcheck.gradcheck.explore.deadline import Timeout, deadline  # noqa: E402


def _tangent_of_3x() -> float:
    """d(3x)/dx by torch's forward mode, in a level of its own."""
    with fw.dual_level():
        x = fw.make_dual(torch.tensor(1.0, dtype=torch.float64),
                         torch.tensor(2.0, dtype=torch.float64))
        return fw.unpack_dual(3 * x).tangent.item()


@pytest.mark.parametrize("left_open", [
    fw.enter_dual_level,          # interrupted in dual_level's exit: known to Python too
    torch._C._enter_dual_level,   # interrupted in its entry: opened in C++ only
], ids=["python-and-cpp", "cpp-only"])
def test_a_level_left_open_by_an_interrupted_point_is_closed(left_open):
    with pytest.raises(Timeout):
        with deadline(10.0, torch):
            left_open()
            raise Timeout
    assert fw._current_level == -1
    assert _tangent_of_3x() == 6.0


def test_a_level_closed_in_cpp_but_still_recorded_in_python_is_put_right():
    # the timer fired inside exit_dual_level after C++ closed the level: exiting it
    # again raised in the guard, and Python's stale record made every later entry fail
    with pytest.raises(Timeout):
        with deadline(10.0, torch):
            level = fw.enter_dual_level()
            torch._C._exit_dual_level(level=level)
            raise Timeout
    assert fw._current_level == -1
    assert _tangent_of_3x() == 6.0


def test_the_callers_own_level_stays_open():
    with fw.dual_level():
        x = fw.make_dual(torch.tensor(1.0, dtype=torch.float64),
                         torch.tensor(2.0, dtype=torch.float64))
        with deadline(10.0, torch):
            pass
        assert fw._current_level == 0
        assert fw.unpack_dual(3 * x).tangent.item() == 6.0
