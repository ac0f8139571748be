"""The first derivative as a function, for second-order checks.

A second-order check (``gradgradcheck``, ``check(order=2)``) checks this
function like any other: its inputs are the function's inputs followed by
the grad_outputs, its outputs the vjp (one gradient per input that requires
grad and gets one). Failures are then named as second-order ones ("reverse
over reverse"), see ``gradcheck.core.modes.failure_text``.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core import grids, measured
from adcheck.gradcheck.engines import recompute
from adcheck.gradcheck.core.problem import Problem, as_tuple
from adcheck.gradcheck.core.seeding import uniform_like
from adcheck.gradcheck.errors import GradcheckError, NoDoubleBackward


def _random_like(problem, out_idx, rng):
    """Uniform random values in [-1, 1) shaped and typed like output ``out_idx``."""
    return problem.engine.from_numpy(uniform_like(rng, problem.out_arrays[out_idx]),
                                     requires_grad=True, dtype=problem.out_dtypes[out_idx])


def builds_graph(E, call) -> bool | None:
    """Whether a first derivative's gradients (``call``: the first call's
    inputs and gradients) depend, through the graph their backward built, on
    at least one input (not only on the grad_outputs). ``False``: the backward
    computes outside autograd, on detached tensors, or is
    ``@once_differentiable``; its second derivative is then zero to autograd
    whatever the function's is (torch raises "appears to not have been used in
    the graph" where it is asked for). ``None``: no call yet, or the engine
    cannot tell."""
    if call is None:
        return None
    primals, grads = call
    try:
        return _reaches(E, grads, primals)
    except Exception:   # an engine without a tape (JAX), or a graph that refuses it
        return None


def reaches_grad_outputs(E, grads, grad_outputs) -> bool:
    """Whether a first derivative's gradients ``grads`` were built in a graph
    that autograd can differentiate with respect to ``grad_outputs``: a
    backward written in the engine's operations, even where its dependence on
    the inputs is lost. Not one that computes outside autograd (no graph at
    all) or is ``@once_differentiable`` (whose graph raises when asked)."""
    try:
        return _reaches(E, grads, [g for g in grad_outputs
                                   if E.is_tensor(g) and E.requires_grad(g)])
    except Exception:   # noqa: BLE001 - @once_differentiable's delayed error, or no tape
        return False


#: how an engine refuses to differentiate a ``@once_differentiable`` backward again
#: (refengine's delayed error; torch's has no edge to differentiate, and says nothing)
ONCE_WORDS = "@once_differentiable"


def builds_no_graph(E, primals, grads, grad_outputs) -> bool:
    """Whether a first derivative's gradients ``grads`` (of its first call, at
    ``primals`` and ``grad_outputs``) were built in no graph at all, of neither
    the inputs nor the grad_outputs: the backward computes outside autograd or is
    ``@once_differentiable``, so the function has no double backward, whatever
    a second-order check would compute. Cheap (one backward of the gradients),
    so a check asks it before any Jacobian. ``False`` where no grad_output
    requires grad (a linear function's gradients have no graph then either),
    where the engine cannot tell, or where the backward's graph raises for
    another reason (a double backward that is broken: the check finds it)."""
    wrt = [g for g in grad_outputs if E.is_tensor(g) and E.requires_grad(g)]
    if not wrt or builds_graph(E, (primals, grads)) is not False or _all_zero(E, grads):
        # (a first derivative that is zero, pow's at exponent 0, has no graph to build:
        # nothing of it requires grad, which the check says as it did before)
        return False
    try:
        return not _reaches(E, grads, wrt)
    except Exception as exc:   # noqa: BLE001 - said by its words below
        return ONCE_WORDS in str(exc)


def _all_zero(E, grads) -> bool:
    """Whether every gradient in ``grads`` is zero (``None``, none, counts as zero)."""
    return all(not np.any(E.to_numpy(g)) for g in grads if g is not None and E.is_tensor(g))


def _reaches(E, grads, wrt) -> bool:
    """Whether the gradients ``grads`` that have a graph reach any of ``wrt``
    through it (their vjp with ones gives one of them a gradient); raises what
    the engine raises when asked."""
    taped = [g for g in grads if g is not None and E.is_tensor(g) and E.requires_grad(g)]
    if not taped or not wrt:
        return False
    seconds = E.grad(taped, wrt, [E.from_numpy(np.ones_like(E.to_numpy(g)), dtype=g.dtype)
                                  for g in taped])
    return any(s is not None for s in seconds)


def _raise_for_graph(E, outs, primals, gos, exc: Exception):
    """Raise what a backward that raised ``exc`` with ``create_graph=True``
    means: ``NoDoubleBackward`` when it runs without a graph (NumPy inside: it
    has no double backward), else ``exc`` itself (a backward that is broken).
    A backward that runs when asked again is neither: it raised on one call only
    (torchkbnufft's double backward races across threads)."""
    try:
        E.grad(outs, primals, [E.handed(g) for g in gos], create_graph=True)
    except Exception:  # noqa: BLE001 - raised again: the same cause, judged below
        pass
    else:
        raise GradcheckError(
            f"nondeterministic backward: asked to build a graph (create_graph=True), it raised "
            f"{type(exc).__name__} ({exc}) on one call and ran on the next at the same inputs: "
            "it races or keeps state (an in-place accumulation across threads, a cache)"
        ) from exc
    try:
        E.grad(outs, primals, [E.from_numpy(E.to_numpy(g), dtype=g.dtype) for g in gos])
    except Exception:
        raise exc from None
    raise NoDoubleBackward(
        f"the backward raised {type(exc).__name__} ({exc}) when asked to build a graph "
        "(create_graph=True), and runs without one: it has no double backward") from exc


#: engines whose backward computes the same values with and without a graph of them:
#: refengine's formulas do not depend on the grad mode (every screen of the registry
#: sweep identical to the bit); torch's do (linalg.solve, det and slogdet differentiate
#: through other kernels when asked to build a graph: last bits apart)
SAME_WITHOUT_GRAPH = frozenset({"refengine"})


class Reshaped(Exception):
    """A first derivative reused at another point (``first.expect``) where the
    function raises, or its outputs are not shaped as at the point its
    grad_outputs were drawn for: build the first derivative anew there."""


def _signature(E, outs) -> tuple:
    """What the grad_outputs drawn for outputs ``outs`` depend on: each
    differentiable output's index, shape, dtype, layout and whether it
    requires grad."""
    return tuple((o, tuple(out.shape), out.dtype, E.layout_of(out), E.requires_grad(out))
                 for o, out in enumerate(outs)
                 if E.is_tensor(out) and E.is_differentiable_dtype(out))


def _outputs(E, func, ins, expected) -> tuple:
    """``func(*ins)``; with ``expected`` (a signature, see ``_vjp_function``'s
    ``expect``), ``Reshaped`` where it raises or its outputs differ from it."""
    if expected is None:
        return as_tuple(func(*ins))
    try:
        outs = as_tuple(func(*ins))
    except Exception as exc:   # as building the first derivative here would
        raise Reshaped("the function raised here") from exc
    if _signature(E, outs) != expected:
        raise Reshaped("the function's outputs are shaped otherwise here")
    return outs


def first_derivative(func, inputs, grad_outputs, rng, name=None):
    """``(func', inputs + grad_outputs)`` where ``func'`` returns the vjp.

    ``func'(*inputs, *grad_outputs)`` is ``autograd.grad`` of the outputs
    that require grad, with ``create_graph=True``; gradients that are
    ``None`` (unused inputs) are left out. ``grad_outputs`` default to
    uniform random values in [-1, 1) (real and imaginary parts), requiring
    grad. ``func'.without_graph`` (on the engines of ``SAME_WITHOUT_GRAPH``)
    returns the same values without building their graph, for callers that
    only read them (``gradcheck.explore``'s screens at their moved points).
    """
    # the check's own Problem (of the first derivative) warns about the dtypes, if
    # anyone, and measures what an evaluation holds
    problem = Problem(func, inputs, name, warn_precision=False, measure=False)
    if grad_outputs is None:
        grad_outputs = tuple(_random_like(problem, o, rng) for o in problem.diff_out)
    grad_outputs = as_tuple(grad_outputs)
    first = _vjp_function(func, problem, grad_outputs)
    # what it allocates is fixed by ``func`` and the inputs' shapes: measured once
    setattr(first, measured.TRANSFORM_OF, ("first derivative", func))
    # the dtype the function computes in inside, if its outputs say so: the first
    # derivative's dependence on the inputs carries that rounding too
    first.narrow_inside = lambda: grids.coarsest(problem.computed_inside().values())
    first.random_layers = getattr(func, "random_layers", None)   # (a module's: modules.py)
    # whether the function under the derivative draws random numbers (vmap cannot
    # tell through autograd.grad): see ``gradcheck.lowprec.widening``
    first.draws_random = lambda: problem.engine.draws_random(func, problem.inputs)
    return first, problem.inputs + grad_outputs


def _vjp_function(func, problem, grad_outputs):
    """``first_derivative``'s ``func'`` of ``func`` at ``problem``'s inputs."""
    E, n, diff_in = problem.engine, len(problem.inputs), problem.diff_in
    used: list = []   # which gradients the first call returned (None: an unused input)
    graph: list = []  # the first call's inputs and gradients (``builds_graph``)
    armed: list = []  # the outputs' signature the next call must find (``expect``)
    rounded: list = [False]  # whether the last call's grad_outputs were wider than the outputs

    def gradients(args, create_graph: bool):
        ins, gos = args[:n], args[n:]
        outs = _outputs(E, func, ins, armed.pop() if armed else None)
        outs = [o for o in outs if E.is_tensor(o) and E.requires_grad(o)]
        # (autograd rounds a grad_output to its output's dtype: a function whose outputs
        # stay narrow at float64 inputs, a cast inside, gets its float64 run's v rounded)
        rounded[0] = any(g.dtype != o.dtype and E.is_tensor(g) and E.epsilon(g) < E.epsilon(o)
                         for o, g in zip(outs, gos) if g is not None)
        try:
            handed = [E.handed(g) for g in gos] if create_graph else list(gos)
            grads = E.grad(outs, [ins[i] for i in diff_in], handed, create_graph=create_graph)
        except Exception as exc:
            if not create_graph:
                raise
            _raise_for_graph(E, outs, [ins[i] for i in diff_in], gos, exc)
        recompute.inherit([g for g in grads if g is not None], outs)
        if create_graph and not used:
            used.append(tuple(k for k, g in enumerate(grads) if g is not None))
            graph.append(([ins[i] for i in diff_in], grads, gos))
        return tuple(g for g in grads if g is not None)

    def first(*args):
        return gradients(args, True)

    def functional():
        """``first`` as the engine's vmap maps it, or ``None`` (see
        ``Engine.functional_vjp``); asked for after ``first`` has run once."""
        if not used or len(grad_outputs) != len(problem.diff_out):
            return None
        return E.functional_vjp(func, diff_in, problem.diff_out, used[0])

    def expect():
        """Reuse at another point of the same shapes (``gradcheck.explore``'s
        screens): the next call raises ``Reshaped`` where the function raises or
        its outputs are not shaped as where ``grad_outputs`` were drawn (the
        caller then builds the first derivative there anew)."""
        armed[:] = [_signature(E, problem.outputs)]

    first.functional, first.expect = functional, expect
    # reusable at other points, and its values had without a graph, only where the
    # engine holds no state of the function (``Engine.wrap_function``: JAX's records
    # its calls, and its vjp without a graph is the recorded call's)
    first.reusable = problem.func is func
    if first.reusable and E.name in SAME_WITHOUT_GRAPH:
        first.without_graph = lambda *args: gradients(args, False)
    # what ``core.reuse_gg`` maps the reverse check's Jacobian by: the function's inputs
    # come first, the gradients returned are of ``diff_in[used[0][j]]``
    first.primals, first.used, first.diff_in, first.diff_out = n, used, diff_in, problem.diff_out
    _ask_of_graph(first, E, graph)
    first.rounds_grad_outputs = lambda: rounded[0]
    return first


def _ask_of_graph(first, E, graph: list) -> None:
    """Give ``first`` its questions about the graph of its first call's
    gradients (``graph``: that call's inputs, gradients and grad_outputs, once
    it ran): ``builds_graph``, ``reaches_grad_outputs``, ``builds_no_graph``."""
    first.builds_graph = lambda: builds_graph(E, graph[0][:2] if graph else None)
    first.reaches_grad_outputs = lambda: bool(graph) and reaches_grad_outputs(E, *graph[0][1:])
    first.builds_no_graph = lambda: bool(graph) and builds_no_graph(E, *graph[0])
