"""Judging a low-precision formula: how far its Jacobian may be from the truth.

A formula evaluated in float32, bfloat16 or float16 cannot match the exact
Jacobian ``J``: every value it stores is rounded. A check of such a formula
must separate "the formula is wrong" from "this dtype cannot resolve it", so
its tolerance is derived from the dtype's unit roundoff ``u`` (half its
machine epsilon: 2**-24 for float32, 2**-8 for bfloat16, 2**-11 for float16)
and from the computation itself, never from a fixed atol/rtol.

The expected Jacobian ``N`` comes from one of two producers: the same
function at the same values in float64 (``gradcheck.lowprec.widening``; its error is
negligible) or, for a function that only runs in its own dtype, differences
in that dtype (``gradcheck.lowprec.indtype``; its error estimate dominates). Entry
``[r, c]`` of the analytical Jacobian ``A`` then passes when

    |A_rc - N_rc| <= SAFETY * error(N_rc) + allowance_rc

(``SAFETY`` is ``gradcheck.numerics.precise``'s), and ``allowance`` models the
rounding of the analytical side in the formula's dtype. By first-order
rounding error analysis, a computed derivative differs from ``J`` by these
terms, each estimated from what the check can observe:

1. *Rounding of each stored result*: a formula is a short chain of stored
   intermediates, each off by at most ``u`` relative: ``u * |J_rc|``; and
   below the dtype's normal range by half its smallest (subnormal) number,
   whatever the entry's size: ``+ tiny / 2`` (float16's 2**-24: a float64
   gradient of 2.95e-8 cast to a float16 input's dtype is 0, as softmin
   with ``dtype=float64`` on a float16 input returns).
2. *Kernel accuracy*: library kernels (special functions, reductions) run in
   at least float32 (PyTorch and JAX compute half-precision kernels in
   float32) and are accurate to a few float32 ulps, not half of one:
   ``KERNEL_ULPS * u32 * (|J_rc| + M)``, with ``u32 = 2**-24`` and ``M``
   the largest ``|N|`` of the output's blocks (an entry near a root of the
   kernel's result, digamma near 1.46, is accurate relative to the
   function's scale only; and one output's blocks are made of shared terms:
   the second derivative of std over two elements is zero, computed as a
   difference of terms the size of the first derivative). At first order an
   output coordinate that depends on one input coordinate shares no terms
   with the others: its ``M`` is the largest entry of its row, in any block (exp's
   right derivative of 1 beside exp(15) = 3.3e6 was allowed 4.7, and a
   backward twice too large passed).
3. *Sums*: output ``r`` depends on ``n_ri`` coordinates of input ``i``
   (the nonzero entries of its row of the block); a derivative that sums
   terms of that computation (softmax, a norm) accumulates rounding of
   partial sums up to the size of the largest terms: ``s * log2(n_ri) * M``
   (pairwise summation), where ``s`` is the unit the kernels accumulate in.
   A kernel that rounds every partial sum to the dtype has ``s = u``; one
   that accumulates in float32 and rounds once at the end (PyTorch's CPU
   kernels for bfloat16 and float16: their matmul and sum are within one
   rounding of the exact result of the rounded inputs, measured up to
   4096 terms) has ``s = u32``, its single rounding being term 1's. Which
   one a function's kernels do is measured on its forward against the
   float64 run: if some output is off by more than one rounding (by more
   than ``u / 16`` of the largest output, ``ONCE``), its kernels round
   partial sums and ``s = u``; else ``s = u32``. Without the float64 run
   ``s = u``.
4. *Conditioning*: the formula reuses what the forward computed (saved
   outputs, factorizations), so it inherits whatever the forward lost to
   rounding. That loss is measured: the forward run in the formula's dtype
   against the float64 run, ``eps_o = max |y_low - y| / max |y|`` for output
   ``o`` (``kappa * u`` for a solve of condition ``kappa``): ``eps_o * M``,
   for the output coordinates that depend on several input coordinates (of
   any input; an elementwise output's own rounding is term 5's).
5. *Saved outputs*: a formula written in terms of its output (``1 - y**2``
   for tanh) is the derivative at the point whose output is the rounded
   ``y``; moving input coordinate ``c`` until output ``r`` moves by its
   rounding ``d_r = max(|y_low_r - y_r|, u |y_r| / 2)`` (the measured
   rounding, at least the mean rounding of a stored value) changes ``J_rc``
   by ``|H_rc| * min(d_r / |J_rc|, sqrt(2 d_r / |H_rc|), L_c)``, with
   ``H_rc`` the second derivative of ``y_r`` along ``c`` (float64 second
   differences), the move the smaller of the first- and second-order ones
   (at a root of the derivative the first is infinite) and capped at the
   input's magnitude ``L_c``. This is what makes tanh at
   x = 5 in float32 off by 7e-4 relative, and a correct formula. Likewise a
   formula that rounds an intermediate of its input's size (``x * x`` in
   atanh's ``1 / (1 - x * x)``) is the derivative at an input a fraction of
   a rounding away: ``|H_rc| * u / 8 * |x_c|`` more (``MARGIN`` makes it
   ``3 u / 8``). A complex output by a complex input is taken as one pair
   (``_paired_term``): the rounding of ``Re y`` moves the derivative of
   ``Im y`` along ``Im x`` as much as along ``Re x`` (Cauchy-Riemann). Near atanh's pole, at x = 0.99749 in float32, torch's
   result is 89 ``u`` from the derivative, yet it is the derivative at
   ``x * (1 + 0.22 u)``, rounded once (0.57 ``u``): a right formula. The
   fraction is kept small because where the derivative is well conditioned
   (``|x H / J|`` about 2 for a reciprocal) term 1 covers this already, and
   a larger one would hide a reciprocal off by 3% in bfloat16. Where a
   kink of the derivative lies within such a rounding (bfloat16, float16),
   no curvature bounds the move: either side's derivative is allowed
   (``gradcheck.lowprec.kinks``).

6. *Second order*: a second-order check's function is a backward formula,
   and its derivative a longer chain whose cancellations none of the above
   shows; its rounding is measured instead (``gradcheck.lowprec.adrounding``).

    allowance_rc = MARGIN * (term 1 + ... + term 6)

Terms 4 and 5, and term 3's measured ``s``, need the float64 run; without
it (differences in the dtype) ``eps_o`` and ``s`` are taken as ``u`` and
term 5 is left to the numerical side's own error estimate, which is far
larger. ``MARGIN`` was measured: over every
registry sample in float32 (refengine and torch), bfloat16 and float16
(torch), the largest ratio of the actual error ``|A - J|`` (``J`` from
float64 AD) to the allowance with ``MARGIN = 1`` was 1.3 with ``s = u``
everywhere, for torch's erfc in float16; with ``s`` measured it is 2.0 in
bfloat16 and float16 (torch's std in float16, over 1546 blocks; float32 is
unchanged, its ``s`` being ``u``), so ``MARGIN = 3`` leaves a factor 1.5
(``bench/lowprecision_bench.py calibrate`` repeats the measurement).

What this resolves (``gradcheck.numerics.precision``): for an elementwise formula in
bfloat16 or float16 about ``3 u`` to ``5 u`` relative (1e-2 to 2e-2 in
bfloat16); in float32 about ``3 * 17 u`` = 3e-6, hundreds of times finer
than differences in float32 itself could reach (about ``u**(2/3)``).
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.core.coords import largest_finite

#: the allowance's factor over the measured worst case (see the module docstring)
MARGIN = 3.0
#: accuracy of library kernels, in float32 ulps
KERNEL_ULPS = 8.0
#: float32's unit roundoff: the precision kernels compute in at least
U32 = 2.0 ** -24
#: how far past one rounding of its outputs a forward may be (relative to the
#: largest, in units of ``u``) and still count as rounded once (term 3)
ONCE = 1.0 / 16
#: term 5's move of an input, in units of ``u``: the backward error of a formula
#: that rounds an intermediate of its input's size (see the module docstring)
INPUT_ROUNDING = 1.0 / 8
#: the smallest positive (subnormal) number of each narrow dtype, by its machine
#: epsilon (float16, bfloat16, float32: each epsilon names one format)
SMALLEST = {2.0 ** -10: 2.0 ** -24, 2.0 ** -7: 2.0 ** -133, 2.0 ** -23: 2.0 ** -149}
#: double precision's machine epsilon: formulas at it are not low precision
DOUBLE_EPS = float(np.finfo(np.float64).eps)


def formula_epsilon(problem) -> float:
    """Machine epsilon of the least precise of the checked tensors (inputs that
    require grad, float outputs): the precision the formula runs in."""
    return problem.least_epsilon()   # (looked up once per Problem)


def is_narrow(problem) -> bool:
    """Whether some checked tensor is narrower than double precision."""
    return formula_epsilon(problem) > DOUBLE_EPS


def formula_dtype(problem) -> str:
    """The name of the least precise checked dtype (``"bfloat16"``)."""
    E = problem.engine
    named = [(problem.epsilon(in_idx=i), E.dtype_name(problem.inputs[i]))
             for i in problem.diff_in]
    named += [(problem.epsilon(out_idx=o), problem.output_dtype(o)) for o in problem.float_out]
    return max(named, key=lambda pair: pair[0])[1]


def _term_counts(numerical: Jacobian, key) -> np.ndarray:
    """``n_ri``: for each row of block ``key``, how many input coordinates it
    depends on (entries that stand out of their error estimate)."""
    block = numerical.blocks[key]
    error = numerical.errors.get(key) if numerical.errors else None
    floor = 0.0 if error is None else np.nan_to_num(error, nan=np.inf)
    with np.errstate(invalid="ignore"):
        return np.sum(np.abs(block) > floor, axis=1)


def coupled_rows(numerical: Jacobian, out_idx: int, counts: dict | None = None) -> np.ndarray:
    """For each coordinate of output ``out_idx``: whether it depends on several
    input coordinates (of any input), where term 4 applies; ``counts``:
    ``_term_counts`` by block, where the caller has them."""
    return _row_terms(numerical, out_idx, counts) > 1


def _row_terms(numerical: Jacobian, out_idx: int, counts: dict | None = None) -> np.ndarray:
    """For each coordinate of output ``out_idx``: how many input coordinates
    (of any input) it depends on."""
    keys = [key for key in numerical.blocks if key[0] == out_idx]
    return np.asarray(sum((counts[key] if counts is not None else _term_counts(numerical, key))
                          for key in keys))


def _largest(numerical: Jacobian, out_idx: int) -> float:
    """``M``: the largest finite ``|N|`` of output ``out_idx``'s blocks."""
    return max((largest_finite(b) for (o, _), b in numerical.blocks.items() if o == out_idx),
               default=0.0)


