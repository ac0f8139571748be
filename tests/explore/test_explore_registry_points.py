"""The registry's explored points (bench/explore.md): each a real formula error
fixed against an independent value, or a false alarm the explore logic no
longer raises, with evidence that the formula is right there (mpmath, the
function's own identities, PyTorch)."""
from __future__ import annotations

import math
from types import SimpleNamespace

import mpmath
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

import adcheck.refengine as E  # noqa: E402
from adcheck.gradcheck.api import check, run  # noqa: E402
from adcheck.gradcheck.core.options import Options  # noqa: E402
from adcheck.gradcheck.explore import catalogue  # noqa: E402
from adcheck.gradcheck.explore.beside import fd_step  # noqa: E402
from adcheck.gradcheck.explore.search import Explorer  # noqa: E402
from adcheck.gradcheck.numerics.precise import SAFETY  # noqa: E402

F64 = E.float64


def _t(values, engine=E):
    return engine.tensor(values, dtype=engine.float64, requires_grad=True)


def verdict_at(func, inputs, **keywords) -> str:
    """What exploring says at exactly these inputs: pass, fail, kink,
    nondiff, unresolved or domain (``keywords``: more of the check's options)."""
    report = SimpleNamespace(seed=0, name="f", results=[])   # what the search reads of it
    explorer = Explorer(run, func, inputs, Options.from_keywords(
        seed=0, precise=True, explore=True, explore_budget=60.0, **keywords), report,
        False, False)
    return explorer.try_point({})[0]


def _grad(func, *inputs):
    return [g.numpy() for g in E.autograd.grad(func(*inputs), inputs)]


# ----- real findings, fixed in refengine ----------------------------------------
def test_elu_at_1000_has_derivative_one_as_torch():
    x = _t(1000.0)
    (g,) = E.autograd.grad(E.nn.functional.elu(x), x, create_graph=True)
    (gg,) = E.autograd.grad(g, x)
    assert g.item() == 1.0 and gg.item() == 0.0    # d/dx x = 1, d2/dx2 x = 0
    xt = _t(1000.0, torch)
    assert torch.autograd.grad(torch.nn.functional.elu(xt), xt)[0].item() == 1.0
    assert verdict_at(E.nn.functional.elu, (_t([1000.0, -3.0]),)) == "pass"


