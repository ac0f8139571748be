"""Low-precision false alarms of the whole-op_db sweep near a pole (issue 18,
bench/opdb_sweep_alldtypes.md, group A): the op that showed the class, the
check that now passes, and mpmath saying the formula is right there; and a
formula that is wrong by a little near the same pole, still caught.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="opinfo.torchdb adapts PyTorch's op_db; "
                            "torch is not installed")
pytest.importorskip("expecttest", reason="PyTorch's op_db imports expecttest, which is "
                    "not installed (pip install expecttest)")
mpmath = pytest.importorskip("mpmath", reason="the true derivatives come from mpmath")

from adcheck import gradcheck  # noqa: E402
from adcheck.gradcheck.core.evaluation import Evaluator  # noqa: E402
from adcheck.gradcheck.core.problem import Problem  # noqa: E402
from adcheck.gradcheck.lowprec.widening import second_differences  # noqa: E402
from adcheck.opinfo import torchdb  # noqa: E402

U32 = 2.0 ** -24
#: digamma's op_db sample 0 in float32, coordinate 9: 0.0031 from the pole at -6
NEAR_POLE = -5.996856212615967


def test_second_differences_shrink_their_step_near_a_pole():
    # the first step (2**-10 of |x|, 0.0059) straddles the pole 0.0031 away
    x = torch.tensor([NEAR_POLE, 2.5], dtype=torch.float64, requires_grad=True)
    second, _ = second_differences(Evaluator(Problem(torch.digamma, (x,))))
    H = np.diag(second[0, 0])
    mpmath.mp.dps = 30
    true = [float(mpmath.polygamma(2, v)) for v in x.tolist()]
    np.testing.assert_allclose(H, true, rtol=1e-3)


def test_digamma_near_a_pole_in_float32_is_right_within_a_rounding_of_its_input():
    entry = torchdb.get("digamma")
    sample = entry.sample(0, torch.float32)
    call = entry.call(sample)
    x = call.inputs[0]
    assert float(x.detach()[9]) == NEAR_POLE
    for check in ("reverse", "forward"):
        report = gradcheck.check(call.func, call.inputs, name="digamma", seed=0,
                                 **entry.adcheck_options(check, torch.float32, precise=True))
        assert report.passed, report.message()
    # torch's float32 trigamma is 1000 u from the truth there, yet it is the truth at
    # an input moved by a quarter of a rounding (its reflection formula multiplies
    # by pi rounded to float32): a right formula at a condition number of 3800
    leaf = x.detach().clone().requires_grad_()
    (grad,) = torch.autograd.grad(torch.digamma(leaf).sum(), leaf)
    mpmath.mp.dps = 30
    true = mpmath.polygamma(1, NEAR_POLE)
    relative = abs(float(grad[9]) - float(true)) / float(true)
    moved = (float(grad[9]) - float(true)) / float(mpmath.polygamma(2, NEAR_POLE) * NEAR_POLE)
    assert relative > 500 * U32
    assert abs(moved) < U32 / 2


class _OffTrigamma(torch.autograd.Function):
    """digamma whose derivative is off by a relative 1e-3."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.digamma(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.polygamma(1, x) * (1 + 1e-3)


def test_a_derivative_off_by_1e_3_near_the_pole_is_still_caught_in_float32():
    x = torch.tensor([NEAR_POLE, -2.3150, 3.0175], dtype=torch.float32, requires_grad=True)
    report = gradcheck.check(_OffTrigamma.apply, (x,), precise=True)
    assert not report.passed
    assert report.failures[0].where == (0, 0)


def _grid_case(index):
    entry = torchdb.get("grid_sampler_2d")
    sample = entry.sample(index, torch.bfloat16)
    return entry, sample, entry.call(sample)


def _pixel(coord, size, align, dtype):
    # the unnormalization of grid_sampler's bilinear mode, each step rounded to dtype
    one = torch.tensor(1, dtype=dtype)
    if align:
        return (((coord + one).to(dtype) / 2).to(dtype) * (size - 1)).to(dtype)
    return ((((coord + one).to(dtype) * size).to(dtype) - 1).to(dtype) / 2).to(dtype)


@pytest.mark.parametrize("index", [0, 1])
def test_grid_sampler_bfloat16_rounds_its_coordinates_onto_a_pixel_boundary(index):
    entry, sample, call = _grid_case(index)
    report = gradcheck.check(call.func, call.inputs, name="grid_sampler_2d", seed=0,
                             **entry.adcheck_options("reverse", torch.bfloat16, precise=True))
    assert report.passed, report.message()
    # the evidence: torch's bfloat16 vjp for the grid is float64's at the pixel
    # coordinates its kernel computes in bfloat16, which cross a pixel boundary
    # for some points, where the derivative at the exact coordinates jumps
    inp, grid = call.inputs[0].detach(), call.inputs[1].detach()
    mode, padding, align = sample.args[1:]
    height, width = inp.shape[2:]
    exact = [_pixel(grid[..., k].double(), n, align, torch.float64) for k, n in
             ((0, width), (1, height))]
    rounded = [_pixel(grid[..., k], n, align, torch.bfloat16).double() for k, n in
               ((0, width), (1, height))]
    crossed = sum(int((torch.floor(e) != torch.floor(r)).sum()) for e, r in zip(exact, rounded))
    assert crossed > 0

    def back(n, i):
        return (2 * i / (n - 1) - 1) if align else ((2 * i + 1) / n - 1)
    moved = torch.stack([back(width, rounded[0]), back(height, rounded[1])], -1)
    leaf = grid.clone().requires_grad_()
    out = torch.grid_sampler_2d(inp, leaf, mode, padding, align)
    weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(0)).to(out.dtype)
    (low,) = torch.autograd.grad(out, leaf, weights)

    def wide_vjp(g):
        g = g.clone().requires_grad_()
        o = torch.grid_sampler_2d(inp.double(), g, mode, padding, align)
        return torch.autograd.grad(o, g, weights.double())[0]
    at_exact, at_rounded = wide_vjp(grid.double()), wide_vjp(moved)
    scale = float(at_exact.abs().max())
    assert float((low.double() - at_rounded).abs().max()) < 0.01 * scale
    assert float((low.double() - at_exact).abs().max()) > 0.1 * scale


class _OffGridSampler(torch.autograd.Function):
    """grid_sampler_2d whose gradient for the grid is twice the truth."""

    @staticmethod
    def forward(ctx, inp, grid, mode, padding, align):
        ctx.save_for_backward(inp, grid)
        ctx.args = (mode, padding, align)
        return torch.grid_sampler_2d(inp, grid, mode, padding, align)

    @staticmethod
    def backward(ctx, grad):
        inp, grid = ctx.saved_tensors
        with torch.enable_grad():
            g = grid.detach().requires_grad_()
            out = torch.grid_sampler_2d(inp.detach(), g, *ctx.args)
            (gg,) = torch.autograd.grad(out, g, grad)
        return None, gg * 2, None, None, None


def test_a_grid_gradient_twice_the_truth_is_still_caught_in_bfloat16():
    _, sample, call = _grid_case(0)
    inp = call.inputs[0].detach()
    grid = call.inputs[1].detach().requires_grad_()
    report = gradcheck.check(lambda g: _OffGridSampler.apply(inp, g, *sample.args[1:]),
                             (grid,), precise=True)
    # bfloat16 resolves about 0.45 relative here (the stated precision): a factor 2
    # is caught on the columns away from a kink
    assert not report.passed
    assert report.failures[0].in_idx == 0
