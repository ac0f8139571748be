"""Recognising the shape of an error: what is wrong, not just that it is.

``diagnose`` receives the expected and the analytical block in real
coordinates and tries simple explanations in turn: NaN or inf entries (on
which side), a missing gradient, a gradient for an unused input, whole
numbers where the derivative is not (a rounded or integer gradient), a
constant factor (a sign when the factor is -1), the conjugate, the
transpose, a square input's gradient transposed, an error confined to the
real or the imaginary part, one term's sign flipped (diagonal or cross
terms of a square block), entries coupled that do not depend on each
other (a reduction over the wrong axis), an error confined to some
entries. It returns one sentence, or ``None`` when nothing fits.
"""
from __future__ import annotations

import math
import re

import numpy as np

from adcheck.gradcheck.lowprec.lowprecision import U32

NICE_FACTORS = {2.0: "2", 0.5: "1/2", 3.0: "3", 1 / 3: "1/3", 4.0: "4", 0.25: "1/4"}


def _fits(candidate: np.ndarray, actual: np.ndarray, tol: np.ndarray) -> bool:
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.abs(actual - candidate) <= tol))


def _verb(mode: str) -> str:
    return "jvp" if "forward" in mode else "vjp"


def _factor_name(c) -> str:
    for value, name in NICE_FACTORS.items():
        if abs(c - value) <= 1e-9 * abs(value):
            return name
    if isinstance(c, complex):
        return f"({c.real:.6g}{c.imag:+.6g}j)"
    return f"{c:.9g}"


def zero_analytical(mode: str) -> str:
    """The sentence for an analytical block that is all zero."""
    return (f"analytical is zero: the {_verb(mode)} returns no gradient (None or zeros) "
            "for an input the function uses")


def zero_numerical(mode: str) -> str:
    """The sentence for a numerical block that is zero where analytical is not."""
    return (f"numerical is zero but analytical is not: the function does not use this "
            f"input, yet the {_verb(mode)} returns a gradient for it")


def said_of_the_first_derivative(diagnosis: str | None, mode: str) -> str | None:
    """``diagnosis`` of a second-order check's failure, whose function is the
    first derivative: an all-zero block's sentence names the first derivative
    and the double backward (its function "does not use this input" was said of
    a function that does: pypose's ``Inv().Log()``, whose gradient is constant
    in the input where its double backward is not zero); other sentences as
    they are."""
    verb = "jvp of the backward" if "forward" in mode else "double backward"
    if diagnosis == zero_numerical(mode):
        return ("numerical is zero but analytical is not: the first derivative does not "
                "change with this input (differences of the gradient are zero), yet the "
                f"{verb} returns a second derivative for it")
    if diagnosis == zero_analytical(mode):
        return (f"analytical is zero: the {verb} returns no second derivative (None or "
                "zeros) for an input the first derivative changes with")
    return diagnosis


def on_stairs(mode: str, width: float, moved: bool = False) -> str:
    """The sentence for a numerical block that is zero where analytical is not, of a
    function whose values (and ``moved``: changes) are whole multiples of ``width``."""
    seen = ", and every change as this input moves farther than the steps," if moved else ""
    return (f"numerical is zero but analytical is not, and every value of the output{seen} is a "
            f"whole multiple of {width:g}: the function moves in stairs (rounding, a "
            f"quantizer, a cancellation), whose derivative is 0 between them; a nonzero "
            f"{_verb(mode)} there is a surrogate (a straight-through estimator) or the "
            "derivative of the unrounded function: check that function instead")


def zero_output(mode: str) -> str:
    """The sentence for a numerical block that is zero where analytical is not,
    of an output that is exactly 0 at the given inputs."""
    return (f"numerical is zero but analytical is not, and the output is exactly 0 at these "
            "inputs: the function does not use this input, or its forward underflows or "
            "cancels here (torch's ndtr(-12), which is 1.8e-33, computes as 0) so that no "
            f"step moves it, while the {_verb(mode)} returns the derivative of the exact "
            "function; check the forward's precision, or check at inputs where its values "
            "are representable")


