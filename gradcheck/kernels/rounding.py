"""How far a correct kernel may be from its reference's float64 values.

A kernel in bfloat16, float16 or float32 cannot match the float64 values of
its reference: everything it stores is rounded. Its allowance is the
rounding the *same computation* incurs in the kernel's dtype, from two
sources, added:

- the rounding model of the low-precision checks
  (``gradcheck.lowprec.lowprecision.allowance``: each stored result's
  rounding ``u |J|``, library kernels' few float32 ulps, the sums' rounding
  ``s log2(n) M`` and the forward's loss ``eps_o M``, both measured on the
  reference run in the kernel's dtype against its float64 run), which already
  carries that module's ``MARGIN``;
- the rounding *measured*: the reference itself run in the kernel's dtype at
  the inputs and at ``POINTS - 1`` points next to them (each coordinate moved
  by a relative ``NUDGE`` of random sign, then rounded to the dtype), its
  Jacobian against its float64 Jacobian at the same values, the largest
  difference of each entry over the points, times ``MARGIN``. This is what
  covers a derivative that cancels (a softmax or a norm's backward, whose
  entries are differences of terms far larger than themselves) and one
  conditioned by its own output (tanh's ``1 - y**2``), entry by entry.

Entries of the size of their block's largest ``M`` are then judged by their
own relative rounding; entries that are the small difference of large terms
get the normwise terms ``(s log2(n) + eps_o) M`` and the measured rounding of
their cancellation; a derivative computed from the rounded output (sigmoid's
``y (1 - y)``, tanh's ``1 - y**2``) or from an intermediate of the input's
size gets the model's term 5, from the reference's float64 second
differences (``lowprec.widening.rounding_allowance``): near y = 1 in bfloat16
that rounding is most of the entry, and the reference, computed from x, does
not show it. The sums' unit ``s`` is float32's where torch's own sums and
products in the dtype accumulate in float32 (``accumulates_wider``): the
model's test of a forward off by more than one rounding cannot tell a
reference's chain of roundings from partial sums rounded to the dtype.
Term 5 is left out of the rows of several input coordinates, whose output's
rounding term 4 bounds (``curvature_entries``), and of the columns of the
reference's kinks (``kernels.kinks``). At second order the kernel is a vjp
whose formula may reuse the forward's rounded output: for an elementwise
first order, the first order's move (``output_moves``) times the vjp's
curvature is added on each gradient's diagonal (``reused_output_terms``).
The forward values get the same two
parts: one rounding of each value and a few float32 ulps of the largest, plus
the measured forward rounding of the reference in the dtype.

Which computation is "the same" is not known from outside: a bfloat16 or
float16 kernel may compute in float32 and round once ("fused", what Triton
and CUDA kernels do), or round every intermediate to its dtype, as the
reference run op by op in it does. Each comparison is judged first within
the fused computation's rounding and, where it fails there, within the op
by op one (``LOOSEST``); a pass under the second says so and states that
comparison's (coarser) resolution, and a failure is a failure under both.

The *resolution* of a comparison is the largest allowance relative to the
block's largest expected entry: an error of any entry above that fraction of
``M`` is found, whatever the entry; below it, a bug is "not detectable at this
precision".
"""
from __future__ import annotations

import numpy as np
import torch

from adcheck.gradcheck.core import coords
from adcheck.gradcheck.core.coords import largest_finite
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.core.jacobian import Jacobian
from adcheck.gradcheck.core.problem import Problem
from adcheck.gradcheck.kernels import device
from adcheck.gradcheck.lowprec.widening import rounding_allowance, second_differences
from adcheck.gradcheck.lowprec.lowprecision import (
    INPUT_ROUNDING,
    KERNEL_ULPS,
    MARGIN,
    SMALLEST,
    U32,
    allowance,
    coupled_rows,
    forward_rounding,
    input_move,
    sum_units,
)