RANK2 = [[-0.527562317731542, 0.7565436047889614, 0.16416932481987362],
         [0.034774464879288626, -1.7070137032502757, -0.6710586138667689],
         [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]


def test_svdvals_at_rank_deficiency_is_finite_and_right():
    # s1 + 2 s2 is smooth at this rank-2 matrix (distinct nonzero values): its
    # gradient against central differences of numpy's singular values
    w = np.array([1.0, 2.0, 0.0])
    (g,) = _grad(lambda A: (E.linalg.svdvals(A) * E.tensor(w)).sum(), _t(RANK2))
    A, h = np.array(RANK2), 1e-6
    fd = np.zeros_like(A)
    for k in np.ndindex(A.shape):
        up, down = A.copy(), A.copy()
        up[k] += h
        down[k] -= h
        fd[k] = (w @ np.linalg.svd(up, compute_uv=False)
                 - w @ np.linalg.svd(down, compute_uv=False)) / (2 * h)
    assert np.all(np.isfinite(g)) and np.allclose(g, fd, atol=1e-8)
    At = _t(RANK2, torch)
    gt = torch.autograd.grad((torch.linalg.svdvals(At) * torch.tensor(w)).sum(), At)[0]
    assert np.allclose(g, gt.numpy(), atol=1e-12)
    assert verdict_at(E.linalg.svdvals, (_t(RANK2),)) in ("pass", "kink")


def test_eigvalsh_at_a_threefold_eigenvalue_sums_to_the_trace():
    # sum of the eigenvalues is the trace: its gradient is the identity at every A
    (g,) = _grad(lambda A: E.linalg.eigvalsh(A).sum(), _t(np.zeros((3, 3))))
    assert np.array_equal(g, np.eye(3))


#: complex, rank 1 (column 0 only): s2 = s3 = 0, where the full explore of complex
#: svdvals failed on both engines until the quotients beside a point were extrapolated
RANK1 = [[-1.6337078512790046 - 0.2639282150790843j, 0, 0], [0, 0, 0],
         [-1.0518182509540277 - 0.5045739615517869j, 0, 0],
         [0.1091031671253932 - 0.530253380953901j, 0, 0]]


def _s(A) -> np.ndarray:
    return np.linalg.svd(A, compute_uv=False)


def test_complex_svdvals_at_a_repeated_zero_singular_value_picks_a_limiting_gradient():
    A = np.array(RANK1, dtype=complex)
    D = np.where(A == 0, 1 + 1j, 0)      # every zero entry moved: columns 1 and 2 stay equal
    assert all(_s(A + t * D)[2] < 1e-15 for t in (1e-3, -1e-3, 1e-6, -1e-6))  # s3 stays 0
    At = torch.tensor(A, requires_grad=True)
    G1, G2 = (torch.autograd.grad(torch.linalg.svdvals(At)[k], At)[0].numpy() for k in (1, 2))
    slope = float(np.real(np.vdot(G2, D)))       # the formula's d s3 along D (real coordinates)
    assert abs(slope) > 0.5                      # not the 0 of both sides at A ...
    # ... but the derivative at points as near A as one likes: A + d (2 G1 + G2) has
    # s2 = 2d, s3 = d, simple, with the singular vectors the formula picked
    for d in (1e-3, 1e-4):
        y, h = A + d * (2 * G1 + G2), d * 1e-4
        assert abs(_s(y)[2] - d) < 1e-12
        assert abs((_s(y + h * D)[2] - _s(y - h * D)[2]) / (2 * h) - slope) < 1e-5
    assert verdict_at(torch.linalg.svdvals, (At,)) in ("pass", "kink")
    ours = E.tensor(RANK1, dtype=E.complex128, requires_grad=True)
    assert verdict_at(E.linalg.svdvals, (ours,)) in ("pass", "kink")


# ----- points where the function is not differentiable: never a failure ---------
def test_hypot_and_xlogy_at_zero_are_torchs_nan_and_not_differentiable():
    for name in ("hypot", "xlogy"):
        ours = _grad(lambda a, b: getattr(E, name)(a, b).sum(), _t([0.0, 1.0]), _t([0.0, 2.0]))
        a, b = _t([0.0, 1.0], torch), _t([0.0, 2.0], torch)
        theirs = torch.autograd.grad(getattr(torch, name)(a, b).sum(), (a, b))
        for o, t in zip(ours, theirs):
            assert np.array_equal(o, t.numpy(), equal_nan=True), name
        assert verdict_at(getattr(E, name), (_t([0.0, 1.0]), _t([0.0, 2.0]))) == "nondiff"


def test_decompositions_at_degenerate_matrices_are_not_differentiable():
    # the zero matrix: every eigenvector basis is one; a rank-2 4x3 matrix: Q's
    # third column and U's third are any unit vector of a complement
    assert verdict_at(E.linalg.eigh, (_t(np.diag([0.0, 0.0, 2.06])),)) == "nondiff"
    assert verdict_at(lambda A: E.linalg.svd(A, full_matrices=False), (_t(RANK2),)) == "nondiff"
    assert verdict_at(E.linalg.qr, (_t(RANK2),)) == "nondiff"


# ----- formulas right where the difference quotients are not --------------------
def test_gelu_at_minus_7_the_forward_cancels_not_the_formula():
    x = -7.312700532869035
    mpmath.mp.dps = 40
    X = mpmath.mpf(x)
    exact = mpmath.ncdf(X) + X * mpmath.npdf(X)     # d/dx x Phi(x)
    (g,) = _grad(E.nn.functional.gelu, _t(x))
    # the formula's own Phi(x) = (1 + erf) / 2 rounds too, but to 1e-5 of the whole
    assert abs(g - float(exact)) <= 1e-5 * abs(float(exact))
    # the forward's 1 + erf is ~1e-13 and rounds in steps of 1e-16: its quotient is off
    h = 2.0 ** -17
    quotient = (E.nn.functional.gelu(E.tensor(x + h)).item()
                - E.nn.functional.gelu(E.tensor(x)).item()) / h
    assert abs(quotient - float(exact)) > 0.5 * abs(float(exact))
    # the wider steps resolve the slope to within those stairs, which the deeper
    # ones show (gradcheck.numerics.stairs): a verdict, right to its error estimate,
    # which the stairs leave at about 1 % of the entry (measured: 1.1 %)
    report = check(E.nn.functional.gelu, (_t(x),), precise=True, seed=0, explore=False)
    numerical = report.jacobians["numerical"]
    found, error = numerical.blocks[0, 0][0, 0], numerical.errors[0, 0][0, 0]
    assert abs(found - float(exact)) <= SAFETY * error <= 2e-2 * abs(float(exact))
    assert verdict_at(E.nn.functional.gelu, (_t(x),)) == "pass"


def test_fmod_by_a_tiny_divisor_is_resolved_by_steps_of_its_own_scale():
    x, y = 1.3955664146288642, 7.033790585811202e-09
    # d/dy fmod(x, y) = -trunc(x / y), exactly, between the jumps (every ~y^2/x)
    exact = -int(mpmath.floor(mpmath.mpf(x) / mpmath.mpf(y)))
    (_, gy) = _grad(E.fmod, _t(x), _t(y))
    assert gy == exact
    # the wide steps (2**-11 down to 2**-42) cross thousands of jumps and were no
    # evidence ("unresolved"); y's own ladder goes down to y / 4 * 2**-31, 8e-19,
    # below the jumps' spacing (3.5e-17), where the quotient is -trunc(x / y)
    assert y / 4 * 2.0 ** -31 < y * y / x
    assert verdict_at(E.fmod, (_t([x, 0.5]), _t([y, 0.3]))) == "pass"


def test_fmod_by_1e_minus_30_beside_entries_of_two_is_not_a_failure():
    # the torch engine's run: d/dy = -trunc(x / y) = -8.0e29 (exact), but the jumps,
    # ~y^2 / x = 1e-60 apart, are below one unit in the last place of y (1.7e-46): the
    # quotients, noise within [0, y), agreed only within the noise of the output's
    # largest entry (1.9), not this entry's
    x = [[0.8010677, 1.2, 0.7], [1.1, 0.9, 1.3]]
    y = [[1e-30, 1.93, 1.39], [1.54, 1.40, 1.36]]
    exact = -int(mpmath.floor(mpmath.mpf(x[0][0]) / mpmath.mpf(y[0][0])))
    assert exact < -8e29 and y[0][0] ** 2 / x[0][0] < math.ulp(y[0][0])
    (_, gy) = _grad(lambda a, b: E.fmod(a, b).sum(), _t(x), _t(y))
    assert gy[0, 0] == float(exact)
    for func in (torch.fmod, torch.remainder, E.fmod, E.remainder):
        engine = torch if func in (torch.fmod, torch.remainder) else E
        for forward in (False, True):
            assert verdict_at(func, (_t(x, engine), _t(y, engine)),
                              check_forward_ad=forward) != "fail"


FMOD_X = [[0.8010676727992122, 0.5187680158980307, 0.13313575661467925],
          [0.725797067495752, -0.8497391236010099, -0.5922186550170845]]
FMOD_Y = [[5.532167821563913e-09, 1.9302568578554313, 1.392310022951476],
          [109110343691.60712, 1.3955664146288642, 1.3577022514981043]]


def test_fmod_by_5e_minus_9_beside_a_divisor_of_1e11_is_not_a_failure():
    # `adcheck ops --engine torch fmod --check forward --explore`: the direction moving
    # every entry together takes its step, 2^-5, from the divisor of 1.1e11, and moves
    # the divisor of 5.5e-9 across millions of fmod's jumps (~y^2 / x = 4e-17 apart):
    # its secants (+-0.1) are no derivative; d/dy = -trunc(x / y) is exact between jumps
    x, y = FMOD_X[0][0], FMOD_Y[0][0]
    exact = -int(mpmath.floor(mpmath.mpf(x) / mpmath.mpf(y)))   # x, y > 0: trunc = floor
    assert exact == -144801766 and fd_step(FMOD_Y[1][0], 2.0 ** -52) > 1e6 * y
    for engine, funcs in ((torch, (torch.fmod, torch.remainder)), (E, (E.fmod, E.remainder))):
        for func in funcs:
            a, b = _t(FMOD_X, engine), _t(FMOD_Y, engine)
            (gy,) = engine.autograd.grad(func(a, b).sum(), b)
            assert gy[0, 0].item() == exact
            for forward in (False, True):
                assert verdict_at(func, (a, b), check_forward_ad=forward) != "fail"


def test_round_to_decimals_at_1e11_steps_every_few_ulps():
    x = -668042324509.6691
    (g,) = _grad(lambda t: E.round(t, decimals=3), _t(x))
    assert g == 0.0         # a staircase: 0 between its steps
    assert math.ulp(x) * 8 < 1e-3 < math.ulp(x) * 16   # the steps, in units in the last place
    assert verdict_at(lambda t: E.round(t, decimals=3), (_t([x]),)) != "fail"


PINV = [[0.4628024457747943, -1.5086003717618903, -1.0238700227191175],
        [-0.9825445531050839, 100000000.0, 0.480371451522915],
        [2.082266806760065, 1.1223006972702403, 0.4779954654429359],
        [-0.12516633256561976, -0.7383545678853641, -1.2182246084323505]]


def mp_pinv(rows):
    """(A^T A)^-1 A^T at mpmath's precision (A of full column rank)."""
    A = mpmath.matrix(rows)
    return (A.T * A) ** -1 * A.T


def test_pinv_of_an_ill_conditioned_matrix_within_its_own_rounding():
    mpmath.mp.dps = 60
    pinv = mp_pinv
    base, h = pinv(PINV), mpmath.mpf("1e-35")
    moved = [[mpmath.mpf(v) for v in row] for row in PINV]
    moved[0][1] += h
    exact = float(((pinv(moved) - base) / h)[0, 0])      # d pinv[0, 0] / d A[0, 1]
    A = _t(PINV)
    g = E.autograd.grad(E.linalg.pinv(A)[0, 0], A)[0].numpy()[0, 1]
    # both refengine's and torch's formulas are off by ~1e-9 here: cond(A) ~ 1e8
    # times eps of the Jacobian's scale (0.37), the rounding of any float64 formula
    assert abs(g - exact) < 1e8 * np.finfo(float).eps * 0.37 * 10
    assert verdict_at(E.linalg.pinv, (_t(PINV),)) in ("pass", "unresolved")


def test_slogdet_at_entries_of_1e_minus_300():
    A = np.array([[2.0, 0.5, -1.0], [0.3, 1.5, 0.2], [-0.7, 0.4, 1.2]]) * 1e-300
    (g,) = _grad(lambda t: E.linalg.slogdet(t)[1], _t(A))
    # d log|det A| / dA = A^{-T}: mpmath at 50 digits
    mpmath.mp.dps = 50
    exact = np.array((mpmath.matrix(A.tolist()) ** -1).T.tolist(), dtype=float)
    assert np.allclose(g, exact, rtol=1e-12)
    assert verdict_at(E.linalg.slogdet, (_t(A),)) == "pass"


# ----- real formula errors of torch's (and refengine's) kept as found -----------
def test_torch_polar_at_zero_modulus_drops_the_derivative_in_the_modulus():
    # polar(r, t) = r e^{it} is linear in r: d Re polar / dr = cos t at every r, 0 too
    r, t = [0.0, 1.0], [0.0959, 0.3]
    exact = [math.cos(v) for v in t]
    (gr, _) = _grad(lambda a, b: E.polar(a, b).real.sum(), _t(r), _t(t))
    assert np.allclose(gr, exact, rtol=1e-15)                # refengine: right
    a, b = _t(r, torch), _t(t, torch)
    (gt, _) = torch.autograd.grad(torch.polar(a, b).real.sum(), (a, b))
    assert gt[0].item() == 0.0 and abs(gt[0].item() - exact[0]) > 0.99   # torch 2.13: 0
    assert verdict_at(torch.polar, (_t(r, torch), _t(t, torch))) == "fail"
    assert verdict_at(E.polar, (_t(r), _t(t))) == "pass"


def test_angle_at_a_modulus_of_1e_minus_300_overflows_in_both_engines():
    z = complex(8.943441785229437e-301, -4.473795819459368e-301)
    mpmath.mp.dps = 30
    x, y = mpmath.mpf(z.real), mpmath.mpf(z.imag)
    # the conjugate Wirtinger gradient d/dx + i d/dy of atan2(y, x): finite, ~1e299
    exact = complex(float(-y / (x * x + y * y)), float(x / (x * x + y * y)))
    assert np.isfinite(exact) and abs(exact) > 1e299
    for engine in (E, torch):
        w = engine.tensor(z, dtype=engine.complex128, requires_grad=True)
        (g,) = engine.autograd.grad(engine.angle(w), w)
        assert not np.isfinite(complex(g.item()))   # |z|^2 underflows: inf (ours), NaN (torch)
        w = engine.tensor([z], dtype=engine.complex128, requires_grad=True)
        assert verdict_at(engine.angle, (w,)) == "fail"


def test_complex_inverse_trig_at_1e300_is_nan_in_both_engines_where_mpmath_is_finite():
    z = complex(7.566378275441422e+299, 6.5383422817200444e+299)
    mpmath.mp.dps = 30
    exact = complex(1 / mpmath.sqrt(1 - mpmath.mpc(z) ** 2))     # d asin / dz, ~1e-300
    assert 0 < abs(exact) < 1e-299
    for engine in (E, torch):
        w = engine.tensor(z, dtype=engine.complex128, requires_grad=True)
        (g,) = engine.autograd.grad(engine.asin(w).real, w)
        assert np.isnan(complex(g.item()))     # 1 - z^2 overflows: the formula's NaN
    # the others (and their in-place forms) alike: finite derivatives (those of atan and
    # atanh, ~1e-600, round to 0), NaN from both engines' formulas
    Z = mpmath.mpc(z)
    for name, exact in (("acos", -1 / mpmath.sqrt(1 - Z ** 2)), ("atan", 1 / (1 + Z ** 2)),
                        ("asinh", 1 / mpmath.sqrt(1 + Z ** 2)), ("atanh", 1 / (1 - Z ** 2))):
        assert np.isfinite(complex(exact)), name
        for engine in (E, torch):
            w = engine.tensor(z, dtype=engine.complex128, requires_grad=True)
            (g,) = engine.autograd.grad(getattr(engine, name)(w).real, w)
            assert np.isnan(complex(g.item())), name


def test_torch_prod_at_an_entry_of_1e_minus_308_underflows_to_zero():
    # d prod(x) / dx0 is the product of the others, 5.04e-18 (mpmath); the whole
    # product, 1.1e-325, underflows to 0, and torch 2.13 divides it by x0: 0, in
    # reverse and forward mode (the registry's point: 124 others, 1.7e-56)
    x = [2.2250738585072014e-308, 1e-3, -2e-3, 3e-3, 4e-3, -5e-3, 6e-3, 7e-3]
    mpmath.mp.dps = 30
    exact = float(mpmath.fprod([mpmath.mpf(v) for v in x[1:]]))
    assert abs(exact - 5.04e-18) < 1e-30 and x[0] * exact == 0.0
    t = _t(x, torch)
    assert torch.autograd.grad(torch.prod(t), t)[0][0].item() == 0.0
    import torch.autograd.forward_ad as fw
    with fw.dual_level():
        tangent = torch.zeros(len(x), dtype=torch.float64)
        tangent[0] = 1.0
        dual = fw.make_dual(t.detach(), tangent)
        assert fw.unpack_dual(torch.prod(dual)).tangent.item() == 0.0
    ours = _t(x)
    (g,) = _grad(E.prod, ours)
    assert abs(g[0] - exact) <= 1e-15 * exact    # refengine: right (the others subnormal)
    for mode in ({}, {"check_forward_ad": True, "check_backward_ad": False}):
        assert verdict_at(torch.prod, (_t(x, torch),), **mode) == "fail"
        assert verdict_at(E.prod, (_t(x),), **mode) == "pass"


# ----- errors and false alarms of the explore logic itself, fixed ---------------
def test_a_matrix_of_one_row_has_no_repeated_singular_value_to_explore():
    # squeeze's (2, 1, 3) sample and cat's (1, 3) input raised IndexError in the
    # catalogue under --explore: such a matrix has one singular value
    for shape in ((2, 1, 3), (1, 3), (3, 1)):
        made = catalogue.full({0: np.ones(shape)}, [0])
        assert made and all(c.kind != "repeated-singular-value" for c in made)
    (low,) = [c.arrays[0] for c in catalogue.full({0: np.ones((2, 4, 3))}, [0])
              if c.kind == "repeated-singular-value"]
    s = np.linalg.svd(low, compute_uv=False)      # per batch entry: s1 = s2 > s3
    assert np.allclose(s[:, 0], s[:, 1]) and np.all(s[:, 1] > s[:, 2] + 0.5)
    x = _t(np.arange(1.0, 7.0).reshape(2, 1, 3))
    report = check(E.squeeze, (x,), explore=True, explore_budget=0.5)
    assert report.passed and report.counts["explore"]["tried"] > 0


def test_xlogy_second_order_at_zero_zero_is_outside_the_checked_functions_domain():
    # xlogy is not continuous at (0, 0): x log y = -1 along y = exp(-1/x), x > 0
    # (mpmath), while xlogy(0, 0) = 0; its first derivative there is torch's NaN
    # (d/dy = x / y = 0 / 0), so a second-order check has nothing finite to
    # differentiate: outside its domain, skipped and counted, never a failure
    mpmath.mp.dps = 30
    for x in ("1e-3", "1e-9", "1e-30"):
        X = mpmath.mpf(x)
        assert abs(X * mpmath.log(mpmath.exp(-1 / X)) + 1) < mpmath.mpf("1e-25")
    a, b = _t([0.0, 1.0], torch), _t([0.0, 2.0], torch)
    ga, gb = torch.autograd.grad(torch.xlogy(a, b).sum(), (a, b), create_graph=True)
    assert ga[0].item() == 0.0 and math.isnan(gb[0].item())
    for mode in ({}, {"check_forward_ad": True}):
        for engine, func in ((torch, torch.xlogy), (E, E.xlogy)):
            given = (_t([0.0, 1.0], engine), _t([0.0, 2.0], engine))
            assert verdict_at(func, given, order=2, **mode) == "domain"


#: the registry's linalg.svd point: a full-rank 4x3 matrix scaled to entries ~1e-300
SVD_TINY = [[-1.4043508869045687e-301, -1e-300, -2.621483436507028e-301],
            [-3.6993699728125874e-301, 2.7220348967933574e-301, 2.5803248394490227e-301],
            [-4.5641389389824717e-302, -5.732459106524433e-301, -5.7960401908890215e-301],
            [6.2555220311569195e-301, -3.895710583195452e-301, 4.3601817014731754e-301]]


def _svd_gauge(engine, A):
    """The registry's linalg.svd output: S and U diag(1, 2, 3) Vh (phase-free)."""
    U, S, Vh = engine.linalg.svd(A, full_matrices=False)
    return S, (U * engine.tensor([1.0, 2.0, 3.0], dtype=A.dtype)).matmul(Vh)


def _mp_gauge_00(rows) -> mpmath.mpf:
    U, S, V = mpmath.svd_r(mpmath.matrix(rows), full_matrices=False)
    return sum(U[0, k] * (k + 1) * V[k, 0] for k in range(3))


def test_svd_at_singular_values_of_1e_minus_300_is_nan_in_both_engines():
    # distinct singular values (1.3e-300, 8.9e-301, 4.4e-301): differentiable, but the
    # formula's s_i^2 - s_j^2 underflows to 0 and 0 / 0 gives NaN in both engines
    mpmath.mp.dps = 60
    h = mpmath.mpf("1e-330")
    up = [[mpmath.mpf(v) for v in row] for row in SVD_TINY]
    down = [row[:] for row in up]
    up[0][0] += h
    down[0][0] -= h
    exact = float((_mp_gauge_00(up) - _mp_gauge_00(down)) / (2 * h))   # d P[0, 0] / d A[0, 0]
    assert 4.3e299 < exact < 4.4e299          # finite: P(cA) = P(A), so 1/c times P's at A
    big = torch.tensor(np.array(SVD_TINY) * 1e300, requires_grad=True)
    at_scale = torch.autograd.grad(_svd_gauge(torch, big)[1][0, 0], big)[0][0, 0].item()
    assert abs(at_scale * 1e300 - exact) < 1e-8 * exact       # torch right at scale 1
    for engine in (E, torch):
        A = engine.tensor(SVD_TINY, dtype=engine.float64, requires_grad=True)
        (g,) = engine.autograd.grad(_svd_gauge(engine, A)[1][0, 0], A)
        assert np.all(np.isnan(g.detach().numpy() if engine is torch else g.numpy()))
        assert verdict_at(lambda t, e=engine: _svd_gauge(e, t), (_t(SVD_TINY, engine),)) == "fail"


def test_refengine_svdvals_gradient_through_svd_at_1e_minus_300_is_u_v_transposed():
    # S's cotangent alone (gU, gVh zero: torch's undefined): U diag(gS) V^H, as torch;
    # the full rule's F = 1 / (s_j^2 - s_i^2) is 1/0 there (s^2 underflows): NaN before
    mpmath.mp.dps = 60
    U, _, V = mpmath.svd_r(mpmath.matrix(SVD_TINY), full_matrices=False)
    exact = np.array((U * V).tolist(), dtype=float)      # d sum(S) / dA = sum_i u_i v_i^T
    weights = [1.0, 2.0, 3.0]
    weighted = np.array((U * mpmath.diag(weights) * V).tolist(), dtype=float)
    for w, truth in ((None, exact), (weights, weighted)):
        A, B = _t(SVD_TINY), _t(SVD_TINY, torch)
        S, St = E.linalg.svd(A, full_matrices=False)[1], torch.linalg.svd(B, full_matrices=False)[1]
        if w is not None:
            S, St = S * E.tensor(w, dtype=F64), St * torch.tensor(w, dtype=torch.float64)
        (g,) = E.autograd.grad(S.sum(), A)
        (gt,) = torch.autograd.grad(St.sum(), B)
        assert np.allclose(g.numpy(), truth, atol=1e-12)
        assert np.allclose(g.numpy(), gt.numpy(), atol=1e-14)


def test_complex_div_by_1e300_has_a_zero_gradient_in_the_divisor():
    # refengine took d/d other as -self / other^2, whose other^2 overflows for a
    # complex other of 1e300 (NaN); torch and now refengine: -(self / other) / other
    b = complex(8.971819749751797e+299, 2.04368728093683e+299)
    a = complex(0.3, 0.2)
    mpmath.mp.dps = 30
    exact = -mpmath.mpc(a) / mpmath.mpc(b) ** 2             # d (a / b) / db, ~1e-600
    assert abs(complex(exact)) == 0.0                         # rounds to 0 in double
    grads = []
    for engine in (torch, E):
        x = engine.tensor([a], dtype=engine.complex128, requires_grad=True)
        y = engine.tensor([b], dtype=engine.complex128, requires_grad=True)
        grads.append(complex(engine.autograd.grad(engine.div(x, y).real.sum(), y)[0][0].item()))
    assert grads[0] == 0 and grads[1] == 0                   # torch 0; refengine NaN before
