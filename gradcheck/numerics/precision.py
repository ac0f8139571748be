"""What a comparison could resolve: ``Precision``.

A precise check compares an analytical Jacobian, computed in the dtype of the
function's tensors (the *formula's* dtype), with an expected Jacobian
obtained in some precision by some method. ``Precision`` records both and
the comparison's *resolution*: the smallest relative error ``rho`` such that
an analytical Jacobian off by a factor ``1 + rho`` in every entry fails, that
is the smallest ``tolerance / |expected|`` over the entries of the pair. A
formula error below it cannot be told from rounding in this comparison.

Example::

    Precision("float32", "float64", "Richardson extrapolation", 3e-6).text()
    # 'float32 formula against a float64 numerical Jacobian (Richardson
    #  extrapolation): errors above 3.0e-06 relative detectable'
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: dtype names of double precision: formulas in them are not "low precision"
DOUBLE = ("float64", "complex128")


@dataclass(frozen=True)
class Precision:
    """The precision of one comparison (see the module docstring).

    ``formula``: dtype name of the analytical side (``"bfloat16"``);
    ``numerical``: dtype name the expected side was computed in;
    ``method``: how it was computed; ``resolution``: the smallest detectable
    relative error (``None``: no entry to judge by); ``note``: why the
    expected side has this precision (e.g. the function refuses float64).
    """

    formula: str
    numerical: str
    method: str
    resolution: float | None = None
    note: str | None = None

    @property
    def narrow(self) -> bool:
        """Whether the formula's dtype is narrower than double precision."""
        return self.formula not in DOUBLE

    def with_resolution(self, resolution: float | None) -> Precision:
        return Precision(self.formula, self.numerical, self.method, resolution, self.note)

    def text(self) -> str:
        """One sentence: what was compared, and the smallest error it could see."""
        against = ("the mpmath reference" if self.method == "mpmath reference" else
                   f"a {self.numerical} numerical Jacobian ({self.method})")
        text = f"{self.formula} formula against {against}"
        if self.note:
            text += f"; {self.note}"
        if self.resolution is None or not np.isfinite(self.resolution):
            return text + ": no entry large enough to judge a relative error by"
        return text + f": errors above {self.resolution:.1e} relative detectable"

    def to_dict(self) -> dict:
        """JSON-serializable, with the sentence under ``text``."""
        resolution = self.resolution
        if resolution is not None and not np.isfinite(resolution):
            resolution = None
        return {"formula_dtype": self.formula, "numerical_dtype": self.numerical,
                "method": self.method, "resolution": resolution, "note": self.note,
                "text": self.text()}


def resolution(tol: np.ndarray, expected: np.ndarray) -> float | None:
    """The smallest ``tol / |expected|`` over the entries larger than their
    tolerance, or ``None`` when there is none. An entry within its tolerance
    (rounding noise where the derivative is zero) passes any relative error up
    to 100%, so it cannot state a resolution; counting it would state one of
    1e7 or more, a number that means nothing."""
    magnitude = np.abs(np.asarray(expected))
    tol = np.broadcast_to(np.asarray(tol, dtype=np.float64), magnitude.shape)
    judged = magnitude > tol
    if not judged.any():
        return None
    return float(np.min(tol[judged] / magnitude[judged]))
