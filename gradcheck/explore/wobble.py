"""A formula's own rounding at an explored point, measured from the formula.

A correct double-precision formula is exact only up to its rounding, and at
an ill-conditioned point that rounding is far above eps times the entry: the
pseudo-inverse of a matrix of condition 5.8e10 has a Jacobian off by ~2e-6
(mpmath) where the true entry is 1.5e-11 and the largest 0.54, in torch's
formulas and in any other. Matrix algorithms are stable in norm: what they
compute is right for inputs moved by eps times the *largest* entry of what
they couple, and a small entry moved that much changes the result by the
condition number times eps.

So the formula is evaluated again at the point moved that way (``step``):
each input coordinate by ``WOBBLE`` times the largest magnitude among the
coordinates of the same input it is coupled with (those sharing a row of the
formula's Jacobian, transitively: ``labels``), in a sign fixed by its
magnitude, so that zeros stay zero, tied entries stay tied and x, -x stay
opposite. The largest change of the formula's Jacobian within a coupled
part of one (output, input) block, scaled from ``WOBBLE`` down to eps
(``SPAN * eps / WOBBLE``), is the allowance for its rounding there
(``allowance``). An elementwise function couples each entry only with
itself, and inputs are never coupled with each other: the entries of ``x``,
``x * y`` or ``x / y`` are moved relatively and judged alone, so an entry of
1e-30 beside entries of 40 keeps its own tolerance. A reduction's entries
are coupled (a sum's rounding is eps times the sum of magnitudes; softmax's
exp(x - max) is off by eps times max |x| relative). Scaling every input by
``1 + WOBBLE`` (the rule before) showed nothing at that pinv point:
pinv(cA) = pinv(A) / c moves the Jacobian only by its symmetry, not by its
conditioning. A formula wrong by more stays wrong: a pinv backward 10 % off
fails at that point (tests/explore/test_explore_rounding.py).
"""
from __future__ import annotations

import numpy as np

#: the move that shows a formula's rounding (large against eps, so its own rounding
#: noise is scaled down by eps / WOBBLE; small enough to stay linear at condition 1e11)
WOBBLE = 2.0 ** -40
#: how many such roundings the formula's error may add up to (pinv at condition 5.8e10:
#: torch's error, 2.8e-6, was about a quarter of one measured change)
SPAN = 4.0
#: rounds of spreading the coupling's labels (a chain of entries, np.diff's, needs one
#: per link; left unmerged beyond this, its blocks keep their own, smaller allowances)
MAX_SPREAD = 64


def _dense(jacobian, sizes_in: dict, sizes_out: dict) -> dict | None:
    """The formula's dense blocks ``{(o, i): block}`` over the explored inputs
    ``sizes_in`` (real sizes), or None where one is compressed or probed."""
    out = {}
    for (o, i), block in jacobian.blocks.items():
        if i not in sizes_in or o not in sizes_out:
            continue
        if np.ndim(block) != 2 or block.shape != (sizes_out[o], sizes_in[i]):
            return None
        out[(o, i)] = np.asarray(block, dtype=np.float64)
    return out


def labels(mask: np.ndarray) -> tuple:
    """The coupled blocks of a boolean matrix ``mask`` (rows by columns): labels
    ``(of rows, of columns)``, equal where a row couples two columns or a
    column two rows, directly or through others."""
    big = np.iinfo(np.int64).max
    cols, rows = np.arange(mask.shape[1]), np.full(mask.shape[0], big)
    for _ in range(MAX_SPREAD):    # a label spreads row to column and back
        rows = np.minimum(rows, np.where(mask, cols[None, :], big).min(axis=1, initial=big))
        new = np.minimum(cols, np.where(mask, rows[:, None], big).min(axis=0, initial=big))
        if np.array_equal(new, cols):
            break
        cols = new
    # (a chain longer than MAX_SPREAD: its blocks left apart, each with its smaller allowance)
    return rows, cols


def _pattern(block: np.ndarray) -> np.ndarray:
    # NaN couples too: a formula NaN at an entry depends on it there
    return (block != 0) | ~np.isfinite(block)


def step(arrays: dict, jacobians: list, seed: int) -> dict | None:
    """The move ``delta`` (real coordinates by explored input, as ``arrays``):
    each input's coordinates by ``WOBBLE`` times the largest magnitude of that
    input's coordinates coupled with it through the formula's ``jacobians``
    (one per mode), in a sign fixed by magnitude; None where a Jacobian is not
    dense."""
    sizes_in = {i: a.size for i, a in arrays.items()}
    blocks = [_dense(j, sizes_in, _sizes_out(j)) for j in jacobians]
    if not blocks or any(b is None for b in blocks):
        return None
    rng, out = np.random.default_rng(seed), {}
    for i, a in arrays.items():
        values = np.reshape(a, -1)
        masks = [_pattern(b[key]) for b in blocks for key in b if key[1] == i]
        cols = labels(np.vstack(masks))[1] if masks else np.arange(values.size)
        top = np.zeros(values.size)
        np.maximum.at(top, cols, np.where(np.isfinite(values), np.abs(values), 0.0))
        # a sign by magnitude, the same in every run: ties and x, -x pairs move together
        magnitudes, index = np.unique(np.abs(values), return_inverse=True)
        signs = rng.choice([-1.0, 1.0], magnitudes.size)[np.reshape(index, -1)]
        out[i] = np.reshape(WOBBLE * top[cols] * signs * np.sign(values), np.shape(a))
    return out


def _sizes_out(jacobian) -> dict:
    return {o: np.shape(b)[0] for (o, _), b in jacobian.blocks.items() if np.ndim(b) == 2}


def allowance(here, there, sizes_in: dict, eps: float) -> dict:
    """By block ``(output, input)``, for each row, the allowance for the
    formula's own rounding: the largest change of its Jacobian from ``here``
    to ``there`` (at ``x + delta``) among the block's entries coupled with the
    row, scaled to eps (``SPAN * eps / WOBBLE``); not finite changes count 0.
    ``{}`` where a Jacobian is not dense."""
    sizes_out = _sizes_out(here)
    now, then = _dense(here, sizes_in, sizes_out), _dense(there, sizes_in, sizes_out)
    if now is None or then is None or set(now) != set(then):
        return {}
    out = {}
    for key, block in now.items():
        with np.errstate(all="ignore"):
            change = np.abs(then[key] - block)
        change = np.where(np.isfinite(change), change, 0.0) * (SPAN * eps / WOBBLE)
        rows, _ = labels(_pattern(block) | _pattern(then[key]))
        _, rows = np.unique(rows, return_inverse=True)
        top = np.zeros(block.shape[0])
        np.maximum.at(top, np.reshape(rows, -1), change.max(axis=1, initial=0.0))
        out[key] = top[np.reshape(rows, -1)]
    return out
