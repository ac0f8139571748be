"""Central differences along a ladder of steps, and the rounding noise of each.

``stacked_differences`` evaluates the function at ``x +- h_k`` on each column
(a coordinate, or a direction) for a set of levels ``k`` in stacked
evaluations, and gives the quotients ``(f(x + h) - f(x - h)) / 2h`` with their
noise: ``NOISE_ULPS`` ulps of both values (for a complex output, of its
modulus), with the measured floor of ``gradcheck.numerics.noisefloor``, over ``2h``.
Richardson extrapolation (``gradcheck.numerics.richardson``) and its sentinel
(``gradcheck.numerics.sentinel``) build on them.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core import beside
from adcheck.gradcheck.core import budget as budgets
from adcheck.gradcheck.core.evaluation import Evaluator
from adcheck.gradcheck.numerics.noisefloor import measured_from, noise_floor, riding_moves
from adcheck.gradcheck.core.numerical import perturbed_outputs

NOISE_ULPS = 16     # assumed rounding error of a function value, in ulps


def stacked_differences(ev: Evaluator, in_idx, steps, columns, directions=None,
                        window=None, moves=None, tail: int = 0, floor: dict | None = None):
    """A generator (see ``evaluated``): central differences and their
    rounding noise at ``+-steps[k, j]`` on coordinate ``columns[j]`` (or along
    ``directions[j]``): per level ``k``, by output, a (columns, output size)
    matrix. A step where the function raises gives NaN (discarded). The
    levels are evaluated a group at a time (``_level_groups``), each group's
    perturbed points dropped once differenced;
    ``window`` (``{out_idx: (start, stop)}``) keeps only those coordinates.
    ``moves`` (real vectors, one per row): differenced too, at a step of 1, in
    the first evaluation (one call fewer); theirs come last, as one more level.
    The noise floor's moves ride in that evaluation too when it is not yet
    measured (``noisefloor.riding_moves``), and the point check's points
    beside the input (``core.beside``, kept for it): more calls fewer. The last
    ``tail`` levels' points come after the others' (``_signed``). Each
    evaluation is yielded as a request (``evaluate``'s) and its outputs sent
    back, so that the requests of several inputs can be one call
    (``numerics.together``). ``floor``: a noise floor by output in place of the measured one."""
    p = ev.problem
    outs = p.float_out if window is None else list(window)
    eps = max(p.epsilon(out_idx=o) for o in outs)
    diffs, noises = [], []
    riding = riding_moves(ev, in_idx) if len(steps) and floor is None else None
    floor = noise_floor(ev, in_idx) if riding is None and floor is None else floor
    near = beside.riders(ev, in_idx) if len(steps) else None
    along = None
    for number, group in enumerate(_level_groups(ev, in_idx, steps.shape)):
        part = steps[group]
        extra = [] if number else [m for m in (moves, None if moves is None else -moves, riding,
                                               near) if m is not None]
        extra = np.concatenate(extra) if extra else None
        signed, rows = _signed(part, max(0, group.stop - max(group.start, len(steps) - tail)))
        both = yield in_idx, signed, columns, directions, extra
        both, made = (both, None) if extra is None else both
        if made is not None:
            made, floor = _taken(ev, in_idx, made, (moves, riding, near), floor)
        if window is not None and number == 0:
            floor = {o: floor[o][a:b] for o, (a, b) in window.items()}
        if window is not None:   # (copies: the whole outputs are dropped)
            both, made = ({o: q[o][..., a:b].copy() for o, (a, b) in window.items()}
                          if q is not None else None for q in (both, made))
        along = along if made is None else made
        # (inf - inf where a step meets a pole, a quotient beyond float64 at a tiny step:
        # NaN and inf are what the tableau expects of those, not a warning to the user)
        with np.errstate(over="ignore", invalid="ignore"):
            for k, (up, down) in enumerate(rows):
                width = 2 * part[k][:, None]
                pairs = {o: (both[o][up], both[o][down], p.layout.out_complex[o]) for o in outs}
                diffs.append({o: _quotient(plus, minus, width)
                              for o, (plus, minus, _) in pairs.items()})
                noises.append({o: _noise(plus, minus, cplx, eps, floor[o], width)
                               for o, (plus, minus, cplx) in pairs.items()})
        del both
    if moves is not None:
        g = len(moves)
        with np.errstate(over="ignore", invalid="ignore"):
            diffs.append({o: _quotient(along[o][:g], along[o][g:], 2.0) for o in outs})
            noises.append({o: _noise(along[o][:g], along[o][g:], p.layout.out_complex[o], eps,
                                     floor[o], 2.0) for o in outs})
    return diffs, noises


def _taken(ev: Evaluator, in_idx: int, made: dict, riders: tuple, floor):
    """``(the moves' outputs or None, the noise floor)`` from the outputs ``made``
    at the first evaluation's extra rows (``riders``: the moves, the noise
    floor's and the point check's, each ``None`` or its rows, in that order,
    each after the one before): the floor measured from its rows where they
    rode, the point check's kept for it."""
    moves, riding, near = riders
    if near is not None:
        beside.keep(ev, in_idx, {o: q[len(q) - len(near):] for o, q in made.items()})
        made = {o: q[:len(q) - len(near)] for o, q in made.items()}
    if riding is not None:
        floor = measured_from(ev, in_idx, {o: q[len(q) - len(riding):] for o, q in made.items()})
        made = None if moves is None else {o: q[:2 * len(moves)] for o, q in made.items()}
    return made, floor


def evaluate(ev: Evaluator, request: tuple):
    """The outputs at the points of a request of ``stacked_differences``
    (``perturbed_outputs``'s, a point where the function raises NaN)."""
    in_idx, signed, columns, directions, extra = request
    return perturbed_outputs(ev, in_idx, signed,
                             f"extrapolating finite differences for input {in_idx}",
                             columns, tolerant=True, directions=directions, extra=extra)


def evaluated(ev: Evaluator, work):
    """What the generator ``work`` returns, each request it yields
    (``stacked_differences``') evaluated on its own as it comes."""
    try:
        request = next(work)
        while True:
            request = work.send(evaluate(ev, request))
    except StopIteration as done:
        return done.value


def _signed(part: np.ndarray, tail: int) -> tuple:
    """The steps of ``part`` (levels, columns) as evaluated, ``+part, -part``
    with its last ``tail`` levels after the others (``+, -`` of their own: the
    points of a level added to an evaluation sit where they would alone, a
    kernel's vector lanes likewise), and per level the rows of its plus and
    minus steps."""
    main, last = part[:len(part) - tail], part[len(part) - tail:]
    m, t = len(main), len(last)
    rows = [(k, m + k) for k in range(m)] + [(2 * m + k, 2 * m + t + k) for k in range(t)]
    return np.concatenate([main, -main, last, -last]), rows


def _quotient(plus, minus, width):
    """``(plus - minus) / width`` (in place of its one temporary: a level of a
    chunk is megabytes, and each temporary is a pass over memory)."""
    quotient = plus - minus
    return np.divide(quotient, width, out=quotient)


def _noise(plus, minus, complex_, eps, floor, width):
    """The rounding noise of a central difference: ``NOISE_ULPS`` ulps of each
    value, with the measured floor, over the step ``width``."""
    noise = magnitude(plus, complex_)
    noise += magnitude(minus, complex_)
    noise *= NOISE_ULPS * eps
    noise += 2 * floor
    return np.divide(noise, width, out=noise)


def _level_groups(ev: Evaluator, in_idx: int, shape: tuple) -> list:
    """Slices of the levels of ``steps`` (of ``shape``: levels, columns) to
    evaluate at once: as many as a share of the budget holds with their
    perturbed inputs and outputs (each level two points per column; the
    inputs and their engine copy, the outputs and their stacked copy), at
    least one."""
    p = ev.problem
    levels, cols = shape
    size = p.layout.in_size(in_idx) + sum(p.layout.out_size(o) for o in p.float_out)
    # (an empty input and output still cost a little: never a division by zero)
    per_level = 2 * max(1, cols) * max(1, size) * budgets.BYTES * 4
    at_once = max(1, ev.budget // budgets.SHARE // per_level)
    return [slice(a, min(levels, a + at_once)) for a in range(0, levels, at_once)]


def magnitude(values: np.ndarray, complex_: bool) -> np.ndarray:
    """The scale of each real coordinate's rounding: its absolute value, or for
    a complex output the modulus of its element (both parts were computed from
    terms that large: a variance's imaginary part is noise of the modulus' size)."""
    if not complex_:
        return np.abs(values)
    modulus = np.hypot(values[..., 0::2], values[..., 1::2])
    return np.repeat(modulus, 2, axis=-1)


def differences_of(ev: Evaluator, in_idx: int, steps, directions, columns, window=None,
                   floor: dict | None = None):
    """``(levels, which, moves=None, tail=0) -> stacked_differences`` (a
    generator: see ``evaluated``) for the columns ``which`` of ``steps``
    (coordinates ``columns[which]``, or ``directions[which]``), of the output
    coordinates ``window`` (all of every output if ``None``), with the noise
    floor ``floor`` when given."""
    columns = np.arange(steps.shape[1]) if columns is None else np.asarray(columns)
    directions = None if directions is None else np.asarray(directions)

    def differences(levels, which, moves=None, tail=0):
        return stacked_differences(ev, in_idx, steps[levels][:, which], columns[which],
                                   None if directions is None else directions[which], window,
                                   moves, tail, floor)
    return differences
