"""A module in training mode whose random layers draw anew on every
call fails the determinism check, rightly; the failure now says which
layers and that ``.eval()`` ends it (before: "fix its randomness inside it
(a seeded generator)", which a newcomer checking a model cannot act on)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

import adcheck.refengine as R  # noqa: E402
from adcheck.gradcheck import check  # noqa: E402


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
    assert ("the module is in training mode, where its random layers (1: Dropout) draw anew "
            "on every call (dropout masks, RReLU slopes): call .eval() on it to check it"
            ) in nondeterministic[0].diagnosis
    assert check(model.eval(), (x,), seed=0).passed


@pytest.mark.parametrize("make, named", [
    # a recurrent layer's dropout between its layers, attention's on its weights, RReLU's
    # random slopes: no Dropout module, the same randomness (found checking a GRU model)
    (lambda: torch.nn.GRU(3, 4, num_layers=2, dropout=0.5), "GRU"),
    (lambda: torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.RReLU()), "1: RReLU"),
])
def test_layers_with_their_own_dropout_are_named_too(make, named):
    torch.manual_seed(0)
    model = make().double()
    x = torch.tensor(np.random.default_rng(0).standard_normal((2, 3)), requires_grad=True)
    first, second = (model(x) for _ in range(2))
    first, second = (v[0] if isinstance(v, tuple) else v for v in (first, second))
    assert not torch.equal(first, second)     # independently: two calls differ
    report = check(model, (x,), seed=0)
    (failure,) = [f for f in report.failures if f.check == "deterministic"][:1]
    assert f"its random layers ({named})" in failure.diagnosis
    assert check(model.eval(), (x,), seed=0).passed


def test_a_single_layer_rnn_with_a_dropout_rate_is_not_named():
    # (torch applies an RNN's dropout between its layers: one layer draws nothing)
    torch.manual_seed(0)
    model = torch.nn.GRU(3, 4, num_layers=1).double()
    model.dropout = 0.5
    from adcheck.gradcheck.core.modules import random_layers
    assert random_layers(model) == []


def test_a_function_drawing_random_numbers_keeps_the_general_advice():
    x = torch.tensor(np.random.default_rng(0).standard_normal(5), requires_grad=True)
    report = check(lambda t: t * torch.rand_like(t), (x,), seed=0)
    (failure,) = [f for f in report.failures if f.check == "deterministic"]
    assert "fix its randomness inside it (a seeded generator)" in failure.diagnosis
    assert ".eval()" not in failure.diagnosis