#: the points the reference's rounding is measured at (the inputs and the
#: ones next to them), and how far those are moved (relative; at least 4
#: units of the dtype, so that the move survives rounding to it)
POINTS = 3
NUDGE = 2.0 ** -12
#: the computation that rounds the most: the reference op by op in the dtype
LOOSEST = "op by op in the dtype"


def epsilon_of(dtype) -> float:
    """Machine epsilon of a torch floating dtype."""
    return float(torch.finfo(dtype).eps)


class Measured:
    """The reference's rounding in the kernel's dtype, largest over the points:
    ``jacobian`` by block and ``forward`` by output (flat), both absolute;
    ``problems``: the computation on the inputs in the dtype and in float64
    (``Problem``s, for the model's measured units); ``wide_sums``: whether
    torch's sums and products in the dtype on the kernel's device accumulate
    in float32 (``accumulates_wider``); ``note``: why the measurement is
    missing, or ``None``."""

    def __init__(self):
        self.jacobian, self.forward = {}, {}
        self.problems = None
        self.wide_sums = False
        self.note = None

    def add(self, low_blocks, wide_blocks, low_out, wide_out) -> None:
        for key, block in low_blocks.items():
            diff = np.nan_to_num(np.abs(block - wide_blocks[key]), nan=np.inf, posinf=np.inf)
            self.jacobian[key] = np.maximum(self.jacobian.get(key, 0.0), diff)
        for o, (a, b) in enumerate(zip(low_out, wide_out)):
            if device.floating(b):
                diff = np.nan_to_num(np.abs(device.values(a) - device.values(b)), nan=np.inf,
                                     posinf=np.inf)
                self.forward[o] = np.maximum(self.forward.get(o, 0.0), diff)


def fused(ref, dtype):
    """``ref`` as one fused kernel in ``dtype`` computes it: float32 inside,
    inputs and outputs (and so the gradients) rounded to ``dtype``."""
    def computation(*args):
        wide = tuple(x.float() if device.floating(x) else x for x in args)
        return tuple(y.to(dtype) if device.floating(y) else y for y in device.run(ref, wide))
    computation.__name__ = getattr(ref, "__name__", "reference")
    return computation


def computations(ref, dtype, fused_only: bool | None = None) -> dict:
    """The computations a kernel in ``dtype`` may round like, tightest first:
    for a dtype narrower than float32 the reference in float32 rounded once to
    ``dtype`` ("fused"), then the reference op by op in ``dtype`` (``LOOSEST``);
    ``fused_only`` True keeps the first (where there is one), False the second."""
    found = {}
    if epsilon_of(dtype) > epsilon_of(torch.float32) and fused_only is not False:
        found["fused"] = fused(ref, dtype)
    if not (fused_only and found):
        found[LOOSEST] = ref
    return found


def measure(ref, inputs: tuple, dtype, where, diff_in, diff_out, budget) -> Measured:
    """The computation ``ref`` run on ``inputs`` in ``dtype`` on their device
    against its run on float64 inputs on ``where``, at ``POINTS`` points (see
    the module docstring); ``ref`` is one of ``computations``."""
    found = Measured()
    rng = np.random.default_rng(0)
    step = max(NUDGE, 4 * epsilon_of(dtype))
    home = device.device_of(inputs)
    for k in range(POINTS):
        point = inputs if k == 0 else device.nudged(inputs, rng, step)
        low = device.cast(point, dtype, home)
        wide = device.cast(low, torch.float64, where)
        try:
            low_out, wide_out = device.run(ref, low), device.run(ref, wide)
            low_blocks = device.reverse_blocks(low_out, low, diff_in, diff_out, budget)
        except Exception as exc:  # noqa: BLE001 - the model alone then bounds the rounding
            found.note = (f"the reference does not run in {str(dtype).removeprefix('torch.')} "
                          f"({type(exc).__name__}): the rounding model alone makes the allowance")
            found.jacobian, found.forward = {}, {}
            return found
        wide_blocks = device.reverse_blocks(wide_out, wide, diff_in, diff_out, budget)
        found.add(low_blocks, wide_blocks, low_out, wide_out)
        if k == 0:
            found.problems = (Problem(ref, low, "reference", warn_precision=False),
                              Problem(ref, wide, "reference", warn_precision=False))
    found.wide_sums = accumulates_wider(home, dtype)
    return found


