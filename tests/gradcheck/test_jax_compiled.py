"""JAX code is checked compiled: once per shape, not once per evaluation.

A command-line check of a one-line ``custom_vjp`` (examples/jax_ops.py's
``my_tanh``) spent most of its 11 seconds of checks running its first
derivative eagerly one point at a time and compiling single operations
(bench/cli_startup.md). Now the user's function
runs under ``jax.jit`` where tracing it works, and as it is where it does not
(Python control flow on values, outputs that are not arrays, inputs narrower
than double precision). The oracle of every verdict here is finite
differences or the plainly run function, not the compiled one.
"""
from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="jax is not installed (pip install adcheck[jax])")
jnp = pytest.importorskip("jax.numpy", reason="jax is not installed (pip install adcheck[jax])")

from adcheck.gradcheck import check  # noqa: E402
from adcheck.gradcheck.engines.jaxcompiled import Compiled, mapped  # noqa: E402

X = np.array([[0.7, -1.3, 0.4, 0.2], [1.1, -0.6, 0.9, -0.3], [0.5, 0.8, -1.7, 0.1]])


pytestmark = pytest.mark.usefixtures("jax_x64")


def tanh_rule(factor: float, calls: list):
    """A ``custom_vjp`` tanh whose backward is ``factor`` times the right one;
    ``calls`` counts the Python calls of its forward (a trace is one call)."""
    @jax.custom_vjp
    def f(x):
        calls.append(1)
        return jnp.tanh(x)

    def fwd(x):
        calls.append(1)
        y = jnp.tanh(x)
        return y, y

    f.defvjp(fwd, lambda y, ct: (factor * ct * (1 - y * y),))
    return f


#: backend compilations JAX reports while ``counting`` is on
_COMPILES: list = []
_COUNTING: list = []


def _listen(name, seconds, **_):
    if _COUNTING and name == "/jax/core/compile/backend_compile_duration":
        _COMPILES.append(seconds)


jax.monitoring.register_event_duration_secs_listener(_listen)


def compilations(run) -> int:
    """How many programs XLA compiled while ``run()`` ran."""
    _COMPILES.clear()
    _COUNTING.append(True)
    try:
        run()
    finally:
        _COUNTING.clear()
    return len(_COMPILES)


def test_a_right_rule_passes_and_its_function_is_traced_not_run_per_evaluation():
    calls: list = []
    report = check(tanh_rule(1.0, calls), (jnp.asarray(X),), precise=True, seed=0)
    assert report.passed, report
    assert report.counts["function"] > 100
    # each trace is a call (a shape, a batch size, under vjp or jit): 20 here; run
    # eagerly, every batch and every single evaluation was one (52)
    assert len(calls) < 30, len(calls)


def test_a_second_order_check_maps_its_first_derivative_in_batches():
    calls: list = []
    report = check(tanh_rule(1.0, calls), (jnp.asarray(X - 0.05),), precise=True, seed=0,
                   order=2, explore=False)
    assert report.passed, report
    # the first derivative's differences ran one point at a time (413 calls of the
    # forward, 5 batched calls): now vmapped through its functional twin (8 calls,
    # 48 batched calls; 19 in a full test session, not pinned down: the batches are
    # sized by the first evaluation's measured bytes, 19.9 MB here with JAX's
    # compilation in them)
    assert len(calls) < 50, len(calls)
    assert report.batching["batched_calls"] > 10, report.batching


def test_a_wrong_rule_still_fails_by_its_factor():
    report = check(tanh_rule(1.5, []), (jnp.asarray(X),), precise=True, seed=0)
    assert not report.passed
    assert "1.5 times numerical" in report.failures[0].diagnosis


