"""The points beside the given inputs that the point check reads.

The point check (``verdict.pointvalue``) asks whether the value at the given
inputs is the function's limit around them, from the outputs at each
differentiated input moved by ``SPACINGS`` of each coordinate's magnitude,
both ways along a fixed sign vector (``moves``). Those four points ride in
the first evaluation the numerical Jacobian makes of that input's points
(``core.numerical``, ``numerics.quotients``): a call costs far more than its
points on small arrays, and the check's own call was an eighth of a slow
check of a small op. Their outputs are kept on the evaluator (``keep``,
``kept``); where no such evaluation carried them, the point check evaluates
them itself.
"""
from __future__ import annotations

import functools

import numpy as np

from adcheck.gradcheck.core import budget as budgets
from adcheck.gradcheck.core import coords

#: the moves, relative to each coordinate's magnitude (``FLOOR``'s at 0): far
#: below any kink a step could reach, far above a point; the gap of a function
#: continuous there (a kink at the point: ``norm`` at 0) shrinks with the move
SPACINGS = (2.0 ** -20, 2.0 ** -30)
FLOOR = 2.0 ** -6
#: a signs pattern of its own: the check's random stream is left as it was
SIGNS_SEED = 0
#: ``ev.memo``'s key of the outputs kept, by input
KEPT = "beside the point"

#: each row of the moves: by spacing, both ways (the point check reads them so)
_MOVES = np.array([s * spacing for spacing in SPACINGS for s in (1.0, -1.0)])


def moves(p, in_idx: int) -> np.ndarray | None:
    """The real moves of input ``in_idx`` (rows, added to its real coordinates),
    or ``None`` where the point check looks beside no point of it: an empty
    input, one narrower than double precision (it cannot be moved that little;
    its float64 run can) or one not finite."""
    array = p.arrays[in_idx]
    if array.dtype not in (np.float64, np.complex128):
        return None
    x = coords.to_real(array)
    if x.size == 0 or not np.isfinite(x).all():
        return None
    # (a coordinate's own magnitude: 1e-150 moved by 2**-36 would cross 0)
    return np.multiply.outer(_MOVES, _signs(x.size) * np.where(x != 0, np.abs(x), FLOOR))


def riders(ev, in_idx: int) -> np.ndarray | None:
    """``moves`` to ride in an evaluation of input ``in_idx``'s points, or
    ``None``: a second-order check (the point check is a first order's), their
    outputs kept already, or too large to be held through the check (the
    moved inputs and their outputs beyond ``budget.held``: the
    point check then makes them at its turn, and drops them)."""
    p = ev.problem
    if p.order != 1 or in_idx in ev.memo.get(KEPT, {}):
        return None
    size = p.layout.in_size(in_idx) + sum(p.layout.out_size(o) for o in p.float_out)
    if not budgets.held(ev.budget, len(_MOVES) * size):
        return None
    return moves(p, in_idx)


def keep(ev, in_idx: int, outputs: dict) -> None:
    """Keep the outputs (real rows by output, as ``moves`` orders them) at the
    points beside input ``in_idx`` (copies: rows of a larger evaluation's
    arrays would keep all of it)."""
    ev.memo.setdefault(KEPT, {})[in_idx] = {o: np.array(rows) for o, rows in outputs.items()}


def kept(ev, in_idx: int) -> dict | None:
    """What ``keep`` kept for input ``in_idx``, or ``None``."""
    return ev.memo.get(KEPT, {}).get(in_idx)


@functools.lru_cache(maxsize=32)
def _signs(size: int) -> np.ndarray:
    """The moves' fixed signs for an input of ``size`` real coordinates (kept:
    a generator made for each input cost as much as the evaluation beside it)."""
    signs = np.random.default_rng(SIGNS_SEED).choice([-1.0, 1.0], size=size)
    signs.flags.writeable = False
    return signs
