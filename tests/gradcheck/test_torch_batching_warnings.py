"""Warnings torch raises about its own kernels under adcheck's vmap are not the
user's: a PReLU model checked as written printed three of torch's "An output
with one or more elements was resized ... (Triggered internally ...)", which
its own forward and backward never raise. The user's warnings still show."""
import warnings

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import check  # noqa: E402


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.PReLU(5),
                               torch.nn.Linear(5, 2)).double()


def _caught(func, x, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = check(func, (x,), seed=0, **options)
    return report, [str(w.message) for w in caught]


def test_the_model_alone_raises_no_such_warning():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = _model()(x)
        torch.autograd.grad(y.sum(), x)
    assert not [w for w in caught if "resized" in str(w.message)]


def test_prelu_checked_under_vmap_shows_no_torch_internal_warning():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    report, messages = _caught(_model(), x, precise=True, explore="quick")
    assert report.passed
    assert not [m for m in messages if "was resized" in m]


def test_a_warning_of_the_users_own_still_shows():
    def warns(t):
        warnings.warn("my layer is experimental")
        return torch.nn.functional.prelu(t, torch.full((1,), 0.25, dtype=t.dtype))
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    _, messages = _caught(warns, x, precise=True)
    assert "my layer is experimental" in messages