def test_batches_of_sizes_up_to_a_power_of_two_compile_as_one():
    compiled = Compiled(lambda x: jnp.sin(x) * 2.0)
    base = np.random.default_rng(0).standard_normal((8, 5, 7))  # (a shape no other test has)
    arrays = [jax.device_put(base[:n]) for n in (5, 6, 7, 8)]
    outs: list = []
    count = compilations(lambda: outs.extend(mapped(compiled, (0,))(a) for a in arrays))
    assert count == 1            # (unpadded: one for each of the four sizes)
    for a, out in zip(arrays, outs):
        np.testing.assert_allclose(np.asarray(out), np.sin(np.asarray(a)) * 2.0, rtol=1e-15)


def test_control_flow_on_values_runs_the_function_as_it_is():
    calls: list = []

    def branchy(x):
        calls.append(1)
        k = int(jnp.argmax(x[0]))   # a Python int of a value: jax.vjp takes it, no trace does
        return jnp.sin(x) * (k + 1)

    report = check(branchy, (jnp.asarray(X),), precise=True, seed=0)
    assert report.passed, report
    assert len(calls) >= report.counts["function"] > 100     # each evaluation ran it


def test_a_boolean_mask_runs_the_function_as_it_is():
    # (x[x > 0] has a shape of its values: jax.vjp takes it, a trace raises
    # NonConcreteBooleanIndexError, an IndexError rather than a TypeError)
    def positive_part_sum(x):
        return jnp.sum(jnp.sin(x[x > 0]))

    report = check(positive_part_sum, (jnp.asarray(X),), precise=True, seed=0)
    assert report.passed, report


def test_outputs_other_than_arrays_come_back_as_the_function_returns_them():
    compiled = Compiled(lambda x: (jnp.sin(x), 0.5, np.ones(2)))
    out = compiled(jnp.asarray(X))
    assert out[1] == 0.5 and type(out[1]) is float
    assert isinstance(out[2], np.ndarray)
    assert compiled.failed is not None


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16, jnp.float16])
def test_inputs_narrower_than_double_run_uncompiled(dtype):
    # (XLA may keep a fused low-precision computation wider than each operation rounds)
    calls: list = []

    def f(x):
        calls.append(1)
        return x * x

    compiled = Compiled(f)
    x = jnp.asarray(X, dtype=dtype)
    first, second = compiled(x), compiled(x)
    assert len(calls) == 2
    assert np.array_equal(np.asarray(first, np.float64), np.asarray(f(x), np.float64))
    assert np.array_equal(np.asarray(second, np.float64), np.asarray(first, np.float64))


def test_double_inputs_are_traced_once_per_shape_and_arguments_that_are_not_arrays():
    calls: list = []

    def f(x, power):
        calls.append(power)
        return x ** power

    compiled = Compiled(f)
    x = jnp.asarray(X)
    for _ in range(3):
        np.testing.assert_allclose(compiled(x, 3), X ** 3, rtol=1e-15)
    np.testing.assert_allclose(compiled(x, 2), X ** 2, rtol=1e-15)
    np.testing.assert_allclose(compiled(x[:2], 2), X[:2] ** 2, rtol=1e-15)
    assert calls == [3, 2, 2]        # (a new power, a new shape: a trace each)


@pytest.mark.parametrize("size", [2, 3, 5, 7, 8])
def test_a_padded_batch_gives_the_values_of_each_example(size):
    rng = np.random.default_rng(size)
    xs, ys = rng.standard_normal((size, 3)), rng.standard_normal((size, 3))
    fixed = jnp.asarray(rng.standard_normal(3))

    def f(x, c, y):
        return jnp.sin(x) * c + y, jnp.sum(x * y)

    out, total = mapped(f, (0, None, 0))(jnp.asarray(xs), fixed, jnp.asarray(ys))
    assert out.shape == (size, 3) and total.shape == (size,)
    np.testing.assert_allclose(np.asarray(out), np.sin(xs) * np.asarray(fixed) + ys,
                               rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(np.asarray(total), np.sum(xs * ys, axis=1), rtol=1e-14)
