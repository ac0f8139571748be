"""The 49 ops of ``bench/vs_torch.py`` and its canaries, each written once as a
function of an engine module ``E`` (``refengine`` or ``torch``), so that both
sides differentiate the identical formula on the same NumPy inputs."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

# --------------------------------------------------------------------------
# The op list: each op once, as a function of the engine module E
# --------------------------------------------------------------------------


@dataclass
class Op:
    name: str
    family: str
    fn: Callable            # fn(E, *tensors)
    arrays: list            # NumPy inputs, built once
    tensors: dict = field(default_factory=dict)   # engine name -> tuple of leaves

    def func(self, E):
        fn = self.fn
        return lambda *xs: fn(E, *xs)

    def inputs(self, E):
        if E.__name__ not in self.tensors:
            self.tensors[E.__name__] = tuple(
                E.from_numpy(np.array(a, copy=True)).requires_grad_() for a in self.arrays)
        return self.tensors[E.__name__]

    def describe(self) -> str:
        return ", ".join(f"{a.dtype}{list(a.shape)}" for a in self.arrays)


class _Inputs:
    """The NumPy inputs of the ops, drawn in order from one seeded generator."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def u(self, *shape, lo=-1.0, hi=1.0):
        return self.rng.uniform(lo, hi, shape)

    def pos(self, *shape):                # log, sqrt, ... : away from 0
        return self.rng.uniform(0.5, 2.0, shape)

    def signed(self, *shape):             # away from 0, either sign
        return self.rng.uniform(0.5, 1.5, shape) * self.rng.choice([-1.0, 1.0], shape)

    def c(self, *shape, re_lo=-1.0):      # complex128
        return self.rng.uniform(re_lo, 1.0, shape) + 1j * self.rng.uniform(-1.0, 1.0, shape)

    def c_away(self, *shape):             # complex128, |z| >= 0.5, Re z > 0
        return self.rng.uniform(0.5, 1.5, shape) + 1j * self.rng.uniform(-1.0, 1.0, shape)

    def wellcond(self, n, complex_=False):    # 4x4, well conditioned
        a = self.rng.standard_normal((n, n))
        if complex_:
            a = a + 1j * self.rng.standard_normal((n, n))
        return a + 3.0 * np.eye(n)

    def half_spd(self, n):                # S / 2 with S symmetric positive definite
        a = self.rng.standard_normal((n, n))
        return (a @ a.T + n * np.eye(n)) / 2.0


def _elementwise_ops(add, g: _Inputs) -> None:
    # elementwise unary, 5x5 (15)
    for name in ("sin", "cos", "tan", "exp", "expm1", "tanh", "sigmoid", "atan", "erf"):
        add(name, "unary", (lambda n: lambda E, x: getattr(E, n)(x))(name), g.u(5, 5))
    for name in ("log", "log1p", "sqrt", "rsqrt"):
        add(name, "unary", (lambda n: lambda E, x: getattr(E, n)(x))(name), g.pos(5, 5))
    add("asin", "unary", lambda E, x: E.asin(x), g.u(5, 5, lo=-0.9, hi=0.9))
    add("reciprocal", "unary", lambda E, x: E.reciprocal(x), g.signed(5, 5))

    # binary, 3x4 with 4 (broadcasting) (8)
    add("add", "binary", lambda E, x, y: E.add(x, y), g.u(3, 4), g.u(4))
    add("sub", "binary", lambda E, x, y: E.sub(x, y), g.u(3, 4), g.u(4))
    add("mul", "binary", lambda E, x, y: E.mul(x, y), g.u(3, 4), g.u(4))
    add("div", "binary", lambda E, x, y: E.div(x, y), g.u(3, 4), g.signed(4))
    add("pow", "binary", lambda E, x, y: E.pow(x, y), g.pos(3, 4), g.u(4))
    add("atan2", "binary", lambda E, x, y: E.atan2(x, y), g.u(3, 4), g.signed(4))
    add("maximum", "binary", lambda E, x, y: E.maximum(x, y), g.u(3, 4), g.u(4))
    add("hypot", "binary", lambda E, x, y: E.hypot(x, y), g.signed(3, 4), g.signed(4))


def _reduction_ops(add, g: _Inputs) -> None:
    # reductions, 4x5 (10)
    add("sum", "reduction", lambda E, x: E.sum(x), g.u(4, 5))
    add("mean", "reduction", lambda E, x: E.mean(x, dim=1), g.u(4, 5))
    add("prod", "reduction", lambda E, x: E.prod(x, dim=1), g.signed(4, 5))
    add("amax", "reduction", lambda E, x: E.amax(x, dim=1), g.u(4, 5))
    add("logsumexp", "reduction", lambda E, x: E.logsumexp(x, dim=1), g.u(4, 5))
    add("var", "reduction", lambda E, x: E.var(x, dim=1), g.u(4, 5))
    add("std", "reduction", lambda E, x: E.std(x, dim=1), g.u(4, 5))
    add("norm", "reduction", lambda E, x: E.norm(x), g.u(4, 5))
    add("softmax", "reduction", lambda E, x: E.nn.functional.softmax(x, dim=1), g.u(4, 5))
    add("cumsum", "reduction", lambda E, x: E.cumsum(x, dim=1), g.u(4, 5))


