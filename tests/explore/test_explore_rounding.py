"""A formula's own rounding at an explored point (gradcheck/explore/wobble.py):
an ill-conditioned point's tolerance takes it in (pinv at condition 5.8e10,
against mpmath), a formula wrong by more than that still fails there, and a
formula that is wrong at a point of the quick pass is a failure with its
evidence (torch's householder_product)."""
from __future__ import annotations

from types import SimpleNamespace

import mpmath
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

import adcheck.refengine as E  # noqa: E402
from adcheck.gradcheck.explore import wobble  # noqa: E402
from test_explore_registry_points import _t, mp_pinv, verdict_at  # noqa: E402
#: the torch engine's --explore point: column 0 at 2.8e10 and -4.2e10, condition 5.8e10
PINV_COND = [[0.4628024457747943, -1.5086003717618903, -1.0238700227191175],
             [28346471735.05345, -1.1818204647406947, 0.480371451522915],
             [-41672822602.06945, 1.1223006972702403, 0.4779954654429359],
             [-0.12516633256561976, -0.7383545678853641, -1.2182246084323505]]


def test_pinv_at_condition_6e10_is_within_the_rounding_of_any_double_formula():
    mpmath.mp.dps = 80
    pinv = mp_pinv
    h = mpmath.mpf("1e-30")
    up = [[mpmath.mpf(v) for v in row] for row in PINV_COND]
    down = [row[:] for row in up]
    up[1][0] += h
    down[1][0] -= h
    exact = float(((pinv(up) - pinv(down)) / (2 * h))[1, 0])   # d pinv[1, 0] / d A[1, 0]
    assert -1.46e-11 < exact < -1.45e-11
    A = torch.tensor(PINV_COND, dtype=torch.float64)
    e = torch.zeros_like(A)
    e[1, 0] = 1.0
    jvp = torch.func.jvp(torch.linalg.pinv, (A,), (e,))[1][1, 0].item()
    B = A.clone().requires_grad_()
    vjp = torch.autograd.grad(torch.linalg.pinv(B)[1, 0], B)[0][1, 0].item()
    # torch's formulas are off by ~2e-6, five orders above the entry, yet within
    # cond(A) * eps * max |J| (0.54): the rounding any float64 formula carries here
    bound = np.linalg.cond(PINV_COND) * np.finfo(float).eps * 0.54
    for value in (jvp, vjp):
        assert 1e-6 < abs(value - exact) < bound
    for engine in (torch, E):
        for forward in (False, True):
            assert verdict_at(engine.linalg.pinv, (_t(PINV_COND, engine),),
                              check_forward_ad=forward) == "pass"