def allowance(numerical: Jacobian, epsilon: float, forward: dict | None = None,
              curvature: dict | None = None, sums: dict | None = None,
              own_rows: bool = False) -> dict:
    """The allowance for the analytical side's rounding, per block of
    ``numerical`` (real form), for a formula whose dtype has machine epsilon
    ``epsilon``. ``forward``: ``eps_o`` by output (default ``u``);
    ``curvature``: term 5 by (out_idx, in_idx) (default none); ``sums``:
    term 3's unit ``s`` by output (default ``u``); ``own_rows``: term 2 of an
    output coordinate that reads one input coordinate in units of its own row
    (a first-order check's; a second derivative's entry near a root of it,
    silu's in float16, rounds like the output's largest). Entries where
    ``numerical`` is not finite get an infinite allowance."""
    u = epsilon / 2
    tiny = SMALLEST.get(epsilon, 0.0) / 2
    forward = forward or {}
    curvature = curvature or {}
    sums = sums or {}
    counts = {key: _term_counts(numerical, key) for key in numerical.blocks}
    largest, coupled, unit = {}, {}, {}
    for o in {o for o, _ in numerical.blocks}:
        largest[o] = _largest(numerical, o)
        terms = _row_terms(numerical, o, counts)
        coupled[o] = terms > 1   # term 4 applies
        # (term 2's unit: an output coordinate of one input coordinate shares no terms
        # with the others, its row's largest entry, of any block, is its scale; exp's
        # entry of 1 was allowed 4.7 beside one of 3.3e6. One of none keeps M: QR's
        # zero triangle of R rounds like its other entries)
        unit[o] = largest[o] if not own_rows else np.where(
            np.atleast_1d(terms == 1)[:, None],
            np.max([largest_finite(np.abs(b), axis=1) for (q, _), b in
                    numerical.blocks.items() if q == o], axis=0)[:, None], largest[o])
    result = {}
    for key, block in numerical.blocks.items():
        o = key[0]
        J = np.abs(block)
        finite = np.isfinite(J)
        M = largest[o]
        summed = sums.get(o, u) * np.log2(np.maximum(counts[key], 1))[:, None]
        scale = (summed + coupled[o][:, None] * forward.get(o, u)) * M + \
            KERNEL_ULPS * U32 * unit[o]
        terms = (u + KERNEL_ULPS * U32) * J + tiny + scale + curvature.get(key, 0.0)
        result[key] = np.where(finite & np.isfinite(terms), MARGIN * terms, np.inf)
    return result


