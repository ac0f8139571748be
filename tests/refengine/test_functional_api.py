"""refengine.autograd.functional against torch.autograd.functional and calculus.

Each function below is written once against an engine module ``M`` and run
on refengine and on torch with the same float64 inputs: values, return
structure (tuple, list or Tensor, and nesting) and errors must agree.
Where torch is not needed, closed forms and central differences decide.
"""
from __future__ import annotations

import numpy as np
import pytest

import adcheck.refengine as E
from adcheck.refengine.autograd import forward_ad
from adcheck.refengine.autograd import functional as RF

try:
    import torch as _torch
    from torch.autograd import functional as _TF
except ImportError:  # the oracle is optional: tests that need it skip
    _torch = _TF = None




RNG = np.random.default_rng(1234)
A = RNG.uniform(0.2, 0.9, (2, 3))
B = RNG.uniform(0.2, 0.9, (3,))
V_A = RNG.standard_normal((2, 3))
V_B = RNG.standard_normal((3,))


def ref(*arrays):
    """refengine float64 tensors from NumPy arrays (one tensor, or a tuple)."""
    out = tuple(E.tensor(a, dtype=E.float64) for a in arrays)
    return out[0] if len(out) == 1 else out


def tor(*arrays):
    out = tuple(_torch.tensor(a, dtype=_torch.float64) for a in arrays)
    return out[0] if len(out) == 1 else out


def assert_same(ours, theirs, atol=1e-10):
    """Same nesting (tuple / list / Tensor) and the same values."""
    if isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs), f"{type(ours).__name__} vs {type(theirs).__name__}"
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            assert_same(o, t, atol)
        return
    assert isinstance(ours, E.Tensor), type(ours)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=atol, rtol=1e-9)


# Functions of one or two inputs, one or two outputs (M is refengine or torch).
def vec_one(M):
    return lambda x: x.sin() * x


def vec_two(M):
    return lambda x, y: (x * y.cos(), (x * x).sum(1))


def vec_exp(M):
    return lambda x: x.exp() * x.sum()


def scal_one(M):
    return lambda x: (x.sin() * x * x).sum()


def scal_two(M):
    return lambda x, y: ((x * x).sum(0) * y + y.sin()).sum()


VECTOR_CASES = {"one": (vec_one, (A,)), "two": (vec_two, (A, B)), "exp": (vec_exp, (A,))}
SCALAR_CASES = {"one": (scal_one, (A,)), "two": (scal_two, (A, B))}
JAC_MODES = [(False, "reverse-mode"), (True, "reverse-mode"), (True, "forward-mode")]


def run_both(fn_name, make, arrays, *extra, **kwargs):
    ours = getattr(RF, fn_name)(make(E), ref(*arrays), *extra[:1], **kwargs)
    theirs = getattr(_TF, fn_name)(make(_torch), tor(*arrays), *extra[1:], **kwargs)
    return ours, theirs


# ----- values and structure against torch ------------------------------------
@pytest.mark.parametrize("vectorize,strategy", JAC_MODES)
@pytest.mark.parametrize("case", VECTOR_CASES)
def test_jacobian_matches_torch(torch, case, vectorize, strategy):
    make, arrays = VECTOR_CASES[case]
    ours, theirs = run_both("jacobian", make, arrays, vectorize=vectorize, strategy=strategy)
    assert_same(ours, theirs)


@pytest.mark.parametrize("vectorize,strategy", [(False, "reverse-mode"), (True, "reverse-mode")])
@pytest.mark.parametrize("case", SCALAR_CASES)
def test_hessian_matches_torch(torch, case, vectorize, strategy):
    make, arrays = SCALAR_CASES[case]
    ours, theirs = run_both("hessian", make, arrays, vectorize=vectorize,
                            outer_jacobian_strategy=strategy)
    assert_same(ours, theirs)


@pytest.mark.parametrize("case", SCALAR_CASES)
def test_hessian_forward_over_reverse_matches_torch(torch, case):
    make, arrays = SCALAR_CASES[case]
    ours, theirs = run_both("hessian", make, arrays, vectorize=True,
                            outer_jacobian_strategy="forward-mode")
    assert_same(ours, theirs)   # torch returns lists here; so must we