def test_a_pinv_formula_10_percent_off_still_fails_at_condition_6e10():
    # the allowance for the rounding is ~1e-4 of the Jacobian's scale, not 10 %
    class Off(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return torch.linalg.pinv(a)

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            with torch.enable_grad():
                b = a.detach().requires_grad_()
                (right,) = torch.autograd.grad(torch.linalg.pinv(b), b, g)
            return 1.1 * right
    assert verdict_at(Off.apply, (_t(PINV_COND, torch),)) == "fail"


def _jacobian(*blocks):
    return SimpleNamespace(blocks={(0, i): np.asarray(b, dtype=float) for i, b in enumerate(blocks)})


def test_the_move_is_relative_for_an_elementwise_formula_and_in_norm_for_a_coupled_one():
    x = np.array([1e-30, 40.0, 0.0, 40.0, -2.0])
    delta = wobble.step({0: x}, [_jacobian(np.diag([1.0, 2.0, 0.0, 3.0, 4.0]))], seed=0)[0]
    # elementwise: each entry moved by WOBBLE of itself, a zero not at all
    assert np.array_equal(np.abs(delta), wobble.WOBBLE * np.abs(x))
    coupled = wobble.step({0: x}, [_jacobian(np.ones((1, 5)))], seed=0)[0]
    # a reduction: every nonzero entry by WOBBLE of the largest, zeros kept, the tie kept
    assert np.array_equal(np.abs(coupled), wobble.WOBBLE * 40.0 * (x != 0))
    assert coupled[1] == coupled[3]
    # two inputs are never coupled with each other (x / y: each judged at its own scale)
    two = wobble.step({0: np.array([40.0]), 1: np.array([1e-30])},
                      [_jacobian([[1.0]], [[1.0]])], seed=0)
    assert abs(two[1][0]) == wobble.WOBBLE * 1e-30


def test_the_allowance_is_the_largest_change_in_a_coupled_block_scaled_to_eps():
    here = _jacobian([[1.0, 0.0], [0.0, 2.0]])
    there = _jacobian([[1.0 + 2 ** -30, 0.0], [0.0, 2.0]])
    (rows,) = wobble.allowance(here, there, {0: 2}, 2.0 ** -52).values()
    # the rows are apart (diagonal): only row 0 changed
    assert rows[0] == 2 ** -30 * wobble.SPAN * 2.0 ** -52 / wobble.WOBBLE and rows[1] == 0.0
    (rows,) = wobble.allowance(_jacobian([[1.0, 1.0], [0.0, 2.0]]), there, {0: 2},
                               2.0 ** -52).values()
    assert rows[0] == rows[1] > 0      # coupled through row 0: one block


#: the quick pass's point of torch's linalg.householder_product, complex128 (op_db's
#: sample 0 with rows 3 and 4 of A and tau 0 to 3 at magnitudes ~20 to 40): shrunk
HH_A = [(1.2355011647015677 + 0.8892210092254182j), (0.3794212276224038 + 1.1428083722911522j),
        (0.4501281013775693 - 1.9703869271305816j), (-0.8455810271401689 - 1.3343758310941354j),
        (-0.469739349595685 - 0.02390927661986586j), (-0.623373500130362 - 0.580572184579712j),
        (-0.531046855892213 + 1.9765274045437575j), (0.8980272607554354 - 0.5860988567655316j),
        (1.5796869191796619 - 0.1627999738999817j), (0.35157735921311595 + 1.592038573355158j),
        (-1.3662485969058666 - 0.08261669055596421j), (-0.22491582570834634 + 1.2575839570101879j),
        (1.7138310943866193 - 1.6897028936712446j), (-1.3452690434678507 - 0.08516300540013377j),
        (1.1166264171899818 - 0.1806289632817042j), (-1.8827572208327854 + 1.4493521178677025j),
        (9.33327734708774 - 27.522499072759068j), (-14.727874099509352 - 23.878733139913148j),
        (28.894346005840525 - 22.364981251172402j), (10.45321315906324 - 20.171038034333172j),
        (20.178533661271604 + 31.86937647496838j), (12.805271352520059 - 19.60907791563579j),
        (22.458109885850043 - 14.283242576045504j), (-2.1564165189633058 - 14.03902050716391j),
        (20.022690264110675 - 28.982128126810295j)]
HH_TAU = [(4.9007201546672325 - 16.340618101841162j), (-20.10190765341188 + 20.6348450857437j),
          (33.85725969471053 + 2.7776974029782973j), (17.69796911846665 - 7.326137040405331j),
          (-0.41804278208096823 - 1.9219903838747352j)]


def _mp_householder(A, tau):
    """Q = H_0 ... H_4, H_i = I - tau_i v_i v_i^H, v_i = (0, ..., 1, A[i+1:, i])."""
    Q = mpmath.eye(5)
    for i in range(5):
        v = mpmath.matrix(5, 1)
        v[i] = 1
        for r in range(i + 1, 5):
            v[r] = A[r, i]
        Q = Q * (mpmath.eye(5) - tau[i] * v * v.H)
    return Q


def test_torch_householder_product_at_the_quick_pass_point_is_wrong_in_tau():
    mpmath.mp.dps = 40
    A = mpmath.matrix([[mpmath.mpc(z.real, z.imag) for z in HH_A[r * 5:r * 5 + 5]]
                       for r in range(5)])
    tau = [mpmath.mpc(z.real, z.imag) for z in HH_TAU]
    At = torch.tensor(HH_A, dtype=torch.complex128).reshape(5, 5)
    tt = torch.tensor(HH_TAU, dtype=torch.complex128)
    forward = torch.linalg.householder_product(At, tt).numpy()
    model = np.array(_mp_householder(A, tau).tolist(), dtype=complex)
    assert np.abs(forward - model).max() < 1e-15 * np.abs(model).max()   # the model is torch's
    At.requires_grad_()
    tt.requires_grad_()
    (g,) = torch.autograd.grad(torch.linalg.householder_product(At, tt)[4, 4].imag, tt)
    h = mpmath.mpf("1e-30")
    for unit, formula in ((1, g[4].real.item()), (1j, g[4].imag.item())):
        up, down = list(tau), list(tau)
        up[4] += h * unit
        down[4] -= h * unit
        exact = float(((_mp_householder(A, up) - _mp_householder(A, down)) / (2 * h))[4, 4].imag)
        assert abs(formula - exact) > 0.2 * abs(exact)      # 5.5e15 against torch's -7.2e15
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        torch.autograd.gradcheck(torch.linalg.householder_product, (At, tt))
    assert verdict_at(torch.linalg.householder_product, (At, tt)) == "fail"
