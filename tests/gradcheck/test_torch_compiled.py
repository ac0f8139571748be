"""A torch.compile'd function, checked as a newcomer checks one.

torch 2.13's torch.compile returns no forward-mode tangent for dual inputs
(pytorch#187284): its jvp is silently zero, and the forward check failed
"analytical is zero" with no word of the compilation. Its backward has no
double backward ("torch.compile with aot_autograd does not currently support
double backward"), which the second-order check reported as an error of the
formula's. Now the first names torch.compile's lost tangents, and the second
is the function having no double backward, said so."""
from __future__ import annotations

import pytest

from adcheck.gradcheck import check
from adcheck.gradcheck.errors import GradcheckError, NoDoubleBackward

torch = pytest.importorskip("torch", reason="torch.compile (pip install torch)")


def _cubic(x):
    return x * x * x + x


@pytest.fixture
def compiled():
    # (dynamo's caches are global and follow the calls made: a dual input seen once
    # recompiles the function for the next, so each test starts from none)
    torch._dynamo.reset()
    yield torch.compile(_cubic)
    torch._dynamo.reset()


def _x():
    return torch.linspace(-1, 1, 6, dtype=torch.float64, requires_grad=True)


def test_torch_compile_drops_the_tangent_and_the_failure_says_so(compiled):
    report = check(compiled, (_x(),), check_forward_ad=True, explore=False)
    (failure,) = [f for f in report.failures if f.check == "forward"]
    assert "torch.compile returns no forward-mode tangent" in failure.diagnosis
    # reverse mode through the compiled function is right
    assert not [f for f in report.failures if f.check == "reverse"]
    # the premise, without adcheck: a fresh compilation's output has no tangent
    import torch.autograd.forward_ad as fw
    torch._dynamo.reset()
    with fw.dual_level():
        dual = fw.make_dual(_x().detach(), torch.ones(6, dtype=torch.float64))
        assert fw.unpack_dual(torch.compile(_cubic)(dual)).tangent is None


def test_its_missing_double_backward_is_said_to_be_torch_compiles(compiled):
    # (the check's error carries the cause the command line reports as a skip:
    # "second order not checked: ... has no double backward (its backward is
    # torch.compile's ...)")
    with pytest.raises(GradcheckError) as raised:
        check(compiled, (_x(),), order=2, explore=False)
    cause = raised.value.__cause__
    assert isinstance(cause, NoDoubleBackward) and "torch.compile" in cause.reason


def test_the_function_it_compiles_passes_both():
    assert check(_cubic, (_x(),), check_forward_ad=True, explore=False).passed
    assert check(_cubic, (_x(),), order=2, explore=False).passed
