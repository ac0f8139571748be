"""A false alarm of ours in op_db's sweep (trapezoid float16 sample 1, forward
over reverse, probed as the sweep checks it): a jvp's own arithmetic on its
directions rounds, and the probed low-precision allowance did not see it.

trapezoid is linear in each input; torch's forward over reverse of it takes,
for an interior element of the gradient in y along a direction ``S`` of x,
``(S_2 - S_1) v/2 + (S_1 - S_0) v/2``, whose exact sum has no ``S_1`` term. So
its float16 rounding is not bounded by ``|J| |S|`` (which has no ``S_1``
term either), and since it depends on the directions, not on the point, the
nearby points measured it as no spread when they all took the same
directions. Each nearby point now takes its own nudged directions
(``gradcheck.large.lowprobed._nudged_plans``). The same sweep's logit
float16 failed on a direction entry below float16's smallest normal number,
which a relative nudge leaves where it is: such entries move by a few
subnormal spacings."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the cases are PyTorch's trapezoid and logit")
pytest.importorskip("expecttest", reason="PyTorch's op_db imports expecttest, which is "
                    "not installed (pip install expecttest)")

from adcheck import gradcheck  # noqa: E402
from adcheck.opinfo import torchdb  # noqa: E402
from gradcheck_support import sweep_seed  # noqa: E402


def _gradient_in_y_along(s, dtype):
    """torch's jvp, along ``s`` in x, of the gradient in y of trapezoid(y, x)
    with v = 1, at one row of three points."""
    y = torch.tensor([0.3, -1.2, 0.7], dtype=dtype)
    x = torch.tensor([0.0, 1.0, 2.5], dtype=dtype)
    v = torch.tensor(1.0, dtype=dtype)

    def gradient(x):
        return torch.func.vjp(lambda y: torch.trapezoid(y, x), y)[1](v)[0]
    return torch.func.jvp(gradient, (x,), (torch.tensor(s, dtype=dtype),))[1]


def test_the_jvps_arithmetic_on_its_direction_rounds_beyond_J_times_S():
    f16 = np.float16
    # S_1 large, S_0 and S_2 small: the sum cancels; values float16 holds exactly
    s = [float(f16(e)) for e in (0.0021839, 0.9, 0.0012970)]
    exact = _gradient_in_y_along(s, torch.float64)[1].item()
    assert exact == pytest.approx(0.5 * (s[2] - s[0]), rel=1e-12)
    found = _gradient_in_y_along(s, torch.float16)[1].item()
    # the composite's own float16 arithmetic, by hand, bit for bit
    a, b, c = (f16(e) for e in s)
    by_hand = f16(f16(f16(c - b) * f16(0.5)) + f16(f16(b - a) * f16(0.5)))
    assert found == float(by_hand)
    # off by more than float16's rounding of |J| |S| = (|S_0| + |S_2|) / 2 allows
    bound = 4 * float(np.finfo(np.float16).eps) * 0.5 * (abs(s[0]) + abs(s[2]))
    assert abs(found - exact) > 10 * bound


@pytest.fixture(scope="module")
def sample():
    entry = torchdb.get("trapezoid")
    return entry, entry.call(entry.sample(1, "float16"))


@pytest.mark.parametrize("seed", ["sweep", 1, 2, 3])
def test_torchs_float16_forward_over_reverse_passes(sample, seed):
    entry, call = sample
    if seed == "sweep":   # the seed op_db's sweep gives it, at which it failed
        seed = sweep_seed("trapezoid", "float16", 1, "fwgrad_bwgrad")
    options = entry.adcheck_options("fwgrad_bwgrad", "float16", precise=True)
    report = gradcheck.check(call.func, call.inputs, name="trapezoid", seed=seed, **options)
    assert report.plan == "probed"
    assert report.passed, str(report)


def _logit_second(dtype, s: float, v: float = 0.5) -> float:
    """torch's forward over reverse of logit at op_db's float16 entry 0.0516,
    along a tangent ``s`` of x, with grad_output ``v``."""
    x = torch.tensor([0.051605224609375], dtype=dtype)
    grad_output = torch.tensor([v], dtype=dtype)

    def gradient(x):
        return torch.func.vjp(torch.logit, x)[1](grad_output)[0]
    return torch.func.jvp(gradient, (x,), (torch.tensor([s], dtype=dtype),))[1].item()


def test_a_subnormal_tangent_loses_digits_a_normal_one_keeps():
    # the same formula at the same point: along a direction entry of 3e-6,
    # below float16's smallest normal number (6.1e-5), the tangent's products
    # round by an absolute spacing that 1 / (x (1 - x))^2 = 418 multiplies;
    # along one 1024 times larger, float16's ordinary rounding
    def error(s):
        s = float(np.float16(s))
        low, exact = _logit_second(torch.float16, s), _logit_second(torch.float64, s)
        return abs(low - exact) / abs(exact)
    assert error(3e-6) > 0.01 > 10 * error(3e-6 * 1024)


def test_torchs_float16_logit_forward_over_reverse_passes_at_the_sweeps_seed():
    entry = torchdb.get("logit")
    call = entry.call(entry.sample(0, "float16"))
    options = entry.adcheck_options("fwgrad_bwgrad", "float16", precise=True)
    report = gradcheck.check(call.func, call.inputs, name="logit",
                             seed=sweep_seed("logit", "float16", 0, "fwgrad_bwgrad"), **options)
    assert report.plan == "probed"
    assert report.passed, str(report)
