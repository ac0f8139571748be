"""A torch.compile'd function, checked as a newcomer checks one.

torch 2.13's torch.compile may return no forward-mode tangent for dual
inputs (pytorch#187284; whether it does depends on what the process compiled
before): its jvp is then silently zero, and the forward check failed
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


class SinWithoutTangent(torch.autograd.Function):
    """sin whose jvp is zero, as torch.compile's output tangents are."""

    @staticmethod
    def forward(x):
        return torch.sin(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.cos(x)

    @staticmethod
    def jvp(ctx, t):
        return torch.zeros_like(t)


def _as_compiled(func):
    """``func`` marked as torch.compile marks what it returns."""
    def compiled(x):
        return func(x)
    compiled._torchdynamo_orig_callable = func
    return compiled


def test_a_compiled_functions_lost_tangents_are_named():
    # (a real compilation drops its tangents or not by what the process compiled
    # before, the inductor's caches included: the same check passed in one process and
    # failed in another; the rule is held on a function that loses them every time)
    report = check(_as_compiled(SinWithoutTangent.apply), (_x(),), check_forward_ad=True,
                   explore=False)
    (failure,) = [f for f in report.failures if f.check == "forward"]
    assert "torch.compile returns no forward-mode tangent" in failure.diagnosis
    assert not [f for f in report.failures if f.check == "reverse"]
    # and the same zero jvp of a function nobody compiled is not blamed on torch.compile
    (plain,) = [f for f in check(SinWithoutTangent.apply, (_x(),), check_forward_ad=True,
                                 explore=False).failures if f.check == "forward"]
    assert "torch.compile" not in plain.diagnosis


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
