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
import textwrap

import pytest

pytest.importorskip("torch", reason="the model is a torch Module; torch is not installed")

MODEL = textwrap.dedent('''
    import torch
    D = torch.distributions


    class Gaussian(torch.nn.Module):
        def __init__(self):
            super().__init__()
            g = torch.Generator().manual_seed(0)
            self.L = torch.nn.Parameter(torch.eye(3) + 0.1 * torch.randn(3, 3, generator=g).tril(-1))

        def forward(self, x):
            L = self.L if self.function is None else self.function.apply(self.L)
            return D.MultivariateNormal(torch.zeros(3, dtype=x.dtype), scale_tril=L).log_prob(x).sum()

        function = None   # (a Function the factor passes through)


    class _Off(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g * 1.01


    class WrongGaussian(Gaussian):
        function = _Off


    class _Same(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g


    class RightGaussian(Gaussian):
        function = _Same
''')


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "gaussian.py"
    path.write_text(MODEL)
    return path


def test_a_right_model_passes_and_says_which_coordinates_were_left_out(run, model_file):
    result = run("check", f"{model_file}:Gaussian", "--inputs", "randn(2, 3)")
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


def test_the_harvest_api_judges_the_whole_model_too(model_file):
    """``gradcheck.harvest`` (the Python API) takes the same second look."""
    import importlib.util

    import torch
    from adcheck.gradcheck.harvest.api import harvest
    spec = importlib.util.spec_from_file_location("gaussian_api", model_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = harvest(module.RightGaussian(), (torch.randn(2, 3),), seed=0)
    assert found.model is not None and found.model.passed, found.model
    assert any("were not judged" in p for p in found.model.partial)
