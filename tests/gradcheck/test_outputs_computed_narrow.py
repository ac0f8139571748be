"""A float64 function whose outputs are all float32 (bfloat16, float16) numbers
computes in that dtype inside (``(x.float() ** 2).double()``, a fused kernel
behind casts), and its differences carry that dtype's rounding. Its check
used to fail a correct backward with "numerical is zero ... the function
does not use this input" (the deep steps' quotients inside one float32
stair) or a numerical Jacobian off by 2 %; it is now judged at that dtype's
precision, and says so. Wrong formulas still fail, down to errors far below
the dtype's own differences could see.

The evidence of which side is right is independent of adcheck: the backward
under test returns the exact derivative of the function's formula in double
precision (torch's autograd of the same formula without the cast), and the
function's values are within that dtype's rounding of the formula's.
"""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the casts inside are torch's; torch is not installed")

from adcheck import gradcheck  # noqa: E402
from adcheck.gradcheck.core.grids import narrow_grid  # noqa: E402

NARROW = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _square_in(dtype, slope=2.0):
    """x ** 2 computed in ``dtype`` inside, its backward ``slope * x * g`` in double."""
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x.to(dtype) ** 2).to(x.dtype)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return slope * x * g
    return Square.apply


def _x(shape=(3, 4), seed=0, dtype=torch.float64):
    values = np.random.default_rng(seed).uniform(0.5, 2.0, shape) * \
        np.random.default_rng(seed + 1).choice([-1.0, 1.0], shape)
    return torch.tensor(values, dtype=dtype, requires_grad=True)


def test_the_backward_is_the_formulas_derivative_and_the_values_its_rounding():
    # the independent evidence the verdicts below rest on
    x = _x()
    for name, dtype in NARROW.items():
        f = _square_in(dtype)
        (ours,) = torch.autograd.grad(f(x).sum(), x)
        (exact,) = torch.autograd.grad((x ** 2).sum(), x)
        assert torch.equal(ours, exact)
        eps = torch.finfo(dtype).eps   # (x rounded, squared, rounded: within 2 eps)
        assert torch.all(torch.abs(f(x) - x ** 2) <= 2 * eps * x ** 2)
        assert narrow_grid(f(x).detach().numpy()) == name


# (three values say float32 with odds 1 - 3 * 2**-12; bfloat16's and float16's few
# bits say it of three with odds 0.42 only: docs/python.md)
@pytest.mark.parametrize("name,shape", [("float32", (3,)), ("float32", (3, 4)),
                                        ("float16", (3, 4))])
def test_a_correct_backward_passes_at_the_dtypes_precision(name, shape):
    report = gradcheck.check(_square_in(NARROW[name]), (_x(shape),), precise=True, seed=0)
    assert report.passed, report.message()
    assert report.computed_in == {0: name}
    assert f"computes in {name} inside" in report.message()
    assert f"judged at {name}'s precision" in report.message()


@pytest.mark.parametrize("name,slope", [("float32", 2.001), ("float32", 3.0),
                                        ("float16", 2.5)])
def test_a_wrong_backward_still_fails(name, slope):
    report = gradcheck.check(_square_in(NARROW[name], slope), (_x(),), precise=True, seed=0)
    assert not report.passed
    assert "constant factor" in report.diagnosis
    assert f"holds only {name} numbers" in report.message()   # the precision it was judged at


@pytest.mark.parametrize("slope", [2.0, 3.0])
def test_bfloat16_differences_that_resolve_nothing_are_no_pass(slope):
    # bfloat16's differences err by a few percent and every tolerance here exceeds
    # its entry: a backward wrong by half would pass, so neither verdict is given
    with pytest.raises(gradcheck.UncheckableError, match="resolve nothing here") as raised:
        gradcheck.check(_square_in(torch.bfloat16, slope), (_x(),), precise=True, seed=0)
    assert "computes in bfloat16 inside" in str(raised.value)
    assert "kernels.check" in str(raised.value)


@pytest.mark.parametrize("slope,passes", [(2.0, True), (2.2, False), (3.0, False)])
def test_a_reference_judges_what_differences_cannot(slope, passes):
    # the way out the refusal names: the kernel check against the formula in float64
    from adcheck.gradcheck import kernels
    report = kernels.check(_square_in(torch.bfloat16, slope), (_x(),),
                           against=lambda t: t ** 2)
    assert report.passed is passes, kernels.summary(report)
    assert "computes in bfloat16 inside" in kernels.summary(report)


def test_torch_fails_the_correct_backward_at_double_precision():
    # why a double-precision judgement is wrong here: torch's differences at
    # eps=1e-6 read float32's stairs; the old verdict said "numerical is zero"
    assert not torch.autograd.gradcheck(_square_in(torch.float32), (_x((3,)),),
                                        raise_exception=False)


def test_autograd_through_a_cast_and_back_passes_where_torch_fails():
    # (x.float() * 2).double(): its derivative is exactly 2 (a one-hot grad_output
    # is a float32 number), the float32 differences find 2 within their error
    def f(t):
        return (t.float() * 2).double()
    x = _x((3, 4))
    jac = torch.autograd.functional.jacobian(f, x)
    assert torch.equal(jac.reshape(12, 12), 2 * torch.eye(12, dtype=torch.float64))
    assert not torch.autograd.gradcheck(f, (x,), raise_exception=False)
    report = gradcheck.check(f, (x,), precise=True, seed=0)
    assert report.passed, report.message()
    assert report.computed_in == {0: "float32"}