def whole_block(mode: str, nonzero: int, expected: int, actual: int) -> str | None:
    """What the counts of a whole block say: analytical all zero (``nonzero``
    analytical entries) where numerical is not (``expected`` entries above
    the tolerance), or the reverse (``actual`` analytical entries above it).
    Counted by ``diagnose`` on a dense block, by a ``Tally`` on a streamed one."""
    if nonzero == 0 and expected:
        return zero_analytical(mode)
    if expected == 0 and actual:
        return zero_numerical(mode)
    return None


def subset(wrong: int, active: int, on_diagonal: int, first: tuple, square: bool) -> str | None:
    """The sentence for a block in which only some of the ``active`` entries
    (above the tolerance on either side, or wrong) are ``wrong``: all on the
    diagonal, all off it (``square`` blocks only), or the first wrong entry
    when at most half are; ``None`` when that says nothing."""
    if wrong == 0 or wrong == active:
        return None
    if square and on_diagonal == wrong:
        where = "all on the diagonal"
    elif square and on_diagonal == 0:
        where = "all off the diagonal: the cross terms are wrong or missing"
    elif wrong * 2 <= active:
        where = f"first at [{first[0]}, {first[1]}]"
    else:
        return None
    return (f"only {wrong} of {active} nonzero entries differ, {where}; the formula is "
            "wrong for some elements only (a branch, a mask, an index or a broadcast)")


def _factor(e, a, tol, mode) -> str | None:
    denom = float(np.vdot(e, e).real)
    if denom == 0.0:
        return None
    c = float(np.vdot(e, a).real) / denom
    if abs(c - 1.0) < 1e-12:
        return None
    rest = _beside_factor(e, a, c, tol)
    if rest is None:
        return None
    if abs(c + 1.0) < 1e-6:
        return f"analytical is minus numerical: a sign error in the {_verb(mode)}{rest}"
    relative = abs(c - 1.0)
    text = (f"analytical is {_factor_name(c)} times numerical (relative error "
            f"{relative:.1e}): a constant factor in the {_verb(mode)} is off")
    if relative <= U32:
        # (a failing check this close is a double-precision one: torch's float64
        # hardsigmoid backward multiplies by float32(1/6), 1 + 3.0e-8 times 1/6; and
        # jaxopt's isotonic regression divides by a block's size + 1e-8)
        text += (f", by no more than float32's rounding ({U32:.1e}): {_epsilon_in(c)}a "
                 "constant of the formula computed or written in float32 (a literal such as "
                 "1.0f / 6, np.float32) inside double-precision code")
    return text + rest


def _epsilon_in(c: float) -> str:
    """Words for a factor ``c`` that is ``1 / (1 + eps)`` for an ``eps`` that is a
    power of ten (to 2 %): a regularizing epsilon in a denominator of 1; none
    otherwise (torch's float32(1/6) in hardsigmoid is no such thing)."""
    eps = 1.0 / c - 1.0
    power = 10.0 ** round(math.log10(abs(eps))) if eps else 0.0
    if not power or abs(abs(eps) / power - 1.0) > 0.02:
        return ""
    return (f"an epsilon of {math.copysign(power, eps):.0e} added to a denominator of 1 "
            f"(the factor is 1 / (1 {'+' if eps > 0 else '-'} {power:.0e})), or ")


#: the share of a block's error a factor must leave unexplained, at most, to be
#: named with what remains (an interior-point solver's 1e-9 couplings beside a
#: gradient off by a half: qpth's)
FACTOR_REST = 1e-3


def _beside_factor(e, a, c, tol) -> str | None:
    """``""`` where ``c * e`` fits ``a``; where it leaves entries off by at most
    ``FACTOR_REST`` of the block's error, the words saying so; else ``None``."""
    if _fits(c * e, a, tol):
        return ""
    rest, off_by = np.abs(a - c * e), np.abs(a - e)
    worst, error = float(rest.max()), float(off_by.max())
    # a factor fitted to one large entry and putting right ones wrong explains nothing
    # (a clamped gradient, min(3 x^2, 1), at x of 10 beside 0.1: 1/300 times)
    if not worst <= FACTOR_REST * error or np.any(rest > off_by + max(1.0, abs(c)) * tol):
        return None
    off = int(np.count_nonzero(rest > np.broadcast_to(tol, rest.shape)))
    return (f"; beyond that factor, {off} entr{'y is' if off == 1 else 'ies are'} off by at "
            f"most {worst:.1e}")


