"""A zoo of derivative formulas, right and wrong, as custom Functions.

Every entry builds its Function from the engine module ``E`` (``refengine``
or ``torch``), so the same zoo runs on both. ``Entry.caught_by`` names the
check that must catch the bug:

- ``default``: ``gradcheck(f, x)`` with PyTorch's defaults;
- ``forward``: ``check_forward_ad=True`` (bugs in the jvp);
- ``adjoint``: ``check_forward_ad=True``, caught only by the exact adjoint
  identity (too small for finite differences);
- ``precise``: ``precise=True`` (relative errors of 1e-4 and 1e-6);
- ``gradgrad``: ``gradgradcheck`` (bugs only in the second derivative).

``Entry.diagnosis`` is a phrase the report's diagnosis must contain.

The last section holds the named Functions the other test modules check
(a vjp scaled in one entry, a backward that raises, an exp whose backward is
noisy, ...), each built for either engine by the same ``function`` helper, so
no test module keeps a copy of its own.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

NOISE = np.random.default_rng()

REAL_X = np.array([0.7, -1.3, 0.4])
COMPLEX_X = np.array([0.7 + 0.3j, -1.1 + 0.5j, 0.4 - 0.8j])

# name: (f, f', f'') as functions of (E, x)
UNARY = {
    "sin": (lambda E, x: E.sin(x), lambda E, x: E.cos(x), lambda E, x: -E.sin(x)),
    "exp": (lambda E, x: E.exp(x), lambda E, x: E.exp(x), lambda E, x: E.exp(x)),
    "tanh": (lambda E, x: E.tanh(x), lambda E, x: 1 - E.tanh(x) ** 2,
             lambda E, x: -2 * E.tanh(x) * (1 - E.tanh(x) ** 2)),
    "square": (lambda E, x: x * x, lambda E, x: 2 * x, lambda E, x: 0 * x + 2),
    "reciprocal": (lambda E, x: 1 / x, lambda E, x: -1 / (x * x), lambda E, x: 2 / (x * x * x)),
}


def function(E, name: str, forward_fn, backward_fn, jvp_fn=None, materialize=True):
    """A custom Function of ``E`` saving its inputs for backward and jvp.

    ``forward_fn(E, *inputs)``, ``backward_fn(E, *inputs, *grads)`` and
    ``jvp_fn(E, *inputs, *tangents)`` are the formulas; without ``jvp_fn``
    the Function has no jvp. ``materialize=False``: the backward receives
    ``None`` for undefined output gradients (``ctx.set_materialize_grads``).
    """

    class Fn(E.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            if not materialize:
                ctx.set_materialize_grads(False)
            ctx.save_for_backward(*args)
            ctx.save_for_forward(*args)
            return forward_fn(E, *args)

        @staticmethod
        def backward(ctx, *grads):
            return backward_fn(E, *ctx.saved_tensors, *grads)

        if jvp_fn is not None:
            @staticmethod
            def jvp(ctx, *tangents):
                return jvp_fn(E, *ctx.saved_tensors, *tangents)

    Fn.__name__ = Fn.__qualname__ = name
    return Fn


def derivative_fn(E, op: str, dd_factor: float = 1.0):
    """f' of ``op`` as a Function whose own derivative is ``dd_factor * f''``."""
    _, d, dd = UNARY[op]
    return function(E, f"{op}_derivative", lambda E, x: d(E, x),
                    lambda E, x, g: g * E.conj(dd_factor * dd(E, x)),
                    lambda E, x, t: t * dd_factor * dd(E, x))


def _numpy(E, x):
    x = x.detach()
    # NumPy has no bfloat16 (torch refuses .numpy()); float32 holds it exactly
    return (x.float() if str(x.dtype) == "torch.bfloat16" else x).numpy()


# Each bug kind: (vjp, jvp, caught_by, diagnosis, complex_only); vjp(E, op, x, g),
# jvp(E, op, x, t); None means the correct formula.
def _vjp(factor=1.0):
    return lambda E, op, x, g: factor * g * E.conj(UNARY[op][1](E, x))


def _jvp(factor=1.0):
    return lambda E, op, x, t: factor * t * UNARY[op][1](E, x)


def _noisy(scale):
    def vjp(E, op, x, g):
        noise = E.from_numpy(1 + scale * NOISE.standard_normal(tuple(x.shape)))
        return g * E.conj(UNARY[op][1](E, x)) * noise
    return vjp


