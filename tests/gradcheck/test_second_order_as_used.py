"""Second order as a model really runs it, found on gpytorch 1.15 (linear_operator 0.6).

1. ``InvQuadLogdet.backward`` changes a view of its grad_output in place
   (``g.unsqueeze(-1).unsqueeze_(-1)``). A second-order check handed it the
   grad_output as a leaf that requires grad, which refuses that ("a view of a
   leaf Variable ... in-place"), and reported "has no double backward", exit 0,
   while the double backward a user runs (``create_graph=True``, where the
   gradient handed down is computed, never a leaf) exists and is wrong. The
   check now hands a computed grad_output, as autograd does.
2. A backward that raises when asked for a graph (``grad.numpy()``) raised
   from ``check(order=2)`` with the advice "make it run on torch tensors of
   these shapes and dtypes", which no input follows: it now says the
   second-order check does not apply.
3. Harvest blamed a Function failing only at second order for the whole
   model's first-order failure.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch Functions (pip install torch)")

from adcheck.gradcheck import check, harvest  # noqa: E402
from adcheck.gradcheck.errors import GradcheckError, NoDoubleBackward  # noqa: E402


class ViewInPlace(torch.autograd.Function):
    """sum(x**2, -1); its backward reshapes a view of grad in place. ``KEEP``:
    it keeps a copy of x without history (a wrong second derivative)."""

    KEEP = False

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x, x * 1 if ViewInPlace.KEEP else x)
        return (x * x).sum(-1)

    @staticmethod
    def backward(ctx, g):
        x, k = ctx.saved_tensors
        g = g.unsqueeze(-1)
        g.unsqueeze_(-1)
        return g.squeeze(-1) * (x + k)


def _x():
    torch.manual_seed(0)
    return torch.randn(3, 4, dtype=torch.float64, requires_grad=True)


def _hessian_of_sum(x):
    """d/dx of sum(grad) as a user's create_graph=True run gives it."""
    (g,) = torch.autograd.grad(ViewInPlace.apply(x).sum(), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    return h


@pytest.fixture
def keep():
    yield
    ViewInPlace.KEEP = False


def test_torch_refuses_the_leaf_but_a_users_double_backward_runs(keep):
    x = _x()
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        torch.autograd.gradgradcheck(ViewInPlace.apply, (x,))
    assert torch.allclose(_hessian_of_sum(x), torch.full_like(x, 2.0))   # right: 2
    ViewInPlace.KEEP = True
    assert torch.allclose(_hessian_of_sum(x), torch.ones_like(x))        # wrong: 1


def test_a_right_double_backward_passes(keep):
    report = check(ViewInPlace.apply, (_x(),), order=2, precise=True)
    assert report.passed, report.message()
    assert report.double_backward is not False


def test_a_wrong_double_backward_fails_and_names_the_kept_tensor(keep):
    ViewInPlace.KEEP = True
    report = check(ViewInPlace.apply, (_x(),), order=2, precise=True)
    assert not report.passed
    assert "ctx.saved_tensors[1]" in report.failures[0].diagnosis


class NumpyGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.from_numpy(g.numpy() * np.cos(x.detach().numpy()))


def test_a_backward_raising_for_a_graph_says_second_order_does_not_apply():
    with pytest.raises(GradcheckError) as caught:
        check(NumpyGrad.apply, (_x(),), order=2)
    text = str(caught.value)
    assert isinstance(caught.value.__cause__, NoDoubleBackward)
    assert "a second-order check does not apply" in text
    assert "make it run on" not in text


class KeptSquare(torch.autograd.Function):
    """x**2: right at first order, keeps 2x without history (wrong at second)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(2 * x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (d,) = ctx.saved_tensors
        return g * d


class WrongSin(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * g * x.cos()


class RightSin(WrongSin):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()


class Model(torch.nn.Module):
    def __init__(self, sine):
        super().__init__()
        self.sine = sine

    def forward(self, x):
        return self.sine.apply(KeptSquare.apply(x))


def _inputs():
    torch.manual_seed(1)
    return (torch.randn(3, 4, dtype=torch.float64),)


def test_a_second_order_failure_is_not_blamed_for_the_models_first_order_one():
    found = harvest(Model(WrongSin), _inputs(), order=2, seed=0)
    # (checked at second order only: WrongSin's first derivative is differentiated
    # consistently, so it passes there; the model fails at first order)
    assert found.failing() == ["(root):KeptSquare"] and not found.model.passed
    assert "at fault" not in found.localisation
    assert "checked at second order only (order=2)" in found.localisation
    assert found.localisation.endswith("failing at second order: (root):KeptSquare")
    first = harvest(Model(WrongSin), _inputs(), seed=0)
    assert first.localisation == "the whole model fails; at fault on their own: (root):WrongSin"


def test_a_passing_model_names_second_order_failures_as_such():
    found = harvest(Model(RightSin), _inputs(), order=2, seed=0)
    assert found.model.passed
    assert found.localisation.endswith("(root):KeptSquare (at second order)")


def _harvest_on_the_command_line(tmp_path, sine: str, *options):
    """``adcheck check FILE:make --harvest`` of ``Model(sine)`` (this file's classes)."""
    import sys
    from pathlib import Path

    from click.testing import CliRunner

    from adcheck.cli.main import cli
    path = tmp_path / f"kept_{sine.lower()}.py"
    path.write_text(
        "import torch\n"
        f"from test_second_order_as_used import Model, {sine}\n"
        f"def make():\n    return Model({sine})\n"
        "def example_inputs():\n    torch.manual_seed(1)\n"
        "    return torch.randn(3, 4, dtype=torch.float64)\n")
    here = str(Path(__file__).parent)
    sys.path.insert(0, here)
    try:
        return CliRunner().invoke(cli, ["check", f"{path}:make", "--harvest", *options],
                                  catch_exceptions=False)
    finally:
        sys.path.remove(here)


def test_the_command_line_localises_alike(tmp_path):
    result = _harvest_on_the_command_line(tmp_path, "WrongSin", "-q")
    assert result.exit_code == 1, result.output
    assert "the whole model fails; at fault on their own: (root):WrongSin [" in result.output


def test_the_command_line_prints_a_passing_models_sentence(tmp_path):
    result = _harvest_on_the_command_line(tmp_path, "RightSin")
    assert result.exit_code == 1, result.output
    assert ("Model: the whole model passes its check, yet these Functions fail on their own "
            "at the inputs it feeds them: (root):KeptSquare (at second order)") in result.output


class InplaceBackward(torch.autograd.Function):
    """exp, two outputs; the backward changes its saved result in place, which its
    own differentiation then refuses (qpth's second order: "modified by an inplace
    operation", said as "the other outputs' gradients are undefined ... check the
    backward formula runs for these shapes")."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y, 2 * x

    @staticmethod
    def backward(ctx, g, h):
        (y,) = ctx.saved_tensors
        out = g * y + 2 * h
        y.mul_(1.0)
        return out


def test_a_saved_tensor_changed_in_place_is_said_so():
    x = _x()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        torch.autograd.gradgradcheck(InplaceBackward.apply, (x,))
    with pytest.raises(GradcheckError) as caught:
        check(InplaceBackward.apply, (x,), order=2)
    text = str(caught.value)
    assert "a tensor autograd saved for the backward was changed in place" in text
    assert "undefined here" not in text and "runs for these shapes" not in text


class RaisesOnce(torch.autograd.Function):
    """sin, whose backward raises the first time it is asked for a graph, as a
    double backward racing across threads raises on some calls only
    (torchkbnufft's, at two threads or more): once said "has no double backward"."""

    raised = False

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if torch.is_grad_enabled() and not RaisesOnce.raised:
            RaisesOnce.raised = True
            raise RuntimeError("INTERNAL ASSERT FAILED")
        return g * x.cos()


def test_a_backward_raising_on_one_call_only_is_nondeterministic_not_missing():
    RaisesOnce.raised = False
    with pytest.raises(GradcheckError) as caught:
        check(RaisesOnce.apply, (_x(),), order=2)
    text = str(caught.value)
    assert "nondeterministic backward" in text and "INTERNAL ASSERT FAILED" in text
    assert not isinstance(caught.value.__cause__, NoDoubleBackward)
    assert "no double backward" not in text
