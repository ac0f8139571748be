"""Bad input gets a clear ValueError or GradcheckError naming the input and
the fix, never a bare TypeError from inside the checker. The cases run on
each engine (the ``E`` fixture)."""
from __future__ import annotations

import inspect

import gradcheck_zoo as zoo
import numpy as np
import pytest

from adcheck.gradcheck import GradcheckError, check, gradcheck, gradgradcheck


def x64(E, *values, grad=True):
    return E.from_numpy(np.array(values, dtype=np.float64)).requires_grad_(grad)


def test_no_input_requires_grad(E):
    with pytest.raises(ValueError, match=r"no input requires grad.*requires_grad_\(\)"):
        gradcheck(E.sin, (x64(E, 1.0, 2.0, grad=False),))


def test_numpy_input_names_the_input_and_the_conversion(E):
    with pytest.raises(ValueError, match=r"input 1 is a NumPy array.*from_numpy"):
        gradcheck(E.mul, (x64(E, 1.0), np.array([2.0])))


def test_no_tensor_at_all():
    with pytest.raises(ValueError, match="no refengine or torch tensor"):
        gradcheck(lambda a: a, (1.0,))


def test_integer_inputs_without_grad_are_passed_through(E):
    index = E.from_numpy(np.array([2, 0]))
    assert gradcheck(lambda x, i: x[i] * 2, (x64(E, 1.0, 2.0, 3.0), index))


def test_output_that_depends_on_no_input(E):
    with pytest.raises(ValueError, match="no output requires grad"):
        gradcheck(lambda x: E.ones(3, dtype=E.float64), (x64(E, 1.0),))


def test_output_detached_from_its_input_is_caught(E):
    with pytest.raises(GradcheckError, match=r"output 1 does not require grad.*detaches it"):
        gradcheck(lambda x: (x * 2, E.sin(x.detach())), (x64(E, 0.5, 1.0),))


def test_function_that_raises(E):
    def broken(x):
        raise KeyError("weights")
    with pytest.raises(GradcheckError, match=r"broken: the function raised KeyError") as info:
        gradcheck(broken, (x64(E, 1.0),))
    assert isinstance(info.value.__cause__, KeyError)


def test_backward_that_raises(E):
    with pytest.raises(GradcheckError, match=r"NoBackward: the backward raised"):
        gradcheck(zoo.no_backward(E), (x64(E, 1.0),))


def test_second_order_errors_name_the_first_derivative(E):
    with pytest.raises(GradcheckError, match=r"NoBackward: the first derivative raised "
                                             r"ZeroDivisionError"):
        gradgradcheck(zoo.no_backward(E), (x64(E, 1.0, 2.0),))


def test_missing_jvp_is_named_with_the_flag_to_turn_off(E):
    assert gradcheck(zoo.no_jvp(E), (x64(E, 1.0),))
    with pytest.raises(GradcheckError, match="check_forward_ad=False"):
        gradcheck(zoo.no_jvp(E), (x64(E, 1.0),), check_forward_ad=True)


def test_both_modes_off(E):
    with pytest.raises(ValueError, match="at least one of"):
        gradcheck(E.sin, (x64(E, 1.0),), check_backward_ad=False)
    with pytest.raises(ValueError, match="check_fwd_over_rev and check_rev_over_rev"):
        gradgradcheck(E.sin, (x64(E, 1.0),), check_rev_over_rev=False)


def test_float32_warns_like_pytorch(E):
    x = E.from_numpy(np.array([0.5], dtype=np.float32)).requires_grad_()
    with pytest.warns(UserWarning, match="not double precision"):
        check(E.sin, (x,))


def test_signatures_match_pytorch():
    torch = pytest.importorskip("torch", reason="the signatures are compared with torch's")
    for ours, theirs in ((gradcheck, torch.autograd.gradcheck),
                         (gradgradcheck, torch.autograd.gradgradcheck)):
        mine = inspect.signature(ours).parameters
        for name, param in inspect.signature(theirs).parameters.items():
            if name in ("masked", "gen_non_contig_grad_outputs") and name not in mine:
                continue
            assert name in mine, f"{ours.__name__} lacks {name}"
            if param.default is not inspect.Parameter.empty:
                assert mine[name].default == param.default, name


def test_raise_exception_false_returns_false(E):
    assert gradcheck(zoo.wrong_factor(E), (x64(E, 1.0),), raise_exception=False) is False


def test_outputs_as_a_list_and_inputs_as_a_list(E):
    assert gradcheck(lambda x: [x * 2, E.sin(x)], [x64(E, 0.5, 1.0)])


def test_function_returning_no_tensor(E):
    with pytest.raises(ValueError, match="no output requires grad"):
        gradcheck(lambda x: 3.0, (x64(E, 1.0),))


def test_not_callable(E):
    with pytest.raises(GradcheckError, match="the function raised TypeError"):
        gradcheck(42, (x64(E, 1.0),))


def test_backward_that_cannot_take_undefined_grads_is_explained(E):
    # torch.autograd.gradcheck lets the TypeError escape here; we name the cause
    with pytest.raises(GradcheckError, match=r"the other outputs' gradients are undefined"):
        gradcheck(zoo.sincos_undefined_grads(E), (x64(E, 0.3, 0.5),))


def test_integer_input_meant_to_be_checked_names_the_conversion(E):
    with pytest.raises(ValueError, match=r"input 0 has dtype \S*int64.*\.double\(\)"):
        gradcheck(lambda x: x * 2, (E.from_numpy(np.array([1, 2])),))


@pytest.mark.parametrize("keywords,message", [
    ({"presice": True}, r"unknown keyword presice; the known keywords are eps, atol"),
    ({"eps": 0.0}, r"eps must be a positive number"),
    ({"atol": -1e-5}, r"atol must be a number >= 0"),
    ({"rtol": float("nan")}, r"rtol must be a number >= 0"),
    ({"nondet_tol": -1}, r"nondet_tol must be a number >= 0"),
    ({"probes": 0}, r"probes must be an integer >= 1"),
    ({"probes": 1.5}, r"probes must be an integer >= 1"),
    ({"order": 3}, r"order must be 1 or 2, not 3"),
])
def test_bad_keywords_are_refused_before_anything_runs(E, keywords, message):
    calls = []

    def func(x):
        calls.append(x)
        return x * 2
    error = TypeError if "presice" in keywords else ValueError
    with pytest.raises(error, match=message):
        check(func, (x64(E, 1.0),), **keywords)
    assert calls == []