#: the largest relative error of every entry that ``_near_float32`` takes for a
#: float32 rounding carried through the formula (a constant rounded to float32 and
#: amplified by the formula's sensitivity to it: diffsort's NormalCDF saves its
#: width as torch.tensor(0.1), float32, and its gradient is off by up to 2.7e-7)
NEAR_FLOAT32 = 2.0 ** -20
#: the words that name that cause (``verdict.adfloor`` withdraws them where the AD
#: values' own rounding at the point is as large)
FLOAT32_ROUNDING = "float32's rounding"


def _near_float32(e, a, tol, mode) -> str | None:
    """A block off by float32's rounding at every entry, no more (no factor) and
    not much less, in a check whose tolerances resolve far finer than that
    (double precision's: a low-precision formula's own check allows its rounding)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        zero = np.abs(e) <= tol
        if np.any(np.abs(a[zero]) > tol[zero]) or zero.all():
            return None
        size = np.abs(e[~zero])
        relative = float(np.max(np.abs(a[~zero] - e[~zero]) / size))
        resolved = float(np.median(tol[~zero] / size))
    # (an error well below float32's unit is not one a float32 value makes: torchsde's
    # adjoint, off by its discretization, 1.5e-8 relative in one parameter's block)
    if not (U32 / 2 <= relative <= NEAR_FLOAT32 and resolved < U32):
        return None
    return (f"analytical differs from numerical by at most {relative:.1e} relative at every "
            f"entry, {FLOAT32_ROUNDING} ({U32:.1e}) carried through the formula and far "
            f"above double precision's: the {_verb(mode)} reads a value rounded to float32 "
            "inside double-precision code (torch.tensor(0.1) saved without a dtype is "
            "float32; a float32 buffer, parameter or np.float32 literal), or an "
            "approximation accurate to about that (an iterative solver's tolerance)")


def _complex_factor(ce, ca, tol_c, mode) -> str | None:
    denom = np.vdot(ce, ce).real
    if denom == 0.0 or not np.iscomplexobj(ce):
        return None
    c = complex(np.vdot(ce, ca) / denom)
    if abs(c.imag) < 1e-9 * abs(c) or not _fits(c * ce, ca, tol_c):
        return None
    return (f"analytical is {_factor_name(c)} times numerical: a complex factor in the "
            f"{_verb(mode)} is off (a 1j, or a phase)")


def _conjugates(e, out_complex, in_complex) -> list:
    """Candidate blocks for a conjugation misplaced on input/output side."""
    flip_in = np.ones(e.shape[1])
    flip_out = np.ones(e.shape[0])
    if in_complex:
        flip_in[1::2] = -1
    if out_complex:
        flip_out[1::2] = -1
    both = "the conjugate of numerical"
    found = []
    if in_complex and out_complex:
        found.append((e * flip_out[:, None] * flip_in[None, :], both))
        found.append((e * flip_in[None, :], "numerical with its input conjugated"))
        found.append((e * flip_out[:, None], "numerical with its output conjugated"))
    elif in_complex:
        found.append((e * flip_in[None, :], both))
    elif out_complex:
        found.append((e * flip_out[:, None], both))
    return found


def _transposes(e, out_complex, in_complex) -> list:
    """Candidate transposes when the block is square in elements."""
    found = []
    if e.shape[0] == e.shape[1]:
        found.append(e.T)
    if out_complex and in_complex and e.shape[0] == e.shape[1]:
        n = e.shape[0] // 2
        found.append(e.reshape(n, 2, n, 2).transpose(2, 1, 0, 3).reshape(e.shape))
    return found


def _square_input_transposed(e, in_complex) -> np.ndarray | None:
    """``e`` with its columns permuted as transposing an ``n x n`` input permutes
    them (``n * n`` real columns): what a transposed weight gradient gives."""
    n = int(round(np.sqrt(e.shape[1])))
    if in_complex or n < 2 or n * n != e.shape[1]:
        return None
    return e[:, np.arange(n * n).reshape(n, n).T.ravel()]


#: the share of a block's largest error that entries numerical holds zero must carry
#: to be named a coupling: beside a larger error where analytical is zero they are a
#: solver's residue (cvxpylayers at an active-set kink: numerical 0.5, analytical 3e-12)
COUPLING_SHARE = 0.1


def _coupling(e, a, tol, mode, origin=(0, 0)) -> str | None:
    """Outputs that analytical makes depend on inputs numerical says they do not
    depend on: how a reduction or a broadcast over the wrong axis shows; where
    they are minor, the words of the worst error instead (``_dropped``)."""
    spurious = (np.abs(a - e) > tol) & (np.abs(e) <= tol)
    if e.shape[0] == e.shape[1] and (np.abs(np.diag(e)) > np.diag(
            np.broadcast_to(tol, e.shape))).any():
        # a diagonal that depends elsewhere is an elementwise function's support:
        # where numerical is zero on it, the function is flat there (relu below 0,
        # a staircase of rounding), and a wrong value is no coupling
        np.fill_diagonal(spurious, False)
    if not spurious.any() or not (np.abs(e) > tol).any():
        return None
    if np.abs(a - e)[spurious].max() < COUPLING_SHARE * np.abs(a - e).max():
        return _dropped(e, a, tol, mode, origin)
    return (f"analytical couples {int(spurious.sum())} (output, input) entries that do not "
            "depend on each other (numerical is zero there): a reduction or a broadcast over "
            "the wrong axis (sum(0) for sum(-1), rows mixed that the function keeps apart)")


def _dropped(e, a, tol, mode, origin) -> str | None:
    """The worst entry's words, where analytical is zero and numerical is not."""
    tol = np.broadcast_to(np.asarray(tol, float), e.shape)
    r, c = np.unravel_index(int(np.argmax(np.abs(a - e))), e.shape)
    if not (abs(a[r, c]) <= tol[r, c] < abs(e[r, c])):
        return None
    dropped = int(np.sum((np.abs(a) <= tol) & (np.abs(e) > tol)))
    return (f"analytical is zero at {dropped} entr{'y' if dropped == 1 else 'ies'} where "
            f"numerical is not (the largest error at [{r + origin[0]}, {c + origin[1]}]: "
            f"numerical {e[r, c]:.6g}, analytical {a[r, c]:.2g}): the {_verb(mode)} drops a "
            "term or a branch there, or the inputs sit on a kink or a tie, where central "
            "differences average two one-sided derivatives (relu's 0 and 1 give 0.5)")


