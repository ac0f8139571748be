"""adcheck check of a model whose parameter is constrained (issue: a model of
torch.distributions' MultivariateNormal in its Cholesky factor was "NOT
CHECKED", exit 3, its upper triangle having no finite differences).

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
            L = self.scaled(self.L)
            return D.MultivariateNormal(torch.zeros(3, dtype=x.dtype), scale_tril=L).log_prob(x).sum()

        scaled = staticmethod(lambda L: L)


    class _Off(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g * 1.01


    class WrongGaussian(Gaussian):
        scaled = staticmethod(_Off.apply)
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
