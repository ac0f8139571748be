"""A model whose value passes through float32 in its double-precision copy.

POT's emd2 computes its value outside autograd and returns it in the
default dtype (float32), with a Function injecting the gradient it computed
(``set_gradients``). Harvested, the whole model's check (fixed steps and
tolerances, in double precision) differenced a float32 value at a step of
1e-6 and failed a right gradient ("analytical couples 3 entries ... wrong
axis"), blaming the Function. A failed double-precision model check is now
judged again precisely, which judges at the precision the values carry. The
injecting Function's own failure, a vjp computed in float32 (float32
gradients times a 0-dim grad_output, which does not promote them), was
called an adaptive solver's approximation: it now names float32 first."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch models (pip install torch)")

from adcheck.gradcheck import harvest  # noqa: E402


class Inject(torch.autograd.Function):
    @staticmethod
    def forward(ctx, val, grads, *inputs):
        ctx.grads = grads
        return val

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None) + tuple(g * grad_output for g in ctx.grads)


class Model(torch.nn.Module):
    """sum((fc(x))**2), its value in float32 whatever x's dtype, its gradient injected."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(3, 2)

    def forward(self, x):
        z = self.fc(x)
        zd = z.detach()
        return Inject.apply((zd ** 2).sum().float(), (2 * zd,), z)


def _x():
    torch.manual_seed(1)
    return torch.randn(4, 3)


def test_the_injected_gradient_is_the_true_one():
    model = Model().double()
    x = _x().double().requires_grad_()
    (injected,) = torch.autograd.grad(model(x), x)
    z = model.fc(x)
    (true,) = torch.autograd.grad((z ** 2).sum(), x)
    assert torch.allclose(injected, true, rtol=1e-6)


def test_the_whole_model_is_judged_at_the_precision_its_value_has():
    found = harvest(Model(), (_x(),), seed=0)
    assert found.model.passed, found.model.message()
    assert found.localisation.startswith("the whole model passes its check")


def test_the_injecting_functions_float32_vjp_is_named_so():
    found = harvest(Model(), (_x(),), seed=0)
    (name,) = found.failing()
    failure = found.reports[name][0].failures[0]
    assert failure.check == "scaling"
    assert "float32's rounding: it computes in float32 inside" in failure.diagnosis


def test_the_command_line_judges_the_whole_model_alike(tmp_path):
    import inspect
    import json

    from click.testing import CliRunner

    from adcheck.cli.main import cli
    path = tmp_path / "inject32.py"
    path.write_text("import torch\n\n" + inspect.getsource(Inject) + "\n\n"
                    + inspect.getsource(Model) + "\n\n" + inspect.getsource(_x)
                    + "\n\ndef example_inputs():\n    return _x()\n")
    result = CliRunner().invoke(cli, ["check", f"{path}:Model", "--harvest", "--check",
                                      "reverse", "--format", "json"], catch_exceptions=False)
    statuses = {r["op"]: r["status"] for r in json.loads(result.stdout)["results"]}
    assert statuses == {"(root):Inject": "failed", "Model": "passed"}, result.stdout
