"""check(..., reference=...) with an mpmath reference: the reference decides,
and the report says whether finite differences would have agreed."""
from __future__ import annotations

import mpmath
import numpy as np
import pytest

from gradcheck import GradcheckError, check

torch = pytest.importorskip("torch", reason="the functions under check are torch functions")


def mp_map(fn):
    return lambda x: np.vectorize(fn, otypes=[object])(x)


class SlightlyWrongSin(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * torch.cos(x) * (1 + 1e-6)


X = [0.3, -1.7, 2.9]


@pytest.mark.parametrize("dtype,values", [(torch.float64, X),
                                          (torch.complex128, [0.3 + 0.4j, -1.0 + 0.2j])])
def test_reference_catches_1e_6_and_accepts_the_correct_op(dtype, values):
    x = torch.tensor(values, dtype=dtype, requires_grad=True)
    ref = mp_map(mpmath.sin)
    correct = check(torch.sin, (x,), reference=ref, precise=True, check_forward_ad=True)
    assert correct.passed, correct.message()
    if dtype == torch.float64:
        wrong = check(SlightlyWrongSin.apply, (x,), reference=ref, precise=True)
        assert not wrong.passed and "1.000001 times" in wrong.diagnosis
        assert wrong.failures[0].against == "reference"


def test_reference_settles_what_finite_differences_get_wrong():
    # x**2 + 1e12: rounding of the large constant swamps a central difference at eps=1e-6
    x = torch.tensor([0.5, -0.25], dtype=torch.float64, requires_grad=True)
    func = lambda x: x * x + 1e12
    ref = mp_map(lambda v: v ** 2 + mpmath.mpf(10) ** 12)
    assert not check(func, (x,)).passed, "plain finite differences raise a false alarm here"
    assert check(func, (x,), reference=ref).passed
    assert check(func, (x,), precise=True).passed, "Richardson's noise estimate absorbs it"


def test_failure_against_the_reference_says_the_formula_is_wrong():
    x = torch.tensor(X, dtype=torch.float64, requires_grad=True)

    class WrongSin(SlightlyWrongSin):
        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return -g * torch.cos(x)
    report = check(WrongSin.apply, (x,), reference=mp_map(mpmath.sin))
    assert "the reverse-mode formula is wrong" in report.failures[0].detail


def test_reference_with_the_wrong_output_shape_is_named():
    x = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    ref = lambda x: mp_map(mpmath.sin)(x)[:2]
    with pytest.raises(ValueError, match="reference's output 0 has 2 elements, the function's has 3"):
        check(torch.sin, (x,), reference=ref)


def test_reference_that_raises_is_named():
    x = torch.tensor(X, dtype=torch.float64, requires_grad=True)

    def ref(x):
        return np.sin(x)  # NumPy cannot take mpf object arrays
    with pytest.raises(GradcheckError, match="the mpmath reference raised"):
        check(torch.sin, (x,), reference=ref)