def _subset(E, op, x, g):
    mask = E.from_numpy(np.where(_numpy(E, x).real < 0, 2.0, 1.0))
    return g * E.conj(UNARY[op][1](E, x)) * mask


BUG_KINDS = {
    "vjp_times_2": (_vjp(2.0), None, "default", "2 times", False),
    "vjp_times_half": (_vjp(0.5), None, "default", "1/2 times", False),
    "vjp_sign": (_vjp(-1.0), None, "default", "minus", False),
    "vjp_rel_1e-4": (_vjp(1 + 1e-4), None, "precise", "1.0001 times", False),
    "vjp_rel_1e-6": (_vjp(1 + 1e-6), None, "precise", "1.000001 times", False),
    "vjp_ignores_grad": (lambda E, op, x, g: E.conj(UNARY[op][1](E, x)) + 0 * g, None,
                         "default", "not scaled by grad_output", False),
    "vjp_adds_constant": (lambda E, op, x, g: _vjp()(E, op, x, g) + 0.01, None, "default",
                          "not scaled by grad_output", False),
    "vjp_nondeterministic": (_noisy(1e-9), None, "default", "nondeterministic", False),
    "vjp_noisy": (_noisy(1e-2), None, "default", "nondeterministic", False),
    "vjp_wrong_for_negatives": (_subset, None, "default", "only 1 of 3", False),
    "jvp_times_2": (None, _jvp(2.0), "forward", "2 times", False),
    "jvp_sign": (None, _jvp(-1.0), "forward", "minus", False),
    "jvp_rel_1e-6": (None, _jvp(1 + 1e-6), "adjoint", "the two AD modes differ", False),
    "jvp_ignores_tangent": (None, lambda E, op, x, t: UNARY[op][1](E, x) + 0 * t, "forward",
                            "not scaled by tangent", False),
    "vjp_missing_conj": (lambda E, op, x, g: g * UNARY[op][1](E, x), None, "default",
                         "conjugate", True),
    "vjp_drops_imaginary": (lambda E, op, x, g: (g * E.conj(UNARY[op][1](E, x))).real * (1 + 0j),
                            None, "default", "imaginary", True),
    "jvp_spurious_conj": (None, lambda E, op, x, t: t * E.conj(UNARY[op][1](E, x)), "forward",
                          "conjugate", True),
    "jvp_conjugates_tangent": (None, lambda E, op, x, t: E.conj(t) * UNARY[op][1](E, x),
                               "forward", "input conjugated", True),
}


@dataclass
class Entry:
    """One formula: how to build it, its input, and what must catch it."""

    name: str
    build: Callable          # build(E) -> callable taking the inputs
    inputs: Callable         # inputs(E) -> tuple of tensors requiring grad
    caught_by: str | None    # None: a correct formula
    diagnosis: str | None = None
    out_idx: int = 0
    in_idx: int = 0


def _inputs(values):
    return lambda E: (E.from_numpy(values.copy()).requires_grad_(),)


def unary_entry(op: str, kind: str | None, complex_: bool) -> Entry:
    vjp, jvp, caught_by, diagnosis, _ = BUG_KINDS[kind] if kind else (None,) * 5
    vjp, jvp = vjp or _vjp(), jvp or _jvp()

    def build(E):
        fn = function(E, f"{op}_{kind or 'correct'}", UNARY[op][0],
                      lambda E, x, g: vjp(E, op, x, g), lambda E, x, t: jvp(E, op, x, t))
        return fn.apply
    suffix = "complex" if complex_ else "real"
    return Entry(f"{op}-{kind or 'correct'}-{suffix}", build,
                 _inputs(COMPLEX_X if complex_ else REAL_X), caught_by, diagnosis)


def second_order_entry(op: str, kind: str | None, complex_: bool) -> Entry:
    """``op`` whose backward goes through f' with a right or wrong derivative."""
    def build(E):
        dfn = derivative_fn(E, op, -1.0 if kind == "dd_sign" else 1.0)

        def vjp(E, x, g):
            if kind == "dd_detached":
                return g * E.conj(UNARY[op][1](E, x.detach()))
            return g * E.conj(dfn.apply(x))
        fn = function(E, f"{op}_{kind or 'correct'}_2nd", UNARY[op][0], vjp,
                      lambda E, x, t: t * dfn.apply(x))
        return fn.apply
    suffix = "complex" if complex_ else "real"
    # a backward on detached inputs builds no graph: named as having no double backward
    diagnosis = {"dd_sign": "minus", "dd_detached": "builds no graph of the inputs",
                 None: None}[kind]
    return Entry(f"{op}-{kind or 'correct'}-2nd-{suffix}", build,
                 _inputs(COMPLEX_X if complex_ else REAL_X), "gradgrad" if kind else None,
                 diagnosis)


