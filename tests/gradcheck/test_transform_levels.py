"""An interrupted torch.func transform is popped (gradcheck.core.interrupt):
a timeout that fires inside vmap must not leave later calls in the process
inside that vmap."""
import pytest

torch = pytest.importorskip("torch", reason="torch.func's transform stack is torch's")

from adcheck.gradcheck.core.interrupt import kept_level  # noqa: E402
from adcheck.gradcheck.explore.deadline import Timeout, deadline  # noqa: E402
from adcheck.runner.deadline import TaskTimeout, deadline as task_deadline  # noqa: E402


def _interrupted_inside_vmap():
    def body(x):
        torch._C._functorch._vmap_increment_nesting(2, "error")  # a level pushed, then
        raise Timeout()                                          # interrupted before its pop
    body(torch.ones(2))


def test_a_level_left_by_an_interruption_is_popped():
    depth = torch._C._functorch.get_dynamic_layer_stack_depth()
    with pytest.raises(Timeout):
        with kept_level():
            _interrupted_inside_vmap()
    assert torch._C._functorch.get_dynamic_layer_stack_depth() == depth
    torch.ones(2).requires_grad_()          # raises while a vmap level is left behind


def test_explored_points_and_tasks_that_time_out_inside_vmap_leave_no_level():
    depth = torch._C._functorch.get_dynamic_layer_stack_depth()
    with pytest.raises(Timeout):
        with deadline(30.0):
            _interrupted_inside_vmap()
    assert torch._C._functorch.get_dynamic_layer_stack_depth() == depth

    def hangs_in_vmap(x):
        while True:
            pass
    with pytest.raises(TaskTimeout):
        with task_deadline(0.5):
            torch.func.vmap(hangs_in_vmap)(torch.ones(3, 2))
    assert torch._C._functorch.get_dynamic_layer_stack_depth() == depth
    torch.ones(2).requires_grad_()


def test_a_check_whose_function_leaves_a_level_leaves_the_caller_outside_it():
    """What the code under check leaves on torch.func's stack is popped when the
    check ends, passed or failed: the caller's next random draw is not refused
    as "inside of vmap"."""
    from adcheck.gradcheck.api import check
    depth = torch._C._functorch.get_dynamic_layer_stack_depth()
    left = []

    def leaves_a_level(x):
        if not left:   # once, as an interrupted transform would
            left.append(torch._C._functorch._vmap_increment_nesting(2, "error"))
        return x.sin()

    try:
        check(leaves_a_level, (torch.rand(3, dtype=torch.float64, requires_grad=True),))
    except Exception:  # noqa: BLE001 - the verdict is not what this test is about
        pass
    assert left
    assert torch._C._functorch.get_dynamic_layer_stack_depth() == depth
    torch.rand(2)
