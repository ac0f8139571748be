"""Bad input gets a clear ValueError or GradcheckError naming the input and
the fix, never a bare TypeError from inside the checker."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

from gradcheck import GradcheckError, check, gradcheck, gradgradcheck

torch = pytest.importorskip("torch", reason="these cases are built from torch tensors")


def x64(*values, grad=True):
    return torch.tensor(values, dtype=torch.float64, requires_grad=grad)


def test_no_input_requires_grad():
    with pytest.raises(ValueError, match=r"no input requires grad.*requires_grad_\(\)"):
        gradcheck(torch.sin, (x64(1.0, 2.0, grad=False),))


def test_numpy_input_names_the_input_and_the_conversion():
    with pytest.raises(ValueError, match=r"input 1 is a NumPy array.*from_numpy"):
        gradcheck(torch.mul, (x64(1.0), np.array([2.0])))


def test_no_tensor_at_all():
    with pytest.raises(ValueError, match="no refengine or torch tensor"):
        gradcheck(lambda a: a, (1.0,))


def test_integer_inputs_without_grad_are_passed_through():
    index = torch.tensor([2, 0])
    assert gradcheck(lambda x, i: x[i] * 2, (x64(1.0, 2.0, 3.0), index))


def test_output_that_depends_on_no_input():
    with pytest.raises(ValueError, match="no output requires grad"):
        gradcheck(lambda x: torch.ones(3, dtype=torch.float64), (x64(1.0),))


def test_output_detached_from_its_input_is_caught():
    with pytest.raises(GradcheckError, match=r"output 1 does not require grad.*detaches it"):
        gradcheck(lambda x: (x * 2, torch.sin(x.detach())), (x64(0.5, 1.0),))


def test_function_that_raises():
    def broken(x):
        raise KeyError("weights")
    with pytest.raises(GradcheckError, match=r"broken: the function raised KeyError") as info:
        gradcheck(broken, (x64(1.0),))
    assert isinstance(info.value.__cause__, KeyError)


def test_backward_that_raises():
    class NoBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ZeroDivisionError("oops")
    with pytest.raises(GradcheckError, match=r"NoBackward: the backward raised"):
        gradcheck(NoBackward.apply, (x64(1.0),))


def test_missing_jvp_is_named_with_the_flag_to_turn_off():
    class NoJvp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return 2 * g
    assert gradcheck(NoJvp.apply, (x64(1.0),))
    with pytest.raises(GradcheckError, match="check_forward_ad=False"):
        gradcheck(NoJvp.apply, (x64(1.0),), check_forward_ad=True)


def test_both_modes_off():
    with pytest.raises(ValueError, match="at least one of"):
        gradcheck(torch.sin, (x64(1.0),), check_backward_ad=False)


def test_float32_warns_like_pytorch():
    x = torch.tensor([0.5], dtype=torch.float32, requires_grad=True)
    with pytest.warns(UserWarning, match="not double precision"):
        check(torch.sin, (x,))


def test_signatures_match_pytorch():
    for ours, theirs in ((gradcheck, torch.autograd.gradcheck),
                         (gradgradcheck, torch.autograd.gradgradcheck)):
        mine = inspect.signature(ours).parameters
        for name, param in inspect.signature(theirs).parameters.items():
            if name in ("masked", "gen_non_contig_grad_outputs") and name not in mine:
                continue
            assert name in mine, f"{ours.__name__} lacks {name}"
            if param.default is not inspect.Parameter.empty:
                assert mine[name].default == param.default, name


def test_raise_exception_false_returns_false():
    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return 3 * g
    assert gradcheck(Wrong.apply, (x64(1.0),), raise_exception=False) is False


def test_outputs_as_a_list_and_inputs_as_a_list():
    assert gradcheck(lambda x: [x * 2, torch.sin(x)], [x64(0.5, 1.0)])


def test_function_returning_no_tensor():
    with pytest.raises(ValueError, match="no output requires grad"):
        gradcheck(lambda x: 3.0, (x64(1.0),))


def test_not_callable():
    with pytest.raises(GradcheckError, match="the function raised TypeError"):
        gradcheck(42, (x64(1.0),))


class SinCosNoneGrads(torch.autograd.Function):
    """Two outputs; the backward assumes both gradients are defined."""

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x)
        return torch.sin(x), torch.cos(x)

    @staticmethod
    def backward(ctx, g0, g1):
        x, = ctx.saved_tensors
        return g0 * torch.cos(x) - g1 * torch.sin(x)


def test_backward_that_cannot_take_undefined_grads_is_explained():
    # torch.autograd.gradcheck lets the TypeError escape here; we name the cause
    with pytest.raises(GradcheckError, match=r"the other outputs' gradients are undefined"):
        gradcheck(SinCosNoneGrads.apply, (x64(0.3, 0.5),))


def test_integer_input_meant_to_be_checked_names_the_conversion():
    with pytest.raises(ValueError, match=r"input 0 has dtype torch.int64.*\.double\(\)"):
        gradcheck(lambda x: x * 2, (torch.tensor([1, 2]),))
