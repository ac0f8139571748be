"""A check whose derivative raises inside torch is a failure when torch raises
the same without adcheck, an error of the run otherwise
(``opinfo.torchdb.raised``; issue 18: every sample gets a verdict). The
truth of each case is established here with plain torch calls."""
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch", reason="the confirmation runs torch's gradcheck; "
                            "torch is not installed")
pytest.importorskip("expecttest", reason="PyTorch's op_db imports expecttest, which is "
                    "not installed (pip install expecttest)")

import torch.autograd.forward_ad as fwAD  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from adcheck.opinfo.torchdb.raised import confirm  # noqa: E402
from adcheck.runner.checks import Policy, check_sample  # noqa: E402
from adcheck.runner.torchregistry import TorchRegistry  # noqa: E402

ZERO_TENSOR = "ZeroTensors are immutable"


def _fwd_over_rev(x, y, tangent_on_y: bool):
    """mse_loss's vjp differentiated in forward mode, by hand."""
    with fwAD.dual_level():
        xd = fwAD.make_dual(x, torch.ones_like(x)).requires_grad_()
        yd = fwAD.make_dual(y, torch.ones_like(y)) if tangent_on_y else y.clone()
        yd.requires_grad_()
        gx, _ = torch.autograd.grad(F.mse_loss(xd, yd), (xd, yd), create_graph=True)
        return fwAD.unpack_dual(gx).tangent


def _mse_result(dtype):
    registry = TorchRegistry()
    entry = registry.get("nn.functional.mse_loss")
    sample = registry.samples(entry, registry.dtype(dtype), 1)[0]
    settings = SimpleNamespace(registry=registry, checks=("fwgrad_bwgrad",),
                               policy=Policy(precise=True, engine="torch"))
    ((result, _),) = check_sample(entry, sample, registry.dtype(dtype), settings)
    return result


def test_mse_loss_forward_over_reverse_raises_in_torch_itself():
    # the bug, by hand: a tangent on the input alone raises, on both it does not
    x, y = torch.randn(5, dtype=torch.float64), torch.randn(5, dtype=torch.float64)
    with pytest.raises(RuntimeError, match=ZERO_TENSOR):
        _fwd_over_rev(x, y, tangent_on_y=False)
    assert torch.allclose(_fwd_over_rev(x, y, tangent_on_y=True), torch.zeros(5, dtype=x.dtype))


def test_float64_is_a_failure_with_the_direct_reproducer():
    # torch's own float64 gradgradcheck passes (it gives every input a tangent)
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    y = torch.randn(5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(F.mse_loss, (x, y), check_fwd_over_rev=True,
                                        check_rev_over_rev=False, check_undefined_grad=False)
    result = _mse_result("float64")
    assert result.status == "failed"
    assert "called directly with a tangent on input 0 only" in result.message
    assert ZERO_TENSOR in result.message and "passes" in result.message
    assert "adcheck op nn.functional.mse_loss --registry torch" in result.message


def test_float32_is_a_failure_torchs_own_gradgradcheck_raises_too():
    x = torch.randn(5, dtype=torch.float32, requires_grad=True)
    y = torch.randn(5, dtype=torch.float32, requires_grad=True)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match=ZERO_TENSOR):
        torch.autograd.gradgradcheck(F.mse_loss, (x, y), check_fwd_over_rev=True,
                                     check_rev_over_rev=False, check_undefined_grad=False,
                                     fast_mode=True)
    result = _mse_result("float32")
    assert result.status == "failed"
    assert "gradgradcheck(fast_mode=True, check_fwd_over_rev=True)" in result.message
    assert "raises the same" in result.message and ZERO_TENSOR in result.message


def test_an_error_torch_does_not_raise_stays_unconfirmed():
    # sin's derivatives run in torch, directly and in its gradgradcheck: an error
    # our check reported would be the run's own
    x = torch.tensor([0.3, 1.2], dtype=torch.float64, requires_grad=True)
    runs = [("gradgradcheck", {"check_fwd_over_rev": True, "check_rev_over_rev": False,
                               "check_undefined_grad": False})]
    ours = "GradcheckError: sin: forward-mode AD raised RuntimeError (something of ours)"
    assert confirm(torch.sin, (x,), runs, "fwgrad_bwgrad", ours, "reproduce") is None
    # and a different exception text from torch is not "the same"
    ours = f"GradcheckError: raised RuntimeError ({ZERO_TENSOR})"
    assert confirm(torch.sin, (x,), runs, "fwgrad_bwgrad", ours, "reproduce") is None