def unary_entries() -> list:
    entries = []
    for op in UNARY:
        for complex_ in (False, True):
            entries.append(unary_entry(op, None, complex_))
            for kind, spec in BUG_KINDS.items():
                wanted = kind in COMPLEX_KINDS if complex_ else not spec[4]
                if wanted:
                    entries.append(unary_entry(op, kind, complex_))
    return entries


# complex inputs get the complex-only kinds and a few general ones
COMPLEX_KINDS = {"vjp_times_2", "vjp_sign", "vjp_rel_1e-6", "jvp_times_2", "jvp_rel_1e-6",
                 "vjp_missing_conj", "vjp_drops_imaginary", "jvp_spurious_conj",
                 "jvp_conjugates_tangent"}


A = np.array([[1.0, 2.0, -0.5], [0.3, -1.2, 0.8], [2.2, 0.1, 0.6]])
B = np.array([[0.4, -0.9, 1.1], [1.5, 0.2, -0.3], [-0.6, 0.7, 0.9]])


def _two(values_a, values_b):
    return lambda E: (E.from_numpy(values_a.copy()).requires_grad_(),
                      E.from_numpy(values_b.copy()).requires_grad_())


def _mv(bug):
    def build(E):
        def vjp(E, a, x, g):
            ga = E.outer(g, x)
            gx = (a @ g) if bug else (a.T @ g)
            return ga, gx
        return function(E, "mv_" + ("transposed" if bug else "correct"), lambda E, a, x: a @ x,
                        vjp, lambda E, a, x, ta, tx: ta @ x + a @ tx).apply
    return Entry("mv-" + ("transposed" if bug else "correct"), build, _two(A, REAL_X[:3]),
                 "default" if bug else None, "transpose" if bug else None, 0, 1)


def _mm(bug):
    def build(E):
        def vjp(E, x, w, g):
            gx = (g @ w) if bug else (g @ w.T)
            return gx, x.T @ g
        return function(E, "mm_" + ("transposed" if bug else "correct"), lambda E, x, w: x @ w,
                        vjp, lambda E, x, w, tx, tw: tx @ w + x @ tw).apply
    return Entry("mm-" + ("transposed" if bug else "correct"), build, _two(A, B),
                 "default" if bug else None, "transpose" if bug else None, 0, 0)


def _softmax(bug):
    def forward(E, x):
        e = E.exp(x)
        return e / e.sum()

    def vjp(E, x, g):
        s = forward(E, x)
        return g * s * (1 - s) if bug else s * (g - (g * s).sum())

    def jvp(E, x, t):
        s = forward(E, x)
        return s * (t - (t * s).sum())
    name = "softmax-" + ("no_cross_terms" if bug else "correct")
    return Entry(name, lambda E: function(E, name, forward, vjp, jvp).apply, _inputs(REAL_X),
                 "default" if bug else None, "off the diagonal" if bug else None)


def _mul(kind):
    """x * y, or f(x, y) = 2 x that ignores y."""
    def build(E):
        if kind == "unused_gets_grad":
            return function(E, "double_x", lambda E, x, y: 2 * x,
                            lambda E, x, y, g: (2 * g, g),
                            lambda E, x, y, tx, ty: 2 * tx).apply
        missing = kind == "missing_grad"
        return function(E, f"mul_{kind}", lambda E, x, y: x * y,
                        lambda E, x, y, g: (g * E.conj(y), None if missing else g * E.conj(x)),
                        lambda E, x, y, tx, ty: tx * y + x * ty).apply
    diag = {"correct": None, "unused_gets_grad": "does not use this input",
            "missing_grad": "analytical is zero"}[kind]
    return Entry(f"mul-{kind}", build, _two(REAL_X, REAL_X[::-1].copy() + 0.5),
                 None if kind == "correct" else "default", diag, 0, 1)


C = 0.6 + 1.7j


def _real_to_complex(bug):
    name = "scale_by_complex-" + ("missing_conj" if bug else "correct")

    def build(E):
        return function(E, name, lambda E, x: x * C,
                        lambda E, x, g: (g * (C if bug else np.conj(C))).real,
                        lambda E, x, t: t * C).apply
    return Entry(name, build, _inputs(REAL_X), "default" if bug else None,
                 "conjugate" if bug else None)


