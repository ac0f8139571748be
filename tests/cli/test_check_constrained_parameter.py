"""adcheck check of a model whose parameter is constrained: a model of
torch.distributions' MultivariateNormal in its Cholesky factor was "NOT
CHECKED", exit 3, its upper triangle having no finite differences; with
--harvest the whole model's probed check raised at its first step (an
ERROR, advising to "make it run on torch tensors of these shapes").

The oracle of the judged entries is gradcheck's own test
(tests/gradcheck/test_off_domain.py: central differences by hand); here the
command must judge the model, exit 0 on a right one and 1 on a wrong one,
and print which coordinates were left out, by the parameter's name.
"""
import shutil
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the model is a torch Module; torch is not installed")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: beside a copy of examples/gaussian.py: the model's factor through a Function
WRAPPED = textwrap.dedent('''
    import torch
    from gaussian import Gaussian


    class _Off(torch.autograd.Function):
        """The identity, its backward 1 % off."""

        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g * 1.01


    class _Same(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g


    class WrongGaussian(Gaussian):
        def factor(self):
            return _Off.apply(self.L)


    class RightGaussian(Gaussian):
        def factor(self):
            return _Same.apply(self.L)
''')


@pytest.fixture
def model_file(tmp_path):
    shutil.copy(EXAMPLES / "gaussian.py", tmp_path / "gaussian.py")
    path = tmp_path / "wrapped.py"
    path.write_text(WRAPPED)
    return path


def test_a_right_model_passes_and_says_which_coordinates_were_left_out(run, model_file):
    result = run("check", f"{model_file.parent / 'gaussian.py'}:Gaussian", "--inputs",
                 "randn(2, 3)")
    assert result.exit_code == 0, result.stdout
    assert "NOT CHECKED" not in result.stdout
    assert ("Gaussian: 3 of 9 coordinates of input 1 (L), first [0, 1], were not judged"
            in result.stdout)
    assert "LowerCholesky" in result.stdout


def test_a_wrong_gradient_of_the_judged_coordinates_fails(run, model_file):
    result = run("check", f"{model_file}:WrongGaussian", "--inputs", "randn(2, 3)")
    assert result.exit_code == 1, result.stdout
    assert "input 1 (L)" in result.stdout and "1.01 times numerical" in result.stdout


def test_a_harvested_model_with_a_right_function_passes_whole(run_json, model_file):
    """The whole model's probed directions move every coordinate of L off its
    domain; it is judged again densely, leaving the upper triangle out."""
    result, doc = run_json("check", f"{model_file}:RightGaussian", "--harvest", "--inputs",
                           "randn(2, 3)")
    assert result.exit_code == 0, result.stdout
    (model,) = [r for r in doc["results"] if r["op"] == "RightGaussian"]
    assert model["status"] == "passed"
    assert "the whole model passes" in model["message"]
    assert "3 of 9 coordinates of input 1 (L), first [0, 1], were not judged" in model["message"]


def test_a_harvested_model_with_a_wrong_function_fails_whole(run_json, model_file):
    result, doc = run_json("check", f"{model_file}:WrongGaussian", "--harvest", "--inputs",
                           "randn(2, 3)")
    assert result.exit_code == 1
    (model,) = [r for r in doc["results"] if r["op"] == "WrongGaussian"]
    assert model["status"] == "failed", model["message"]
    assert "1.01 times numerical" in model["message"]


def test_the_harvest_api_judges_the_whole_model_too(model_file, monkeypatch):
    """``gradcheck.harvest`` (the Python API) takes the same second look."""
    import importlib.util

    import torch
    from adcheck.gradcheck.harvest.api import harvest
    monkeypatch.syspath_prepend(str(model_file.parent))   # (its `from gaussian import`)
    spec = importlib.util.spec_from_file_location("gaussian_api", model_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = harvest(module.RightGaussian(), (torch.randn(2, 3),), seed=0)
    assert found.model is not None and found.model.passed, found.model
    assert any("were not judged" in p for p in found.model.partial)