def _flipped_term(e, a, tol, mode) -> str | None:
    """Numerical ``D + C`` and analytical ``D - C`` (or ``C - D``), ``D``
    diagonal: the sign of one term flipped (a softmax's or a normalisation's
    ``- y (g . y)`` written ``+``). Then ``(e + a) / 2`` (or ``(e - a) / 2``)
    is diagonal while the other half is not."""
    if e.shape[0] != e.shape[1] or e.shape[0] < 2:
        return None
    off = ~np.eye(e.shape[0], dtype=bool)
    tol = np.broadcast_to(np.asarray(tol, float), e.shape)
    for half, other, term in (((e + a) / 2, (e - a) / 2, "cross (non-diagonal) term"),
                              ((e - a) / 2, (e + a) / 2, "diagonal (elementwise) term")):
        # the flipped half is a whole diagonal term: nonzero all along the diagonal
        # (one wrong diagonal entry is an error in some elements, not a term's sign)
        diagonal_only = not (np.abs(half[off]) > tol[off]).any() and \
            (np.abs(np.diag(half)) > np.diag(tol)).all()
        if diagonal_only and (np.abs(other[off]) > tol[off]).any():
            return (f"analytical is numerical with the sign of its {term} flipped: one term "
                    f"of the {_verb(mode)} has the wrong sign (a '+' for a '-')")
    return None


def _parts(e, a, tol, out_complex, in_complex) -> str | None:
    wrong = np.abs(a - e) > tol
    if in_complex:
        if not wrong[:, 0::2].any():
            if not np.any(a[:, 1::2]) and np.any(e[:, 1::2]):
                return ("the derivative along the imaginary axis of the input is zero: "
                        "the formula probably takes .real or drops the imaginary part")
            return "only the derivative along the imaginary axis of the input is wrong"
        if not wrong[:, 1::2].any():
            return "only the derivative along the real axis of the input is wrong"
    if out_complex:
        if not wrong[0::2].any():
            if not np.any(a[1::2]) and np.any(e[1::2]):
                return ("the imaginary part of the output gets no derivative: the formula "
                        "probably takes .real or drops the imaginary part")
            return "only the imaginary part of the output is wrong"
        if not wrong[1::2].any():
            return "only the real part of the output is wrong"
    return None