def _linalg_nn_complex_ops(add, g: _Inputs) -> None:
    # linear algebra, 4x4 (7); trace is not in refengine
    add("matmul", "linalg", lambda E, a, b: E.matmul(a, b), g.u(4, 4), g.u(4, 4))
    add("linalg.det", "linalg", lambda E, a: E.linalg.det(a), g.wellcond(4))
    add("linalg.slogdet", "linalg", lambda E, a: E.linalg.slogdet(a)[1], g.wellcond(4))
    add("linalg.inv", "linalg", lambda E, a: E.linalg.inv(a), g.wellcond(4))
    add("linalg.solve", "linalg", lambda E, a, b: E.linalg.solve(a, b), g.wellcond(4),
        g.u(4, 4))
    # cholesky reads one triangle: differentiate through x + x^T as OpInfo does
    add("linalg.cholesky", "linalg", lambda E, a: E.linalg.cholesky(a + a.mT), g.half_spd(4))
    add("linalg.qr", "linalg", lambda E, a: tuple(E.linalg.qr(a)), g.wellcond(4))

    # conv2d (1)
    add("conv2d", "nn", lambda E, x, w: E.nn.functional.conv2d(x, w),
        g.u(2, 3, 6, 6), g.u(4, 3, 3, 3))

    # complex128 (8)
    add("c128.exp", "complex", lambda E, z: E.exp(z), g.c(5, 5))
    add("c128.log", "complex", lambda E, z: E.log(z), g.c_away(5, 5))
    add("c128.abs", "complex", lambda E, z: E.abs(z), g.c_away(5, 5))
    add("c128.mul", "complex", lambda E, z, w: E.mul(z, w), g.c(3, 4), g.c(4))
    add("c128.div", "complex", lambda E, z, w: E.div(z, w), g.c(3, 4), g.c_away(4))
    add("c128.sum", "complex", lambda E, z: E.sum(z, dim=1), g.c(4, 5))
    add("c128.matmul", "complex", lambda E, a, b: E.matmul(a, b), g.c(4, 4), g.c(4, 4))
    add("c128.linalg.det", "complex", lambda E, a: E.linalg.det(a), g.wellcond(4, True))


def build_ops(seed: int = 0) -> list[Op]:
    """The 49 ops, their inputs drawn from ``seed`` (the same inputs for any subset)."""
    inputs, ops = _Inputs(seed), []

    def add(name, family, fn, *arrays):
        ops.append(Op(name, family, fn, list(arrays)))
    _elementwise_ops(add, inputs)
    _reduction_ops(add, inputs)
    _linalg_nn_complex_ops(add, inputs)
    return ops


# --------------------------------------------------------------------------
# Canaries: formulas with a planted error, so that a fast check that checks
# nothing cannot pass unnoticed. Each mode must fail exactly where expected.
# --------------------------------------------------------------------------

_CANARY_CLASSES: dict = {}


def _planted(E, name: str, value, vjp_factor, jvp_factor):
    """A custom Function ``value(x)`` whose backward multiplies ``grad`` by
    ``vjp_factor(x)`` and whose jvp multiplies the tangent by ``jvp_factor(x)``."""
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return value(x)

    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * vjp_factor(x)

    def jvp(ctx, t):
        x, = ctx.saved_tensors
        return t * jvp_factor(x)
    return type(name, (E.autograd.Function,), dict(
        forward=staticmethod(forward), backward=staticmethod(backward), jvp=staticmethod(jvp)))


def canary_functions(E) -> dict:
    """Three custom Functions on engine ``E``, each wrong in one place."""
    if E.__name__ in _CANARY_CLASSES:
        return _CANARY_CLASSES[E.__name__]
    # sin with the vjp off by a factor 2; sin with the jvp off by a sign
    bad_vjp = _planted(E, "BadVjp", E.sin, lambda x: 2 * E.cos(x), E.cos)
    bad_jvp = _planted(E, "BadJvp", E.sin, E.cos, lambda x: -E.cos(x))
    # sin, right first derivative, wrong second: its derivative is a cos
    # whose own derivative has the wrong sign
    wrong_cos = _planted(E, "WrongCos", E.cos, E.sin, E.sin)
    bad_second = _planted(E, "BadSecond", E.sin, wrong_cos.apply, wrong_cos.apply)
    _CANARY_CLASSES[E.__name__] = found = dict(vjp=bad_vjp, jvp=bad_jvp, second=bad_second)
    return found


#: canary -> the modes that must fail (every other mode must pass)
CANARIES = {
    # gradgradcheck differentiates the (wrong) vjp by AD and by differences
    # alike, so a wrong first derivative passes it: only the first order fails
    "canary.bad_vjp": ("vjp", {"slow", "slow+fwd", "fast"}),
    "canary.bad_jvp": ("jvp", {"slow+fwd"}),
    "canary.bad_2nd": ("second", {"gradgrad"}),
}


def build_canaries(seed: int = 0) -> list[Op]:
    rng = np.random.default_rng(seed + 1)
    return [Op(name, "canary", (lambda k: lambda E, x: canary_functions(E)[k].apply(x))(key),
               [rng.uniform(-1.0, 1.0, (3, 4))])
            for name, (key, _) in CANARIES.items()]
