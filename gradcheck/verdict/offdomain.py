"""Coordinates whose steps leave the function's domain: a constraint, not a derivative.

``torch.distributions`` validates its parameters and values:
``MultivariateNormal(loc, scale_tril=L)`` raises ``ValueError`` when ``L`` has
a nonzero entry above its diagonal, so a log-likelihood of ``L`` is defined
at a lower-triangular ``L`` and nowhere beside it along those entries. Their
finite differences are NaN at every step, and a check of such a model judged
nothing ("cannot judge this sample", exit status 3) where every other
coordinate could be judged, advising to "check it at points where the
function is finite nearby", which no point is. Other constraints hold within
a tolerance: a ``Dirichlet``'s value must sum to 1 within 1e-6, so the
precise steps (from 2**-11 of a coordinate) leave the domain where moves of a
millionth of them do not.

Where a dense expected Jacobian holds NaN entries while the function is
finite at the given inputs, each input coordinate of them is moved alone,
both ways, by its first step, 2**-20 of it and 2**-40 of it:

- where the first step's moves leave the domain (an output is NaN, or the
  function raises) and no output is NaN at the moves of 2**-20 of a step,
  the coordinate's column is differenced again by
  Richardson's ladder from that step down (``smallsteps.ladder``), and the
  NaN entries it estimates credibly (as a second ladder's are) are taken,
  their tolerances from those estimates: judged, said as differenced within
  that narrow band;
- an entry still NaN whose output coordinate is NaN (or the function raises)
  at every one of the six moves is left out of the comparison (zero on both
  sides) and said (``Report.partial``).

A coordinate defined on one side (``sqrt`` at 0) is neither; nor is any entry
left out when every one of the check's would be: then nothing is judged, and
the check says so as before. Compressed and probed plans (seed columns moving
many coordinates at once) are not looked at.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from adcheck.gradcheck.core import coords
from adcheck.gradcheck.core.coords import largest_finite
from adcheck.gradcheck.core.numerical import perturbed_outputs
from adcheck.gradcheck.lowprec.lowprecision import is_narrow
from adcheck.gradcheck.numerics.quotients import evaluated
from adcheck.gradcheck.numerics.richardson import step_scale
from adcheck.gradcheck.numerics.secondladder import CREDIBLE
from adcheck.gradcheck.numerics.smallsteps import ladder

#: the probes' moves, in fractions of a coordinate's first step
FRACTIONS = (1.0, 2.0 ** -20, 2.0 ** -40)
#: the probe whose moves, where they stay in the domain, start a narrow ladder
NARROW = 1

#: the words of what a check says of such coordinates (the command line prints
#: them beside a pass: ``cli.formats.table``)
NOT_JUDGED = "were not judged: the function is defined at their given values but not beside"
WITHIN = "were differenced only within"
SAID = (NOT_JUDGED, WITHIN)


@dataclass
class Domain:
    """What a dense expected Jacobian's NaN entries were found to be."""

    #: by block ``(out_idx, in_idx)``, the entries left out (boolean, real form)
    masks: dict = field(default_factory=dict)
    #: what the function raised at a move off the domain (``None``: NaN only)
    cause: str | None = None
    #: by input, the columns differenced within a narrow band and its first steps
    narrow: dict = field(default_factory=dict)


def mark(ev, numerical) -> list:
    """Look at ``numerical``'s NaN entries once (see the module docstring),
    taking the narrow ladders' entries into it and keeping the rest in
    ``numerical.off_domain``; what to say of them (``Report.partial``)."""
    if numerical.off_domain is None:
        numerical.off_domain = _found(ev, numerical)
        numerical.off_domain.cause = ev.problem.raised_nearby
    return _said(ev.problem, numerical.off_domain, numerical.layout)


def _found(ev, numerical) -> Domain:
    p = ev.problem
    found = Domain()
    # (a narrow dtype's points would round, and its formulas are judged against
    # their float64 run's differences)
    # (and an mpmath reference's NaN is the reference's, which the probes do not evaluate)
    if numerical.mode != "numerical" or numerical.seeds or not p.float_out or is_narrow(p) or \
            not all(np.isfinite(p.out_arrays[o]).all() for o in p.float_out):
        return found
    entries, left_out = 0, 0
    for i in p.diff_in:
        blocks = {o: numerical.blocks[o, i] for o in p.float_out if (o, i) in numerical.blocks}
        entries += sum(b.size for b in blocks.values())
        columns = _nan_columns(blocks)
        if not len(columns):
            continue
        h0 = step_scale(coords.to_real(p.arrays[i])[columns])
        nowhere, inside = _probed(ev, i, columns, h0)
        if inside.any() and numerical.errors is not None:
            first = h0[inside] * FRACTIONS[NARROW]
            taken = _narrow(ev, numerical, i, columns[inside], first)
            if taken.any():
                found.narrow[i] = (columns[inside][taken], first[taken])
        for o, block in blocks.items():
            mask = np.zeros(block.shape, bool)
            mask[:, columns] = nowhere[o] & np.isnan(block[:, columns])
            if mask.any():
                found.masks[o, i] = mask
                left_out += int(mask.sum())
    if left_out == entries:   # (nothing left to judge: said as NaN differences, as before)
        found.masks = {}
    return found


def _nan_columns(blocks: dict) -> np.ndarray:
    """The columns holding a NaN entry in some block of ``blocks``."""
    if not blocks:
        return np.zeros(0, np.int64)
    return np.flatnonzero(np.logical_or.reduce([np.isnan(b).any(axis=0)
                                                for b in blocks.values()]))


