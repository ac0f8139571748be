"""Coordinates the function is defined at but not beside: a constraint, not a derivative.

``torch.distributions`` validates its parameters: ``MultivariateNormal(loc,
scale_tril=L)`` raises ``ValueError`` when ``L`` has a nonzero entry above
its diagonal, so a log-likelihood of ``L`` is defined at a lower-triangular
``L`` and nowhere beside it along those entries. Their finite differences
are NaN at every step, and a check of such a model judged nothing ("cannot
judge this sample", exit status 3) where every other coordinate could be
judged, advising to "check it at points where the function is finite
nearby", which no point is.

An entry (output coordinate, input coordinate) of a dense expected Jacobian
is left out of the comparison here when the function is finite at the given
inputs, the entry is NaN, and every move of that input coordinate alone,
both ways, at its first step, 2**-20 of it and 2**-40 of it, makes that
output coordinate NaN or the function raise. Such entries are zero on both
sides of the comparison, and the report says which coordinates were left
out and why (``Report.partial``). A coordinate defined on one side (``sqrt``
at 0) is not one of them; nor is any entry when every one of the check's
would be: then nothing is judged, and the check says so as before. Compressed
and probed plans (seed columns moving many coordinates at once) are not
looked at.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from adcheck.gradcheck.core import coords
from adcheck.gradcheck.core.numerical import perturbed_outputs
from adcheck.gradcheck.numerics.richardson import step_scale

#: the probes' moves, in fractions of a coordinate's first step
FRACTIONS = (1.0, 2.0 ** -20, 2.0 ** -40)


#: the words that begin what a check says of such coordinates (the command line
#: prints them beside a pass: ``cli.formats.table``)
NOT_JUDGED = "were not judged: the function is defined at their given values but not beside"


def mark(ev, numerical) -> str | None:
    """Find ``numerical``'s coordinates off the function's domain on both sides
    and keep them in ``numerical.off_domain`` (entry masks by block; what the
    function raised there under ``"cause"``); what to say of them, or ``None``
    where there are none."""
    if numerical.off_domain is None:
        found = _found(ev, numerical)
        if found:   # (the first raise's words: a later check of the sample reuses this)
            found["cause"] = ev.problem.raised_nearby
        numerical.off_domain = found
    return _said(ev.problem, numerical.off_domain, numerical.layout) if numerical.off_domain \
        else None


def _masks(off: dict) -> dict:
    return {key: mask for key, mask in off.items() if key != "cause"}


def _found(ev, numerical) -> dict:
    """By block ``(out_idx, in_idx)``, the mask of its off-domain entries (see
    the module docstring); empty when there are none, or nothing else is left
    to judge."""
    p = ev.problem
    if numerical.seeds or not p.float_out or \
            not all(np.isfinite(p.out_arrays[o]).all() for o in p.float_out):
        return {}
    found, entries, left_out = {}, 0, 0
    for i in p.diff_in:
        blocks = {o: numerical.blocks[o, i] for o in p.float_out if (o, i) in numerical.blocks}
        entries += sum(b.size for b in blocks.values())
        nan = {o: np.isnan(b) for o, b in blocks.items()}
        columns = np.flatnonzero(np.logical_or.reduce([m.any(axis=0) for m in nan.values()])) \
            if nan else []
        if not len(columns):
            continue
        for o, nowhere in _nowhere_beside(ev, i, columns).items():
            mask = np.zeros_like(nan[o])
            mask[:, columns] = nowhere & nan[o][:, columns]
            if mask.any():
                found[o, i] = mask
                left_out += int(mask.sum())
    return found if left_out < entries else {}


def _nowhere_beside(ev, in_idx: int, columns: np.ndarray) -> dict:
    """By output, a mask (output real coordinate by column) of where moving
    ``columns`` gives NaN (or makes the function raise) at every probe, both ways."""
    h0 = step_scale(coords.to_real(ev.problem.arrays[in_idx])[columns])
    moves = np.array([sign * f for f in FRACTIONS for sign in (1.0, -1.0)])
    outs = perturbed_outputs(ev, in_idx, moves[:, None] * h0[None, :],
                             f"moving input {in_idx} off its domain", columns, tolerant=True)
    # (steps, columns, output real size)
    return {o: np.isnan(values).all(axis=0).T for o, values in outs.items()}


def masked(numerical, expected, tolerances: dict | None, actual) -> tuple:
    """``(expected, actual, tolerances)`` with ``numerical``'s off-domain
    entries zero on both sides (copies; those given are not changed), where
    no tolerance fails them."""
    off = _masks(numerical.off_domain or {})
    if not off:
        return expected, actual, tolerances
    expected, actual = (_zeroed(jac, off) for jac in (expected, actual))
    if tolerances is not None:
        tolerances = {key: _free(tol, off.get(key), numerical.layout.in_complex[key[1]])
                      for key, tol in tolerances.items()}
    return expected, actual, tolerances


def _zeroed(jac, off: dict):
    blocks = dict(jac.blocks)
    for key, mask in off.items():
        if key in blocks:
            blocks[key] = np.where(mask, 0.0, blocks[key])
    return replace(jac, blocks=blocks)


def _free(tol, mask, in_complex: bool):
    if mask is None or np.ndim(tol) < 2:
        return tol
    if in_complex:   # (the complex form's columns: d/dx and d/dy together)
        mask = mask[:, 0::2] | mask[:, 1::2]
    return np.where(mask, np.inf, tol)


def off_domain(numerical, key) -> np.ndarray | None:
    """The mask of block ``key``'s off-domain entries (real form), or ``None``."""
    return _masks(numerical.off_domain or {}).get(key)


def _said(p, off: dict, layout) -> str:
    by_input = {}
    for (_, i), mask in _masks(off).items():
        by_input[i] = np.union1d(by_input.get(i, []), np.flatnonzero(mask.any(axis=0)))
    by_input = {i: columns.astype(np.int64) for i, columns in by_input.items()}
    parts = []
    for i, columns in sorted(by_input.items()):
        shape = p.arrays[i].shape
        entry = columns[0] // 2 if layout.in_complex[i] else columns[0]
        where = ", ".join(map(str, np.unravel_index(entry, shape))) if shape else ""
        parts.append(f"{len(columns)} of {layout.in_size(i)} coordinates of input {i}, first "
                     f"[{where}]")
    cause = f"raised {off['cause']}" if off.get("cause") else "gave NaN outputs only"
    return (f"{'; '.join(parts)}, {NOT_JUDGED} them (every move of one, both ways, down to "
            f"2**-40 of a step, {cause}): a constraint on the input, such as a "
            "distribution's validated parameter, not a derivative; the other coordinates "
            "were judged")
