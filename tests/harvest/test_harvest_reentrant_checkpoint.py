"""Custom Functions inside ``torch.utils.checkpoint(..., use_reentrant=True)``.

A reentrant checkpoint runs its block's forward under ``no_grad`` and runs it
again with grad in its backward: the gradient does flow through the Functions
in the block (Hugging Face models checkpoint so with
``gradient_checkpointing_enable()``). The harvest recorded them in that
no_grad forward and skipped them, "applied under no_grad ... no gradient
flows through it", so a wrong backward deep in a checkpointed stack was never
judged. And the whole model's check, whose vjps ``torch.autograd.grad``
computes, which reentrant checkpointing refuses, told the user to "check the
backward formula runs for these shapes and dtypes"."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from torch.utils.checkpoint import checkpoint  # noqa: E402

from adcheck import gradcheck  # noqa: E402
from adcheck.gradcheck import check  # noqa: E402
from adcheck.gradcheck.errors import GradcheckError  # noqa: E402


class SiluSlope(torch.autograd.Function):
    """x * sigmoid(1.702 x), with the backward forgetting the inner 1.702."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(1.702 * x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(1.702 * x)
        return g * (s + x * s * (1 - s))      # wrong: 1.702 * x * s * (1 - s)


class Scale(torch.autograd.Function):
    """x * w, right in both arguments."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * w, (g * x).sum(0)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4).double()
        self.w = torch.nn.Parameter(torch.linspace(0.5, 1.5, 4, dtype=torch.float64))

    def forward(self, x):
        return SiluSlope.apply(Scale.apply(self.lin(x), self.w))


class Stack(torch.nn.Module):
    def __init__(self, reentrant: bool = True):
        super().__init__()
        torch.manual_seed(0)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(2))
        self.reentrant = reentrant

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=self.reentrant)
        return x


def _input():
    return torch.randn(3, 4, dtype=torch.float64, requires_grad=True)


def test_the_independent_evidence():
    # torch's own gradcheck, on each Function alone: SiluSlope is wrong, Scale right
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    w = torch.rand(4, dtype=torch.float64, requires_grad=True)
    assert not torch.autograd.gradcheck(SiluSlope.apply, (x,), raise_exception=False)
    assert torch.autograd.gradcheck(Scale.apply, (x, w))


@pytest.mark.filterwarnings("ignore:None of the inputs have requires_grad")
def test_functions_in_a_reentrant_checkpoint_are_checked():
    found = gradcheck.harvest(Stack(), (_input(),), model_check=False, seed=0)
    names = sorted(op.name for op in found.ops)
    assert names == ["blocks.0:Scale", "blocks.0:SiluSlope", "blocks.1:Scale",
                     "blocks.1:SiluSlope"]
    assert found.skipped == {}
    assert sorted(found.failing()) == ["blocks.0:SiluSlope", "blocks.1:SiluSlope"]
    # Scale's activation is differentiated too, not only the parameter that still
    # requires grad under no_grad: the backward's recomputation differentiates both
    for name in ("blocks.0:Scale", "blocks.1:Scale"):
        (report,) = found.reports[name]
        assert report.passed
        assert {r.in_idx for r in report.results if r.check == "reverse"} == {0, 1}
    assert any("reentrant checkpoint" in note for note in found.notes["blocks.0:SiluSlope"])


def test_the_same_functions_without_reentrance_are_checked_alike():
    found = gradcheck.harvest(Stack(reentrant=False), (_input(),), model_check=False, seed=0)
    assert found.skipped == {}
    assert sorted(found.failing()) == ["blocks.0:SiluSlope", "blocks.1:SiluSlope"]
    assert not any("reentrant" in n for notes in found.notes.values() for n in notes)


def test_a_function_under_no_grad_outside_a_checkpoint_is_still_not_checked():
    class Frozen(torch.nn.Module):
        def forward(self, x):
            with torch.no_grad():
                y = SiluSlope.apply(x)
            return x + y

    found = gradcheck.harvest(Frozen(), (_input(),), model_check=False, seed=0)
    assert "under no_grad" in found.skipped["(root):SiluSlope"]


@pytest.mark.filterwarnings("ignore:None of the inputs have requires_grad")
def test_the_whole_model_error_names_reentrant_checkpointing_and_the_fix():
    with pytest.raises(GradcheckError) as raised:
        check(Stack(), (_input(),), seed=0, explore=False)
    message = str(raised.value)
    assert "use_reentrant=True" in message and "use_reentrant=False" in message
    assert "check the backward formula runs" not in message
