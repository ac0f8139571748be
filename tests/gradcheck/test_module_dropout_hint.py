"""A module in training mode whose dropout layers draw new masks on every
call fails the determinism check, rightly; the failure now says which
layers and that ``.eval()`` ends it (before: "fix its randomness inside it
(a seeded generator)", which a newcomer checking a model cannot act on)."""
import numpy as np
import pytest
import torch

import adcheck.refengine as R
from adcheck.gradcheck import check


def _torch_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Dropout(0.3),
                               torch.nn.Linear(5, 2)).double()


def _refengine_model():
    R.manual_seed(0)
    return R.nn.Sequential(R.nn.Linear(4, 5, dtype=R.float64), R.nn.Dropout(0.3),
                           R.nn.Linear(5, 2, dtype=R.float64))


@pytest.mark.parametrize("make, tensor", [
    (_torch_model, lambda a: torch.tensor(a, requires_grad=True)),
    (_refengine_model, lambda a: R.tensor(a, dtype=R.float64, requires_grad=True)),
])
def test_dropout_in_training_mode_is_named_with_the_fix(make, tensor):
    x = tensor(np.random.default_rng(0).standard_normal((3, 4)))
    model = make()
    # independently: two calls at the same input differ
    assert not np.array_equal(model(x).detach().numpy(), model(x).detach().numpy())
    report = check(model, (x,), seed=0)
    assert not report.passed
    nondeterministic = [f for f in report.failures if f.check == "deterministic"]
    assert nondeterministic
    assert ("the module is in training mode, where its dropout layers (1: Dropout) draw new "
            "masks on every call: call .eval() on it to check it") in nondeterministic[0].diagnosis
    assert check(model.eval(), (x,), seed=0).passed


def test_a_function_drawing_random_numbers_keeps_the_general_advice():
    x = torch.tensor(np.random.default_rng(0).standard_normal(5), requires_grad=True)
    report = check(lambda t: t * torch.rand_like(t), (x,), seed=0)
    (failure,) = [f for f in report.failures if f.check == "deterministic"]
    assert "fix its randomness inside it (a seeded generator)" in failure.diagnosis
    assert ".eval()" not in failure.diagnosis