def _subset(e, a, tol, origin=(0, 0)) -> str | None:
    wrong = np.abs(a - e) > tol
    active = (np.abs(e) > tol) | (np.abs(a) > tol) | wrong
    rows, cols = np.nonzero(wrong)
    # (a window off the block's diagonal has no diagonal to speak of)
    square = e.shape[0] == e.shape[1] and e.shape[0] > 1 and origin[0] == origin[1]
    first = (rows[0] + origin[0], cols[0] + origin[1]) if len(rows) else None
    return subset(len(rows), int(active.sum()), int(np.sum(rows == cols)), first, square)


def whole_numbers(values: np.ndarray) -> bool:
    """Whether the finite entries of ``values`` are whole numbers, not all zero."""
    values = np.asarray(values)
    finite = values[np.isfinite(values)]
    return bool(finite.size and np.any(finite) and np.all(finite == np.round(finite)))


def cast_inside(dtype: str, verb: str) -> str:
    """The sentence for a double-precision derivative found on ``dtype``'s grid."""
    return (f"every entry of the {verb} is a {dtype} number: the function computes in "
            f"{dtype} inside (a cast down and back), so its derivatives carry {dtype}'s "
            f"rounding, far above double precision's; check it in {dtype} with "
            "precise=True, or keep the computation in the inputs' dtype")


def _rounded(e, a, tol) -> bool:
    """Whether ``a`` is ``e`` made whole (to the nearest, down, up or toward zero):
    not merely whole, as a right derivative of 0 and 1 is (a small-angle
    branch's I + [x]x) where differences are off by a little, nor where every
    entry of ``e`` is within ``NEARLY_WHOLE`` of a whole number (nothing was
    there to round)."""
    with np.errstate(invalid="ignore"):
        if not np.nanmax(np.abs(e - np.round(e)), initial=0.0) > NEARLY_WHOLE:
            return False
    return any(_fits(whole(e), a, tol) for whole in (np.round, np.floor, np.ceil, np.trunc))


#: how near every entry of a numerical derivative may be to a whole number for a
#: whole analytical one not to be called rounded
NEARLY_WHOLE = 1e-2


def _halves(e, tol) -> bool:
    """Whether every entry of numerical off a whole number is within ``tol`` of
    a half: the mean of two whole one-sided slopes, which a central difference
    across a kink gives (a mask's edge, a tie of clamp's bounds), and no sign
    of a derivative rounded to whole numbers."""
    tol = np.broadcast_to(np.asarray(tol, float), e.shape)
    off = np.abs(e - np.round(e)) > tol
    return bool(off.any()) and bool(np.all(np.abs(2 * e[off] - np.round(2 * e[off]))
                                           <= 2 * tol[off]))


def integer_cause(verb: str) -> str:
    """Why a derivative comes out in whole numbers, and what to do."""
    return (f"the {verb} rounds its result or returns an integer tensor (.long(), .int(), "
            "round(), floor(), or integer arithmetic) that the engine casts back to the "
            "input's dtype; compute it in the input's floating dtype")


def _nonfinite(e, a, mode, origin=(0, 0)) -> str | None:
    """Which side has NaN or inf entries, and where the first one is."""
    for values, side in ((e, "numerical"), (a, "analytical")):
        bad = ~np.isfinite(values)
        if bad.any():
            i, j = (int(k[0]) for k in np.nonzero(bad))
            kind = "NaN" if np.isnan(values[i, j]) else "inf"
            r, c = i + origin[0], j + origin[1]   # named in the whole block
            whose = (f"the {_verb(mode)} returns {kind}" if side == "analytical" else
                     f"finite differences give {kind} (the function is NaN or inf at or near "
                     "these inputs)")
            return f"{side} has {int(bad.sum())} NaN or inf entries, first at [{r}, {c}]: {whose}"
    return None