def _probed(ev, in_idx: int, columns: np.ndarray, h0: np.ndarray) -> tuple:
    """``(nowhere, inside)``: by output, a mask (output real coordinate by
    column) of where every probe of ``columns`` gives NaN (or makes the
    function raise); and by column, whether the moves of ``FRACTIONS[NARROW]``
    of a step keep every output finite, both ways."""
    moves = np.array([sign * f for f in FRACTIONS for sign in (1.0, -1.0)])
    outs = perturbed_outputs(ev, in_idx, moves[:, None] * h0[None, :],
                             f"moving input {in_idx} off its domain", columns, tolerant=True)
    # (steps, columns, output real size)
    nowhere = {o: np.isnan(values).all(axis=0).T for o, values in outs.items()}
    narrow = slice(2 * NARROW, 2 * NARROW + 2)
    # (a first step that stays in the domain leaves a NaN to a jump or a kink, which
    # narrower steps straddle as well: relu at 0 gives 0.5 at every step)
    left = np.logical_or.reduce([np.isnan(values[:2]).any(axis=(0, 2))
                                 for values in outs.values()])
    inside = left & np.logical_and.reduce([np.isfinite(values[narrow]).all(axis=(0, 2))
                                           for values in outs.values()])
    return nowhere, inside


def _narrow(ev, numerical, in_idx: int, columns: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Difference ``columns`` from the steps ``first`` down and take the
    credible estimates of their NaN entries into ``numerical``; by column,
    whether one was."""
    values, unresolved = evaluated(ev, ladder(ev, in_idx, first, columns=columns))
    taken = np.zeros(len(columns), bool)
    for o, (value, error) in values.items():   # (columns, output real size)
        block, errors = numerical.blocks[o, in_idx], numerical.errors[o, in_idx]
        with np.errstate(invalid="ignore"):
            credible = np.isfinite(value) & ~unresolved[o] & \
                (error <= CREDIBLE * (np.abs(value) + largest_finite(value)))
        missing = np.isnan(block[:, columns].T)
        if numerical.unresolved and (o, in_idx) in numerical.unresolved:
            # (an entry the first ladder found straddling a jump stays that finding)
            missing &= ~numerical.unresolved[o, in_idx][:, columns].T
        which, outputs = np.nonzero(credible & missing)
        block[outputs, columns[which]] = value[which, outputs]
        errors[outputs, columns[which]] = error[which, outputs]
        taken[which] = True
    return taken


def masked(numerical, expected, tolerances: dict | None, actual) -> tuple:
    """``(expected, actual, tolerances)`` with ``numerical``'s left-out
    entries zero on both sides (copies; those given are not changed), where
    no tolerance fails them."""
    off = _left_out(numerical)
    if not off:
        return expected, actual, tolerances
    expected, actual = zeroed(numerical, expected), zeroed(numerical, actual)
    if tolerances is not None:
        tolerances = {key: _free(tol, off.get(key), numerical.layout.in_complex[key[1]])
                      for key, tol in tolerances.items()}
    return expected, actual, tolerances


def zeroed(numerical, jac):
    """``jac`` with ``numerical``'s left-out entries zero (a copy; ``jac`` itself
    where none are)."""
    off = _left_out(numerical)
    if not off:
        return jac
    blocks = dict(jac.blocks)
    for key, mask in off.items():
        if key in blocks:
            blocks[key] = np.where(mask, 0.0, blocks[key])
    return replace(jac, blocks=blocks)


def _left_out(numerical) -> dict:
    return {} if numerical.off_domain is None else numerical.off_domain.masks


def _free(tol, mask, in_complex: bool):
    if mask is None or np.ndim(tol) < 2:
        return tol
    if in_complex:   # (the complex form's columns: d/dx and d/dy together)
        mask = mask[:, 0::2] | mask[:, 1::2]
    return np.where(mask, np.inf, tol)


def off_domain(numerical, key) -> np.ndarray | None:
    """The mask of block ``key``'s left-out entries (real form), or ``None``."""
    return _left_out(numerical).get(key)


def _said(p, found: Domain, layout) -> list:
    said = []
    if found.masks:
        by_input = {}
        for (_, i), mask in found.masks.items():
            by_input[i] = np.union1d(by_input.get(i, []), np.flatnonzero(mask.any(axis=0)))
        cause = f"raised {found.cause}" if found.cause else "gave NaN outputs only"
        said.append(f"{_coordinates(p, by_input, layout)}, {NOT_JUDGED} them (every move of "
                    f"one, both ways, down to 2**-40 of a step, {cause}): a constraint on the "
                    "input, such as a distribution's validated parameter, not a derivative; "
                    "the other coordinates were judged")
    if found.narrow:
        first = max(float(np.max(f)) for _, f in found.narrow.values())
        said.append(f"{_coordinates(p, {i: c for i, (c, _) in found.narrow.items()}, layout)}, "
                    f"{WITHIN} {first:.1e} of their given values (wider steps left the "
                    "function's domain: an edge of it within them, or a constraint that holds "
                    "within a tolerance, such as a distribution's support); judged within "
                    "those differences' error")
    return said


def _coordinates(p, by_input: dict, layout) -> str:
    """"3 of 9 coordinates of input 1, first [0, 1]; ..." of real columns by input."""
    parts = []
    for i, columns in sorted(by_input.items()):
        columns, size = np.asarray(columns, dtype=np.int64), layout.in_size(i)
        if layout.in_complex[i]:   # (counted as the input's entries: d/dx, d/dy together)
            columns, size = np.unique(columns // 2), size // 2
        shape = p.arrays[i].shape
        where = ", ".join(map(str, np.unravel_index(columns[0], shape))) if shape else ""
        parts.append(f"{len(columns)} of {size} coordinates of input {i}, first [{where}]")
    return "; ".join(parts)
