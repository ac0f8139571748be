"""Kinks within a rounding of the input: where a low-precision derivative may
be another side's.

A formula in a narrow dtype rounds intermediates of its inputs' scale (a
sampling coordinate ``((x + 1) * W - 1) / 2``, a shifted argument): its
result is the derivative at an input up to about one rounding ``u * L_c``
away (``L_c`` the input's magnitude, term 5's cap in ``gradcheck.lowprec.lowprecision``).
Where the function is smooth, term 5 bounds how far that moves the
derivative. Where a kink or a jump of the derivative lies that close, no
bound on the curvature holds, and the derivative on the kink's other side is
as right as the one at the given input: torch's bilinear ``grid_sampler_2d``
in bfloat16 rounds a coordinate of 19.95 to 20.0, a pixel boundary, and its
derivative is the float64 one at 20.0 (to 0.4% of the block's largest
entry), of the opposite sign to the one at 19.95.

Such columns are found on the float64 run: where the second difference over
twice the rounding ``delta = u * L_c`` disagrees with the local one (``H``,
from ``gradcheck.lowprec.widening.second_differences``) by more than an eighth of the
allowance over that span, which no smooth function does at that scale
(bfloat16 and float16 only: see ``NARROWEST``). There, the derivatives at
``x_c +- delta`` are differenced too, and the allowance of the column's
entries grows by the larger of their distances to the derivative at ``x_c``
(the jump): on those columns only, an error smaller than the jump goes
unseen; every other column keeps its allowance.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.core import coords
from adcheck.gradcheck.core.evaluation import Evaluator

#: the step of the derivatives at ``x_c +- delta``, as a fraction of ``delta``
INNER = 1.0 / 64
#: a column is searched when the derivative departs from linear over the span by
#: this fraction of the allowance (smooth functions depart by ``|H''| span**3 / 12``)
FIND = 1.0 / 8
#: the widest unit roundoff searched: float32's kinks within a rounding are 1e-7 of
#: the input away (random samples do not land there), and differences that fine
#: carry float64 noise near float32's allowance; bfloat16 and float16 are searched
NARROWEST = 2.0 ** -12
#: the second difference that finds a kink spans this many ``delta`` each way:
#: one over ``delta`` itself barely sees a kink near its end (grid_sampler_2d: a
#: jump of 21 at 0.9 ``delta`` moves it by 2.1, an eighth of the allowance being 1.9)
SEARCH = 2.0


def kink_allowance(ev: Evaluator, numerical, second: dict, scales: dict, allowance: dict,
                   u: float) -> dict:
    """The extra allowance by block (real form) for the columns of the float64
    run ``ev`` with a kink within ``u * L_c`` (``scales``: ``L_c`` by input;
    ``second``: the local ``H`` by block; ``allowance``: the rounding
    allowance so far); blocks without such a column are left out."""
    p = ev.problem
    extra = {}
    if u < NARROWEST:
        return extra
    for in_idx in p.diff_in:
        x = coords.to_real(p.arrays[in_idx])
        if x.size == 0:
            continue
        delta = u * scales[in_idx]
        columns = np.arange(x.size)
        reach = SEARCH * delta
        outs = _along(ev, in_idx, x, np.stack([reach, -reach]), columns)
        kinked = np.zeros(x.size, dtype=bool)
        for o, (plus, minus) in outs.items():
            centre = coords.to_real(p.out_arrays[o])[:, None]
            wide = (plus + minus - 2 * centre) / reach[None, :] ** 2
            with np.errstate(invalid="ignore"):
                off = np.abs(wide - second[o, in_idx]) * reach[None, :] > \
                    FIND * allowance[o, in_idx]
            kinked |= np.any(off, axis=0)
        columns = columns[kinked]
        if columns.size == 0:
            continue
        d, eta = delta[columns], INNER * delta[columns]
        offsets = np.stack([d + eta, d - eta, -d + eta, -d - eta])
        outs = _along(ev, in_idx, x, offsets, columns)
        for o, values in outs.items():
            right = (values[0] - values[1]) / (2 * eta[None, :])
            left = (values[2] - values[3]) / (2 * eta[None, :])
            N = numerical.blocks[o, in_idx][:, columns]
            gap = np.nan_to_num(np.maximum(np.abs(right - N), np.abs(left - N)), nan=np.inf)
            block = np.zeros_like(numerical.blocks[o, in_idx])
            block[:, columns] = gap
            extra[o, in_idx] = block
    return extra


def _along(ev: Evaluator, in_idx: int, x: np.ndarray, offsets: np.ndarray,
           columns: np.ndarray) -> dict:
    """Outputs with real coordinate ``columns[j]`` of input ``in_idx`` moved
    by ``offsets[m, j]``: by out_idx, shape (len(offsets), outputs, columns)."""
    p = ev.problem
    m, k, n = offsets.shape[0], columns.size, x.size
    moved = np.broadcast_to(x, (m, k, n)).copy()
    moved[:, np.arange(k), columns] += offsets
    arrays = coords.from_real_rows(moved.reshape(m * k, n), p.arrays[in_idx].shape,
                                   p.arrays[in_idx].dtype)
    outs = ev.outputs_at(in_idx, arrays, f"looking for kinks along input {in_idx}",
                         f"looking for a kink along input {in_idx}", tolerant=True)
    return {o: np.swapaxes(coords.to_real_rows(values).reshape(m, k, -1), 1, 2)
            for o, values in outs.items()}
