"""Every op has a jvp, and it agrees with the op's vjp.

For each op of a family table and each of its samples, the forward-mode
Jacobian (column by column: one jvp per input direction) must equal the
reverse-mode Jacobian (row by row: one vjp per output direction) to 1e-12
relative, in float64. Complex inputs and outputs are read as pairs of real
numbers: an entry is ``Re <v, J u>`` computed forward as ``Re <v, jvp(u)>``
and backward as ``Re <vjp(v), u>``, the adjoint identity both engines obey
under the conjugate Wirtinger convention. A missing jvp must raise; a
silent zero tangent differs from the vjp and fails the case. Each case
reports every failing op of its family at once.

This module holds the comparison and the elementwise, binary, reduction and
in-place tables; ``forward_ad_ops_structured`` holds linear algebra, shapes,
indexing and ``nn.functional``.
"""
from __future__ import annotations

import numpy as np

from adcheck.conformance.case import FORWARD_AD, case
from adcheck.conformance.compare import to_numpy

RTOL = 1e-12

# What the note asks of every op: a jvp, i.e. the product J u.
CITE_JVP = ("Forward mode will allow to compute the quantity `J u` for an "
            "arbitrary `u` in an efficient manner as well.")
CITE_COLUMNS = ("the forward AD can reconstruct the full Jacobian matrix column "
                "by column and we can compare the final result with the "
                "numerical Jacobian.")


# -- samples ---------------------------------------------------------------

def _sample(E, rng, spec):
    """A float64 or complex128 tensor for ``(domain, shape)``."""
    domain, shape = spec
    if domain == "c":
        data = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        return E.tensor(data, dtype=E.complex128)
    low_high = {"p": (0.5, 2.0), "u": (-0.9, 0.9), "g": (1.2, 3.0)}
    if domain == "r":
        data = rng.standard_normal(shape)
    else:
        data = rng.uniform(*low_high[domain], size=shape)
    return E.tensor(data, dtype=E.float64)


def R(*shape):
    """Standard normal real input."""
    return ("r", shape)


def P(*shape):
    """Positive input in [0.5, 2]."""
    return ("p", shape)


def U(*shape):
    """Input inside (-1, 1)."""
    return ("u", shape)


def G(*shape):
    """Input greater than 1."""
    return ("g", shape)


def C(*shape):
    """Complex normal input."""
    return ("c", shape)


# -- the two Jacobians -----------------------------------------------------

