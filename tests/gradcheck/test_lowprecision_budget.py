"""A precise check of a float32/bfloat16/float16 formula compares whole
Jacobians (its rounding allowance is per entry). Beyond the memory budget it
is refused with the reason and the way out, instead of being built anyway
(op_db's slice in float32: 518 million entries, killed by the kernel's
out-of-memory killer or past the sweep's timeout)."""
import pytest

torch = pytest.importorskip("torch", reason="float32 formulas are checked on torch here; "
                            "torch is not installed")

from adcheck import gradcheck  # noqa: E402
from adcheck.gradcheck.errors import UncheckableError  # noqa: E402


@pytest.fixture
def x():
    return torch.linspace(-2, 2, 200, dtype=torch.float32).requires_grad_()


def test_beyond_the_budget_the_check_is_refused_with_the_way_out(x):
    # 200 x 200 entries at 8 bytes and 8 working copies: 2,560,000 bytes > 1 MiB
    # the budget named is the one asked for (it said "0 MiB", what was left of 1 MiB
    # beside the evaluations; op_db's slice_scatter said 511 MiB or 512 by the run)
    with pytest.raises(UncheckableError,
                       match="beyond the memory budget of 1 MiB; raise the budget"):
        gradcheck.check(torch.sin, (x,), precise=True, seed=0, memory_budget=2**20)


@pytest.mark.parametrize("order", [1, 2])
def test_within_a_raised_budget_the_same_check_runs_and_judges(x, order):
    report = gradcheck.check(torch.sin, (x,), precise=True, seed=0, order=order,
                             memory_budget=2**24)
    assert report.passed, report.message()

    def wrong(t):   # the value of sin; a derivative 1% too large, whose own derivative
        return torch.sin(t) + 0.01 * (t - t.detach()) * torch.cos(t).detach()  # is off too
    assert not gradcheck.check(wrong, (x,), precise=True, seed=0, order=order,
                               memory_budget=2**24).passed
