"""refengine.nn: Parameter, Module bookkeeping, Linear, Dropout, backward hooks."""
from __future__ import annotations

from adcheck.conformance.case import MECHANICS, case
from adcheck.conformance.compare import assert_close


def _net(E):
    class Net(E.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = E.nn.Parameter(E.tensor([2.0]))
            self.lin = E.nn.Linear(3, 2)
            self.drop = E.nn.Dropout(0.5)

        def forward(self, x):
            return self.drop(self.lin(x) * self.scale)
    return Net()


@case("requires_grad is a flag, defaulting to false unless wrapped in a nn.Parameter",
      source=MECHANICS)
def parameter_requires_grad_by_default(E):
    p = E.nn.Parameter(E.ones(2))
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert isinstance(p, E.Tensor)
    frozen = E.nn.Parameter(E.ones(2), requires_grad=False)
    assert not frozen.requires_grad


@case("tensors that do not have a grad_fn, e.g., a nn.Module's parameters",
      source=MECHANICS)
def module_registers_parameters(E):
    net = _net(E)
    names = [name for name, _ in net.named_parameters()]
    assert names == ["scale", "lin.weight", "lin.bias"]
    params = list(net.parameters())
    assert len(params) == 3 and all(p.is_leaf and p.requires_grad for p in params)
    assert params[1] is net.lin.weight
    assert tuple(net.lin.weight.shape) == (2, 3) and tuple(net.lin.bias.shape) == (2,)


@case("When applied to a module, .requires_grad_() takes effect on all of the module's "
      "parameters (which have requires_grad=True by default).", source=MECHANICS)
def module_requires_grad_freezes_all_parameters(E):
    net = _net(E)
    assert net.requires_grad_(False) is net
    assert not any(p.requires_grad for p in net.parameters())
    x = E.ones(1, 3, requires_grad=True)
    net.eval()
    net(x).sum().backward()
    assert all(p.grad is None for p in net.parameters())
    assert x.grad is not None
    net.lin.requires_grad_(True)
    assert [p.requires_grad for p in net.parameters()] == [False, True, True]


@case("since computations that use these parameters as inputs would not be recorded in "
      "the forward pass, they won't have their .grad fields updated in the backward pass",
      source=MECHANICS)
def frozen_layer_is_not_recorded(E):
    lin = E.nn.Linear(3, 2)
    lin.requires_grad_(False)
    out = lin(E.ones(1, 3))
    assert out.grad_fn is None and not out.requires_grad


@case("Functionally, module.eval() (or equivalently module.train(False)) are completely "
      "orthogonal to no-grad mode and inference mode.", source=MECHANICS)
def train_and_eval_set_training_recursively(E):
    net = _net(E)
    assert net.training and net.drop.training
    assert net.eval() is net
    assert not net.training and not net.lin.training and not net.drop.training
    assert net.train() is net and net.drop.training
    net.train(False)
    assert not net.drop.training
    x = E.ones(1, 3)
    out = net(x)
    assert out.requires_grad and out.grad_fn is not None
    net.train()
    with E.no_grad():
        assert net.training and not net(x).requires_grad


@case("You are responsible for calling model.eval() and model.train() if your model "
      "relies on modules such as torch.nn.Dropout and torch.nn.BatchNorm2d that may "
      "behave differently depending on training mode", source=MECHANICS)
def dropout_depends_on_training_mode(E):
    E.manual_seed(0)
    drop = E.nn.Dropout(0.5)
    x = E.ones(1000, requires_grad=True)
    y = drop(x)
    values = set(y.tolist())
    assert values <= {0.0, 2.0} and values == {0.0, 2.0}
    y.sum().backward()
    assert x.grad.tolist() == y.detach().tolist()
    drop.eval()
    assert drop(x).tolist() == x.tolist()


@case("tensors that do not have a grad_fn, e.g., a nn.Module's parameters",
      source=MECHANICS)
def linear_computes_affine_map(E):
    lin = E.nn.Linear(3, 2)
    x = E.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    out = lin(x)
    expected = x.detach() @ lin.weight.detach().T + lin.bias.detach()
    assert_close(out, expected, rtol=1e-6)
    out.sum().backward()
    assert_close(lin.weight.grad, E.tensor([[1.0, 2.0, 3.0]] * 2))
    assert lin.bias.grad.tolist() == [1.0, 1.0]
    assert_close(x.grad, lin.weight.detach().sum(0, keepdim=True))


@case("register_module_full_backward_hook is implemented using hooks registered to "
      "Node. As the forward is computed, hooks are registered to grad_fn corresponding to "
      "the inputs and outputs of the module.", source=MECHANICS)
def full_backward_hook_sees_module_gradients(E):
    lin = E.nn.Linear(3, 2)
    calls = []

    def hook(module, grad_input, grad_output):
        calls.append((module is lin, grad_input[0].tolist(), grad_output[0].tolist()))
    handle = lin.register_full_backward_hook(hook)
    x = E.ones(1, 3, requires_grad=True)
    (lin(x) * 2).sum().backward()
    assert len(calls) == 1 and calls[0][0]
    assert calls[0][2] == [[2.0, 2.0]]
    assert_close(E.tensor(calls[0][1]), 2 * lin.weight.detach().sum(0, keepdim=True))
    handle.remove()
    lin(x).sum().backward()
    assert len(calls) == 1


@case("a dummy custom autograd Function is first applied to the inputs of the module "
      "before forward and the outputs of the module before the output of forward is "
      "returned to ensure that those Tensors share a single grad_fn", source=MECHANICS)
def full_backward_hook_may_replace_grad_input(E):
    lin = E.nn.Linear(2, 2)
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0] * 0,))
    x = E.ones(1, 2, requires_grad=True)
    lin(x).sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0]]
    assert lin.bias.grad.tolist() == [1.0, 1.0]
