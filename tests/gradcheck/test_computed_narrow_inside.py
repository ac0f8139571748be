"""A float64 function that computes in a narrower dtype inside (a cast down and
back) has derivatives with that dtype's rounding. Its check fails, as
torch's own gradcheck does, and now says why: every entry of the vjp is a
float32 (bfloat16, float16) number. It used to blame the formula ("not
scaled by grad_output ... the formula ignores the grad_output"). A wrong
formula without a cast keeps its own diagnosis, and so does a float32 check.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the casts are torch's; torch is not installed")

from adcheck import gradcheck  # noqa: E402
from adcheck.gradcheck.core.grids import narrow_grid  # noqa: E402

# (outputs computed in double precision from the cast: only the derivative lies
# on the narrow grid; outputs on it are judged at its precision instead:
# test_outputs_computed_narrow.py)
CASTS = {"float32": lambda t: t.float().double() ** 2,
         "bfloat16": lambda t: t.bfloat16().double().sin(),
         "float16": lambda t: t.half().double() ** 3}


def _x(dtype=torch.float64):
    values = np.random.default_rng(4).uniform(-1.5, 1.5, 6)
    return torch.tensor(values, dtype=dtype, requires_grad=True)


def test_the_grid_of_values_cast_through_each_dtype():
    values = np.random.default_rng(0).standard_normal(50)
    assert narrow_grid(values) is None
    for name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16),
                        ("float16", torch.float16)):
        assert narrow_grid(torch.tensor(values).to(dtype).double().numpy()) == name
    assert narrow_grid(np.arange(10.0)) is None          # whole numbers say nothing
    assert narrow_grid(np.array([0.5, 0.25, 1.0])) is None   # too few to say


@pytest.mark.parametrize("dtype", list(CASTS))
def test_a_cast_inside_is_named_and_torch_fails_it_too(dtype):
    f = CASTS[dtype]
    assert not torch.autograd.gradcheck(f, (_x(),), raise_exception=False)
    report = gradcheck.check(f, (_x(),), precise=True, seed=0)
    assert not report.passed
    assert report.diagnosis.startswith(f"every entry of the vjp is a {dtype} number")
    assert "check it in " + dtype in report.diagnosis


def _scaled_sin(slope):
    class Sin(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos() * slope
    return Sin.apply


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_a_wrong_factor_without_a_cast_keeps_its_diagnosis(dtype):
    report = gradcheck.check(_scaled_sin(1.25), (_x(dtype),), precise=True, seed=0)
    assert not report.passed
    assert "constant factor" in report.diagnosis and "times numerical" in report.diagnosis


def test_inputs_cast_up_from_float32_say_nothing_of_a_cast_inside():
    # data loaded as float32 and checked in float64: a square whose vjp is twice
    # 2x has a Jacobian 4x on float32's grid because x is; it is named a factor
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 4 * x

    x = _x(torch.float32).detach().double().requires_grad_()
    report = gradcheck.check(Square.apply, (x,), precise=True, seed=0)
    assert narrow_grid(report.failures[0].actual) == "float32"   # the grid is there
    assert "analytical is 2 times numerical" in report.diagnosis
