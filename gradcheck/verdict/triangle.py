"""A function of a symmetric matrix that reads one triangle, checked where it is not symmetric.

``torch.linalg.eigh``, ``eigvalsh`` and ``cholesky`` read the lower triangle
of their input and take the matrix to be the symmetric (Hermitian) one that
triangle defines; their derivatives are defined for such a matrix, and give
a symmetric gradient. Checked at a matrix that is not symmetric (``randn(4,
4)``, the first input a newcomer tries), moving an entry above the diagonal
changes no output, so finite differences are zero there, while the formula
spreads each derivative over an entry and its mirror: the check fails, and
its entries look like "a reduction or a broadcast over the wrong axis". A
user's Function built on them fails alike.

The failure has an exact shape, told here: the expected Jacobian is the
AD one composed with the map from the input to the Hermitian matrix its
read triangle defines. Column (k, l) of the read triangle is the formula's
column (k, l) plus its column (l, k) (for a complex input the imaginary
parts with opposite signs: the mirror is the conjugate), the other
triangle's columns are zero, the diagonal's are the formula's (the
imaginary part of a complex diagonal read or ignored). ``name`` says so,
with the fix, where one of these compositions agrees with the expected
Jacobian to ``GROSS`` of its largest entry.
"""
from __future__ import annotations

import numpy as np

from adcheck.gradcheck.verdict.lostrepeats import GROSS


def _composed(actual: np.ndarray, shape: tuple, complex_: bool, lower: bool,
              imaginary_diagonal: bool) -> np.ndarray | None:
    """``actual``'s columns composed with the map from an input of ``shape``
    (``(..., n, n)``) to the Hermitian matrix its ``lower`` (else upper)
    triangle defines; ``imaginary_diagonal``: the map keeps the imaginary part
    of a complex diagonal (else drops it). ``actual``'s columns are the
    input's real coordinates, or its complex entries (a complex input's
    blocks as the comparison holds them); ``None`` for other columns."""
    n, size = shape[-1], int(np.prod(shape))
    i, j = np.indices((n, n))
    read = ((i > j) if lower else (i < j))[..., None]
    on_diagonal = np.where(i == j, 1.0, 0.0)[..., None]
    if actual.shape[1] == size and (complex_ or not np.iscomplexobj(actual)):
        cols = actual.reshape(actual.shape[0], -1, n, n)
        mirror = cols.swapaxes(2, 3)
        mirrored = cols + (np.conj(mirror) if complex_ else mirror)
        diagonal = cols if imaginary_diagonal or not complex_ else cols.real
        return (np.where(read[..., 0], mirrored, 0.0) +
                on_diagonal[..., 0] * diagonal).reshape(actual.shape)
    if not complex_ or actual.shape[1] != 2 * size:
        return None
    cols = actual.reshape(actual.shape[0], -1, n, n, 2)    # (real, imaginary) coordinates
    mirrored = cols + cols.swapaxes(2, 3) * np.array([1.0, -1.0])
    diagonal = on_diagonal * cols
    if not imaginary_diagonal:
        diagonal[..., 1] = 0.0
    return (np.where(read, mirrored, 0.0) + diagonal).reshape(actual.shape)


def read_triangle(expected, actual, shape: tuple, complex_: bool) -> str | None:
    """``"lower"`` or ``"upper"``: the triangle of a square input of ``shape``
    that explains the difference between ``expected`` and ``actual`` (see
    the module docstring); ``None`` where none does, or nothing differs."""
    if expected is None or actual is None or expected.shape != actual.shape or \
            expected.ndim != 2 or len(shape) < 2 or shape[-1] != shape[-2] or shape[-1] < 2 or \
            not (np.all(np.isfinite(expected)) and np.all(np.isfinite(actual))):
        return None
    scale = float(np.max(np.abs(expected), initial=0.0))
    small = GROSS * scale
    if not scale > 0 or np.max(np.abs(expected - actual)) <= small:
        return None
    for lower in (True, False):
        for imaginary in ((True, False) if complex_ else (True,)):
            composed = _composed(actual, shape, complex_, lower, imaginary)
            if composed is not None and np.max(np.abs(expected - composed)) <= small:
                return "lower" if lower else "upper"
    return None


def name(report, problem) -> None:
    """Say the cause and the fix in the diagnosis of each failure of ``report``
    whose error has the shape of a one-triangle read (``read_triangle``)."""
    layout = problem.layout
    for result in report.failures:
        if result.check not in ("reverse", "forward") or result.origin is not None or \
                result.in_idx not in layout.in_shapes:
            continue
        shape = layout.in_shapes[result.in_idx]
        triangle = read_triangle(result.expected, result.actual, shape,
                                 layout.in_complex[result.in_idx])
        if triangle is None:
            continue
        other = "above" if triangle == "lower" else "below"
        conj = "mH" if layout.in_complex[result.in_idx] else "mT"
        what = "the first derivative" if problem.order == 2 else "the function"
        text = (f"{what} reads only the {triangle} triangle of input {result.in_idx} (moving "
                f"an entry {other} the diagonal changes no output), and the "
                f"{'vjp' if result.mode == 'reverse' else 'jvp'} is the derivative of a "
                "function of the symmetric (Hermitian) matrix that triangle defines, as "
                "torch.linalg.eigh, eigvalsh and cholesky define theirs: right for such "
                "a matrix, and the input is not one. Check it at symmetric inputs, as "
                f"PyTorch's tests do: differentiate lambda a: f(a + a.{conj}); or, if "
                f"the function is meant to read the {triangle} triangle alone, make the "
                f"gradient zero {other} the diagonal")
        # (it explains every entry: the pattern said before, entries coupled that do not
        # depend on each other, is this read seen entry by entry)
        result.diagnosis = text
