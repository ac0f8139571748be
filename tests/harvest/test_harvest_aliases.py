"""A Function kept as ``F.apply`` before the harvest began: ``my_op = F.apply``
at a module's top, ``self.fn = F.apply`` in ``__init__`` (pysdtw's SoftDTW
keeps its Function so), or a class attribute. The harvest patches
``Function.apply`` when it starts, so such an alias called the original and
went unrecorded: a model using only aliases "applied no custom Function"
(exit 3), one using some had those left unchecked. Each is recorded now, and
every alias is as it was afterwards."""
from __future__ import annotations

import sys
import types

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck import gradcheck  # noqa: E402
from adcheck import refengine as E  # noqa: E402


class Triple(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return 3 * x

    @staticmethod
    def backward(ctx, g):
        return 2 * g      # wrong: 3 (d/dx 3x, against finite differences by the check)


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


class RefCube(E.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


@pytest.fixture
def library():
    """A module of the user's, imported before the harvest, with an alias at its top."""
    module = types.ModuleType("user_ops_for_alias_test")
    module.triple = Triple.apply
    module.ref_cube = RefCube.apply
    sys.modules[module.__name__] = module
    yield module
    del sys.modules[module.__name__]


class Net(torch.nn.Module):
    square = Square.apply              # a class attribute

    def __init__(self, library):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3).double()
        self.library = library
        self.fn = Square.apply         # an instance attribute

    def forward(self, x):
        return self.library.triple(self.lin(x)) + self.fn(x) + Net.square(x).sum()


def test_aliases_in_a_module_an_instance_and_a_class_are_harvested(library):
    model = Net(library)
    kept = (library.triple, model.fn, Net.__dict__["square"])
    found = gradcheck.harvest(model, (torch.randn(2, 3, dtype=torch.float64),), seed=0)
    names = sorted(op.name for op in found.ops)
    assert names == ["(root):Square", "(root):Triple"]
    assert [op.calls for op in found.ops if op.name == "(root):Square"] == [2]
    assert found.failing() == ["(root):Triple"]
    # as they were: the same objects, calling the original apply
    assert library.triple is kept[0] and model.fn is kept[1] and Net.__dict__["square"] is kept[2]
    assert library.triple.__func__ is torch.autograd.Function.__dict__["apply"].__func__


def test_a_refengine_alias_is_harvested(library):
    def model(x):
        return library.ref_cube(x).sum()
    found = gradcheck.harvest(model, (E.tensor([0.5, -1.0, 2.0], dtype=E.float64),), seed=0)
    assert [op.name for op in found.ops] == ["model:RefCube"]      # (named by the function)
    assert found.failing() == []
