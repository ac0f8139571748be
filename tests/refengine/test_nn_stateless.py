"""refengine.nn.functional_call against torch.func.functional_call.

The same two-layer network with a tied weight and a buffer is built in both
engines from the same numbers; every call must give torch's output, torch's
gradients with respect to the tensors passed in, torch's errors, and leave
the module as it was.
"""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.refengine import nn

RNG = np.random.default_rng(7)
W1, W2, SHIFT = RNG.standard_normal((3, 2)), RNG.standard_normal((3, 3)), RNG.standard_normal(3)
X = RNG.standard_normal((4, 2))


def _ours():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.first = nn.Linear(2, 3, bias=False)
            self.first.weight = nn.Parameter(E.tensor(W1, dtype=E.float64))
            self.second = nn.Linear(3, 3, bias=False)
            self.second.weight = nn.Parameter(E.tensor(W2, dtype=E.float64))
            self.third = nn.Linear(3, 3, bias=False)
            self.third.weight = self.second.weight          # tied
            self.register_buffer("shift", E.tensor(SHIFT, dtype=E.float64))

        def forward(self, x, scale=1.0):
            return self.third(self.second(self.first(x))) * scale + self.shift
    return Net()


def _theirs(torch):
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.first = torch.nn.Linear(2, 3, bias=False, dtype=torch.float64)
            self.second = torch.nn.Linear(3, 3, bias=False, dtype=torch.float64)
            self.third = torch.nn.Linear(3, 3, bias=False, dtype=torch.float64)
            with torch.no_grad():
                self.first.weight.copy_(torch.tensor(W1))
                self.second.weight.copy_(torch.tensor(W2))
            self.third.weight = self.second.weight
            self.register_buffer("shift", torch.tensor(SHIFT))

        def forward(self, x, scale=1.0):
            return self.third(self.second(self.first(x))) * scale + self.shift
    return Net()


def _arr(t):
    return np.asarray(t.detach().numpy())


@pytest.mark.parametrize("tie_weights", [True, False])
def test_output_and_gradients_match_torch(torch, tie_weights):
    new = RNG.standard_normal((3, 3))
    ours_w = E.tensor(new, dtype=E.float64, requires_grad=True)
    theirs_w = torch.tensor(new, requires_grad=True)
    ours = nn.functional_call(_ours(), {"second.weight": ours_w}, (E.tensor(X),),
                              {"scale": 2.0}, tie_weights=tie_weights)
    theirs = torch.func.functional_call(_theirs(torch), {"second.weight": theirs_w},
                                        (torch.tensor(X),), {"scale": 2.0},
                                        tie_weights=tie_weights)
    np.testing.assert_allclose(_arr(ours), _arr(theirs), rtol=1e-12)
    (ours ** 2).sum().backward()
    (theirs ** 2).sum().backward()
    np.testing.assert_allclose(_arr(ours_w.grad), _arr(theirs_w.grad), rtol=1e-12)


def test_the_module_is_unchanged_after_the_call_even_when_forward_raises():
    net = _ours()
    before = {n: t for n, t in net.named_parameters()}, {n: t for n, t in net.named_buffers()}
    with pytest.raises(Exception):
        nn.functional_call(net, {"first.weight": E.zeros(5, 5), "shift": E.zeros(3)},
                           (E.tensor(X),))
    assert {n: t for n, t in net.named_parameters()} == before[0]
    assert dict(net.named_buffers())["shift"] is before[1]["shift"]
    assert net.third.weight is net.second.weight


def test_a_buffer_and_a_plain_attribute_are_swapped_like_torch(torch):
    shift = RNG.standard_normal(3)
    ours = nn.functional_call(_ours(), ({"shift": E.tensor(shift)}, {"extra": E.ones(1)}),
                              E.tensor(X))
    theirs = torch.func.functional_call(_theirs(torch), ({"shift": torch.tensor(shift)},
                                                         {"extra": torch.ones(1)}),
                                        torch.tensor(X))
    np.testing.assert_allclose(_arr(ours), _arr(theirs), rtol=1e-12)
    assert not hasattr(_ours(), "extra")


def _error(call):
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the type and text are what is compared
        return type(exc), str(exc)
    return None


@pytest.mark.parametrize("case", ["strict", "tied twice", "tied, one tensor", "two dicts",
                                  "no submodule"])
def test_errors_match_torch(torch, case):
    def calls(mod, engine, net):
        w = engine.ones(3, 3, dtype=engine.float64)
        x = engine.tensor(X)
        return {
            "strict": lambda: mod(net, {"first.weight": w[:, :2], "bogus": w}, (x,),
                                  strict=True),
            "tied twice": lambda: mod(net, {"second.weight": w, "third.weight": w * 2}, (x,)),
            "tied, one tensor": lambda: mod(net, {"second.weight": w, "third.weight": w}, (x,)),
            "two dicts": lambda: mod(net, ({"shift": w[0]}, {"shift": w[0]}), (x,)),
            "no submodule": lambda: mod(net, {"fourth.weight": w}, (x,)),
        }[case]
    ours = _error(calls(nn.functional_call, E, _ours()))
    theirs = _error(calls(torch.func.functional_call, torch, _theirs(torch)))
    if case == "tied, one tensor":      # torch accepts one tensor under every tied name
        assert ours is None and theirs is None
        return
    assert theirs is not None and ours is not None
    assert ours == theirs