def forward_rounding(problem, wide) -> tuple:
    """``(eps_o by output, d_r by output)``: the forward's relative loss to
    rounding (term 4) and each output coordinate's rounding (term 5), from
    the outputs in the formula's dtype against the float64 run ``wide``."""
    from adcheck.gradcheck.core import coords
    u = formula_epsilon(problem) / 2
    relative, each = {}, {}
    for o in problem.float_out:
        low = coords.to_real(problem.out_arrays[o])
        high = coords.to_real(wide.out_arrays[o])
        with np.errstate(invalid="ignore"):
            diff = np.abs(low - high)
        diff = np.where(np.isfinite(diff), diff, 0.0)
        top = largest_finite(high)
        relative[o] = float(diff.max(initial=0.0)) / top if top > 0 else 0.0
        each[o] = np.maximum(diff, u / 2 * np.nan_to_num(np.abs(high)))
    return relative, each


def sum_units(problem, wide) -> dict:
    """Term 3's unit ``s`` by output: ``u`` when the forward in the formula's
    dtype is off from the float64 run ``wide`` by more than one rounding of
    some output (plus ``ONCE * u`` of the largest), that is when its kernels
    round partial sums to the dtype; else float32's (they accumulate in at
    least float32 and round once, which term 1 covers)."""
    from adcheck.gradcheck.core import coords
    u = formula_epsilon(problem) / 2
    units = {}
    for o in problem.float_out:
        low = coords.to_real(problem.out_arrays[o])
        high = coords.to_real(wide.out_arrays[o])
        finite = np.isfinite(low) & np.isfinite(high)
        top = float(np.max(np.abs(high[finite]), initial=0.0))
        excess = np.abs(low[finite] - high[finite]) - u * np.abs(high[finite])
        once = float(np.max(excess, initial=0.0)) <= ONCE * u * top
        units[o] = min(u, U32) if once else u
    return units


