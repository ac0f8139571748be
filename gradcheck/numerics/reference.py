"""The reference Jacobian: an mpmath reference differentiated at high precision.

The calling convention of a reference ``ref`` (what ``opinfo`` declares as
``mpmath_ref``):

- ``ref`` takes the same positional arguments as the function under check.
  Each tensor argument arrives as a NumPy object array of the same shape
  whose entries are ``mpmath.mpf`` (real dtypes) or ``mpmath.mpc`` (complex
  dtypes) holding exactly the tensor's values. Other arguments (ints,
  floats, strings, None) arrive unchanged.
- It returns what the function returns, with each tensor replaced by a NumPy
  object array (or one scalar) of ``mpf``/``mpc``/Python numbers: one array,
  or a tuple or list of them in the order of the function's outputs. Outputs
  that are not floating point (indices) may be returned as anything; they
  are ignored.
- It runs inside ``mpmath.workdps(...)`` and must compute at mpmath's
  working precision: use ``mpmath`` functions, never ``math`` or NumPy
  floats, which would round to 16 digits.

Example, for ``torch.sin``: ``lambda x: np.vectorize(mpmath.sin, otypes=[object])(x)``.
"""
from __future__ import annotations

import time

import mpmath
import numpy as np

from adcheck.gradcheck.core import coords, fperrors
from adcheck.gradcheck.errors import GradcheckError
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.core.problem import Problem
from adcheck.refengine.pytree import tree_map

#: working precision (decimal digits) of the reference differences
WORK_DPS = 60
#: relative step; truncation ~ STEP**2 and rounding ~ 10**-WORK_DPS / STEP
STEP = mpmath.mpf(10) ** -22


def to_mp(array: np.ndarray) -> np.ndarray:
    """An object array of mpf/mpc holding exactly the values of ``array``."""
    make = mpmath.mpc if np.iscomplexobj(array) else mpmath.mpf
    out = np.empty(array.shape, dtype=object)
    for index, value in np.ndenumerate(array):
        out[index] = (make(float(value.real), float(value.imag)) if make is mpmath.mpc
                      else make(float(value)))
    return out


def _real_mp(value) -> list:
    value = mpmath.mpmathify(value)
    if isinstance(value, mpmath.mpc):
        return [value.real, value.imag]
    return [value]


def _outputs_real(problem: Problem, result) -> dict:
    """Real mp coordinates of each float output of the reference's result."""
    results = result if isinstance(result, (tuple, list)) else (result,)
    if len(results) < len(problem.outputs):
        raise ValueError(f"{problem.name}: the mpmath reference returned {len(results)} "
                         f"outputs, the function {len(problem.outputs)}; return one array "
                         "per output, in the same order")
    real = {}
    for o in problem.float_out:
        array = np.asarray(results[o], dtype=object).reshape(-1)
        complex_ = problem.layout.out_complex[o]
        if complex_:
            vals = []
            for v in array:
                parts = _real_mp(v)
                vals += parts + [mpmath.mpf(0)] * (2 - len(parts))
        else:   # (an mpf as it is: the one kind a real output's reference mostly gives)
            vals = [v if type(v) is mpmath.mpf else _real_mp(v)[0] for v in array]
        if len(vals) != problem.layout.out_size(o):
            raise ValueError(
                f"{problem.name}: the mpmath reference's output {o} has {array.size} elements, "
                f"the function's has {int(np.prod(problem.layout.out_shapes[o]))}; return an "
                "object array of the output's shape")
        real[o] = vals
    return real


def _call(problem, ref, overrides: dict) -> dict:
    args = list(problem.inputs)
    for i, array in problem.mp_arrays.items():
        args[i] = overrides.get(i, array)
    try:
        result = ref(*args)
    except Exception as exc:  # the caller's reference: name it and the convention
        raise GradcheckError(
            f"{problem.name}: the mpmath reference raised {type(exc).__name__} ({exc}); it "
            "receives NumPy object arrays of mpf/mpc (see gradcheck.numerics.reference)") from exc
    return _outputs_real(problem, result)