@pytest.mark.parametrize("fn_name", ["vhp", "hvp"])
@pytest.mark.parametrize("case", SCALAR_CASES)
def test_hessian_vector_products_match_torch(torch, fn_name, case):
    make, arrays = SCALAR_CASES[case]
    vs = (V_A, V_B)[:len(arrays)]
    ours, theirs = run_both(fn_name, make, arrays, ref(*vs), tor(*vs))
    assert_same(ours, theirs)


@pytest.mark.parametrize("case", VECTOR_CASES)
def test_jvp_matches_torch(torch, case):
    make, arrays = VECTOR_CASES[case]
    vs = (V_A, V_B)[:len(arrays)]
    ours, theirs = run_both("jvp", make, arrays, ref(*vs), tor(*vs))
    assert_same(ours, theirs)


@pytest.mark.parametrize("case", VECTOR_CASES)
def test_vjp_matches_torch(torch, case):
    make, arrays = VECTOR_CASES[case]
    outs = make(_torch)(*((tor(*arrays),) if len(arrays) == 1 else tor(*arrays)))
    us = [RNG.standard_normal(tuple(o.shape)) for o in (outs if isinstance(outs, tuple) else (outs,))]
    ours, theirs = run_both("vjp", make, arrays, ref(*us), tor(*us))
    assert_same(ours, theirs)


def test_complex_jvp_and_vjp_match_torch(torch):
    z = np.array([0.3 + 0.2j, 0.7 - 0.1j])
    v = np.array([1.0 + 1.0j, 2.0 - 0.5j])

    def f(t):
        return t * t * t.conj()
    for name in ("jvp", "vjp"):
        ours = getattr(RF, name)(f, E.tensor(z, dtype=E.complex128), E.tensor(v, dtype=E.complex128))
        theirs = getattr(_TF, name)(f, torch.tensor(z), torch.tensor(v))
        assert_same(ours, theirs)


def test_v_defaults_to_one_for_single_element(torch):
    for name in ("jvp", "vjp", "hvp", "vhp"):
        def f(x):
            return (x * x * x).sum()
        ours = getattr(RF, name)(f, E.tensor([0.5], dtype=E.float64))
        theirs = getattr(_TF, name)(f, torch.tensor([0.5], dtype=torch.float64))
        assert_same(ours, theirs)


# ----- create_graph ------------------------------------------------------------
@pytest.mark.parametrize("fn_name", ["jacobian", "hessian", "vjp", "jvp", "vhp", "hvp"])
def test_results_are_detached_without_create_graph(fn_name):
    x = E.tensor(A, dtype=E.float64, requires_grad=True)
    func = scal_one(E)
    extra = () if fn_name in ("jacobian", "hessian") else (E.ones_like(x),)
    if fn_name in ("vjp",):
        extra = (E.tensor(1.0, dtype=E.float64),)
    res = getattr(RF, fn_name)(func, x, *extra)
    for t in (res if isinstance(res, tuple) else (res,)):
        assert not t.requires_grad
    assert x.grad is None


@pytest.mark.parametrize("fn_name", ["jacobian", "hessian", "jvp", "vhp", "hvp"])
def test_create_graph_differentiates_again_like_torch(torch, fn_name):
    """With create_graph=True the result is a function of the inputs: d(sum)/dx agrees."""
    def run(M, F):
        x = M.tensor(B, dtype=M.float64, requires_grad=True)

        def f(t):
            return (t * t * t.sin()).sum() if fn_name not in ("jacobian", "jvp") else t * t * t.sin()
        extra = () if fn_name in ("jacobian", "hessian") else (M.ones_like(x),)
        res = getattr(F, fn_name)(f, x, *extra, create_graph=True)
        res = res[1] if isinstance(res, tuple) else res
        g, = M.autograd.grad(res.sum(), x)
        return g
    np.testing.assert_allclose(run(E, RF).numpy(), run(torch, _TF).numpy(), rtol=1e-9)


