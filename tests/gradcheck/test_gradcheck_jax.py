"""gradcheck on JAX: custom rules right and wrong, each beside its refengine twin.

A twin is the same formula (or the same bug) written in its own engine's
convention: a ``jax.custom_vjp`` rule maps a cotangent ``ct`` the JAX way,
the refengine ``Function`` maps a grad_output ``g`` the PyTorch way. Both
must get the same verdict and the same diagnosis. The oracle for the JAX
adapter's complex convention is finite differences, not the adapter.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="jax is not installed (pip install adcheck[jax])")
jnp = pytest.importorskip("jax.numpy", reason="jax is not installed (pip install adcheck[jax])")

from gradcheck_zoo import function

from adcheck import refengine
from adcheck.gradcheck import (
    GradcheckError,
    check,
    forward_jacobian,
    gradcheck,
    gradgradcheck,
    reverse_jacobian,
)
from adcheck.gradcheck.engines import engine_for
from adcheck.gradcheck.engines.jax import nograd

REPO = Path(__file__).resolve().parents[2]
REAL_X = np.array([0.7, -1.3, 0.4])
COMPLEX_X = np.array([0.7 + 0.3j, -1.1 + 0.5j, 0.4 - 0.8j])


#: gradcheck needs float64: JAX's 64-bit mode, for this module only
pytestmark = pytest.mark.usefixtures("jax_x64")


def jax_inputs(*arrays):
    return tuple(jnp.asarray(a) for a in arrays)


def ref_inputs(*arrays):
    return tuple(refengine.from_numpy(a.copy()).requires_grad_() for a in arrays)


def custom_vjp(forward, bwd):
    """A ``jax.custom_vjp`` of ``forward(E, x)`` whose rule is ``bwd(E, x, ct)``."""
    f = jax.custom_vjp(lambda x: forward(jnp, x))
    f.defvjp(lambda x: (forward(jnp, x), x), lambda x, ct: (bwd(jnp, x, ct),))
    return f


def custom_jvp(forward, jvp):
    """A ``jax.custom_jvp`` of ``forward(E, x)`` whose rule is ``jvp(E, x, t)``."""
    f = jax.custom_jvp(lambda x: forward(jnp, x))
    f.defjvp(lambda primals, tangents: (forward(jnp, primals[0]),
                                        jvp(jnp, primals[0], tangents[0])))
    return f


def sin(E, x):
    return E.sin(x)


def abs2(E, z):
    return (z * E.conj(z)).real


@dataclass
class Twin:
    """A JAX rule and its refengine twin: ``jax_rule(E, x, ct)`` for custom_vjp
    (``jvp`` False) or ``jax_rule(E, x, t)`` for custom_jvp (``jvp`` True);
    ``ref_backward(E, x, g)`` and ``ref_jvp(E, x, t)`` for the Function."""

    name: str
    forward: object
    jax_rule: object
    ref_backward: object
    ref_jvp: object
    x: np.ndarray
    diagnosis: str | None     # a phrase of the diagnosis; None: correct
    jvp: bool = False

    def jax_function(self):
        build = custom_jvp if self.jvp else custom_vjp
        return build(self.forward, self.jax_rule)

    def ref_function(self):
        return function(refengine, self.name, self.forward, self.ref_backward,
                        self.ref_jvp).apply


def _cos_t(E, x, t):
    return t * E.cos(x)


TWINS = [
    # custom_vjp: JAX's rule is ct * f'(x) for holomorphic f; PyTorch's is g * conj(f'(x))
    Twin("sin", sin, lambda E, x, ct: ct * E.cos(x),
         lambda E, x, g: g * E.conj(E.cos(x)), _cos_t, REAL_X, None),
    Twin("sin", sin, lambda E, x, ct: ct * E.cos(x),
         lambda E, x, g: g * E.conj(E.cos(x)), _cos_t, COMPLEX_X, None),
    Twin("sin_times_2", sin, lambda E, x, ct: 2 * ct * E.cos(x),
         lambda E, x, g: 2 * g * E.conj(E.cos(x)), _cos_t, REAL_X, "2 times"),
    Twin("sin_times_2", sin, lambda E, x, ct: 2 * ct * E.cos(x),
         lambda E, x, g: 2 * g * E.conj(E.cos(x)), _cos_t, COMPLEX_X, "2 times"),
    # PyTorch's conj() carried into a JAX rule, and its twin: a refengine rule without it
    Twin("sin_wrong_conj", sin, lambda E, x, ct: ct * E.conj(E.cos(x)),
         lambda E, x, g: g * E.cos(x), _cos_t, COMPLEX_X, "conjugate"),
    # |z|^2 (not holomorphic): JAX's pullback is 2 ct conj(z), PyTorch's 2 g z
    Twin("abs2", abs2, lambda E, z, ct: 2 * ct * E.conj(z),
         lambda E, z, g: 2 * g * z, lambda E, z, t: 2 * (E.conj(z) * t).real, COMPLEX_X, None),
    Twin("abs2_missing_conj", abs2, lambda E, z, ct: 2 * ct * z,
         lambda E, z, g: 2 * g * E.conj(z), lambda E, z, t: 2 * (E.conj(z) * t).real,
         COMPLEX_X, "conjugate"),
    # custom_jvp: JAX derives the vjp by transposing the jvp, so the twin's
    # backward is the adjoint of its jvp, bug included
    Twin("sin_jvp", sin, _cos_t, lambda E, x, g: g * E.conj(E.cos(x)), _cos_t, REAL_X, None,
         jvp=True),
    Twin("sin_jvp_times_2", sin, lambda E, x, t: 2 * t * E.cos(x),
         lambda E, x, g: 2 * g * E.conj(E.cos(x)), lambda E, x, t: 2 * t * E.cos(x), REAL_X,
         "2 times", jvp=True),
    Twin("sin_jvp_conj", sin, lambda E, x, t: t * E.conj(E.cos(x)),
         lambda E, x, g: g * E.cos(x), lambda E, x, t: t * E.conj(E.cos(x)), COMPLEX_X,
         "conjugate", jvp=True),
]


def _twin_id(twin):
    return f"{twin.name}-{'complex' if np.iscomplexobj(twin.x) else 'real'}"


def _kind(text):
    """A diagnosis without its numbers: the kind of error it names."""
    return None if text is None else re.sub(r"[-+]?\d[\d.e+-]*", "#", text)


def _failures(report):
    return sorted((r.check, r.mode, r.out_idx, r.in_idx, _kind(r.diagnosis))
                  for r in report.failures)


@pytest.mark.parametrize("twin", TWINS, ids=_twin_id)
def test_a_jax_rule_gets_the_verdict_and_diagnosis_of_its_refengine_twin(twin):
    options = {"seed": 0, "check_forward_ad": twin.jvp}
    mine = check(twin.jax_function(), jax_inputs(twin.x), **options)
    theirs = check(twin.ref_function(), ref_inputs(twin.x), **options)
    assert mine.engine == "jax" and theirs.engine == "refengine"
    assert mine.passed == theirs.passed == (twin.diagnosis is None), mine.message()
    assert _failures(mine) == _failures(theirs)
    assert _kind(mine.diagnosis) == _kind(theirs.diagnosis)
    assert (twin.diagnosis or "") in (mine.diagnosis or ""), mine.message()


@pytest.mark.parametrize("twin", [t for t in TWINS if t.diagnosis is None], ids=_twin_id)
def test_a_correct_jax_rule_passes_the_precise_and_fast_checks(twin):
    f, inputs = twin.jax_function(), jax_inputs(twin.x)
    assert check(f, inputs, precise=True, check_forward_ad=twin.jvp, seed=0).passed
    assert check(f, inputs, fast_mode=True, probes=2, check_forward_ad=twin.jvp, seed=0).passed


def test_a_wrong_custom_vjp_raises_with_the_diagnosis():
    doubled = custom_vjp(sin, lambda E, x, ct: 2 * ct * E.cos(x))
    with pytest.raises(GradcheckError) as info:
        gradcheck(doubled, jax_inputs(REAL_X))
    message = str(info.value)
    assert "reverse-mode Jacobian differs from numerical for output 0, input 0" in message
    assert "analytical is 2 times numerical" in message


def test_a_custom_vjp_has_no_forward_mode_and_the_error_says_what_to_do():
    f = custom_vjp(sin, lambda E, x, ct: ct * E.cos(x))
    with pytest.raises(GradcheckError, match="check_forward_ad=False"):
        gradcheck(f, jax_inputs(REAL_X), check_forward_ad=True)


# ----- the complex convention, against finite differences -----------------------
FUNCTIONS = {    # name: (f(E, z), input); holomorphic or not, complex or real on each side
    "sin": (lambda E, z: E.sin(z), COMPLEX_X),
    "abs": (lambda E, z: E.abs(z), COMPLEX_X),
    "conj": (lambda E, z: E.conj(z), COMPLEX_X),
    "real_times_imag": (lambda E, z: z.real * z.imag, COMPLEX_X),
    "z_conj_z_squared": (lambda E, z: z * E.conj(z) ** 2, COMPLEX_X),
    "real_to_complex": (lambda E, x: x * E.exp(1j * x), REAL_X),
}


def _coords(w) -> np.ndarray:
    """Real coordinates: (re, im) per element of a complex array."""
    w = np.asarray(w).ravel()
    return np.stack([w.real, w.imag], -1).ravel() if np.iscomplexobj(w) else w


def _units(like) -> list:
    """One array per real coordinate of ``like``: 1 (or 1j) there, 0 elsewhere."""
    steps = [1, 1j] if np.iscomplexobj(like) else [1.0]
    units = []
    for k in range(np.size(like)):
        for step in steps:
            unit = np.zeros(np.size(like), dtype=np.asarray(like).dtype)
            unit[k] = step
            units.append(unit.reshape(np.shape(like)))
    return units


def _finite_differences(f, x, eps=1e-6) -> np.ndarray:
    """The real-coordinate Jacobian of ``f`` at ``x`` (rows: output coordinates)."""
    return np.array([(_coords(f(x + eps * u)) - _coords(f(x - eps * u))) / (2 * eps)
                     for u in _units(x)]).T


@pytest.mark.parametrize("name", FUNCTIONS)
def test_jax_pullbacks_follow_the_derived_convention(name):
    # adcheck's row for grad_output v is conj(vjp_jax(conj(v))), for any f
    f, x = FUNCTIONS[name]
    out, pullback = jax.vjp(lambda z: f(jnp, z), jnp.asarray(x))
    expected = _finite_differences(lambda w: f(jnp, jnp.asarray(w)), x)
    rows = [_coords(np.conj(pullback(jnp.asarray(np.conj(v)))[0])) for v in _units(out)]
    np.testing.assert_allclose(np.array(rows), expected, atol=1e-8)
    # jvps need no conversion: both engines push tangents forward R-linearly
    cols = [_coords(jax.jvp(lambda z: f(jnp, z), (jnp.asarray(x),), (jnp.asarray(u),))[1])
            for u in _units(x)]
    np.testing.assert_allclose(np.array(cols).T, expected, atol=1e-8)


# conj is left out: its vjp is conj(v) in both conventions
@pytest.mark.parametrize("name", [name for name in FUNCTIONS if name != "conj"])
def test_jax_own_vjp_would_be_wrong_without_the_conversion(name):
    f, x = FUNCTIONS[name]
    out, pullback = jax.vjp(lambda z: f(jnp, z), jnp.asarray(x))
    expected = _finite_differences(lambda w: f(jnp, jnp.asarray(w)), x)
    raw = [_coords(pullback(jnp.asarray(v))[0]) for v in _units(out)]
    assert not np.allclose(np.array(raw), expected, atol=1e-6)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_jax_jacobians_match_finite_differences_and_refengine(name):
    f, x = FUNCTIONS[name]
    mine = jax_inputs(x)
    expected = _finite_differences(lambda w: f(jnp, jnp.asarray(w)), x)
    np.testing.assert_allclose(reverse_jacobian(lambda z: f(jnp, z), mine)[0, 0], expected,
                               atol=1e-8)
    np.testing.assert_allclose(forward_jacobian(lambda z: f(jnp, z), mine)[0, 0], expected,
                               atol=1e-8)
    theirs = reverse_jacobian(lambda z: f(refengine, z), ref_inputs(x))
    np.testing.assert_allclose(theirs[0, 0], expected, atol=1e-8)


def test_batched_and_dtype_checks_run_on_jax():
    f = FUNCTIONS["z_conj_z_squared"][0]
    report = check(lambda z: f(jnp, z), jax_inputs(COMPLEX_X), check_forward_ad=True,
                   precise=True, check_batched_grad=True, check_batched_forward_grad=True,
                   check_grad_dtypes=True, seed=0)
    assert report.passed, report.message()


# ----- what requires grad, outputs, second order, precision, detection -------------
def test_integer_and_nograd_inputs_are_held_fixed_and_tuples_are_outputs():
    x, n = jnp.asarray(REAL_X), jnp.asarray(3)
    scale = nograd(jnp.asarray([2.0, 0.5, -1.0]))

    def f(x, n, scale):
        return x ** n * scale, jnp.sum(x) * 2
    report = check(f, (x, n, scale), check_forward_ad=True, seed=0)
    assert report.passed, report.message()
    assert set(report.jacobians["numerical"].keys()) == {(0, 0), (1, 0)}


def test_gradgradcheck_differentiates_the_first_derivative_again():
    z = jax_inputs(COMPLEX_X)
    assert gradgradcheck(lambda z: jnp.sin(z) * jnp.conj(z), z, check_fwd_over_rev=True)
    # a custom_vjp whose pullback is right but not itself differentiated right
    wrong_cos = custom_vjp(lambda E, x: E.cos(x), lambda E, x, ct: ct * E.sin(x))
    f = custom_vjp(sin, lambda E, x, ct: ct * wrong_cos(x))
    assert check(f, jax_inputs(REAL_X), seed=0).passed
    report = check(f, jax_inputs(REAL_X), order=2, seed=0)
    assert not report.passed and "minus numerical" in report.diagnosis


def test_float32_while_jax_is_32_bit_is_refused_with_how_to_enable_x64():
    jax.config.update("jax_enable_x64", False)
    try:
        x = jnp.asarray(REAL_X)
        with pytest.raises(ValueError, match="jax_enable_x64"):
            check(jnp.sin, (x,))
    finally:
        jax.config.update("jax_enable_x64", True)


def test_float32_under_x64_warns_as_on_other_engines():
    with pytest.warns(UserWarning, match="not double precision"):
        check(jnp.sin, (jnp.asarray(REAL_X, dtype=jnp.float32),), atol=1e-2, rtol=1e-2)


def test_engine_detection_and_mixing():
    assert engine_for((jnp.asarray(REAL_X), 2.0)).name == "jax"
    with pytest.raises(ValueError, match="mix jax and refengine"):
        engine_for(jax_inputs(REAL_X) + ref_inputs(REAL_X))


def test_checking_refengine_functions_never_imports_jax():
    code = ("import sys, numpy as np, adcheck.refengine as E\n"
            "from adcheck.gradcheck import check\n"
            "x = E.from_numpy(np.array([0.5, 1.5])).requires_grad_()\n"
            "assert check(E.sin, (x,), check_forward_ad=True).passed\n"
            "print('jax' in sys.modules, 'jaxlib' in sys.modules)\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.stdout.split() == ["False", "False"], result.stderr