def input_move(J: np.ndarray, rounding: np.ndarray, cap: np.ndarray, H: np.ndarray) -> np.ndarray:
    """Term 5's move of an input: ``min(d / |J|, sqrt(2 d / |H|), L)``: the output
    moves by ``d`` within the smaller of its first- and second-order moves (at a
    root of the derivative, hardswish's x = -1.5, the first is infinite and
    only the cap ``L`` bounded it: a derivative off by ``|H| L``, 5 times the
    block's largest entry, was allowed)."""
    cap = np.broadcast_to(cap, J.shape)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        first = np.where(J > 0, rounding / J, np.inf)
        # (an infinite or NaN curvature bounds nothing: its term stays infinite)
        second = np.where((H > 0) & np.isfinite(H), np.sqrt(2 * rounding / H), np.inf)
        return np.minimum(np.minimum(first, second), cap)


def output_terms(numerical: Jacobian, second: dict, rounding: dict, scales: dict,
                 inputs: dict | None = None, unit: float = 0.0,
                 paired: frozenset = frozenset()) -> dict:
    """Term 5 per block: ``|H_rc| * (move_rc + unit * |x_c|)`` (``input_move``),
    from ``second`` (``H`` by block, real form), ``rounding`` (``d_r`` by
    output), ``scales`` (``L_c`` by input), ``inputs`` (``|x_c|`` by input,
    real form) and ``unit`` (the input's relative move, ``INPUT_ROUNDING *
    u``); without ``inputs`` the second move is left out. Blocks in
    ``paired`` (complex output by complex input) also get ``_paired_term``."""
    terms = {}
    for key, H in second.items():
        o, i = key
        J = np.abs(numerical.blocks[key])
        move = input_move(J, rounding[o][:, None], scales[i][None, :], np.abs(H))
        if inputs is not None:
            move = move + unit * inputs[i][None, :]
        terms[key] = np.nan_to_num(np.abs(H), nan=np.inf) * move
        if key in paired:
            extra = _paired_term(numerical.blocks[key], H, rounding[o], scales[i],
                                 None if inputs is None else unit * inputs[i])
            terms[key] = np.maximum(terms[key], extra)
    return terms


def _paired_term(J: np.ndarray, H: np.ndarray, rounding: np.ndarray, cap: np.ndarray,
                 nudge: np.ndarray | None) -> np.ndarray:
    """Term 5 of a complex output coordinate by a complex input coordinate,
    one value for the four real entries of their pair.

    The formula's evaluation point moves by a complex amount, and the rounding
    of the real part of ``y_r`` moves the derivative of its imaginary part:
    for a holomorphic ``f`` (torch's complex ``logcumsumexp`` at 10000 in
    complex64, whose backward is ``exp(x - y)`` with ``y`` rounded), the
    imaginary axis' entries equal the real axis' (Cauchy-Riemann), while the
    second derivative of ``Im y`` along ``Im x`` is zero, so the per-entry term
    leaves them no allowance. Per input axis, the pair's ``|f'|`` and
    ``|f''|`` are the moduli of the two real rows of ``J`` and of ``H``, and
    ``d`` the modulus of the output's rounding; the larger axis' term counts."""
    m, n = J.shape[0] // 2, J.shape[1] // 2
    first = np.hypot(J[0::2], J[1::2])                     # (m, 2n): |f'| per input axis
    curve = np.nan_to_num(np.hypot(H[0::2], H[1::2]), nan=np.inf)
    d = np.hypot(rounding[0::2], rounding[1::2])[:, None]
    move = input_move(first, d, cap[None, :], curve)
    if nudge is not None:
        move = move + nudge[None, :]
    term = (curve * move).reshape(m, n, 2).max(axis=2)     # the larger input axis
    return np.repeat(np.repeat(term, 2, axis=0), 2, axis=1)