#: the terms of ``accumulates_wider``'s sums: enough that partial sums rounded to
#: bfloat16 or float16 lose many roundings of the total
ACCUMULATION_TERMS = 4096
_ACCUMULATION: dict = {}


def accumulates_wider(where: torch.device, dtype) -> bool:
    """Whether torch's reductions and matrix products of ``dtype`` on ``where``
    accumulate in a wider dtype and round once: a sum and a product of
    ``ACCUMULATION_TERMS`` numbers of the dtype within one rounding (and a few
    float32 ulps) of their float64 totals. PyTorch's CPU and CUDA kernels do
    for bfloat16 and float16; a backend that rounds its partial sums to the
    dtype does not (measured once per device and dtype)."""
    key = (str(where), dtype)
    if key not in _ACCUMULATION:
        _ACCUMULATION[key] = _measure_accumulation(where, dtype)
    return _ACCUMULATION[key]


def _measure_accumulation(where: torch.device, dtype) -> bool:
    if epsilon_of(dtype) <= epsilon_of(torch.float32):
        return True     # (float32 and wider: the model's own unit is float32's already)
    terms = torch.from_numpy(np.random.default_rng(0).uniform(1.0, 2.0, ACCUMULATION_TERMS))
    try:
        low = terms.to(device=where, dtype=dtype)
        made = [low.sum(), (low[None, :] @ low[:, None]).reshape(())]
    except (RuntimeError, TypeError):    # the dtype does not run there: the model's unit
        return False
    wide = low.double().cpu()
    return all(within_one_rounding(m, e, dtype)
               for m, e in zip(made, (wide.sum(), (wide * wide).sum())))


def within_one_rounding(made: torch.Tensor, exact: torch.Tensor, dtype) -> bool:
    """Whether the total ``made`` in ``dtype`` is within one rounding to it (and
    a few float32 ulps) of the float64 total ``exact``."""
    allowed = epsilon_of(dtype) / 2 + KERNEL_ULPS * U32
    return abs(float(made.double().cpu()) - float(exact)) <= allowed * abs(float(exact))


def jacobian_allowance(expected: Jacobian, epsilon: float, measured: Measured,
                       curvature: tuple | None = None) -> dict:
    """The allowance of each block of the kernel's Jacobian against the
    reference's float64 ``expected`` (see the module docstring); ``curvature``:
    ``(entries, second differences)``, the entries that get term 5 by block
    (``curvature_entries``) and the reference's float64 curvature
    (``curvature_of``); none get it without."""
    if measured.problems is None:
        model = allowance(expected, epsilon)
    else:
        low, wide = measured.problems
        units = sum_units(low, wide)
        if measured.wide_sums:
            # a reference of several ops run op by op is off by more than one rounding
            # from its chain of roundings, which ``sum_units`` takes for partial sums
            # rounded to the dtype: torch's own do not round them
            units = {o: min(s, U32) for o, s in units.items()}
        where, second = curvature or ({key: False for key in expected.blocks}, None)
        model = rounding_allowance(expected, low, wide, epsilon, units, where, second)
    return {key: model[key] + MARGIN * measured.jacobian.get(key, 0.0) for key in model}


def curvature_of(against, wide: tuple) -> tuple:
    """``second_differences`` of the reference in float64 at ``wide``: term 5's
    curvature, the same for every computation (the fused one rounds its
    outputs to the dtype on float64 inputs too)."""
    return second_differences(Evaluator(Problem(against, wide, "reference",
                                                warn_precision=False)))