#: what a sentence calls the expected side when it is not finite differences
#: (``against``: the expected Jacobian's mode)
EXPECTED_NAMES = {"reference": "the mpmath reference", "same_as": "same_as's Jacobian"}


def diagnose(expected: np.ndarray, actual: np.ndarray, tol: np.ndarray, mode: str,
             out_complex: bool, in_complex: bool, origin=(0, 0),
             whole: bool = True, against: str = "numerical") -> str | None:
    """One sentence naming the kind of error between two real blocks.

    ``tol`` is the comparison's tolerance in complex form (PyTorch's form);
    it is spread to the real coordinates for the candidate tests. The blocks
    may be a window of a larger block whose first row and (complex form)
    column are ``origin``: entries are then named in the whole block, and
    with ``whole=False`` nothing is said about the whole block's being zero.
    ``against`` names the expected side: an mpmath reference's or same_as's
    Jacobian is called so, not "numerical".
    """
    found = _diagnose(expected, actual, tol, mode, out_complex, in_complex, origin, whole)
    name = EXPECTED_NAMES.get(against)
    return found if found is None or name is None else re.sub(r"\bnumerical\b", name, found)


def _diagnose(expected, actual, tol, mode, out_complex, in_complex, origin, whole):
    e, a = np.asarray(expected, float), np.asarray(actual, float)
    if in_complex and np.ndim(tol) == 2 and 2 * np.shape(tol)[1] != e.shape[1]:
        in_complex = False  # a probed block's columns are real directions, not coordinates
    tol_r = np.repeat(tol, 2, axis=1) if in_complex else np.asarray(tol, float)
    if np.ndim(tol_r) == 2 and tol_r.shape == e.shape and np.isinf(tol_r).any():
        # entries no step resolved are no evidence (``precise.no_evidence``): the
        # sentence is of the entries judged, not of their NaN differences
        judged = np.isfinite(tol_r)
        e, a = np.where(judged, e, 0.0), np.where(judged, a, 0.0)
    nonfinite = _nonfinite(e, a, mode, origin)
    if nonfinite:
        return nonfinite
    zero = whole and whole_block(mode, np.count_nonzero(a), np.count_nonzero(np.abs(e) > tol_r),
                                 np.count_nonzero(np.abs(a) > tol_r))
    if zero:
        return zero
    if whole_numbers(a) and not _fits(np.round(e), e, tol_r) and not _halves(e, tol_r) \
            and _rounded(e, a, tol_r):
        return (f"analytical holds only whole numbers where numerical does not: "
                f"{integer_cause(_verb(mode))}")
    for explain in (_factor(e, a, tol_r, mode),
                    _complex_factor(_cplx(e, in_complex), _cplx(a, in_complex), tol, mode),
                    _near_float32(e, a, tol_r, mode)):
        if explain:
            return explain
    for candidate, what in _conjugates(e, out_complex, in_complex):
        if _fits(candidate, a, tol_r):
            return (f"analytical is {what}: the {_verb(mode)} probably lacks a conj() "
                    "or has one too many")
    for candidate in _transposes(e, out_complex, in_complex):
        if not _fits(candidate, e, tol_r) and _fits(candidate, a, tol_r):
            return (f"analytical is the transpose of numerical: the {_verb(mode)} multiplies "
                    "by J where it needs J^T (a missing .T/.mT or swapped matmul operands)")
    swapped = _square_input_transposed(e, in_complex)
    if swapped is not None and not _fits(swapped, e, tol_r) and _fits(swapped, a, tol_r):
        return (f"analytical is numerical with the input's n x n entries transposed: the "
                f"{_verb(mode)} gives the transpose of a square input's gradient (x^T g "
                "and g^T x swapped, or a weight stored as W and used as W.T)")
    parts = _parts(e, a, tol_r, out_complex, in_complex) or (
        None if out_complex or in_complex else _flipped_term(e, a, tol_r, mode))
    if parts:
        return parts
    found = [text for text in (_coupling(e, a, tol_r, mode, origin), _subset(e, a, tol_r, origin))
             if text]
    return "; ".join(found) or None


def _cplx(block, in_complex):
    return block[:, 0::2] + 1j * block[:, 1::2] if in_complex else block