def _abs2(kind):
    name = f"abs_squared-{kind}"

    def vjp(E, z, g):
        if kind == "half":
            return g * z
        return 2 * g * (E.conj(z) if kind == "conj" else z)

    def build(E):
        return function(E, name, lambda E, z: (z * E.conj(z)).real * 1, vjp,
                        lambda E, z, t: 2 * (E.conj(z) * t).real * 1).apply
    diag = {"correct": None, "half": "1/2 times", "conj": "conjugate"}[kind]
    return Entry(name, build, _inputs(COMPLEX_X), None if kind == "correct" else "default", diag)


def _conj(bug):
    name = "conj-" + ("missing_conj" if bug else "correct")

    def build(E):
        return function(E, name, lambda E, z: E.conj(z) * 1,
                        lambda E, z, g: g * 1 if bug else E.conj(g),
                        lambda E, z, t: E.conj(t) * 1).apply
    return Entry(name, build, _inputs(COMPLEX_X), "default" if bug else None,
                 "conjugate" if bug else None)


def _sincos(bug):
    name = "sincos-" + ("sign_in_second_output" if bug else "correct")

    def build(E):
        return function(E, name, lambda E, x: (E.sin(x), E.cos(x)),
                        lambda E, x, g0, g1: g0 * E.cos(x) + (1 if bug else -1) * g1 * E.sin(x),
                        lambda E, x, t: (t * E.cos(x), -t * E.sin(x))).apply
    return Entry(name, build, _inputs(REAL_X), "default" if bug else None,
                 "minus" if bug else None, out_idx=1)


def structural_entries() -> list:
    entries = []
    for bug in (False, True):
        entries += [_mv(bug), _mm(bug), _softmax(bug), _real_to_complex(bug), _conj(bug),
                    _sincos(bug)]
    entries += [_mul(k) for k in ("correct", "unused_gets_grad", "missing_grad")]
    entries += [_abs2(k) for k in ("correct", "half", "conj")]
    return entries


def second_order_entries() -> list:
    entries = []
    for op in ("sin", "exp", "tanh", "reciprocal"):
        for complex_ in (False, True):
            for kind in (None, "dd_sign", "dd_detached"):
                if complex_ and kind == "dd_detached":
                    continue
                entries.append(second_order_entry(op, kind, complex_))
    return entries


def _scale(E, value, factor):
    return tuple(factor * v for v in value) if isinstance(value, tuple) else factor * value


#: real formulas as (forward, vjp, jvp, inputs) for ``relative_entries``
_FORMULAS = {
    **{op: (f, lambda E, x, g, d=d: g * d(E, x), lambda E, x, t, d=d: t * d(E, x), REAL_X)
       for op, (f, d, _) in UNARY.items()},
    "mm": (lambda E, x, w: x @ w, lambda E, x, w, g: (g @ w.T, x.T @ g),
           lambda E, x, w, tx, tw: tx @ w + x @ tw, (A, B)),
    "mul": (lambda E, x, y: x * y, lambda E, x, y, g: (g * y, g * x),
            lambda E, x, y, tx, ty: tx * y + x * ty, (REAL_X, REAL_X[::-1] + 0.5)),
}


def relative_entries(rel: float) -> list:
    """Every formula of ``_FORMULAS`` with its vjp (``caught_by="reverse"``) or
    its jvp (``"forward"``) off by a factor ``1 + rel``: the planted bugs of
    the low-precision targets (``rel=0``: the correct formulas)."""
    entries = []
    for name, (forward, vjp, jvp, values) in _FORMULAS.items():
        for mode in ("reverse", "forward"):
            back = 1 + rel if mode == "reverse" else 1.0
            tangent = 1 + rel if mode == "forward" else 1.0

            def build(E, forward=forward, vjp=vjp, jvp=jvp, back=back, tangent=tangent,
                      label=f"{name}_{mode}_{rel:g}"):
                return function(E, label, forward,
                                lambda E, *a: _scale(E, vjp(E, *a), back),
                                lambda E, *a: _scale(E, jvp(E, *a), tangent)).apply
            inputs = _two(*values) if isinstance(values, tuple) else _inputs(values)
            entries.append(Entry(f"{name}-{mode}-rel{rel:g}", build, inputs,
                                 mode if rel else None))
    return entries