def test_only_the_output_computed_narrow_is_judged_so():
    def two(x):
        return (x.float() ** 2).double(), x ** 3
    report = gradcheck.check(two, (_x(),), precise=True, seed=0)
    assert report.passed, report.message()
    assert report.computed_in == {0: "float32"}


def test_a_complex_function_computed_in_complex64():
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return (z.to(torch.complex64) ** 2).to(torch.complex128)

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            return g * (2 * z).conj()

    re, im = _x((2, 3), seed=3), _x((2, 3), seed=5)
    z = torch.complex(re.detach(), im.detach()).requires_grad_()
    report = gradcheck.check(Square.apply, (z,), precise=True, seed=0)
    assert report.passed, report.message()
    assert report.computed_in == {0: "float32"}


def test_inputs_on_the_grid_keep_double_precision():
    # data cast up from float32: outputs of exact operations lie on its grid too,
    # and say nothing of a cast inside
    x = _x(dtype=torch.float32).detach().double().requires_grad_()
    report = gradcheck.check(lambda t: t * 2, (x,), precise=True, seed=0)
    assert report.passed and report.computed_in == {}


def test_data_cast_up_from_float32_still_shows_a_cast_inside():
    # inputs on float32's grid: the outputs are read again with the inputs moved
    # off it (one evaluation), and stay on it only where the function rounds there
    x = _x(dtype=torch.float32).detach().double().requires_grad_()
    report = gradcheck.check(_square_in(torch.float32), (x,), precise=True, seed=0)
    assert report.passed, report.message()
    assert report.computed_in == {0: "float32"}
    wrong = gradcheck.check(_square_in(torch.float32, 2.01), (x,), precise=True, seed=0)
    assert not wrong.passed and "constant factor" in wrong.diagnosis


def test_a_double_precision_function_is_not_taken_for_a_narrow_one():
    report = gradcheck.check(lambda t: t.sin() * t, (_x(),), precise=True, seed=0)
    assert report.passed and report.computed_in == {}


def test_the_grid_of_a_quantizer_says_nothing():
    # k / 16: on every grid, with a few significant bits; no float32 rounding in it
    values = np.round(np.random.default_rng(0).standard_normal(1000) * 16) / 16
    assert narrow_grid(values) is None
    fine = np.round(np.random.default_rng(0).standard_normal(1000) * 1024) / 1024
    assert narrow_grid(fine) is None


def _softmax_in_float32(detached: bool):
    """softmax computed in float32 inside (the command line's fixture); its
    backward (in double, from the saved output) is the exact vjp
    ``y (g - <g, y>)``, whose own derivative autograd takes through ``y``,
    unless ``detached`` cuts it off (wrong)."""
    path = Path(__file__).resolve().parents[1] / "cli" / "fixtures" / "computed_inside.py"
    spec = importlib.util.spec_from_file_location("computed_inside", path)
    fixtures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixtures)
    if not detached:
        return fixtures.Softmax32.apply

    class Detached(fixtures.Softmax32):
        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            y = y.detach()
            return y * (g - (g * y).sum(-1, keepdim=True))
    return Detached.apply


def test_a_second_order_check_carries_the_functions_dtype():
    # the first derivative's values are doubles (y times g), but its dependence on
    # x comes through float32's y: double-precision differences read its stairs
    # (torch's gradgradcheck fails it; this one said "numerical is zero")
    x = _x()
    exact = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, -1), x)
    y = _softmax_in_float32(False)(x)
    (row,) = torch.autograd.grad(y[0, 1], x)
    assert torch.allclose(row, exact[0, 1], rtol=0, atol=1e-6)   # the float32 rounding
    assert not torch.autograd.gradgradcheck(_softmax_in_float32(False), (x,),
                                            raise_exception=False)
    report = gradcheck.check(_softmax_in_float32(False), (x,), precise=True, seed=0, order=2)
    assert report.passed, report.message()
    assert "first derivative was judged at float32's precision" in report.message()
    wrong = gradcheck.check(_softmax_in_float32(True), (x,), precise=True, seed=0, order=2)
    assert not wrong.passed


def _shifted(slope, offset=1e12):
    """(x + 1e12) - 1e12: x rounded to multiples of 2**-13 in double precision
    (an ulp of 1e12), whose derivative is 1 in exact arithmetic."""
    class Shifted(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return (x + offset) - offset

        @staticmethod
        def backward(ctx, g):
            return slope * g
    return Shifted.apply


def test_a_cancellation_onto_a_coarse_grid_is_judged_on_it_and_worded_so():
    # its values lie on float32's grid without a cast: the words say "as when"
    report = gradcheck.check(_shifted(1.0), (_x(),), precise=True, seed=0)
    assert report.passed, report.message()
    assert "as when the function computes in float32 inside" in report.message()
    assert not gradcheck.check(_shifted(2.0), (_x(),), precise=True, seed=0).passed


def test_a_narrow_input_is_a_low_precision_check_already():
    # float32 data returned as doubles: the formula is float32's by its input,
    # no remark of a cast inside (op_db's to(float64) from float32 got one)
    x = _x(dtype=torch.float32)
    report = gradcheck.check(lambda t: t.double(), (x,), precise=True, seed=0)
    assert report.passed and report.computed_in == {}


def test_outputs_that_do_not_move_with_the_inputs_say_nothing():
    # data on float32's grid, and an output that does not follow the inputs' move
    # (op_db's as_strided view reading storage outside its elements): no cast found
    x = _x(dtype=torch.float32).detach().double().requires_grad_()
    held = _x(dtype=torch.float32).detach().double().flip(1)
    report = gradcheck.check(lambda t: held + 0 * t, (x,), precise=True, seed=0)
    assert report.passed and report.computed_in == {}