def _as_list(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _directions(t):
    """Unit directions of a tensor: (flat index, scalar) with 1 and, if complex, 1j."""
    scalars = (1.0, 1j) if t.is_complex() else (1.0,)
    return [(k, c) for k in range(t.numel()) for c in scalars]


def _one_hot(E, like, k, c):
    data = np.zeros(tuple(like.shape), dtype=complex if like.is_complex() else float)
    data.flat[k] = c
    return E.tensor(data, dtype=like.dtype)


def _flat(E, t, like):
    """The entries of ``t`` (``None`` reads as zeros of ``like``) as a complex vector."""
    if t is None:
        return np.zeros(like.numel(), dtype=complex)
    # Adding to real zeros materialises torch's storage-less zero tensors.
    return to_numpy(E.zeros_like(t) + t).astype(complex).ravel()


def forward_jacobian(E, fn, inputs):
    """Real Jacobian built column by column from jvps."""
    fwd = E.autograd.forward_ad
    columns = []
    for i, x in enumerate(inputs):
        for k, c in _directions(x):
            with fwd.dual_level():
                args = list(inputs)
                args[i] = fwd.make_dual(x, _one_hot(E, x, k, c))
                outs = _as_list(fn(E, *args))
                column = []
                for out in outs:
                    tangent = _flat(E, fwd.unpack_dual(out).tangent, out)
                    column += [(np.conj(v) * tangent[j]).real for j, v in _directions(out)]
            columns.append(column)
    return np.array(columns).T


def reverse_jacobian(E, fn, inputs):
    """Real Jacobian built row by row from vjps."""
    leaves = [x.detach().clone().requires_grad_(True) for x in inputs]
    outs = _as_list(fn(E, *leaves))
    rows = []
    for out in outs:
        for j, v in _directions(out):
            grads = E.autograd.grad(out, leaves, grad_outputs=_one_hot(E, out, j, v),
                                    retain_graph=True, allow_unused=True)
            row = []
            for g, x in zip(grads, leaves):
                flat = _flat(E, g, x)
                row += [(np.conj(flat[k]) * u).real for k, u in _directions(x)]
            rows.append(row)
    return np.array(rows)


def mismatch(E, fn, specs, seed=0):
    """``None`` when both Jacobians agree, else a short reason."""
    rng = np.random.default_rng(seed)
    inputs = [_sample(E, rng, spec) for spec in specs]
    try:
        forward = forward_jacobian(E, fn, inputs)
    except Exception as error:  # a missing jvp must raise: report it
        return f"jvp raised {type(error).__name__}: {str(error)[:120]}"
    reverse = reverse_jacobian(E, fn, inputs)
    if forward.shape != reverse.shape:
        return f"Jacobian shapes {forward.shape} (forward) != {reverse.shape} (reverse)"
    scale = max(1.0, float(np.abs(reverse).max(initial=0.0)))
    error = np.abs(forward - reverse)
    if error.max(initial=0.0) > RTOL * scale:
        where = np.unravel_index(int(error.argmax()), error.shape)
        return (f"forward differs from reverse by {error.max():.1e} at {where} "
                f"(forward {forward[where]:.6g}, reverse {reverse[where]:.6g})")
    return None


def check_table(E, table):
    """Compare both Jacobians for every row ``(name, fn, specs)``; report all failures."""
    failures = []
    for name, fn, specs in table:
        try:
            reason = mismatch(E, fn, specs)
        except Exception as error:
            reason = f"raised {type(error).__name__}: {str(error)[:120]}"
        if reason:
            failures.append(f"{name}: {reason}")
    assert not failures, "\n".join(failures)


def _unary(names, spec):
    return [(n, lambda E, a, n=n: getattr(E, n)(a), [spec]) for n in names]


# -- tables ----------------------------------------------------------------

UNARY_REAL = (
    _unary("exp expm1 sin cos tan atan sinh cosh tanh asinh sigmoid erf erfc "
           "neg square relu abs sign sgn floor ceil round trunc frac angle conj "
           "nan_to_num resolve_neg resolve_conj".split(), R(2, 3))
    + _unary("log log1p log2 log10 sqrt rsqrt reciprocal lgamma digamma".split(), P(2, 3))
    + _unary("asin acos atanh erfinv".split(), U(2, 3))
    + _unary(["acosh"], G(2, 3))
    + [("clamp", lambda E, a: E.clamp(a, -0.5, 0.5), [R(2, 3)]),
       ("clip", lambda E, a: E.clip(a, min=-0.5), [R(2, 3)]),
       ("relu on scalar", lambda E, a: E.relu(a), [R()])]
)

# Holomorphic ops get a derived jvp; abs, sgn, angle, real, imag, conj do not.
UNARY_COMPLEX = (
    _unary("exp log sqrt sin cos tan tanh sinh cosh sigmoid reciprocal square neg "
           "abs sgn angle conj conj_physical real imag".split(), C(2, 2))
    + [("resolve_conj", lambda E, a: E.resolve_conj(a.conj()), [C(3)]),
       ("mul by conj", lambda E, a: a * a.conj(), [C(3)]),
       ("polar", lambda E, r, t: E.polar(r, t), [P(3), R(3)]),
       ("abs then pow", lambda E, a: a.abs() ** 2, [C(3)])]
)

BINARY = [
    ("add", lambda E, a, b: E.add(a, b, alpha=2.0), [R(2, 3), R(2, 3)]),
    ("add broadcast", lambda E, a, b: a + b, [R(2, 3), R(3)]),
    ("sub", lambda E, a, b: E.sub(a, b), [R(2, 3), R(1, 3)]),
    ("mul", lambda E, a, b: E.mul(a, b), [R(2, 3), R(2, 1)]),
    ("div", lambda E, a, b: E.div(a, b), [R(2, 3), P(2, 3)]),
    ("pow tensor", lambda E, a, b: E.pow(a, b), [P(2, 3), R(2, 3)]),
    ("pow scalar exponent", lambda E, a: a ** 3, [R(2, 3)]),
    ("pow scalar base", lambda E, a: 2.0 ** a, [R(2, 3)]),
    ("maximum", lambda E, a, b: E.maximum(a, b), [R(2, 3), R(2, 3)]),
    ("minimum", lambda E, a, b: E.minimum(a, b), [R(2, 3), R(2, 3)]),
    ("fmod", lambda E, a, b: E.fmod(a, b), [R(2, 3), P(2, 3)]),
    ("remainder", lambda E, a, b: E.remainder(a, b), [R(2, 3), P(2, 3)]),
    ("atan2", lambda E, a, b: E.atan2(a, b), [R(2, 3), R(2, 3)]),
    ("hypot", lambda E, a, b: E.hypot(a, b), [R(2, 3), R(2, 3)]),
    ("xlogy", lambda E, a, b: E.xlogy(a, b), [R(2, 3), P(2, 3)]),
    ("lerp tensor weight", lambda E, a, b, w: E.lerp(a, b, w), [R(3), R(3), U(3)]),
    ("lerp scalar weight", lambda E, a, b: E.lerp(a, b, 0.3), [R(3), R(3)]),
    ("where", lambda E, a, b: E.where(E.tensor([True, False, True]), a, b), [R(2, 3), R(3)]),
    ("complex mul", lambda E, a, b: a * b, [C(3), C(3)]),
    ("complex div", lambda E, a, b: a / b, [C(3), C(3)]),
    ("real times complex", lambda E, a, b: a * b, [R(3), C(3)]),
]

REDUCTION = [
    ("sum", lambda E, a: E.sum(a), [R(2, 3)]),
    ("sum dim keepdim", lambda E, a: E.sum(a, dim=1, keepdim=True), [R(2, 3)]),
    ("mean", lambda E, a: E.mean(a, dim=0), [R(2, 3)]),
    ("prod", lambda E, a: E.prod(a), [R(2, 3)]),
    ("prod dim", lambda E, a: E.prod(a, dim=1), [R(2, 3)]),
    ("amax", lambda E, a: E.amax(a, dim=1), [R(2, 3)]),
    ("amin", lambda E, a: E.amin(a), [R(2, 3)]),
    ("max", lambda E, a: E.max(a), [R(2, 3)]),
    ("max dim values", lambda E, a: E.max(a, dim=1).values, [R(2, 3)]),
    ("min dim values", lambda E, a: E.min(a, dim=0, keepdim=True).values, [R(2, 3)]),
    ("var", lambda E, a: E.var(a, dim=1), [R(2, 3)]),
    ("var correction 0", lambda E, a: E.var(a, correction=0), [R(2, 3)]),
    ("std", lambda E, a: E.std(a, dim=0), [R(3, 2)]),
    ("logsumexp", lambda E, a: E.logsumexp(a, dim=1), [R(2, 3)]),
    ("cumsum", lambda E, a: E.cumsum(a, dim=1), [R(2, 3)]),
    ("cumprod", lambda E, a: E.cumprod(a, dim=1), [R(2, 3)]),
    ("norm", lambda E, a: E.norm(a), [R(2, 3)]),
    ("norm p=1 dim", lambda E, a: E.norm(a, p=1, dim=1), [R(2, 3)]),
    ("norm p=3", lambda E, a: E.norm(a, p=3), [R(2, 3)]),
    ("sum complex", lambda E, a: E.sum(a), [C(2, 2)]),
]

# In-place ops, applied to a fresh clone so that the input itself is untouched.
INPLACE = [
    ("add_", lambda E, a, b: a.clone().add_(b, alpha=-1.5), [R(2, 3), R(3)]),
    ("sub_", lambda E, a, b: a.clone().sub_(b), [R(2, 3), R(2, 3)]),
    ("mul_", lambda E, a, b: a.clone().mul_(b), [R(2, 3), R(2, 3)]),
    ("div_", lambda E, a, b: a.clone().div_(b), [R(2, 3), P(2, 3)]),
    ("pow_", lambda E, a: a.clone().pow_(2), [R(2, 3)]),
    ("exp_", lambda E, a: a.clone().exp_(), [R(2, 3)]),
    ("sin_", lambda E, a: a.clone().sin_(), [R(2, 3)]),
    ("cos_", lambda E, a: a.clone().cos_(), [R(2, 3)]),
    ("neg_", lambda E, a: a.clone().neg_(), [R(2, 3)]),
    ("sqrt_", lambda E, a: a.clone().sqrt_(), [P(2, 3)]),
    ("tanh_", lambda E, a: a.clone().tanh_(), [R(2, 3)]),
    ("clamp_", lambda E, a: a.clone().clamp_(min=-0.3, max=0.3), [R(2, 3)]),
    ("relu_", lambda E, a: a.clone().relu_(), [R(2, 3)]),
    ("zero_", lambda E, a, b: a.clone().zero_() + b, [R(2, 3), R(2, 3)]),
    ("fill_", lambda E, a, b: a.clone().fill_(2.0) * b, [R(2, 3), R(2, 3)]),
    ("copy_", lambda E, a, b: a.clone().copy_(b), [R(2, 3), R(3)]),
    ("masked_fill_", lambda E, a: a.clone().masked_fill_(a > 0, 0.5), [R(2, 3)]),
    ("index_add_", lambda E, a, b: a.clone().index_add_(0, E.tensor([1, 0, 1]), b),
     [R(2, 3), R(3, 3)]),
    ("mul_ complex", lambda E, a, b: a.clone().mul_(b), [C(3), C(3)]),
]


@case(CITE_JVP, source=FORWARD_AD)
def jvp_matches_vjp_unary_real(E):
    check_table(E, UNARY_REAL)


@case(CITE_JVP, source=FORWARD_AD)
def jvp_matches_vjp_unary_complex(E):
    check_table(E, UNARY_COMPLEX)


@case(CITE_JVP, source=FORWARD_AD)
def jvp_matches_vjp_binary(E):
    check_table(E, BINARY)


@case(CITE_COLUMNS, source=FORWARD_AD)
def jvp_matches_vjp_reductions(E):
    check_table(E, REDUCTION)


@case(CITE_JVP, source=FORWARD_AD)
def jvp_matches_vjp_inplace(E):
    check_table(E, INPLACE)


@case(CITE_COLUMNS, source=FORWARD_AD)
def jacobian_comparison_catches_a_wrong_jvp(E):
    """The comparison itself: a Function whose jvp is off by 1% must fail it."""
    class Cube(E.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return grad * 3 * x ** 2

        @staticmethod
        def jvp(ctx, x_t):
            x, = ctx.saved_tensors
            return x_t * 3.03 * x ** 2

    reason = mismatch(E, lambda E, a: Cube.apply(a), [P(3)])
    assert reason is not None and "forward differs from reverse" in reason, reason


@case("The fast mode will also be done similarly to the backward mode "
      "implementation where we will use the forward AD to compute `J_f u` with a "
      "single forward AD pass.", source=FORWARD_AD)
def one_jvp_and_one_vjp_agree_on_a_random_projection(E):
    """Fast mode: v . (J u) from one jvp equals (J^T v) . u from one vjp."""
    fwd = E.autograd.forward_ad
    rng = np.random.default_rng(7)
    x = E.tensor(rng.standard_normal((3, 4)), dtype=E.float64)
    u = E.tensor(rng.standard_normal((3, 4)), dtype=E.float64)
    v = E.tensor(rng.standard_normal(3), dtype=E.float64)

    def f(t):
        return (t.tanh() @ t.mT).sin().sum(0) * t.sum(1)

    with fwd.dual_level():
        ju = to_numpy(fwd.unpack_dual(f(fwd.make_dual(x, u))).tangent)
    leaf = x.detach().clone().requires_grad_(True)
    jtv, = E.autograd.grad(f(leaf), leaf, grad_outputs=v)
    forward = float(ju @ to_numpy(v))
    reverse = float((to_numpy(jtv) * to_numpy(u)).sum())
    assert abs(forward - reverse) <= RTOL * max(1.0, abs(reverse)), (forward, reverse)
