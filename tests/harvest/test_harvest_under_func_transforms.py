"""Custom Functions a model applies inside ``torch.func`` transforms.

Per-example losses and gradients are computed with ``torch.func.vmap`` (and
``vmap(grad(...))``, as Opacus-style code does); a custom Function in the
model then sees tensors wrapped by the transforms. The harvest copied them
with ``clone()`` and read them with ``numpy()``, which a wrapper without
storage refuses: the whole harvest stopped with "the model's forward raised
RuntimeError: Cannot access data pointer of Tensor that doesn't have storage",
though the model runs. Each such Function is now recorded at the values of
its first example and checked on its own."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck import gradcheck  # noqa: E402


class Cube(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x ** 3

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


class WrongCube(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * x * g      # wrong: d/dx x^3 = 3 x^2


class Net(torch.nn.Module):
    def __init__(self, function):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(3, 3).double()
        self.function = function

    def forward(self, x):
        return self.function.apply(self.lin(x)).sum()


def _batch():
    torch.manual_seed(1)
    return torch.randn(4, 3, dtype=torch.float64, requires_grad=True)


def test_the_independent_evidence():
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(Cube.apply, (x,))
    assert not torch.autograd.gradcheck(WrongCube.apply, (x,), raise_exception=False)


@pytest.mark.parametrize("function, failing", [(Cube, []), (WrongCube, ["per_example:WrongCube"])])
def test_a_function_under_vmap_is_checked_at_its_first_example(function, failing):
    net = Net(function)

    def per_example(x):
        return torch.func.vmap(net)(x)

    x = _batch()
    found = gradcheck.harvest(per_example, (x,), model_check=False, seed=0)
    (op,) = found.ops
    assert found.skipped == {} and found.errors == {}
    assert found.failing() == failing
    # recorded at the first example's input to the Function: lin(x[0])
    (sample,) = op.samples
    with torch.no_grad():
        assert torch.equal(sample.inputs[0].detach(), net.lin(x[0].detach()))
    assert any("torch.func transform" in note for note in found.notes[op.name])


def test_per_example_gradients_through_vmap_of_grad():
    net = Net(WrongCube)
    params = {name: p.detach() for name, p in net.named_parameters()}

    def loss(p, x):
        return torch.func.functional_call(net, p, (x,))

    def per_example_grads(x):
        grads = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))(params, x)
        return grads["lin.weight"]

    found = gradcheck.harvest(per_example_grads, (_batch(),), model_check=False, seed=0)
    assert [op.name for op in found.ops] == ["per_example_grads:WrongCube"]
    assert found.failing() == ["per_example_grads:WrongCube"]