def output_moves(expected: Jacobian, measured: dict, curvature: tuple, epsilon: float) -> dict:
    """By computation (``measured``'s), by input: for a first order of one output
    whose every row's only entry is on the diagonal (elementwise), each input
    coordinate's move in term 5 (``lowprec.lowprecision.input_move``: until its
    output moves by its rounding, plus a fraction of a rounding of itself): where
    a double backward that reuses the forward's rounded output is the second
    derivative at (``reused_output_terms``). Empty where not elementwise."""
    second, scales = curvature
    outs = {o for o, _ in expected.blocks}
    if len(outs) != 1:
        return {}
    found = {}
    for way, m in measured.items():
        if m.problems is None:
            continue
        low, wide = m.problems
        _, each = forward_rounding(low, wide)
        moves = {}
        for (o, i), J in expected.blocks.items():
            n = J.shape[0]
            if J.shape != (n, n) or np.count_nonzero(J - np.diag(np.diag(J))):
                continue
            x = np.abs(coords.to_real(wide.arrays[i]))
            moves[i] = input_move(np.abs(np.diag(J)), each[o], scales[i],
                                  np.abs(np.diag(second[o, i]))) + \
                INPUT_ROUNDING * epsilon / 2 * x
        found[way] = moves
    return found


def reused_output_terms(expected: Jacobian, curvature: tuple, moves: dict, inputs: list) -> dict:
    """By computation, by block of a vjp's Jacobian (``expected``: the gradient of
    input ``inputs[k]`` along each input): the allowance, ``MARGIN`` times the
    third derivative's ``|H|`` times the move (``output_moves``), on the diagonal
    of each gradient's block along its own input: a double backward computed from
    the forward's rounded output (torch's tanh and sigmoid) is the second
    derivative at the input moved that far."""
    second, _ = curvature
    found = {}
    for way, by_input in moves.items():
        terms = {}
        for (k, j), block in expected.blocks.items():
            if k >= len(inputs) or inputs[k] != j or j not in by_input \
                    or block.shape != (by_input[j].size, by_input[j].size):
                continue
            H = np.nan_to_num(np.abs(np.diag(second[k, j])), nan=np.inf)
            terms[k, j] = np.diag(MARGIN * H * by_input[j])
        found[way] = terms
    return found


def curvature_entries(expected: Jacobian, kinks: dict | None) -> dict:
    """By block, the entries of a comparison that get the model's term 5 (the
    derivative at a point a rounding away; at second order the vjp's own, beside
    ``reused_output_terms``): those of output
    coordinates of one input coordinate, outside the columns of the reference's
    kinks (their second differences straddle the kink; ``kernels.kinks`` bounds
    them). A coordinate of several (a norm's) has term 4 for its output's
    rounding: term 5 moves the input along a coordinate that barely moves that
    output, as far as the input's magnitude, and allowed a 256-wide RMS norm's
    small entries errors of their own size."""
    rows = {o: coupled_rows(expected, o) for o in {o for o, _ in expected.blocks}}
    found = {}
    for (o, i), block in expected.blocks.items():
        mask = np.broadcast_to(~rows[o][:, None], block.shape).copy()
        for c in (kinks or {}).get(i, ()):
            mask[:, c] = False
        found[o, i] = mask
    return found


def forward_allowance(expected: np.ndarray, epsilon: float, measured: np.ndarray | None):
    """The allowance of each value of one output (flat) of dtype ``epsilon``."""
    y = np.abs(expected)
    top = largest_finite(y)
    u = epsilon / 2
    terms = (u + KERNEL_ULPS * U32) * y + KERNEL_ULPS * U32 * top + SMALLEST.get(epsilon, 0) / 2
    if measured is not None:
        terms = terms + measured
    return np.where(np.isfinite(terms), MARGIN * terms, np.inf)


def resolution(tolerance: np.ndarray, expected: np.ndarray) -> float | None:
    """The largest ``tolerance`` relative to the largest finite ``|expected|``:
    an error of any entry above that fraction of it is found."""
    e = np.abs(expected)
    top = largest_finite(e)
    finite = np.isfinite(e)
    if top == 0 or not finite.any():
        return None
    return float(np.max(tolerance[finite])) / top