def _moved(array, coordinate, step, complex_):
    moved = array.copy()
    flat = moved.reshape(-1)
    k, part = (coordinate // 2, coordinate % 2) if complex_ else (coordinate, 0)
    z = flat[k]
    if complex_:
        flat[k] = mpmath.mpc(z.real + step, z.imag) if part == 0 else mpmath.mpc(z.real, z.imag + step)
    else:
        flat[k] = z + step
    return moved


def mp_column(problem: Problem, ref, in_idx: int, coordinate: int, real=None) -> dict:
    """d(outputs)/d(input coordinate) as mpf lists by ``out_idx`` (at WORK_DPS);
    ``real``: the input's real coordinates, when the caller has them."""
    with mpmath.workdps(WORK_DPS):
        if not hasattr(problem, "mp_arrays"):
            problem.mp_arrays = {i: to_mp(problem.arrays[i]) for i in problem.arrays}
        base = problem.mp_arrays[in_idx]
        real = coords.to_real(problem.arrays[in_idx]) if real is None else real
        h = STEP * max(1, abs(mpmath.mpf(real[coordinate])))
        cplx = problem.layout.in_complex[in_idx]
        plus = _call(problem, ref, {in_idx: _moved(base, coordinate, h, cplx)})
        minus = _call(problem, ref, {in_idx: _moved(base, coordinate, -h, cplx)})
        width = 2 * h   # (exact: a power of two)
        return {o: [(p - m) / width for p, m in zip(plus[o], minus[o])]
                for o in problem.float_out}


def reference_blocks(ev: Evaluator, ref) -> Jacobian:
    """Central differences of ``ref`` at ``WORK_DPS`` digits, stored as float64
    (the engine is not evaluated: ``ev`` gives the problem's layout)."""
    problem = ev.problem
    start = time.perf_counter()
    jac = Jacobian("reference", problem.layout, errors={})
    evaluations = 0
    for in_idx in problem.diff_in:
        n_in = problem.layout.in_size(in_idx)
        cols = {o: np.zeros((problem.layout.out_size(o), n_in)) for o in problem.float_out}
        real = coords.to_real(problem.arrays[in_idx])
        for c in range(n_in):
            for o, column in mp_column(problem, ref, in_idx, c, real).items():
                cols[o][:, c] = [float(v) for v in column]
            evaluations += 2
        for o, block in cols.items():
            jac.blocks[o, in_idx] = block
            jac.errors[o, in_idx] = np.abs(block) * 2.0 ** -52
    jac.counts = {"reference": evaluations}
    jac.seconds = time.perf_counter() - start
    return jac


@fperrors.guarded
def reference_jacobian(ref, inputs, func=None) -> Jacobian:
    """The Jacobian of the mpmath reference ``ref`` at ``inputs``.

    ``ref`` follows the calling convention of this module's docstring.
    Central differences are taken in mpmath at 60 working digits with a
    relative step of 1e-22, so each entry is correct to about 35 significant
    digits before it is rounded to float64. Columns are taken for the inputs
    that require grad. ``func`` (optional) is the engine function the
    reference models; without it, every output of ``ref`` is differentiated.
    Returns a ``Jacobian`` labelled ``reference``.
    """
    problem = Problem(func or _engine_mirror(ref, inputs), inputs)
    return reference_blocks(Evaluator(problem), ref)


def _engine_mirror(ref, inputs):
    """A stand-in engine function with the reference's outputs (rounded)."""
    from adcheck.gradcheck.engines import engine_for
    engine = engine_for(inputs)

    def as_tensor(result):
        array = np.asarray(result, dtype=object)
        complex_ = any(isinstance(mpmath.mpmathify(v), mpmath.mpc) for v in array.ravel())
        kind, dtype = (complex, np.complex128) if complex_ else (float, np.float64)
        values = np.array([kind(v) for v in array.ravel()], dtype=dtype).reshape(array.shape)
        return engine.from_numpy(values, requires_grad=True)

    def mirror(*args):
        # tensors anywhere in the arguments (a list of them too) reach ref as mp arrays
        mp_args = tree_map(lambda a: to_mp(engine.to_numpy(a)) if engine.is_tensor(a) else a,
                           list(args))
        result = ref(*mp_args)
        if isinstance(result, (tuple, list)):
            return tuple(as_tensor(r) for r in result)
        return as_tensor(result)
    return mirror
