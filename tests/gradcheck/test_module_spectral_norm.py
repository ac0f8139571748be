"""A layer under spectral_norm in training mode fails its derivative checks
by torch's design where its power iteration has not converged; the failure
says why and that .eval() checks it.

Found checking `nn.utils.parametrizations.spectral_norm(nn.Linear(4, 3))`
with `adcheck check` as written: a bare FAIL on the weight, at a point the
explore pass moved the weights to. Each call takes a power-iteration step
from the layer's u and v and the backward treats the result as constant
(the largest singular value's gradient once the iteration has converged for
those weights: the parametrization iterates 15 times when built, the older
hook not at all). torch's own gradcheck, each call starting from the same u
and v as adcheck's do, fails it too, and passes it in eval mode.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

from adcheck.gradcheck import check  # noqa: E402
from adcheck.gradcheck.core.modules import spectral_norms  # noqa: E402

WHY = "spectral_norm in training mode (weight): each call takes a power-iteration step"


def _parametrized():
    """Built (15 iterations, converged), then given other weights, as a check moves them."""
    layer = torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(4, 3).double())
    with torch.no_grad():
        layer.parametrizations.weight.original.copy_(torch.randn(3, 4, dtype=torch.float64))
    return layer


def _hooked():
    return torch.nn.utils.spectral_norm(torch.nn.Linear(4, 3).double())


def _torch_gradcheck_of_weight(layer, x) -> bool:
    """torch.autograd.gradcheck of the layer in its unnormalised weight, each
    call from the layer's u and v as they are now (the premise)."""
    owner = layer.parametrizations.weight if hasattr(layer, "parametrizations") else None
    weight = owner.original if owner is not None else layer.weight_orig
    name = "parametrizations.weight.original" if owner is not None else "weight_orig"
    w = weight.detach().clone().requires_grad_()
    state = {k: b.clone() for k, b in layer.named_buffers()}

    def f(w):
        return torch.func.functional_call(layer, {name: w, **{k: b.clone() for k, b in
                                                              state.items()}}, (x,))
    try:
        return torch.autograd.gradcheck(f, (w,))
    except Exception:   # noqa: BLE001 - GradcheckError: the premise holds
        return False


@pytest.mark.parametrize("make", [_parametrized, _hooked], ids=["parametrization", "hook"])
def test_spectral_norm_in_training_mode_is_named_and_eval_passes(make):
    torch.manual_seed(0)
    layer = make()
    x = torch.tensor(np.random.default_rng(0).standard_normal((3, 4)))
    assert not _torch_gradcheck_of_weight(layer, x)      # torch fails it too
    report = check(layer, (x.clone().requires_grad_(),), seed=0, precise=True)
    failures = [r for r in report.failures if r.check == "reverse"]
    assert failures and all(WHY in r.diagnosis and ".eval()" in r.diagnosis for r in failures)
    layer.eval()
    assert _torch_gradcheck_of_weight(layer, x)
    assert check(layer, (x.clone().requires_grad_(),), seed=0, precise=True).passed


def test_only_training_mode_and_only_spectral_norm_is_named():
    assert spectral_norms(_parametrized().eval()) == spectral_norms(_hooked().eval()) == []
    assert spectral_norms(torch.nn.utils.parametrizations.weight_norm(
        torch.nn.Linear(4, 3))) == []
    nested = torch.nn.Sequential(torch.nn.Tanh(), _parametrized())
    assert spectral_norms(nested) == ["1.weight"]


def test_an_embeddings_padding_row_is_named_when_the_indices_meet_it():
    # torch gives the padding row no gradient by design (found checking
    # nn.Embedding(10, 3, padding_idx=0) with indices that include 0)
    torch.manual_seed(0)
    layer = torch.nn.Embedding(10, 3, padding_idx=0).double()
    met = torch.tensor([[0, 3, 5], [7, 0, 2]])
    (grad,) = torch.autograd.grad(layer(met).sum(), layer.weight)
    assert grad[0].abs().sum() == 0 and grad[3].abs().sum() > 0   # the premise
    report = check(layer, (met,), seed=0, precise=True)
    (failure,) = [r for r in report.failures if r.check == "reverse"]
    assert failure.in_name == "weight"
    assert failure.diagnosis.startswith("weight has padding_idx=0, whose row gets no gradient")
    assert check(layer, (met.clamp_min(1),), seed=0, precise=True).passed
