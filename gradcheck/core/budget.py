"""The memory budget of one check, in bytes: how much goes in one batch.

Every array a check makes is sized from ``Options.memory_budget`` (512 MiB
unless asked otherwise): a batched evaluation stacks at most ``batch_size``
examples (their inputs, outputs and the engine's temporaries for them), a
Jacobian block is built and compared ``chunk_columns`` columns at a time, and
a block is held whole only when ``fits`` says it may. The multipliers below
are what one example or one entry costs, counted generously: a budget is
a ceiling the check stays under, not a target it fills; a function whose
evaluations alone take most of it raises the ceiling to what they take plus
a ``SHARE`` of the budget (``ceiling``).
"""
from __future__ import annotations

#: the budget when none is given (``Options.memory_budget``'s default)
DEFAULT_BUDGET = 512 * 2**20
#: bytes of one real coordinate (float64; a complex128 element is two)
BYTES = 8
#: what one example of a batched evaluation holds, in copies of its inputs
#: and outputs: the stacked arguments, the results, and the temporaries of
#: the function or of its backward (a few intermediates of each size)
EVALUATION_COPIES = 8
#: what one entry of a Jacobian block costs while it is built and compared:
#: the expected and actual values, an error estimate, a tolerance, the
#: difference, and the extrapolation tableau's rows for a chunk of columns
COMPARISON_COPIES = 8
#: what one cell of a compressed Jacobian costs when its blocks are held whole:
#: the numerical cells and their error estimates, reverse mode's (twice, for
#: reentrancy) and forward mode's, the tolerances, the comparison's
#: temporaries, and reverse mode's table of pattern columns
CELL_COPIES = 12
#: the part of the budget a batch, a chunk or a sub-chunk may take
SHARE = 4
#: Richardson extrapolation holds this many values per entry while it works
#: (the central differences at every step and their tableau)
EXTRAPOLATION_COPIES = 64


#: bytes of the stacked inputs and outputs of one batched evaluation at most,
#: whatever the budget: a larger batch is no cheaper per example (one call's
#: overhead is already small beside it) and much dearer once its arrays leave
#: the cache (vjps of a 4,096-long cumsum: 128 at a time, 5x faster than 512)
CACHE_BATCH = 2 ** 23


#: evaluations held beside a check's arrays: the first one, whose outputs and
#: graph the problem keeps through the check, a function call, and a vjp or
#: jvp (its forward again, and a backward about as large). Measured: a check
#: of a function holding 8 or 16 MiB per evaluation peaked at 4.0 times that
#: plus 1 MiB (tests/gradcheck/test_memory_ceiling.py)
EVALUATIONS_IN_FLIGHT = 4


def for_arrays(budget: int, evaluation_bytes: int) -> int:
    """The part of ``budget`` a check's own arrays may take when one evaluation
    of the function allocates ``evaluation_bytes`` at its peak (a convolution's
    unfolded image, a model's activations): the rest is kept for the
    evaluations in flight beside them; never below a ``SHARE`` of it.

    So a check stays under ``ceiling(budget, evaluation_bytes)``: the budget,
    unless the evaluations alone need more than all but a ``SHARE`` of it."""
    return max(budget // SHARE, budget - EVALUATIONS_IN_FLIGHT * max(0, evaluation_bytes))


def ceiling(budget: int, evaluation_bytes: int) -> int:
    """The most a check holds at once: its arrays (``for_arrays``) and the
    evaluations in flight beside them; the budget whenever they fit in it."""
    return max(budget, for_arrays(budget, evaluation_bytes)
               + EVALUATIONS_IN_FLIGHT * max(0, evaluation_bytes))


def batch_size(budget: int, example_size: int, copies: int = EVALUATION_COPIES,
               extra_bytes: int = 0) -> int:
    """Examples per batched evaluation when one example has ``example_size``
    real coordinates in all (inputs plus outputs) and its evaluation
    allocates ``extra_bytes`` besides (measured); at least 1."""
    per_example = _example_bytes(example_size, copies, extra_bytes)
    cached = CACHE_BATCH // (max(1, example_size) * BYTES)
    return max(1, min(budget // SHARE // per_example, cached))


def batch_bytes(budget: int, example_size: int, copies: int = EVALUATION_COPIES,
                extra_bytes: int = 0) -> int:
    """What one batch of ``batch_size`` examples holds, counted as it counts
    them: at most a ``SHARE`` of ``budget``, less where the cache bounds it."""
    return (batch_size(budget, example_size, copies, extra_bytes)
            * _example_bytes(example_size, copies, extra_bytes))


def _example_bytes(example_size: int, copies: int, extra_bytes: int) -> int:
    return max(1, example_size) * BYTES * copies + max(0, extra_bytes)


def chunk_columns(budget: int, rows: int, copies: int = COMPARISON_COPIES) -> int:
    """Columns of a ``rows``-row block that one chunk may hold; at least 1."""
    return max(1, budget // SHARE // (max(1, rows) * BYTES * copies))


def fits(budget: int, entries: int, copies: int = COMPARISON_COPIES) -> bool:
    """Whether ``entries`` real numbers, ``copies`` times over, fit in the budget."""
    return entries * BYTES * copies <= budget


#: the part of the budget that what a check computes ahead for a later part of
#: it (the scaling check's vectors and their products, the point check's points
#: and their outputs) may hold through the check
HELD_SHARE = 16


def held(budget: int, entries: int) -> bool:
    """Whether ``entries`` real numbers may be held through a check (``HELD_SHARE``)."""
    return entries * BYTES <= budget // HELD_SHARE


def chunks(count: int, size: int):
    """``(start, stop)`` of consecutive chunks of at most ``size`` out of ``count``."""
    size = max(1, int(size))
    for start in range(0, count, size):
        yield start, min(count, start + size)


def windows(budget: int, sizes: dict, per_coordinate: int, window: dict | None = None):
    """``None`` when ``sizes`` coordinates (by output) at ``per_coordinate`` bytes
    each fit in a ``SHARE`` of ``budget``; else the parts that do, one output at
    a time: ``(out_idx, (start, stop), the part as a window {out_idx: (start,
    stop)})``, the window's placed in ``window`` (``{out_idx: (start, stop)}``,
    ``None``: whole outputs) when the coordinates are a window already."""
    fits = max(1, budget // SHARE // max(1, per_coordinate))
    if sum(sizes.values()) <= fits:
        return None
    origin = {o: 0 if window is None else window[o][0] for o in sizes}
    return [(o, (a, b), {o: (origin[o] + a, origin[o] + b)})
            for o, m in sizes.items() for a, b in chunks(m, fits)]