#: (engine, entry name) -> the engine bug that makes a correct entry fail;
#: each is a strict xfail, so the test fails again once the engine is fixed.
KNOWN_ENGINE_BUGS: dict = {}


def all_entries() -> list:
    return unary_entries() + structural_entries() + second_order_entries()


def bugs() -> list:
    return [e for e in all_entries() if e.caught_by]


def correct() -> list:
    return [e for e in all_entries() if not e.caught_by]


def entry(name: str) -> Entry:
    """The zoo entry called ``name`` (``"sin-vjp_missing_conj-complex"``)."""
    found = [e for e in all_entries() if e.name == name]
    if not found:
        raise KeyError(f"no zoo entry {name!r}")
    return found[0]


# Named Functions the other test modules check. Each takes the engine module E.

def scaled_vjp_sin(E, factor: float):
    """sin whose vjp is ``factor`` times the right one (no jvp)."""
    return function(E, "ScaledSin", lambda E, x: E.sin(x),
                    lambda E, x, g: g * E.cos(x) * factor).apply


def one_wrong_entry(E, entry: int = 2, extra: float = 0.5):
    """3 x whose vjp is right except entry ``entry``, off by ``extra`` times g."""
    def backward(E, x, g):
        mask = np.zeros(tuple(x.shape))
        mask[entry] = extra
        return 3 * g + g * E.from_numpy(mask)
    return function(E, "OneEntry", lambda E, x: x * 3, backward).apply


def scaled_inv(E, rel: float, entry=None):
    """linalg.inv whose vjp is off by a factor ``1 + rel`` in ``entry`` (or everywhere)."""
    def backward(E, a, g):
        inv = E.linalg.inv(a)
        grad = -(inv.mH @ g @ inv.mH)
        scale = np.ones(tuple(grad.shape))
        scale[entry if entry is not None else ...] = 1.0 + rel
        return grad * E.from_numpy(scale)
    return function(E, "ScaledInv", lambda E, a: E.linalg.inv(a), backward).apply


def exp_with(E, jvp_factor: float = 1.0, noise: float = 0.0):
    """exp whose jvp is ``jvp_factor`` times the right one and whose vjp is
    multiplied by fresh noise of relative size ``noise`` on every call."""
    def backward(E, x, g):
        jitter = E.from_numpy(noise * NOISE.standard_normal(tuple(x.shape)))
        return g * E.exp(x) * (1 + jitter)
    return function(E, "Exp", lambda E, x: E.exp(x), backward,
                    lambda E, x, t: t * E.exp(x) * jvp_factor).apply


def _raise(error):
    raise error


def no_backward(E):
    """2 x whose backward raises ZeroDivisionError."""
    return function(E, "NoBackward", lambda E, x: x * 2,
                    lambda E, x, g: _raise(ZeroDivisionError("oops"))).apply


def no_jvp(E):
    """2 x with a right backward and no jvp."""
    return function(E, "NoJvp", lambda E, x: x * 2, lambda E, x, g: 2 * g).apply


def wrong_factor(E):
    """2 x whose backward returns 3 g."""
    return function(E, "Wrong", lambda E, x: x * 2, lambda E, x, g: 3 * g).apply


def adds_constant(E):
    """2 x whose backward adds 1: wrong where the output gradient is undefined."""
    return function(E, "AddsConstant", lambda E, x: x * 2, lambda E, x, g: g * 2 + 1).apply


def sincos_undefined_grads(E):
    """(sin, cos) of x, receiving None for undefined output gradients, whose
    backward assumes both are defined."""
    return function(E, "SinCosNoneGrads", lambda E, x: (E.sin(x), E.cos(x)),
                    lambda E, x, g0, g1: g0 * E.cos(x) - g1 * E.sin(x),
                    materialize=False).apply


def reads_its_tangent(E):
    """2 x whose jvp reads a value of its tangent (cannot run under vmap)."""
    return function(E, "ReadsItsTangent", lambda E, x: x * 2, lambda E, x, g: g * 2,
                    lambda E, x, t: t * 2 if float(t.sum()) == float(t.sum()) else t).apply


def wrong_second_derivative(E):
    """sin whose vjp is right but whose own derivative is +sin instead of -sin."""
    def backward(E, x, g):
        # cos(x) written so that its derivative is +sin(x): right value, wrong slope
        return g * (E.cos(x.detach()) + (x - x.detach()) * E.sin(x.detach()))
    return function(E, "WrongSecond", lambda E, x: E.sin(x), backward).apply
