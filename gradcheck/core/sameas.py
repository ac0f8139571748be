"""The expected Jacobian of a function that must have another's derivatives.

An in-place variant (``x.clone().exp_()``) runs the formula of its
out-of-place op (``exp``) through other machinery: the version counter, the
graph rebased onto the input, a saved result overwritten in place. Where the
out-of-place op's derivatives are established against differences (in the
same run), the variant's are established by comparing them with the op's
autograd derivatives at the same inputs, which must agree to rounding:
``check(..., same_as=op)``. That costs one Jacobian by autograd where
Richardson extrapolation costs 10 to 28 evaluations per coordinate, and an
mpmath reference many more. A wrong in-place rule (a saved tensor read after
it was overwritten, a lost version bump's stale value) makes the two differ
by far more than rounding.

The twin judges only where that proves as much as differences would: the
inputs are double precision (a narrow formula's rounding is measured on the
function itself), the twin runs and gives the function's own values to
rounding (a wrong forward would otherwise pass unseen), and its Jacobian is
finite. Elsewhere the ordinary expected Jacobian is built, and the Jacobian's
``note`` says why. At order 2 the twin is differentiated as the function is,
with the same grad_outputs (``twin_first_derivative``).
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core.analytical import ad_blocks
from adcheck.gradcheck.core.coords import largest_finite
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.core.problem import Problem, function_name
from adcheck.gradcheck.core.sides import REVERSE

#: how far (in units of rounding of the output's largest entry) the twin's
#: values may be from the function's: the same formula, in place or not
VALUE_ULPS = 64


def twin_first_derivative(twin, primals: tuple, grad_outputs: tuple, rng, name: str):
    """The twin's first derivative at the same grad_outputs as the function's (a
    second-order check compares the two first derivatives' Jacobians)."""
    from adcheck.gradcheck.core.secondorder import first_derivative
    first = first_derivative(twin, primals, grad_outputs, rng, name)[0]
    first.same_as_name = function_name(twin)   # (reports name the twin, not its vjp)
    return first


def same_as_blocks(ev: Evaluator, twin, otherwise) -> Jacobian:
    """The twin's reverse-mode Jacobian at the problem's inputs, labelled
    ``same_as``; ``otherwise(ev)`` where the twin cannot judge (see the module)."""
    why = _cannot_judge(ev)
    if why is None:
        try:
            mirror = Problem(twin, ev.problem.inputs,
                             getattr(twin, "same_as_name", None) or function_name(twin),
                             order=ev.problem.order, warn_precision=False, measure=False)
        except Exception as exc:   # the twin's fault: the ordinary check decides
            cause = exc.__cause__ or exc   # (a Problem names the call; the cause is the twin's)
            mirror, why = None, f"same_as raised {type(cause).__name__}: {cause}"
        why = why or _differs(ev.problem, mirror)
    if why is None:
        # (what the function's evaluations hold was measured: the twin's hold as much)
        jac = ad_blocks(Evaluator(mirror, ev.budget), REVERSE)
        why = _nonfinite(jac)
    if why is not None:
        jac = otherwise(ev)
        jac.note = f"{jac.note + '; ' if jac.note else ''}not compared with same_as: {why}"
        return jac
    jac.mode = "same_as"
    jac.errors = {key: np.zeros(np.shape(block)) for key, block in jac.blocks.items()}
    jac.note = (f"the autograd derivatives of {mirror.name} (same_as), at the same inputs: "
                "the two must agree to rounding")
    ev.problem.counts["same_as"] = jac.counts.get("vjp", 0)
    return jac


def _cannot_judge(ev: Evaluator) -> str | None:
    narrow = [str(ev.problem.in_dtypes[i]) for i in ev.problem.diff_in
              if ev.problem.epsilon(i) > 2.0 ** -52]
    if narrow:
        return f"the inputs are in {narrow[0]}, whose rounding is measured on the function"
    return None


def _differs(problem: Problem, mirror: Problem) -> str | None:
    """Why the twin's outputs are not the function's at the inputs, or ``None``."""
    if mirror.float_out != problem.float_out or mirror.diff_out != problem.diff_out:
        return "its outputs are not the function's"
    for o in problem.float_out:
        mine, theirs = problem.out_arrays[o], mirror.out_arrays[o]
        if mine.shape != theirs.shape or mine.dtype != theirs.dtype:
            return f"its output {o} has another shape or dtype"
        finite = np.isfinite(mine)
        if not np.array_equal(finite, np.isfinite(theirs)) or not np.array_equal(
                mine[~finite], theirs[~finite], equal_nan=True):
            return f"its output {o} is not finite where the function's is"
        scale = largest_finite(mine)
        if np.any(np.abs(mine[finite] - theirs[finite])
                  > VALUE_ULPS * problem.epsilon(out_idx=o) * scale):
            return f"its output {o} differs from the function's beyond rounding"
    return None


def _nonfinite(jac: Jacobian) -> str | None:
    for key, block in jac.blocks.items():
        if not np.all(np.isfinite(block)):
            return f"its derivatives are NaN or inf in block {key}"
    return None