# ----- mathematics: closed forms, forward AD, finite differences ---------------
def central_difference(f, x: np.ndarray, v: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    return (f(x + eps * v) - f(x - eps * v)) / (2 * eps)


def test_jacobian_of_matrix_product_is_the_matrix():
    w = RNG.standard_normal((4, 3))
    jac = RF.jacobian(lambda x: E.tensor(w, dtype=E.float64) @ x, ref(B))
    np.testing.assert_allclose(jac.numpy(), w, rtol=1e-12)


def test_hessian_of_cubic_is_diagonal_6x():
    hess = RF.hessian(lambda x: (x * x * x).sum(), ref(B))
    np.testing.assert_allclose(hess.numpy(), np.diag(6 * B), rtol=1e-12)


def test_jvp_agrees_with_forward_ad_and_finite_differences():
    def f(t):
        return (t.sin() * t).exp() / (1 + t * t)
    _, jv = RF.jvp(f, ref(A), ref(V_A))
    with forward_ad.dual_level():
        tangent = forward_ad.unpack_dual(f(forward_ad.make_dual(ref(A), ref(V_A)))).tangent
    fd = central_difference(lambda a: f(ref(a)).numpy(), A, V_A)
    np.testing.assert_allclose(jv.numpy(), tangent.numpy(), rtol=1e-12)
    np.testing.assert_allclose(jv.numpy(), fd, rtol=1e-6, atol=1e-8)


def test_vjp_is_the_adjoint_of_jvp():
    """<u, J v> == <J^T u, v> for the two-input, two-output function."""
    f = vec_two(E)
    u = (RNG.standard_normal((2, 3)), RNG.standard_normal((2,)))
    _, jv = RF.jvp(f, ref(A, B), ref(V_A, V_B))
    _, ju = RF.vjp(f, ref(A, B), ref(*u))
    lhs = sum(float((ui * j.numpy()).sum()) for ui, j in zip(u, jv))
    rhs = sum(float((vi * j.numpy()).sum()) for vi, j in zip((V_A, V_B), ju))
    assert lhs == pytest.approx(rhs, rel=1e-12)


def test_hvp_is_the_directional_derivative_of_the_gradient():
    def f(t):
        return (t.sin() * t * t).sum()

    def gradient(a):
        return RF.vjp(f, ref(a))[1].numpy()
    _, hv = RF.hvp(f, ref(A), ref(V_A))
    np.testing.assert_allclose(hv.numpy(), central_difference(gradient, A, V_A), rtol=1e-6, atol=1e-8)


def test_vectorize_gives_identical_jacobians():
    f = vec_two(E)
    for strategy in ("reverse-mode", "forward-mode"):
        batched = RF.jacobian(f, ref(A, B), vectorize=True, strategy=strategy)
        rows = RF.jacobian(f, ref(A, B))
        for b_out, r_out in zip(batched, rows):
            for b, r in zip(b_out, r_out):
                np.testing.assert_allclose(b.numpy(), r.numpy(), rtol=1e-12)


def test_strict_accepts_a_function_of_every_input():
    def f(x, y):
        return x * y, (x * x).sum(1) * y.sum()
    jac = RF.jacobian(f, ref(A, B), strict=True)
    assert [[tuple(j.shape) for j in row] for row in jac] == [[(2, 3, 2, 3), (2, 3, 3)],
                                                             [(2, 2, 3), (2, 3)]]


def test_hvp_through_an_op_that_saves_its_result():
    def f(t):
        return t.exp().sum()
    _, hv = RF.hvp(f, ref(B), ref(V_B))
    np.testing.assert_allclose(hv.numpy(), np.exp(B) * V_B, rtol=1e-12)


# ----- errors: the same type and message as torch --------------------------------
def _errors(M):
    x, y = M.tensor(B, dtype=M.float64), M.tensor(B, dtype=M.float64)
    v = M.ones(3, dtype=M.float64)
    return {
        "vjp needs v": lambda F: F.vjp(lambda t: t * 2, x),
        "jvp needs v": lambda F: F.jvp(lambda t: t * 2, x),
        "hvp needs v": lambda F: F.hvp(lambda t: (t * t).sum(), x),
        "v tuple length": lambda F: F.vjp(lambda a, b: (a * b, a + b), (x, y), (v,)),
        "v size": lambda F: F.jvp(lambda t: t * 2, x, M.ones(4, dtype=M.float64)),
        "v size in tuple": lambda F: F.jvp(lambda a, b: a * b, (x, y), (v, M.ones(2, dtype=M.float64))),
        "inputs not tensors": lambda F: F.jacobian(lambda t: t, [x]),
        "output not tensor": lambda F: F.vjp(lambda t: 3.0, x, v),
        "strict unused input": lambda F: F.vjp(lambda a, b: a * 2, (x, y), v, strict=True),
        "strict detached output": lambda F: F.vjp(lambda t: t.detach(), x, v, strict=True),
        "strict linear create_graph": lambda F: F.vjp(lambda t: t * 2, x, v, strict=True, create_graph=True),
        "strict jvp unused": lambda F: F.jvp(lambda a, b: a * 2, (x, y), (v, v), strict=True),
        "strict jacobian unused": lambda F: F.jacobian(lambda a, b: a * 2, (x, y), strict=True),
        "strict hessian of linear": lambda F: F.hessian(lambda t: (t * 2).sum(), x, strict=True),
        "strict hvp of linear": lambda F: F.hvp(lambda t: (t * 2).sum(), x, v, strict=True),
        "strict vhp unused": lambda F: F.vhp(lambda a, b: (a * a).sum(), (x, y), (v, v), strict=True),
        "strict vhp quadratic create_graph": lambda F: F.vhp(lambda t: (t * t).sum(), x, v, strict=True,
                                                             create_graph=True),
        "hvp tuple output": lambda F: F.hvp(lambda t: (t.sum(), t.sum()), x, v),
        "vhp vector output": lambda F: F.vhp(lambda t: t * t, x, v),
        "hessian vector output": lambda F: F.hessian(lambda t: t * t, x),
        "bad strategy": lambda F: F.jacobian(lambda t: t, x, strategy="sideways"),
        "bad outer strategy": lambda F: F.hessian(lambda t: t.sum(), x, outer_jacobian_strategy="up"),
        "forward needs vectorize": lambda F: F.jacobian(lambda t: t, x, strategy="forward-mode"),
        "forward hessian needs vectorize": lambda F: F.hessian(lambda t: (t * t).sum(), x,
                                                               outer_jacobian_strategy="forward-mode"),
        "forward with create_graph": lambda F: F.jacobian(lambda t: t, x, create_graph=True,
                                                          strategy="forward-mode", vectorize=True),
        "forward with strict": lambda F: F.jacobian(lambda t: t, x, strict=True, vectorize=True,
                                                    strategy="forward-mode"),
        "vectorize with strict": lambda F: F.jacobian(lambda t: t * t, x, strict=True, vectorize=True),
    }


def _normalise(message: str) -> str:
    # whitespace is ignored: torch's forward-mode message lacks a space ("isonly")
    return "".join(message.replace("torch.", "refengine.").split())


@pytest.mark.parametrize("case", list(_errors(E)))
def test_errors_match_torch(torch, case):
    with pytest.raises(Exception) as theirs:
        _errors(torch)[case](_TF)
    with pytest.raises(Exception) as ours:
        _errors(E)[case](RF)
    assert type(ours.value) is type(theirs.value)
    assert _normalise(str(ours.value)) == _normalise(str(theirs.value))


def test_captured_tensors_are_constants_like_torch(torch):
    """Only the arguments are differentiated: a tensor the function closes over is not."""
    def run(M, F):
        x = M.tensor(B, dtype=M.float64, requires_grad=True)
        return F.jacobian(lambda t: t * x, x)
    assert_same(run(E, RF), run(torch, _TF))
