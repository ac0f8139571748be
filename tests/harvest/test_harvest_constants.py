"""Harvesting a model whose Functions take its constants: a filter bank's
filters registered as buffers, or parameters it freezes (requires_grad=False),
as pytorch_wavelets' DWT, DTCWT and scattering layers do.

The model ran on an input that does not require grad, so no argument of the
Functions did, and every floating point argument was differentiated: the
filters too, whose gradient the Functions rightly leave None. Each failed
"analytical is zero: the vjp returns no gradient for an input the function
uses" (all of pytorch_wavelets' Functions, correct or not). The constants are
now held, the activations differentiated. And a Function whose backward
builds no graph (NumPy inside) had its second order reported as an error
when harvested, where a checked target's is a skip saying it has no double
backward: a skip now too."""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from click.testing import CliRunner  # noqa: E402

from adcheck import gradcheck  # noqa: E402
from adcheck.cli.main import cli  # noqa: E402

MODEL = '''
import torch
import torch.nn as nn


class Filter(torch.autograd.Function):
    """x @ w for a constant filter w: no gradient for the filter."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(w)
        return x @ w

    @staticmethod
    def backward(ctx, g):
        (w,) = ctx.saved_tensors
        return g @ w.mT, None


class WrongFilter(Filter):
    @staticmethod
    def backward(ctx, g):
        (w,) = ctx.saved_tensors
        return 2 * g @ w.mT, None


class NumpyTanh(torch.autograd.Function):
    """tanh with a right backward computed in NumPy: no double backward."""

    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return torch.from_numpy(g.detach().numpy() * (1 - y.detach().numpy() ** 2))


class Bank(nn.Module):
    def __init__(self, function=Filter, frozen=False):
        super().__init__()
        w = torch.randn(4, 4)
        if frozen:
            self.w = nn.Parameter(w, requires_grad=False)
        else:
            self.register_buffer("w", w)
        self.function = function

    def forward(self, x):
        return NumpyTanh.apply(self.function.apply(x, self.w))


def buffered():
    return Bank()


def frozen():
    return Bank(frozen=True)


def wrong():
    return Bank(WrongFilter)


def example_inputs():
    return torch.randn(3, 4)
'''


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "bank.py"
    path.write_text(MODEL)
    return path


def _run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize("factory", ["buffered", "frozen"])
def test_a_filter_the_module_holds_constant_is_not_differentiated(model_file, factory):
    result = _run("check", f"{model_file}:{factory}", "--harvest", "--check",
                  "reverse,gradgrad", "--format", "json")
    assert result.exit_code == 0, result.output
    results = json.loads(result.stdout)["results"]
    statuses = {(r["op"], r["check"]): r["status"] for r in results}
    assert statuses[("(root):Filter", "reverse")] == "passed"
    assert statuses[("(root):NumpyTanh", "reverse")] == "passed"
    (tanh_second,) = [r for r in results if r["op"] == "(root):NumpyTanh"
                      and r["check"] == "gradgrad"]
    assert tanh_second["status"] == "skipped"
    assert "has no double backward" in tanh_second["message"]


def test_a_wrong_formula_of_the_activation_still_fails(model_file):
    result = _run("check", f"{model_file}:wrong", "--harvest", "--check", "reverse",
                  "--format", "json")
    assert result.exit_code == 1, result.output
    failing = {r["op"] for r in json.loads(result.stdout)["results"]
               if r["status"] == "failed"}
    assert "(root):WrongFilter" in failing


def test_an_input_that_requires_grad_is_differentiated_as_before(model_file):
    # (where an argument required grad in the model, the constants were never taken)
    import importlib.util
    spec = importlib.util.spec_from_file_location("bank", model_file)
    bank = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bank)
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    found = gradcheck.harvest(bank.Bank().double(), (x,), seed=0, model_check=False,
                              check_forward_ad=False)
    assert found.failing() == []
