"""A backward that writes by index assignment and drops repeated indices.

``grad[idx] += g`` (or ``grad[idx] = g``) where ``idx`` repeats an index
writes each repeated place once: NumPy's and torch's advanced-index
assignment do not accumulate (torch's ``index_put_`` documents which write
wins as undefined without ``accumulate=True``). An embedding's or a
scatter's backward written so is right wherever the indices are distinct
and wrong where they repeat, which many test inputs avoid by chance.

Its failure has a shape of its own, told here (``lost_repeats``): in a
first-order reverse-mode block, every entry where the vjp differs from the
expected Jacobian is one where the vjp is zero and the expected entry is
not, each such entry's row (an output coordinate) is dropped whole (it
was read through the dropped index), and each such entry's column (an
input coordinate) keeps another nonzero entry that agrees (one of the
repeated contributions survives).
``name`` adds the cause and the fix to such failures' diagnoses, with the
repeated values of the check's integer inputs where it has any (a harvested
Function's indices may be a constant of its call instead). A gradient
summed over part of a broadcast has the same shape, and is named with it.
"""
from __future__ import annotations

import numpy as np

#: a difference below this share of the block's largest entry is no difference here
GROSS = 1e-6


def repeated_indices(problem) -> list:
    """``(input index, value, count)`` of the most repeated value of each
    integer tensor input of ``problem`` that repeats one."""
    found = []
    for i, array in problem.arrays.items():
        if array.dtype.kind not in "iu" or array.size < 2:
            continue
        values, counts = np.unique(array, return_counts=True)
        top = int(np.argmax(counts))
        if counts[top] > 1:
            found.append((i, int(values[top]), int(counts[top])))
    return found


def lost_repeats(expected: np.ndarray, actual: np.ndarray) -> int:
    """How many entries the vjp dropped in the way repeated indices written by
    assignment drop them (see the module docstring), or 0 where the block's
    error has another shape."""
    if expected is None or actual is None or expected.shape != actual.shape or \
            expected.ndim != 2:
        return 0
    with np.errstate(invalid="ignore"):
        scale = float(np.nanmax(np.abs(expected), initial=0.0))
        if not scale > 0 or not np.all(np.isfinite(actual)):
            return 0
        small = GROSS * scale
        differs = np.abs(actual - expected) > small
        if not differs.any():
            return 0
        dropped = differs & (np.abs(actual) <= small) & (np.abs(expected) > small)
        if not np.array_equal(dropped, differs):
            return 0
        kept = ~differs & (np.abs(expected) > small)
        columns = np.flatnonzero(differs.any(axis=0))
        rows = np.flatnonzero(differs.any(axis=1))
    # each dropped use loses all of its output's entries (the vjp of an output read
    # through a dropped index is zero), and each dropped input entry keeps another use;
    # a vjp missing its cross terms keeps each row's diagonal instead
    if kept[rows].any() or not kept[:, columns].any(axis=0).all():
        return 0
    return int(differs.sum())


def _ignored_outputs(result, problem) -> str:
    """The output entries whose rows the vjp of ``result`` dropped, in words:
    how many, and the first in the output's own indices."""
    with np.errstate(invalid="ignore"):
        scale = float(np.nanmax(np.abs(result.expected), initial=0.0))
        rows = np.flatnonzero((np.abs(result.actual - result.expected) > GROSS * scale).any(1))
    shape = problem.layout.out_shapes.get(result.out_idx)
    if shape is None or not rows.size:
        return f"{rows.size} output entries"
    element = int(rows[0]) // (2 if problem.layout.out_complex[result.out_idx] else 1)
    first = ", ".join(str(int(k)) for k in np.unravel_index(element, shape))
    return (f"{rows.size} output coordinate{'s' if rows.size > 1 else ''} of output "
            f"{result.out_idx} (the first [{first}])")


def name(report, problem) -> None:
    """Prefix the diagnosis of each first-order reverse-mode failure of
    ``report`` whose error has the shape of dropped repeated contributions with
    that cause and its fix, naming the repeated values of ``problem``'s integer
    inputs where there are any. Without them (a harvested Function's indices
    may be a constant of the call the model made), the same shape is an output
    whose gradient the backward ignores, said first: an output the formula
    treats as arbitrary (svd's extra singular vectors), then the other causes."""
    if problem.order != 1:
        return
    repeats = None
    for result in report.failures:
        if result.check != "reverse" or result.origin is not None:
            continue
        dropped = lost_repeats(result.expected, result.actual)
        if not dropped:
            continue
        repeats = repeated_indices(problem) if repeats is None else repeats
        assignment = ("a gradient written by index assignment where an index repeats "
                      "(grad[idx] += g, grad[idx] = g, index_put_ without accumulate; "
                      "accumulate with index_add_, index_put_(..., accumulate=True) or "
                      "scatter_add_)")
        if repeats:
            which = "; ".join(f"{value} appears {count} times in input {i}"
                              for i, value, count in repeats)
            text = (f"the vjp is zero at {dropped} entries where numerical is not, each "
                    "beside an entry of its input coordinate that it keeps, so of the "
                    "contributions to an input entry used several times it keeps one (the "
                    f"indices repeat: {which}): {assignment}, or summed over part of a "
                    "broadcast (sum it over every broadcast row)")
        else:
            text = (f"the vjp ignores {_ignored_outputs(result, problem)}: it is zero for "
                    "their every entry where numerical is not, and right for the other "
                    "output coordinates. The backward drops their grad_output: an output its "
                    "formula treats as arbitrary (torch.linalg.svd's extra singular vectors "
                    "with full_matrices=True, whose gradients torch ignores: check it with "
                    f"full_matrices=False), {assignment}, or a gradient summed over part of "
                    "a broadcast (sum it over every broadcast row)")
        result.diagnosis = text if not result.diagnosis else f"{text}; {result.diagnosis}"
