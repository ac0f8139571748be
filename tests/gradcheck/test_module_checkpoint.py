"""A module whose forward is checkpointed (torch.utils.checkpoint, the memory
saving of many models) is checked at the parameters the check gives it.

Found checking such a model with `adcheck check` as written: the
recomputation during the backward reads the module's own parameters, after
the call that substituted the check's copies has returned. At the given
inputs the values agree; at an explored point (the parameters moved) the
backward was another function's: a false FAIL of torch's right formulas; and
a float32-built layer, checked on float64 copies, raised "mat1 and mat2 must
have the same dtype". The backward now runs with the parameters its outputs
were computed with (gradcheck/engines/recompute.py).
"""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from torch.utils.checkpoint import checkpoint  # noqa: E402

from adcheck.gradcheck import check  # noqa: E402


class Doubled(torch.autograd.Function):
    """tanh whose backward is twice the right one."""

    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return 2 * g * (1 - y * y)


class Net(torch.nn.Module):
    def __init__(self, reentrant: bool, wrong: bool = False):
        super().__init__()
        self.a = torch.nn.Linear(4, 5)
        self.b = torch.nn.Linear(5, 3)
        self.reentrant, self.wrong = reentrant, wrong

    def block(self, h):
        h = self.b(h)
        return Doubled.apply(h) if self.wrong else torch.tanh(h)

    def forward(self, x):
        return checkpoint(self.block, torch.relu(self.a(x)) + 0.1,
                          use_reentrant=self.reentrant)


def _x():
    return torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1),
                       requires_grad=True)


@pytest.mark.parametrize("built", ["float64", "float32"])
def test_a_checkpointed_module_passes_at_the_explored_points_too(built):
    # (use_reentrant=False: the reentrant variant refuses autograd.grad, torch's own
    # gradcheck's too: "incompatible with .grad()", which the check's error quotes)
    torch.manual_seed(0)
    net = Net(False)
    net = net.double() if built == "float64" else net
    # the premise, independently: torch's gradcheck of the module at the given inputs
    if built == "float64":
        assert torch.autograd.gradcheck(net, (_x(),))
    report = check(net, (_x(),), seed=0, precise=True, explore="quick")
    assert report.passed, report.message()
    assert report.counts["explore"]["tried"] > 0


def test_a_wrong_formula_inside_the_checkpointed_block_still_fails():
    torch.manual_seed(0)
    report = check(Net(False, wrong=True).double(), (_x(),), seed=0, precise=True)
    failing = {r.in_name for r in report.failures if r.check == "reverse"}
    assert {"x", "b.weight", "b.bias"} <= failing
    assert "a constant factor" in report.message() or "2 times" in report.message()


def test_second_order_of_a_checkpointed_float32_layer_runs():
    # (before: "the first derivative raised RuntimeError (mat1 and mat2 must have
    # the same dtype, but got Double and Float)")
    torch.manual_seed(0)
    report = check(Net(False), (_x(),), seed=0, precise=True, order=2)
    assert report.passed, report.message()
